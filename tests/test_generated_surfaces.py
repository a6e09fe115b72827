"""An operation is its signature, its table entry and its implementation: the REST route, the
MCP tool and the remote call follow from those.

A toy surface (a protocol of two operations, their table entries and an implementation that
notes its calls) gets its REST routes from :func:`omoide.server.routing.operation_router`,
served for real on 127.0.0.1, its MCP tools from
:func:`omoide.server.mcp_server.create_mcp_server` and its remote calls from
:func:`omoide.service._http.remote_calls`, with nothing written for it but the entries. Then
the real table: every route and tool of omoide is the generated one, but the routes the
table itself marks custom.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, cast

import anyio
import httpx
import pytest
from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute
from mcp import Client
from pydantic import BaseModel

from conftest import LiveServer, run_uvicorn
from omoide import Memory
from omoide.errors import ValidationError
from omoide.server import mcp_server, pipeline_routes, rest
from omoide.server.problems import install_error_handlers
from omoide.server.routing import PREFIX, operation_router, strict_query
from omoide.service._http import HttpOperations, remote_calls
from omoide.service.operation import Bounds, Operation, Param, Tool, a, r, w
from omoide.service.protocol import Operations
from omoide.service.remote import RemoteOperations
from omoide.service.table import OPERATIONS


class Toys(Protocol):
    """A surface of two operations, written the way :class:`Operations` is."""

    def echo(
        self,
        session_id: str,
        words: Sequence[str],
        *,
        times: int = 1,
        loud: bool = False,
        since: datetime | str | None = None,
    ) -> dict[str, Any]: ...

    def calls(self, *, limit: int = 5) -> list[dict[str, Any]]: ...


TOYS = (
    Operation(
        "echo",
        "say the words again",
        {
            "session_id": a("the session"),
            "words": a("a word (repeatable)", bounds=Bounds.size(3, 1)),
            "times": a("how often", "--times", bounds=Bounds.number(1, 4)),
            "loud": a("in capitals", "--loud"),
            "since": w("only a time, to see it travel"),
        },
        r("POST", "/toys/{session_id}/echo", "Echo", 201, "Say the words ``times`` times."),
        Tool(
            "echo_words",
            "Say the given words again, as often as asked; a toy tool of a test surface.",
            {
                "words": Param("The words."),
                "session_id": Param("The session.", default="main"),
                "times": Param("How often.", bounds=Bounds.number(1, 2)),
            },
            reply="{text}",
        ),
        protocol=Toys,
    ),
    Operation(
        "calls",
        "the calls so far, newest first",
        {"limit": a("how many", "--limit", bounds=Bounds.number(1, 10))},
        r("GET", "/toys", "Echo"),
        Tool(
            "toy_calls",
            "The calls the toy surface answered so far, newest first, at most limit.",
            {"limit": Param("How many.")},
        ),
        protocol=Toys,
    ),
)


class Echo(BaseModel):
    session_id: str
    text: str
    since: datetime | None


class ToyOperations:
    """The implementation: it answers and notes the arguments each call was given (those
    left out take the protocol's defaults)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def echo(self, session_id: str, words: Sequence[str], **given: Any) -> dict[str, Any]:
        self.seen.append({"session_id": session_id, "words": words, **given})
        text = " ".join(list(words) * given.get("times", 1))
        since = given.get("since")
        return {
            "session_id": session_id,
            "text": text.upper() if given.get("loud") else text,
            "since": since,
        }

    def calls(self, *, limit: int = 5) -> list[dict[str, Any]]:
        return [
            {"session_id": s["session_id"], "text": " ".join(s["words"]), "since": s.get("since")}
            for s in reversed(self.seen[-limit:])
        ]


@remote_calls
class ToyRemote(HttpOperations):
    """The remote side of the toy surface: its table, and nothing else written."""

    table: ClassVar[Mapping[str, Operation]] = {op.name: op for op in TOYS}


@pytest.fixture
def toys() -> ToyOperations:
    return ToyOperations()


@pytest.fixture
def served(toys: ToyOperations) -> Iterator[str]:
    app = FastAPI()
    install_error_handlers(app)
    router = operation_router(lambda: toys, TOYS, models={"Echo": Echo})
    app.include_router(router, prefix=PREFIX, dependencies=[Depends(strict_query)])
    with run_uvicorn(app) as url:
        yield url


def test_a_toy_operation_is_served_over_rest(served: str, toys: ToyOperations) -> None:
    with httpx.Client(base_url=served, timeout=60) as http:
        made = http.post("/v1/toys/s1/echo", json={"words": ["hi", "there"], "times": 2})
        assert made.status_code == 201, made.text
        assert made.json() == {"session_id": "s1", "text": "hi there hi there", "since": None}
        # only what the request gave: the operation's own defaults apply to the rest
        assert toys.seen[-1] == {"session_id": "s1", "words": ["hi", "there"], "times": 2}
        for bad in (
            {"words": ["hi"], "times": 5},  # the table's bounds
            {"words": []},
            {"words": ["a", "b", "c", "d"]},
            {"words": ["hi"], "loud": "yes"},  # a strict bool in a body
            {"words": ["hi"], "agent_name": "x"},  # unknown fields are refused
            {},
        ):
            answer = http.post("/v1/toys/s1/echo", json=bad)
            assert answer.status_code == 422, (bad, answer.text)
            assert answer.json()["error"] == "ValidationError"
        assert len(toys.seen) == 1
        listed = http.get("/v1/toys", params={"limit": 1})
        assert listed.status_code == 200 and [e["text"] for e in listed.json()] == ["hi there"]
        assert http.get("/v1/toys", params={"limit": 11}).status_code == 422
        assert http.get("/v1/toys", params={"nope": 1}).status_code == 422
        spec = http.get("/openapi.json").json()
    post = spec["paths"]["/v1/toys/{session_id}/echo"]["post"]
    assert post["summary"] == "Say the words again"
    assert post["description"] == "Say the words ``times`` times."
    body = spec["components"]["schemas"]["EchoRequest"]
    assert set(body["properties"]) == {"words", "times", "loud", "since"}
    assert body["required"] == ["words"]
    assert body["properties"]["words"]["description"] == "a word (repeatable)"
    assert body["properties"]["times"]["maximum"] == 4


def test_a_toy_operation_is_called_remotely(served: str, toys: ToyOperations) -> None:
    remote = ToyRemote(served, None)
    when = datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    echoed = remote.echo("s2", ("one",), times=3, loud=True, since=when)
    assert echoed["text"] == "ONE ONE ONE"
    assert toys.seen[-1]["since"] == when  # sent as ISO 8601, parsed back to a time
    assert toys.seen[-1]["words"] == ["one"]  # a tuple travels as a list
    assert [c["session_id"] for c in remote.calls(limit=1)] == ["s2"]
    with pytest.raises(ValidationError) as refused:
        remote.echo("s2", ["x"], times=9)
    assert refused.value.field == "times"
    assert inspect.signature(ToyRemote.echo) == inspect.signature(Toys.echo)


def test_a_toy_operation_is_an_mcp_tool(toys: ToyOperations) -> None:
    server = mcp_server.create_mcp_server(lambda caller: cast(Any, toys), TOYS)

    async def scenario() -> tuple[Any, Any, Any, Any]:
        async with Client(server) as client:
            listed = await client.list_tools()
            said = await client.call_tool("echo_words", {"words": ["ok"], "times": 2})
            too_often = await client.call_tool("echo_words", {"words": ["ok"], "times": 3})
            calls = await client.call_tool("toy_calls", {})
            return listed, said, too_often, calls

    listed, said, too_often, calls = anyio.run(scenario)
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == {"echo_words", "toy_calls"}
    schema = tools["echo_words"].input_schema
    assert list(schema["properties"]) == ["words", "session_id", "times"]
    assert schema["required"] == ["words"]
    assert schema["properties"]["times"]["maximum"] == 2  # the tool's own bounds
    assert schema["properties"]["words"]["description"] == "The words."
    assert tools["toy_calls"].annotations.read_only_hint is True
    assert not said.is_error and said.content[0].text == "ok ok"
    assert said.structured_content["session_id"] == "main"  # the tool's default
    assert too_often.is_error
    assert calls.structured_content["result"][0]["text"] == "ok"


# -- the real table ----------------------------------------------------------------------------


def _api_routes(routes: Sequence[Any]) -> Iterator[APIRoute]:
    """The API routes of the routers an app includes (the /v1 API)."""
    for route in routes:
        if hasattr(route, "original_router"):
            for included in route.original_router.routes:
                assert isinstance(included, APIRoute)
                yield included


def test_every_route_is_generated_but_the_custom_ones(mem: Memory) -> None:
    app = rest.create_app(mem, mcp=False, dashboard=False)
    table = {(r.method, r.path): r for op in OPERATIONS.values() for r in op.rest}
    assert {path for (_, path), r in table.items() if r.custom} == {"/v1/export", "/v1/import"}
    seen = set()
    for route in _api_routes(app.routes):
        (method,) = route.methods
        entry = table[(method, PREFIX + route.path.removeprefix(PREFIX))]
        seen.add((method, entry.path))
        expected = "omoide.server.rest" if entry.custom else "omoide.server.routing"
        assert route.endpoint.__module__ == expected, entry.path
    assert seen == set(table)


def test_no_operation_has_a_hand_written_handler_tool_or_remote_call() -> None:
    routes = inspect.getsource(rest) + inspect.getsource(pipeline_routes)
    tools = inspect.getsource(mcp_server)  # its resources read stats, no tool's operation
    for op in OPERATIONS.values():
        if not any(route.custom for route in op.rest):
            assert f"ops.{op.name}(" not in routes, op.name
        if op.mcp is not None:
            assert f"ops.{op.name}(" not in tools and f"def {op.mcp.name}(" not in tools
        method = getattr(RemoteOperations, op.name)
        if any(route.custom for route in op.rest):
            assert op.name in vars(RemoteOperations)  # written out: a stream
        else:
            assert method.__wrapped__ is getattr(Operations, op.name), op.name


def test_remote_calls_follow_the_table_on_a_real_server(live_server: LiveServer) -> None:
    """The generic remote call picks the route by the table's fixed arguments, joins a share
    list into the scope string the wire takes, and refuses a local argument."""
    remote = RemoteOperations(live_server.url, live_server.keys["cto"])
    opened = remote.working("generated-fresh", create=True)  # PUT, without a size
    assert opened["session_id"] == "generated-fresh" and opened["messages"] == []
    assert remote.working("generated-fresh", max_tokens=600)["max_tokens"] == 600  # PUT too
    assert remote.working("generated-fresh")["max_tokens"] == 600  # GET
    stored = remote.store("knowledge", ["shared with the leads"], scope=("agent:cto", "team:leads"))
    assert remote.get_document("knowledge", stored["ids"][0])["scope"] == "agent:cto,team:leads"
    with pytest.raises(ValidationError) as refused:
        remote.record("decision", "as someone else", agent_name="ceo")
    assert refused.value.field == "agent_name"
