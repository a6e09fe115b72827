"""The dashboard's routes: sign-in and sign-out, the stylesheet, and every page.

Each page request resolves its session (a redirect to the sign-in page without one), builds
the caller's :class:`~omoide.service.local.LocalOperations` from the session's key exactly as
the REST routes build it from a bearer key, and runs its handler on the thread pool. POSTs
are refused unless they carry the session's CSRF token and, when the browser names one, come
from this origin. Errors of the library become HTML pages with the REST API's status codes.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from omoide.errors import (
    AlreadyExistsError,
    AuthenticationError,
    BackendError,
    CapacityError,
    NotFoundError,
    OmoideError,
    PermissionDeniedError,
    ProtectedMemoryError,
    StoreLockedError,
    ValidationError,
)
from omoide.memory import Memory
from omoide.server.ui.html import Safe, el, hidden
from omoide.server.ui.pages import ROUTES
from omoide.server.ui.reads import Reads
from omoide.server.ui.sessions import COOKIE, SessionStore
from omoide.server.ui.view import Page, View, layout
from omoide.service.local import Caller, LocalOperations

__all__ = ["SECURITY_HEADERS", "dashboard_router"]

#: Sent with every dashboard response: nothing but this origin's stylesheet and forms, no
#: framing, no referrer to other sites (ids are in URLs), no caching of pages that show memories.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}

#: How each library error is answered (the REST API's codes); anything else is a 500.
_STATUS: tuple[tuple[type[OmoideError], int], ...] = (
    (ValidationError, 422),
    (AuthenticationError, 401),
    (PermissionDeniedError, 403),
    (NotFoundError, 404),
    (AlreadyExistsError, 409),
    (ProtectedMemoryError, 409),
    (CapacityError, 409),
    (StoreLockedError, 503),
    (BackendError, 503),
)

MAX_FORM_BYTES = 65_536

Handler = Callable[[View], Page]


def _safe_next(target: str) -> str:
    """A dashboard path to return to after signing in (anything else: the overview)."""
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not parts.path.startswith("/ui") or "\\" in target:
        return "/ui"
    return target


def _same_origin(request: Request) -> bool:
    """False when the browser says the form came from another origin."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"http://{host}", f"https://{host}")


