"""Which database a data directory uses, and the lock its single-runner jobs take.

The embedded default is ``omoide.db`` (SQLite) in the data directory, owned by one process.
``storage.url`` (or ``$OMOIDE_DATABASE_URL``) names a PostgreSQL database that any number of
processes share; they must then share their vectors as well (a Chroma server, episode vectors
included), and jobs that must run once (maintenance) take an advisory lock in the database
instead of a lock file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from omoide.clock import Clock
from omoide.core.config import Config
from omoide.errors import ConfigError, StoreLockedError
from omoide.storage.database import Database, SqliteDatabase
from omoide.storage.lock import DirectoryLock
from omoide.storage.postgres import PostgresDatabase, is_postgres_url

__all__ = [
    "DATABASE_URL_ENV",
    "MAINTENANCE_LOCK_KEY",
    "SingleRunner",
    "check_identity",
    "maintenance_lock",
    "open_database",
]

#: The environment variable naming a PostgreSQL database (as ``storage.url`` does).
DATABASE_URL_ENV = "OMOIDE_DATABASE_URL"
#: The advisory lock replicas over one PostgreSQL database take to run maintenance.
MAINTENANCE_LOCK_KEY = 0x6F6D6F6964650002


def open_database(path: Path, url: str | None, config: Config, clock: Clock) -> Database:
    """SQLite at ``path``, or the PostgreSQL database ``url`` names (a shared database needs
    shared vectors too: refused with a ConfigError naming the setting otherwise)."""
    if url is None:
        return SqliteDatabase(path, clock=clock, cache_mib=config.storage.cache_mib)
    if not is_postgres_url(url):
        raise ConfigError(f"{DATABASE_URL_ENV}: expected postgresql://..., got another URL")
    if not config.semantic.chroma_url:
        raise ConfigError(
            "storage.url is PostgreSQL, shared by several processes: set "
            "semantic.chroma_url to a Chroma server as well"
        )
    if config.episodic.vector_store != "chroma":
        raise ConfigError(
            'storage.url is PostgreSQL: set episodic.vector_store = "chroma" so every '
            "process reads the same episode vectors"
        )
    return PostgresDatabase(url, clock=clock)


@contextmanager
def maintenance_lock(db: Database, directory: Path, name: str, clock: Clock) -> Iterator[None]:
    """Held while maintenance runs: a lock file in the data directory, or on a shared
    database an advisory lock in it, so one replica of many runs the job. Taken by another:
    StoreLockedError at once."""
    if isinstance(db, PostgresDatabase):
        with db.advisory_lock(MAINTENANCE_LOCK_KEY) as held:
            if not held:
                raise StoreLockedError("maintenance is already running in another replica")
            yield
        return
    lock = DirectoryLock(directory, name=name)
    try:
        lock.acquire(0.0, clock=clock)
    except StoreLockedError:
        raise StoreLockedError(
            f"maintenance of {directory} is already running in another thread or process"
        ) from None
    try:
        yield
    finally:
        lock.release()


class SingleRunner:
    """The lock of the jobs that must not run twice at once on one store, whichever thread,
    process or replica starts them: maintenance and its parts (distillation, forgetting,
    collection policies), and the recovery of an interrupted distillation. Re-entrant in the
    thread that holds it, so :meth:`Memory.maintain` runs :meth:`Memory.distill` inside it."""

    def __init__(self, db: Database, directory: Path, name: str, clock: Clock) -> None:
        self._db, self._directory, self._name, self._clock = db, directory, name, clock
        self._local = threading.local()

    @property
    def held_here(self) -> bool:
        """Whether this thread holds the lock."""
        return bool(getattr(self._local, "depth", 0))

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock while the block runs; held elsewhere: StoreLockedError at once."""
        if self.held_here:
            self._local.depth += 1
            try:
                yield
            finally:
                self._local.depth -= 1
            return
        with maintenance_lock(self._db, self._directory, self._name, self._clock):
            self._local.depth = 1
            try:
                yield
            finally:
                self._local.depth = 0

    @contextmanager
    def attempt(self) -> Iterator[bool]:
        """Hold the lock if it is free (yields True), else run the block without it (False)."""
        with ExitStack() as stack:
            try:
                stack.enter_context(self.held())
            except StoreLockedError:
                got = False
            else:
                got = True
            yield got


def check_identity(db: Database, key: str, identity: str) -> str:
    """Record ``identity`` under ``key`` unless one is recorded; return the recorded one. The
    first of several processes opening a new store at once wins, in one transaction, so none
    records its own beside another's (the caller refuses a mismatch)."""
    with db.transaction():
        stored = db.get_meta(key)
        if stored is None:
            db.set_meta(key, identity)
            return identity
        return stored
