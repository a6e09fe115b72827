"""The best full-text matches among the rows a filter selects, ranked before they are filtered.

A full-text query ranks every match of its words: BM25 of a common word's thousand
matches is most of its time. Joined to the table its filter reads (state, scope, expiry),
it also looks up each match's row there, which doubled that time. Here the full-text index
ranks its matches alone, and only the best few times ``limit`` are looked up: when at least
``limit`` of them pass the filter, they are the best that pass (every match further down
ranks below all of them), the same answer the join gives. Only when the filter is narrow —
fewer than ``limit`` of those pass — is the join run. Ties rank by rowid either way.

The owning layer passes its tables' names and its filter: this module reads no table of its
own. Both dialects (:mod:`omoide.storage.dialect`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["best_matches", "passing"]

#: The full-text index's best ``DEPTH × limit`` matches are checked against the filter
#: before the join is run.
DEPTH = 2
#: Rowids checked against a filter in one read (a statement's parameters are bounded).
BATCH = 500


def best_matches(
    db: Any,
    table: str,
    expression: str,
    *,
    rows: str,
    key: str,
    where: str,
    params: Sequence[Any],
    limit: int,
    weights: Sequence[float] | None = None,
    also: Sequence[int] = (),
    narrow: bool = False,
) -> list[tuple[int, float]]:
    """Rowid and BM25 (higher is better) of the ``limit`` best matches of ``expression`` in
    the full-text ``table`` among the rows of ``rows`` (a FROM item; ``key`` its rowid, the
    full-text table's) that ``where`` selects, best first; then every other match whose rowid
    is in ``also``, best first. ``narrow``: ``where`` selects few rows (a list of ids), so
    the join is run at once."""
    match = db.dialect.fulltext(table, "f", weights)
    wanted = list(dict.fromkeys(also))
    named = f"f.rowid IN ({', '.join('?' * len(wanted))})" if wanted else "0"
    order = f"named DESC, {match.order}, f.rowid"
    select = f"SELECT f.rowid, {match.score} AS score, {named} AS named FROM {match.source}"
    if not narrow:
        depth = DEPTH * limit + len(wanted)
        ranked = db.query(
            f"{select} WHERE {match.condition} ORDER BY {order} LIMIT ?",
            [*wanted, expression, depth],
        )
        allowed = passing(db, [int(r[0]) for r in ranked], rows, key, where, params)
        kept = [r for r in ranked if int(r[0]) in allowed]
        if len(ranked) < depth or sum(1 for r in kept if not r[2]) >= limit:
            return _best(kept, limit)
    joined = db.query(
        f"{select} {match.driver} {rows} ON {key} = f.rowid "
        f"WHERE {match.condition} AND {where} ORDER BY {order} LIMIT ?",
        [*wanted, expression, *params, limit + len(wanted)],
    )
    return _best(joined, limit)


def passing(
    db: Any, rowids: Sequence[int], rows: str, key: str, where: str, params: Sequence[Any]
) -> set[int]:
    """Which of ``rowids`` (of ``rows``, a FROM item whose rowid is ``key``) ``where``
    selects, in one read per 500. The listed rowids drive the read: given ``rowid IN (...)``
    beside an indexed column of the filter, SQLite's planner may scan that index instead
    (every active episode, every document of a collection) — four to ten times slower."""
    found: set[int] = set()
    for start in range(0, len(rowids), BATCH):
        part = list(rowids[start : start + BATCH])
        listed = ", ".join(["(?)"] * len(part))
        found.update(
            int(r[0])
            for r in db.query(
                f"WITH listed(r) AS (VALUES {listed}) "
                f"SELECT {key} FROM listed CROSS JOIN {rows} WHERE {key} = listed.r AND {where}",
                [*part, *params],
            )
        )
    return found


def _best(found: Sequence[Any], limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best of ``found`` (rowid, score, named), then the other named ones."""
    ranked = sorted(found, key=lambda r: (-float(r[1]), int(r[0])))
    best = ranked[:limit]
    chosen = {int(r[0]) for r in best}
    rest = [r for r in ranked if bool(r[2]) and int(r[0]) not in chosen]
    return [(int(r[0]), max(0.0, float(r[1]))) for r in [*best, *rest]]
