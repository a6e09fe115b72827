"""Token counters."""

from __future__ import annotations

import dataclasses
import html
import importlib.util
import random
from datetime import datetime

import pytest

from omoide.errors import ConfigError
from omoide.providers.tokens import (
    BlockBound,
    E5TokenCounter,
    TiktokenCounter,
    TokenCounter,
    count_rendered,
    rendered_text,
)
from omoide.recall.context import FOOTER, ContextItem, render_context, render_header, render_item


def test_e5_counts_without_special_tokens(counter: E5TokenCounter) -> None:
    assert counter.count("") == 0
    assert counter.count("hello") == 1
    japanese = "日本語のテキストを書いています。" * 10
    assert 0 < counter.count(japanese) < len(japanese)
    assert counter.count_many(["hello", ""]) == [1, 0]


def test_truncate_finds_the_longest_prefix_within_budget(counter: E5TokenCounter) -> None:
    text = "エージェントのメモリ設計について説明します。" * 20
    cut = counter.truncate(text, 30)
    assert text.startswith(cut) and counter.count(cut) <= 30
    assert counter.count(text[: len(cut) + 2]) > 30
    assert counter.truncate(text, 0) == ""
    assert counter.truncate("short", 100) == "short"


def test_truncate_counts_a_long_text_a_few_times(counter: E5TokenCounter) -> None:
    """The longest prefix, as a plain binary search finds it, from fewer counts than one
    per halving of the text's length."""
    calls = []

    class Counting(E5TokenCounter):
        def count(self, text: str) -> int:
            calls.append(len(text))
            return super().count(text)

    counting = Counting()
    texts = (
        "エージェントのメモリ設計について説明します。" * 60,
        "The operator asked us to state the new arrival time in every email. " * 40,
    )
    for text in texts:
        for budget in (7, 120, 400):
            calls.clear()
            cut = counting.truncate(text, budget)
            assert text.startswith(cut) and counter.count(cut) <= budget
            assert counter.count(text[: len(cut) + 1]) > budget
            assert len(calls) < len(text).bit_length(), (budget, len(calls))


def test_tiktoken_counter_works_offline_or_says_how_to_install() -> None:
    if importlib.util.find_spec("tiktoken") is None:
        with pytest.raises(ConfigError, match="omoide\\[tiktoken\\]"):
            TiktokenCounter()
    else:  # pragma: no cover - depends on the optional extra
        assert TiktokenCounter().count("hello world") == 2


# -- stored counts and the bound of a rendered block --------------------------------------

SENTENCES = [
    "昨日の会議で第1四半期の予算が承認された。",
    "デプロイは設定変更の後に失敗し、ロールバックされた。",
    "「キャッシュ層」の設計を見直す必要がある。",
    "エラー率は3.5%まで下がった(目標は1%)。",
    "田中さんがE-03424の件をCTOに報告した。",
    "We decided the Q1 budget in yesterday's meeting.",
    "The deploy failed after a config change & was rolled back.",
    "Use `if a < b && b > c` to guard the <retry> loop.",
    "Error rate fell to 3.5% (target: 1%); see ticket E-03424.",
    'Alice\'s notes: "ship it" — approved by the CEO.',
]


def _texts(n: int) -> list[str]:
    rng = random.Random(7)
    out = []
    for _ in range(n):
        words = [rng.choice(SENTENCES) for _ in range(rng.randint(1, 8))]
        text = rng.choice([" ", "", "\n"]).join(words)
        if rng.random() < 0.2:
            text = rng.choice([" ", "\n", "  "]) + text + rng.choice([" ", "\n", ""])
        out.append(text)
    return out


def _item(rng: random.Random, text: str) -> ContextItem:
    return ContextItem(
        layer=rng.choice(["working", "episodic", "semantic", "procedural"]),
        id=rng.choice([f"ep-{rng.getrandbits(64):016x}", "knowledge/h-3f2a", "deploy-checklist"]),
        text=text,
        score=1.0,
        why="",
        author=rng.choice(["", "cto", "田中", "distilled from alice, bob"]),
        timestamp=rng.choice([None, datetime(2026, 3, rng.randint(1, 28), rng.randint(0, 23))]),
    )


