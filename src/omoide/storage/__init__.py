"""Storage primitives: the SQLite database, its migrations, and the directory lock."""

from omoide.storage.database import Database
from omoide.storage.lock import DirectoryLock
from omoide.storage.migrations import MIGRATIONS, Migration

__all__ = ["MIGRATIONS", "Database", "DirectoryLock", "Migration"]
