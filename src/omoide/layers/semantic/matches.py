"""Full-text matches of the semantic layer: documents whose words match a question.

Read by ``DocumentRegistry.search_text`` and by the ranker's candidates
(:mod:`omoide.layers.semantic.candidates`). Part of the semantic layer, which owns the tables
it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from omoide.clock import to_timestamp
from omoide.core.scope import reader_predicate
from omoide.storage import Database
from omoide.storage.ranking import best_matches

__all__ = ["matches"]


def matches(
    db: Database,
    collection: str,
    expression: str,
    limit: int,
    among: Sequence[str] | None,
    reader: str | None,
    teams: Sequence[str],
    now: datetime,
    *,
    also: Sequence[str] = (),
) -> dict[str, tuple[float, str]]:
    """Searchable, unexpired documents matching ``expression``, each with its BM25 and its
    analysed full text: the ``limit`` best (of those with ids in ``among`` if given), best
    first, then every other match whose id is in ``also``, best first.

    ``also`` costs no second scan of the index: the documents it names are sorted ahead of
    the rest, so one scan scores both (BM25 over every match of a common word is most of a
    full-text query's time; :mod:`omoide.storage.ranking`)."""
    scope_sql, params = reader_predicate(
        reader, teams, owner_column="d.agent_name", scope_column="d.scope"
    )
    where = (
        "d.collection = ? AND d.state IN ('active', 'compressed') "
        f"AND (d.expires_at IS NULL OR d.expires_at > ?) AND {scope_sql}"
    )
    args: list[Any] = [collection, to_timestamp(now), *params]
    if among is not None:
        where += f" AND d.id IN ({', '.join('?' * len(among))})"
        args.extend(among)
    wanted = list(dict.fromkeys(also))
    named = _rowids(db, collection, wanted)
    found = best_matches(
        db,
        "semantic_docs_fts",
        expression,
        rows="semantic_docs d",
        key="d.rowid",
        where=where,
        params=args,
        limit=limit,
        also=[named[d] for d in wanted if d in named],
        narrow=among is not None,
    )
    # The id and the analysed text of the rows kept only, not of every match ranked.
    marks = ", ".join("?" * len(found))
    rows = (
        db.query(
            f"SELECT d.rowid, d.id, b.body FROM semantic_docs d "
            f"JOIN semantic_docs_fts b ON b.rowid = d.rowid WHERE d.rowid IN ({marks})",
            [rowid for rowid, _ in found],
        )
        if found
        else []
    )
    texts = {int(r[0]): (str(r[1]), str(r[2] or "")) for r in rows}
    return {texts[r][0]: (score, texts[r][1]) for r, score in found if r in texts}


def _rowids(db: Database, collection: str, ids: Sequence[str]) -> dict[str, int]:
    """The rowid of each of ``ids`` in ``collection`` (those it holds)."""
    if not ids:
        return {}
    marks = ", ".join("?" * len(ids))
    rows = db.query(
        f"SELECT id, rowid FROM semantic_docs WHERE collection = ? AND id IN ({marks})",
        [collection, *ids],
    )
    return {str(r[0]): int(r[1]) for r in rows}
