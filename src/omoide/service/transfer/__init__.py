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
import sqlite3
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omoide.memory import Memory

from omoide.service.transfer.format import (
    FORMAT,
    FORMAT_VERSION,
    SECTIONS,
    ImportReport,
    Progress,
    Section,
    dumps,
    embedder_identity,
)
from omoide.service.transfer.importers import import_jsonl

__all__ = ["FORMAT", "FORMAT_VERSION", "ImportReport", "Progress", "export_jsonl", "import_jsonl"]


def export_jsonl(
    mem: Memory, *, embeddings: bool = True, progress: Progress | None = None
) -> Iterator[str]:
    """Every layer of ``mem`` as JSON Lines (each string is one line, without newline)."""
    from omoide._version import __version__

    with mem.db.snapshot() as snapshot:  # one consistent view of every table
        counts = {
            s.kind: int(snapshot.execute(f"SELECT COUNT(*) FROM {s.table}").fetchone()[0])
            for s in SECTIONS
        }
        total = sum(counts.values())
        yield dumps(
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
                    yield dumps(_export_row(section, row, embeddings))
                done += len(rows)
                if progress:
                    progress("export", done, total)
        yield dumps({"kind": "end", "counts": counts})


def _export_row(section: Section, row: sqlite3.Row, embeddings: bool) -> dict[str, Any]:
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
