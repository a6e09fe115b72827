"""Reading an export: every line parsed and checked against the target's tables before
anything is written."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omoide.core.scope import normalize_scope
from omoide.core.validation import (
    check_json_mapping,
    check_metadata,
    check_name,
    check_string_list,
    check_text,
    check_unit_interval,
)
from omoide.errors import ValidationError

if TYPE_CHECKING:
    from omoide.memory import Memory

from omoide.service.transfer.format import BY_KIND, FORMAT, FORMAT_VERSION, SECTIONS, Section

__all__ = ["parse"]


@dataclass(frozen=True)
class _Column:
    name: str
    type: str
    required: bool


def _table_columns(mem: Memory, table: str) -> dict[str, _Column]:
    if mem.db.dialect.name == "postgresql":
        return _pg_columns(mem, table)
    columns = {}
    info = mem.db.query(f"PRAGMA table_info({table})")
    single_pk = sum(1 for r in info if r["pk"]) == 1
    for r in info:
        # Only a lone INTEGER PRIMARY KEY is the rowid, filled in when missing.
        integer_pk = single_pk and bool(r["pk"]) and str(r["type"]).upper() == "INTEGER"
        required = bool(r["notnull"]) and r["dflt_value"] is None and not integer_pk
        columns[r["name"]] = _Column(r["name"], str(r["type"]).upper(), required)
    return columns


_PG_TYPES = {"bigint": "INTEGER", "double precision": "REAL", "text": "TEXT", "bytea": "BLOB"}


def _pg_columns(mem: Memory, table: str) -> dict[str, _Column]:
    """As :func:`_table_columns`, from PostgreSQL's catalogue (SQLite's type names)."""
    rows = mem.db.query(
        "SELECT column_name, data_type, is_nullable, column_default, is_identity "
        "FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = ?",
        [table],
    )
    return {
        r[0]: _Column(
            r[0],
            _PG_TYPES.get(str(r[1]), str(r[1]).upper()),
            r[2] == "NO" and r[3] is None and r[4] != "YES",
        )
        for r in rows
    }


def parse(
    mem: Memory, lines: Iterable[str | bytes]
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Read and validate every line; nothing is written here.

    Long because every record kind of the export format is recognised and validated in one pass over
    the lines.
    """
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
        section = BY_KIND.get(kind) if isinstance(kind, str) else None
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
    mem: Memory, section: Section, columns: Mapping[str, _Column], obj: dict[str, Any], where: str
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
