"""What an entry of the operation table (:mod:`omoide.service.table`) is made of.

An :class:`Operation` names a method of :class:`~omoide.service.protocol.Operations` and gives
its one-line summary, help for its arguments, how the CLI takes them and their bounds on the
wire (:class:`Arg`), its REST routes with their response (:class:`Route`), its MCP tool with
the parameters it shows a model (:class:`Tool`, :class:`Param`) and its CLI command. The
arguments' names, types and defaults are read from the protocol (:meth:`Operation.arguments`),
so they are written only there. The table is plain data (standard library only): the REST
server, the MCP server, :class:`~omoide.service.remote.RemoteOperations` and the CLI each
derive their side from it.
"""

from __future__ import annotations

import dataclasses
import inspect
import string
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omoide.errors import NotFoundError
from omoide.service.protocol import Operations

__all__ = [
    "HIDDEN",
    "LOCAL",
    "REQUIRED",
    "Arg",
    "Argument",
    "Bounds",
    "Operation",
    "Param",
    "Route",
    "Tool",
    "a",
    "r",
    "tagged",
    "w",
]

#: The default of an argument that has none (it must be given).
REQUIRED: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class Bounds:
    """Limits of a value on the wire: a string's length in characters, a list's in items
    (``min_length``, ``max_length``), a number's range (``ge``, ``gt``, ``le``)."""

    min_length: int | None = None
    max_length: int | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    @classmethod
    def text(cls, most: int, least: int = 1) -> Bounds:
        """A string of ``least`` to ``most`` characters."""
        return cls(min_length=least or None, max_length=most)

    @classmethod
    def size(cls, most: int, least: int | None = None) -> Bounds:
        """A list of at most ``most`` items (at least ``least``)."""
        return cls(min_length=least, max_length=most)

    @classmethod
    def number(
        cls, ge: float | None = None, le: float | None = None, gt: float | None = None
    ) -> Bounds:
        """A number of at least ``ge`` (more than ``gt``) and at most ``le``."""
        return cls(ge=ge, le=le, gt=gt)

    def options(self) -> dict[str, Any]:
        """The limits that are set, by name (as pydantic's ``Field`` takes them)."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclass(frozen=True)
class Arg:
    """Help for one argument, how the CLI takes it and how it travels over REST and MCP.

    ``flags`` None: not on the CLI; empty: positional; else options such as ``("--by",)``.
    ``dest`` names the CLI value when the argument's own name is taken by a common option.
    ``negate``: a flag that sets a bool argument to False (``--failed`` for ``success``).
    ``minimum`` 1: the CLI refuses numbers below one (and it is the REST lower bound unless
    ``bounds`` says otherwise). ``wire``: the argument's name in a REST request when it
    differs (``id`` for ``item_id``); ``alias``: an older name a request may use instead.
    ``bounds`` limit the value (default for a string: 1 to 200 characters; for a list: 1,000
    items), ``items`` each item of a list (default for strings: 1 to 200 characters).
    ``schema`` names the request model of the value's items (or of the value) in
    :mod:`omoide.server.schemas` when they are objects of their own shape. ``embedded``: the
    text counts against the server's per-request budget of text to embed (True: the value,
    a list item by item; a tuple: those fields of each item). ``local``: the argument is not
    on the wire at all (a callback, the recording agent that only a local caller may name).
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
    alias: str | None = None
    bounds: Bounds | None = None
    items: Bounds | None = None
    schema: str | None = None
    embedded: bool | tuple[str, ...] = False
    local: bool = False


def a(help: str = "", *flags: str, **options: Any) -> Arg:
    return Arg(help, flags, **options)


def w(help: str = "", **options: Any) -> Arg:
    """An argument that is not on the CLI, only on the wire (REST, MCP, remote calls)."""
    return Arg(help, None, **options)


#: An argument the CLI does not take (the operation's default applies).
HIDDEN = Arg(flags=None)
#: An argument only an in-process caller gives (never on the CLI, REST or MCP).
LOCAL = Arg(flags=None, local=True)


