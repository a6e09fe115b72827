"""Splitting long documents into chunks that fit the embedder's window.

Sentences end at Japanese (。！？) and Western (. ! ? followed by a space) terminators and at
blank lines. Chunks are packed greedily from whole sentences up to ``max_tokens`` and the next
chunk starts with the last sentences of the previous one (up to ``overlap_tokens``), so a fact
that straddles a boundary is whole in at least one chunk. A sentence longer than a chunk is
cut at clause marks (、，,;:), then at spaces, then — for text with no breaks at all — at a
character boundary found by token count. Chunks never lose or reorder text.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["chunk_text", "split_sentences"]

Counter = Callable[[str], int]

# A sentence ends after a terminator (with any closing quotes/brackets and trailing space),
# or at a blank line.
_SENTENCE_END = re.compile(r"""(?:[。！？!?．]+|\.(?=\s)|…+)["'”’」』）)\]]*\s*|\n\s*\n\s*""")
_CLAUSE_END = re.compile(r"[、，,;；:：]+\s*")
_SPACE = re.compile(r"\s+")


def _split_after(pattern: re.Pattern[str], text: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for match in pattern.finditer(text):
        end = match.end()
        if end > start:
            pieces.append(text[start:end])
            start = end
    if start < len(text):
        pieces.append(text[start:])
    return pieces


def split_sentences(text: str) -> list[str]:
    """Sentences with their terminators and trailing space (``"".join`` restores the text)."""
    return _split_after(_SENTENCE_END, text)


#: Characters measured per token of budget when cutting unbroken text. Tokens rarely span
#: more (XLM-R cuts a run of one letter every ~5); when the whole window fits, the piece is
#: just shorter than it could be, never over budget.
_MAX_CHARS_PER_TOKEN = 8


def _hard_split(text: str, max_tokens: int, count: Counter) -> list[str]:
    """Cut text with no usable breaks at the longest prefixes that fit.

    Only a window of the text is measured for each piece, so a long unbroken text (a megabyte
    of one letter) costs time linear in its length, not quadratic.
    """
    window = max(1, max_tokens) * _MAX_CHARS_PER_TOKEN
    parts: list[str] = []
    rest = text
    while rest:
        head = rest[:window]
        if count(head) <= max_tokens:
            parts.append(head)
            rest = rest[len(head) :]
            continue
        lo, hi = 1, len(head)
        while lo < hi:  # longest prefix within budget (at least one character)
            mid = (lo + hi + 1) // 2
            if count(head[:mid]) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        parts.append(head[:lo])
        rest = rest[lo:]
    return parts


def _fit(unit: str, max_tokens: int, count: Counter, level: int = 0) -> list[str]:
    """Break ``unit`` into pieces each within ``max_tokens``."""
    if count(unit) <= max_tokens:
        return [unit]
    splitters = (_CLAUSE_END, _SPACE)
    if level >= len(splitters):
        return _hard_split(unit, max_tokens, count)
    pieces = _split_after(splitters[level], unit)
    if len(pieces) <= 1:
        return _fit(unit, max_tokens, count, level + 1)
    out: list[str] = []
    for piece in pieces:
        out.extend(_fit(piece, max_tokens, count, level + 1))
    return _pack(out, max_tokens, 0, count)


def _pack(units: list[str], max_tokens: int, overlap_tokens: int, count: Counter) -> list[str]:
    """Greedily join units into chunks within budget, carrying an overlap of whole units.

    Sizes are summed per unit, then each chunk is measured once as a whole: tokenizers can
    merge across a boundary (``。第`` is not ``。`` + ``第``), and a chunk found over budget
    gives up its last units to the next one.
    """
    sizes = [count(u) for u in units]
    chunks: list[str] = []
    current: list[int] = []  # indices into units
    used = 0

    def emit() -> tuple[list[int], list[int]]:
        """Emit ``current`` trimmed to fit; return (emitted units, units pushed to the next)."""
        keep = list(current)
        pushed: list[int] = []
        while len(keep) > 1 and count("".join(units[j] for j in keep)) > max_tokens:
            pushed.insert(0, keep.pop())
        chunks.append("".join(units[j] for j in keep))
        return keep, pushed

    i = 0
    while i < len(units):
        size = sizes[i]
        if current and used + size > max_tokens:
            kept, pushed = emit()
            room = max_tokens - size - sum(sizes[j] for j in pushed)
            carry: list[int] = []
            carried = 0
            for j in reversed(kept):
                if carried + sizes[j] > min(overlap_tokens, room):
                    break
                carry.insert(0, j)
                carried += sizes[j]
            current = carry + pushed
            used = sum(sizes[j] for j in current)
            continue
        current.append(i)
        used += size
        i += 1
    while current:
        _, current = emit()
    return chunks


def chunk_text(
    text: str, *, max_tokens: int, overlap_tokens: int = 50, count: Counter
) -> list[str]:
    """Split ``text`` into chunks of at most ``max_tokens`` tokens as measured by ``count``.

    A text that fits is returned whole. Chunks keep the original characters (whitespace at the
    edges is stripped); consecutive chunks share up to ``overlap_tokens`` of whole sentences.
    """
    if max_tokens < 1:
        raise ValueError("max_tokens must be >= 1")
    if count(text) <= max_tokens:
        return [text]
    units: list[str] = []
    for sentence in split_sentences(text):
        units.extend(_fit(sentence, max_tokens, count))
    chunks = [c.strip() for c in _pack(units, max_tokens, max(0, overlap_tokens), count)]
    return [c for c in chunks if c]
