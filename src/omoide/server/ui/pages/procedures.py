"""Procedures: their versions, the outcome history as a chart, and rollback (for whoever
the service lets change the procedure: its owner)."""

from __future__ import annotations

from typing import Any

from omoide.server.ui.charts import line_chart
from omoide.server.ui.html import (
    Safe,
    badge,
    definition_list,
    el,
    hidden,
    join,
    link,
    short,
    table,
    url,
)
from omoide.server.ui.pages.episodes import recalls_table
from omoide.server.ui.view import Page, View, csrf_form, when

__all__ = ["procedure_page", "procedures", "rollback"]


def procedures(view: View) -> Page:
    rows = [
        (
            link(p["name"], url("/ui/procedures", p["name"])),
            el("code", short(p["trigger"], 60)),
            f"v{p['version']}",
            f"{p['success_rate']:.0%}",
            f"{p['avg_quality_score']:.1f}",
            f"{p['execution_count']:,}",
            p["agent_name"] or "—",
        )
        for p in view.ops.procedures()
    ]
    headers = ["Procedure", "Trigger", "Version", "Success", "Quality", "Runs", "Owner"]
    body = el(
        "section",
        table(headers, rows, numeric=(2, 3, 4, 5), empty="No procedures yet."),
        class_="card",
    )
    return Page("Procedures", body, section="/ui/procedures")


def _may_change(view: View, owner: str) -> bool:
    caller = view.ops.caller
    return caller.change_all or (bool(owner) and owner == caller.agent)


def _versions(view: View, name: str, versions: list[dict[str, Any]], can_roll: bool) -> Safe:
    """Every version, newest first, with a rollback button where the caller may use it."""
    rows = []
    for v in sorted(versions, key=lambda v: v["version"], reverse=True):
        action = (
            csrf_form(
                url("/ui/procedures", name, "rollback"),
                view.csrf,
                hidden("version", v["version"]),
                label=f"Roll back to v{v['version']}",
                kind="secondary",
            )
            if can_roll and not v["current"]
            else None
        )
        rows.append(
            (
                join([f"v{v['version']} ", badge("current", "current") if v["current"] else None]),
                el("pre", v["template"], class_="template"),
                f"{v['success_rate']:.0%}",
                f"{v['avg_quality_score']:.1f}",
                f"{v['execution_count']:,}",
                when(v["created_at"]),
                action,
            )
        )
    hint = (
        None
        if can_roll
        else el(
            "p",
            "Only the procedure's owner may roll it back (as through the REST API).",
            class_="hint",
        )
    )
    headers = ["Version", "Template", "Success", "Quality", "Runs", "Created", ""]
    return join([hint, table(headers, rows, numeric=(2, 3, 4))])


def _outcomes_chart(outcomes: list[dict[str, Any]]) -> Safe:
    return line_chart(
        "Reported outcomes: quality (0–10) and success (0 or 10)",
        [f"#{i + 1} v{o['version']}" for i, o in enumerate(outcomes)],
        [
            ("quality", [o["quality_score"] for o in outcomes]),
            ("success", [10.0 if o["success"] else 0.0 for o in outcomes]),
        ],
    )


def procedure_page(view: View) -> Page:
    name = view.path["name"]
    p = view.ops.get_procedure(name)
    versions = view.ops.procedure_history(name)
    can_roll = _may_change(view, p["agent_name"])
    rolled = view.arg("rolled")
    notice = f"Rolled back to version {rolled}." if rolled.isdigit() else None
    fields = definition_list(
        [
            ("Trigger", el("code", p["trigger"])),
            ("Description", p["description"] or None),
            ("Current version", f"v{p['version']}"),
            ("Selection score", f"{p['selection_score']:.2f}"),
            ("Owner", p["agent_name"] or "—"),
            ("Scope", p["scope"]),
            ("Updated", when(p["last_updated"])),
        ]
    )
    chart = _outcomes_chart(view.reads.procedure_outcomes(name))
    body = join(
        [
            el("p", link("← Procedures", "/ui/procedures")),
            el("p", notice, class_="notice ok", role="status") if notice else None,
            el("section", fields, class_="card"),
            el("section", el("h2", "Outcome history"), chart, class_="card"),
            el(
                "section",
                el("h2", "Versions"),
                _versions(view, name, versions, can_roll),
                class_="card",
            ),
            el(
                "section",
                el("h2", "Used in recalls"),
                recalls_table(view, name, "procedural"),
                class_="card",
            ),
        ]
    )
    return Page(f"Procedure: {name}", body, section="/ui/procedures")


def rollback(view: View) -> Page:
    name = view.path["name"]
    version = view.int_arg("version", 0, low=0)
    view.ops.rollback_procedure(name, version)
    return Page("", redirect=url("/ui/procedures", name, rolled=str(version)))
