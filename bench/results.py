"""Shared helpers for benchmarks: percentiles, Markdown tables, and bench/RESULTS.md sections.

Each benchmark owns one section of RESULTS.md, between ``<!-- name:start -->`` and
``<!-- name:end -->`` markers, and rewrites only that section, so benchmarks can be rerun
independently.
"""

from __future__ import annotations

import argparse
import dataclasses
import platform
import re
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from omoide.core.config import RouterConfig

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


def publish(name: str, body: str, *, write: bool) -> None:
    """Print a benchmark's ``body`` and, when ``write``, make it section ``name`` of
    bench/RESULTS.md (the ``--no-write`` switch of every benchmark)."""
    print(body)
    if write:
        write_section(name, body)


def terminate(process: subprocess.Popen[Any], timeout: float = 60) -> None:
    """Stop a process a benchmark started: SIGTERM, then SIGKILL if it has not exited in
    ``timeout`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


def add_setting_option(parser: argparse.ArgumentParser) -> None:
    """``--setting NAME=VALUE`` (repeatable): score a router setting changed beside the
    defaults, over the same store in the same run."""
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also score Memory.recall with this router setting changed (repeatable: one "
        "variant each; a tuple as comma-separated values), e.g. --setting "
        "restated_similarity=0.7 or --setting context_key_weights=1,0.25,0.1",
    )


def setting_variants(
    parser: argparse.ArgumentParser, settings: Sequence[str]
) -> dict[str, RouterConfig]:
    """The router configurations ``--setting`` names, each the defaults with one change."""
    default = RouterConfig()
    variants = {}
    for setting in settings:
        name, _, value = setting.partition("=")
        if not hasattr(default, name) or not value:
            parser.error(f"--setting {setting!r}: expected a router setting NAME=VALUE")
        current = getattr(default, name)
        try:
            parsed = (
                tuple(type(current[0])(v) for v in value.split(","))
                if isinstance(current, tuple)
                else type(current)(value)
            )
        except (TypeError, ValueError, IndexError):
            parser.error(f"--setting {setting!r}: {value!r} is not a value of {name}")
        # A tuple of numbers (column weights) has a fixed length; a tuple of cues does not.
        fixed = isinstance(current, tuple) and not isinstance(current[0], str)
        if fixed and len(parsed) != len(current):
            parser.error(f"--setting {setting!r}: {name} takes {len(current)} values")
        variants[f"variant: {name} = {value}"] = dataclasses.replace(default, **{name: parsed})
    return variants
