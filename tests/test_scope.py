"""Agent scopes on every read path: the CEO / team:leads / CTO example, and filters that
cannot widen a scope."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chroma_server import ON_BOTH_BACKENDS
from omoide import Config, Memory
from omoide.core.scope import can_read, normalize_scope, reader_predicate
from omoide.errors import NotFoundError, ValidationError

pytestmark = pytest.mark.both_engines

LEADS = ("ceo", "cto")  # the team "leads" of the conftest config; "intern" is outside it


@pytest.fixture
def shared(mem: Memory) -> Memory:
    """A decision of the CEO shared with team:leads, a private note of the CEO, a global
    announcement, in every layer."""
    mem.episodic.record(
        "ceo",
        "decision",
        "価格は¥500から始める pricing starts at 500 yen",
        id="ep-price",
        scope="team:leads",
    )
    mem.episodic.record(
        "ceo", "decision", "private salary note for the board", id="ep-salary", scope="private"
    )
    mem.episodic.record("ceo", "decision", "company offsite in May", id="ep-offsite")
    mem.semantic.store(
        "decisions",
        ["Pricing starts at 500 yen (team leads)"],
        [{"topic": "price"}],
        ids=["d-price"],
        agent_name="ceo",
        scope="team:leads",
    )
    mem.semantic.store(
        "decisions",
        ["Board salary note, private"],
        [{"topic": "salary"}],
        ids=["d-salary"],
        agent_name="ceo",
        scope="private",
    )
    mem.semantic.store(
        "decisions",
        ["Company offsite in May"],
        [{"topic": "offsite"}],
        ids=["d-offsite"],
        agent_name="ceo",
    )
    mem.procedural.register(
        "price_review",
        "~pricing",
        "1. collect data 2. decide",
        agent_name="ceo",
        scope="team:leads",
    )
    mem.procedural.register(
        "salary_review", "~salary", "1. compare 2. approve", agent_name="ceo", scope="private"
    )
    return mem


def teams(mem: Memory, agent: str) -> frozenset[str]:
    from omoide.core.scope import teams_of

    return teams_of(agent, mem.config.teams)


@pytest.mark.parametrize(
    ("reader", "sees_price"), [("ceo", True), ("cto", True), ("intern", False)]
)
@ON_BOTH_BACKENDS
def test_episodic_recall_get_browse(shared: Memory, reader: str, sees_price: bool) -> None:
    t = teams(shared, reader)
    recalled = {e.id for e in shared.episodic.recall("pricing", reader=reader, reader_teams=t)}
    browsed = {e.id for e in shared.episodic.browse(reader=reader, reader_teams=t)}
    assert ("ep-price" in recalled) is sees_price
    assert ("ep-price" in browsed) is sees_price
    assert "ep-offsite" in browsed  # global
    assert ("ep-salary" in browsed) is (reader == "ceo")
    if sees_price:
        assert shared.episodic.get("ep-price", reader=reader, reader_teams=t).agent_name == "ceo"
    else:
        with pytest.raises(NotFoundError):
            shared.episodic.get("ep-price", reader=reader, reader_teams=t)
    if reader != "ceo":
        with pytest.raises(NotFoundError):
            shared.episodic.get("ep-salary", reader=reader, reader_teams=t)


def test_episodic_candidates_respect_scope(shared: Memory) -> None:
    found = {
        c.episode.id
        for c in shared.episodic.candidates("salary note", reader="cto", reader_teams={"leads"})
    }
    assert "ep-salary" not in found
    assert "ep-price" in found or "ep-offsite" in found


@pytest.mark.parametrize(
    ("reader", "sees_price"), [("ceo", True), ("cto", True), ("intern", False)]
)
@ON_BOTH_BACKENDS
def test_semantic_query_get_documents(shared: Memory, reader: str, sees_price: bool) -> None:
    t = teams(shared, reader)
    hits = {
        h.doc_id
        for h in shared.semantic.query(
            "decisions", "pricing", n_results=10, reader=reader, reader_teams=t
        )
    }
    docs = {d.id for d in shared.semantic.documents("decisions", reader=reader, reader_teams=t)}
    assert ("d-price" in hits) is sees_price
    assert ("d-price" in docs) is sees_price
    assert ("d-salary" in docs) is (reader == "ceo")
    assert "d-offsite" in docs
    if not sees_price:
        with pytest.raises(NotFoundError):
            shared.semantic.get("decisions", "d-price", reader=reader, reader_teams=t)


@ON_BOTH_BACKENDS
def test_where_naming_private_items_returns_nothing(shared: Memory) -> None:
    # A filter on the private document's own metadata: the scope still applies.
    hits = shared.semantic.query(
        "decisions", "salary", where={"topic": "salary"}, reader="cto", reader_teams={"leads"}
    )
    assert hits == []
    # An $or cannot widen it either.
    hits = shared.semantic.query(
        "decisions",
        "salary",
        where={"$or": [{"topic": "salary"}, {"topic": "price"}]},
        reader="intern",
    )
    assert hits == []
    # The owner still finds it with the same filter.
    own = shared.semantic.query("decisions", "salary", where={"topic": "salary"}, reader="ceo")
    assert [h.doc_id for h in own] == ["d-salary"]


@pytest.mark.parametrize(
    "where",
    [
        {"_agent": "ceo"},
        {"_scope": "private"},
        {"_r:agent:cto": True},
        {"$or": [{"_global": False}]},
    ],
)
def test_where_on_reserved_keys_is_refused(shared: Memory, where: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        shared.semantic.query("decisions", "salary", where=where, reader="intern")


@pytest.mark.parametrize(
    ("reader", "sees_price"), [("ceo", True), ("cto", True), ("intern", False)]
)
def test_procedural_get_matches(shared: Memory, reader: str, sees_price: bool) -> None:
    t = teams(shared, reader)
    names = {
        p.name for p in shared.procedural.matches("pricing update", reader=reader, reader_teams=t)
    }
    assert ("price_review" in names) is sees_price
    listed = {p.name for p in shared.procedural.procedures(reader=reader, reader_teams=t)}
    assert ("salary_review" in listed) is (reader == "ceo")
    if not sees_price:
        with pytest.raises(NotFoundError):
            shared.procedural.get("price_review", reader=reader, reader_teams=t)
        with pytest.raises(NotFoundError):
            shared.procedural.history("price_review", reader=reader, reader_teams=t)
        assert shared.procedural.get_procedure("pricing", reader=reader, reader_teams=t) is None


@pytest.mark.parametrize(
    ("reader", "sees_price"), [("ceo", True), ("cto", True), ("intern", False)]
)
def test_router_recall(shared: Memory, reader: str, sees_price: bool) -> None:
    context = shared.recall("pricing decision 価格", agent_name=reader)
    ids = set(context.ids())
    assert ("ep-price" in ids) is sees_price
    assert ("decisions/d-price" in ids) is sees_price
    assert ("price_review" in ids) is sees_price or "price_review" not in ids
    assert "ep-salary" not in ids or reader == "ceo"
    assert "decisions/d-salary" not in ids or reader == "ceo"
    rendered = context.render()
    if not sees_price:
        assert "500" not in rendered


def test_router_never_shows_private_items_of_others(shared: Memory) -> None:
    for reader in ("cto", "intern"):
        context = shared.recall("salary note board", agent_name=reader)
        assert all("salary" not in item.text.lower() for item in context.items)
        assert "ep-salary" not in context.ids()
        assert "decisions/d-salary" not in context.ids()
        body = context.render().split("\n", 2)[-1]  # past the header, which quotes the query
        assert "salary" not in body.lower()


def test_recall_log_is_private_to_the_asking_agent(shared: Memory) -> None:
    context = shared.recall("pricing", agent_name="cto")
    assert context.recall_id is not None
    assert shared.recall_log.get(context.recall_id, reader="cto").agent_name == "cto"
    with pytest.raises(NotFoundError):
        shared.recall_log.get(context.recall_id, reader="intern")
    assert shared.recall_log.entries(reader="intern") == []


def test_scope_predicate_matches_can_read() -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (agent_name TEXT, scope TEXT)")
    rows = [
        ("ceo", "global"),
        ("ceo", "private"),
        ("ceo", normalize_scope("team:leads")),
        ("ceo", normalize_scope("agent:intern,team:ops")),
        ("cto", "private"),
    ]
    conn.executemany("INSERT INTO t VALUES (?, ?)", rows)
    for reader, reader_teams in [
        ("cto", {"leads"}),
        ("intern", set()),
        ("ops1", {"ops"}),
        ("ceo", {"leads"}),
    ]:
        sql, params = reader_predicate(reader, reader_teams)
        got = conn.execute(f"SELECT agent_name, scope FROM t WHERE {sql}", params).fetchall()
        expected = [r for r in rows if can_read(r[1], r[0], reader, reader_teams)]
        assert sorted(got) == sorted(expected)


def test_may_read_on_chunk_flags_matches_can_read() -> None:
    """The Python check on a query's results is the rule of the ``where`` filter."""
    from omoide.core.filters import may_read, reader_flags

    scopes = ["global", "private", normalize_scope("team:leads"), "agent:intern,team:ops"]
    for owner in ("ceo", "cto"):
        for scope in scopes:
            flags = reader_flags(owner, normalize_scope(scope))
            for reader, reader_teams in [
                ("cto", {"leads"}),
                ("intern", set()),
                ("ops1", {"ops"}),
                ("ceo", {"leads"}),
            ]:
                expected = can_read(normalize_scope(scope), owner, reader, reader_teams)
                assert may_read(flags, reader, reader_teams) is expected


