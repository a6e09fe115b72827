"""Move an embedded store onto PostgreSQL and a Chroma server (``omoide migrate``).

The move is an export of the source piped into an import of the target (the same JSON
Lines format as ``omoide export`` / ``import``, so nothing is copied by a second code path),
then a check: every table holds as many rows in the target as in the source, and a sample
of episodes is found by the target's recall as by the source's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from omoide.core.config import Config
from omoide.errors import StorageError
from omoide.service.transfer import export_jsonl
from omoide.service.transfer.format import SECTIONS
from omoide.service.transfer.importers import import_jsonl

if TYPE_CHECKING:
    from omoide.memory import Memory

__all__ = ["MoveReport", "move_store", "shared_config"]


@dataclass
class MoveReport:
    """Rows per table in the source and the target, and the recall sample's agreement."""

    source: dict[str, int] = field(default_factory=dict)
    target: dict[str, int] = field(default_factory=dict)
    sampled: int = 0
    found: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": dict(self.source),
            "target": dict(self.target),
            "sampled": self.sampled,
            "found": self.found,
        }


def shared_config(config: Config, database_url: str, chroma_url: str) -> Config:
    """``config`` with its state on PostgreSQL and its vectors (episodes too) on a Chroma
    server."""
    return replace(
        config,
        storage=replace(config.storage, url=database_url),
        semantic=replace(config.semantic, chroma_url=chroma_url),
        episodic=replace(config.episodic, vector_store="chroma"),
    )


def _counts(mem: Memory) -> dict[str, int]:
    return {s.table: int(mem.db.scalar(f"SELECT COUNT(*) FROM {s.table}") or 0) for s in SECTIONS}


def move_store(source: Memory, target: Memory, *, samples: int = 20) -> MoveReport:
    """Copy ``source`` into an empty ``target`` and verify it; StorageError if the target
    is not empty, a count differs, or a sampled episode the source finds is not found."""
    if any(_counts(target).values()):
        raise StorageError("the target database is not empty; move into a new one")
    import_jsonl(target, export_jsonl(source, embeddings=True))
    report = MoveReport(source=_counts(source), target=_counts(target))
    if report.source != report.target:
        raise StorageError(f"row counts differ after the move: {report.as_dict()}")
    rows = source.episodic.rows.live()
    step = max(1, len(rows) // max(1, samples))
    for row in rows[::step][:samples]:
        if row["id"] not in {e.id for e in source.episodic.recall(row["description"], top_k=5)}:
            continue  # a sample only counts where the source finds it
        report.sampled += 1
        found = {e.id for e in target.episodic.recall(row["description"], top_k=5)}
        report.found += row["id"] in found
    if report.found < report.sampled:
        raise StorageError(f"recall differs after the move: {report.as_dict()}")
    return report
