"""What the REST server shows about itself: its docs pages and its log.

``/docs`` and ``/redoc`` describe the API without reaching the internet: FastAPI's own pages
load Swagger UI and ReDoc from a CDN, so their assets come from the ``fastapi-offline``
package (a dependency of the ``server`` extra) and are served from this process; where it is
missing, both pages are a small HTML page of their own, listing every route with its summary
and linking ``/openapi.json`` (the full description, for any OpenAPI viewer).

:class:`RequestLog` writes one line per request at INFO on the ``omoide.server`` logger
(method, path, status, milliseconds, agent); :data:`LOG_CONFIG` gives uvicorn's loggers and
it one format, with ISO 8601 timestamps.
"""

from __future__ import annotations

import html
import logging
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["LOG", "LOG_CONFIG", "LOG_SLOT", "RequestLog", "install_docs"]

LOG = logging.getLogger("omoide.server")

#: Where a request's caller is noted for its log line (by the route's key check).
LOG_SLOT = "omoide.log"

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: uvicorn's ``log_config``: one line format and ISO 8601 timestamps for every logger; its
#: access log is off (:class:`RequestLog` writes a line that names the agent too).
LOG_CONFIG: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"iso": {"format": _FORMAT, "datefmt": "%Y-%m-%dT%H:%M:%S%z"}},
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "iso",
            "stream": "ext://sys.stderr",
        }
    },
    "loggers": {
        "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
        "uvicorn.error": {"level": "INFO"},
        "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        "omoide": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
    },
}


class RequestLog:
    """ASGI middleware: one INFO line per HTTP request, after its answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        noted: dict[str, Any] = {}
        scope[LOG_SLOT] = noted
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            caller = scope.get("omoide.caller")
            agent = noted.get("agent") or getattr(caller, "agent", None) or "-"
            LOG.info(
                "%s %s %d %.1f ms agent=%s",
                scope.get("method", "-"),
                scope.get("path", "-"),
                status,
                (time.perf_counter() - started) * 1000,
                agent,
            )


def _assets() -> Path | None:
    """A local folder holding Swagger UI's and ReDoc's files, if a package ships them."""
    try:
        import fastapi_offline
    except ImportError:
        return None
    folder = Path(fastapi_offline.__file__).parent / "static"
    needed = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js")
    return folder if all((folder / name).exists() for name in needed) else None


def install_docs(app: FastAPI) -> None:
    """``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), their assets served by this process
    (see the module's docstring); without them, an offline overview of the routes."""
    folder = _assets()
    if folder is None:
        app.add_api_route("/docs", lambda: _overview(app), include_in_schema=False)
        app.add_api_route("/redoc", lambda: _overview(app), include_in_schema=False)
        return
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.staticfiles import StaticFiles

    app.mount("/docs-assets", StaticFiles(directory=folder), name="docs-assets")
    title = f"{app.title} — API"

    @app.get("/docs", include_in_schema=False)
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=title,
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=title,
            redoc_js_url="/docs-assets/redoc.standalone.js",
            redoc_favicon_url="/docs-assets/favicon.png",
            with_google_fonts=False,
        )


def _overview(app: FastAPI) -> HTMLResponse:
    """Every route with its summary, and a link to the OpenAPI description."""
    spec = app.openapi()
    rows = []
    for path, methods in spec.get("paths", {}).items():
        for method, info in methods.items():
            rows.append(
                f"<tr><td><code>{method.upper()}</code></td><td><code>{html.escape(path)}"
                f"</code></td><td>{html.escape(str(info.get('summary', '')))}</td></tr>"
            )
    page = (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(app.title)} "
        "API</title></head><body>"
        f"<h1>{html.escape(app.title)} {html.escape(app.version)} — REST API</h1>"
        "<p>The full description is <a href='/openapi.json'>/openapi.json</a> (OpenAPI 3; "
        "open it in any OpenAPI viewer). Every <code>/v1</code> route needs "
        "<code>Authorization: Bearer &lt;key&gt;</code>. This page is served offline; "
        "install <code>fastapi-offline</code> for the interactive Swagger UI here.</p>"
        "<table border='1' cellpadding='4'><tr><th>method</th><th>path</th><th>summary</th>"
        f"</tr>{''.join(rows)}</table></body></html>"
    )
    return HTMLResponse(page)
