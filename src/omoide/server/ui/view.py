"""What a page handler gets (:class:`View`) and gives back (:class:`Page`), and the layout
every page shares: the navigation, who is signed in, the sign-out form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from omoide.memory import Memory
from omoide.server.ui.html import Safe, el, esc, hidden
from omoide.server.ui.reads import Reads
from omoide.service.local import LocalOperations

__all__ = ["NAV", "Page", "View", "csrf_form", "layout", "when"]

PREFIX = "/ui"

#: The sections, in the navigation's order: (path, label).
NAV: tuple[tuple[str, str], ...] = (
    ("/ui", "Overview"),
    ("/ui/episodes", "Episodes"),
    ("/ui/knowledge", "Knowledge"),
    ("/ui/procedures", "Procedures"),
    ("/ui/forgetting", "Forgetting"),
    ("/ui/recall", "Recall"),
)


@dataclass
class View:
    """One signed-in request: the caller's operations and reads, the query string, the
    form (for a POST), the path parameters and the session's CSRF token."""

    mem: Memory
    ops: LocalOperations
    reads: Reads
    query: Mapping[str, str]
    form: Mapping[str, str]
    path: Mapping[str, str]
    csrf: str
    app_state: Any = None

    @property
    def admin(self) -> bool:
        return self.ops.caller.admin

    @property
    def agent(self) -> str:
        return self.ops.caller.agent or ""

    def arg(self, name: str, default: str = "") -> str:
        """A query parameter (or, for a POST, a form field), stripped."""
        value = self.form.get(name) if name in self.form else self.query.get(name)
        return (value or default).strip()

    def int_arg(self, name: str, default: int, *, low: int = 0, high: int = 1_000_000) -> int:
        try:
            return max(low, min(high, int(self.arg(name) or default)))
        except ValueError:
            return default


@dataclass
class Page:
    """A rendered page (``body``) in its ``section``, or a redirect."""

    title: str
    body: Safe = field(default_factory=lambda: Safe(""))
    section: str = ""
    status: int = 200
    redirect: str | None = None


def when(value: Any) -> str:
    """An ISO 8601 instant as ``YYYY-MM-DD HH:MM`` (UTC), anything else as text."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, str) and len(value) >= 16 and value[10] == "T":
        return value[:10] + " " + value[11:16]
    return "" if value is None else str(value)


def csrf_form(action: str, csrf: str, *fields: Safe, label: str, kind: str = "") -> Safe:
    """A POST form carrying the session's CSRF token, with one submit button."""
    return el(
        "form",
        hidden("csrf", csrf),
        *fields,
        el("button", label, type="submit", class_=kind or None),
        method="post",
        action=action,
        class_="inline",
    )


def layout(page: Page, *, who: str = "", admin: bool = False, csrf: str = "") -> str:
    """The whole document of ``page``; signed out (no ``who``) it has no navigation."""
    nav = None
    if who:
        items = [
            el(
                "li",
                el("a", label, href=path, aria_current="page" if page.section == path else None),
            )
            for path, label in NAV
        ]
        nav = el(
            "nav",
            el("ul", *items),
            el(
                "div",
                el(
                    "span",
                    esc(who),
                    " ",
                    el("span", "admin", class_="badge admin") if admin else None,
                    class_="who",
                ),
                csrf_form("/ui/logout", csrf, label="Sign out", kind="link"),
                class_="account",
            ),
        )
    header = el(
        "header",
        el(
            "a",
            el("strong", "omoide"),
            " ",
            el("span", "思い出", lang="ja"),
            href="/ui",
            class_="brand",
        ),
        nav,
    )
    return "<!doctype html>" + el(
        "html",
        el(
            "head",
            el("meta", charset="utf-8"),
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("title", f"{page.title} · omoide"),
            el("link", rel="stylesheet", href="/ui/static/dashboard.css"),
        ),
        el("body", header, el("main", el("h1", page.title), page.body)),
        lang="en",
    )
