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
    *,
    also: Sequence[str] = (),
) -> dict[str, tuple[float, str]]:
    """Searchable, unexpired documents matching ``expression``, each with its BM25 and its
    analysed full text: the ``limit`` best (of those with ids in ``among`` if given), best
    first, then every other match whose id is in ``also``, best first.

    ``also`` costs no second query: the documents it names are sorted ahead of the rest, so
    one scan of the index scores both (BM25 over every match of a common word is most of a
    full-text query's time)."""
    scope_sql, params = reader_predicate(
        reader, teams, owner_column="d.agent_name", scope_column="d.scope"
    )
    wanted = list(dict.fromkeys(also))
    named = f"d.id IN ({', '.join('?' * len(wanted))})" if wanted else "0"
    # CROSS JOIN keeps the full-text index the outer loop: SQLite would otherwise probe it
    # once per document of the collection.
    match = db.dialect.fulltext("semantic_docs_fts", "f")
    sql = (
        f"SELECT d.id, {match.score} AS score, {named} AS named, f.rowid AS fts_row "
        f"FROM {match.source} {match.driver} semantic_docs d ON d.rowid = f.rowid "
        f"WHERE {match.condition} AND d.collection = ? "
        "AND d.state IN ('active', 'compressed') "
        "AND (d.expires_at IS NULL OR d.expires_at > ?) "
        f"AND {scope_sql}"
    )
    # The parameters in the SELECT list come first; the expression's ``?`` is next on
    # either dialect (in the condition on SQLite, in the source on PostgreSQL).
    args: list[Any] = [*wanted, expression, collection, to_timestamp(now), *params]
    if among is not None:
        sql += f" AND d.id IN ({', '.join('?' * len(among))})"
        args.extend(among)
    order = f"named DESC, {match.order}" if wanted else match.order
    sql += f" ORDER BY {order} LIMIT ?"
    # The analysed text is read for the rows kept only, not for every match of the sort.
    sql = (
        f"SELECT m.id, m.score, b.body, m.named, m.fts_row FROM ({sql}) m "
        "JOIN semantic_docs_fts b ON b.rowid = m.fts_row"
    )
    rows = db.query(sql, [*args, limit + len(wanted)])
    # Best first, ties by row as the index returns them; ``named`` rows are sorted apart.
    ranked = sorted(rows, key=lambda r: (-float(r[1]), int(r[4])))
    best = ranked[:limit]
    chosen = {str(r[0]) for r in best}
    rest = [r for r in ranked if bool(r[3]) and str(r[0]) not in chosen]
    return {str(r[0]): (max(0.0, float(r[1])), str(r[2] or "")) for r in [*best, *rest]}
