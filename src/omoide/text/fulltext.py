"""Full-text analysis for SQLite FTS5, in Japanese and English.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, which leaves a Japanese
sentence as one long token, and the ``trigram`` tokenizer cannot match words shorter than
three characters (価格, 先週, 方針 ...). omoide therefore analyses text itself before it
reaches FTS5: runs of Japanese, Chinese or Korean characters become overlapping character
bigrams (a single character stays a unigram), and other words stay words, lower-cased after
NFKC normalisation. A hyphenated compound of letters ("same-day", "follow-up") is its parts
and, after the text's other terms, also one word ("sameday"): a question naming the compound
finds the texts that write it by a term rarer than its parts, and holds one term more of
such a text than of one that only shares a part ("every day"). The FTS5 table then uses
``porter unicode61``, which stems English words and leaves the bigrams alone. Queries go
through the same analysis, lose English stop words, and become an OR of terms ranked by BM25.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "analyze",
    "content_terms",
    "coverage",
    "index_text",
    "match_expression",
    "query_terms",
    "term_key",
]

_CJK_CHARS = (
    "\u3005\u3006\u3007"  # 々 〆 〇
    "\u3040-\u309f"  # hiragana
    "\u30a0-\u30ff"  # katakana (incl. ー)
    "\u31f0-\u31ff"  # katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uac00-\ud7af"  # hangul syllables
)
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
_TOKEN = re.compile(f"[{_CJK_CHARS}]+|[^\\W_]+")
#: Words of letters joined by hyphens ("same-day", "follow-up"): indexed as their parts and
#: as one word, so a question naming the compound finds it by a term rarer than its parts.
_COMPOUND = re.compile("(?<![\\w-])[^\\W\\d_]+(?:[-\u2010\u2011][^\\W\\d_]+)+(?![\\w-])")
_HIRAGANA_ONLY = re.compile("^[\u3040-\u309f]+$")
_HIRAGANA = re.compile("[\u3040-\u309f]")

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "doesn",
        "didn",
        "ll",
        "ve",
        "re",
        "d",
        "m",
    ]
)


def analyze(text: str, *, compounds: bool = True) -> list[str]:
    """Terms of ``text``: words, and bigrams of Japanese/Chinese/Korean runs; then, unless
    ``compounds`` is False, each hyphenated compound as one word ("same-day" is "same",
    "day" and, after every other term, "sameday": a phrase is still matched word by word)."""
    normalised = unicodedata.normalize("NFKC", text).lower()
    spaced = _CJK_RUN.sub(lambda m: f" {m.group(0)} ", normalised)
    terms: list[str] = []
    for match in _TOKEN.finditer(spaced):
        token = match.group(0)
        if _CJK_RUN.fullmatch(token):
            if len(token) == 1:
                terms.append(token)
            else:
                terms.extend(token[i : i + 2] for i in range(len(token) - 1))
        else:
            terms.append(token)
    if compounds:
        terms.extend(_compounds(spaced))
    return terms


def _compounds(text: str) -> list[str]:
    """The hyphenated compounds of a normalised, lower-cased ``text``, each as one word."""
    return [
        re.sub("[-\u2010\u2011]", "", m.group(0))
        for m in _COMPOUND.finditer(text)
        if not _CJK_RUN.search(m.group(0))
    ]


def index_text(text: str, *, compounds: bool = True) -> str:
    """The analysed form of ``text`` that is stored in an FTS5 column (``compounds`` False:
    without the compounds as one word, the form a phrase is searched by)."""
    return " ".join(analyze(text, compounds=compounds))


def query_terms(query: str, *, compounds: bool = True) -> list[str]:
    """The distinct terms of a query that full-text search looks for.

    English stop words are dropped; so are hiragana-only bigrams (mostly particles and verb
    endings) when the query has other terms. A hyphenated compound is looked for as one
    word too ("same-day" is rarer than "day"), unless ``compounds`` is False.
    """
    analysed = analyze(query, compounds=compounds)
    terms = [t for t in dict.fromkeys(analysed) if t not in STOP_WORDS]
    content = [t for t in terms if not _HIRAGANA_ONLY.match(t)]
    return content or terms


def content_terms(query: str, *, compounds: bool = True) -> list[str]:
    """The terms of a query that say what it is about: :func:`query_terms` without the
    bigrams holding hiragana (何を, 決め: particles and verb endings beside a word), unless
    nothing else remains. The share of these a text holds is its :func:`coverage`: a text
    holding a compound the question names holds one term more than a text holding its
    parts apart. ``compounds=False`` leaves the compounds out (their parts stay): the
    words a word list can translate, which knows no compound."""
    terms = query_terms(query, compounds=compounds)
    return [t for t in terms if not _HIRAGANA.search(t)] or terms


def term_key(term: str) -> str:
    """The form two terms are compared in (see below)."""
    # A light stand-in for stemming: English words agree on their first five letters
    # (prioritise/priority, deploy/deployment); CJK bigrams must match exactly.
    return term[:5] if term.isascii() and term.isalpha() else term


def coverage(terms: list[str], text: str) -> float:
    """Share of ``terms`` (from :func:`query_terms`) that occur in ``text``, in [0, 1].

    BM25 normalised by the best candidate rates a document matching one query word out of
    five as highly as one matching all five; multiplying by coverage keeps a single shared
    keyword from outranking a document that means what was asked.
    """
    if not terms:
        return 0.0
    present = {term_key(t) for t in analyze(text)}
    return sum(1 for t in terms if term_key(t) in present) / len(terms)


def match_expression(query: str, *, max_terms: int = 64) -> str | None:
    """An FTS5 MATCH expression for ``query`` (OR of quoted terms), or None if it has none.

    Terms are quoted, so no user text is ever read as FTS5 syntax.
    """
    terms = query_terms(query)
    if not terms:
        return None
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms[:max_terms])
