"""Export and import: a whole data directory as JSON Lines.

An export is one JSON object per line: a ``header`` (format, version, the embedder that made
the vectors, counts), then every row of every layer, then an ``end`` line that repeats the
counts so a truncated file is recognised. Rows keep every column of their table, with JSON
columns as objects and timestamps as stored (seconds since the epoch, UTC, exactly):

* ``episode`` — an episode with its access statistics, state and (optionally, base64 float32)
  its embedding;
* ``document`` — a semantic document with its metadata, owner, scope, lifecycle and access
  statistics (chunk vectors are not exported: the importer chunks and embeds again);
* ``procedure``, ``procedure_version``, ``procedure_outcome`` — procedures with every version
  and every reported outcome;
* ``working_session``, ``working_message``, ``working_pin`` — working-memory sessions;
* ``audit`` — the audit log of forgetting, restores and overflow (with each item's snapshot);
* ``recall``, ``recall_item`` — the recall log (which memories went into which context);
* ``indexed_file`` — the files indexed into collections, so re-indexing after a move only
  reads what changed.

Not exported: API keys (secrets of one deployment: mint new ones on the target) and the
distillation journal (work in flight, completed by the next run on the source).

The export reads one consistent snapshot (its own read transaction), so it can run while the
owning process keeps writing. An import validates the whole file before it writes anything,
never overwrites: an item whose id already exists in the target is skipped (and counted), so
importing the same file twice is harmless and an interrupted import can simply be run again.
Episode vectors are reused when the file was written with the target's embedder, and computed
again otherwise (or with ``reembed=True``), which is also how a directory moves to a new
embedding model.
"""

from __future__ import annotations

import base64
import json
import math
import sqlite3
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from omoide.core.scope import normalize_scope
from omoide.core.validation import (
    check_json_mapping,
    check_metadata,
    check_name,
    check_string_list,
    check_text,
    check_unit_interval,
)
from omoide.errors import StorageError, ValidationError

if TYPE_CHECKING:
    from omoide.memory import Memory

__all__ = ["FORMAT", "FORMAT_VERSION", "ImportReport", "Progress", "export_jsonl", "import_jsonl"]

FORMAT = "omoide-export"
FORMAT_VERSION = 1

#: Called as ``progress(phase, done, total)`` while a long operation runs.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class _Section:
    kind: str
    table: str
    order: str
    #: The columns that identify a row: the same key twice in one file is refused.
    key: tuple[str, ...]
    json_columns: frozenset[str] = frozenset()
    #: Columns that are internal to this database and not exported.
    internal: frozenset[str] = frozenset()


SECTIONS: tuple[_Section, ...] = (
    _Section(
        "episode",
        "episodes",
        "rowid",
        ("id",),
        frozenset({"context", "tags", "refs"}),
        frozenset({"rowid"}),
    ),
    _Section(
        "document",
        "semantic_docs",
        "rowid",
        ("collection", "id"),
        frozenset({"metadata"}),
        frozenset({"rowid"}),
    ),
    _Section("procedure", "procedures", "name", ("name",)),
    _Section("procedure_version", "procedure_versions", "name, version", ("name", "version")),
    # Outcomes and messages keep their row ids when those are free; else they get new ones.
    _Section("procedure_outcome", "procedure_outcomes", "id", ()),
    _Section(
        "working_session",
        "working_sessions",
        "agent_name, session_id",
        ("agent_name", "session_id"),
        frozenset({"slots"}),
    ),
    _Section("working_message", "working_messages", "id", (), frozenset({"metadata"})),
    _Section(
        "working_pin",
        "working_pins",
        "agent_name, session_id, pinned_at, key",
        ("agent_name", "session_id", "key"),
    ),
    # Audit entries are recognised by when, which run, which item and what was done.
    _Section("audit", "audit_log", "id", (), frozenset({"snapshot"})),
    _Section("recall", "recall_log", "created_at, id", ("id",), frozenset({"layers"})),
    _Section("recall_item", "recall_log_items", "recall_id, position", ("recall_id", "position")),
    _Section(
        "indexed_file",
        "indexed_files",
        "collection, source, path",
        ("collection", "source", "path"),
        frozenset({"doc_ids"}),
    ),
)
_BY_KIND = {s.kind: s for s in SECTIONS}
#: Document states whose chunks live in ChromaDB (the others are kept in the registry only).
_SEARCHABLE = ("active", "compressed", "pending")


def _dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def embedder_identity(mem: Memory) -> str:
    return f"{mem.embedder.name}:{mem.embedder.dimension}"


# -- export ------------------------------------------------------------------------------