def _html(text: str, status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    return HTMLResponse(text, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def _redirect(target: str) -> RedirectResponse:
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


def _login_page(message: str = "", target: str = "/ui", status: int = 200) -> HTMLResponse:
    body = el(
        "section",
        el("p", message, class_="notice error", role="alert") if message else None,
        el(
            "form",
            hidden("next", target),
            el(
                "label",
                "API key",
                el(
                    "input",
                    type="password",
                    name="key",
                    required=True,
                    autocomplete="off",
                    spellcheck="false",
                ),
                class_="field",
            ),
            el("button", "Sign in", type="submit"),
            method="post",
            action="/ui/login",
            class_="login",
        ),
        el(
            "p",
            "Sign in with an API key from ",
            el("code", "omoide keys add AGENT"),
            ". An agent's key shows what that agent may read; an admin key shows everything.",
            class_="hint",
        ),
        class_="card narrow",
    )
    return _html(layout(Page("Sign in", body)), status)


class Dashboard:
    """The dashboard over one Memory: its sessions and its routes."""

    def __init__(self, mem: Memory) -> None:
        assert mem.db is not None
        self.mem = mem
        self.sessions = SessionStore(mem.db, mem.clock)
        self.css = (files("omoide.server.ui") / "static" / "dashboard.css").read_bytes()

    async def _form(self, request: Request) -> dict[str, str] | None:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            return None
        text = body.decode("utf-8", "replace")
        try:
            return dict(parse_qsl(text, keep_blank_values=True, max_num_fields=100))
        except ValueError:  # more fields than any form of the dashboard has
            return None

    def _cookie(self, response: Response, token: str, request: Request) -> None:
        response.set_cookie(
            COOKIE,
            token,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )

    async def login_form(self, request: Request) -> Response:
        return _login_page(target=_safe_next(request.query_params.get("next", "/ui")))

    async def login(self, request: Request) -> Response:
        form = await self._form(request)
        if form is None or not _same_origin(request):
            return _login_page("This sign-in was refused.", status=403)
        target = _safe_next(form.get("next", "/ui"))
        try:
            token, _ = await anyio.to_thread.run_sync(self.sessions.sign_in, form.get("key", ""))
        except AuthenticationError:
            return _login_page("That key was not accepted.", target, status=401)
        self.sessions.sign_out(request.cookies.get(COOKIE))  # a new sign-in, a new session
        response = _redirect(target)
        self._cookie(response, token, request)
        return response

    async def logout(self, request: Request) -> Response:
        form = await self._form(request) or {}
        token = request.cookies.get(COOKIE)
        try:
            session, _ = await anyio.to_thread.run_sync(self.sessions.resolve, token)
        except (AuthenticationError, NotFoundError):
            return _redirect("/ui/login")
        if not (_same_origin(request) and self.sessions.csrf_ok(session, form.get("csrf"))):
            return _html(layout(Page("Refused", el("p", "The form was not this session's."))), 403)
        self.sessions.sign_out(token)
        response = _redirect("/ui/login")
        response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
        return response

    async def stylesheet(self, request: Request) -> Response:
        headers = {**SECURITY_HEADERS, "Cache-Control": "max-age=3600"}
        return Response(self.css, media_type="text/css; charset=utf-8", headers=headers)

    def page(self, handler: Handler, *, write: bool) -> Callable[[Request], Any]:
        """The endpoint of one page: session, CSRF (for ``write``), handler, layout."""

        async def endpoint(request: Request) -> Response:
            form = (await self._form(request)) if write else {}
            token = request.cookies.get(COOKIE)
            state = request.app.state
            return await anyio.to_thread.run_sync(
                lambda: self._serve(request, handler, form, token, state)
            )

        return endpoint

    def _serve(
        self,
        request: Request,
        handler: Handler,
        form: dict[str, str] | None,
        token: str | None,
        state: Any,
    ) -> Response:
        try:
            session, key = self.sessions.resolve(token)
        except (AuthenticationError, NotFoundError):
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return _redirect("/ui/login?" + urlencode({"next": target}))
        if form is None or (
            request.method == "POST"
            and not (_same_origin(request) and self.sessions.csrf_ok(session, form.get("csrf")))
        ):
            page = Page(
                "Refused",
                el(
                    "p",
                    "This form was not sent by this session; reload the page and try again.",
                    class_="notice error",
                ),
                status=403,
            )
        else:
            ops = LocalOperations(self.mem, Caller.for_key(self.mem, key))
            view = View(
                self.mem,
                ops,
                Reads(ops),
                dict(request.query_params),
                form,
                dict(request.path_params),
                session.csrf,
                state,
            )
            page = _run(handler, view)
        if page.redirect is not None:
            return _redirect(page.redirect)
        who = key.agent_name
        return _html(layout(page, who=who, admin=key.admin, csrf=session.csrf), page.status)

    def router(self) -> APIRouter:
        api = APIRouter(prefix="/ui", include_in_schema=False)
        api.add_api_route("/login", self.login_form, methods=["GET"])
        api.add_api_route("/login", self.login, methods=["POST"])
        api.add_api_route("/logout", self.logout, methods=["POST"])
        api.add_api_route("/static/dashboard.css", self.stylesheet, methods=["GET"])
        for method, path, handler in ROUTES:
            api.add_api_route(path, self.page(handler, write=method == "POST"), methods=[method])
        return api


def _run(handler: Handler, view: View) -> Page:
    """The handler's page, or an error page with the status the REST API would answer."""
    try:
        return handler(view)
    except OmoideError as exc:
        status = next((code for cls, code in _STATUS if isinstance(exc, cls)), 500)
        title = "Not found" if status == 404 else "Not allowed" if status == 403 else "Error"
        detail = str(exc).encode("utf-8", "backslashreplace").decode("utf-8")
        body = Safe(
            el("p", detail, class_="notice error")
            + el("p", el("a", "Back to the overview", href="/ui"))
        )
        return Page(title, body, status=status)


def dashboard_router(mem: Memory) -> APIRouter:
    """The dashboard's routes over ``mem`` (mounted under ``/ui``)."""
    return Dashboard(mem).router()
