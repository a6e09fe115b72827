"""One owner per data directory.

ChromaDB's persistent client is not safe for several writer processes, and SQLite WAL needs
one process to serialize writes sensibly, so a data directory is owned by one
:class:`~omoide.memory.Memory` at a time. The lock is an advisory ``flock`` on
``<dir>/omoide.lock``: the kernel releases it when the owner dies, so a crash never leaves a
stale lock behind. A second owner (another process, or another Memory in this one) gets
:class:`~omoide.errors.StoreLockedError` at once, or after waiting ``timeout`` seconds.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import IO

from omoide.clock import Clock, SystemClock
from omoide.errors import StoreLockedError
from omoide.storage.permissions import open_private

if sys.platform != "win32":
    import fcntl

    def _try_lock(fh: IO[str]) -> bool:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fh: IO[str]) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

else:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fh: IO[str]) -> bool:
        try:
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def _unlock(fh: IO[str]) -> None:
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)


__all__ = ["DirectoryLock"]

LOCK_NAME = "omoide.lock"


class DirectoryLock:
    """An exclusive, crash-safe lock on a directory."""

    def __init__(self, directory: str | Path, *, name: str = LOCK_NAME) -> None:
        self.path = Path(directory) / name
        self._fh: IO[str] | None = None

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(
        self, timeout: float = 0.0, *, clock: Clock | None = None, poll: float = 0.05
    ) -> None:
        """Take the lock, waiting up to ``timeout`` seconds; raise StoreLockedError if taken."""
        if self._fh is not None:
            return
        clock = clock or SystemClock()
        fh = open_private(self.path, "a+", encoding="utf-8")  # held until release()
        deadline = clock.monotonic() + max(0.0, timeout)
        while not _try_lock(fh):
            if clock.monotonic() >= deadline:
                owner = self._owner(fh)
                fh.close()
                raise StoreLockedError(
                    f"data directory {self.path.parent} is in use by {owner}; one process owns "
                    "a directory (ChromaDB's persistent client is not safe for several writers): "
                    "share it through `omoide serve`, or pass lock_timeout to wait"
                )
            clock.sleep(poll)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        """Give the lock back (idempotent)."""
        fh, self._fh = self._fh, None
        if fh is None:
            return
        with contextlib.suppress(OSError):
            fh.seek(0)
            fh.truncate()
            fh.flush()
            _unlock(fh)
        fh.close()

    @staticmethod
    def _owner(fh: IO[str]) -> str:
        try:
            fh.seek(0)
            pid = fh.read().strip()
        except OSError:
            pid = ""
        return f"process {pid}" if pid else "another owner"
