"""omoide on a real Chroma server: stores sharing it by prefix, a server that cannot be
reached, and ChromaDB's refusals over HTTP. (The semantic, scope and recall tests marked
``@ON_BOTH_BACKENDS`` run on the server too.)"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from chroma_server import ChromaServer, free_port, new_prefix, start_chroma_server
from omoide import Config
from omoide.errors import BackendError, ConfigError, ValidationError


def test_two_stores_share_a_server_under_their_own_prefixes(
    chroma_server: ChromaServer, open_memory: Any
) -> None:
    first_prefix, second_prefix = new_prefix(), new_prefix()
    first = open_memory("a", chroma_server.config(Config(), first_prefix))
    second = open_memory("b", chroma_server.config(Config(), second_prefix))
    first.semantic.store("knowledge", ["Deploys happen on Tuesdays."], ids=["deploys"])
    second.semantic.store("knowledge", ["Lunch is at noon."], ids=["lunch"])
    assert [h.doc_id for h in first.semantic.query("knowledge", "when", n_results=5)] == ["deploys"]
    assert [h.doc_id for h in second.semantic.query("knowledge", "when", n_results=5)] == ["lunch"]
    names = {c.name for c in chroma_server.client().list_collections()}
    assert {f"{first_prefix}knowledge", f"{second_prefix}knowledge"} <= names
    chroma_server.drop(first_prefix)
    chroma_server.drop(second_prefix)


def test_a_second_directory_on_the_same_names_is_refused(
    chroma_server: ChromaServer, open_memory: Any
) -> None:
    """Without a prefix of its own, a second data directory would overwrite the first one's
    chunks: it is refused when it opens, and the first store's data is untouched."""
    prefix = new_prefix()
    config = chroma_server.config(Config(), prefix)
    first = open_memory("a", config)
    first.semantic.store("knowledge", ["Deploys happen on Tuesdays."], ids=["deploys"])
    with pytest.raises(ConfigError, match=r"belongs to another omoide data directory"):
        open_memory("b", config)
    first.close()
    again = open_memory("a", config)  # the same directory opens its own collections again
    assert again.semantic.count_chunks("knowledge") == 1
    chroma_server.drop(prefix)


@pytest.mark.parametrize("prefix", ["-x", "a b", "x..y", "é", "x" * 65, 5])
def test_bad_prefixes_are_refused_by_name(prefix: Any) -> None:
    with pytest.raises(ConfigError, match=r"semantic\.chroma_prefix"):
        Config.from_dict({"semantic": {"chroma_prefix": prefix}})


def test_an_unreachable_server_is_a_backend_error(open_memory: Any) -> None:
    config = Config.from_dict({"semantic": {"chroma_url": f"http://127.0.0.1:{free_port()}"}})
    with pytest.raises(BackendError, match="cannot reach the Chroma server"):
        open_memory("a", config)


def test_a_server_gone_mid_run_is_a_backend_error(tmp_path: Path, open_memory: Any) -> None:
    server = start_chroma_server(tmp_path / "own-server")
    try:
        mem = open_memory("a", server.config(Config()))
        mem.semantic.store("knowledge", ["Deploys happen on Tuesdays."])
    finally:
        server.stop()
    with pytest.raises(BackendError, match="cannot be reached"):
        mem.semantic.query("knowledge", "deploys")
    with pytest.raises(BackendError):
        mem.semantic.store("knowledge", ["Lunch is at noon."])


@pytest.mark.parametrize(
    ("where", "where_document", "field"),
    [
        ({"topic": math.nan}, None, "where.topic"),
        (None, {"$regex": "("}, "where_document"),
        (None, {"$contains": 5}, "where_document.$contains"),
    ],
)
def test_refusals_over_http_are_validation_errors(
    chroma_server: ChromaServer, open_memory: Any, where: Any, where_document: Any, field: str
) -> None:
    config = chroma_server.config(Config())
    mem = open_memory("a", config)
    mem.semantic.store("knowledge", ["Pricing starts at 500 yen"], [{"topic": "price"}])
    with pytest.raises(ValidationError) as caught:
        mem.semantic.query("knowledge", "pricing", 3, where, where_document)
    assert caught.value.field == field
    chroma_server.drop(config.semantic.chroma_prefix)


class _Flaky:
    """A collection whose queries fail with ``errors`` first (a stand-in: a real server's
    transient internal error cannot be provoked on demand), then answer."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.asked = 0

    def query(self, **query: Any) -> Any:
        self.asked += 1
        if self.errors:
            raise self.errors.pop(0)
        return {"ids": [["1"]], "asked": query}


def test_a_query_the_server_fails_internally_is_asked_again() -> None:
    from chromadb.errors import InternalError, InvalidArgumentError

    from omoide.errors import BackendError, ValidationError
    from omoide.storage.chroma import QUERY_ATTEMPTS, query_collection

    failing = InternalError("Error executing plan: Internal error: Error finding id")
    flaky = _Flaky(failing, failing)
    assert query_collection(flaky, "where", n_results=3)["asked"] == {"n_results": 3}
    assert flaky.asked == 3
    broken = _Flaky(*[failing] * QUERY_ATTEMPTS)
    with pytest.raises(BackendError, match="Error finding id"):
        query_collection(broken, "where")
    assert broken.asked == QUERY_ATTEMPTS
    refused = _Flaky(InvalidArgumentError("bad where"))
    with pytest.raises(ValidationError):  # a refusal is not asked again
        query_collection(refused, "where")
    assert refused.asked == 1
