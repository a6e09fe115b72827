"""Words across languages: which of a question's words a text in the other language holds.

A question in English about a text in Japanese (or the reverse) cannot share its words, and
by meaning alone the bundled multilingual model often rates an answer in the other language
below a text in the question's language on the same topic (:mod:`omoide.text.relevance`).
A bilingual word list gives the words signal back to such texts: a Japanese word of the
question counts as held by an English text when one of its English glosses is there, and an
English word by a Japanese text when one of the Japanese words glossed by it alone is there.

The word list is the common entries and the loanwords of JMdict (``lexicon-ja-en.tsv.gz``,
built by ``tools/build_lexicon.py``; © the Electronic Dictionary Research and Development
Group, Creative Commons Attribution-ShareAlike 4.0): about 66,000 Japanese forms with the
English glosses of their first three senses; katakana loanwords are most of the technical
words a fleet writes in Japanese (デプロイ, ロールバック), common in JMdict or not. Japanese is
split into its words by the longest form of the list at each position (a word of a text is
found as a word, not inside a longer one: "pass" is not in パスワード); English words compare
whole, with or without an inflection on either side ("fonts" holds "font", "deploys" the
gloss "deploying"; a prefix would let "everything" stand for "every"), and two words of a
text written open compare as the compound ("roll back" holds "rollback").
"""

from __future__ import annotations

import gzip
import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from itertools import pairwise

from omoide.text.fulltext import STOP_WORDS, content_terms

__all__ = ["cross_share", "japanese_words", "translated_alike"]

_CJK_RUN = re.compile(r"[\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]+")
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")
_KANA_OR_KANJI = re.compile(r"[\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[a-z]+")
_PARENTHESES = re.compile(r"\([^)]*\)")
#: Words of glosses that say nothing of the meaning ("to do something (esp. ...)").
_GLOSS_FILLER = frozenset(
    {
        "to",
        "one",
        "oneself",
        "something",
        "someone",
        "somebody",
        "thing",
        "person",
        "etc",
        "esp",
        "e",
        "g",
        "be",
        "get",
        "make",
        "do",
        "one's",
        "kind",
        "sort",
    }
)
#: A Japanese form glossed by at most this many English words stands for each of them.
_REVERSE_WORDS = 2


class _Lexicon:
    """The word list, read once: Japanese form → English keys, English key → Japanese forms."""

    def __init__(self, lines: list[str]) -> None:
        # Tuples, not sets: the garbage collector stops walking a tuple of strings once it
        # has seen it, and walks every set on each full collection (35,000 of them here).
        self.english: dict[str, tuple[str, ...]] = {}
        reverse: dict[str, set[str]] = {}
        for line in lines:
            form, _, glosses = line.rstrip("\n").partition("\t")
            keys: set[str] = set()
            for gloss in glosses.split("; "):
                words = _gloss_keys(gloss)
                inflected = _inflected(words)
                keys |= inflected
                # Only a short gloss says what the form *is*; a long one describes it. An
                # English word is looked for as Japanese words of two characters or more that
                # text is split into: a single kanji occurs in most texts, each of which would
                # then be split (allowing them changed no answer of the fleets or the
                # bilingual set), and a hiragana-only word is never one of a text's words.
                if 0 < len(words) <= _REVERSE_WORDS and len(form) > 1 and not _HIRAGANA.match(form):
                    for key in inflected:
                        reverse.setdefault(key, set()).add(form)
            if keys:
                self.english[form] = tuple(sorted(keys))
        # The lengths of the forms starting with each character, longest first.
        lengths: dict[str, set[int]] = {}
        for form in self.english:
            lengths.setdefault(form[0], set()).add(len(form))
        self.lengths = {c: tuple(sorted(n, reverse=True)) for c, n in lengths.items()}
        self.japanese = {key: tuple(sorted(forms)) for key, forms in reverse.items()}


def _gloss_keys(gloss: str) -> set[str]:
    words = _ENGLISH_WORD.findall(_PARENTHESES.sub(" ", gloss.lower()))
    return {
        _stem(w) for w in words if len(w) > 1 and w not in STOP_WORDS and w not in _GLOSS_FILLER
    }


def _inflected(words: set[str]) -> set[str]:
    """Gloss words with their inflections taken off as a text's words are ("deploying" stands
    for "deploys" too), where what is left is a word of four letters or more: a shorter one
    is as likely another word ("times" is not "tim")."""
    return words | {form for word in words for form in _forms(word) if len(form) > 3}


