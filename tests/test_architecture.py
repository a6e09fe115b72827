"""The package's shape: imports run one way, down the floors, and never in a circle.

Every ``import`` in ``src/omoide`` is read with :mod:`ast` — module-level, inside functions and
under ``TYPE_CHECKING`` alike, since an import hidden in a function is still a dependency.
Each module sits on the floor of its package (``FLOORS``); a module may import its own floor
or any floor below, never one above, and no set of modules may import each other in a circle.
A new package must be given a floor here, so this test is also the map of the house.
"""

from __future__ import annotations

import ast
from pathlib import Path

import omoide

PACKAGE = Path(omoide.__file__).parent

#: Floors from the ground up. A module's floor is that of the longest prefix listed here.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("omoide._version", "omoide.errors", "omoide.clock"),
    ("omoide.core",),
    ("omoide.text", "omoide.providers"),
    ("omoide.storage",),
    ("omoide.layers",),
    ("omoide.pipelines", "omoide.ingest"),
    ("omoide.recall",),
    ("omoide.memory",),
    ("omoide.service",),
    ("omoide.server", "omoide.cli", "omoide.client", "omoide.simulation", "omoide.testing"),
    ("omoide", "omoide.__main__"),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The omoide modules ``name`` imports (a package import counts as its ``__init__``)."""
    is_package = path.name == "__init__.py"
    package = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [base] + [f"{base}.{alias.name}" for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def floor_of(name: str) -> int:
    best, floor = -1, -1
    for level, prefixes in enumerate(FLOORS):
        for prefix in prefixes:
            inside = name.startswith(prefix + ".") and prefix != "omoide"  # the root: itself only
            if (name == prefix or inside) and len(prefix) > best:
                best, floor = len(prefix), level
    return floor


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def test_every_module_has_a_floor() -> None:
    assert [name for name in modules() if floor_of(name) < 0] == []


def test_no_import_runs_upward() -> None:
    upward = [
        f"{name} (floor {floor_of(name)}) imports {target} (floor {floor_of(target)})"
        for name, targets in graph().items()
        for target in sorted(targets)
        if floor_of(target) > floor_of(name)
    ]
    assert upward == []


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_storage_and_providers_import_no_domain_module() -> None:
    ground = {"omoide._version", "omoide.errors", "omoide.clock"}
    allowed = ("omoide.core", "omoide.text", "omoide.providers", "omoide.storage")
    bad = [
        f"{name} imports {target}"
        for name, targets in graph().items()
        if name.startswith(("omoide.storage", "omoide.providers"))
        for target in targets
        if target not in ground and not target.startswith(allowed)
    ]
    assert bad == []


def test_modules_stay_readable() -> None:
    """A module a newcomer reads once: under ~500 lines (a little slack for docstrings)."""
    long = {
        name: n
        for name, path in modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 550
    }
    assert long == {}
