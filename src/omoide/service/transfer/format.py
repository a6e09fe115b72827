"""The export format: its sections (one per table, in order), its header and the import report."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omoide.memory import Memory


__all__ = [
    "BY_KIND",
    "FORMAT",
    "FORMAT_VERSION",
    "SEARCHABLE",
    "SECTIONS",
    "ImportReport",
    "Progress",
    "Section",
    "dumps",
    "embedder_identity",
]

FORMAT = "omoide-export"
FORMAT_VERSION = 1

#: Called as ``progress(phase, done, total)`` while a long operation runs.
Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Section:
    """One kind of record: the table it is copied from, in which order, and how."""

    kind: str
    table: str
    order: str
    #: The columns that identify a row: the same key twice in one file is refused.
    key: tuple[str, ...]
    json_columns: frozenset[str] = frozenset()
    #: Columns that are internal to this database and not exported.
    internal: frozenset[str] = frozenset()


SECTIONS: tuple[Section, ...] = (
    Section(
        "episode",
        "episodes",
        "rowid",
        ("id",),
        frozenset({"context", "tags", "refs"}),
        frozenset({"rowid"}),
    ),
    Section(
        "document",
        "semantic_docs",
        "rowid",
        ("collection", "id"),
        frozenset({"metadata"}),
        frozenset({"rowid"}),
    ),
    Section("procedure", "procedures", "name", ("name",)),
    Section("procedure_version", "procedure_versions", "name, version", ("name", "version")),
    # Outcomes and messages keep their row ids when those are free; else they get new ones.
    Section("procedure_outcome", "procedure_outcomes", "id", ()),
    Section(
        "working_session",
        "working_sessions",
        "agent_name, session_id",
        ("agent_name", "session_id"),
        frozenset({"slots"}),
    ),
    Section("working_message", "working_messages", "id", (), frozenset({"metadata"})),
    Section(
        "working_pin",
        "working_pins",
        "agent_name, session_id, pinned_at, key",
        ("agent_name", "session_id", "key"),
    ),
    # Audit entries are recognised by when, which run, which item and what was done.
    Section("audit", "audit_log", "id", (), frozenset({"snapshot"})),
    Section(
        "recall",
        "recall_log",
        "created_at, id",
        ("id",),
        frozenset({"layers"}),
        frozenset({"rowid"}),  # PostgreSQL's (SQLite's is implicit, not in SELECT *)
    ),
    Section("recall_item", "recall_log_items", "recall_id, position", ("recall_id", "position")),
    Section(
        "indexed_file",
        "indexed_files",
        "collection, source, path",
        ("collection", "source", "path"),
        frozenset({"doc_ids"}),
    ),
)
BY_KIND = {s.kind: s for s in SECTIONS}
#: Document states whose chunks live in ChromaDB (the others are kept in the registry only).
SEARCHABLE = ("active", "compressed", "pending")


def dumps(obj: Mapping[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def embedder_identity(mem: Memory) -> str:
    return f"{mem.embedder.name}:{mem.embedder.dimension}"


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
