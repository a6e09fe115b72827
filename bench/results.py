"""Shared helpers for benchmarks: percentiles, Markdown tables, and bench/RESULTS.md sections.

Each benchmark owns one section of RESULTS.md, between ``<!-- name:start -->`` and
``<!-- name:end -->`` markers, and rewrites only that section, so benchmarks can be rerun
independently.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "Figures written by the scripts in `bench/`; rerun one to refresh its section.\n"
)


def percentiles(samples_ms: Sequence[float]) -> tuple[float, float]:
    """p50 and p95 of a list of milliseconds."""
    array = np.asarray(samples_ms, dtype=float)
    return float(np.percentile(array, 50)), float(np.percentile(array, 95))


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def machine() -> str:
    """One line describing where the figures were taken."""
    import os

    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    )


def write_section(name: str, body: str) -> Path:
    """Replace (or append) the section ``name`` of bench/RESULTS.md with ``body``."""
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.S)
    text = (
        pattern.sub(lambda _: block, text)
        if pattern.search(text)
        else (text.rstrip() + "\n\n" + block + "\n")
    )
    RESULTS.write_text(text, encoding="utf-8")
    return RESULTS
