"""One owner per table: SQL naming a layer's table lives in that layer (and the migrations).

Every string literal in ``src/omoide`` is scanned for a table named after a SQL keyword
(``FROM episodes``, ``INTO semantic_docs``, ``UPDATE procedures``, ...) or, for names that
are not English words (``semantic_docs``, ``working_pins``, ...), as a whole string (a table
name handed to generic SQL). Modules outside the owner that still do it are listed
in :data:`KNOWN`, each with how many such strings it holds: a new one anywhere fails, and a
site moved to its owner must be taken off the list (the count must match exactly).
"""

from __future__ import annotations

import ast
import re
import sqlite3
from pathlib import Path

from omoide import ManualClock, Memory

SRC = Path(__file__).resolve().parent.parent / "src" / "omoide"

#: Table -> the package or module (path under src/omoide, without .py) that owns it.
OWNERS: dict[str, str] = {
    "episodes": "layers/episodic",
    "episodes_fts": "layers/episodic",
    "episode_threads": "layers/episodic",
    "episode_keys_fts": "layers/episodic",
    "semantic_docs": "layers/semantic",
    "semantic_docs_fts": "layers/semantic",
    "procedures": "layers/procedural",
    "procedure_versions": "layers/procedural",
    "procedure_outcomes": "layers/procedural",
    "procedure_agent_figures": "layers/procedural",
    "working_sessions": "layers/working",
    "working_messages": "layers/working",
    "working_pins": "layers/working",
    "dashboard_sessions": "server/ui/sessions",
}
#: Modules that may name every table: the schema itself (SQLite's and PostgreSQL's).
SCHEMA = ("storage/migrations", "storage/pg_schema", "storage/pg_guards", "storage/pg_bm25")

#: (module, table) -> strings naming it outside its owner, all of them reads (see each group).
KNOWN: dict[tuple[str, str], int] = {
    # The export reads every table generically, in one snapshot, from these section names.
    ("service/transfer/format", "semantic_docs"): 1,
    ("service/transfer/format", "procedure_versions"): 1,
    ("service/transfer/format", "procedure_outcomes"): 1,
    ("service/transfer/format", "working_sessions"): 1,
    ("service/transfer/format", "working_messages"): 1,
    ("service/transfer/format", "working_pins"): 1,
}

_KEYWORDS = r"(?:FROM|INTO|UPDATE|JOIN|TABLE|ON)"


def _pattern(table: str) -> re.Pattern[str]:
    bare = f"|^{table}$" if "_" in table else ""
    return re.compile(rf"\b{_KEYWORDS}\s+{table}\b{bare}")


def _strings(tree: ast.AST) -> list[str]:
    """The string literals of a module, except dictionary keys (names in reports)."""
    keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in keys
    ]


def _module(path: Path) -> str:
    return path.relative_to(SRC).with_suffix("").as_posix()


def _owned_by(module: str, owner: str) -> bool:
    return module == owner or module.startswith(owner + "/")


def _sites() -> dict[tuple[str, str], int]:
    patterns = {table: _pattern(table) for table in OWNERS}
    found: dict[tuple[str, str], int] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = _module(path)
        if module in SCHEMA:
            continue
        strings = _strings(ast.parse(path.read_text(encoding="utf-8")))
        for table, pattern in patterns.items():
            if _owned_by(module, OWNERS[table]):
                continue
            n = sum(1 for s in strings if pattern.search(s))
            if n:
                found[(module, table)] = n
    return found


def test_tables_are_named_only_by_their_owners() -> None:
    found = _sites()
    new = {k: v for k, v in found.items() if v > KNOWN.get(k, 0)}
    assert not new, f"SQL on a layer's table outside its owner (use the layer's row API): {new}"
    moved = {k: v for k, v in KNOWN.items() if found.get(k, 0) < v}
    assert not moved, f"sites moved to their owner: take them off KNOWN: {moved}"


def test_the_scan_finds_sql_and_bare_table_names(tmp_path: Path) -> None:
    strings = _strings(ast.parse('q = "SELECT id FROM episodes WHERE x"\nt = "semantic_docs"\n'))
    patterns = [_pattern(t) for t in ("episodes", "semantic_docs")]
    assert [any(p.search(s) for s in strings) for p in patterns] == [True, True]
    assert not any(p.search("the episodes of an agent") for p in patterns)


def test_owners_say_so_in_their_docstrings() -> None:
    for owner in sorted(set(OWNERS.values())):
        path = SRC / owner
        modules = sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
        docs = " ".join(
            ast.get_docstring(ast.parse(m.read_text(encoding="utf-8"))) or "" for m in modules
        )
        for table in (t for t, o in OWNERS.items() if o == owner):
            assert f"``{table}``" in docs, f"{owner} does not say it owns {table}"


def test_an_outside_sqlite_client_can_write_and_delete_rows(
    tmp_path: Path, clock: ManualClock
) -> None:
    """No trigger calls a Python function: a plain sqlite3 connection (without omoide's SQL
    functions) writes and deletes episodes and documents."""
    with Memory(tmp_path / "d", clock=clock) as mem:
        mem.episodic.record("cto", "decision", "adopt the blue logo", id="e1")
        mem.semantic.store("knowledge", ["The logo is blue."], ids=["logo"])
    conn = sqlite3.connect(tmp_path / "d" / "omoide.db", isolation_level=None)
    try:
        conn.execute("PRAGMA recursive_triggers=ON")
        conn.execute(
            "INSERT INTO episodes(id, timestamp, agent_name, event_type, description, "
            "importance, embedding, created_at) SELECT 'e2', timestamp, agent_name, event_type, "
            "'outside write', importance, embedding, created_at FROM episodes WHERE id = 'e1'"
        )
        conn.execute("UPDATE episodes SET outcome = 'done' WHERE id = 'e2'")
        conn.execute("DELETE FROM episodes WHERE id = 'e1'")
        conn.execute(
            "INSERT INTO semantic_docs(collection, id, content, content_hash, chunk_count, "
            "state, created_at, updated_at) VALUES ('knowledge', 'x', 'outside', 'h', 0, "
            "'archived', 0, 0)"
        )
        conn.execute("UPDATE semantic_docs SET content = 'changed' WHERE id = 'x'")
        conn.execute("DELETE FROM semantic_docs WHERE id = 'logo'")
    finally:
        conn.close()
    with Memory(tmp_path / "d", clock=clock) as mem:
        assert mem.episodic.get("e2").outcome == "done"
        assert mem.semantic.count("knowledge", state="archived") == 1
