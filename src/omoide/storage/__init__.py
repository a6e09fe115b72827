"""Storage primitives: the databases (SQLite embedded, PostgreSQL shared), their
migrations and dialects, and the directory lock."""

from omoide.storage.database import Database, SqliteDatabase
from omoide.storage.lock import DirectoryLock
from omoide.storage.migrations import MIGRATIONS, Migration

__all__ = ["MIGRATIONS", "Database", "DirectoryLock", "Migration", "SqliteDatabase"]
