"""How relevant a stored text is to a question: its words and its meaning, on one scale.

Every ranker of omoide — ``EpisodicStore.recall`` and each source of ``Memory.recall`` —
rates relevance with :func:`relevance`, from two signals in [0, 1]:

* **words**: the text's full-text BM25 divided by the best BM25 among the candidates of the
  same query, times the share of the question's content words the text holds
  (:func:`word_share`) — BM25 normalised alone rates a text sharing one word of five as highly
  as one sharing all five;
* **meaning**: the cosine of the question's and the text's embeddings, calibrated so that
  unrelated texts score 0 and the same meaning 1
  (:meth:`~omoide.providers.embeddings.Embedder.calibrate`).

Relevance is their weighted mean, ``(words + dense_weight × meaning) / (1 + dense_weight)``,
except for a text in another language than the question (:func:`same_language`): it cannot be
expected to share the question's words, so its words signal is the share of the question's
words whose translation it holds (:func:`~omoide.text.lexicon.cross_share`, through a
bundled Japanese-English word list), and its relevance is its meaning squared, or the mean
when the words it holds (translated, or a name, a number, an identifier) make that higher. Squared,
because meaning alone is less evidence than words and meaning that agree: a translation of
the answer (meaning 0.9) keeps most of it (0.81), a vague likeness (0.4) no more than a text
in the question's language without its words gets (half its meaning, 0.2). (The embedder
removes the model's language axis, so meaning across the two languages is on the scale of
meaning within one: :mod:`omoide.providers.language_axis`; and a share of the direction every
question shares, so texts close to any question do not outrank the answer to this one:
:mod:`omoide.providers.question_centre`.) Priors then multiply relevance:
:func:`prior` (a writer's importance, an item's recency), 1 at their neutral value.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import cache, lru_cache
from typing import NamedTuple

from omoide.text.fulltext import content_terms, term_key
from omoide.text.lexicon import cross_share

__all__ = [
    "Writing",
    "languages",
    "prior",
    "rate",
    "relevance",
    "same_language",
    "scripts_present",
    "word_share",
    "words_signal",
    "writing",
    "written_alike",
]

_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff66-\uff9f]")
_LATIN = re.compile(r"[A-Za-z]")
_HIRAGANA = re.compile(r"[\u3041-\u309f]")
#: A text is in a script when at least this share of its letters is of that script.
SCRIPT_SHARE = 0.2


def languages(text: str) -> frozenset[str]:
    """The scripts a text is written in: ``"cjk"`` (Japanese, Chinese, Korean) and/or
    ``"latin"`` — each when at least :data:`SCRIPT_SHARE` of its letters are of it."""
    return _scripts(text[:400])


@lru_cache(maxsize=16_384)
def _scripts(sample: str) -> frozenset[str]:
    """:func:`languages` of a text's first 400 characters, remembered: every recall asks it
    of each candidate, and the candidates of one store recur."""
    sample = unicodedata.normalize("NFKC", sample)
    cjk = len(_CJK.findall(sample))
    latin = len(_LATIN.findall(sample))
    letters = cjk + latin
    if letters == 0:
        return _scripts_of()
    # Latin letters count by word: a Japanese sentence naming "CI" is not English.
    return _scripts_of(
        *(["cjk"] if cjk / letters >= SCRIPT_SHARE else []),
        *(["latin"] if latin / letters >= SCRIPT_SHARE or cjk == 0 else []),
    )


@cache
def _scripts_of(*names: str) -> frozenset[str]:
    """One set of scripts, shared by every text written in them: a cache holding one set
    per text would give the garbage collector thousands of objects to walk."""
    return frozenset(names)


class Writing(NamedTuple):
    """How a text is written, for telling whether two texts are in one language: the script
    most of its letters are in (of its first 400 characters; Japanese whenever it holds
    hiragana), and every script it has a letter of."""

    main: frozenset[str]
    present: frozenset[str]


def writing(text: str) -> Writing:
    """:class:`Writing` of ``text`` (remembered: candidates recur from question to question)."""
    return _writing(text[:400])


@lru_cache(maxsize=16_384)
def _writing(sample: str) -> Writing:
    sample = unicodedata.normalize("NFKC", sample)
    cjk = len(_CJK.findall(sample))
    latin = len(_LATIN.findall(sample))
    present = tuple(s for s, n in (("cjk", cjk), ("latin", latin)) if n)
    if not present:
        return _written((), present)
    # Hiragana is Japanese grammar (its particles and endings): a sentence holding it is
    # written in Japanese however many letters its English names take ("検討の結果、PO#5265は
    # Kaede Packagingへ発注します。").
    japanese = _HIRAGANA.search(sample) is not None
    return _written(("cjk" if cjk >= latin or japanese else "latin",), present)


@cache
def _written(main: tuple[str, ...], present: tuple[str, ...]) -> Writing:
    """One :class:`Writing`, shared by every text written so (as :func:`_scripts_of`)."""
    return Writing(frozenset(main), frozenset(present))


def written_alike(first: Writing, second: Writing) -> bool:
    """True when two texts are in one language: each has letters of the script the other is
    mostly written in (or either has none). A Japanese sentence naming "room C-310" and an
    English one are in two — the English one can hold none of its Japanese words — but two
    texts mixing both scripts ("supportの決定: …" and "決定: サポートは4 hours以内…") write
    some of each other's words, and the model rates them as it rates one language."""
    if not first.main or not second.main:
        return True
    return first.main <= second.present and second.main <= first.present


