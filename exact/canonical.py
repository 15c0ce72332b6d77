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
    W : d×d matrix of exact numbers, a :class:`~exact.linalg.QMatrix`, or a head
        (:class:`~exact.models.SingleHead`): a head kept as exact factors ``W = F_1·…·F_k`` of full
        rank r gets its factors without ``W`` being formed (``Q`` is the echelon form of ``F_k``,
        which spans W's row space, and ``K = (F_1⋯F_{k−1}·F_k[:, pivots])ᵀ``).

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
    factors = getattr(W, "__dict__", {}).get("_factors")
    if factors is not None:
        got = _chain_factors(W, factors)
        if got is not None:
            return got
    if hasattr(W, "_Wmat"):
        W = W._Wmat
    M = _matrix(W)
    R, rank = M.rref()
    n = M.shape[1]
    pivots = [next(j for j in range(n) if R.entry(i, j) != 0) for i in range(rank)]
    Q = R.submatrix(range(rank), range(n)).rows()
    K = M.submatrix(range(M.shape[0]), pivots).T.rows()
    return K, Q


def _chain_factors(head, factors) -> tuple[tuple, tuple] | None:
    """:func:`canonical_factors` of ``W = F_1·…·F_k`` when ``rank(W)`` is the inner dimension r (then W's row
    space is ``F_k``'s), else ``None``."""
    last = factors[-1]
    r, n = last.shape
    if head.rank != r:
        return None
    R, rank = last.rref()
    pivots = [next(j for j in range(n) if R.entry(i, j) != 0) for i in range(rank)]
    M = last.submatrix(range(r), pivots)
    for F in reversed(factors[:-1]):
        M = F @ M
    return M.T.rows(), R.submatrix(range(rank), range(n)).rows()


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
