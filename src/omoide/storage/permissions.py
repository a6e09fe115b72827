"""Private files: a data directory is readable by its owner only.

Memories of every agent live in one directory, so nothing omoide writes may be readable by
other local users, whatever the process umask: directories are created ``0700`` and files
``0600`` (the database, its WAL and SHM files, which SQLite creates with the database's mode,
ChromaDB's files, the lock files and exports). ChromaDB creates its files itself, with the
umask, so :func:`tighten` also walks an existing data directory when a store is opened and
closed and takes group and other permissions away (directories older versions created
``0755`` are tightened the same way). Symbolic links are not followed. Windows ignores modes.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import IO

__all__ = ["DIR_MODE", "FILE_MODE", "open_private", "private_dir", "private_file", "tighten"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) if needed and make it ``0700``.

    Only the directory itself is tightened, not parents that existed before (they may be
    shared, like a home directory).
    """
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)  # mkdir's mode is filtered by the umask


def private_file(path: Path) -> None:
    """Create ``path`` empty if missing, ``0600`` from its first moment, and make it ``0600``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def open_private(path: str | Path, mode: str = "w", **kwargs: object) -> IO[str]:
    """``open(path, mode)`` for text, with the file ``0600`` from its first moment
    (``w``, ``a`` or ``a+``; an existing file loses group and other permissions)."""
    flags = {
        "w": os.O_WRONLY | os.O_TRUNC,
        "a": os.O_WRONLY | os.O_APPEND,
        "a+": os.O_RDWR | os.O_APPEND,
    }
    if mode not in flags:
        raise ValueError(f"open_private: mode {mode!r} is not supported")
    fd = os.open(path, flags[mode] | os.O_CREAT, FILE_MODE)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, FILE_MODE)
        return os.fdopen(fd, mode, **kwargs)  # type: ignore[call-overload, no-any-return]
    except BaseException:
        os.close(fd)
        raise


def tighten(directory: Path) -> None:
    """Make ``directory`` and everything under it private (dirs ``0700``, files ``0600``
    at most: permissions are only taken away, never added)."""
    _tighten_one(directory, DIR_MODE)
    for root, dirs, files in os.walk(directory, followlinks=False):
        for name in dirs:
            _tighten_one(Path(root) / name, DIR_MODE)
        for name in files:
            _tighten_one(Path(root) / name, FILE_MODE)


def _tighten_one(path: Path, cap: int) -> None:
    with contextlib.suppress(OSError):  # a file removed meanwhile, or not ours to change
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return
        current = stat.S_IMODE(info.st_mode)
        wanted = current & cap
        if stat.S_ISDIR(info.st_mode):
            wanted |= DIR_MODE  # the owner keeps using its directories
        if wanted != current:
            os.chmod(path, wanted)
