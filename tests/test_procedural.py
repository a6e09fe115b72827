"""Layer 4: triggers, selection, outcome averaging, versions, rollback, bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from omoide import ManualClock, Memory
from omoide.errors import AlreadyExistsError, NotFoundError, ValidationError
from omoide.layers.procedural import trigger_match

pytestmark = pytest.mark.both_engines


@pytest.mark.parametrize(
    ("trigger", "task", "expected"),
    [
        ("write_article", "write_article", 3),
        ("write_article", "WRITE_ARTICLE", 3),
        ("write_article", "write_article_fast", 0),
        ("deploy:*", "deploy:production", 2),
        ("deploy:*", "rollback:production", 0),
        ("~記事", "技術記事を書く", 1),
        ("~article", "Write a blog ARTICLE", 1),
        ("write_article|article:*|~記事", "article:blog", 2),
        ("write_article|article:*|~記事", "write_article", 3),
        ("~ｄｅｐｌｏｙ", "deploy the app", 1),  # full-width folded by NFKC
        ("~", "anything", 0),
    ],
)
def test_trigger_matching(trigger: str, task: str, expected: int) -> None:
    assert trigger_match(trigger, task) == expected


def test_get_procedure_picks_by_the_articles_score(mem: Memory) -> None:
    proc = mem.procedural
    proc.register(
        "article_v1",
        "~記事|~article",
        "Outline → draft → edit",
        success_rate=0.9,
        avg_quality_score=6.0,
    )  # 0.54 + 0.24 = 0.78
    proc.register(
        "article_v2",
        "~記事|~article",
        "Research → outline → draft → AEO check",
        success_rate=0.7,
        avg_quality_score=9.5,
    )  # 0.42 + 0.38 = 0.80
    proc.register("deploy", "deploy:*", "Run tests, tag, deploy, watch metrics")
    best = proc.get_procedure("技術記事を書く")
    assert best is not None and best.name == "article_v2"
    assert best.selection_score == pytest.approx(0.8)
    assert [p.name for p in proc.matches("write an article")] == ["article_v2", "article_v1"]
    assert proc.get_procedure("deploy:staging").name == "deploy"  # type: ignore[union-attr]
    assert proc.get_procedure("make coffee") is None


def test_update_from_outcome_is_an_ema(mem: Memory, clock: ManualClock) -> None:
    mem.procedural.register(
        "review", "code_review", "Read the diff twice.", success_rate=0.5, avg_quality_score=5.0
    )
    clock.advance(days=1)
    after = mem.procedural.update_from_outcome("review", 9.0, True)
    assert after.success_rate == pytest.approx(0.9 * 0.5 + 0.1 * 1.0)
    assert after.avg_quality_score == pytest.approx(0.9 * 5.0 + 0.1 * 9.0)
    assert after.execution_count == 1 and after.last_updated == clock.now()
    after = mem.procedural.update_from_outcome("review", 2.0, False)
    assert after.success_rate == pytest.approx(0.9 * 0.55)
    assert after.avg_quality_score == pytest.approx(0.9 * 5.4 + 0.1 * 2.0)


def test_evolve_keeps_versions_and_rollback_restores_one(mem: Memory) -> None:
    proc = mem.procedural
    proc.register("summarise", "summarise", "Summarise in 3 bullets.")
    proc.update_from_outcome("summarise", 8.0, True)
    v2 = proc.evolve("summarise", "Summarise in 1 sentence.")
    assert v2.version == 2 and v2.template == "Summarise in 1 sentence."
    proc.update_from_outcome("summarise", 1.0, False)
    proc.update_from_outcome("summarise", 1.0, False)
    history = proc.history("summarise")
    assert [(h.version, h.template, h.execution_count, h.current) for h in history] == [
        (1, "Summarise in 3 bullets.", 1, False),
        (2, "Summarise in 1 sentence.", 2, True),
    ]
    assert history[1].success_rate < history[0].success_rate  # v2 is doing worse
    back = proc.rollback("summarise", 1)
    assert back.version == 1 and back.template == "Summarise in 3 bullets."
    assert back.success_rate == pytest.approx(history[0].success_rate)
    v3 = proc.evolve("summarise", "Summarise in 2 bullets.", trigger="summarise|~要約")
    assert v3.version == 3 and [h.version for h in proc.history("summarise")] == [1, 2, 3]
    assert proc.get_procedure("議事録を要約して") == proc.get("summarise")


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda p: p.update_from_outcome("known", 11, True), "quality_score"),
        (lambda p: p.update_from_outcome("known", -1, True), "quality_score"),
        (lambda p: p.update_from_outcome("known", float("nan"), True), "quality_score"),
        (lambda p: p.update_from_outcome("known", 5, "yes"), "success"),
        (lambda p: p.register("new", "", "template"), "trigger"),
        (lambda p: p.register("new", "|~", "template"), "trigger"),
        (lambda p: p.register("new", "x", ""), "template"),
        (lambda p: p.register("new", "x", "t", success_rate=2), "success_rate"),
        (lambda p: p.evolve("known", 42), "new_template"),
        (lambda p: p.rollback("known", "1"), "version"),
        (lambda p: p.get_procedure(""), "task_type"),
    ],
)
def test_bad_input_changes_nothing(mem: Memory, call: Any, field: str) -> None:
    mem.procedural.register("known", "known", "Do the thing.")
    before = (mem.procedural.get("known"), mem.procedural.history("known"))
    with pytest.raises(ValidationError) as err:
        call(mem.procedural)
    assert err.value.field == field
    assert (mem.procedural.get("known"), mem.procedural.history("known")) == before
    assert mem.procedural.count() == 1


def test_unknown_and_duplicate_procedures(mem: Memory) -> None:
    with pytest.raises(NotFoundError):
        mem.procedural.update_from_outcome("ghost", 5, True)
    with pytest.raises(NotFoundError):
        mem.procedural.evolve("ghost", "t")
    mem.procedural.register("p", "p", "t")
    with pytest.raises(NotFoundError):
        mem.procedural.rollback("p", 9)
    with pytest.raises(AlreadyExistsError):
        mem.procedural.register("p", "p", "other")
    assert mem.procedural.register("p", "p", "other", exist_ok=True).template == "t"


def test_procedures_survive_a_restart_in_a_new_process(
    mem: Memory, data_dir: Path, run_python: Any
) -> None:
    mem.procedural.register("deploy", "deploy:*", "v1")
    mem.procedural.evolve("deploy", "v2")
    mem.procedural.update_from_outcome("deploy", 7.5, True)
    mem.close()
    result = run_python(
        """
        import json, sys
        from omoide import Memory
        with Memory(sys.argv[1]) as mem:
            p = mem.procedural.get_procedure("deploy:prod")
            print(json.dumps({"name": p.name, "template": p.template, "version": p.version,
                              "runs": p.execution_count,
                              "versions": [h.version for h in mem.procedural.history("deploy")]}))
        """,
        str(data_dir),
    )
    assert result == {
        "name": "deploy",
        "template": "v2",
        "version": 2,
        "runs": 1,
        "versions": [1, 2],
    }
