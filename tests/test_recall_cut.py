"""The cut's floor stands items against the store's background, not against zero.

These tests are about the cut's logic alone, so they hand it scored items directly; the
pipeline's tests (tests/test_recall_pipeline.py) cover the floor with the real embedder.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np

from omoide.recall.context import ContextItem
from omoide.recall.cut import Cut, cut
from omoide.recall.packing import dedupe
from omoide.recall.restatements import Bars
from omoide.recall.sources import Found
from omoide.recall.statements import (
    Compared,
    kind,
    other_values,
    same_values,
    two_records,
    worded_alike,
)
from omoide.testing import HashEmbedder
from omoide.text.relevance import writing, written_alike

DAY = datetime(2026, 3, 1, tzinfo=UTC)
LATER = DAY + timedelta(days=9)
HOW = Cut(top_k=10, min_score=0.05, relative_floor=0.25, pool=50)


def scored(*scores: float) -> list[Found]:
    return [
        Found(ContextItem(layer="episodic", id=f"e{i:03d}", text=f"item {i}", score=s, why=""))
        for i, s in enumerate(scores)
    ]


def kept(found: list[Found], how: Cut = HOW) -> list[str]:
    return [f.item.id for f in cut(found, how, HashEmbedder(8))]


def test_a_second_answer_far_above_a_weak_background_is_kept() -> None:
    """Two answers stand out of sixty unrelated candidates: the weaker, at a third of the
    best, is returned (a floor at half the best would have dropped it)."""
    found = scored(0.9, 0.3, *[0.08] * 60)
    assert kept(found) == ["e000", "e001"]


def test_where_many_candidates_score_alike_only_those_standing_out_are_kept() -> None:
    """Sixty candidates around 0.5 and two at 0.8: the background is high, so only the two
    that stand out pass (a floor at half the best would have let ten through)."""
    found = scored(0.8, 0.78, *[0.5 - 0.001 * i for i in range(60)])
    assert kept(found) == ["e000", "e001"]


def test_candidates_beyond_two_pools_do_not_lower_the_background() -> None:
    """The background is the median of the best ``2 × pool`` (100 here): two hundred weak
    candidates more, as a larger pool by meaning brings, leave the floor where it was."""
    found = scored(1.0, *[0.3] * 99)
    assert kept(found) == ["e000"]
    assert kept(found + scored(*[0.0] * 300)[100:]) == ["e000"]


def test_a_store_too_small_to_show_a_background_keeps_half_the_best() -> None:
    """Four candidates are all a small store holds, related or not: the median says nothing
    of a background there, so the floor is half the best score."""
    assert kept(scored(0.9, 0.5, 0.3, 0.1)) == ["e000", "e001"]


def test_no_relative_floor_keeps_everything_above_the_absolute_one() -> None:
    open_cut = Cut(top_k=10, min_score=0.2, relative_floor=0.0, pool=50)
    assert kept(scored(0.9, 0.3, 0.21, 0.19), open_cut) == ["e000", "e001", "e002"]


def test_a_newer_restatement_of_a_kept_item_is_kept_and_comes_first() -> None:
    """The newer of two statements alike in meaning passes with the older one even when its
    own score is under the floor, and for a question about the present it comes first."""
    same = np.zeros(8, np.float32)
    same[0] = 1.0
    old, new = "The weekly sync meeting is on Mondays.", "The weekly sync meeting is on Wednesdays."
    found = [
        Found(ContextItem("episodic", "old", old, 0.9, "", timestamp=DAY), same),
        Found(
            ContextItem("episodic", "new", new, 0.2, "", timestamp=DAY + timedelta(days=9)), same
        ),
    ]
    for i in range(60):  # a background of unrelated items, each alike only to itself
        other = np.zeros(8, np.float32)
        other[1 + i % 7] = 1.0
        found.append(
            Found(ContextItem("episodic", f"x{i:02d}", f"other {i}", 0.1, "", timestamp=DAY), other)
        )
    question = "Which day is the weekly sync meeting?"
    assert kept(found) == ["old"]
    present = dataclasses.replace(HOW, restated=Bars(0.8))
    assert [f.item.id for f in cut(found, present, HashEmbedder(8), question)] == ["new", "old"]


def _thread_statements(*between: tuple[str, float, str], newer: float = 0.5) -> list[Found]:
    """An older conversation (thread ``t-old``) that states a fact and talks around it, a
    newer conversation's restatement of the fact, items ``between`` (id, score, thread) and
    a background of unrelated items."""

    def unit(axis: int) -> np.ndarray:
        vector = np.zeros(8, np.float32)
        vector[axis] = 1.0
        return vector

    def item(key: str, text: str, score: float, when: datetime) -> ContextItem:
        return ContextItem("episodic", key, text, score, "", timestamp=when)

    fact = unit(0)
    found = [
        Found(
            item("o1", "Let us plan the weekly sync agenda.", 0.9, DAY),
            unit(1),
            thread="t-old",
        ),
        *(Found(item(k, f"note {k}", sc, DAY), unit(2), thread=th) for k, sc, th in between),
        Found(
            item("o2", "The weekly sync meeting is on Mondays.", 0.85, DAY),
            fact,
            thread="t-old",
        ),
        Found(
            item("new", "The weekly sync meeting is on Wednesdays.", newer, LATER),
            fact,
            thread="t-new",
        ),
    ]
    for i in range(60):
        found.append(
            Found(
                ContextItem("episodic", f"x{i:02d}", f"other {i}", 0.1, "", timestamp=DAY),
                unit(3 + i % 5),
            )
        )
    return found


def test_a_newer_restatement_goes_above_the_rest_of_the_older_conversation() -> None:
    """The newer conversation restates what the older one said: it goes above that
    statement and above the older conversation's other items ranked right above it."""
    present = dataclasses.replace(HOW, restated=Bars(0.8))
    question = "Which day is the weekly sync meeting?"
    ids = [f.item.id for f in cut(_thread_statements(), present, HashEmbedder(8), question)]
    assert ids == ["new", "o1", "o2"]
    # An item of another conversation between them stays above: only the older statement's
    # own conversation, ranked right above it, is passed.
    between = _thread_statements(("y", 0.88, "t-other"))
    ids = [f.item.id for f in cut(between, present, HashEmbedder(8), question)]
    assert ids == ["o1", "y", "new", "o2"]


