"""float64 evaluation of a single head, and a rigorous bound on its rounding error.

:func:`evaluate_float` is the vectorised float64 forward pass used by float models
and float oracles; :func:`float_rounding_bounds` bounds how far its answers can be
from the exact value of the *same* float64 parameters.  A certificate recomputes
the bound from the certified model, so an answer's recorded error can be checked
rather than trusted.
"""

from __future__ import annotations

import numpy as np

from .errors import ShapeError

__all__ = ["evaluate_float", "float_rounding_bounds"]

_EPS = 2.0**-52


def evaluate_float(W: np.ndarray, v: np.ndarray, X) -> float | np.ndarray:
    """Vectorised float64 evaluation of a single head on ``(N, d)`` or ``(n, N, d)`` inputs.

    >>> float(evaluate_float(np.eye(2), np.ones(2), [[1.0, 0.0], [0.0, 1.0]]))
    1.0
    """
    X = np.asarray(X, dtype=np.float64)
    shape = X.shape
    single = X.ndim == 2
    if single:
        X = X[None]
    if X.ndim != 3 or X.shape[2] != W.shape[0]:
        raise ShapeError(f"X: expected shape (N, {W.shape[0]}) or (n, N, {W.shape[0]}), got {shape}")
    # einsum without BLAS (optimize=False), not matmul: a sequence's value must not
    # depend on which batch it is evaluated in (BLAS picks kernels by size).
    q = np.einsum("nd,ed->ne", X[:, -1, :], W, optimize=False)  # (n, d): W x_N
    s = np.einsum("nid,nd->ni", X, q, optimize=False)
    s -= s.max(axis=1, keepdims=True)
    e = np.exp(s)
    c = np.einsum("nid,d->ni", X, v, optimize=False)
    out = np.einsum("ni,ni->n", e, c, optimize=False) / e.sum(axis=1)
    return float(out[0]) if single else out


def float_rounding_bounds(W: np.ndarray, v: np.ndarray, X: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Bounds on ``|evaluate_float(W, v, X_n) − f(X_n)|`` for a batch ``X`` of shape ``(n, N, d)``.

    Standard dot-product bounds, in terms of sums of *absolute* terms so cancellation
    cannot hide: with ``γ = (k + 2)·eps`` for tokens with at most ``k`` nonzeros,
    ``|δs_i| <= 2γ·|x_i|ᵀ|W||x_N|`` and ``|δc_i| <= γ·|x_i|ᵀ|v|``; score errors move the
    softmax weights by a relative ``expm1(2·max|δs|)``; the sums add ``(N + 6)·eps``.
    The total is doubled for second-order terms.  Each sequence's bound depends on that
    sequence alone, not on the batch it came in.

    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> b = float_rounding_bounds(np.eye(2), np.ones(2), X, evaluate_float(np.eye(2), np.ones(2), X))
    >>> bool(0 < b[0] < 1e-13)
    True
    """
    A = np.abs(X)
    k = np.maximum(1, (X != 0).sum(axis=2).max(axis=1))  # per sequence
    g = (k + 2) * _EPS
    Wx = np.einsum("nd,ed->ne", A[:, -1, :], np.abs(W), optimize=False)
    ds = 2 * g[:, None] * np.einsum("nid,nd->ni", A, Wx, optimize=False)
    ca = np.einsum("nid,d->ni", A, np.abs(v), optimize=False)
    c = np.abs(np.einsum("nid,d->ni", X, v, optimize=False)) + g[:, None] * ca
    N = X.shape[1]
    with np.errstate(over="ignore"):
        rel = np.expm1(2 * ds.max(axis=1)) + (N + 6) * _EPS
        err = c.max(axis=1) * rel + g * ca.max(axis=1) + 4 * _EPS * np.abs(ys)
    return 2 * err + 1e-300
