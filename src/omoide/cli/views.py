"""How the CLI prints each kind of result when ``--json`` is not given."""

from __future__ import annotations

from typing import Any

from .console import Output

__all__ = [
    "show_collections",
    "show_documents",
    "show_episodes",
    "show_history",
    "show_hits",
    "show_keys",
    "show_match",
    "show_new_key",
    "show_procedures",
    "show_record",
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


def show_hits(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [("similarity", "sim"), ("doc_id", "document"), ("document", "text")]
    out.table(rows, cols, widths={"doc_id": 24, "document": 70}, numeric=("similarity",))


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
    out.table(rows, cols, widths={"id": 24, "document": 60}, numeric=("chunk_count",))


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
        f"{view['total_tokens']:,} of {view['max_tokens']:,} tokens"
    )
    out.line(view["context"] or "(empty)")


def show_stats(out: Output, stats: dict[str, Any]) -> None:
    layers = stats["layers"]
    rows = [
        {
            "layer": "1 working",
            "items": f"{layers['working']['sessions']} sessions",
            "size": f"{layers['working']['message_tokens']:,} tokens",
        },
        {
            "layer": "2 episodic",
            "items": f"{layers['episodic']['episodes']} episodes",
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
        [("collection", "collection"), ("documents", "documents"), ("bytes", "bytes")],
        title="Collections",
        numeric=("documents", "bytes"),
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


def show_keys(out: Output, rows: list[dict[str, Any]]) -> None:
    out.table([_when(_when(r, "created_at"), "revoked_at") for r in rows], KEY_COLUMNS)


def show_new_key(out: Output, row: dict[str, Any]) -> None:
    out.line(f"API key for {row['agent_name']}{' (admin)' if row['admin'] else ''}:")
    out.line(f"  {row['key']}")
    out.line("It is shown only now; the server keeps a hash. Send it as 'Authorization: Bearer'.")


def show_collections(out: Output, rows: list[dict[str, Any]]) -> None:
    cols = [
        ("name", "name"),
        ("documents", "documents"),
        ("max_docs", "cap"),
        ("purpose", "purpose"),
    ]
    out.table(rows, cols, numeric=("documents", "max_docs"))