def export_jsonl(
    mem: Memory, *, embeddings: bool = True, progress: Progress | None = None
) -> Iterator[str]:
    """Every layer of ``mem`` as JSON Lines (each string is one line, without newline)."""
    from omoide import __version__

    assert mem.db is not None
    uri = mem.db.path.resolve().as_uri() + "?mode=ro"
    snapshot = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    snapshot.row_factory = sqlite3.Row
    try:
        snapshot.execute("BEGIN")  # one read transaction: a consistent snapshot of every table
        counts = {
            s.kind: int(snapshot.execute(f"SELECT COUNT(*) FROM {s.table}").fetchone()[0])
            for s in SECTIONS
        }
        total = sum(counts.values())
        yield _dumps(
            {
                "kind": "header",
                "format": FORMAT,
                "version": FORMAT_VERSION,
                "omoide": __version__,
                "embedder": embedder_identity(mem),
                "embeddings": embeddings,
                "exported_at": mem.clock.now().isoformat(),
                "counts": counts,
            }
        )
        done = 0
        for section in SECTIONS:
            cursor = snapshot.execute(f"SELECT * FROM {section.table} ORDER BY {section.order}")
            while rows := cursor.fetchmany(500):
                for row in rows:
                    yield _dumps(_export_row(section, row, embeddings))
                done += len(rows)
                if progress:
                    progress("export", done, total)
        yield _dumps({"kind": "end", "counts": counts})
    finally:
        snapshot.close()


def _export_row(section: _Section, row: sqlite3.Row, embeddings: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": section.kind}
    for key in row.keys():  # noqa: SIM118 - iterating a Row yields its values
        if key in section.internal:
            continue
        value = row[key]
        if key == "embedding":
            if not embeddings:
                continue
            value = base64.b64encode(value).decode("ascii")
        elif key in section.json_columns:
            value = json.loads(value)
        out[key] = value
    return out


# -- import ------------------------------------------------------------------------------


@dataclass
class ImportReport:
    """What an import wrote and what it skipped because it already existed."""

    imported: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    #: Episodes whose vectors were computed again.
    reembedded: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "imported": dict(self.imported),
            "skipped": dict(self.skipped),
            "reembedded": self.reembedded,
        }


@dataclass(frozen=True)
class _Column:
    name: str
    type: str
    required: bool


def _table_columns(mem: Memory, table: str) -> dict[str, _Column]:
    assert mem.db is not None
    columns = {}
    info = mem.db.query(f"PRAGMA table_info({table})")
    single_pk = sum(1 for r in info if r["pk"]) == 1
    for r in info:
        # Only a lone INTEGER PRIMARY KEY is the rowid, filled in when missing.
        integer_pk = single_pk and bool(r["pk"]) and str(r["type"]).upper() == "INTEGER"
        required = bool(r["notnull"]) and r["dflt_value"] is None and not integer_pk
        columns[r["name"]] = _Column(r["name"], str(r["type"]).upper(), required)
    return columns


