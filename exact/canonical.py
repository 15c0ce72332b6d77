"""Canonical forms: one representative for parameters that only matter up to a symmetry.

Symmetric objects are compared through these functions, never directly.

:func:`canonical_factors`
    ``W = Kᵀ Q`` is determined by ``W`` only up to the gauge ``(K, Q) → (G⁻ᵀK, GQ)``
    with ``G ∈ GL(r)``.  The canonical representative is the *CR decomposition*:
    ``Q`` is the reduced row echelon form of ``W`` without its zero rows (so ``Q`` has
    an identity block in the pivot columns), and ``Kᵀ = W[:, pivots]``.  It is exact
    over ℚ and depends on ``W`` alone.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from .linalg import QMatrix
from .numbers import to_fraction

if TYPE_CHECKING:
    from .multihead import MultiHead

__all__ = ["canonical_factors", "canonical_form", "exact_rank", "float_error"]


def _matrix(M) -> QMatrix:
    if isinstance(M, QMatrix):
        return M
    return QMatrix.from_rows([[to_fraction(x) for x in r] for r in M])


def exact_rank(M) -> int:
    """The exact rank of a rational matrix.

    >>> exact_rank([[1, 2], [2, 4]])
    1
    """
    return _matrix(M).rank()


def canonical_factors(W) -> tuple[tuple, tuple]:
    """The canonical factors ``(K, Q)`` of ``W = Kᵀ Q``, both ``r × d`` with ``r = rank(W)``.

    ``Q`` is the reduced row echelon form of ``W`` (zero rows removed) and
    ``K = W[:, pivots]ᵀ``.  Two matrices of the same size are equal iff their
    canonical factors are (every zero matrix has the empty factors).

    Parameters
    ----------
    W : d×d matrix of exact numbers, or a :class:`~exact.linalg.QMatrix`

    Returns
    -------
    K, Q : tuples of rows of Fractions (``r`` rows each; empty when ``W = 0``)

    Examples
    --------
    >>> K, Q = canonical_factors([[2, 4], [1, 2]])
    >>> Q
    ((Fraction(1, 1), Fraction(2, 1)),)
    >>> K
    ((Fraction(2, 1), Fraction(1, 1)),)
    """
    M = _matrix(W)
    R, rank = M.rref()
    n = M.shape[1]
    pivots = [next(j for j in range(n) if R.entry(i, j) != 0) for i in range(rank)]
    Q = R.submatrix(range(rank), range(n)).rows()
    K = M.submatrix(range(M.shape[0]), pivots).T.rows()
    return K, Q


def canonical_form(model: MultiHead) -> MultiHead:
    """The canonical form of a multi-head model: merge equal ``W``, drop zero ``v``, sort by ``W``.

    Parameters
    ----------
    model : MultiHead

    Returns
    -------
    MultiHead
        Pairwise distinct ``W``, nonzero ``v``, heads in increasing order of
        ``(W row by row, v)``; compare with ``==``.

    Examples
    --------
    >>> from exact.multihead import MultiHead
    >>> m = MultiHead([([[1]], [2]), ([[0]], [0]), ([[1]], [-3])])
    >>> canonical_form(m)
    MultiHead(heads=(SingleHead(W=((Fraction(1, 1),),), v=(Fraction(-1, 1),)),), d=1)
    """
    return model.canonical()


def float_error(learned, truth) -> float:
    """The largest entry error of a float result against the truth's canonical form, over the best
    one-to-one matching of the heads (``inf`` when the head counts differ): of ``W`` and ``v``, and of
    ``c`` and ``b`` when either model has biases.  Up to 8 heads every matching is tried; beyond, a
    greedy one, which can only overstate the error."""
    from .kinds import as_kind  # the kinds module imports the models, which import this one

    canon = canonical_form(as_kind(truth, "multi-head"))
    biased = canon.biased or learned.biased

    def arrays(h):
        W, v = h.to_numpy()
        return (W, v, np.array([float(x) for x in h.c])) if biased else (W, v)

    T = [arrays(h) for h in canon.heads]
    L = [arrays(h) for h in learned.heads]
    if len(T) != len(L):
        return float("inf")
    floor = abs(float(learned.b) - float(canon.b)) if biased else 0.0
    cost = [[max(float(np.max(np.abs(x - y), initial=0.0)) for x, y in zip(t, g)) for g in L] for t in T]
    if len(T) <= 8:
        return max(floor, min((max((cost[i][p[i]] for i in range(len(T))), default=0.0)
                               for p in itertools.permutations(range(len(L)))), default=0.0))
    free, worst = set(range(len(L))), floor
    for i in range(len(T)):
        j = min(free, key=lambda j: cost[i][j])
        free.discard(j)
        worst = max(worst, cost[i][j])
    return worst
