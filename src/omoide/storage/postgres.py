"""omoide's relational state on PostgreSQL (psycopg 3, the ``postgres`` extra).

The layers' SQL is written once, with ``?`` placeholders; :class:`PgConnection` rewrites
them to psycopg's ``%s`` and binds values on the client (so an untyped ``? IS NULL`` works
as on SQLite), and returns rows that read like ``sqlite3.Row`` (by index or by name).

Guarantees, as on SQLite:

* durable on return: ``synchronous_commit`` is on (PostgreSQL's default) and every write is
  one transaction, committed before the call returns (a recall's bookkeeping alone,
  ``transaction(durable=False)``, commits with it off for that transaction);
* one writer at a time: a write transaction first takes a transaction-scoped advisory lock,
  so the read-then-write sequences the layers were written for (SQLite's ``BEGIN
  IMMEDIATE``) stay correct with several replicas writing to one database; reads never wait;
* never-forget and the append-only audit log are enforced by triggers
  (:mod:`omoide.storage.pg_schema`), refusals raised as the same typed errors;
* migrations are named, recorded and transactional; a process that finds another migrating
  waits for it.

One connection per :class:`PostgresDatabase`, shared by the process's threads under a lock,
as on SQLite: a server replica's requests are serialized on it, and throughput comes from
running replicas.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from decimal import Decimal
from functools import lru_cache
from typing import Any

from omoide.clock import Clock
from omoide.errors import ConfigError, ProtectedMemoryError, StorageError
from omoide.storage.database import Database
from omoide.storage.dialect import POSTGRES
from omoide.storage.migrations import Migration

__all__ = ["PgConnection", "PgRow", "PostgresDatabase", "is_postgres_url"]

#: Keys of the advisory locks omoide takes (a 64-bit space; any fixed values do).
WRITE_LOCK = 0x6F6D6F6964650001
_PROTECTED = "omoide-protected: "
_AUDIT = "omoide-audit: "


def is_postgres_url(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


@lru_cache(maxsize=4096)
def translate(sql: str) -> str:
    """``sql`` with ``?`` placeholders as psycopg's ``%s`` (and literal ``%`` doubled),
    leaving quoted strings and identifiers alone."""
    out: list[str] = []
    quote: str | None = None
    for ch in sql:
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        if ch == "%":
            out.append("%%")
            continue
        out.append(ch)
    return "".join(out)


class PgRow(tuple[Any, ...]):
    """One result row: by index like a tuple, by column name like ``sqlite3.Row``."""

    _names: dict[str, int]

    def __new__(cls, names: dict[str, int], values: Sequence[Any]) -> PgRow:
        row = super().__new__(cls, (_plain(v) for v in values))
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names[key])
            except KeyError:
                raise IndexError(f"no such column: {key}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _plain(value: Any) -> Any:
    """What SQLite would return: ``SUM`` of integers is an int, not a Decimal."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _row_factory(cursor: Any) -> Any:
    names = {c.name: i for i, c in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> PgRow:
        return PgRow(names, values)

    return make


class PgCursor:
    """The part of ``sqlite3.Cursor`` the layers use, over a psycopg cursor."""

    def __init__(self, cursor: Any) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    @property
    def lastrowid(self) -> None:
        return None  # use RETURNING

    def fetchone(self) -> PgRow | None:
        if self._cursor.description is None:
            return None
        row: PgRow | None = self._cursor.fetchone()
        return row

    def fetchall(self) -> list[PgRow]:
        if self._cursor.description is None:
            return []
        rows: list[PgRow] = self._cursor.fetchall()
        return rows

    def fetchmany(self, size: int) -> list[PgRow]:
        if self._cursor.description is None:
            return []
        rows: list[PgRow] = self._cursor.fetchmany(size)
        return rows

    def __iter__(self) -> Iterator[PgRow]:
        return iter(self.fetchall())


class PgConnection:
    """The part of ``sqlite3.Connection`` the layers use, over a psycopg connection."""

    dialect = POSTGRES

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> PgCursor:
        import psycopg

        cursor = psycopg.ClientCursor(self.raw, row_factory=_row_factory)
        try:
            if params:
                cursor.execute(translate(sql), list(params))
            else:
                cursor.execute(sql)
        except psycopg.Error as exc:
            raise _translate(exc) from None
        return PgCursor(cursor)

    def executemany(self, sql: str, seq: Any) -> PgCursor:
        import psycopg

        cursor = psycopg.ClientCursor(self.raw, row_factory=_row_factory)
        try:
            cursor.executemany(translate(sql), [list(p) for p in seq])
        except psycopg.Error as exc:
            raise _translate(exc) from None
        return PgCursor(cursor)


def _translate(exc: Exception) -> Exception:
    """The typed error for a refusal raised by a schema trigger; other errors pass."""
    message = str(getattr(getattr(exc, "diag", None), "message_primary", None) or exc)
    if message.startswith(_PROTECTED):
        return ProtectedMemoryError(message[len(_PROTECTED) :])
    if message.startswith(_AUDIT):
        return StorageError(message[len(_AUDIT) :])
    return exc


class PostgresDatabase(Database):
    """A PostgreSQL database reached by a libpq URL (``postgresql://user@host:port/db``)."""

    dialect = POSTGRES
    shared = True
    _conn: PgConnection

    def __init__(
        self, url: str, *, clock: Clock, migrations: Sequence[Migration] | None = None
    ) -> None:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ConfigError(
                "storage.url names PostgreSQL but psycopg is not installed: "
                "pip install 'omoide[postgres]'"
            ) from exc
        from omoide.storage.pg_schema import PG_MIGRATIONS

        self.url = url
        self._clock = clock
        self._lock = threading.RLock()
        self._depth = 0
        try:
            raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            raise StorageError(f"cannot connect to PostgreSQL at {_redact(url)}: {exc}") from exc
        _register_bool_as_int(raw)
        self._raw = raw
        self._conn = PgConnection(raw)
        self.migrate(PG_MIGRATIONS if migrations is None else migrations)

    def _describe(self) -> str:
        return f"the database at {_redact(self.url)}"

    def _begin(self, *, durable: bool) -> None:
        """BEGIN, then the write lock: serialized with every other writer of the database."""
        import psycopg

        try:
            self._raw.execute("BEGIN")
            if not durable:  # bookkeeping: committed, not waited for on disk
                self._raw.execute("SET LOCAL synchronous_commit TO OFF")
            self._raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        except psycopg.Error as exc:
            with suppress(Exception):
                self._raw.execute("ROLLBACK")
            raise StorageError(f"cannot begin a transaction: {exc}") from exc

    def _rollback(self, *, durable: bool) -> None:
        with suppress(Exception):
            self._raw.execute("ROLLBACK")

    def _commit(self, *, durable: bool) -> None:
        import psycopg

        try:
            self._raw.execute("COMMIT")
        except psycopg.Error as exc:
            raise _translate(exc) from None

    @contextmanager
    def locked(self) -> Iterator[PgConnection]:
        with self._lock:
            yield self._conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        with self._lock:
            if self._depth:
                return self._conn.execute(sql, list(params))
            with self.transaction():
                return self._conn.execute(sql, list(params))

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[PgRow]:
        with self._lock:
            return self._conn.execute(sql, list(params)).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgRow | None:
        with self._lock:
            return self._conn.execute(sql, list(params)).fetchone()

    @contextmanager
    def advisory_lock(self, key: int) -> Iterator[bool]:
        """Try a session-scoped advisory lock: yields True if this process holds it (for
        single-runner jobs across replicas), False if another holds it."""
        with self._lock:
            row = self._raw.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            got = bool(row and row[0])
        try:
            yield got
        finally:
            if got:
                with self._lock, suppress(Exception):
                    self._raw.execute("SELECT pg_advisory_unlock(%s)", (key,))

    @contextmanager
    def snapshot(self) -> Iterator[PgConnection]:
        import psycopg

        raw = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        try:
            raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            yield PgConnection(raw)
        finally:
            with suppress(Exception):
                raw.execute("ROLLBACK")
            raw.close()

    def _prepare_migrations(self) -> None:
        # Two replicas starting at once: the first creates the tables, the other waits.
        with self.transaction() as conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS migrations (rowid BIGINT GENERATED ALWAYS AS "
                "IDENTITY, name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS rebuilds (name TEXT PRIMARY KEY, "
                "requested_at DOUBLE PRECISION NOT NULL, done_at DOUBLE PRECISION)"
            )

    def size_bytes(self) -> int:
        return int(self.scalar("SELECT pg_database_size(current_database())") or 0)

    def close(self) -> None:
        with self._lock, suppress(Exception):
            self._raw.close()


def _redact(url: str) -> str:
    """``url`` without its password."""
    return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", url)


def _register_bool_as_int(raw: Any) -> None:
    """Bind Python booleans as 0/1, as SQLite stores them (the schema's flags are integers)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    class BoolAsInt(Dumper):
        format = Format.TEXT

        def dump(self, obj: Any) -> bytes:
            return b"1" if obj else b"0"

        def quote(self, obj: Any) -> bytes:
            return self.dump(obj)

    raw.adapters.register_dumper(bool, BoolAsInt)
