"""Identifiers: tokens with a digit, as written and case-folded."""

from __future__ import annotations

from omoide.text.identifiers import codes, form, identifier_tokens, identifiers, names_another


def test_identifiers_are_tokens_with_digits() -> None:
    assert identifiers("分析パイプラインで障害 E-15436: returned 502 errors") == {"e-15436", "502"}
    assert identifiers("Fixed E-03981: we pinned the client library to 2.3.1.") == {
        "e-03981",
        "2.3.1",
    }
    assert identifiers("請求書INV-003-ceoを支払った: ¥120,000") == {"inv-003-ceo", "120,000"}
    assert identifiers("hrの決定: Q1 priorityは「security before performance」") == {"q1"}
    assert identifiers("Processed the support queue.") == frozenset()
    assert identifiers("PO#5395で発注データが二重に") == {"po#5395"}


def test_tokens_keep_their_case_and_first_order() -> None:
    text = "Was E-24174 like e-24174 or INV-9? E-24174 again."
    assert identifier_tokens(text) == ["E-24174", "e-24174", "INV-9"]
    assert identifiers(text) == {"e-24174", "inv-9"}


def test_codes_are_the_identifiers_with_a_letter() -> None:
    assert codes("route R-5346で配車アプリが出てこない件、PO#5868も") == ["R-5346", "PO#5868"]
    assert codes("What did we fix on rack E7 in 2024, for 3 racks?") == ["E7"]
    assert codes("What happened in 2024?") == []


def test_the_form_of_an_identifier_hides_its_digits_and_the_letters_against_them() -> None:
    """A prefix joined by ``-`` or ``#`` names the kind (an incident, an order); letters
    written right against a number are part of the value (rack ``A2``, rack ``D4``)."""
    assert form("E-03424") == form("e-02365") == form("E-2365") == "e-0"
    assert form("PO#889") == form("po#5868") == "po#0"
    assert form("Q1") == form("q4") == form("D4") == form("A2") == "a0"
    assert form("SEC-065") != form("E-03424")
    assert form("HX-166") != form("BL-2256")


def test_a_text_names_another_identifier_of_the_asked_form() -> None:
    assert names_another(["E-03424"], "E-02365を修正: rolled back the config")
    assert names_another(["Q1"], "hrの決定: Q2 budgetは「a 10% cut to ads」")
    assert names_another(["D4"], "Opened HX-117: the handheld scanner on rack A2 reboots.")
    # It names the asked one (too), or nothing of that form: not about something else.
    assert not names_another(["E-03424"], "Fixed E-03424: we rotated the expired TLS certificate.")
    assert not names_another(["e-03424"], "Fixed E-03424 after E-03400 was closed.")
    assert not names_another(["Q1"], "Q1 budget, as in Q2")
    assert not names_another(["E-03424"], "Security incident SEC-065: a leaked API key.")
    assert not names_another(["E-03424"], "Processed the support queue.")
    # Plain numbers (years, amounts) have no form worth comparing.
    assert not names_another(["2023"], "We moved in 2022.")
    assert not names_another([], "E-02365")
