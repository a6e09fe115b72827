"""What a command of ``omoide`` is, and where its operations come from.

A :class:`Command` is declared once, in :data:`omoide.cli.commands.COMMANDS` or
:data:`omoide.cli.pipeline_commands.PIPELINE_COMMANDS`; both build on this module, which
imports neither. :func:`open_operations` gives a command the operations of the invocation:
on a server (``--url``) or on a data directory this process opens.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from omoide.cli.console import Output
from omoide.errors import ValidationError
from omoide.service.protocol import Operations

__all__ = ["Arg", "Command", "arg", "env", "json_arg", "meta", "open_operations", "positive"]

#: The operations a command runs on (in-process or through a server).
Ops = Operations


@dataclass(frozen=True)
class Arg:
    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


@dataclass(frozen=True)
class Command:
    """One CLI command: ``name`` may be ``"group sub"``; ``run(ops, args)`` returns a result
    that ``show(out, result)`` prints (``--json`` prints it as JSON); ``raw`` commands get
    ``(args, out)`` and return an exit code instead."""

    name: str
    help: str
    args: tuple[Arg, ...] = ()
    run: Callable[[Ops, argparse.Namespace], Any] | None = None
    show: Callable[[Output, Any], None] | None = None
    raw: Callable[[argparse.Namespace, Output], int] | None = None
    common: bool = True


# -- data sources ------------------------------------------------------------------------


def env(args: argparse.Namespace, name: str, env: str) -> Any:
    value = getattr(args, name, None)
    return value if value is not None else os.environ.get(env) or None


@contextmanager
def open_operations(args: argparse.Namespace) -> Iterator[Ops]:
    """The operations of this invocation: on a server (``--url``) or a local directory."""
    url, key, agent = env(args, "url", "OMOIDE_URL"), env(args, "key", "OMOIDE_API_KEY"), None
    agent = env(args, "agent", "OMOIDE_AGENT")
    if url:
        from omoide.service.remote import RemoteOperations

        if getattr(args, "agent", None):
            raise ValidationError("--agent", "with --url the API key decides the agent")
        yield RemoteOperations(url, key)
        return
    from omoide.memory import Memory
    from omoide.service.local import Caller, LocalOperations

    with Memory(env(args, "path", "OMOIDE_HOME")) as mem:
        yield LocalOperations(mem, Caller.operator(mem, agent))


def json_arg(name: str, text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValidationError(name, f"not valid JSON: {exc}") from None


def meta(pairs: Sequence[str] | None) -> dict[str, Any] | None:
    if not pairs:
        return None
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValidationError("--meta", f"expected KEY=VALUE, got {pair!r}")
        lowered = value.lower()
        out[key] = (
            lowered == "true"
            if lowered in ("true", "false")
            else int(value)
            if value.lstrip("-").isdigit()
            else value
        )
    return out


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be >= 1")
    return value
