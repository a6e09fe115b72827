"""The relational database behind episodes, procedures, working sessions and the audit log.

:class:`Database` is what the layers use: transactions, reads, metadata, recorded
migrations and the data rebuilds they request. :class:`SqliteDatabase` is the embedded
default; :class:`omoide.storage.postgres.PostgresDatabase` runs the same SQL on PostgreSQL
(see :mod:`omoide.storage.dialect` for the few constructs that differ).

SQLite: one connection per database, shared by the threads of the owning process and
serialized by a re-entrant lock (SQLite serializes writers anyway; doing it here means no
caller ever sees "database is locked"). WAL journal, ``synchronous=FULL``: a write is on disk
when its transaction returns, and a crash mid-transaction rolls it back on the next open. A
recall's bookkeeping alone (``transaction(durable=False)``) commits without waiting for the
disk.

Storage owns its own bookkeeping tables only: ``meta``, ``migrations`` and ``rebuilds``
(the data rebuilds migrations request, run by the layers that own the data). Every other
table belongs to a layer, which alone runs SQL on it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from omoide.clock import Clock, to_timestamp
from omoide.core.scope import reader_predicate
from omoide.core.settings import StorageConfig
from omoide.errors import ProtectedMemoryError, StorageError
from omoide.storage.dialect import SQLITE, Dialect, dialect_of
from omoide.storage.migrations import MIGRATIONS, Migration
from omoide.storage.permissions import private_file

__all__ = ["Database", "SqliteDatabase", "insert_row", "insert_row_keeping_id", "timeline"]


class Database:
    """A connection with a lock, transactions and recorded migrations (the base of both
    engines: subclasses open the connection and implement the methods that raise here)."""

    #: The SQL constructs of this engine that the layers must ask for.
    dialect: Dialect = SQLITE
    #: Whether several processes may open this database at once (a server engine).
    shared = False
    _clock: Clock
    _lock: threading.RLock
    _depth: int
    _conn: Any

    @contextmanager
    def transaction(self, *, durable: bool = True) -> Iterator[Any]:
        """A write transaction; nested calls join the outer one, as it is durable or not.

        ``durable`` (the default): on disk when the transaction returns. ``durable=False``
        is for bookkeeping only (a recall's access counts and provenance entry), and only
        bookkeeping may run inside it: committed and seen by every reader at once,
        surviving a crash of the process, but written to disk with the next durable commit
        or checkpoint rather than waited for — a power failure may lose it, never a
        memory."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            self._begin(durable=durable)
            self._depth = 1
            try:
                yield self._conn
            except BaseException as exc:
                self._depth = 0
                self._rollback(durable=durable)
                translated = self._refusal(exc)
                if translated is not None:
                    raise translated from None
                raise
            else:
                self._depth = 0
                self._commit(durable=durable)

    def _begin(self, *, durable: bool) -> None:
        raise NotImplementedError

    def _commit(self, *, durable: bool) -> None:
        raise NotImplementedError

    def _rollback(self, *, durable: bool) -> None:
        raise NotImplementedError

    def _refusal(self, exc: BaseException) -> Exception | None:
        """The typed error for a refusal the schema raised (None: not one of ours)."""
        return None

    @contextmanager
    def locked(self) -> Iterator[Any]:
        """Exclusive use of the connection for reads that must not interleave with writes."""
        raise NotImplementedError
        yield  # pragma: no cover

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Run one statement (in its own transaction unless inside one)."""
        raise NotImplementedError

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        """Run a read and return all rows."""
        raise NotImplementedError

    def query_one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any | None:
        raise NotImplementedError

    def scalar(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        row = self.query_one(sql, params)
        return None if row is None else row[0]

    @contextmanager
    def snapshot(self) -> Iterator[Any]:
        """A separate read-only connection seeing one consistent state of every table
        (exports), closed afterwards; writers go on meanwhile."""
        raise NotImplementedError
        yield  # pragma: no cover

    def size_bytes(self) -> int:
        """Bytes the database takes."""
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _prepare_migrations(self) -> None:
        """Create the bookkeeping tables migrations need (engine-specific SQL)."""
        raise NotImplementedError

    def _describe(self) -> str:
        return "the database"

    # -- metadata -----------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        value = self.scalar("SELECT value FROM meta WHERE key = ?", (key,))
        return None if value is None else str(value)

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    # -- migrations ---------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        return [r[0] for r in self.query("SELECT name FROM migrations ORDER BY rowid")]

    def migrate(self, migrations: Sequence[Migration]) -> list[str]:
        """Apply the migrations not yet recorded, each in its own transaction, in order."""
        with self.locked():
            self._prepare_migrations()
            with self.transaction() as conn:  # one process migrates; the others wait here
                done = {r[0] for r in conn.execute("SELECT name FROM migrations").fetchall()}
            known = {m.name for m in migrations}
            unknown = done - known
            if unknown:
                raise StorageError(
                    f"{self._describe()} was written by a newer omoide (migrations "
                    f"{', '.join(sorted(unknown))}); upgrade omoide to open it"
                )
            applied = []
            for migration in migrations:
                if migration.name in done:
                    continue
                with self.transaction() as conn:
                    if conn.execute(
                        "SELECT 1 FROM migrations WHERE name = ?", (migration.name,)
                    ).fetchone():
                        continue  # another process applied it meanwhile
                    migration.apply(conn)
                    now = to_timestamp(self._clock.now())
                    conn.execute(
                        "INSERT INTO migrations(name, applied_at) VALUES (?, ?)",
                        (migration.name, now),
                    )
                    for rebuild in migration.rebuilds:
                        conn.execute(
                            "INSERT INTO rebuilds(name, requested_at) VALUES (?, ?) "
                            "ON CONFLICT(name) DO UPDATE SET "
                            "requested_at = excluded.requested_at, done_at = NULL",
                            (rebuild, now),
                        )
                applied.append(migration.name)
            return applied

    # -- data rebuilds ------------------------------------------------------------------

    def pending_rebuilds(self) -> list[str]:
        """The rebuilds migrations requested that have not run yet."""
        return [
            r[0]
            for r in self.query("SELECT name FROM rebuilds WHERE done_at IS NULL ORDER BY name")
        ]

    def run_rebuild(self, name: str, rebuild: Callable[[Any], None]) -> bool:
        """Run ``rebuild`` if a migration requested ``name`` and it has not run; True if it ran.

        The rebuild and its record share one transaction: a crash leaves it requested.
        """
        if name not in self.pending_rebuilds():  # the common case reads, without a write lock
            return False
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT 1 FROM rebuilds WHERE name = ? AND done_at IS NULL", (name,)
            ).fetchone()
            if row is None:
                return False
            rebuild(conn)
            conn.execute(
                "UPDATE rebuilds SET done_at = ? WHERE name = ?",
                (to_timestamp(self._clock.now()), name),
            )
            return True


class SqliteDatabase(Database):
    """A SQLite file (WAL) with one connection, a lock, transactions and migrations."""

    _conn: sqlite3.Connection

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock,
        migrations: Sequence[Migration] = MIGRATIONS,
        cache_mib: int = StorageConfig.cache_mib,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.RLock()
        self._depth = 0
        if str(self.path) != ":memory:":
            # 0600 before SQLite opens it: its WAL and SHM files take the database's mode.
            with suppress(OSError):
                private_file(self.path)
        try:
            self._conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=30.0
            )
            self._conn.row_factory = sqlite3.Row
            mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StorageError(f"{self.path}: could not switch to WAL journal (got {mode})")
            self._conn.execute("PRAGMA synchronous=FULL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            # DELETE triggers also fire for rows that INSERT OR REPLACE removes (never-forget).
            self._conn.execute("PRAGMA recursive_triggers=ON")
            self._conn.execute("PRAGMA busy_timeout=30000")
            # Negative: a size in KiB rather than in pages (StorageConfig.cache_mib).
            self._conn.execute(f"PRAGMA cache_size=-{int(cache_mib) * 1024}")
            integrity = self._conn.execute("PRAGMA quick_check").fetchone()[0]
            if integrity != "ok":
                raise StorageError(f"{self.path}: integrity check failed: {integrity}")
        except sqlite3.DatabaseError as exc:
            raise StorageError(f"{self.path}: cannot open database: {exc}") from exc
        self.migrate(migrations)

    # -- transactions -------------------------------------------------------------------

    def _begin(self, *, durable: bool) -> None:
        if durable:
            self._conn.execute("BEGIN IMMEDIATE")  # the write lock now: no upgrade deadlocks
            return
        # WAL: NORMAL commits without a sync, and the next FULL commit syncs what it wrote;
        # settable between transactions only, so set here and reset when this one ends.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._conn.execute("PRAGMA synchronous=FULL")
            raise

    def _commit(self, *, durable: bool) -> None:
        self._end("COMMIT", durable=durable)

    def _rollback(self, *, durable: bool) -> None:
        self._end("ROLLBACK", durable=durable)

    def _end(self, statement: str, *, durable: bool) -> None:
        """Commit or roll back, then wait for the disk again if this transaction did not."""
        try:
            self._conn.execute(statement)
        finally:
            if not durable:
                self._conn.execute("PRAGMA synchronous=FULL")

    def _refusal(self, exc: BaseException) -> Exception | None:
        return _translate(exc)

    @contextmanager
    def locked(self) -> Iterator[sqlite3.Connection]:
        """Exclusive use of the connection for reads that must not interleave with writes."""
        with self._lock:
            yield self._conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run one statement (in its own transaction unless inside one)."""
        with self._lock:
            try:
                return self._conn.execute(sql, params)
            except sqlite3.IntegrityError as exc:
                translated = _translate(exc)
                if translated is not None:
                    raise translated from None
                raise

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a read and return all rows."""
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def query_one(
        self, sql: str, params: Sequence[Any] | dict[str, Any] = ()
    ) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, params).fetchone()
            return row

    def _prepare_migrations(self) -> None:
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS migrations "
            "(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS rebuilds "
            "(name TEXT PRIMARY KEY, requested_at REAL NOT NULL, done_at REAL)"
        )

    def _describe(self) -> str:
        return str(self.path)

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        uri = self.path.resolve().as_uri() + "?mode=ro"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("BEGIN")  # one read transaction: a snapshot of every table
            yield conn
        finally:
            conn.close()

    def size_bytes(self) -> int:
        """Bytes on disk: the database and its WAL."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total

    def close(self) -> None:
        with self._lock:
            with suppress(sqlite3.Error):
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._conn.close()


def insert_row(conn: Any, table: str, row: Mapping[str, Any]) -> Any:
    """Insert one whole row (column -> value) into ``table`` (a name its owner passes)."""
    names = list(row)
    cursor = conn.execute(
        f"INSERT INTO {table}({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
        [row[n] for n in names],
    )
    if isinstance(row.get("id"), int):  # an integer key given: keep the generator past it
        dialect_of(conn).keep_sequence(conn, table, "id")
    return cursor


def insert_row_keeping_id(conn: Any, table: str, row: Mapping[str, Any]) -> None:
    """Insert with the row's ``id`` when it is free, else with a new one (imports)."""
    conn.execute("SAVEPOINT keep_id")
    try:
        insert_row(conn, table, row)
    except dialect_of(conn).integrity_errors():
        conn.execute("ROLLBACK TO keep_id")
        insert_row(conn, table, {k: v for k, v in row.items() if k != "id"})
    conn.execute("RELEASE keep_id")


_PROTECTED = "omoide-protected: "
_AUDIT = "omoide-audit: "


def _translate(exc: BaseException) -> Exception | None:
    """The typed error for a refusal raised by a schema trigger (None: not one of ours)."""
    if isinstance(exc, sqlite3.IntegrityError):
        message = str(exc)
        if message.startswith(_PROTECTED):
            return ProtectedMemoryError(message[len(_PROTECTED) :])
        if message.startswith(_AUDIT):
            return StorageError(message[len(_AUDIT) :])
    return None


def timeline(
    db: Database, table: str, column: str, reader: str | None, teams: Iterable[str], since: float
) -> tuple[int, list[float]]:
    """For the rows of ``table`` that ``reader`` may read: how many have ``column`` (a
    timestamp) before ``since``, and the timestamps of the others (for growth charts; the
    owning layer passes its own table)."""
    pred, params = reader_predicate(reader, teams)
    sql = f"SELECT COUNT(*) FROM {table} WHERE {column} < ? AND {pred}"
    before = db.scalar(sql, [since, *params])
    sql = f"SELECT {column} FROM {table} WHERE {column} >= ? AND {pred}"
    return int(before or 0), [float(r[0]) for r in db.query(sql, [since, *params])]
