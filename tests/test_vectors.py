"""The in-memory matrix of episode vectors: add, replace, remove, exact cosine."""

from __future__ import annotations

import numpy as np

from omoide.core.vector_matrix import VectorMatrix


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_add_replace_remove_and_search() -> None:
    matrix = VectorMatrix(3)
    matrix.add([10, 11], np.stack([_unit(1, 0, 0), _unit(0, 1, 0)]))
    assert len(matrix) == 2
    rowids, sims = matrix.similarities(_unit(1, 0, 0))
    assert rowids.tolist() == [10, 11] and np.allclose(sims, [1.0, 0.0])

    matrix.add([11], _unit(1, 1, 0)[None, :])  # the same row id again replaces its vector
    assert len(matrix) == 2
    rowids, sims = matrix.similarities(_unit(1, 0, 0))
    found = dict(zip(rowids.tolist(), sims.tolist(), strict=True))
    assert found.keys() == {10, 11}
    assert np.isclose(found[10], 1.0) and np.isclose(found[11], 0.5**0.5)

    matrix.remove([10, 99])  # an unknown row id is ignored
    rowids, _ = matrix.similarities(_unit(1, 0, 0))
    assert rowids.tolist() == [11] and len(matrix) == 1


def test_it_grows_past_its_first_capacity() -> None:
    matrix = VectorMatrix(2)
    rows = list(range(3000))
    matrix.add(rows, np.tile(_unit(1, 1), (3000, 1)))
    rowids, sims = matrix.similarities(_unit(1, 0))
    assert sorted(rowids.tolist()) == rows
    assert np.allclose(sims, np.float32(0.70710677))


def test_stored_vectors_in_order_with_zeros_for_the_absent() -> None:
    matrix = VectorMatrix(2)
    assert matrix.vectors([1, 2]).tolist() == [[0.0, 0.0], [0.0, 0.0]]  # nothing stored yet
    matrix.add([5, 6], np.stack([_unit(1, 0), _unit(0, 1)]))
    got = matrix.vectors([6, 99, 5, 6])
    assert np.allclose(got, [[0, 1], [0, 0], [1, 0], [0, 1]])
    got[0] = 7.0  # a copy: the stored vector is unchanged
    assert np.allclose(matrix.vectors([6]), [[0, 1]])
    assert matrix.vectors([]).shape == (0, 2)