def _parse(
    mem: Memory, lines: Iterable[str | bytes]
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Read and validate every line; nothing is written here."""
    header: dict[str, Any] | None = None
    end: dict[str, Any] | None = None
    records: dict[str, list[dict[str, Any]]] = defaultdict(list)
    seen: dict[tuple[Any, ...], str] = {}
    columns = {s.kind: _table_columns(mem, s.table) for s in SECTIONS}
    number = 0
    for number, raw in enumerate(lines, start=1):
        where = f"line {number}"
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            raise ValidationError(where, f"not UTF-8 text: {exc}") from None
        if not text.strip():
            continue
        if end is not None:
            raise ValidationError(where, "content after the 'end' line")
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise ValidationError(where, f"not valid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ValidationError(where, "expected a JSON object")
        kind = obj.get("kind")
        if header is None:
            if kind != "header" or obj.get("format") != FORMAT:
                raise ValidationError(where, f"not an omoide export (expected a {FORMAT} header)")
            version = obj.get("version")
            if not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
                raise ValidationError(
                    f"{where}.version", f"format version {version!r} is not supported"
                )
            header = obj
            continue
        if kind == "end":
            end = obj
            continue
        section = _BY_KIND.get(kind) if isinstance(kind, str) else None
        if section is None:
            raise ValidationError(f"{where}.kind", f"unknown record kind {kind!r}")
        row = _check_record(mem, section, columns[section.kind], obj, where)
        if section.key:
            key = (section.kind, *(row[c] for c in section.key))
            if key in seen:
                raise ValidationError(
                    where, f"{section.kind} {key[1:]!r} appears twice (first on {seen[key]})"
                )
            seen[key] = where
        records[section.kind].append(row)
    if header is None:
        raise ValidationError("line 1", "empty input: not an omoide export")
    if end is None:
        raise ValidationError(f"line {number}", "no 'end' line: the export is truncated")
    expected = end.get("counts")
    found = {s.kind: len(records.get(s.kind, [])) for s in SECTIONS}
    if not isinstance(expected, dict) or {k: expected.get(k, 0) for k in found} != found:
        raise ValidationError(
            "end.counts", f"the file holds {found} but its end line says {expected!r}"
        )
    return header, records


def _check_record(
    mem: Memory, section: _Section, columns: Mapping[str, _Column], obj: dict[str, Any], where: str
) -> dict[str, Any]:
    row = {k: v for k, v in obj.items() if k != "kind"}
    for key in row:
        if key not in columns or key in section.internal:
            raise ValidationError(f"{where}.{key}", f"unknown column of {section.table}")
    for col in columns.values():
        value = row.get(col.name)
        if value is None:
            # A document's state decides how it is imported: it has to be given.
            needed = col.required or (section.kind == "document" and col.name == "state")
            if needed and not (col.name == "embedding" and section.kind == "episode"):
                raise ValidationError(f"{where}.{col.name}", "is required")
            continue
        field_name = f"{where}.{col.name}"
        if col.name in section.json_columns:
            expected: tuple[type, ...] = (
                (dict,) if col.name in ("context", "metadata", "slots", "snapshot") else (list,)
            )
            if not isinstance(value, expected):
                raise ValidationError(field_name, f"expected a JSON {expected[0].__name__}")
        elif col.name == "embedding":
            if not isinstance(value, str):
                raise ValidationError(field_name, "expected base64 text")
        elif col.type == "TEXT":
            if not isinstance(value, str):
                raise ValidationError(field_name, f"expected a string, got {type(value).__name__}")
            check_text(field_name, value, max_chars=100_000_000, allow_empty=True)
        elif col.type in ("REAL", "INTEGER"):
            if not isinstance(value, int | float) or (
                isinstance(value, float) and not math.isfinite(value)
            ):
                raise ValidationError(field_name, f"expected a number, got {value!r}")
            if col.type == "INTEGER" and not isinstance(value, int):
                raise ValidationError(field_name, f"expected an integer, got {value!r}")
            if isinstance(value, int) and not -(2**63) <= value < 2**63:
                raise ValidationError(field_name, "integer out of the 64-bit range")
    _check_semantics(mem, section.kind, row, where)
    return row


def _check_semantics(mem: Memory, kind: str, row: dict[str, Any], where: str) -> None:
    """The library's own rules for the fields it validates on a normal write."""
    if "scope" in row:
        normalize_scope(row["scope"], f"{where}.scope")
    if kind == "episode":
        check_name(f"{where}.id", row["id"])
        check_name(f"{where}.agent_name", row["agent_name"])
        check_name(f"{where}.event_type", row["event_type"])
        check_unit_interval(f"{where}.importance", row["importance"])
        check_json_mapping(f"{where}.context", row.get("context"))
        check_string_list(f"{where}.tags", row.get("tags"))
        check_string_list(f"{where}.refs", row.get("refs"))
    elif kind == "document":
        if row["collection"] not in mem.semantic.collections:
            raise ValidationError(
                f"{where}.collection",
                f"collection {row['collection']!r} is not configured in the target "
                f"(known: {', '.join(mem.semantic.collections)})",
            )
        check_name(f"{where}.id", row["id"])
        check_metadata(f"{where}.metadata", row.get("metadata"))
    elif kind == "procedure_version" or kind == "procedure":
        check_name(f"{where}.name", row["name"])
    elif kind.startswith("working_"):
        check_name(f"{where}.agent_name", row["agent_name"])
        check_name(f"{where}.session_id", row["session_id"])


def import_jsonl(
    mem: Memory,
    lines: Iterable[str | bytes],
    *,
    reembed: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Import an export into ``mem``; items that already exist are skipped, never replaced."""
    header, records = _parse(mem, lines)
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
    assert mem.db is not None
    return {key for key in keys if mem.db.query_one(sql, key) is not None}


def _insert(conn: sqlite3.Connection, table: str, row: Mapping[str, Any]) -> sqlite3.Cursor:
    names = list(row)
    return conn.execute(
        f"INSERT INTO {table}({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [row[n] for n in names],
    )


def _import_episodes(
    mem: Memory,
    header: Mapping[str, Any],
    rows: list[dict[str, Any]],
    reembed: bool,
    report: ImportReport,
    progress: Progress | None,
) -> None:
    from omoide.layers.episodic.store import embedding_text

    assert mem.db is not None
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
    assert mem.db is not None
    registry = mem.semantic.registry
    fresh = [r for r in rows if not registry.exists(r["collection"], r["id"])]
    searchable = [r for r in fresh if r["state"] in _SEARCHABLE]
    with mem.db.transaction() as conn:
        registry.insert_rows(
            conn, (_document_row(r, r["state"]) for r in fresh if r["state"] not in _SEARCHABLE)
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
    assert mem.db is not None
    procedures = records.get("procedure", [])
    present = {
        k[0]
        for k in _existing(
            mem, "SELECT 1 FROM procedures WHERE name = ?", [(p["name"],) for p in procedures]
        )
    }
    names = {p["name"] for p in procedures} - present
    for kind in ("procedure_version", "procedure_outcome"):
        for r in records.get(kind, []):
            if r["name"] not in names and r["name"] not in present:
                raise ValidationError(
                    f"{kind} of {r['name']!r}", "refers to a procedure that is not in the file"
                )
    with mem.db.transaction() as conn:
        for p in procedures:
            if p["name"] in names:
                _insert(conn, "procedures", p)
        versions = [v for v in records.get("procedure_version", []) if v["name"] in names]
        for v in versions:
            _insert(conn, "procedure_versions", v)
        outcomes = [o for o in records.get("procedure_outcome", []) if o["name"] in names]
        for o in outcomes:
            _insert_keeping_id(conn, "procedure_outcomes", o)
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


def _insert_keeping_id(conn: sqlite3.Connection, table: str, row: Mapping[str, Any]) -> None:
    """Insert with the exported row id when it is free, else with a new one."""
    conn.execute("SAVEPOINT keep_id")
    try:
        _insert(conn, table, row)
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK TO keep_id")
        _insert(conn, table, {k: v for k, v in row.items() if k != "id"})
    conn.execute("RELEASE keep_id")


def _import_sessions(
    mem: Memory, records: Mapping[str, list[dict[str, Any]]], report: ImportReport
) -> None:
    assert mem.db is not None
    sessions = records.get("working_session", [])
    keys = [(s["agent_name"], s["session_id"]) for s in sessions]
    present = _existing(
        mem, "SELECT 1 FROM working_sessions WHERE agent_name = ? AND session_id = ?", keys
    )
    fresh = set(keys) - present
    for kind in ("working_message", "working_pin"):
        for r in records.get(kind, []):
            if (r["agent_name"], r["session_id"]) not in set(keys):
                raise ValidationError(
                    f"{kind} of {r['agent_name']}/{r['session_id']}",
                    "refers to a session that is not in the file",
                )
    counts: dict[str, int] = defaultdict(int)
    with mem.db.transaction() as conn:
        for s in sessions:
            if (s["agent_name"], s["session_id"]) in fresh:
                _insert(
                    conn,
                    "working_sessions",
                    {**s, "slots": json.dumps(s.get("slots") or {}, ensure_ascii=False)},
                )
                counts["working_session"] += 1
        for m in records.get("working_message", []):
            if (m["agent_name"], m["session_id"]) in fresh:
                row = {**m, "metadata": json.dumps(m.get("metadata") or {}, ensure_ascii=False)}
                _insert_keeping_id(conn, "working_messages", row)
                counts["working_message"] += 1
        for p in records.get("working_pin", []):
            if (p["agent_name"], p["session_id"]) in fresh:
                _insert(conn, "working_pins", p)
                counts["working_pin"] += 1
    for kind in ("working_session", "working_message", "working_pin"):
        _count(report, kind, counts[kind], len(records.get(kind, [])) - counts[kind])


def _import_logs(
    mem: Memory, records: Mapping[str, list[dict[str, Any]]], report: ImportReport
) -> None:
    """The audit and recall logs and the indexed-file list; rows already present are kept."""
    assert mem.db is not None
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
                _insert(conn, "audit_log", row)
                counts["audit"] += 1
        for r in recalls:
            if r["id"] not in recall_present:
                _insert(conn, "recall_log", {**r, "layers": json.dumps(r.get("layers") or [])})
                counts["recall"] += 1
        for item in records.get("recall_item", []):
            if item["recall_id"] not in recall_present:
                _insert(conn, "recall_log_items", item)
                counts["recall_item"] += 1
        for f, file_key in zip(files, file_keys, strict=True):
            if file_key not in files_present:
                _insert(conn, "indexed_files", {**f, "doc_ids": json.dumps(f.get("doc_ids") or [])})
                counts["indexed_file"] += 1
    for kind in ("audit", "recall", "recall_item", "indexed_file"):
        _count(report, kind, counts[kind], len(records.get(kind, [])) - counts[kind])