def _parts(n: int, item: ContextItem) -> list[str]:
    """The block of ``render_item`` as header parts that begin or end at a space or newline."""
    when = f' time="{item.timestamp:%Y-%m-%d %H:%M}"' if item.timestamp else ""
    author = f' author="{html.escape(item.author, quote=True)}"' if item.author else ""
    attributes = [f'\n<memory n="{n}" layer="{item.layer}"', f' id="{item.id}"']
    attributes += [a for a in (author, when) if a]
    attributes[-1] += ">\n"
    return [*attributes, "\n</memory>"]


def test_a_stored_count_and_its_header_bound_the_rendered_block(counter: E5TokenCounter) -> None:
    """Japanese and English texts: the bound is never under the true count of the block
    (nor of the whole context), and is close to it."""
    rng = random.Random(11)
    bound = BlockBound(counter)
    blocks: list[str] = []
    total_bound = 0
    slack = []
    for n, text in enumerate(_texts(300), start=1):
        item = _item(rng, text)
        block = render_item(n, item, item.text)
        parts = _parts(n, item)
        assert "".join(parts[:-1]) + rendered_text(text) + parts[-1] == "\n" + block
        upper = bound.bound(count_rendered(counter, text), *parts)
        true = counter.count(block)
        assert true <= upper, (text, block)
        slack.append(upper - true)
        blocks.append(block)
        total_bound += upper
    head = render_header("予算は? what was decided", "cto")
    rendered = render_context(head, blocks)
    whole = bound.part(head) + total_bound + bound.part("\n" + FOOTER) + len(blocks) + 1
    assert counter.count(rendered) <= whole
    # Tight enough to pack by: a few tokens per block.
    assert max(slack) <= 4 and sum(slack) / len(slack) <= 2


def test_the_bound_counts_each_header_part_once(counter: E5TokenCounter) -> None:
    calls: list[str] = []

    class Counting(TokenCounter):
        def count(self, text: str) -> int:
            calls.append(text)
            return counter.count(text)

    bound = BlockBound(Counting())
    for _ in range(3):
        bound.bound(10, ' layer="episodic"', ' author="cto"')
    assert calls == [' layer="episodic"', ' author="cto"']
    assert bound.bound(0) == 0


def test_a_scored_item_keeps_every_other_field() -> None:
    item = ContextItem(
        "semantic",
        "knowledge/doc-1",
        "経費精算は毎月25日までに申請してください。",
        0.0,
        "semantic",
        author="agent-3",
        timestamp=datetime(2026, 5, 1),
        tokens=21,
        truncated=True,
        metadata={"source": "import"},
        signals={"words": 0.5},
    )
    for f in dataclasses.fields(ContextItem):  # a field added later must be set above
        if f.default is not dataclasses.MISSING:
            assert getattr(item, f.name) != f.default, f.name
        elif f.default_factory is not dataclasses.MISSING:
            assert getattr(item, f.name) != f.default_factory(), f.name
    signals = {"words": 0.5, "meaning": 0.8}
    assert item.scored(0.7, "semantic; relevance 0.65", signals) == dataclasses.replace(
        item, score=0.7, why="semantic; relevance 0.65", signals=signals
    )


def test_a_noted_item_adds_to_its_why_and_keeps_the_rest() -> None:
    item = ContextItem(
        "episodic", "ep-1", "定例会議は水曜日に移します。", 0.42, "episodic", signals={"words": 0.5}
    )
    noted = item.noted("a newer statement of ep-0")
    assert noted == dataclasses.replace(item, why="episodic; a newer statement of ep-0")
    bare = dataclasses.replace(item, why="")
    assert bare.noted("a newer statement of ep-0").why == "a newer statement of ep-0"
