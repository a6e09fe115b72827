"""The recall pipeline's cut, its one scorer shared with EpisodicStore.recall, routing from
configuration, scope on every source, and cross-language matching."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from chroma_server import ON_BOTH_BACKENDS
from omoide import Config, ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.errors import UnknownCollectionError, ValidationError
from omoide.recall.route import route

pytestmark = pytest.mark.both_engines

NOW = datetime(2026, 3, 18, 9, 0, tzinfo=UTC)


def router(**changes: object) -> Config:
    return Config(router=dataclasses.replace(RouterConfig(), **changes))


@pytest.fixture
def notes(mem: Memory) -> Memory:
    mem.semantic.store(
        "knowledge",
        [
            "The staging database is refreshed from production every Sunday night.",
            "Our expense claims must be filed by the 25th of each month.",
            "The VPN client needs two-factor authentication to log in.",
            "社員食堂の昼食代は会社が半額を補助する。",
        ],
        ids=["staging", "expenses", "vpn", "lunch"],
        agent_name="kb",
    )
    return mem


def test_an_unrelated_question_returns_nothing(notes: Memory) -> None:
    context = notes.recall("What is the airspeed velocity of a swallow?", agent_name="kb")
    assert context.items == () and context.render() == ""


@ON_BOTH_BACKENDS
def test_a_recall_returns_what_answers_and_not_the_budget_s_worth(notes: Memory) -> None:
    context = notes.recall("When is the staging database refreshed?", agent_name="kb")
    assert context.ids()[0] == "knowledge/staging"
    assert len(context.items) < 4  # the floor cut the rest
    best = context.items[0].score
    assert all(i.score >= 0.5 * best for i in context.items)


def test_top_k_and_min_score_bound_the_cut(notes: Memory) -> None:
    question = "When is the staging database refreshed?"
    one = notes.recall(question, agent_name="kb", top_k=1)
    assert one.ids() == ["knowledge/staging"]
    # An absolute floor above every score: nothing (a question in the past tense, whose
    # scores take no freshness prior and stay below 1).
    assert notes.recall("When was the staging database refreshed?", agent_name="kb").items
    assert (
        notes.recall(
            "When was the staging database refreshed?", agent_name="kb", min_score=1.0
        ).items
        == ()
    )
    with pytest.raises(ValidationError):
        notes.recall(question, agent_name="kb", top_k=0)
    with pytest.raises(ValidationError):
        notes.recall(question, agent_name="kb", min_score=2)


@ON_BOTH_BACKENDS
def test_collections_restrict_the_documents_asked(notes: Memory) -> None:
    notes.semantic.store("decisions", ["The staging refresh moves to Saturdays."], ids=["move"])
    question = "When is the staging database refreshed?"
    both = notes.recall(question, agent_name=None, layers=["semantic"])
    assert {"knowledge/staging", "decisions/move"} <= set(both.ids())
    only = notes.recall(question, agent_name=None, layers=["semantic"], collections=["decisions"])
    assert only.ids() == ["decisions/move"]
    with pytest.raises(UnknownCollectionError):
        notes.recall(question, agent_name=None, collections=["nowhere"])


def test_a_question_in_one_language_finds_a_document_in_the_other(notes: Memory) -> None:
    english = notes.recall("How much of my cafeteria lunch does the company pay?", agent_name="kb")
    assert english.ids()[0] == "knowledge/lunch"
    top = english.items[0]
    # It shares no word, but holds some translated (社員食堂: cafeteria; 会社: company).
    meaning, words = top.signals["meaning"], top.signals["words"]
    assert words > 0
    assert top.signals["relevance"] == pytest.approx(max(meaning * meaning, (words + meaning) / 2))
    japanese = notes.recall("VPNにログインするには何が必要？", agent_name="kb")
    assert japanese.ids()[0] == "knowledge/vpn"


def test_episodic_store_recall_and_the_pipeline_rank_episodes_alike(
    tmp_path: Path, clock: ManualClock
) -> None:
    """One scorer: with importance and time alike, EpisodicStore.recall's article formula
    orders episodes exactly as the pipeline's episodic source does, and the relevance each
    reports is the same number."""
    texts = [
        "The release failed because the migration locked the orders table.",
        "We rolled back the release and reran the migration at night.",
        "Lunch today was ramen near the station.",
        "リリースが失敗した原因は注文テーブルのロックだった。",
        "The marketing site got a new font.",
    ]
    open_cut = router(top_k=20, min_score=0.0, relative_floor=0.0)
    with Memory(tmp_path / "d", clock=clock, config=open_cut) as mem:
        mem.episodic.record_many(
            [
                {"agent_name": "ops", "event_type": "observation", "description": t, "id": f"e{i}"}
                for i, t in enumerate(texts)
            ]
        )
        question = "Why did the release fail?"
        pipeline = mem.recall(question, agent_name=None, layers=["episodic"])
        store = mem.episodic.recall(question, top_k=20, touch=False)
        scored = {
            c.episode.id: c.relevance
            for c in mem.episodic.scored(question, pool=50, dense_weight=1.0)
        }
    assert pipeline.ids() == [e.id for e in store]
    for item in pipeline.items:
        assert item.signals["relevance"] == pytest.approx(scored[item.id])


@ON_BOTH_BACKENDS
def test_scope_holds_on_every_source(mem: Memory) -> None:
    mem.episodic.record("cto", "decision", "The acquisition of Kumo closes in May", scope="private")
    mem.semantic.store(
        "knowledge",
        ["Kumo acquisition price: 40 million"],
        ids=["kumo"],
        agent_name="cto",
        scope="private",
    )
    mem.procedural.register(
        "kumo_integration", "kumo", "1. merge the teams", agent_name="cto", scope="private"
    )
    question = "What do we know about the Kumo acquisition?"
    outsider = mem.recall(question, agent_name="intern")
    assert outsider.items == ()
    owner = mem.recall(question, agent_name="cto")
    assert {"episodic", "semantic"} <= {i.layer for i in owner.items}


def test_cues_and_weights_come_from_configuration(tmp_path: Path, clock: ManualClock) -> None:
    plain = route("What changed in the quarterly plan?", NOW)
    assert not plain.past
    config = router(past_cues=("changed",), past_weights={"episodic": 1.3})
    cued = route("What changed in the quarterly plan?", NOW, config.router)
    assert cued.past and cued.weights["episodic"] == 1.3
    # Latin cues match whole words only; Japanese ones anywhere.
    assert not route("He is unchanged", NOW, config.router).past
    assert route("前回の計画は？", NOW).past
    # An experience cue weighs the episodic layer up as a past cue does, and is configured
    # apart: it does not put the question in the past.
    experience = router(experience_cues=("postmortem",), past_weights={"episodic": 1.3})
    asked = route("Who writes the postmortem?", NOW, experience.router)
    assert asked.past and asked.present and asked.weights["episodic"] == 1.3
    assert not route("Who writes the postmortem?", NOW).past


def test_diversity_keeps_near_duplicates_from_crowding_the_context(
    tmp_path: Path, clock: ManualClock
) -> None:
    docs = [
        "Deploys to production need a second reviewer.",
        "Deploys to production need a second reviewer!",
        "Deploys to production need a second reviewer, always.",
        "Production deploys are frozen from December 25 to January 5.",
    ]
    with Memory(tmp_path / "d", clock=clock) as mem:
        mem.semantic.store("knowledge", docs, ids=["r1", "r2", "r3", "freeze"])
        question = "What rules apply to production deploys?"
        plain = mem.recall(question, agent_name=None, layers=["semantic"], top_k=2)
        varied = mem.recall(question, agent_name=None, layers=["semantic"], top_k=2, diversity=0.5)
    assert "knowledge/freeze" not in plain.ids()
    assert "knowledge/freeze" in varied.ids()


def test_a_newer_restatement_ranks_first_when_enabled(tmp_path: Path) -> None:
    """Of two statements of the same fact without a subject key, the newer is the current
    one (``router.restated_similarity``)."""
    clock = ManualClock(NOW)
    config = router(restated_similarity=0.5)
    with Memory(tmp_path / "d", clock=clock, config=config) as mem:
        mem.episodic.record(
            "pm",
            "observation",
            "The weekly sync meeting is on Wednesdays now.",
            id="new",
            timestamp=NOW - timedelta(days=1),
        )
        mem.episodic.record(
            "pm",
            "observation",
            "The weekly sync meeting is on Mondays.",
            id="old",
            timestamp=NOW - timedelta(days=30),
        )
        context = mem.recall("Which day is the weekly sync meeting?", agent_name=None)
    ids = context.ids()
    assert ids.index("new") < ids.index("old")


@pytest.mark.parametrize(
    ("old", "new", "author", "present", "past"),
    [
        (
            "The weekly sync meeting is on Mondays.",
            "The weekly sync meeting moves to Wednesdays.",
            "pm",
            ("定例のシンクは何曜日？",),
            "Which day was the weekly sync meeting?",
        ),
        (  # the issue's own example: prose only, another agent, no subject key
            "定例会議は月曜日です。",
            "定例会議は今後水曜日に移します。",
            "cto",
            ("定例会議は何曜日？", "What day is the regular meeting?"),
            "定例会議は何曜日だった？",
        ),
    ],
)
def test_by_default_the_newer_restatement_answers_a_question_about_the_present(
    tmp_path: Path, old: str, new: str, author: str, present: tuple[str, ...], past: str
) -> None:
    """Of two statements of one fact, the newer comes first for a question about the present,
    in either language and whoever wrote it, even when the older scores higher (its ``why``
    says so); a question in the past tense keeps the order of the scores."""
    with Memory(tmp_path / "d", clock=ManualClock(NOW)) as mem:
        mem.episodic.record("pm", "observation", old, id="old", timestamp=NOW - timedelta(days=30))
        mem.episodic.record(author, "observation", new, id="new", timestamp=NOW - timedelta(days=2))
        for question in present:
            now = mem.recall(question, agent_name=None, layers=["episodic"])
            assert now.ids() == ["new", "old"], question
            assert now.items[0].score < now.items[1].score  # moved by the rule, not the score
            assert "a newer statement of old" in now.items[0].why
        then = mem.recall(past, agent_name=None, layers=["episodic"])
    assert then.ids() == ["old", "new"]
    assert then.items[0].score >= then.items[1].score


@pytest.mark.parametrize(
    ("talk", "old", "new", "question"),
    [
        (
            "Which day suits the weekly sync meeting? I am writing the agenda of the weekly "
            "sync meeting.",
            "The weekly sync meeting is on Mondays.",
            "The weekly sync meeting moves to Wednesdays.",
            "Which day is the weekly sync meeting?",
        ),
        (
            "定例会議は何曜日が良いか、定例会議の議題も考えたい。",
            "定例会議は月曜日の10時です。",
            "定例会議は今後水曜日の10時に移します。",
            "定例会議は何曜日？",
        ),
    ],
)
def test_a_newer_restatement_goes_above_the_older_conversation_around_its_statement(
    tmp_path: Path, talk: str, old: str, new: str, question: str
) -> None:
    """An older conversation talks around a fact and states it; a later one states it anew.
    The restatement goes above the old statement and above the rest of that conversation
    ranked right above it, which scores higher than either."""
    with Memory(tmp_path / "d", clock=ManualClock(NOW)) as mem:
        then = NOW - timedelta(days=30)
        for key, text, when, thread in [
            ("talk", talk, then, "s-old"),
            ("old", old, then + timedelta(minutes=1), "s-old"),
            ("new", new, NOW - timedelta(days=2), "s-new"),
        ]:
            mem.episodic.record(
                "user", "message", text, id=key, timestamp=when, context={"thread": thread}
            )
        context = mem.recall(question, agent_name=None, layers=["episodic"])
    assert context.ids() == ["new", "talk", "old"]
    assert context.items[0].score < context.items[1].score  # moved by the rule, not the score
    assert "a newer statement of old" in context.items[0].why