def test_a_restatement_already_above_the_older_statement_goes_above_its_conversation() -> None:
    """Ranked between the older statement and its conversation's other item, the newer
    statement still goes above that conversation's account, as if it had to move."""
    present = dataclasses.replace(HOW, restated=Bars(0.8))
    question = "Which day is the weekly sync meeting?"
    found = _thread_statements(newer=0.87)
    ids = [f.item.id for f in cut(found, present, HashEmbedder(8), question)]
    assert ids == ["new", "o1", "o2"]
    between = _thread_statements(("y", 0.88, "t-other"), newer=0.86)
    ids = [f.item.id for f in cut(between, present, HashEmbedder(8), question)]
    assert ids == ["o1", "y", "new", "o2"]


def test_a_newer_statement_in_the_other_language_needs_a_lower_bar() -> None:
    """The model rates a statement and its translation less alike than two wordings in one
    language: at the same similarity (0.75) a newer English statement restates an older
    Japanese one (across languages the bar is 0.7), but not an older English one (0.8)."""
    newer = "From next week the weekly sync meeting moves to Wednesdays."
    how = dataclasses.replace(HOW, restated=Bars(0.8, across_languages=0.7))
    question = "Which day is the weekly sync meeting?"
    for older, restated in (
        ("定例の週次ミーティングは月曜日です。", True),
        ("The weekly sync meeting is on Mondays.", False),
    ):
        assert _newer_restates(question, older, newer, 0.75, how) is restated, older


def test_a_statement_in_the_other_language_is_not_held_to_the_question_s_words() -> None:
    """A newer Japanese statement restates an older English one that holds the question's
    English words: across languages only the words both write alike (numbers, codes) are
    compared, so a newer statement naming another incident code still does not restate."""
    how = dataclasses.replace(HOW, restated=Bars(0.8, across_languages=0.5))
    for question, older, newer, restated in (
        (
            "Which day is the weekly sync meeting?",
            "The weekly sync meeting is on Mondays.",
            "来週から週次ミーティングは水曜日に移します。",
            True,
        ),
        (
            "How was incident HX-162 fixed?",
            "Incident HX-162 was fixed by restarting the scanner.",
            "HX-166はスキャナの再起動で解決しました。",
            False,
        ),
    ):
        assert _newer_restates(question, older, newer, 0.75, how) is restated, question


