"""Japanese-aware full-text analysis for FTS5."""

from __future__ import annotations

import sqlite3

from omoide.text.fulltext import (
    analyze,
    content_terms,
    coverage,
    index_text,
    match_expression,
    query_terms,
)


def test_japanese_runs_become_bigrams_and_words_stay_words() -> None:
    assert analyze("価格を決定") == ["価格", "格を", "を決", "決定"]
    assert analyze("猫") == ["猫"]
    assert analyze("Deploy ＡＰＩ v2, ﾃｽﾄ") == ["deploy", "api", "v2", "テス", "スト"]


def test_query_terms_drop_stop_words_and_particles() -> None:
    assert query_terms("What is the price of the plan?") == ["price", "plan"]
    assert query_terms("価格について") == ["価格", "格に"]
    assert query_terms("the of and") == []
    assert match_expression("the of and") is None


def test_a_hyphenated_compound_is_its_parts_and_one_word() -> None:
    assert analyze("Same-day parcels, follow‐up e-mail") == [
        *["same", "day", "parcels", "follow", "up", "e", "mail"],
        *["sameday", "followup", "email"],  # after every other term: phrases read the parts
    ]
    assert analyze("Same-day parcels", compounds=False) == ["same", "day", "parcels"]
    # Codes, dates and numbers are not words: their parts stay apart.
    assert analyze("HX-101 on 2026-12-07, e-3") == ["hx", "101", "on", "2026", "12", "07", "e", "3"]
    assert analyze("当日-便") == ["当日", "便"]
    question = "What's the latest a box can make the same-day truck?"
    assert query_terms(question) == ["latest", "box", "make", "day", "truck", "sameday"]
    assert content_terms(question, compounds=False) == ["latest", "box", "make", "day", "truck"]
    # A text writing the compound holds one term of the question more than one sharing a part.
    terms = content_terms(question)
    assert coverage(terms, "Same-day parcels leave on the 16:30 truck.") == 3 / 6
    assert coverage(terms, "Every day the 16:30 truck leaves.") == 2 / 6


def test_content_terms_drop_bigrams_holding_hiragana_unless_nothing_else_remains() -> None:
    question = "supportはQ1 budgetについて何を決めた？"
    assert "何を" in query_terms(question)
    assert content_terms(question) == ["support", "q1", "budget"]
    assert content_terms("ブランドのメインカラーは？")[:3] == ["ブラ", "ラン", "ンド"]
    assert content_terms("どうする？") == query_terms("どうする？") != []
    terms = content_terms(question)
    assert coverage(terms, "supportの決定: Q1 budgetは「a 10% cut to ads」とする。") == 1.0
    assert coverage(terms, "supportの決定: Q1 priorityは「security first」とする。") == 2 / 3


def test_match_expression_is_safe_fts5_syntax() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    docs = ["先週の価格は¥500でした", "The deployment failed on Friday", 'NEAR OR AND " *']
    for doc in docs:
        conn.execute("INSERT INTO t(body) VALUES (?)", (index_text(doc),))
    for query, expected in [
        ("価格", 1),
        ("failing deployments", 2),  # porter stemming on both sides
        ('" OR NEAR( * AND', 3),  # FTS5 syntax in user text is just text
        ("先週 deployment", None),
    ]:
        expression = match_expression(query)
        assert expression is not None
        rows = [
            r[0]
            for r in conn.execute(
                "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (expression,)
            )
        ]
        if expected is None:
            assert sorted(rows) == [1, 2]
        else:
            assert rows[0] == expected


def test_coverage() -> None:
    terms = query_terms("security and performance priority")
    assert coverage(terms, "Prioritise security over performance") == 1.0
    assert coverage(terms, "Security team meeting") == 1 / 3
    assert coverage([], "anything") == 0.0
