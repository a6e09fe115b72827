"""The recall's products without BLAS give what ``@`` gives."""

from __future__ import annotations

import numpy as np

from omoide.core.similarity import pairwise, similarities


def test_the_products_equal_matmul() -> None:
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(300, 384)).astype(np.float32)
    vector = rng.normal(size=384).astype(np.float32)
    assert similarities(matrix, vector).dtype == np.float32
    np.testing.assert_allclose(similarities(matrix, vector), matrix @ vector, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(
        pairwise(matrix[:50]), matrix[:50] @ matrix[:50].T, rtol=1e-4, atol=1e-3
    )
    assert similarities(matrix[:0], vector).shape == (0,)
