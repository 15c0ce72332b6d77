"""``product_int_size``: the integer size of a product found through a float filter must equal the
exact ``int_size`` in every case, including the ones the filter hands back to it."""

import random
from fractions import Fraction

import pytest

from exact.errors import ShapeError
from exact.linalg import MAX_CANDIDATES, QMatrix, product_int_size


def _random(rng, n, m, q=7, bound=3):
    return QMatrix.from_rows([[Fraction(rng.randint(-bound * q, bound * q), rng.randint(1, q)) for _ in range(m)]
                              for _ in range(n)])


def _product(factors):
    W = factors[0]
    for F in factors[1:]:
        W = W @ F
    return W


@pytest.mark.parametrize("seed", range(12))
def test_random_products_of_two_and_three_factors(seed):
    rng = random.Random(seed)
    d, r = rng.randint(1, 40), rng.randint(1, 6)
    factors = [_random(rng, d, r), _random(rng, r, d)]
    if seed % 2:
        factors.insert(1, _random(rng, r, r, q=10**6, bound=10**3))  # a tall middle factor, like M⁻¹
    W = _product(factors)
    assert product_int_size(W, factors) == W.int_size()


def test_ties_signs_and_near_ties_are_compared_exactly():
    # entries within one part in 2^60 of the largest: the float product cannot tell them apart
    eps = Fraction(1, 2**60)
    A = QMatrix.from_rows([[1], [-1], [1 + eps], [-(1 + eps)], [1 - eps]])
    B = QMatrix.from_rows([[1, -1, Fraction(1, 3)]])
    W = A @ B
    assert product_int_size(W, (A, B)) == W.int_size() == ((2**60 + 1) * 3, 2**60 * 3)


def test_huge_tiny_and_many_factors_fall_back_to_the_exact_reading():
    A = QMatrix.from_rows([[Fraction(2**300)], [1]])
    B = QMatrix.from_rows([[1, Fraction(1, 2**400)]])
    for factors in ((A, B), (B.T, A.T), (A, B, A, B, A, B)):
        W = _product(factors)
        assert product_int_size(W, factors) == W.int_size()
    tiny = QMatrix.from_rows([[Fraction(1, 2**700)], [Fraction(-1, 2**700)]])
    W = tiny @ tiny.T  # entries 2^-1400: below float64's range
    assert product_int_size(W, (tiny, tiny.T)) == W.int_size()
    zero = QMatrix.zeros(3, 2)
    assert product_int_size(zero @ zero.T, (zero, zero.T)) == (zero @ zero.T).int_size() == (0, 1)


def test_many_candidates_read_the_whole_matrix():
    n = int(MAX_CANDIDATES**0.5) + 2
    ones = QMatrix.from_rows([[1]] * n)
    W = ones @ ones.T  # every entry the largest
    assert product_int_size(W, (ones, ones.T)) == W.int_size() == (1, 1)


def test_factors_that_do_not_make_the_matrix_are_refused():
    A, B = QMatrix.from_rows([[1, 2]]), QMatrix.from_rows([[1], [2]])
    with pytest.raises(ShapeError, match="do not make"):
        product_int_size(A @ B, (B, A))
    with pytest.raises(ShapeError, match="do not make"):
        product_int_size(A, ())


def test_an_entry_that_cancels_in_float64_is_still_a_candidate():
    # W[0, 0] = (2^54 + 1)·1 − 1·2^54 = 1, which float64 computes as 0 (2^54 + 1 rounds to 2^54), below
    # W[1, 0] = 3/4: only the error bound keeps the true largest entry among the candidates
    A = QMatrix.from_rows([[2**54 + 1, -1], [Fraction(3, 4), 0]])
    B = QMatrix.from_rows([[1], [2**54]])
    W = A @ B
    assert W.rows() == ((1,), (Fraction(3, 4),))
    assert product_int_size(W, (A, B)) == W.int_size() == (4, 4)
