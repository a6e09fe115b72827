"""Token counters."""

from __future__ import annotations

import importlib.util

import pytest

from omoide.errors import ConfigError
from omoide.providers.tokens import E5TokenCounter, TiktokenCounter


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


def test_tiktoken_counter_works_offline_or_says_how_to_install() -> None:
    if importlib.util.find_spec("tiktoken") is None:
        with pytest.raises(ConfigError, match="omoide\\[tiktoken\\]"):
            TiktokenCounter()
    else:  # pragma: no cover - depends on the optional extra
        assert TiktokenCounter().count("hello world") == 2
