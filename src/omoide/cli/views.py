"""How the CLI prints each kind of result when ``--json`` is not given."""

from __future__ import annotations

from typing import Any

from omoide.cli.console import Output

__all__ = [
    "show_added",
    "show_audit",
    "show_cached",
    "show_collections",
    "show_distill",
    "show_documents",
    "show_episodes",
    "show_forget",
    "show_history",
    "show_hits",
    "show_index",
    "show_keys",
    "show_maintenance",
    "show_match",
    "show_new_key",
    "show_outcome",
    "show_procedures",
    "show_recall",
    "show_record",
    "show_recorded",
    "show_restore",
    "show_retention",
    "show_session",
    "show_stats",
]


EPISODE_COLUMNS = [
    ("id", "id"),
    ("timestamp", "when"),
    ("agent_name", "agent"),
    ("event_type", "type"),
    ("importance", "imp"),
    ("score", "score"),
    ("description", "description"),
]
PROCEDURE_COLUMNS = [
    ("name", "name"),
    ("version", "v"),
    ("trigger", "trigger"),
    ("success_rate", "success"),
    ("avg_quality_score", "quality"),
    ("execution_count", "runs"),
    ("agent_name", "owner"),
    ("template", "template"),
]
KEY_COLUMNS = [
    ("id", "id"),
    ("agent_name", "agent"),
    ("admin", "admin"),
    ("label", "label"),
    ("created_at", "created"),
    ("revoked_at", "revoked"),
]


def _when(row: dict[str, Any], key: str = "timestamp") -> dict[str, Any]:
    value = row.get(key)
    return {**row, key: value[:16].replace("T", " ") if isinstance(value, str) else value}


