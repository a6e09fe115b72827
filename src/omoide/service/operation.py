"""What an entry of the operation table (:mod:`omoide.service.table`) is made of.

An :class:`Operation` names a method of :class:`~omoide.service.protocol.Operations` and gives
its one-line summary, help for its arguments and how the CLI takes them (:class:`Arg`), its
REST routes (:class:`Route`), its MCP tool (:class:`Tool`) and its CLI command. The
arguments' names, types and defaults are read from the protocol
(:meth:`Operation.arguments`), so they are written only there.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omoide.errors import NotFoundError
from omoide.service.protocol import Operations

__all__ = ["HIDDEN", "REQUIRED", "Arg", "Argument", "Operation", "Route", "Tool", "a", "r"]

#: The default of an argument that has none (it must be given).
REQUIRED: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Arg:
    """Help for one argument, and how the CLI takes it.

    ``flags`` None: not on the CLI; empty: positional; else options such as ``("--by",)``.
    ``dest`` names the CLI value when the argument's own name is taken by a common option.
    ``negate``: a flag that sets a bool argument to False (``--failed`` for ``success``).
    ``minimum`` 1: the CLI refuses numbers below one. ``wire``: the argument's name in a REST
    request when it differs (``id`` for ``item_id``).
    """

    help: str = ""
    flags: tuple[str, ...] | None = ()
    metavar: str | None = None
    dest: str | None = None
    choices: tuple[str, ...] | None = None
    minimum: int | None = None
    negate: bool = False
    cli_default: Any = REQUIRED
    wire: str | None = None


def a(help: str = "", *flags: str, **options: Any) -> Arg:
    return Arg(help, flags, **options)


#: An argument the CLI does not take (the operation's default applies).
HIDDEN = Arg(flags=None)


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # the full path, e.g. /v1/episodes/{episode_id}


@dataclass(frozen=True)
class Tool:
    name: str
    description: str


@dataclass(frozen=True)
class Argument:
    """One argument of an operation as a front end sees it: from the protocol (name, type,
    default) and the table (help, CLI). ``via`` names the parameter a field belongs to when
    the operation takes a query object (``audit(query)``)."""

    name: str
    type: Any
    default: Any
    arg: Arg
    via: str | None = None
    via_type: Any = None

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Operation:
    name: str
    summary: str
    args: Mapping[str, Arg] = field(default_factory=dict)
    rest: tuple[Route, ...] = ()
    mcp: Tool | None = None
    cli: str | None = None
    #: Only reads though its route is a POST (a search with a body); GET routes only read.
    reads: bool = False

    @property
    def read_only(self) -> bool:
        """Whether the operation only reads (the CLI then needs an existing data directory)."""
        return self.reads or (bool(self.rest) and self.rest[0].method == "GET")

    def arguments(self) -> list[Argument]:
        """The arguments in the protocol's order; a dataclass parameter stands for its fields."""
        method = getattr(Operations, self.name)
        hints = typing.get_type_hints(method)
        out: list[Argument] = []
        for param in list(inspect.signature(method).parameters.values())[1:]:
            kind = _dataclass_of(hints[param.name])
            if kind is None:
                out.append(self._argument(param.name, hints[param.name], param.default))
                continue
            fields = typing.get_type_hints(kind)
            for f in dataclasses.fields(kind):
                out.append(self._argument(f.name, fields[f.name], f.default, param.name, kind))
        return out

    def _argument(
        self, name: str, kind: Any, default: Any, via: str | None = None, via_type: Any = None
    ) -> Argument:
        if default is dataclasses.MISSING:
            default = REQUIRED
        return Argument(name, kind, default, self.args.get(name, HIDDEN), via, via_type)

    def route(self, method: str | None = None) -> Route:
        """The REST route of this operation (of ``method`` when it has several)."""
        for r in self.rest:
            if method is None or r.method == method:
                return r
        raise NotFoundError("REST route", f"{method or ''} {self.name}".strip())


def _dataclass_of(kind: Any) -> type | None:
    for option in typing.get_args(kind) or (kind,):
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option
    return None


def r(method: str, path: str) -> tuple[Route, ...]:
    return (Route(method, "/v1" + path),)
