"""Two statements of one fact at different values, read from their words.

The cut (:mod:`omoide.recall.restatements`) counts two texts as one statement at a new value
when the model rates them less alike than a rewording: one sentence with other values in it
(:func:`worded_alike`), or two texts naming values of one kind and not the same ones
(:func:`other_values`) — a time after a time, a room after a room, a number after a number
in its unit, not a duration after a time. Each text's words are read once and remembered:
the candidates of one store recur from question to question.

The functions of two texts (:func:`worded_alike`, :func:`other_values`, :func:`same_values`,
:func:`two_records`) are the definitions; a recall asks :class:`Compared`, which answers them
for every pair of its candidates at once, and a test holds each answer to its definition.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from functools import cache, lru_cache
from typing import NamedTuple

import numpy as np

from omoide.text.fulltext import STOP_WORDS, index_text
from omoide.text.identifiers import form, identifier_tokens

__all__ = [
    "Compared",
    "analysed",
    "claimed_values",
    "kind",
    "other_values",
    "same_values",
    "two_records",
    "worded_alike",
]

#: Letters written right before a number, once a form (digits as ``0``) is taken.
_PREFIX = re.compile(r"[a-z]+(?=[-.#]?0)")
#: The kind of a bare number: digits, maybe with a decimal point or thousands separators.
_BARE = re.compile(r"0(?:[.,]0)*")
#: What follows a number as its unit: a sign, a katakana word, a kanji, an English word.
_UNIT = re.compile(
    r" ?(?:(?P<mark>%|°[CF]?|‰|[\u30a1-\u30fa\u30fc]+|[\u3005\u4e00-\u9fff])|(?P<word>[A-Za-z]+))"
)
#: The values a text names of one kind, sorted: a plain tuple of strings, which the garbage
#: collector stops walking once it has seen it (a set it would walk on every full collection).
Values = tuple[str, ...]
#: Currency signs written before an amount.
_CURRENCY = frozenset("¥$€£")
#: A number written right after one of these, or right before one of the others, is part
#: of a longer token (``B-204``, ``1.5``, ``36h``), not the number itself.
_JOINED_BEFORE = frozenset(string.ascii_letters + string.digits + ".,:/#-")
_JOINED_AFTER = frozenset(string.ascii_letters + string.digits)


def worded_alike(first: str, second: str, share: float) -> bool:
    """True when the two texts' words, numbers and codes aside, agree at least ``share``
    (shared words over all their words): one sentence with other values in it."""
    a, b = _wording(first), _wording(second)
    return bool(a and b) and len(a & b) >= share * len(a | b)


def other_values(first: str, second: str, *, across: bool = False) -> bool:
    """True when the two texts name values of one kind (:func:`kind`: ``36h`` and ``45h``,
    ``06:45`` and ``07:15``, ``room B-204`` and ``room C-310``; a number with its unit,
    ``30分`` and ``45分``, ``12.5%`` and ``14.0%``) and not the same ones of it: one fact
    stated at two values. Values of different kinds (the roll call at ``06:45``, a call once
    a delay passes ``30`` minutes; car ``118`` and ``8°C``) are two facts, however alike the
    texts read. ``across`` two languages, a number written without a unit (``84``) has no
    kind; a unit that is a word is written in each text's own language (``4 hours``,
    ``2時間``), so only a sign (``%``, ``°C``, ``¥``) makes two numbers one kind there."""
    a, b, shared = _compared(first, second, across)
    return any(a[k] != b[k] for k in shared)


def same_values(first: str, second: str, *, across: bool = False) -> bool:
    """True when the two texts name values of one kind and, of every kind both name, the
    same ones: "念のため再掲：月の残業上限は36hです。" and "今後、時間外は月36hまでに抑えて
    ください。" state one fact at one value, however differently worded. ``across`` two
    languages, bare numbers are not read (:func:`other_values`)."""
    a, b, shared = _compared(first, second, across)
    return bool(shared) and all(a[k] == b[k] for k in shared)


def _compared(
    first: str, second: str, across: bool
) -> tuple[Mapping[str, Values], Mapping[str, Values], list[str]]:
    """Both texts' values by kind, and the kinds both name (``across`` languages, not the
    numbers written without a unit)."""
    a, b = _kinds(first), _kinds(second)
    return a, b, [k for k in a if k in b and not (across and _BARE.fullmatch(k))]


class Compared:
    """:func:`worded_alike`, :func:`other_values`, :func:`same_values` and :func:`two_records`
    of every pair of ``texts`` at once, as matrices: a recall compares each of its
    candidates with each other one, and per pair in Python that took most of the time of a
    question about the present. Each text's words and values are read once (sets as rows
    of 0/1; shared members counted by one matrix product), and ``differ[a, b]`` says which
    pairs are in two languages."""

    def __init__(self, texts: Sequence[str], differ: np.ndarray) -> None:
        read = [_members(t) for t in texts]
        self._shared_words = _overlaps([r.words for r in read])
        self._word_counts = np.array([len(r.words) for r in read], dtype=np.float32)
        every = _shared([r.kinds for r in read], [r.values for r in read])
        codes = _shared([r.codes for r in read], [r.code_values for r in read])
        self._values_differ = every[0] - every[1]
        self._codes_differ = codes[0] - codes[1]
        # across languages, numbers written without a unit have no kind
        unit = _shared([r.unit_kinds for r in read], [r.unit_values for r in read])
        self._shared_kinds = np.where(differ, unit[0], every[0])
        self._equal_kinds = np.where(differ, unit[1], every[1])

    def worded_alike(self, share: float) -> np.ndarray:
        """:func:`worded_alike` of every pair."""
        counts = self._word_counts
        union = counts[:, None] + counts[None, :] - self._shared_words
        some = (counts[:, None] > 0) & (counts[None, :] > 0)
        return np.asarray(some & (self._shared_words >= share * union))

    def other_values(self) -> np.ndarray:
        """:func:`other_values` of every pair (``across`` where the languages differ)."""
        return np.asarray(self._shared_kinds > self._equal_kinds)

    def same_values(self) -> np.ndarray:
        """:func:`same_values` of every pair (``across`` where the languages differ)."""
        return np.asarray((self._shared_kinds > 0) & (self._shared_kinds == self._equal_kinds))

    def two_records(self) -> np.ndarray:
        """:func:`two_records` of every pair."""
        return np.asarray((self._values_differ >= 2) & (self._codes_differ >= 1))


class _Members(NamedTuple):
    """What a text holds: its values by kind (:func:`_kinds`); and each member as a key (its
    hash): its words, the kinds of values it names, and each kind with its values; the same
    without bare numbers, and of codes (letters before a number) alone."""

    by_kind: Mapping[str, Values]
    words: np.ndarray
    kinds: np.ndarray
    values: np.ndarray
    unit_kinds: np.ndarray
    unit_values: np.ndarray
    codes: np.ndarray
    code_values: np.ndarray


@lru_cache(maxsize=16_384)
def _members(text: str) -> _Members:
    """A text's :class:`_Members`, remembered: candidates recur. The one cache of a text's
    reading here, so that each text adds few objects for the garbage collector to walk
    (every full collection walks them all: a recall's tail)."""
    kinds = _read_kinds(text)
    unit = [k for k in kinds if not _BARE.fullmatch(k)]
    coded = [k for k in kinds if k.startswith("a")]
    return _Members(
        kinds,
        _keys(_wording(text)),
        _keys(kinds),
        _keys((k, kinds[k]) for k in kinds),
        _keys(unit),
        _keys((k, kinds[k]) for k in unit),
        _keys(coded),
        _keys((k, kinds[k]) for k in coded),
    )


def _keys(members: Iterable[object]) -> np.ndarray:
    """Each member's hash: two distinct members share one with odds of about one in 2^64."""
    return np.fromiter((hash(m) for m in members), dtype=np.int64)


def _overlaps(rows: Sequence[np.ndarray]) -> np.ndarray:
    """For each pair of sets (each a row of keys), how many members both hold: one product
    of their incidence matrices (a 0/1 column per member at least two sets hold; a member
    of one set alone adds only to that set's own count, the diagonal)."""
    keys = np.concatenate([*rows, np.zeros(0, dtype=np.int64)])
    _, cells, counts = np.unique(keys, return_inverse=True, return_counts=True)
    shared = counts[cells] > 1
    columns = np.cumsum(counts > 1) - 1  # each shared member's column
    incidence = np.zeros((len(rows), int((counts > 1).sum())), dtype=np.float32)
    holder = np.repeat(np.arange(len(rows)), [len(r) for r in rows])
    incidence[holder[shared], columns[cells[shared]]] = 1.0
    out = incidence @ incidence.T
    np.fill_diagonal(out, [len(r) for r in rows])
    return out


def _shared(
    kinds: Sequence[np.ndarray], values: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair of texts (their kinds, and each kind with its values, as keys): how
    many kinds both name, and of how many they name the same values."""
    return _overlaps(kinds), _overlaps(values)


def two_records(first: str, second: str) -> bool:
    """True when the two texts name different codes of one kind (letters before a number:
    ``BL-7420`` and ``BL-8965``) and different values of another kind too (``¥740,000`` and
    ``¥804,000``): two records of one template — two bills settled, two incidents opened on
    two racks — not one fact at a new value, which changes what it states and keeps the rest
    ("room B-204" to "room C-310"; "16:30" to "15:50" from another date on)."""
    a, b = _kinds(first), _kinds(second)
    differ = [k for k in a if k in b and a[k] != b[k]]
    return len(differ) >= 2 and any(k.startswith("a") for k in differ)


def claimed_values(
    texts: Sequence[str],
    times: Sequence[datetime | None],
    similar: np.ndarray,
    differ: np.ndarray,
) -> Callable[[int, int], bool]:
    """``claimed(a, b)``: of two texts in different languages (``differ``) naming values of
    one kind, the newer one's value is another fact's — a text in the older one's language,
    newer than it, names that value and is more ``similar`` to the newer one than the older
    one is. "Same-day parcels must be handed over by 16:30." is the cutoff "宅配の当日出荷は
    16:30締め" names, not the roll call "点呼の開始は06:45" at a new time."""

    @cache
    def holders() -> dict[tuple[str, str], list[int]]:  # read once, if a pair needs it
        out: dict[tuple[str, str], list[int]] = {}
        for i, text in enumerate(texts):
            for k, named in _kinds(text).items():
                for value in named:
                    out.setdefault((k, value), []).append(i)
        return out

    def claimed(a: int, b: int) -> bool:
        first, second = times[a], times[b]
        if first is None or second is None or first == second:
            return False
        old, new, since = (a, b, first) if first < second else (b, a, second)
        before, after = _kinds(texts[old]), _kinds(texts[new])
        for k in after.keys() & before.keys():
            for value in set(after[k]).difference(before[k]):
                for c in holders().get((k, value), ()):
                    when = times[c]
                    if (
                        c not in (a, b)
                        and when is not None
                        and when > since
                        and not differ[c, old]
                        and similar[new, c] > similar[a, b]
                    ):
                        return True
        return False

    return claimed


def kind(value: str) -> str:
    """The kind of a value (an identifier, :mod:`omoide.text.identifiers`): its form, every
    run of digits one ``0``, with letters written before a number as one ``a`` — ``B-204``
    and ``C-310`` are ``a-0``, ``F3`` and ``K1`` are ``a0``: a code's letters name the value,
    not its kind — while a unit written into it stays (``36h`` is ``0h``). A number's unit
    written after it in the text joins its kind where the text is read (:func:`_units`)."""
    return _PREFIX.sub("a", form(value))


def _kinds(text: str) -> Mapping[str, Values]:
    """A text's values by their kind, remembered (candidates recur); full-width digits read
    as digits. A bare number's kind holds its unit (:func:`_units`): car ``118`` of
    "118号車" and the ``8`` of "8°C" are not one value of two facts."""
    return _members(text).by_kind


def _read_kinds(text: str) -> dict[str, Values]:
    """:func:`_kinds`, read afresh."""
    text = unicodedata.normalize("NFKC", text)
    out: dict[str, set[str]] = {}
    for token in {t.casefold() for t in identifier_tokens(text)}:
        shape = kind(token)
        if _BARE.fullmatch(shape):
            for unit in _units(text, token):
                out.setdefault(unit.replace("0", shape, 1), set()).add(token)
        else:
            out.setdefault(shape, set()).add(token)
    return {k: tuple(sorted(tokens)) for k, tokens in out.items()}


def _units(text: str, number: str) -> set[str]:
    """The kinds of ``number`` where ``text`` writes it, ``0`` standing for the number: a
    currency sign before it (``¥0``), or the unit after it — a sign (``0%``, ``0°c``), a
    katakana word (``0パレット``), the first kanji (``0号`` of "118号車", ``0分``), an English
    word (``0 pallet``); plain ``0`` where nothing follows."""
    out: set[str] = set()
    at = text.find(number) if number else -1
    while at >= 0:
        before = text[at - 1] if at else ""
        end = at + len(number)
        if before not in _JOINED_BEFORE and text[end : end + 1] not in _JOINED_AFTER:
            out.add((before if before in _CURRENCY else "") + "0" + _unit(text, end))
            at = text.find(number, end)
        else:
            at = text.find(number, at + 1)
    return out or {"0"}


def _unit(text: str, at: int) -> str:
    """The unit written at ``at``, right after a number, as it joins the number's kind: a
    sign or a Japanese word as written, an English word singular after a space; ``""`` for
    none (nothing, or a stop word: "84 and …")."""
    unit = _UNIT.match(text, at)
    if unit is None:
        return ""
    if unit["mark"]:
        return unit["mark"].casefold()
    word = unit["word"].casefold()
    if word in STOP_WORDS:
        return ""
    plural = len(word) > 3 and word.endswith("s") and not word.endswith("ss")
    return " " + (word[:-1] if plural else word)


@lru_cache(maxsize=16_384)
def analysed(text: str) -> str:
    """A candidate's text analysed into terms, remembered: both restatement tests read it,
    and the candidates of one store recur from question to question."""
    return index_text(text)


def _wording(text: str) -> frozenset[str]:
    """A text's analysed words without those holding a digit or of one character (the
    values: ``45h``, ``b`` and ``204`` of ``B-204``)."""
    return frozenset(
        t for t in analysed(text).split() if len(t) > 1 and not any(map(str.isdigit, t))
    )
