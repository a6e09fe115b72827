"""Both implementations of the operation surface match :class:`Operations` exactly.

Every method of the protocol exists on :class:`LocalOperations` and :class:`RemoteOperations`
with the same parameters (names, kinds, defaults) and the same return type, and neither has a
public method the protocol does not list: an operation added to one side only fails here.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from conftest import LiveServer
from omoide.errors import NotFoundError
from omoide.service.local import Caller, LocalOperations
from omoide.service.protocol import AuditQuery, Operations
from omoide.service.remote import RemoteOperations


def operations_of(cls: type) -> set[str]:
    """The public methods of ``cls`` (its operations), inherited ones included."""
    return {
        name
        for name, value in inspect.getmembers(cls, callable)
        if not name.startswith("_") and not isinstance(inspect.getattr_static(cls, name), type)
    }


def protocol_operations() -> set[str]:
    return {
        name
        for name in vars(Operations)
        if not name.startswith("_") and callable(getattr(Operations, name))
    }


def shape(cls: type, name: str) -> tuple[list[tuple[str, Any, Any]], Any]:
    """The parameters (name, kind, default) past ``self`` and the resolved return type."""
    fn = getattr(cls, name)
    params = [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()][1:]
    hints = typing.get_type_hints(fn)
    return params, hints.get("return")


def mismatches(cls: type) -> list[str]:
    """How ``cls`` differs from :class:`Operations` (empty: it implements it exactly)."""
    expected = protocol_operations()
    found = operations_of(cls)
    problems = [f"missing {n}" for n in sorted(expected - found)]
    problems += [f"outside the protocol: {n}" for n in sorted(found - expected)]
    for name in sorted(expected & found):
        if shape(cls, name) != shape(Operations, name):
            problems.append(f"{name}: {shape(cls, name)} != {shape(Operations, name)}")
    return problems


def test_the_protocol_lists_the_operations() -> None:
    assert {"record", "audit", "recall", "export_lines", "enforce_collections"} <= (
        protocol_operations()
    )


@pytest.mark.parametrize("cls", [LocalOperations, RemoteOperations])
def test_an_implementation_matches_the_protocol(cls: type) -> None:
    assert mismatches(cls) == []


class Broken(RemoteOperations):
    """A deliberately wrong implementation: one parameter renamed, one default changed,
    one return type changed, one operation the protocol does not know."""

    def get_episode(self, id: str) -> dict[str, Any]:  # type: ignore[override]
        raise NotImplementedError

    def forget(self, *, dry_run: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def stats(self) -> list[dict[str, Any]]:  # type: ignore[override]
        raise NotImplementedError

    def extra(self) -> None:
        raise NotImplementedError


def test_the_check_finds_a_broken_implementation() -> None:
    found = mismatches(Broken)
    assert "outside the protocol: extra" in found
    assert {p.split(":")[0] for p in found if ":" in p and not p.startswith("outside")} == {
        "get_episode",
        "forget",
        "stats",
    }


def test_the_check_finds_a_missing_operation() -> None:
    class Partial:
        def whoami(self) -> dict[str, Any]:
            raise NotImplementedError

    assert "missing record" in mismatches(Partial)


def test_remote_operations_answer_as_local_ones(live_server: LiveServer) -> None:
    """The generic remote calls reach the right routes with the right fields: each answer
    is the one the same agent gets in-process."""
    mem = live_server.mem
    remote = RemoteOperations(live_server.url, live_server.keys["cto"])
    local = LocalOperations(mem, Caller.for_agent(mem, "cto"))
    assert remote.whoami() == local.whoami()
    episode = remote.record("decision", "remote parity: indigo", tags=["parity"])
    assert episode["agent_name"] == "cto"
    assert remote.update_episode(episode["id"], outcome="shipped")["outcome"] == "shipped"
    assert remote.get_episode(episode["id"])["outcome"] == "shipped"
    assert [e["id"] for e in remote.list_episodes(limit=3)] == [
        e["id"] for e in local.list_episodes(limit=3)
    ]
    found = remote.search_episodes("indigo parity", tags=["parity"], top_k=1)
    assert [e["id"] for e in found] == [episode["id"]]
    stored = remote.store("knowledge", ["parity document about indigo"], ids=["parity-doc"])
    assert stored["ids"] == ["cto:parity-doc"]  # a chosen id is stored as the agent's own
    assert remote.get_document("knowledge", "parity-doc")["document"].startswith("parity")
    assert (
        remote.query("knowledge", "indigo", 1)[0]["id"]
        == local.query("knowledge", "indigo", 1)[0]["id"]
    )
    assert [d["id"] for d in remote.list_documents("knowledge", limit=2)] == [
        d["id"] for d in local.list_documents("knowledge", limit=2)
    ]
    remote.register_procedure("parity-proc", "parity:*", "v1", description="d")
    assert remote.match_procedure("parity:go")["best"]["name"] == "cto:parity-proc"
    assert remote.report_outcome("parity-proc", 8.0, True)["name"] == "cto:parity-proc"
    assert remote.evolve_procedure("parity-proc", "v2")["template"] == "v2"
    assert len(remote.procedure_history("parity-proc")) == 2
    assert remote.rollback_procedure("parity-proc", 1)["template"] == "v1"
    fields = ("name", "trigger", "template", "version", "success_rate")
    here, there = local.get_procedure("parity-proc"), remote.get_procedure("parity-proc")
    assert {k: there[k] for k in fields} == {k: here[k] for k in fields}
    assert remote.pin("parity", "rule", "keep it short")["key"] == "rule"
    assert remote.working("parity")["context"] == local.working("parity")["context"]
    assert remote.unpin("parity", "rule")["key"] == "rule"
    assert remote.clear_messages("parity")["evictions"] == []
    cached = remote.cache("https://example.test/parity", "fresh", 1.0, "test")
    assert remote.cached("https://example.test/parity")["id"] == cached["id"]
    assert remote.forget(dry_run=True)["dry_run"] is True
    assert [e["id"] for e in remote.audit(AuditQuery(limit=5))] == [
        e["id"] for e in local.audit(AuditQuery(limit=5))
    ]
    with pytest.raises(NotFoundError):
        remote.restore("no-such-item")
    assert remote.recall("indigo")["agent_name"] == "cto"
    assert remote.delete_document("knowledge", "parity-doc")["id"] == "cto:parity-doc"
    assert remote.delete_episode(episode["id"])["id"] == episode["id"]
    assert remote.stats()["layers"].keys() == local.stats()["layers"].keys()
