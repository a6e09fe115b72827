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

from omoide.service.local import LocalOperations
from omoide.service.protocol import Operations
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
