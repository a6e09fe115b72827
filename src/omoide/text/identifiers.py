"""Identifiers: the tokens of a text that name one specific thing.

Any run of ASCII letters and digits with at least one digit, possibly joined by ``-`` ``.``
``,`` ``:`` ``/`` or ``#`` — incident codes (``E-04512``), invoice and order numbers
(``INV-003-ceo``, ``PO#5395``), versions (``2.3.1``), amounts (``1,200``), quarters (``Q3``).
Distillation never merges episodes naming different identifiers
(:mod:`omoide.pipelines.distill`). Recall ranks down an item that names another identifier of
the form a question asks about (``router.other_identifier_factor``,
:mod:`omoide.recall.scoring`): full text and meaning rate ``HX-166`` as they rate ``HX-162``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

__all__ = ["codes", "form", "identifier_tokens", "identifiers", "names_another"]

_IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[-.,:/#][A-Za-z0-9]+)*")
_DIGITS = re.compile(r"[0-9]+")
#: Letters written right against a number (``A2``, ``D4``): part of the value, not its kind.
_VALUE_LETTERS = re.compile(r"[a-z]+(?=[0-9])")


def identifier_tokens(text: str) -> list[str]:
    """The identifiers in ``text`` as written, each once, in order of appearance."""
    if not _DIGITS.search(text):  # most texts name none: skip the tokenising
        return []
    found = (t for t in _IDENTIFIER.findall(text) if _DIGITS.search(t))
    return list(dict.fromkeys(found))


def codes(text: str) -> list[str]:
    """The identifiers in ``text`` with a letter (``R-5346``, ``PO#5868``, rack ``E7``), as
    written: the codes of one specific thing, where a plain number (a year, an amount) may be
    anything."""
    return [t for t in identifier_tokens(text) if any(c.isalpha() for c in t)]


@lru_cache(maxsize=16_384)
def identifiers(text: str) -> frozenset[str]:
    """The identifiers ``text`` names, case-folded (for comparing two texts); remembered, as
    every recall asking for an identifier reads them from each candidate, and candidates
    recur."""
    return frozenset(token.casefold() for token in identifier_tokens(text))


@lru_cache(maxsize=16_384)
def form(identifier: str) -> str:
    """The form of an identifier: case-folded, every run of digits one ``0`` (``E-03424`` →
    ``e-0``): how many digits a number has does not make it another kind of thing
    (``HX-87`` and ``HX-108``, ``PO#889`` and ``PO#5868``); and letters written right against
    a number one ``a``: they are part of the value (rack ``A2`` and rack ``D4``, ``a0``),
    where a prefix joined by ``-`` or ``#`` names the kind (``HX-`` an incident, ``BL-`` a
    bill)."""
    return _DIGITS.sub("0", _VALUE_LETTERS.sub("a", identifier.casefold()))


def names_another(asked: Iterable[str], text: str) -> bool:
    """True if ``text`` names none of the ``asked`` identifiers but another of the same form
    as one of them: ``E-02365`` when ``E-03424`` was asked for, ``Q2`` for ``Q1`` — about
    another incident or quarter. Only asked identifiers with a letter have a form worth
    comparing (plain numbers such as years or amounts do not)."""
    wanted, forms = _asked(tuple(asked))
    if not forms:
        return False
    held = identifiers(text)
    return not held & wanted and any(form(h) in forms for h in held)


@lru_cache(maxsize=256)
def _asked(asked: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """The asked identifiers case-folded, and the forms of those with a letter: remembered,
    as a recall asks :func:`names_another` of each of its candidates."""
    wanted = frozenset(a.casefold() for a in asked)
    return wanted, frozenset(form(a) for a in wanted if any(c.isalpha() for c in a))
