"""The few SQL constructs that differ between SQLite and PostgreSQL.

The layers write one SQL text for both engines: ``?`` placeholders (the PostgreSQL
connection rewrites them), ``ON CONFLICT``, ``RETURNING``, ``CASE`` for a larger of two
values, ``instr()`` and ``json_extract()`` (the PostgreSQL schema defines both as SQLite
has them). What cannot be written once is asked of a :class:`Dialect`:

* full text: a ranked match against one of the full-text tables (FTS5 with ``bm25()`` on
  SQLite; on PostgreSQL the same table name holds the analysed text and a ``tsvector``, and
  ``omoide_bm25()`` computes the same BM25 formula in SQL);
* the elements of a JSON array column, case-insensitive ``LIKE``, and the length of text
  in bytes;
* keeping an identity sequence ahead of a row inserted with an explicit id.

Code that has a connection but no :class:`~omoide.storage.Database` asks
:func:`dialect_of`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["POSTGRES", "SQLITE", "Dialect", "FullTextMatch", "dialect_of"]


@dataclass(frozen=True)
class FullTextMatch:
    """The parts of a ranked full-text match, to splice into one SELECT.

    ``source`` goes in FROM (it takes the match expression as its one ``?``; on SQLite that
    ``?`` is in ``condition`` instead, which comes after FROM, so the parameter order is the
    same), ``score`` is the BM25 score (higher is better), ``order`` sorts best first.
    The source has the full-text table's columns (``rowid``, ``body`` ...).
    """

    source: str
    condition: str
    score: str
    order: str
    #: The join from the match to its rows: SQLite's ``CROSS JOIN`` keeps the match the
    #: outer loop of its plan; PostgreSQL plans joins itself.
    driver: str = "CROSS JOIN"


class Dialect:
    """SQLite's constructs (the embedded default); :class:`PostgresDialect` overrides."""

    name = "sqlite"

    def fulltext(
        self, table: str, alias: str, weights: Sequence[float] | None = None
    ) -> FullTextMatch:
        """A BM25-ranked match of the FTS5 expression (one ``?``) against ``table``."""
        args = "" if weights is None else ", " + ", ".join(f"{float(w):g}" for w in weights)
        return FullTextMatch(
            source=f"{table} {alias}",
            condition=f"{table} MATCH ?",
            score=f"-bm25({table}{args})",
            order=f"bm25({table}{args})",
        )

    def json_elements(self, column: str, alias: str) -> str:
        """A FROM item whose rows are the elements (``alias.value``, as text) of a JSON
        array held as text in ``column``."""
        return f"json_each({column}) {alias}"

    def like(self) -> str:
        """The operator for an ASCII-case-insensitive LIKE."""
        return "LIKE"

    def byte_length(self, expr: str) -> str:
        """The length in bytes (UTF-8) of text ``expr`` (SQLite's ``octet_length`` is newer
        than the SQLite many Pythons ship)."""
        return f"LENGTH(CAST({expr} AS BLOB))"

    def integrity_errors(self) -> tuple[type[Exception], ...]:
        """The driver's exceptions for a violated constraint."""
        import sqlite3

        return (sqlite3.IntegrityError,)

    def keep_sequence(self, conn: Any, table: str, column: str) -> None:
        """After a row of ``table`` was inserted with an explicit ``column`` (an integer
        key), make sure the next generated key is past it (SQLite does this itself)."""


class PostgresDialect(Dialect):
    name = "postgresql"

    def fulltext(
        self, table: str, alias: str, weights: Sequence[float] | None = None
    ) -> FullTextMatch:
        w = "1" if weights is None else ", ".join(f"{float(x):g}" for x in weights)
        return FullTextMatch(
            source=(
                f"(SELECT t.*, m.score FROM omoide_bm25('{table}', ?, "
                f"ARRAY[{w}]::float8[]) m JOIN {table} t ON t.rowid = m.rowid) {alias}"
            ),
            condition="1 = 1",
            score=f"{alias}.score",
            order=f"{alias}.score DESC, {alias}.rowid",
            driver="JOIN",
        )

    def json_elements(self, column: str, alias: str) -> str:
        return f"jsonb_array_elements_text(({column})::jsonb) AS {alias}(value)"

    def like(self) -> str:
        return "ILIKE"

    def byte_length(self, expr: str) -> str:
        return f"octet_length({expr})"

    def integrity_errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.errors.IntegrityError,)

    def keep_sequence(self, conn: Any, table: str, column: str) -> None:
        conn.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"GREATEST((SELECT COALESCE(MAX({column}), 0) FROM {table}), 1))"
        )


SQLITE = Dialect()
POSTGRES = PostgresDialect()


def dialect_of(conn: Any) -> Dialect:
    """The dialect of a connection: PostgreSQL connections carry theirs; anything else is
    SQLite's."""
    dialect = getattr(conn, "dialect", None)
    return dialect if isinstance(dialect, Dialect) else SQLITE
