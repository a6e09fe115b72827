"""The ``omoide`` command line: a thin shell over the library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import OmoideError

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    run_demo(args.path)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="omoide", description="Long-term memory for AI agents (思い出)."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="play a scripted tour of the four layers",
        description="Three agents over four simulated weeks, in Japanese and English.",
    )
    demo.add_argument(
        "--path",
        help="keep the demo's data in this directory "
        "(default: a temporary directory, removed afterwards)",
    )
    demo.set_defaults(run=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``omoide`` command."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8")
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except OmoideError as exc:
        print(f"omoide: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
