"""Sentence splitting and chunking on Japanese, English and unpunctuated text."""

from __future__ import annotations

import itertools

import pytest

from omoide.providers.chunking import chunk_text, split_sentences
from omoide.providers.tokens import E5TokenCounter


def test_split_sentences_japanese_and_english() -> None:
    text = "今日は晴れ。明日は雨かな？いや、晴れる！Dr. Smith said hello. Then he left!\n\nNew para"
    sentences = split_sentences(text)
    assert "".join(sentences) == text
    assert sentences[:3] == ["今日は晴れ。", "明日は雨かな？", "いや、晴れる！"]
    assert "Then he left!\n\n" in sentences
    assert sentences[-1] == "New para"


def test_decimals_and_versions_do_not_end_sentences() -> None:
    assert split_sentences("Version 3.14 is out. Upgrade now.") == [
        "Version 3.14 is out. ",
        "Upgrade now.",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "".join(
            f"エージェント{i}号は毎朝進捗を報告する。遅れたら？リーダーに連絡！" for i in range(80)
        ),
        " ".join(
            f"Sentence number {i} explains one more detail of the system." for i in range(150)
        ),
        "区切りのない日本語の長い文章" * 200,  # no punctuation at all
        "x" * 5000,  # no spaces, no sentences
    ],
    ids=["japanese", "english", "japanese-unpunctuated", "no-breaks"],
)
def test_chunks_fit_the_window_and_keep_all_text(counter: E5TokenCounter, text: str) -> None:
    chunks = chunk_text(text, max_tokens=120, overlap_tokens=20, count=counter.count)
    assert len(chunks) > 1
    assert all(counter.count(c) <= 120 for c in chunks)
    # Every character survives, in order: the chunks cover the text front to back.
    position = 0
    for chunk in chunks:
        found = text.find(chunk[:20], max(0, position - len(chunk)))
        assert found != -1
        position = found + len(chunk)
    assert text.rstrip().endswith(chunks[-1][-20:])
    joined = "".join(chunks)
    for word in set(text.replace("。", " ").split()[:50]):
        assert word in joined


def test_consecutive_chunks_overlap_by_whole_sentences(counter: E5TokenCounter) -> None:
    text = "".join(f"第{i}条は大切なルールです。" for i in range(100))
    chunks = chunk_text(text, max_tokens=60, overlap_tokens=15, count=counter.count)
    for first, second in itertools.pairwise(chunks):
        first_sentences, second_sentences = split_sentences(first), split_sentences(second)
        shared = [s for s in second_sentences if s in first_sentences]
        assert shared == second_sentences[: len(shared)]  # the overlap opens the next chunk
        assert first.endswith("".join(shared))  # ... and closes the previous one
        assert 0 < sum(counter.count(s) for s in shared) <= 15


def test_short_text_is_one_chunk(counter: E5TokenCounter) -> None:
    assert chunk_text("短い。", max_tokens=50, count=counter.count) == ["短い。"]
    with pytest.raises(ValueError):
        chunk_text("x", max_tokens=0, count=counter.count)


def test_a_long_unbroken_text_is_cut_in_linear_time(counter: E5TokenCounter) -> None:
    """A long run of one letter (no sentence, clause or space breaks) is cut into pieces
    within the budget that restore the text; measuring only a window per piece keeps the
    number of token counts proportional to the pieces, not to the text's length squared."""
    text = "a" * 200_000
    calls = 0

    def counting(value: str) -> int:
        nonlocal calls
        calls += 1
        return counter.count(value)

    chunks = chunk_text(text, max_tokens=500, overlap_tokens=0, count=counting)
    assert "".join(chunks) == text
    assert all(counter.count(c) <= 500 for c in chunks)
    assert calls < 40 * len(chunks)