@ON_BOTH_BACKENDS
def test_nearest_documents_of_others_hide_nothing_readable(mem: Memory) -> None:
    """When the documents nearest a question belong to others, the readable ones further away
    are still found (the filtered query), and the others' never are."""
    private = [
        f"Pricing review {i}: the price of plan {i} starts at {500 + i} yen" for i in range(30)
    ]
    mem.semantic.store(
        "decisions", private, ids=[f"p{i}" for i in range(30)], agent_name="ceo", scope="private"
    )
    mem.semantic.store(
        "decisions",
        ["Offsite budget: hotels are booked by the office team"],
        ids=["mine"],
        agent_name="intern",
        scope="private",
    )
    hits = mem.semantic.query(
        "decisions", "what does the plan price start at", n_results=3, reader="intern"
    )
    assert [h.doc_id for h in hits] == ["mine"]
    context = mem.recall(
        "what does the plan price start at", agent_name="intern", layers=["semantic"], min_score=0.0
    )
    assert all(not i.id.startswith("decisions/p") for i in context.items)
    ceo = mem.semantic.query(
        "decisions", "what does the plan price start at", n_results=3, reader="ceo"
    )
    assert len(ceo) == 3 and all(h.doc_id.startswith("p") for h in ceo)


def test_nearest_episodes_of_others_hide_nothing_readable(mem: Memory) -> None:
    """The episodic dense candidates: the nearest belong to others (checked first), the
    readable one further away is still found, and the others' never are."""
    mem.episodic.record_many(
        [
            {
                "agent_name": "ceo",
                "event_type": "decision",
                "description": f"Plan {i} is priced at {500 + i} yen from next quarter",
                "scope": "private",
            }
            for i in range(300)
        ]
    )
    mine = mem.episodic.record(
        "intern", "note", "Hotels for the offsite are booked", scope="private"
    )
    vector = mem.embedder.embed_query("how are the plans priced")
    found = mem.episodic.candidates(
        "how are the plans priced", pool=5, reader="intern", vector=vector
    )
    assert [c.episode.id for c in found] == [mine.id]
    ceo = mem.episodic.candidates("how are the plans priced", pool=5, reader="ceo", vector=vector)
    assert len(ceo) >= 5 and all(c.episode.agent_name == "ceo" for c in ceo)
    only = mem.episodic.candidates("offsite", pool=5, agent_name="intern", vector=vector)
    assert [c.episode.id for c in only] == [mine.id]