def show_episodes(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [c for c in EPISODE_COLUMNS if c[0] != "score" or any(r.get("score") for r in rows)]
    widths = {"description": 60}
    out.table([_when(r) for r in rows], cols, widths=widths, numeric=("importance", "score"))


def show_record(out: Output, row: dict[str, Any]) -> None:
    out.fields(row)


def show_recorded(out: Output, row: dict[str, Any]) -> None:
    """A new episode: its id and what it is, in one line (``-v``: the whole record)."""
    if out.verbose:
        return out.fields(row)
    out.line(
        f"recorded {row['id']} ({row['event_type']}, importance {row['importance']:.2f}, "
        f"scope {row.get('scope', 'global')})"
    )


def show_added(out: Output, report: dict[str, Any]) -> None:
    if out.verbose:
        return out.fields(report)
    out.line(report["summary"])
    for episode_id in report["episode_ids"]:
        out.line(f"  + {episode_id}")


def show_outcome(out: Output, row: dict[str, Any]) -> None:
    """A procedure after an outcome was folded in, in one line."""
    if out.verbose:
        return out.fields(row)
    out.line(
        f"{row['name']} v{row['version']}: outcome recorded ({row['execution_count']} runs, "
        f"success {row['success_rate']:.0%}, quality {row['avg_quality_score']:.1f})"
    )


def show_cached(out: Output, row: dict[str, Any]) -> None:
    if out.verbose:
        return out.fields(row)
    meta = row.get("metadata") or {}
    expires = meta.get("expires_at") or meta.get("cache_expires_at") or "-"
    out.line(f"cached {row['id']} in {row['collection']} (expires {expires})")


def show_hits(out: Output, rows: list[dict[str, Any]]) -> None:
    """Passages found; an indexed file's show where they are (path:line and symbol) rather
    than the document id."""
    shown = [{**r, "where": _where(r)} for r in rows]
    cols = [("similarity", "sim"), ("where", "where"), ("document", "text")]
    out.table(shown, cols, widths={"document": 70}, numeric=("similarity",))


def _where(hit: dict[str, Any]) -> str:
    meta = hit.get("metadata") or {}
    path = meta.get("path")
    if not path:
        return str(hit.get("doc_id", ""))
    line = meta.get("line_start")
    title = meta.get("symbol") or meta.get("heading")
    return (f"{path}:{line}" if line else str(path)) + (f" {title}" if title else "")


def show_documents(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [
        ("id", "id"),
        ("agent_name", "owner"),
        ("scope", "scope"),
        ("chunk_count", "chunks"),
        ("updated_at", "updated"),
        ("document", "text"),
    ]
    rows = [_when(r, "updated_at") for r in rows]
    out.table(rows, cols, widths={"document": 60}, numeric=("chunk_count",))


def show_procedures(out: Output, rows: list[dict[str, Any]]) -> None:
    out.table(rows, PROCEDURE_COLUMNS, widths={"template": 50, "trigger": 30})


def show_match(out: Output, result: dict[str, Any]) -> None:
    best = result.get("best")
    if best is None:
        out.line(f"no procedure matches {result['task']!r}")
        return
    out.line(f"best for {result['task']!r}: {best['name']} v{best['version']}")
    out.line(best["template"])
    if len(result["matches"]) > 1:
        show_procedures(out, result["matches"])


def show_history(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [
        ("version", "v"),
        ("current", "current"),
        ("success_rate", "success"),
        ("avg_quality_score", "quality"),
        ("execution_count", "runs"),
        ("created_at", "created"),
        ("template", "template"),
    ]
    out.table([_when(r, "created_at") for r in rows], cols, widths={"template": 60})


def show_session(out: Output, view: dict[str, Any]) -> None:
    out.line(
        f"{view['agent_name']} / {view['session_id']}: "
        f"{view['total_tokens']:,} of {view['max_tokens']:,} tokens "
        f"({view['slot_tokens'].get('pinned', 0):,} in pins, "
        f"{view['slot_tokens'].get('recent_msgs', 0):,} in messages)"
    )
    out.line(view["context"] or "(empty)")


def show_stats(out: Output, stats: dict[str, Any]) -> None:
    layers = stats["layers"]
    rows = [
        {
            "layer": "1 working",
            "items": f"{layers['working']['sessions']} sessions",
            "size": f"{layers['working']['message_tokens']:,} tokens in messages, "
            f"{layers['working'].get('pin_tokens', 0):,} in pins",
        },
        {
            "layer": "2 episodic",
            "items": f"{layers['episodic']['episodes']} active episodes"
            + _apart(layers["episodic"]),
            "size": f"{layers['episodic']['bytes']:,} B",
        },
        {
            "layer": "3 semantic",
            "items": f"{layers['semantic']['documents']} documents",
            "size": f"{layers['semantic']['bytes']:,} B",
        },
        {
            "layer": "4 procedural",
            "items": f"{layers['procedural']['procedures']} procedures",
            "size": f"{layers['procedural']['bytes']:,} B",
        },
    ]
    out.table(rows, [("layer", "layer"), ("items", "items"), ("size", "size")], title="Layers")
    collections = [{"collection": k, **v} for k, v in layers["semantic"]["collections"].items()]
    out.table(
        collections,
        [
            ("collection", "collection"),
            ("documents", "documents"),
            ("max_docs", "cap"),
            ("full", "full"),
            ("bytes", "bytes"),
        ],
        title="Collections",
        numeric=("documents", "max_docs", "bytes"),
    )
    cols = [
        ("agent", "agent"),
        ("episodes", "episodes"),
        ("documents", "documents"),
        ("procedures", "procedures"),
        ("sessions", "sessions"),
        ("episode_bytes", "episode B"),
        ("document_bytes", "document B"),
    ]
    out.table(stats["agents"], cols, title="Agents", numeric=[c[0] for c in cols[1:]])
    storage = stats.get("storage")
    if storage:
        out.line(
            f"on disk: {storage['path']} — database {storage['database_bytes']:,} B, "
            f"chroma {storage['chroma_bytes']:,} B"
        )


def _apart(episodic: dict[str, Any]) -> str:
    """The compressed and archived episodes, counted apart from the active ones."""
    parts = [f"{episodic[k]} {k}" for k in ("compressed", "archived") if episodic.get(k)]
    return f" (+ {', '.join(parts)})" if parts else ""


def show_keys(out: Output, rows: list[dict[str, Any]]) -> None:
    out.table([_when(_when(r, "created_at"), "revoked_at") for r in rows], KEY_COLUMNS)


def show_new_key(out: Output, row: dict[str, Any]) -> None:
    out.line(f"API key for {row['agent_name']}{' (admin)' if row['admin'] else ''}:")
    out.line(f"  {row['key']}")
    out.line("It is shown only now; the server keeps a hash. Send it as 'Authorization: Bearer'.")


def show_collections(out: Output, rows: list[dict[str, Any]]) -> None:
    def usage(row: dict[str, Any]) -> str:
        share = row.get("usage")
        if share is None:
            share = row["documents"] / row["max_docs"] if row["max_docs"] else 0.0
        return f"{share:.0%}" + (" FULL" if row.get("full") else "")

    shown = [
        {
            **r,
            "usage_text": usage(r),
            "retention": "forever" if r["retention_days"] is None else f"{r['retention_days']} d",
        }
        for r in rows
    ]
    cols = [
        ("name", "name"),
        ("documents", "documents"),
        ("max_docs", "cap"),
        ("usage_text", "usage"),
        ("on_full", "at cap"),
        ("retention", "retention"),
    ]
    if any(r.get("archived") is not None for r in rows):
        cols += [("archived", "archived"), ("expired", "expired"), ("chunks", "chunks")]
    cols.append(("purpose", "purpose"))
    out.table(
        shown,
        cols,
        numeric=("documents", "max_docs", "archived", "expired", "chunks"),
        widths={"purpose": 40},
    )


def show_recall(out: Output, result: dict[str, Any]) -> None:
    out.line(result["context"] or "(nothing relevant remembered)")
    if result["items"]:
        out.line()
        cols = [("layer", "layer"), ("id", "id"), ("score", "score"), ("why", "why")]
        out.table(result["items"], cols, numeric=("score",), widths={"why": 50})
    out.line(
        f"{result['tokens']:,} of {result['budget_tokens']:,} tokens, "
        f"{len(result['items'])} items from {', '.join(result['layers'])}"
    )


PLAN_COLUMNS = [
    ("policy", "policy"),
    ("action", "action"),
    ("layer", "layer"),
    ("collection", "collection"),
    ("item_id", "item"),
    ("reason", "reason"),
]


def show_distill(out: Output, report: dict[str, Any]) -> None:
    out.line(
        f"distilled {report['clusters']} clusters of {report['candidates']} candidate "
        f"episodes: {len(report['knowledge_written'])} knowledge documents written, "
        f"{report['episodes_marked']} episodes marked, {len(report['skipped'])} clusters "
        f"skipped in {report['seconds']:.1f} s" + ("" if report["complete"] else " (partial)")
    )
    for doc_id in report["knowledge_written"]:
        out.line(f"  + {doc_id}")
    if report.get("reason"):
        out.line(f"  {report['reason']}")


def show_forget(out: Output, report: dict[str, Any]) -> None:
    plan = [a for p in report["policies"] for a in p["acted"]]
    if plan:
        out.table(plan, PLAN_COLUMNS, widths={"reason": 50})
    rows = [
        {
            "policy": p["name"],
            "action": p["action"],
            "candidates": p["candidates"],
            "acted": len(p["acted"]) - len(p["failed"]),
            "kept": len(p["skipped"]),
            "failed": len(p["failed"]),
        }
        for p in report["policies"]
    ]
    cols = [(k, k) for k in ("policy", "action", "candidates", "acted", "kept", "failed")]
    out.table(rows, cols, numeric=("candidates", "acted", "kept", "failed"), title="Policies")
    verb = "would act on" if report["dry_run"] else "acted on"
    out.line(f"forgetting {verb} {report['acted']} items (run {report['run_id']})")
    if report.get("reason"):
        out.line(f"  {report['reason']}")


def show_retention(out: Output, report: dict[str, Any]) -> None:
    if report["actions"]:
        out.table(report["actions"], PLAN_COLUMNS, widths={"reason": 50})
    counts = {
        policy: sum(1 for a in report["actions"] if a["policy"] == policy)
        for policy in ("retention", "capacity", "cache_expiry")
    }
    verb = "would archive or delete" if report["dry_run"] else "archived or deleted"
    out.line(
        f"collections: {verb} {len(report['actions'])} documents "
        f"(retention {counts['retention']}, capacity {counts['capacity']}, "
        f"cache expiry {counts['cache_expiry']}); never-forget kept: "
        f"{sum(report['protected_kept'].values())}"
    )
    for name, over in report["over_cap"].items():
        out.line(f"  {name}: still {over:,} over its cap (the rest is never-forget)")


def show_maintenance(out: Output, report: dict[str, Any]) -> None:
    out.line(f"maintenance started {report['started_at'][:19]}, {report['seconds']:.1f} s")
    show_distill(out, report["distill"])
    show_forget(out, {**report["forget"], "acted": _acted(report["forget"])})
    if report.get("retention"):
        show_retention(out, report["retention"])


def _acted(forget: dict[str, Any]) -> int:
    return int(sum(len(p["acted"]) - len(p["failed"]) for p in forget["policies"]))


def show_audit(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [
        ("at", "at"),
        ("policy", "policy"),
        ("action", "action"),
        ("layer", "layer"),
        ("collection", "collection"),
        ("item_id", "item"),
        ("reason", "reason"),
    ]
    out.table([_when(r, "at") for r in rows], cols, widths={"reason": 50})


def show_restore(out: Output, result: dict[str, Any]) -> None:
    where = result["layer"] + (f"/{result['collection']}" if result.get("collection") else "")
    kept = "; kept against forgetting for good" if result.get("kept") else ""
    out.line(f"restored {result['item']['id']} in {where} (state {result['item']['state']}){kept}")


def show_index(out: Output, report: dict[str, Any]) -> None:
    out.line(report["summary"])
    if report["skipped"]:
        cols = [("path", "skipped file"), ("reason", "reason")]
        out.table(report["skipped"][:50], cols, widths={"path": 60})
        if len(report["skipped"]) > 50:
            out.line(f"… and {len(report['skipped']) - 50} more (--json lists them all)")
