"""The operation table covers the operation surface, and the front ends follow it.

Every method of :class:`Operations` has exactly one entry; every argument the table describes
is one the operation takes; and each REST route, MCP tool and CLI command the table names is
the one the REST app, the MCP server and the CLI register.
"""

from __future__ import annotations

import asyncio

import pytest

from omoide.cli import COMMANDS
from omoide.memory import Memory
from omoide.server.mcp_server import create_mcp_server, local_operations
from omoide.server.rest import create_app
from omoide.service.local import Caller
from omoide.service.protocol import AuditQuery, Operations
from omoide.service.table import OPERATIONS, operation


def test_every_operation_has_one_entry() -> None:
    protocol = {n for n in vars(Operations) if not n.startswith("_")}
    assert set(OPERATIONS) == protocol


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_the_table_describes_only_arguments_the_operation_takes(name: str) -> None:
    op = operation(name)
    known = {x.name for x in op.arguments()}
    assert set(op.args) <= known
    if op.cli is not None:
        assert op.summary, name


def test_a_query_object_stands_for_its_fields() -> None:
    arguments = {x.name: x for x in operation("audit").arguments()}
    assert set(arguments) == {f for f in AuditQuery.__dataclass_fields__}
    assert arguments["limit"].default == 100 and arguments["limit"].via == "query"


def test_the_rest_app_registers_the_tables_routes(mem: Memory) -> None:
    paths = create_app(mem, mcp=False).openapi()["paths"]
    registered = {
        (method.upper(), path, spec.get("summary"))
        for path, methods in paths.items()
        for method, spec in methods.items()
    }
    expected = {
        (route.method, route.path, op.summary[:1].upper() + op.summary[1:])
        for op in OPERATIONS.values()
        for route in op.rest
    }
    assert registered - {("GET", "/healthz", "Healthz")} == expected


def test_the_mcp_server_has_the_tables_tools(mem: Memory) -> None:
    server = create_mcp_server(local_operations(mem, Caller.for_agent(mem, "cto")))
    listed = {t.name: t.description for t in asyncio.run(server.list_tools())}
    expected = {op.mcp.name: op.mcp.description for op in OPERATIONS.values() if op.mcp}
    assert listed == expected


def test_the_cli_has_the_tables_commands() -> None:
    names = {c.name: c for c in COMMANDS}
    for op in OPERATIONS.values():
        if op.cli is not None:
            assert names[op.cli].help == op.summary, op.name


@pytest.mark.parametrize("name", sorted(n for n, op in OPERATIONS.items() if op.mcp))
def test_a_tool_gives_arguments_the_operation_takes(name: str) -> None:
    op = operation(name)
    assert op.mcp is not None
    arguments = {x.name: x for x in op.arguments()}
    given = {p.to or param: p for param, p in op.mcp.params.items()}
    assert set(given) <= set(arguments), name
    for x in arguments.values():
        if x.required:  # a model need not know it, but the tool must give it
            assert x.name in given, (name, x.name)


def test_only_streams_have_custom_routes_and_fixed_arguments_exist() -> None:
    for op in OPERATIONS.values():
        known = {x.name for x in op.arguments()}
        for route in op.rest:
            assert set(route.fixed) <= known, op.name
            assert set(route.placeholders) <= known, (op.name, route.path)
    custom = {op.name for op in OPERATIONS.values() if any(r.custom for r in op.rest)}
    assert custom == {"export_lines", "import_lines"}
