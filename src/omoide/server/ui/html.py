"""HTML builders: every page is made of these, so every piece of text is escaped once.

:class:`Safe` marks markup that is already escaped; :func:`el` escapes every child and
attribute that is not ``Safe``. Item text is untrusted (any agent writes it), so nothing
reaches a page without going through :func:`esc` — there is no template language to forget it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlencode

__all__ = [
    "Safe",
    "badge",
    "el",
    "esc",
    "hidden",
    "join",
    "link",
    "pager",
    "plural",
    "pretty_json",
    "select_field",
    "short",
    "table",
    "url",
]

#: Elements without a closing tag.
_VOID = frozenset({"br", "hr", "img", "input", "link", "meta"})


class Safe(str):
    """Markup that is already escaped (the result of :func:`esc` or :func:`el`)."""

    __slots__ = ()


Child = Any  # str, Safe, numbers, None (skipped) or iterables of those


def esc(value: Any) -> Safe:
    """``value`` as HTML text: Safe passes through, None is empty, anything else is escaped."""
    if isinstance(value, Safe):
        return value
    if value is None:
        return Safe("")
    return Safe(html.escape(str(value), quote=True))


def join(parts: Iterable[Child], sep: str = "") -> Safe:
    """The children, escaped and concatenated (``sep`` is literal markup)."""
    return Safe(sep.join(_children(parts)))


def _children(parts: Iterable[Child]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part is None or part is False:
            continue
        if isinstance(part, str | int | float):
            out.append(esc(part))
        else:
            out.extend(_children(part))
    return out


def el(tag: str, *children: Child, **attrs: Any) -> Safe:
    """An element: ``el("a", "text", href="/ui", class_="x")`` (a trailing ``_`` is dropped;
    ``True`` writes the bare attribute, ``None`` or ``False`` omits it)."""
    rendered = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        rendered.append(f" {key}" if value is True else f' {key}="{esc(value)}"')
    opening = f"<{tag}{''.join(rendered)}>"
    if tag in _VOID:
        return Safe(opening)
    return Safe(f"{opening}{''.join(_children(children))}</{tag}>")


def url(path: str, *segments: str, **query: Any) -> str:
    """``path`` with each segment percent-encoded and the non-empty query parameters."""
    full = path.rstrip("/") + "".join("/" + quote(str(s), safe="") for s in segments)
    params = {k: v for k, v in query.items() if v not in (None, "", False)}
    return f"{full}?{urlencode(params, doseq=True)}" if params else full


def link(text: Child, href: str, **attrs: Any) -> Safe:
    return el("a", text, href=href, **attrs)


def hidden(name: str, value: Any) -> Safe:
    return el("input", type="hidden", name=name, value=str(value))


def badge(text: str, kind: str = "") -> Safe:
    return el("span", text, class_=f"badge {kind}".strip())


def short(text: Any, limit: int = 140) -> str:
    """``text`` on one line, cut to ``limit`` characters."""
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def select_field(
    name: str, label: str, options: Iterable[str], current: str | None, *, anything: str = "any"
) -> Safe:
    """A labelled drop-down of ``options`` (the first entry, ``anything``, selects none)."""
    return el(
        "label",
        label,
        el(
            "select",
            el("option", anything, value="") if anything else None,
            *(el("option", o, value=o, selected=o == current) for o in options),
            name=name,
        ),
        class_="field",
    )


def pager(href: Callable[[int], str], offset: int, size: int, more: bool) -> Safe:
    """Links to the newer and older page of a list shown ``size`` at a time."""
    return el(
        "p",
        link("← Newer", href(max(0, offset - size))) if offset else None,
        " ",
        link("Older →", href(offset + size)) if more else None,
        class_="pager",
    )


def plural(count: int, noun: str) -> str:
    """``1 episode``, ``2 episodes`` (thousands separated)."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def pretty_json(value: Any) -> Safe:
    """A JSON value, indented, as preformatted text (non-ASCII kept readable)."""
    return el("pre", json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True))


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[Child]],
    *,
    numeric: Iterable[int] = (),
    empty: str = "Nothing here yet.",
    caption: str | None = None,
) -> Safe:
    """A table in a scrolling wrapper (narrow windows scroll it instead of squeezing it)."""
    right = set(numeric)
    body = [
        el("tr", *(el("td", c, class_="num" if i in right else None) for i, c in enumerate(r)))
        for r in rows
    ]
    if not body:
        return el("p", empty, class_="empty")
    head = el(
        "tr", *(el("th", h, class_="num" if i in right else None) for i, h in enumerate(headers))
    )
    return el(
        "div",
        el(
            "table",
            el("caption", caption) if caption else None,
            el("thead", head),
            el("tbody", body),
        ),
        class_="scroll",
    )


def definition_list(pairs: Mapping[str, Child] | Iterable[tuple[str, Child]]) -> Safe:
    """Label and value pairs (values that are None are left out)."""
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    return el(
        "dl", *((el("dt", k), el("dd", v)) for k, v in items if v is not None), class_="fields"
    )
