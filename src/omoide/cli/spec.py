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
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from omoide.cli.console import Output
from omoide.errors import NotFoundError, ValidationError
from omoide.service.operation import REQUIRED, Argument
from omoide.service.protocol import Operations
from omoide.service.table import operation

__all__ = [
    "ALL_OPTIONS",
    "Arg",
    "Command",
    "arg",
    "env",
    "existing_store",
    "json_arg",
    "meta",
    "open_operations",
    "operation_command",
    "positive",
]

#: The operations a command runs on (in-process or through a server).
Ops = Operations


@dataclass(frozen=True)
class Arg:
    flags: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def arg(*flags: str, **options: Any) -> Arg:
    return Arg(flags, options)


#: The global options (where the memory is, who acts, how to print), defined once in
#: :func:`omoide.cli.commands.build_parser`; a command takes those that mean something to it.
ALL_OPTIONS = ("path", "url", "key", "agent", "json", "verbose")


@dataclass(frozen=True)
class Command:
    """One CLI command: ``name`` may be ``"group sub"``; ``run(ops, args)`` returns a result
    that ``show(out, result)`` prints (``--json`` prints it as JSON); ``raw`` commands get
    ``(args, out)`` and return an exit code instead. ``options`` are the global options it
    takes; ``reads``: it only reads, so it needs an existing data directory."""

    name: str
    help: str
    args: tuple[Arg, ...] = ()
    run: Callable[[Ops, argparse.Namespace], Any] | None = None
    show: Callable[[Output, Any], None] | None = None
    raw: Callable[[argparse.Namespace, Output], int] | None = None
    options: tuple[str, ...] = ALL_OPTIONS
    reads: bool = False


# -- data sources ------------------------------------------------------------------------


def env(args: argparse.Namespace, name: str, variable: str) -> Any:
    """The option ``name`` if given, else the environment variable ``variable``."""
    value = getattr(args, name, None)
    return value if value is not None else os.environ.get(variable) or None


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

    path = existing_store(args)
    with Memory(path) as mem:
        yield LocalOperations(mem, Caller.operator(mem, agent))


def existing_store(args: argparse.Namespace) -> Any:
    """The data directory of this invocation; one that does not exist yet is an error for a
    command that only reads (a mistyped ``--path`` must not create an empty store)."""
    from omoide.memory import resolve_path

    path = resolve_path(env(args, "path", "OMOIDE_HOME"))
    spec = getattr(args, "command_spec", None)
    if getattr(spec, "reads", False) and not (path / "omoide.db").exists():
        missing = NotFoundError("data directory", str(path))
        missing.args = (f"no data directory at {path} (create one: omoide init --path {path})",)
        raise missing
    return path


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


# -- commands of the operation table ---------------------------------------------------------


def operation_command(
    name: str,
    show: Callable[[Output, Any], None] | None = None,
    *,
    run: Callable[[Ops, argparse.Namespace], Any] | None = None,
    extra: tuple[Arg, ...] = (),
    raw: Callable[[argparse.Namespace, Output], int] | None = None,
) -> Command:
    """The command of the operation ``name``: its name, help and arguments from the table
    (:mod:`omoide.service.table`), run as a call of the operation with them unless ``run``
    or ``raw`` (for commands that read files or stream) does it otherwise."""
    op = operation(name)
    if op.cli is None:
        raise ValidationError("name", f"the operation {name!r} has no command")
    given = [x for x in op.arguments() if x.arg.flags is not None]
    args = (*(_cli_arg(x) for x in given), *extra)
    if raw is not None:
        return Command(op.cli, op.summary, args, raw=raw, reads=op.read_only)
    run = run or _call(name, given)
    return Command(op.cli, op.summary, args, run=run, show=show, reads=op.read_only)


def _call(name: str, given: list[Argument]) -> Callable[[Ops, argparse.Namespace], Any]:
    def run(ops: Ops, args: argparse.Namespace) -> Any:
        values: dict[str, Any] = {}
        grouped: dict[str, tuple[Any, dict[str, Any]]] = {}
        for x in given:
            value = getattr(args, x.arg.dest or x.name)
            if _kind(x.type) is Mapping:
                value = json_arg((x.arg.flags or (x.name,))[-1], value)
            if x.via is None:
                values[x.name] = value
            else:
                grouped.setdefault(x.via, (x.via_type, {}))[1][x.name] = value
        for via, (kind, fields) in grouped.items():
            values[via] = kind(**fields)
        return getattr(ops, name)(**values)

    return run


def _kind(annotation: Any) -> Any:
    """What the CLI reads an argument as: str, int, float, bool, list (repeated) or Mapping
    (JSON text), from its type (None left out; a union with str is a str)."""
    options = [t for t in typing.get_args(annotation) or (annotation,) if t is not type(None)]
    if typing.get_origin(annotation) not in (typing.Union, types.UnionType):
        options = [annotation]
    if str in options or not options:
        return str
    first = options[0]
    origin = typing.get_origin(first) or first
    if isinstance(origin, type) and issubclass(origin, Mapping):
        return Mapping
    if origin in (list, tuple, Sequence, Iterable):
        return list
    return first


def _cli_arg(x: Argument) -> Arg:
    spec, kind = x.arg, _kind(x.type)
    options: dict[str, Any] = {"help": spec.help} if spec.help else {}
    if spec.choices:
        options["choices"] = list(spec.choices)
    if spec.metavar:
        options["metavar"] = spec.metavar
    default = x.default if spec.cli_default is REQUIRED else spec.cli_default
    if kind is bool:
        options["action"] = "store_false" if spec.negate else "store_true"
    elif kind is list:
        options["action"] = "append"
    elif kind in (int, float):
        options["type"] = positive if kind is int and spec.minimum == 1 else kind
    if not spec.flags:
        if kind is list:
            options.pop("action")
            options["nargs"] = "*"
        elif default is not REQUIRED:
            options.update(nargs="?", default=default)
        return Arg((spec.dest or x.name,), options)
    options["dest"] = spec.dest or x.name
    if kind is not bool:
        options.update({"required": True} if default is REQUIRED else {"default": default})
    return Arg(spec.flags, options)
