"""Writing an import: each kind of record through its layer, skipping what already exists."""

from __future__ import annotations

import base64
import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.errors import StorageError, ValidationError

if TYPE_CHECKING:
    from omoide.memory import Memory

from omoide.layers.working import import_session_rows, sessions_present
from omoide.service.transfer.format import SEARCHABLE, ImportReport, Progress, embedder_identity
from omoide.service.transfer.parse import parse
from omoide.storage.database import insert_row

__all__ = ["import_jsonl"]


def import_jsonl(
    mem: Memory,
    lines: Iterable[str | bytes],
    *,
    reembed: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import an export into ``mem``; items that already exist are skipped, never replaced."""
    header, records = parse(mem, lines)
    report = ImportReport()
    try:
        _import_episodes(mem, header, records.get("episode", []), reembed, report, progress)
        _import_documents(mem, records.get("document", []), report, progress)
        _import_procedures(mem, records, report)
        _import_sessions(mem, records, report)
        _import_logs(mem, records, report)
    except sqlite3.Error as exc:
        raise StorageError(f"import failed while writing: {exc}") from exc
    mem.episodic.enforce_capacity()
    return report


def _count(report: ImportReport, kind: str, imported: int, skipped: int) -> None:
    report.imported[kind] = report.imported.get(kind, 0) + imported
    report.skipped[kind] = report.skipped.get(kind, 0) + skipped


def _existing(mem: Memory, sql: str, keys: list[tuple[Any, ...]]) -> set[tuple[Any, ...]]:
    """Which of ``keys`` exist, by a query that returns the key columns for one key."""
    return {key for key in keys if mem.db.query_one(sql, key) is not None}


def _import_episodes(
    mem: Memory,
    header: Mapping[str, Any],
    rows: list[dict[str, Any]],
    reembed: bool,
    report: ImportReport,
    progress: Progress | None,
) -> None:
    from omoide.layers.episodic.store import embedding_text

    present = mem.episodic.rows.present([r["id"] for r in rows])
    fresh = [r for r in rows if r["id"] not in present]
    dim = mem.embedder.dimension
    reuse = not reembed and header.get("embedder") == embedder_identity(mem)
    vectors: list[bytes | None] = []
    for r in fresh:
        blob = None
        if reuse and r.get("embedding"):
            try:
                blob = base64.b64decode(r["embedding"], validate=True)
            except ValueError:
                raise ValidationError(f"episode {r['id']!r}.embedding", "not base64") from None
            if len(blob) != dim * 4:
                raise ValidationError(
                    f"episode {r['id']!r}.embedding", f"expected {dim} float32 values"
                )
        vectors.append(blob)
    missing = [i for i, v in enumerate(vectors) if v is None]
    for start in range(0, len(missing), 64):
        part = missing[start : start + 64]
        texts = [
            embedding_text(fresh[i]["agent_name"], fresh[i]["description"], fresh[i].get("outcome"))
            for i in part
        ]
        for i, vec in zip(part, mem.embedder.embed_passages(texts), strict=True):
            vectors[i] = np.asarray(vec, dtype=np.float32).tobytes()
        if progress:
            progress("re-embedding episodes", min(start + 64, len(missing)), len(missing))
    report.reembedded += len(missing)
    for start in range(0, len(fresh), 500):
        batch: list[dict[str, Any]] = []
        for r, blob in zip(fresh[start : start + 500], vectors[start : start + 500], strict=True):
            row = dict(r)
            row["embedding"] = blob
            for key in ("context", "tags", "refs"):
                row[key] = json.dumps(
                    row.get(key) or ({} if key == "context" else []), ensure_ascii=False
                )
            batch.append(row)
        with mem.db.transaction() as conn:
            # With their full text and context keys (and their neighbours' keys).
            mem.episodic.rows.insert(conn, batch)
        if progress:
            progress("episodes", min(start + 500, len(fresh)), len(fresh))
    mem.episodic.forget_vectors(None)  # rebuilt from the table on the next recall
    _count(report, "episode", len(fresh), len(rows) - len(fresh))


def _import_documents(
    mem: Memory, rows: list[dict[str, Any]], report: ImportReport, progress: Progress | None
) -> None:
    """Registry rows go in as *pending*; the store's recovery then chunks, embeds and writes
    them to ChromaDB (the same path that completes a write a crash interrupted)."""
    registry = mem.semantic.registry
    fresh = [r for r in rows if not registry.exists(r["collection"], r["id"])]
    searchable = [r for r in fresh if r["state"] in SEARCHABLE]
    with mem.db.transaction() as conn:
        registry.insert_rows(
            conn, (_document_row(r, r["state"]) for r in fresh if r["state"] not in SEARCHABLE)
        )
    for start in range(0, len(searchable), 32):
        with mem.db.transaction() as conn:
            registry.insert_rows(
                conn, (_document_row(r, "pending") for r in searchable[start : start + 32])
            )
        mem.semantic.recover()
        if progress:
            progress("embedding documents", min(start + 32, len(searchable)), len(searchable))
    _count(report, "document", len(fresh), len(rows) - len(fresh))


def _document_row(row: Mapping[str, Any], state: str) -> dict[str, Any]:
    out = dict(row)
    out["metadata"] = json.dumps(row.get("metadata") or {}, ensure_ascii=False)
    out["state"] = state
    return out


def _import_procedures(
    mem: Memory, records: Mapping[str, list[dict[str, Any]]], report: ImportReport
) -> None:
    procedures = records.get("procedure", [])
    present = mem.procedural.present(p["name"] for p in procedures)
    names = {p["name"] for p in procedures} - present
    for kind in ("procedure_version", "procedure_outcome"):
        for r in records.get(kind, []):
            if r["name"] not in names and r["name"] not in present:
                raise ValidationError(
                    f"{kind} of {r['name']!r}", "refers to a procedure that is not in the file"
                )
    versions = [v for v in records.get("procedure_version", []) if v["name"] in names]
    outcomes = [o for o in records.get("procedure_outcome", []) if o["name"] in names]
    with mem.db.transaction() as conn:
        mem.procedural.import_rows(
            conn, (p for p in procedures if p["name"] in names), versions, outcomes
        )
    _count(report, "procedure", len(names), len(present))
    _count(
        report,
        "procedure_version",
        len(versions),
        len(records.get("procedure_version", [])) - len(versions),
    )
    _count(
        report,
        "procedure_outcome",
        len(outcomes),
        len(records.get("procedure_outcome", [])) - len(outcomes),
    )


def _import_sessions(
    mem: Memory, records: Mapping[str, list[dict[str, Any]]], report: ImportReport
) -> None:
    sessions = records.get("working_session", [])
    keys = [(s["agent_name"], s["session_id"]) for s in sessions]
    fresh = set(keys) - sessions_present(mem.db, keys)
    for kind in ("working_message", "working_pin"):
        for r in records.get(kind, []):
            if (r["agent_name"], r["session_id"]) not in set(keys):
                raise ValidationError(
                    f"{kind} of {r['agent_name']}/{r['session_id']}",
                    "refers to a session that is not in the file",
                )

    def new(kind: str) -> list[dict[str, Any]]:
        return [r for r in records.get(kind, []) if (r["agent_name"], r["session_id"]) in fresh]

    rows = {kind: new(kind) for kind in ("working_session", "working_message", "working_pin")}
    with mem.db.transaction() as conn:
        import_session_rows(
            conn,
            (
                {**s, "slots": json.dumps(s.get("slots") or {}, ensure_ascii=False)}
                for s in rows["working_session"]
            ),
            (
                {**m, "metadata": json.dumps(m.get("metadata") or {}, ensure_ascii=False)}
                for m in rows["working_message"]
            ),
            rows["working_pin"],
        )
    for kind, written in rows.items():
        _count(report, kind, len(written), len(records.get(kind, [])) - len(written))


def _import_logs(
    mem: Memory, records: Mapping[str, list[dict[str, Any]]], report: ImportReport
) -> None:
    """The audit and recall logs and the indexed-file list; rows already present are kept."""
    audit = records.get("audit", [])
    audit_keys = [(a["at"], a["run_id"], a["item_id"], a["action"]) for a in audit]
    present = _existing(
        mem,
        "SELECT 1 FROM audit_log WHERE at = ? AND run_id = ? AND item_id = ? AND action = ?",
        audit_keys,
    )
    recalls = records.get("recall", [])
    recall_present = {
        k[0]
        for k in _existing(
            mem, "SELECT 1 FROM recall_log WHERE id = ?", [(r["id"],) for r in recalls]
        )
    }
    recall_ids = {r["id"] for r in recalls}
    for item in records.get("recall_item", []):
        if item["recall_id"] not in recall_ids:
            raise ValidationError(
                f"recall_item of {item['recall_id']!r}",
                "refers to a recall that is not in the file",
            )
    files = records.get("indexed_file", [])
    file_keys = [(f["collection"], f["source"], f["path"]) for f in files]
    files_present = _existing(
        mem,
        "SELECT 1 FROM indexed_files WHERE collection = ? AND source = ? AND path = ?",
        file_keys,
    )
    counts: dict[str, int] = defaultdict(int)
    with mem.db.transaction() as conn:
        for entry, key in zip(audit, audit_keys, strict=True):
            if key not in present:
                row = {k: v for k, v in entry.items() if k != "id"}
                row["snapshot"] = json.dumps(entry.get("snapshot") or {}, ensure_ascii=False)
                insert_row(conn, "audit_log", row)
                counts["audit"] += 1
        for r in recalls:
            if r["id"] not in recall_present:
                insert_row(conn, "recall_log", {**r, "layers": json.dumps(r.get("layers") or [])})
                counts["recall"] += 1
        for item in records.get("recall_item", []):
            if item["recall_id"] not in recall_present:
                insert_row(conn, "recall_log_items", item)
                counts["recall_item"] += 1
        for f, file_key in zip(files, file_keys, strict=True):
            if file_key not in files_present:
                insert_row(
                    conn, "indexed_files", {**f, "doc_ids": json.dumps(f.get("doc_ids") or [])}
                )
                counts["indexed_file"] += 1
    for kind in ("audit", "recall", "recall_item", "indexed_file"):
        _count(report, kind, counts[kind], len(records.get(kind, [])) - counts[kind])
