"""``QMatrix.independent``: a largest nonsingular minor found modulo a prime and proved over ℚ; it agrees
with the exact row echelon form's pivots, and falls back to them where the prime cannot see."""

import random
from fractions import Fraction

import pytest

from exact.linalg import PRIME, QMatrix


def _exact(M: QMatrix) -> tuple[list, list]:
    cols = M.pivot_columns()
    return M.submatrix(range(M.shape[0]), cols).T.pivot_columns(), cols


def _random(n, m, rank, seed) -> QMatrix:
    g = random.Random(seed)

    def q():
        return Fraction(g.randint(-2**20, 2**20), g.randint(1, 2**20))

    A = QMatrix.from_rows([[q() for _ in range(rank)] for _ in range(n)]) if rank else None
    B = QMatrix.from_rows([[q() for _ in range(m)] for _ in range(rank)]) if rank else None
    return A @ B if rank else QMatrix.zeros(n, m)


@pytest.mark.parametrize("n, m, rank", [(6, 3, 3), (6, 3, 2), (9, 4, 1), (5, 5, 5), (7, 4, 0), (40, 8, 6)])
def test_it_agrees_with_the_exact_pivots(n, m, rank):
    for seed in range(3):
        M = _random(n, m, rank, seed)
        rows, cols = M.independent()
        assert (rows, cols) == _exact(M) and len(cols) == M.rank() == rank
        if cols:
            assert M.submatrix(rows, cols).det() != 0


def test_structured_zeros_and_repeated_rows():
    M = QMatrix.from_rows([[0, 0, 0], [1, 2, 3], [2, 4, 6], [0, 0, 1]])
    assert M.independent() == _exact(M) == ([1, 3], [0, 2])
    assert QMatrix.zeros(3, 2).independent() == ([], [])


def test_a_denominator_the_prime_divides_falls_back_to_the_exact_form():
    M = QMatrix.from_rows([[Fraction(1, PRIME), 1], [1, 1], [2, 2]])
    assert M.independent() == _exact(M) == ([0, 1], [0, 1])


def test_a_rank_the_prime_loses_is_proved_wrong_and_recomputed():
    """Entries whose 2×2 minor is a multiple of the prime: modulo the prime the rank drops to 1; the span
    check over ℚ fails, and the exact form answers."""
    M = QMatrix.from_rows([[1, 1], [1, 1 + PRIME]])
    assert M.independent() == _exact(M) == ([0, 1], [0, 1]) and M.rank() == 2