def scripts_present(text: str) -> frozenset[str]:
    """Every script with at least one letter in ``text``: whatever part of it
    :func:`languages` reads, its scripts are among these."""
    sample = unicodedata.normalize("NFKC", text)
    found = {"cjk"} if _CJK.search(sample) else set()
    if _LATIN.search(sample):
        found.add("latin")
    return frozenset(found)


def same_language(question: frozenset[str], text: frozenset[str]) -> bool:
    """True when the text shares a script with the question (or either has none)."""
    return not question or not text or bool(question & text)


def word_share(terms: Iterable[str], analysed: str) -> float:
    """Share of the question's content ``terms`` (:func:`~omoide.text.fulltext.content_terms`)
    found in ``analysed``, a text already analysed into terms (as stored for full text).

    Terms compare by :func:`~omoide.text.fulltext.term_key`: an English word by its first five
    letters (so a stored word starting with them matches), anything else whole."""
    wanted = _patterns(tuple(terms))
    if not wanted:
        return 0.0
    padded = f" {analysed} "
    return sum(pattern in padded for pattern in wanted) / len(wanted)


@lru_cache(maxsize=1024)
def _patterns(terms: tuple[str, ...]) -> tuple[str, ...]:
    """What each term is looked for as in a padded analysed text (:func:`word_share`),
    remembered: a recall checks one question's terms against every candidate."""
    patterns = []
    for term in terms:
        key = term_key(term)
        whole = not (len(key) == 5 and key.isascii() and key.isalpha())
        patterns.append(f" {key} " if whole else f" {key}")
    return tuple(patterns)


def words_signal(bm25: float, best: float, share: float) -> float:
    """The words signal in [0, 1]: BM25 relative to the best candidate's, times the share."""
    if best <= 0 or bm25 <= 0:
        return 0.0
    return min(1.0, bm25 / best) * share


def relevance(words: float, meaning: float, *, dense_weight: float, comparable: bool) -> float:
    """Words and meaning fused (see the module's docstring); ``comparable`` False for a text
    in another language than the question, rated by its meaning squared (or the fused value,
    if the words it shares make that higher)."""
    fused = (words + dense_weight * meaning) / (1 + dense_weight)
    return fused if comparable else max(meaning * meaning, fused)


def rate(
    query: str,
    bm25: Sequence[float],
    analysed: Sequence[str],
    meaning: Sequence[float],
    texts: Sequence[str],
    *,
    dense_weight: float,
) -> list[tuple[float, float]]:
    """The words signal and the relevance of each candidate of one query, rated together:
    ``bm25`` its full-text score (0 when its words do not match), ``analysed`` the terms it
    is searched by, ``meaning`` its calibrated similarity, ``texts`` what it says (for its
    language). The one rating of every ranker: the episodes' and the documents' sources and
    ``SemanticStore.query``."""
    terms = content_terms(query)
    asked = languages(query)
    best = max(bm25, default=0.0)
    rated = []
    for score, words_of, similar, text in zip(bm25, analysed, meaning, texts, strict=True):
        words = words_signal(score, best, word_share(terms, words_of))
        comparable = same_language(asked, languages(text))
        if not comparable:  # its words are the question's words it holds translated
            words = max(words, cross_share(query, text))
        rated.append(
            (words, relevance(words, similar, dense_weight=dense_weight, comparable=comparable))
        )
    return rated


def prior(value: float, strength: float) -> float:
    """The factor a prior in [0, 1] gives relevance: ``1 + strength × (value − 0.5)``, 1 at the
    neutral 0.5 (``strength`` in [0, 2) keeps it positive)."""
    return 1.0 + strength * (value - 0.5)