@dataclass(frozen=True)
class Route:
    """A REST route: method, full path (``/v1/episodes/{episode_id}``: placeholders are path
    parameters), the response model's name in :mod:`omoide.server.schemas` (a list of them
    when the operation returns records) and the status code of success.

    ``fixed`` are arguments the route sets itself instead of taking them from the request
    (``PUT /v1/working/{id}`` creates the session). ``custom`` names a handler the server
    writes out instead of the generic one (a streamed body). ``about`` is the longer
    description of the OpenAPI document.
    """

    method: str
    path: str
    response: str | None = None
    status: int = 200
    fixed: Mapping[str, Any] = field(default_factory=dict)
    custom: str | None = None
    about: str = ""
    tag: str = ""

    @property
    def placeholders(self) -> list[str]:
        """The path parameters, in the path's order."""
        return [f for _, f, _, _ in string.Formatter().parse(self.path) if f]


@dataclass(frozen=True)
class Param:
    """A parameter of an MCP tool, described for a model: the operation's argument it gives
    (``to``; default: the parameter's own name). ``default`` replaces the argument's own
    (or makes a required one optional); ``bounds`` replace the argument's numeric and list
    bounds (MCP tools leave string lengths to the library, which names the problem). ``one``:
    the argument is a list, the parameter its only item (``content`` for ``documents``)."""

    description: str
    to: str | None = None
    default: Any = REQUIRED
    bounds: Bounds | None = None
    one: bool = False


@dataclass(frozen=True)
class Tool:
    """An MCP tool: its name, its description, its parameters (in the order a model reads
    them) and, when it answers with one line for the model to read beside the result, the
    line as a format string over the result (``reply``; ``reply_empty`` when it is empty)."""

    name: str
    description: str
    params: Mapping[str, Param] = field(default_factory=dict)
    reply: str | None = None
    reply_empty: str = ""


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

    @property
    def wire(self) -> str:
        """Its name in a REST request."""
        return self.arg.wire or self.name


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
    #: The protocol whose method this is (default :class:`Operations`; a table of another
    #: surface, such as a test's, names its own).
    protocol: Any = None

    @property
    def read_only(self) -> bool:
        """Whether the operation only reads (the CLI then needs an existing data directory)."""
        return self.reads or (bool(self.rest) and self.rest[0].method == "GET")

    def arguments(self) -> list[Argument]:
        """The arguments in the protocol's order; a dataclass parameter stands for its fields."""
        method = self.method()
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

    def method(self) -> Any:
        """The protocol's method: its signature is the operation's."""
        return getattr(self.protocol or Operations, self.name)

    def call_values(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The keyword arguments of a call from argument values by name (those left out
        take their defaults): the fields of a query object (``audit``'s) become it."""
        out: dict[str, Any] = {}
        queries: dict[str, tuple[Any, dict[str, Any]]] = {}
        for x in self.arguments():
            if x.via is not None:
                queries.setdefault(x.via, (x.via_type, {}))
                if x.name in values:
                    queries[x.via][1][x.name] = values[x.name]
            elif x.name in values:
                out[x.name] = values[x.name]
        return out | {via: kind(**given) for via, (kind, given) in queries.items()}

    def wire_arguments(self, route: Route) -> list[Argument]:
        """The arguments a request of ``route`` carries: all but the local ones and those
        the route fixes."""
        return [x for x in self.arguments() if not x.arg.local and x.name not in route.fixed]

    def returns_list(self) -> bool:
        """Whether the operation answers with a list of records (else one record)."""
        result = typing.get_type_hints(self.method()).get("return")
        return typing.get_origin(result) is list

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

    def route_for(self, values: Mapping[str, Any]) -> Route:
        """The route a call with ``values`` goes to: the first whose fixed arguments have
        the values given (or their defaults), else the last route (the general one)."""
        for r in self.rest[:-1]:
            if all(values.get(k) == v for k, v in r.fixed.items()):
                return r
        return self.route() if len(self.rest) < 2 else self.rest[-1]


def _dataclass_of(kind: Any) -> type | None:
    for option in typing.get_args(kind) or (kind,):
        if isinstance(option, type) and dataclasses.is_dataclass(option):
            return option
    return None


def r(
    method: str,
    path: str,
    response: str | None = None,
    status: int = 200,
    about: str = "",
    **options: Any,
) -> tuple[Route, ...]:
    """One route at ``/v1`` + ``path``."""
    return (Route(method, "/v1" + path, response, status, about=about, **options),)


def tagged(tag: str, *operations: Operation) -> tuple[Operation, ...]:
    """``operations`` with their routes grouped under ``tag`` in the OpenAPI document."""
    return tuple(
        dataclasses.replace(op, rest=tuple(dataclasses.replace(x, tag=tag) for x in op.rest))
        for op in operations
    )
