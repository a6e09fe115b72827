"""Packing a context: the best items that fit the token budget, never over it, one per memory."""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import replace

from omoide.core.ids import SYSTEM_DOCUMENTS
from omoide.providers.tokens import BlockBound, TokenCounter, count_rendered
from omoide.recall.context import (
    FOOTER,
    ContextItem,
    context_header_parts,
    header_parts,
    origin,
    render_context,
    render_header,
    render_item,
)

__all__ = ["MAX_MISSES", "MIN_TRUNCATED_TOKENS", "dedupe", "pack"]

#: An item is cut to fit the remaining budget only if at least this many tokens remain.
MIN_TRUNCATED_TOKENS = 24
#: Packing stops after this many items that did not fit (the budget is as good as full).
MAX_MISSES = 3


def pack(
    query: str,
    agent: str,
    candidates: list[ContextItem],
    budget: int,
    counter: TokenCounter,
    bound: BlockBound | None = None,
) -> tuple[list[ContextItem], str, int]:
    """Greedy in rank order (``candidates`` come ranked, best first): the items that fit; a
    long item is cut to fit if enough room is left.

    An item's tokens are its text's count stored when it was written (``item.tokens``;
    counted here only when unknown) plus its header's parts and one per join, an upper bound
    (:class:`~omoide.providers.tokens.BlockBound`); a block cut to fit is counted exactly.
    The total is the sum of these, never under the count of the whole context: so the
    context is never over the budget, and no stored text is counted again at recall time."""
    count = counter.count
    bound = bound or BlockBound(counter)
    head = render_header(query, agent)
    # The frame and each item's opening tag, as header parts: the parts that repeat (the
    # preamble, the footer, a layer, an author, a position) are counted once per process.
    used = bound.bound(0, *context_header_parts(query, agent)) + bound.part(FOOTER) + 2
    chosen: list[ContextItem] = []
    blocks: list[str] = []
    misses = 0
    for item in candidates:
        if budget - used < MIN_TRUNCATED_TOKENS or misses >= MAX_MISSES:
            break
        n = len(chosen) + 1
        body = item.tokens or count_rendered(counter, item.text)
        *opening, tail = header_parts(n, item)
        # Parts and joins bound the block; one more for its join to the next.
        tokens = bound.bound(body, *opening, tail) + 1
        truncated = False
        block = ""
        if used + tokens > budget:
            room = budget - used - (tokens - body) - 2
            text = ""
            if room >= MIN_TRUNCATED_TOKENS:
                text = counter.truncate(item.text, room, tokens=body).rstrip()
            if not text:
                misses += 1
                continue
            block = render_item(n, item, text + "…")
            tokens = count(block) + 1
            if used + tokens > budget:
                misses += 1
                continue
            truncated = True
        used += tokens
        blocks.append(block or render_item(n, item, item.text))
        chosen.append(replace(item, tokens=tokens, truncated=truncated))
    if not chosen:
        return [], "", 0
    # Every block's tokens are an upper bound (its text's stored count, its header's parts
    # and one per join) or, for a block cut to fit, its exact count: their sum is at least
    # the count of the whole, and no item's text is counted again at recall time.
    return chosen, render_context(head, blocks), used


def _fingerprint(text: str) -> str:
    normalised = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return hashlib.sha1(normalised.encode()).hexdigest()


def dedupe(items: list[ContextItem], limit: int | None = None) -> list[ContextItem]:
    """One item per memory: by layer and id, by the episode a document was made from (one
    overflow wrote: any agent may claim an ``episode_id`` in its metadata, and would hide that
    episode), and by identical text. ``items`` come ranked: the first of each memory stays,
    in that order; ``limit``: the first that many only (the rest are not read)."""
    best: dict[str, ContextItem] = {}
    alias: dict[str, str] = {}
    for item in items:
        if limit is not None and len(best) >= limit:
            break
        keys = [f"{item.layer}:{item.id}", "text:" + _fingerprint(item.text)]
        if item.layer == "episodic":
            keys.append(f"episode:{item.id}")
        elif origin(item) == "episodic_overflow":  # its id names the episode; metadata can lie
            prefix = SYSTEM_DOCUMENTS["episodic_overflow"]
            keys.append("episode:" + item.id.partition("/")[2].removeprefix(prefix))
        if any(k in alias for k in keys):
            continue
        best[keys[0]] = item
        for k in keys:
            alias[k] = keys[0]
    return list(best.values())
