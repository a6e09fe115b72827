"""Forgetting: the policies and their conditions, a dry run of tonight's run, the audit log
with restore buttons (for the item's owner or an admin), and the never-forget items."""

from __future__ import annotations

from typing import Any

from omoide.errors import NotFoundError, ValidationError
from omoide.server.ui.html import (
    Safe,
    badge,
    el,
    hidden,
    join,
    link,
    plural,
    select_field,
    short,
    table,
    url,
)
from omoide.server.ui.pages.episodes import episode_badges
from omoide.server.ui.view import Page, View, csrf_form, when
from omoide.service.protocol import AuditQuery

__all__ = ["dry_run", "forgetting", "restore"]

RESTORABLE = ("archived", "compressed")
ACTIONS = ("archive", "compress", "delete", "restore", "purge", "overflow")


def _policies(view: View) -> Safe:
    rows = [
        (
            el("strong", p.get("name", "")),
            p.get("target_layer", ""),
            el("code", p.get("condition", "")),
            p.get("action", ""),
            f"{p.get('grace_period_days', 0):g} days",
        )
        for p in view.mem.config.forgetting.policies
    ]
    return table(["Policy", "Layer", "Condition", "Action", "Grace"], rows, numeric=(4,))


def _item_link(layer: str, collection: str, item_id: str, text: str) -> Safe:
    if layer == "episodic":
        return link(text or item_id, url("/ui/episodes", item_id))
    if layer == "semantic" and collection:
        return link(text or item_id, url("/ui/knowledge", collection, item_id))
    return el("code", item_id)


def _current(view: View, layer: str, collection: str, item_id: str) -> dict[str, Any] | None:
    try:
        if layer == "episodic":
            return view.ops.get_episode(item_id)
        if layer == "semantic" and collection:
            return view.ops.get_document(collection, item_id)
    except (NotFoundError, ValidationError):
        return None
    return None


def _restore_button(view: View, e: dict[str, Any], now: dict[str, Any] | None) -> Safe | None:
    if now is None or now.get("state") not in RESTORABLE:
        return None
    if not (view.admin or (now.get("agent_name") and now["agent_name"] == view.agent)):
        return None
    return csrf_form(
        "/ui/forgetting/restore",
        view.csrf,
        hidden("item_id", e["item_id"]),
        hidden("layer", e["layer"]),
        hidden("collection", e["collection"]),
        label="Restore",
        kind="secondary",
    )


def _audit_filters(filters: dict[str, str | None]) -> Safe:
    return el(
        "form",
        select_field("action", "Action", ACTIONS, filters["action"]),
        select_field("layer", "Layer", ("episodic", "semantic"), filters["layer"]),
        el(
            "label",
            "Since",
            el("input", type="date", name="since", value=filters["since"] or ""),
            class_="field",
        ),
        hidden("run_id", filters["run_id"]) if filters["run_id"] else None,
        el("button", "Filter", type="submit"),
        method="get",
        action="/ui/forgetting#audit",
        class_="filters",
    )


def _audit(view: View) -> Safe:
    filters = {k: view.arg(k) or None for k in ("action", "layer", "run_id", "since")}
    entries = view.ops.audit(
        AuditQuery(limit=view.int_arg("limit", 100, low=1, high=1000), **filters)
    )
    seen: dict[tuple[str, str, str], dict[str, Any] | None] = {}
    rows = []
    for e in entries:
        place = (e["layer"], e["collection"], e["item_id"])
        if place not in seen:
            seen[place] = _current(view, *place)
        snapshot = e.get("snapshot") or {}
        text = (
            snapshot.get("description") or snapshot.get("content") or snapshot.get("document") or ""
        )
        rows.append(
            (
                when(e["at"]),
                badge(e["action"], e["action"]),
                _item_link(e["layer"], e["collection"], e["item_id"], short(text, 90)),
                e["layer"] + (f" / {e['collection']}" if e["collection"] else ""),
                e["policy"],
                short(e["reason"], 120),
                _restore_button(view, e, seen[place]),
            )
        )
    form = _audit_filters(filters)
    return join(
        [
            form,
            table(
                ["When", "Action", "Item", "Layer", "Policy", "Why", ""],
                rows,
                empty="No audit entry matches (that you may read).",
            ),
        ]
    )


def _never_forget(view: View) -> Safe:
    categories = join([el("span", c, class_="chip") for c in view.mem.config.never_forget], " ")
    rows = [
        (
            link(short(e["description"], 100), url("/ui/episodes", e["id"])),
            e["agent_name"],
            e["event_type"],
            episode_badges(e),
        )
        for e in view.reads.protected_episodes()
    ]
    return join(
        [
            el("p", "Categories kept forever: ", categories),
            table(
                ["Episode", "Agent", "Type", "State"],
                rows,
                empty="No never-forget episode you may read.",
            ),
        ]
    )


def _text_of(view: View, layer: str, collection: str, item_id: str) -> str:
    """A readable item's text, cut short ("" when the caller may not read it)."""
    now = _current(view, layer, collection, item_id)
    if now is None:
        return ""
    return short(now.get("description") or now.get("document") or "", 90)


def _plan(view: View, report: dict[str, Any]) -> Safe:
    blocks = []
    for p in report["policies"]:
        rows = [
            (
                badge(a["action"], a["action"]),
                _item_link(
                    a["layer"],
                    a["collection"],
                    a["item_id"],
                    _text_of(view, a["layer"], a["collection"], a["item_id"]),
                ),
                short(a["reason"], 140),
            )
            for a in p["acted"]
        ]
        rows += [
            (
                badge("never-forget", "protected")
                if "protect" in reason or "never" in reason
                else badge("kept", "kept"),
                _item_link(p["layer"], "", item_id, _text_of(view, p["layer"], "", item_id)),
                short(reason, 140),
            )
            for item_id, reason in p["skipped"]
        ]
        blocks.append(
            el(
                "details",
                el(
                    "summary",
                    el("strong", p["name"]),
                    f" — {len(p['acted'])} to {p['action']}, {len(p['skipped'])} kept",
                ),
                table(["Would", "Item", "Why"], rows, empty="Nothing matches this policy."),
                open=bool(rows),
            )
        )
    return el(
        "section",
        el("h2", "Dry run: what tonight's run would do"),
        el(
            "p",
            f"{plural(report['acted'], 'action')} planned; nothing was changed.",
            class_="notice ok",
            role="status",
        ),
        *blocks,
        class_="card",
        id="dry-run",
    )


def forgetting(view: View, report: dict[str, Any] | None = None) -> Page:
    restored = view.arg("restored")
    body = join(
        [
            el("p", "Restored; the audit log below shows it.", class_="notice ok", role="status")
            if restored == "1"
            else None,
            _plan(view, report) if report is not None else None,
            el(
                "section",
                el("h2", "Policies"),
                _policies(view),
                csrf_form(
                    "/ui/forgetting/dry-run", view.csrf, label="Preview tonight's run (dry run)"
                ),
                class_="card",
            ),
            el("section", el("h2", "Audit log"), _audit(view), class_="card", id="audit"),
            el("section", el("h2", "Never forget"), _never_forget(view), class_="card"),
        ]
    )
    return Page("Forgetting", body, section="/ui/forgetting")


def dry_run(view: View) -> Page:
    return forgetting(view, view.ops.forget(dry_run=True))


def restore(view: View) -> Page:
    view.ops.restore(
        view.arg("item_id"),
        layer=view.arg("layer") or None,
        collection=view.arg("collection") or None,
    )
    return Page("", redirect="/ui/forgetting?restored=1#audit")
