"""Two statements of one fact at different values, read from their words.

The cut (:mod:`omoide.recall.cut`) counts two texts as one statement at a new value when the
model rates them less alike than a rewording: one sentence with other values in it
(:func:`worded_alike`), two texts in one language stating different values
(:func:`other_values`), two in different languages naming values of one kind and not the
same ones (:func:`other_kind_values`). Each text's words are read once and remembered: the
candidates of one store recur from question to question.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from omoide.text.fulltext import index_text
from omoide.text.identifiers import form, identifiers

__all__ = ["analysed", "other_kind_values", "other_values", "worded_alike"]


def worded_alike(first: str, second: str, share: float) -> bool:
    """True when the two texts' words, numbers and codes aside, agree at least ``share``
    (shared words over all their words): one sentence with other values in it."""
    a, b = _wording(first), _wording(second)
    return bool(a and b) and len(a & b) >= share * len(a | b)


def other_values(first: str, second: str) -> bool:
    """True when both texts state values (words holding a digit: ``36h``, ``16:30``, the
    ``204`` of ``B-204``) and not the same ones: a fact stated twice, at two values."""
    a, b = _values(first), _values(second)
    return bool(a and b) and a != b


def other_kind_values(first: str, second: str) -> bool:
    """True when the two texts name values of one kind (:func:`~omoide.text.identifiers.form`:
    ``36h`` and ``45h``, ``room B-204`` and ``room C-310``) and not the same ones of it: a
    fact stated at two values, which two languages write alike."""
    a, b = _kinds(first), _kinds(second)
    return any(kind in b and a[kind] != b[kind] for kind in a)


@lru_cache(maxsize=16_384)
def _kinds(text: str) -> Mapping[str, frozenset[str]]:
    """A text's identifiers by their form, remembered (candidates recur)."""
    out: dict[str, set[str]] = {}
    for token in identifiers(text):
        out.setdefault(form(token), set()).add(token)
    return {kind: frozenset(tokens) for kind, tokens in out.items()}


@lru_cache(maxsize=16_384)
def analysed(text: str) -> str:
    """A candidate's text analysed into terms, remembered: both restatement tests read it,
    and the candidates of one store recur from question to question."""
    return index_text(text)


@lru_cache(maxsize=16_384)
def _values(text: str) -> frozenset[str]:
    """A text's analysed words holding a digit (its numbers, times, codes), remembered."""
    return frozenset(t for t in analysed(text).split() if any(c.isdigit() for c in t))


@lru_cache(maxsize=16_384)
def _wording(text: str) -> frozenset[str]:
    """A text's analysed words without those holding a digit or of one character (the
    values: ``45h``, ``b`` and ``204`` of ``B-204``), remembered (candidates recur)."""
    return frozenset(
        t for t in analysed(text).split() if len(t) > 1 and not any(c.isdigit() for c in t)
    )
