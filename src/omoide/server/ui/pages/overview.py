"""The overview: per layer and per agent, counts and sizes; growth over time; the last
maintenance runs; collection caps and how close each is."""

from __future__ import annotations

from collections import Counter
from typing import Any

from omoide.clock import from_timestamp
from omoide.pipelines.scheduler import LAST_RUN_KEY
from omoide.server.ui.charts import bar_chart, line_chart, meter
from omoide.server.ui.html import Safe, badge, el, join, link, plural, table, url
from omoide.server.ui.reads import maintenance_runs
from omoide.server.ui.view import Page, View, when
from omoide.service.protocol import AuditQuery

__all__ = ["overview"]


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _layers(stats: dict[str, Any]) -> Safe:
    layers = stats["layers"]
    rows = [
        (
            "working",
            plural(layers["working"]["sessions"], "session"),
            f"{layers['working']['message_tokens']:,} tokens",
        ),
        (
            "episodic",
            plural(layers["episodic"]["episodes"], "episode"),
            _size(layers["episodic"]["bytes"]),
        ),
        (
            "semantic",
            plural(layers["semantic"]["documents"], "document"),
            _size(layers["semantic"]["bytes"]),
        ),
        (
            "procedural",
            plural(layers["procedural"]["procedures"], "procedure"),
            _size(layers["procedural"]["bytes"]),
        ),
    ]
    return table(["Layer", "Items", "Size"], rows, numeric=(1, 2))


def _agents(stats: dict[str, Any]) -> Safe:
    rows = [
        (
            link(a["agent"] or "(none)", url("/ui/episodes", agent=a["agent"])),
            f"{a['episodes']:,}",
            f"{a['documents']:,}",
            f"{a['procedures']:,}",
            f"{a['sessions']:,}",
            _size(a["episode_bytes"] + a["document_bytes"] + a["procedure_bytes"]),
        )
        for a in stats["agents"]
    ]
    headers = ["Agent", "Episodes", "Documents", "Procedures", "Sessions", "Size"]
    return table(headers, rows, numeric=(1, 2, 3, 4, 5), empty="No memories yet.")


def _collections(view: View) -> Safe:
    rows = []
    for c in view.ops.collections():
        used = c["usage"] * c["max_docs"] if c["usage"] is not None else c["documents"]
        rows.append(
            (
                link(c["name"], url("/ui/knowledge", c["name"])),
                c["purpose"],
                f"{c['documents']:,}",
                f"{c['max_docs']:,}",
                join(
                    [meter(used, c["max_docs"]), " ", badge("full", "warn") if c["full"] else None]
                ),
                c["on_full"],
            )
        )
    note = (
        None
        if view.admin
        else el(
            "p",
            "Documents you may read; the fill is of those (an admin key sees the whole store).",
            class_="hint",
        )
    )
    headers = ["Collection", "Purpose", "Documents", "Cap", "Fill", "When full"]
    return join([table(headers, rows, numeric=(2, 3)), note])


def _growth(view: View, entries: list[dict[str, Any]]) -> Safe:
    """Items accumulated per day, and forgetting actions per day over the same days."""
    labels, series = view.reads.growth()
    per_day = Counter(e["at"][:10] for e in entries)
    days = sorted({*labels, *per_day})
    return el(
        "div",
        line_chart(
            "Items you can read, accumulated per day",
            labels,
            [(name, values) for name, values in series.items()],
        ),
        bar_chart(
            "Forgetting actions per day (audit log)", days, [per_day.get(d, 0) for d in days]
        ),
        class_="grid charts",
    )


def _runs(view: View, entries: list[dict[str, Any]]) -> Safe:
    parts: list[Safe] = []
    state = view.app_state
    background = getattr(state, "maintenance", None) if state is not None else None
    if view.admin and background is not None:
        reports = list(background.scheduler.reports)[-10:][::-1]
        rows = [
            (
                when(r.started_at),
                f"{r.seconds:.1f} s",
                f"{len(r.distill.knowledge_written)} written, {len(r.distill.knowledge_updated)} "
                f"updated, {r.distill.episodes_marked} episodes",
                f"{sum(len(p.acted) for p in r.forget.policies)}",
                f"{len(r.retention.actions) if r.retention else 0}",
            )
            for r in reports
        ]
        parts.append(
            table(
                ["Started", "Took", "Distilled", "Forgotten", "Collection policies"],
                rows,
                numeric=(1, 3, 4),
                caption="Runs of this server process",
                empty="No maintenance has run in this server process yet.",
            )
        )
    assert view.mem.db is not None
    last = view.mem.db.get_meta(LAST_RUN_KEY)
    parts.append(
        el(
            "p",
            "Last maintenance: ",
            el("strong", when(from_timestamp(float(last))) if last else "never"),
        )
    )
    audit_rows = [
        (
            link(when(r["last"]), url("/ui/forgetting", run_id=r["run_id"])),
            el("code", r["run_id"][:12]),
            join(
                [el("span", f"{k} × {v}", class_="chip") for k, v in sorted(r["actions"].items())],
                " ",
            ),
            f"{r['seconds']:.1f} s",
        )
        for r in maintenance_runs(entries)
    ]
    parts.append(
        table(
            ["When", "Run", "What it did", "Span of actions"],
            audit_rows,
            numeric=(3,),
            caption="Runs in the audit log (what you may read of them)",
            empty="The audit log is empty: nothing has been forgotten.",
        )
    )
    return join(parts)


def overview(view: View) -> Page:
    stats = view.ops.stats()
    entries = view.ops.audit(AuditQuery(limit=1000))
    me = view.ops.whoami()
    scope = (
        "every scope (an admin key)"
        if view.admin
        else (
            "your own items, global ones, and those shared with you"
            + (f" or your teams ({', '.join(me['teams'])})" if me["teams"] else "")
        )
    )
    body = join(
        [
            el(
                "p",
                "Signed in as ",
                el("strong", me["agent"] or "operator"),
                f": this view shows {scope}.",
                class_="lead",
            ),
            el(
                "div",
                el("section", el("h2", "Layers"), _layers(stats), class_="card"),
                el("section", el("h2", "Agents"), _agents(stats), class_="card"),
                class_="grid",
            ),
            el(
                "section",
                el("h2", "Growth"),
                _growth(view, entries),
                class_="card",
            ),
            el("section", el("h2", "Collections and caps"), _collections(view), class_="card"),
            el("section", el("h2", "Maintenance"), _runs(view, entries), class_="card"),
        ]
    )
    return Page("Overview", body, section="/ui")