def test_one_sentence_with_another_value_is_a_restatement_however_the_model_rates_it() -> None:
    """The same sentence naming another room rates under the similarity bar (0.6 here, the
    bar 0.8), yet it is the newer statement of the fact: its words, the values aside, are
    the older one's. A sentence about something else at the same similarity is not."""
    older = "Reminder: the weekly operations meeting is held in room B-204."
    question = "Where is the weekly operations meeting held?"
    for newer, wording, restated in (
        ("Reminder: the weekly operations meeting is held in room C-310.", 0.8, True),
        ("Reminder: the weekly operations meeting is held in room C-310.", 0.0, False),
        ("The quarterly budget review with finance is held in room C-310.", 0.8, False),
    ):
        how = dataclasses.replace(HOW, restated=Bars(0.8, wording=wording))
        assert _newer_restates(question, older, newer, 0.6, how) is restated, (newer, wording)


def test_a_rewording_restates_but_not_one_that_drops_the_value_the_question_names() -> None:
    """The newer statement may word the fact otherwise ("weekly ops sync" for "weekly
    operations meeting") and so hold fewer of the question's words: it is still the newer
    statement. What it must keep is the value the question names — of two reports alike in
    all but the incident number, the newer one about another incident restates nothing."""
    how = dataclasses.replace(HOW, restated=Bars(0.8))
    for question, older, newer, restated in (
        (
            "Which room is the weekly operations meeting in?",
            "The weekly operations meeting is held in room B-204.",
            "Reminder: weekly ops sync takes place in room C-310.",
            True,
        ),
        (
            "How is incident 1234 fixed now?",
            "Incident 1234 is fixed by restarting the scanner.",
            "Incident 5678 is fixed by restarting the scanner.",
            False,
        ),
    ):
        assert _newer_restates(question, older, newer, 0.85, how) is restated, question


def _newer_restates(question: str, older: str, newer: str, similarity: float, how: Cut) -> bool:
    """Whether ``newer`` (later, ``similarity`` alike ``older``, scoring under the floor) is
    returned above ``older`` as its restatement, among sixty unrelated items; else only
    ``older`` is returned."""
    first, near = _alike_vectors(similarity)
    found = [
        Found(ContextItem("episodic", "old", older, 0.9, "", timestamp=DAY), first),
        Found(ContextItem("episodic", "new", newer, 0.2, "", timestamp=LATER), near),
        *_background(2),
    ]
    ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
    assert ids in (["new", "old"], ["old"]), ids
    return ids == ["new", "old"]


