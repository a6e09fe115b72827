"""Knowledge: documents by collection, the versions of each subject side by side, and each
document's chunks and source (a file, a URL, or the episodes it was distilled from)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from omoide.server.ui.html import (
    Safe,
    badge,
    definition_list,
    el,
    join,
    link,
    pager,
    pretty_json,
    short,
    table,
    url,
)
from omoide.server.ui.pages.episodes import history_table, recalls_table
from omoide.server.ui.view import Page, View, when
from omoide.service.local import to_json
from omoide.service.protocol import AuditQuery

__all__ = ["collection_page", "document_page", "knowledge"]

STATES = ("active", "archived", "compressed")
PAGE_SIZE = 50


def _docs(
    view: View, collection: str, state: str, *, limit: int, offset: int = 0
) -> list[dict[str, Any]]:
    caller = view.ops.caller
    docs = view.mem.semantic.documents(
        collection,
        limit=limit,
        offset=offset,
        reader=caller.reader,
        reader_teams=caller.teams,
        state=state,
    )
    return [to_json(d) for d in docs]


def _doc_badges(d: dict[str, Any]) -> Safe:
    return join(
        [
            badge(d["state"], d["state"]),
            badge("superseded", "superseded")
            if d.get("superseded_by")
            else badge("current", "current")
            if d.get("subject")
            else None,
            badge("never-forget", "protected") if d.get("protected") else None,
        ],
        " ",
    )


def _source(view: View, d: dict[str, Any]) -> Safe:
    meta = d.get("metadata") or {}
    parts: list[Any] = []
    origins = {
        "distillation": ("source_episodes", "distilled"),
        "extraction": ("episode_ids", "extracted"),
    }
    origin = origins.get(str(meta.get("source")))
    if origin is not None:  # made from episodes: link them
        ids = [i for i in str(meta.get(origin[0], "")).split(",") if i]
        parts.append(el("span", f"{origin[1]} from {len(ids)} episodes: "))
        parts.append(join([link(i[:14], url("/ui/episodes", i)) for i in ids[:20]], ", "))
    for key in ("url", "path", "source", "file"):
        value = meta.get(key)
        if isinstance(value, str) and value and not (key == "source" and value in origins):
            parts.append(el("div", el("span", f"{key}: ", class_="muted"), el("code", value)))
    return join(parts) if parts else Safe("—")


def knowledge(view: View) -> Page:
    rows = [
        (
            link(c["name"], url("/ui/knowledge", c["name"])),
            c["purpose"],
            f"{c['documents']:,}",
            f"{c['max_docs']:,}",
            "never" if c["retention_days"] is None else f"{c['retention_days']} days",
        )
        for c in view.ops.collections()
    ]
    body = el(
        "section",
        table(["Collection", "Purpose", "Documents", "Cap", "Kept for"], rows, numeric=(2, 3)),
        class_="card",
    )
    return Page("Knowledge", body, section="/ui/knowledge")


def _subjects(view: View, collection: str) -> Safe:
    chains: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for state in STATES:
        for d in _docs(view, collection, state, limit=500):
            if d.get("subject"):
                chains[(d["subject"], d["agent_name"])].append(d)
    blocks = []
    for (subject, owner), docs in sorted(chains.items()):
        if len(docs) < 2:
            continue
        docs.sort(key=lambda d: d.get("version") or 0, reverse=True)
        cells = [
            el(
                "div",
                el("div", f"v{d.get('version')} ", _doc_badges(d), class_="version-head"),
                link(short(d["document"], 220), url("/ui/knowledge", collection, d["id"])),
                el("div", when(d["updated_at"]), class_="muted"),
                class_="version",
            )
            for d in docs[:4]
        ]
        blocks.append(
            el(
                "div",
                el("h3", subject, el("span", f" — {owner}", class_="muted")),
                el("div", *cells, class_="versions"),
                class_="subject",
            )
        )
    if not blocks:
        return el("p", "No subject has more than one version here.", class_="empty")
    return join(blocks)


def _tabs(collection: str, state: str) -> Safe:
    return el(
        "ul",
        *(
            el(
                "li",
                link(
                    s,
                    url("/ui/knowledge", collection, state=s),
                    aria_current="page" if s == state else None,
                ),
            )
            for s in STATES
        ),
        class_="tabs",
    )


def collection_page(view: View) -> Page:
    collection = view.path["collection"]
    view.mem.semantic.count(collection)  # an unknown collection is a 404 / 422 here
    state = view.arg("state", "active")
    state = state if state in STATES else "active"
    offset = view.int_arg("offset", 0)
    docs = _docs(view, collection, state, limit=PAGE_SIZE + 1, offset=offset)
    tabs = _tabs(collection, state)
    rows = [
        (
            link(short(d["document"], 120), url("/ui/knowledge", collection, d["id"])),
            join([d["subject"] or "", f" v{d['version']}" if d.get("version") else ""]),
            d["agent_name"] or "—",
            _doc_badges(d),
            when(d["updated_at"]),
        )
        for d in docs[:PAGE_SIZE]
    ]
    more = pager(
        lambda at: url("/ui/knowledge", collection, state=state, offset=at),
        offset,
        PAGE_SIZE,
        len(docs) > PAGE_SIZE,
    )
    body = join(
        [
            el("p", link("← Collections", "/ui/knowledge")),
            el(
                "section",
                el("h2", "Subjects: current and superseded versions"),
                _subjects(view, collection),
                class_="card",
            ),
            el(
                "section",
                el("h2", "Documents"),
                tabs,
                table(
                    ["Document", "Subject", "Agent", "State", "Updated"],
                    rows,
                    empty=f"No {state} document you may read.",
                ),
                more,
                class_="card",
            ),
        ]
    )
    return Page(f"Knowledge: {collection}", body, section="/ui/knowledge")


def document_page(view: View) -> Page:
    collection, doc_id = view.path["collection"], view.path["doc_id"]
    d = view.ops.get_document(collection, doc_id)
    chunks = view.mem.semantic.chunk(d["document"])
    superseded_by = d.get("superseded_by")
    fields = definition_list(
        [
            ("State", _doc_badges(d)),
            ("Subject", f"{d['subject']} (version {d['version']})" if d.get("subject") else None),
            (
                "Superseded by",
                link(superseded_by, url("/ui/knowledge", collection, superseded_by))
                if superseded_by
                else None,
            ),
            ("Agent", d["agent_name"] or "—"),
            ("Scope", d["scope"]),
            ("Source", _source(view, d)),
            ("Stored", when(d["created_at"])),
            ("Updated", when(d["updated_at"])),
            ("Expires", when(d["expires_at"]) if d.get("expires_at") else None),
            ("Id", el("code", d["id"])),
        ]
    )
    chunk_list = el("ol", *(el("li", el("p", c, class_="text")) for c in chunks), class_="chunks")
    body = join(
        [
            el("p", link(f"← {collection}", url("/ui/knowledge", collection))),
            el("section", el("p", d["document"], class_="text"), fields, class_="card"),
            el("section", el("h2", f"Chunks ({len(chunks)})"), chunk_list, class_="card"),
            el("section", el("h2", "Metadata"), pretty_json(d["metadata"]), class_="card"),
            el(
                "section",
                el("h2", "History"),
                history_table(
                    [
                        e
                        for e in view.ops.audit(AuditQuery(item_id=d["id"], layer="semantic"))
                        if e["collection"] == collection
                    ]
                ),
                class_="card",
            ),
            el(
                "section",
                el("h2", "Used in recalls"),
                recalls_table(view, f"{collection}/{d['id']}", "semantic"),
                class_="card",
            ),
        ]
    )
    return Page(short(d["document"], 60), body, section="/ui/knowledge")
