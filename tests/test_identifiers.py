"""Identifiers: tokens with a digit, as written and case-folded."""

from __future__ import annotations

from omoide.identifiers import identifier_tokens, identifiers


def test_identifiers_are_tokens_with_digits() -> None:
    assert identifiers("分析パイプラインで障害 E-15436: returned 502 errors") == {"e-15436", "502"}
    assert identifiers("Fixed E-03981: we pinned the client library to 2.3.1.") == {
        "e-03981",
        "2.3.1",
    }
    assert identifiers("請求書INV-003-ceoを支払った: ¥120,000") == {"inv-003-ceo", "120,000"}
    assert identifiers("hrの決定: Q1 priorityは「security before performance」") == {"q1"}
    assert identifiers("Processed the support queue.") == frozenset()


def test_tokens_keep_their_case_and_first_order() -> None:
    text = "Was E-24174 like e-24174 or INV-9? E-24174 again."
    assert identifier_tokens(text) == ["E-24174", "e-24174", "INV-9"]
    assert identifiers(text) == {"e-24174", "inv-9"}
