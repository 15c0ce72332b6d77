"""Canonical factors ``W = Kᵀ Q`` (the CR decomposition) and the exact rank (exact.canonical)."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy
from hypothesis import assume, given
from hypothesis import strategies as st

from exact import InvalidNumber, SingleHead
from exact.canonical import canonical_factors, exact_rank
from exact.linalg import QMatrix

F = Fraction


# -- helpers ---------------------------------------------------------------------------


def _kt_q(K, Q, n_rows: int, n_cols: int) -> tuple:
    return tuple(
        tuple(sum((K[k][i] * Q[k][j] for k in range(len(K))), F(0)) for j in range(n_cols)) for i in range(n_rows)
    )


def _matmul(A, B) -> tuple:
    n, m = len(B), len(B[0])
    return tuple(tuple(sum((A[i][k] * B[k][j] for k in range(n)), F(0)) for j in range(m)) for i in range(len(A)))


def _transpose(A) -> tuple:
    return tuple(zip(*A))


def _assert_canonical(W) -> tuple:
    """Every documented property of ``canonical_factors(W)`` for a d×d rational ``W``."""
    W = tuple(tuple(F(x) for x in row) for row in W)
    d = len(W)
    K, Q = canonical_factors(W)
    r = exact_rank(W)
    assert isinstance(K, tuple) and isinstance(Q, tuple)
    assert len(K) == len(Q) == r
    assert all(isinstance(row, tuple) and len(row) == d for row in K + Q)
    assert all(type(x) is Fraction for row in K + Q for x in row)
    assert _kt_q(K, Q, d, d) == W  # the round trip, exactly
    # Q is in reduced row echelon form: leading 1s, strictly increasing pivots, zeros above and below
    pivots = []
    for row in Q:
        p = next(j for j, x in enumerate(row) if x != 0)
        assert row[p] == 1
        pivots.append(p)
    assert pivots == sorted(set(pivots))
    for i, p in enumerate(pivots):
        assert [Q[k][p] for k in range(r)] == [F(int(k == i)) for k in range(r)]
    # Kᵀ = W[:, pivots]
    assert K == tuple(tuple(W[i][p] for i in range(d)) for p in pivots)
    # and Q agrees with sympy's RREF
    R, sym_pivots = sympy.Matrix(W).rref()
    assert list(sym_pivots) == pivots
    assert Q == tuple(tuple(F(int(x.p), int(x.q)) for x in R.row(i)) for i in range(r))
    return K, Q


# -- strategies ------------------------------------------------------------------------

small = st.fractions(-5, 5, max_denominator=6)
tiny = st.fractions(-2, 2, max_denominator=2)  # few values, so equal pairs come up


def matrices(rows: int, cols: int, elements=small):
    return st.lists(st.lists(elements, min_size=cols, max_size=cols), min_size=rows, max_size=rows).map(
        lambda M: tuple(tuple(r) for r in M)
    )


@st.composite
def factor_pairs(draw, max_d: int = 5):
    """``(d, r, K, Q)`` with ``K, Q`` of shape r × d (r may exceed the rank of Kᵀ Q)."""
    d = draw(st.integers(1, max_d))
    r = draw(st.integers(0, d))
    K = draw(matrices(r, d))
    Q = draw(matrices(r, d))
    return d, r, K, Q


@st.composite
def square_matrices(draw, max_d: int = 5):
    d = draw(st.integers(1, max_d))
    return draw(matrices(d, d))


# -- hand examples -----------------------------------------------------------------------


def test_docstring_example():
    K, Q = canonical_factors([[2, 4], [1, 2]])
    assert Q == ((F(1), F(2)),)
    assert K == ((F(2), F(1)),)


@pytest.mark.parametrize("d", [1, 2, 5])
def test_zero_matrix_has_empty_factors(d):
    assert canonical_factors([[0] * d for _ in range(d)]) == ((), ())
    assert exact_rank([[0] * d for _ in range(d)]) == 0


@pytest.mark.parametrize("d", [1, 3, 6])
def test_identity_is_its_own_factors(d):
    eye = tuple(tuple(F(int(i == j)) for j in range(d)) for i in range(d))
    assert canonical_factors(eye) == (eye, eye)
    assert exact_rank(eye) == d


def test_full_rank_factors_are_the_transpose_and_the_identity():
    W = ((F(2), F(1, 3), F(0)), (F(-1), F(4), F(5)), (F(0), F(0), F(7, 2)))
    K, Q = _assert_canonical(W)
    eye = tuple(tuple(F(int(i == j)) for j in range(3)) for i in range(3))
    assert Q == eye and K == _transpose(W)


@pytest.mark.parametrize("W,K,Q", [
    ([[3]], [[3]], [[1]]),
    ([[0, 0], [0, 5]], [[0, 5]], [[0, 1]]),  # the first column is zero: pivot in column 1
    ([["0", "1/2", "1"], [0, 1, 2], [0, 0, 0]], [["1/2", 1, 0]], [[0, 1, 2]]),
    ([[1, 2, 3], [4, 5, 6], [7, 8, 9]], [[1, 4, 7], [2, 5, 8]], [[1, 0, -1], [0, 1, 2]]),
    ([[1, 2, 3], [2, 4, 6], [0, 0, 1]], [[1, 2, 0], [3, 6, 1]], [[1, 2, 0], [0, 0, 1]]),
    ([[0, 0, 0], [0, 0, 0], [1, -1, "2/3"]], [[0, 0, 1]], [[1, -1, "2/3"]]),
])
def test_hand_examples(W, K, Q):
    want = (tuple(tuple(F(x) for x in r) for r in K), tuple(tuple(F(x) for x in r) for r in Q))
    assert canonical_factors(W) == want
    _assert_canonical([[F(x) for x in r] for r in W])


def test_inputs_of_any_exact_type_give_the_same_factors():
    as_fractions = [[F(1, 2), F(1, 4)], [F(1), F(1, 2)]]
    assert canonical_factors([["1/2", 0.25], [1, "0.5"]]) == canonical_factors(as_fractions)
    assert canonical_factors([[sympy.Rational(1, 2), "1/4"], [sympy.Integer(1), F(1, 2)]]) == canonical_factors(
        as_fractions
    )
    assert canonical_factors(as_fractions) == (((F(1, 2), F(1)),), ((F(1), F(1, 2)),))


def test_non_numbers_are_refused():
    with pytest.raises(InvalidNumber):
        canonical_factors([[float("nan"), 1], [0, 1]])
    with pytest.raises(InvalidNumber):
        exact_rank([[1, "x"]])


def test_rational_matrix_round_trip():
    M = ((F(1, 3), F(-2), F(0)), (F(5, 7), F(0), F(10**30, 3)))
    A = QMatrix.from_rows(M)
    assert A.shape == (2, 3)
    assert A.rows() == M and all(isinstance(x, F) for row in A.rows() for x in row)
    assert exact_rank(A) == exact_rank(M) == 2  # canonical functions take the flint-backed matrix too


# -- properties -------------------------------------------------------------------------


@given(factor_pairs())
def test_round_trip_for_low_rank_products(params):
    d, r, K0, Q0 = params
    W = _kt_q(K0, Q0, d, d)
    K, Q = _assert_canonical(W)
    assert len(Q) <= r
    if r:
        assert SingleHead.from_factors(K0, Q0, [1] * d).W == W
    if K:  # the canonical factors build the same head
        assert SingleHead.from_factors(K, Q, [1] * d).W == W


@given(square_matrices())
def test_round_trip_for_any_small_rational_matrix(W):
    _assert_canonical(W)


@pytest.mark.parametrize("d,r", [(4, 1), (6, 2), (8, 3), (8, 8), (12, 4)])
def test_round_trip_for_random_low_rank_heads(d, r):
    for seed in range(3):
        model = SingleHead.random(d, seed=seed, rank=r)
        K, Q = _assert_canonical(model.W)
        assert len(K) == model.rank <= r


@st.composite
def gauge(draw):
    """``(d, K, Q, G)`` with ``G`` an invertible r × r rational matrix, r >= 1."""
    d = draw(st.integers(1, 5))
    r = draw(st.integers(1, d))
    K = draw(matrices(r, d))
    Q = draw(matrices(r, d))
    G = draw(matrices(r, r, st.fractions(-4, 4, max_denominator=5)))
    assume(QMatrix.from_rows(G).det() != 0)
    return d, K, Q, G


@given(gauge())
def test_factors_are_invariant_under_the_gauge(params):
    d, K, Q, G = params
    G_inv = QMatrix.from_rows(G).inv().rows()
    K2 = _matmul(_transpose(G_inv), K)  # G⁻ᵀ K
    Q2 = _matmul(G, Q)  # G Q
    W = _kt_q(K, Q, d, d)
    W2 = _kt_q(K2, Q2, d, d)
    assert W2 == W  # the gauge does not change W ...
    assert canonical_factors(W2) == canonical_factors(W)  # ... nor its canonical factors
    v = list(range(1, d + 1))
    h, h2 = SingleHead.from_factors(K, Q, v), SingleHead.from_factors(K2, Q2, v)
    assert h == h2
    assert canonical_factors(h2.W) == canonical_factors(h.W)


def test_gauge_invariance_hand_example():
    K = ((F(1), F(0), F(2)), (F(0), F(1), F(1)))
    Q = ((F(1), F(1), F(0)), (F(2), F(0), F(1)))
    G = ((F(2), F(1)), (F(1), F(1)))  # det 1
    G_inv = ((F(1), F(-1)), (F(-1), F(2)))
    assert _matmul(G, G_inv) == ((F(1), F(0)), (F(0), F(1)))
    K2, Q2 = _matmul(_transpose(G_inv), K), _matmul(G, Q)
    assert (K2, Q2) != (K, Q)
    W = _kt_q(K, Q, 3, 3)
    assert _kt_q(K2, Q2, 3, 3) == W
    assert canonical_factors(_kt_q(K2, Q2, 3, 3)) == canonical_factors(W)


@given(st.integers(1, 4).flatmap(lambda d: st.tuples(matrices(d, d, tiny), matrices(d, d, tiny))))
def test_equal_matrices_iff_equal_factors(pair):
    """For W of one size d (the factors of every W = 0 are empty, whatever d)."""
    W1, W2 = pair
    assert (W1 == W2) == (canonical_factors(W1) == canonical_factors(W2))
    W3 = tuple(tuple(x + (F(1, 10**12) if (i, j) == (0, 0) else 0) for j, x in enumerate(r)) for i, r in enumerate(W1))
    assert canonical_factors(W3) != canonical_factors(W1)


# -- exact rank --------------------------------------------------------------------------


def _sympy_rank(M) -> int:
    return sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in r] for r in M]).rank()


def test_exact_rank_examples():
    assert exact_rank([[1, 2], [2, 4]]) == 1
    assert exact_rank([[1, 2, 3]]) == 1
    assert exact_rank([[0, 0, 0]]) == 0
    assert exact_rank([[1, 0], [0, F(1, 10**40)]]) == 2  # exact: no tolerance hides a tiny pivot
    assert exact_rank([[1, F(1, 3)], [3, 1]]) == 1
    assert exact_rank([[0.1, 0.2], [0.2, 0.4]]) == 1  # floats at their exact binary values: 0.4 = 2·0.2 exactly
    assert exact_rank([[0.1, 0.3], [1, 3]]) == 2  # but 0.3 != 3·0.1 in binary


@given(st.integers(1, 5).flatmap(lambda n: st.integers(1, 5).flatmap(lambda m: matrices(n, m))))
def test_exact_rank_matches_sympy_on_rectangular_matrices(M):
    assert exact_rank(M) == _sympy_rank(M)


@given(factor_pairs(max_d=6))
def test_exact_rank_matches_sympy_on_low_rank_products(params):
    d, r, K, Q = params
    W = _kt_q(K, Q, d, d)
    assert exact_rank(W) == _sympy_rank(W) <= r


@pytest.mark.parametrize("d,r", [(5, 0), (5, 2), (9, 4), (12, 12)])
def test_exact_rank_of_random_heads(d, r):
    model = SingleHead.random(d, seed=d + r, rank=r)
    assert exact_rank(model.W) == model.rank == _sympy_rank(model.W)
