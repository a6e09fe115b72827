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
) -> dict[str, tuple[float, str]]:
    """Searchable, unexpired documents matching ``expression``, each with its BM25 and its
    analysed full text, best first (of those with ids in ``among`` if given)."""
    scope_sql, params = reader_predicate(
        reader, teams, owner_column="d.agent_name", scope_column="d.scope"
    )
    # CROSS JOIN keeps the full-text index the outer loop: SQLite would otherwise probe it
    # once per document of the collection.
    match = db.dialect.fulltext("semantic_docs_fts", "f")
    sql = (
        f"SELECT d.id, {match.score}, f.body FROM {match.source} "
        f"{match.driver} semantic_docs d ON d.rowid = f.rowid "
        f"WHERE {match.condition} AND d.collection = ? "
        "AND d.state IN ('active', 'compressed') "
        "AND (d.expires_at IS NULL OR d.expires_at > ?) "
        f"AND {scope_sql}"
    )
    args: list[Any] = [expression, collection, to_timestamp(now), *params]
    if among is not None:
        sql += f" AND d.id IN ({', '.join('?' * len(among))})"
        args.extend(among)
    sql += f" ORDER BY {match.order} LIMIT ?"
    rows = db.query(sql, [*args, limit])
    return {str(r[0]): (max(0.0, float(r[1])), str(r[2] or "")) for r in rows}
