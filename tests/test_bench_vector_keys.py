"""The benchmarks' vector caches are read only by the model that wrote them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from bench.fleet_scenarios import SavedPassages
from bench.vector_keys import model_key

from omoide.providers.embeddings import EmbedKind, Vectors
from omoide.testing import HashEmbedder


class _Counting(HashEmbedder):
    """The hash embedder, counting the texts it embeds (a test of caching logic)."""

    def __init__(self, dimension: int = 32) -> None:
        super().__init__(dimension)
        self.embedded = 0

    def embed_batch(self, texts: Sequence[str], kind: EmbedKind = "passage") -> Vectors:
        self.embedded += len(texts)
        return super().embed_batch(texts, kind)


def _with_axis(seed: int) -> _Counting:
    model = _Counting()
    axis = np.random.default_rng(seed).normal(size=(1, model.dimension)).astype(np.float32)
    model.language_axis = axis / np.linalg.norm(axis)
    return model


def test_the_key_names_the_model_its_size_and_its_language_axis() -> None:
    assert model_key(_Counting()) == model_key(_Counting())
    assert model_key(_Counting()) != model_key(_Counting(dimension=16))
    assert model_key(_with_axis(1)) == model_key(_with_axis(1))
    assert model_key(_with_axis(1)) != model_key(_with_axis(2))
    assert model_key(_with_axis(1)) != model_key(_Counting())
    renamed = _Counting()
    renamed.name = "hash-2"
    assert model_key(renamed) != model_key(_Counting())


@pytest.mark.parametrize("same_model", [True, False])
def test_a_saved_cache_is_read_only_by_the_model_that_wrote_it(
    tmp_path: Path, same_model: bool
) -> None:
    path = tmp_path / "passages.npz"
    texts = ["点呼は07:15に始めます。", "Roll call starts at 07:15."]
    first = SavedPassages(path, _with_axis(1))
    written = first.embed_batch(texts)
    first.save()

    model = _with_axis(1 if same_model else 2)
    again = SavedPassages(path, model)
    read = again.embed_batch(texts)
    np.testing.assert_array_equal(read, written)  # the raw vectors do not depend on the axis
    assert model.embedded == (0 if same_model else len(texts))


def test_a_cache_without_a_model_key_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "passages.npz"
    texts = ["The weekly ops sync is in room C-310."]
    with path.open("wb") as out:  # as the cache was written before it recorded its model
        np.savez(out, texts=np.array(texts), vectors=np.ones((1, 32), dtype=np.float32))
    model = _Counting()
    vectors = SavedPassages(path, model).embed_batch(texts)
    assert model.embedded == 1
    assert not np.array_equal(vectors, np.ones((1, 32), dtype=np.float32))
