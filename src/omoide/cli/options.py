"""The global options of ``omoide`` and how it reports an error.

The options (where the memory is, who acts, how to print) are defined here once; each
command takes those that mean something to it (:attr:`omoide.cli.spec.Command.options`).
An error goes to stderr as one line, or with ``--json`` as the REST API's error body.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from omoide.cli.console import Output
from omoide.cli.spec import ALL_OPTIONS

__all__ = ["common_options", "fail"]


def common_options(names: Sequence[str] = ALL_OPTIONS) -> argparse.ArgumentParser:
    """The global options ``names``, each defined here once."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("where the memory is, and who acts")
    defined = {
        "path": (("--path",), "data directory (default: $OMOIDE_HOME, else ./omoide-data)"),
        "url": (
            ("--url",),
            "a running `omoide serve`, e.g. http://127.0.0.1:8765 (default: $OMOIDE_URL)",
        ),
        "key": (("--key",), "API key for --url (default: $OMOIDE_API_KEY)"),
        "agent": (
            ("--agent",),
            "without --url: act, and read, as this agent (default: $OMOIDE_AGENT; none: "
            "the operator, who reads everything)",
        ),
    }
    for name in names:
        if name in defined:
            flags, help = defined[name]
            group.add_argument(*flags, default=argparse.SUPPRESS, help=help)
    if "json" in names:
        common.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="machine-readable output (errors too, on stderr)",
        )
    if "verbose" in names:
        common.add_argument(
            "-v",
            "--verbose",
            action="store_true",
            default=argparse.SUPPRESS,
            help="whole records instead of one line",
        )
    return common


def fail(out: Output, exc: Exception, hint: str | None = None) -> int:
    """Report an error on stderr (JSON with ``--json``: ``{"error", "detail", "field"}``, the
    REST API's shape) and give the exit code 1."""
    if out.json_mode:
        body = {
            "error": type(exc).__name__,
            "detail": str(exc),
            "field": getattr(exc, "field", None),
            "hint": hint,
        }
        print(json.dumps(body, ensure_ascii=False), file=sys.stderr)
        return 1
    print(f"omoide: error: {exc}", file=sys.stderr)
    if hint:
        print(f"omoide: hint: {hint}", file=sys.stderr)
    return 1
