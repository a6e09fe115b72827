"""Terminal output of the CLI: JSON, tables, key/value blocks and progress bars.

Tables are measured in display cells, so Japanese (two cells a character) lines up. With the
``cli`` extra installed (``rich``) and a terminal on the other end, tables and progress bars
are drawn by rich; otherwise plain text is written, which is also what pipes and tests see.
Progress always goes to stderr, so ``--json`` output on stdout stays machine-readable.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["Output", "ProgressReporter", "display_width", "shorten"]


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: wide and full-width characters count two."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def shorten(text: str, cells: int) -> str:
    """``text`` on one line, cut to ``cells`` display cells with an ellipsis: at the last
    word boundary when there is one in the second half (text without spaces, such as
    Japanese, is cut where it reaches the width)."""
    flat = " ".join(str(text).split())
    if display_width(flat) <= cells:
        return flat
    out, used = [], 0
    for ch in flat:
        w = display_width(ch)
        if used + w > cells - 1:
            break
        out.append(ch)
        used += w
    kept = "".join(out)
    if flat[len(kept)] != " ":
        space = kept.rfind(" ")
        if space >= len(kept) // 2:
            kept = kept[:space]
    return kept.rstrip(" ,;:.") + "…"


def _pad(text: str, cells: int, right: bool = False) -> str:
    gap = " " * max(0, cells - display_width(text))
    return gap + text if right else text + gap


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, Mapping):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _rich_console(stream: IO[str]) -> Any | None:
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(file=stream, soft_wrap=False)


class Output:
    """Where a command's result goes: JSON (``--json``) or readable text."""

    def __init__(
        self, *, json_mode: bool = False, stream: IO[str] | None = None, verbose: bool = False
    ) -> None:
        self.json_mode = json_mode
        #: Whole records rather than the one line a write answers with (``-v``).
        self.verbose = verbose
        self.stream = stream or sys.stdout

    def json(self, data: Any) -> None:
        self.stream.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")

    def line(self, text: str = "") -> None:
        self.stream.write(text + "\n")

    def table(
        self,
        rows: Sequence[Mapping[str, Any]],
        columns: Sequence[tuple[str, str]],
        *,
        title: str | None = None,
        widths: Mapping[str, int] | None = None,
        numeric: Sequence[str] = (),
    ) -> None:
        """Rows as a table: ``columns`` are (key, heading); ``widths`` caps some columns."""
        widths = widths or {}
        cells = [
            [shorten(_cell(row.get(key)), widths.get(key, 10_000)) for key, _ in columns]
            for row in rows
        ]
        console = _rich_console(self.stream)
        if console is not None:
            from rich.table import Table

            table = Table(title=title, title_justify="left")
            for key, heading in columns:
                # Capped columns (long text) wrap; ids, names and figures stay whole.
                table.add_column(
                    heading,
                    justify="right" if key in numeric else "left",
                    no_wrap=key not in widths,
                )
            for r in cells:
                table.add_row(*r)
            console.print(table)
            return
        if title:
            self.line(title)
        if not rows:
            self.line("  (none)")
            return
        sizes = [
            max(display_width(heading), *(display_width(r[i]) for r in cells))
            for i, (_, heading) in enumerate(columns)
        ]
        self.line("  ".join(_pad(h, sizes[i]) for i, (_, h) in enumerate(columns)).rstrip())
        self.line("  ".join("-" * n for n in sizes))
        for r in cells:
            self.line(
                "  ".join(
                    _pad(v, sizes[i], columns[i][0] in numeric) for i, v in enumerate(r)
                ).rstrip()
            )

    def fields(self, data: Mapping[str, Any], keys: Sequence[str] | None = None) -> None:
        """A record as ``key: value`` lines (multi-line values indented)."""
        keys = list(keys or data.keys())
        size = max((display_width(k) for k in keys), default=0)
        for key in keys:
            text = _cell(data.get(key))
            first, *rest = text.splitlines() or [""]
            self.line(f"{_pad(key, size)}  {first}")
            for more in rest:
                self.line(f"{' ' * size}  {more}")


class ProgressReporter:
    """A progress callback (``phase, done, total``) drawing bars on stderr.

    rich draws the bars when it is installed and stderr is a terminal; otherwise one line is
    written per phase every tenth of the way, so logs show that work advances.
    """

    def __init__(self, stream: IO[str] | None = None, *, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self._rich: Any = None
        self._tasks: dict[str, Any] = {}
        self._last: dict[str, int] = {}
        if enabled and _rich_console(self.stream) is not None:
            from rich.progress import Progress

            self._rich = Progress(console=_rich_console(self.stream), transient=False)
            self._rich.start()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._rich is not None:
            task = self._tasks.get(phase)
            if task is None:
                task = self._tasks[phase] = self._rich.add_task(phase, total=total or None)
            self._rich.update(task, completed=done, total=total or None)
            return
        step = 0 if total <= 0 else min(10, done * 10 // total)
        if phase in self._last and step <= self._last[phase]:
            return
        self._last[phase] = step
        percent = 100 if total <= 0 else done * 100 // total
        self.stream.write(f"{phase}: {done:,}/{total:,} ({percent}%)\n")
        self.stream.flush()

    def close(self) -> None:
        if self._rich is not None:
            self._rich.stop()
            self._rich = None

    def __enter__(self) -> ProgressReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