def _stem(word: str) -> str:
    """A gloss word as the word list keeps it: whole, lower-cased, "-ies" read as "-y"."""
    return word[:-3] + "y" if len(word) > 4 and word.endswith("ies") else word


@lru_cache(maxsize=65_536)
def _forms(word: str) -> frozenset[str]:
    """The forms an English word of a text or question may take in a gloss: itself and
    itself without an inflection (fonts → font, closed → close and clos, boxes → box).
    Whole words, not prefixes: a prefix would let "everything" stand for "every"."""
    forms = {word, _stem(word)}
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        forms.add(word[:-1])
        if word.endswith("es"):
            forms.add(word[:-2])
    if len(word) > 5 and word.endswith("ing"):
        forms |= {word[:-3], word[:-3] + "e"}
    if len(word) > 4 and word.endswith("ed"):
        forms |= {word[:-2], word[:-1]}
    return frozenset(forms)


@lru_cache(maxsize=1)
def _lexicon() -> _Lexicon:
    data = resources.files("omoide.text").joinpath("lexicon-ja-en.tsv.gz").read_bytes()
    return _Lexicon(gzip.decompress(data).decode("utf-8").splitlines())


@lru_cache(maxsize=1024)
def japanese_words(text: str) -> tuple[str, ...]:
    """The distinct words of the word list in ``text``'s Japanese, longest first at each
    position; hiragana-only words (particles, endings) left out."""
    lexicon = _lexicon()
    known = lexicon.english
    found: dict[str, None] = {}
    for run in _CJK_RUN.findall(unicodedata.normalize("NFKC", text)):
        i = 0
        while i < len(run):
            for length in lexicon.lengths.get(run[i], ()):
                word = run[i : i + length]
                if word in known:
                    if not _HIRAGANA.match(word):
                        found[word] = None
                    i += length
                    break
            else:
                i += 1
    return tuple(found)


@lru_cache(maxsize=256)
def _translations(question: str) -> tuple[bool, int, dict[str, frozenset[int]]]:
    """What a question's words are looked for as in a text of the other language, read once
    per question: whether it is Japanese, how many words it has that the list knows, and
    each translation → the positions of the question's words it translates."""
    lexicon = _lexicon()
    wanted: dict[str, set[int]] = {}
    if _KANA_OR_KANJI.search(question):
        words: Sequence[str] = [w for w in japanese_words(question) if w in lexicon.english]
        for i, word in enumerate(words):
            for key in lexicon.english[word]:
                wanted.setdefault(key, set()).add(i)
        return True, len(words), {k: frozenset(v) for k, v in wanted.items()}
    words = [
        t
        for t in dict.fromkeys(content_terms(question, compounds=False))
        if t.isascii() and t.isalpha()
    ]
    for i, word in enumerate(words):
        for form in _forms(word):
            for japanese in lexicon.japanese.get(form, ()):
                wanted.setdefault(japanese, set()).add(i)
    return False, len(words), {k: frozenset(v) for k, v in wanted.items()}


def cross_share(question: str, text: str) -> float:
    """Share of the question's words whose translation ``text`` holds, when one of them is
    written in Japanese and the other in English (0 otherwise, or when the question has no
    word the list knows)."""
    japanese, count, wanted = _translations(question)
    if not count or not wanted:
        return 0.0
    text = unicodedata.normalize("NFKC", text)
    held: set[int] = set()
    if japanese:
        words = _ENGLISH_WORD.findall(text.lower())
        # English writes a compound open as well as closed: "roll back" is "rollback".
        for word in {*words, *(a + b for a, b in pairwise(words))}:
            for form in _forms(word):
                held |= wanted.get(form, frozenset())
    elif any(form in text for form in wanted):  # only then is the text split into words
        for word in japanese_words(text):
            held |= wanted.get(word, frozenset())
    return len(held) / count


@lru_cache(maxsize=16_384)
def translated_alike(first: str, second: str) -> bool:
    """True when one of two texts in different languages holds a translation of a word of
    the other (:func:`cross_share`): some word of their own, beyond the values both write
    alike, says they speak of one thing."""
    return cross_share(first, second) > 0 or cross_share(second, first) > 0