# -- undefined teams (issue 19) ---------------------------------------------------------------


def test_an_undefined_team_is_refused_on_every_write_path(mem: Memory, tmp_path: Path) -> None:
    """``mem`` defines the team ``leads`` only; ``team:ops`` is a typo or a missing entry."""
    message = r"team 'ops' is not defined \(configured teams: leads\)"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nDeploy on Tuesdays.\n", encoding="utf-8")
    writes = [
        lambda: mem.episodic.record("cto", "note", "x", scope="team:ops"),
        lambda: mem.episodic.record_many(
            [{"agent_name": "cto", "event_type": "note", "description": "x", "scope": "team:ops"}]
        ),
        lambda: mem.semantic.store(
            "knowledge", ["x"], agent_name="cto", scope="agent:ceo,team:ops"
        ),
        lambda: mem.semantic.cache("https://x", "x", 1, "web", agent_name="cto", scope="team:ops"),
        lambda: mem.procedural.register("p", "t", "x", agent_name="cto", scope=["team:ops"]),
        lambda: mem.index(docs, "knowledge", agent_name="cto", scope="team:ops"),
    ]
    for write in writes:
        with pytest.raises(ValidationError, match=message) as refused:
            write()
        assert refused.value.field.endswith("scope")
    assert mem.episodic.count() == 0 and mem.semantic.count("knowledge") == 0
    assert mem.episodic.record("cto", "note", "ok", scope="team:leads").scope == "team:leads"


def test_a_store_without_teams_names_none(data_dir: Path, embedder: Any, counter: Any) -> None:
    with (
        Memory(data_dir, embedder=embedder, token_counter=counter) as bare,
        pytest.raises(ValidationError, match=r"configured teams: none\); declare it"),
    ):
        bare.episodic.record("cto", "note", "x", scope="team:leads")
    with pytest.raises(ValidationError, match="default_scope: team 'leads'"):
        Memory(
            data_dir,
            embedder=embedder,
            token_counter=counter,
            config=Config(default_scope="team:leads"),
        )
