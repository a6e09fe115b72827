"""What an index run reports: skipped files, progress events, the final report, and a
terminal progress bar that follows the events."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from omoide.clock import Clock, SystemClock

__all__ = ["IndexProgress", "IndexReport", "ProgressBar", "ProgressCallback", "SkippedFile"]


@dataclass(frozen=True)
class SkippedFile:
    """A file the run did not index, and why (``reason`` is one of a few short codes)."""

    path: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class IndexProgress:
    """Where a run is: ``phase`` ``scan`` (reading and hashing) or ``index`` (embedding)."""

    phase: str
    done: int
    total: int
    path: str


@dataclass(frozen=True)
class IndexReport:
    """What an index run did: files by outcome, documents and chunks written, time taken."""

    collection: str
    source: str
    root: str
    #: True when git listed the files.
    git: bool
    commit: str | None
    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    skipped: tuple[SkippedFile, ...]
    #: Documents (sections) written, and removed, by this run.
    documents: int
    documents_removed: int
    #: Chunks (vectors) written by this run.
    chunks: int
    seconds: float
    #: True when nothing was written (``dry_run=True``): the figures are what would happen.
    dry_run: bool = False

    @property
    def files_skipped(self) -> int:
        return len(self.skipped)

    def skipped_by_reason(self) -> dict[str, int]:
        """How many files were skipped for each reason."""
        return dict(Counter(s.reason for s in self.skipped))

    def summary(self) -> str:
        """One line for people: what happened and how fast."""
        verb = "would index" if self.dry_run else "indexed"
        reasons = ", ".join(f"{n} {r}" for r, n in sorted(self.skipped_by_reason().items()))
        skipped = f"{self.files_skipped} skipped" + (f" ({reasons})" if reasons else "")
        return (
            f"{self.source} → {self.collection}: {verb} {self.files_indexed} of "
            f"{self.files_seen} files ({self.files_unchanged} unchanged, {self.files_removed} "
            f"removed, {skipped}); {self.documents} documents, {self.chunks} chunks written, "
            f"{self.documents_removed} removed in {self.seconds:.1f} s"
        )


ProgressCallback = Callable[[IndexProgress], None]


class ProgressBar:
    """A progress bar for index runs on a terminal (stderr by default); pass as ``progress``.

    On a terminal it redraws one line at most ten times a second; on anything else it writes
    one line as each phase completes.
    """

    def __init__(
        self, stream: TextIO | None = None, *, width: int = 28, clock: Clock | None = None
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._width = width
        self._clock = clock or SystemClock()
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._last = -1.0

    def __call__(self, event: IndexProgress) -> None:
        finished = event.done >= event.total
        if not self._tty:
            if finished:
                self._stream.write(f"{event.phase}: {event.done}/{event.total} files\n")
                self._stream.flush()
            return
        now = self._clock.monotonic()
        if not finished and now - self._last < 0.1:
            return
        self._last = now
        filled = int(self._width * event.done / event.total) if event.total else self._width
        bar = "#" * filled + "-" * (self._width - filled)
        name = event.path if len(event.path) <= 40 else "…" + event.path[-39:]
        self._stream.write(f"\r{event.phase:<5} [{bar}] {event.done}/{event.total} {name:<40}")
        if finished:
            self._stream.write("\n")
        self._stream.flush()
