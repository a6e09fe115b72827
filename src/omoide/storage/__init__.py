"""Storage primitives: the SQLite database, its migrations, and the directory lock."""

from .database import Database
from .lock import DirectoryLock
from .migrations import MIGRATIONS, Migration

__all__ = ["MIGRATIONS", "Database", "DirectoryLock", "Migration"]