def _alike_vectors(similarity: float) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors ``similarity`` alike (the older and the newer statement's)."""
    first = np.zeros(8, np.float32)
    first[0] = 1.0
    near = np.zeros(8, np.float32)
    near[0], near[1] = similarity, float(np.sqrt(1 - similarity**2))
    return first, near


def _background(first_axis: int) -> list[Found]:
    """Sixty unrelated items, each alike only to itself."""
    out = []
    for i in range(60):
        other = np.zeros(8, np.float32)
        other[first_axis + i % (8 - first_axis)] = 1.0
        out.append(
            Found(ContextItem("episodic", f"x{i:02d}", f"other {i}", 0.1, "", timestamp=DAY), other)
        )
    return out


def _lesson(score: float, sources: str) -> Found:
    """A document distilled from the episodes ``sources``, in a direction of its own."""
    own = np.zeros(8, np.float32)
    own[1] = 1.0
    meta = {"source": "distillation", "source_episodes": sources}
    text = "Reminder: the weekly sync meeting is on Mondays."
    item = ContextItem(
        "semantic", "decisions/distilled-lesson", text, score, "", timestamp=DAY, metadata=meta
    )
    return Found(item, own)


def test_a_distilled_lesson_ranks_no_higher_than_its_sources_and_is_restated_with_them() -> None:
    """A lesson drawn from an episode scores higher than that episode (it was embedded and
    weighed on its own) and is not alike the newer statement of the changed value; the
    episode is. The lesson falls back to its source's place, and the newer statement that
    restates the source comes before both: maintenance does not change what comes first."""
    same = np.zeros(8, np.float32)
    same[0] = 1.0
    source = ContextItem(
        "episodic", "src", "The weekly sync meeting is on Mondays.", 0.5, "", timestamp=DAY
    )
    newer = ContextItem(
        "episodic", "new", "The weekly sync meeting is on Wednesdays.", 0.45, "", timestamp=LATER
    )
    found = [_lesson(0.9, "gone,src"), Found(source, same), Found(newer, same), *_background(2)]
    plain = [f.item for f in cut(found, HOW, HashEmbedder(8))]
    assert [i.id for i in plain] == ["src", "decisions/distilled-lesson", "new"]
    assert plain[1].score == 0.5 and "no higher than its source episodes" in plain[1].why
    present = dataclasses.replace(HOW, restated=Bars(0.8))
    question = "Which day is the weekly sync meeting?"
    ids = [f.item.id for f in cut(found, present, HashEmbedder(8), question)]
    assert ids == ["new", "src", "decisions/distilled-lesson"]


def test_a_lesson_whose_sources_are_not_among_the_candidates_keeps_its_score() -> None:
    """Its sources forgotten or not found, the lesson is what the memory has: it stays first."""
    same = np.zeros(8, np.float32)
    same[0] = 1.0
    other = ContextItem("episodic", "other", "Lunch is at noon.", 0.5, "", timestamp=DAY)
    found = [_lesson(0.9, "gone"), Found(other, same), *_background(2)]
    top = cut(found, HOW, HashEmbedder(8))[0].item
    assert (top.id, top.score) == ("decisions/distilled-lesson", 0.9)


def test_top_k_places_go_to_distinct_memories() -> None:
    """Two items of one text are one memory: with two places, the second goes to the next
    distinct item, not to the copy that packing would drop (a context of one item)."""
    found = scored(0.9, 0.85, 0.8, *[0.1] * 60)
    found[1] = dataclasses.replace(found[1], item=dataclasses.replace(found[1].item, text="item 0"))
    two = dataclasses.replace(HOW, top_k=2)
    assert kept(found, two) == ["e000", "e002"]


def test_dedupe_to_a_limit_is_the_first_of_the_whole_dedupe() -> None:
    """The cut dedupes only as far as the places it fills: the same first items, copies
    skipped on the way, as deduping everything."""
    texts = ["a", "a", "b", "c", "b", "d"]
    items = [
        ContextItem(layer="episodic", id=f"e{i}", text=t, score=1 - i / 10, why="")
        for i, t in enumerate(texts)
    ]
    whole = [i.id for i in dedupe(items)]
    assert whole == ["e0", "e2", "e3", "e5"]
    for limit in range(1, 6):
        assert [i.id for i in dedupe(items, limit)] == whole[:limit]


def _statements(newer: str, relevance: tuple[float, float], similarity: float) -> list[Found]:
    """An older statement of the overtime cap, a newer text ``similarity`` alike it, each
    with its relevance to the question (the newer one scoring under the floor), and a
    background of sixty unrelated items."""
    first, near = _alike_vectors(similarity)
    old = ContextItem(
        "episodic", "old", "時間外労働は月40hまでとします。", 0.6, "", timestamp=DAY,
        signals={"relevance": relevance[0]},
    )  # fmt: skip
    new = ContextItem(
        "episodic", "new", newer, 0.2, "", timestamp=LATER, signals={"relevance": relevance[1]}
    )
    return [Found(old, first), Found(new, near), *_background(2)]


def test_a_fact_stated_at_another_value_is_its_newer_statement_below_the_bar() -> None:
    """Two wordings of the overtime cap rate 0.65 alike, under the bar (0.8): as they state
    different values, the newer is the fact at its new value (``restated_values`` 0.6). Not
    when the rule is off, nor for a newer text stating no value, the same one, or a value of
    another kind (a duration beside a monthly cap: another fact about overtime)."""
    question = "時間外の上限っていまいくつ？"
    for newer, values, restated in (
        ("今後、時間外は月36hまでに抑えてください。", 0.6, True),
        ("今後、時間外は月36hまでに抑えてください。", 0.0, False),
        ("今後、時間外はできるだけ抑えてください。", 0.6, False),
        ("今後も時間外は月40hまでに抑えてください。", 0.6, False),
        ("時間外が30分を超えたら報告してください。", 0.6, False),
    ):
        how = dataclasses.replace(HOW, restated=Bars(0.8, values=values))
        found = _statements(newer, (0.6, 0.55), 0.65)
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"]), (newer, values)


def test_values_of_one_kind_and_not_the_same_ones_state_one_fact_at_another_value() -> None:
    """A value's kind is its shape: two times, two room numbers, two areas, two caps in hours
    — whatever letters name the room or area — written in either width; a time beside a
    duration, or the same values, are not one fact at another value."""
    assert kind("B-204") == kind("C-310") == "a-0"
    assert kind("36h") == "0h" != kind("36")
    for first, second, other in (
        ("点呼の開始は06:45です。", "Roll call now starts at 07:15.", True),
        ("The weekly ops meeting is in room B-204.", "Weekly ops sync: room C-310.", True),
        ("Forklifts charge in area F3.", "Forklift charging moved to area K1.", True),
        ("時間外は月４０ｈまで。", "時間外は月36hまで。", True),
        ("点呼の開始は06:45です。", "遅れが30分を超えたら電話すること。", False),
        ("点呼の開始は06:45です。", "Reminder: roll call at 06:45.", False),
        ("点呼の開始は06:45です。", "点呼は早めに。", False),
    ):
        assert other_values(first, second) is other, (first, second)


def test_two_records_of_one_template_are_not_one_fact_at_two_values() -> None:
    """Two bills settled, two incidents opened: they differ in their code and in another value
    too, so neither is the other's newer statement. A fact at a new value changes what it
    states (the room, the cutoff from another date on) and keeps the rest."""
    for first, second, records in (
        (
            "Freight bill BL-7420 settled: ¥740,000.",
            "Freight bill BL-8965 settled: ¥804,000.",
            True,
        ),
        ("Freight bill BL-7420 settled: ¥740,000.", "運賃精算 BL-5088：¥853,000を支払済み。", True),
        (
            "Opened HX-117: the scanner on rack A2 reboots.",
            "Opened HX-126: the scanner on rack A7 hangs.",
            True,
        ),
        ("The ops meeting is in room B-204.", "The ops meeting is in room C-310.", False),
        ("From 2026-03-01 the cutoff is 16:30.", "From 2026-04-01 the cutoff is 15:50.", False),
        ("Server db-01 has 16GB of memory.", "Server db-01 now has 32GB of memory.", False),
    ):
        assert two_records(first, second) is records, (first, second)


def test_a_newer_record_of_one_template_restates_nothing() -> None:
    """However alike two bills read (0.95 here, over the bar), the newer does not pass the
    floor with the older one as its restatement, nor go before it: for a question about the
    present a chain of records would otherwise climb above the answer, one bill at a time."""
    question = "What is the fuel surcharge now?"
    older = "Freight bill BL-7420 settled: ¥740,000."
    how = dataclasses.replace(HOW, restated=Bars(0.8, values=0.6))
    assert not _newer_restates(
        question, older, "Freight bill BL-8965 settled: ¥804,000.", 0.95, how
    )
    assert _newer_restates(question, older, "Freight bill BL-7420 settled: ¥745,000.", 0.95, how)


def test_an_item_naming_the_asked_code_passes_below_a_far_standing_report() -> None:
    """Asked what fixed route R-5346, the report naming it stands far above the rest (1.0
    against a background at 0.4), and the fix naming R-5346 in the other language scores
    0.46, under the floor: it passes all the same, as an item about what is asked. An item
    naming another route at the same score does not, nor one under ``min_score``."""
    question = "route R-5346で配車アプリが出てこない件、何をして直した？"
    found = [
        Found(ContextItem("episodic", "report", "HX-193起票：route R-5346の配車アプリ。", 1.0, "")),
        Found(
            ContextItem(
                "episodic", "fix", "HX-193 closed: on route R-5346 we rebuilt it.", 0.46, ""
            )
        ),
        Found(
            ContextItem(
                "episodic", "other", "HX-342 closed: on route R-447 we rebuilt it.", 0.46, ""
            )
        ),
        Found(ContextItem("episodic", "faint", "route R-5346 again.", 0.04, "")),
        *scored(*[0.4] * 60),
    ]
    assert [f.item.id for f in cut(found, HOW, HashEmbedder(8), question)] == ["report", "fix"]
    assert [f.item.id for f in cut(found, HOW, HashEmbedder(8), "what fixed the route?")] == [
        "report"
    ]


def test_a_newer_text_that_answers_far_less_well_restates_nothing() -> None:
    """Alike in meaning as they may be, a newer text whose relevance to the question is under
    ``restated_relevance`` (0.75) of the older one's is about something else: it neither
    passes the floor with the older one nor goes before it."""
    question = "時間外の上限っていまいくつ？"
    newer = "今後、時間外は月36hまでに抑えてください。"
    for relevance, restated in (((0.6, 0.5), True), ((0.6, 0.4), False)):
        how = dataclasses.replace(HOW, restated=Bars(0.8, values=0.6, relevance=0.75))
        found = _statements(newer, relevance, 0.65)
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"]), relevance


def test_a_rewording_answers_as_well_as_the_statement_of_its_value_it_restates() -> None:
    """The cap back at 36h, in other words (残業, not the question's 時間外), answers the
    question less well than the 45h statement it updates (relevance 0.4 against 0.6, under
    ``restated_relevance``). An older statement of 36h it restates (the same value, 0.6
    alike) answered it as well: the rewording is the 45h one's newer statement. Not when
    that statement answered the question no better (0.3), nor when it named another value."""
    question = "時間外の上限っていまいくつ？"
    how = dataclasses.replace(HOW, restated=Bars(0.8, values=0.5, relevance=0.75))
    cap = np.zeros(8, np.float32)
    cap[0] = 1.0
    reworded = np.zeros(8, np.float32)
    reworded[:2] = 0.65, float(np.sqrt(1 - 0.65**2))
    earlier = np.zeros(8, np.float32)  # 0.65 alike the 45h cap, 0.6 alike the rewording
    earlier[0] = 0.65
    earlier[1] = (0.6 - 0.65 * 0.65) / reworded[1]
    earlier[2] = float(np.sqrt(1 - earlier[0] ** 2 - earlier[1] ** 2))
    for text, relevance, restated in (
        ("今後、時間外は月36hまでに抑えてください。", 0.6, True),
        ("今後、時間外は月36hまでに抑えてください。", 0.3, False),
        ("時間外労働は月40hまでとします。", 0.6, False),
    ):
        found = [
            Found(
                ContextItem(
                    "episodic", "old", "今後、時間外は月45hまでに抑えてください。", 0.6, "",
                    timestamp=DAY, signals={"relevance": 0.6},
                ),
                cap,
            ),
            Found(
                ContextItem(
                    "episodic", "earlier", text, 0.55, "",
                    timestamp=DAY - timedelta(days=9), signals={"relevance": relevance},
                ),
                earlier,
            ),
            Found(
                ContextItem(
                    "episodic", "new", "念のため再掲：月の残業上限は36hです。", 0.2, "",
                    timestamp=LATER, signals={"relevance": 0.4},
                ),
                reworded,
            ),
            *_background(3),
        ]  # fmt: skip
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        expected = ["new", "old", "earlier"] if restated else ["old", "earlier"]
        assert ids == expected, (text, relevance)


def test_a_newer_statement_about_another_identifier_restates_nothing() -> None:
    """Asked which hub route R-560 goes through, of an older note naming no route (as a
    summary may not), the newer statement that route R-982 goes through another hub is alike,
    states another value and holds more of the question's words, but names another route:
    it is another fact, not this one's new value. A newer statement of route R-560 is."""
    question = "route R-560の中継はどこ？"
    older = "中継地点はhub NGO-2とします。"
    how = dataclasses.replace(HOW, restated=Bars(0.8, values=0.6))
    for newer, restated in (
        ("route R-982の中継地点はhub SDJ-4とします。", False),
        ("route R-560の中継地点は今後hub SDJ-4とします。", True),
    ):
        found = _statements(newer, (0.6, 0.55), 0.65)
        found[0] = dataclasses.replace(
            found[0], item=dataclasses.replace(found[0].item, text=older)
        )
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"]), newer


def test_for_a_question_about_the_present_the_fresher_answer_comes_first() -> None:
    """Two answers pass the cut, the older scoring a little higher: ordered by freshness
    (``freshness_order`` 0.5) the fresher comes first. The items returned are the same as
    without it: a fresh item under the floor is not brought in, however fresh."""

    def item(key: str, score: float, freshness: float, axis: int) -> Found:
        vector = np.zeros(8, np.float32)
        vector[axis] = 1.0
        signals = {"relevance": score, "freshness": freshness}
        return Found(ContextItem("episodic", key, key, score, "", signals=signals), vector)

    found = [
        item("older", 0.6, 0.2, 0),
        item("newer", 0.55, 0.9, 1),
        item("fresh-noise", 0.15, 1.0, 2),
        *_background(3),
    ]
    by_score = kept(found)
    assert by_score == ["older", "newer"]
    fresher = [
        f.item for f in cut(found, dataclasses.replace(HOW, freshness_order=0.5), HashEmbedder(8))
    ]
    assert [i.id for i in fresher] == ["newer", "older"]
    assert "ordered by freshness 0.90" in fresher[0].why


def _across(newer: str, meaning: float, similarity: float) -> list[Found]:
    """The overtime cap stated in Japanese, and a newer English text ``similarity`` alike
    it with ``meaning`` for the question (its relevance is its meaning squared, under the
    floor), in a background of sixty unrelated items."""
    found = _statements(newer, (0.6, meaning * meaning), similarity)
    old, new = found[0].item, found[1].item
    older = "今後、時間外は月45hまでに抑えてください。"
    signals = {"relevance": 0.6, "meaning": 0.7}
    found[0] = dataclasses.replace(
        found[0], item=dataclasses.replace(old, text=older, signals=signals)
    )
    signals = {"relevance": meaning * meaning, "meaning": meaning}
    found[1] = dataclasses.replace(found[1], item=dataclasses.replace(new, signals=signals))
    return found


def test_a_fact_stated_at_another_value_in_the_other_language_is_its_newer_statement() -> None:
    """The model rates a restatement in the other language 0.30-0.35 alike, as it rates
    unrelated text: a newer English statement of the cap at another value of the same kind
    (``36h`` after ``45h``) is the fact at its new value (``restated_values_across`` 0.3),
    judged against the older by meaning, as it cannot hold the question's Japanese words.
    Not when the rule is off, nor for the same value, a value of another kind, or a text
    that means the question far less than the older one does."""
    question = "時間外の上限っていまいくつ？"
    cap = "Overtime cap changes to 36h per month, effective now."
    for newer, across, meaning, restated in (
        (cap, 0.3, 0.6, True),
        (cap, 0.0, 0.6, False),
        ("Overtime cap stays at 45h per month.", 0.3, 0.6, False),
        ("Overtime claims are due by 3/15 each month.", 0.3, 0.6, False),
        (cap, 0.3, 0.4, False),
    ):
        how = dataclasses.replace(
            HOW,
            restated=Bars(
                0.8, across_languages=0.5, values=0.6, values_across=across, relevance=0.75
            ),
        )
        found = _across(newer, meaning, 0.32)
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"]), (newer, across, meaning)


def test_a_value_another_fact_names_in_the_older_language_is_no_new_value() -> None:
    """The English cap at 36h is 0.32 alike the Japanese cap at 45h, as unrelated text across
    the languages can be. When a Japanese text newer than the 45h one names 36h of another
    fact (night standby) and is more alike the English text (0.5), the 36h is that fact's:
    the English text is no new value of the cap. Less alike it (0.2), or older than the 45h
    statement, it claims nothing, and the English text is the cap's new value."""
    question = "時間外の上限っていまいくつ？"
    cap = "Overtime cap changes to 36h per month, effective now."
    how = dataclasses.replace(
        HOW, restated=Bars(0.8, across_languages=0.5, values=0.6, values_across=0.3, relevance=0.75)
    )
    standby = "念のため再掲：夜間の待機は月36hまでです。"
    for alike, when, restated in (
        (0.5, DAY + timedelta(days=4), False),
        (0.2, DAY + timedelta(days=4), True),
        (0.5, DAY - timedelta(days=4), True),
    ):
        found = _across(cap, 0.6, 0.32)
        near = found[1].vector
        assert near is not None
        other = np.zeros(8, np.float32)
        other[1] = alike / near[1]
        other[2] = float(np.sqrt(1 - other[1] ** 2))
        found.append(
            Found(ContextItem("episodic", "standby", standby, 0.1, "", timestamp=when), other)
        )
        ids = [f.item.id for f in cut(found, how, HashEmbedder(8), question)]
        assert ids == (["new", "old"] if restated else ["old"]), (alike, when)


#: The restatement bars of the default configuration, within and across languages.
ACROSS = dataclasses.replace(
    HOW, restated=Bars(0.8, across_languages=0.5, values=0.5, values_across=0.3)
)


def test_across_languages_values_of_one_shape_need_a_word_in_common() -> None:
    """Across languages the model rates a restatement as alike as unrelated text, so values
    of one kind are the evidence — with a word one text holds of the other, translated: a
    deadline at 16:30 is not the roll call at 06:45 moved, a roll call at 07:15 is."""
    question = "点呼は何時から？"
    older = "ドライバー各位、点呼の開始は06:45です。"
    for newer, restated in (
        ("Drivers: the roll call now begins at 07:15.", True),
        ("Same-day parcels must be handed over by 16:30.", False),
    ):
        assert _newer_restates(question, older, newer, 0.45, ACROSS) is restated, newer


def test_a_japanese_sentence_naming_a_latin_code_restates_across_languages() -> None:
    """A Japanese sentence naming "room C-310" states its fact in Japanese: as the newer
    statement of an English one it is held to the bars across languages (values of one kind
    0.3 alike), which the model's 0.45 passes, not to those within one language (0.5)."""
    question = "運行ミーティングってどこでやってる？"
    older = "The weekly operations meeting is held in room B-204."
    for newer, restated in (
        ("来週以降、運行会議はroom C-310でやります。", True),
        ("From next week the operations meeting is held in room C-310.", False),
    ):
        assert _newer_restates(question, older, newer, 0.45, ACROSS) is restated, newer


def test_a_numbers_unit_is_part_of_its_kind() -> None:
    """A number's kind holds the unit written with it (a sign, a currency, a word): a score of
    84 and a reply within 4 hours, car 118 and 8°C, are not one fact at two values, while
    two delays in minutes, two percentages or two amounts in yen are."""
    score = "support finished a task with quality score 84."
    reply = "決定: サポートは4 hours以内に顧客へ返信する。"
    assert not other_values(score, reply)
    assert not other_values(score, reply, across=True)
    assert not other_values("118号車の給油完了。", "チルド便は荷室8°C以下を保つこと。")
    assert other_values("遅れが30分を超えたら電話。", "遅れが45分を超えたら電話。")
    assert other_values("Reply within 4 hours.", "Reply within 2 hours.")
    assert not other_values("Reply within 4 hours.", "Load 2 pallets.")
    assert other_values("The score was 84 and rising.", "The score was 90.")  # no unit
    assert other_values("Fuel surcharge is 12.5%.", "燃油サーチャージ率は14.0%。", across=True)
    assert other_values("Paid ¥454,000.", "精算：¥339,000を支払済み。", across=True)


def test_across_languages_a_number_with_a_word_for_its_unit_is_no_value_of_a_kind() -> None:
    """A number whose unit is a word ("4 hours", "4時間") takes its kind from a word written in
    each text's language: across languages two such numbers are not one fact at two
    values, while times, codes and amounts with a sign still are."""
    assert other_values("Reply within 4 hours.", "Reply within 2 hours.")
    assert not other_values("Reply within 4 hours.", "2時間以内に返信する。", across=True)
    assert other_values("点呼の開始は06:45です。", "Roll call now starts at 07:15.", across=True)
    assert other_values("時間外は月45hまで。", "Overtime cap: 36h a month.", across=True)
    assert other_values("会議はroom B-204。", "The meeting is in room C-310.", across=True)


def test_the_pairwise_comparisons_of_a_recall_are_the_definitions_of_each_pair() -> None:
    """``Compared`` reads every pair of a recall's candidates at once; each of its answers is
    the per-pair definition's, in one language and across two."""
    texts = [
        "点呼の開始は06:45です。",
        "Roll call now starts at 07:15.",
        "Reminder: roll call at 06:45.",
        "The weekly ops meeting is in room B-204.",
        "Weekly ops sync: room C-310.",
        "The weekly ops meeting is in room C-310.",
        "時間外は月４０ｈまで。",
        "時間外は月36hまで。",
        "Overtime cap: 36h a month.",
        "遅れが30分を超えたら電話すること。",
        "Reply within 4 hours.",
        "2時間以内に返信する。",
        "Fuel surcharge is 12.5%.",
        "燃油サーチャージ率は14.0%。",
        "Freight bill BL-7420 settled: ¥740,000.",
        "運賃精算 BL-8965：¥804,000を支払済み。",
        "Lunch rotation as usual today.",
        "",
    ]
    scripts = [writing(t) for t in texts]
    differ = np.array([[not written_alike(a, b) for b in scripts] for a in scripts])
    compared = Compared(texts, differ)
    worded, other = compared.worded_alike(0.8), compared.other_values()
    same, records = compared.same_values(), compared.two_records()
    for a, first in enumerate(texts):
        for b, second in enumerate(texts):
            across = bool(differ[a, b])
            assert worded[a, b] == worded_alike(first, second, 0.8), (first, second)
            assert other[a, b] == other_values(first, second, across=across), (first, second)
            assert same[a, b] == same_values(first, second, across=across), (first, second)
            assert records[a, b] == two_records(first, second), (first, second)
    assert other.any() and same.any() and worded.any() and differ.any() and records.any()
