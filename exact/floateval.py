"""float64 evaluation of a single head, and a rigorous bound on its rounding error.

:func:`evaluate_float` is the vectorised float64 forward pass used by float models
and float oracles; :func:`float_rounding_bounds` bounds how far its answers can be
from the exact value of the *same* float64 parameters.  A certificate recomputes
the bound from the certified model, so an answer's recorded error can be checked
rather than trusted.

A head with biases (``s_i = x_iᵀ(W x_N + c)``, ``f = b + Σ α_i vᵀx_i``) is evaluated as the
bias-free head ``W̃ = [[W, c], [0, 0]]``, ``ṽ = (v, b)`` on the tokens ``(x_i, 1)``: the two are
the same function (:func:`augmented`), so the rounding bounds carry over unchanged.
"""

from __future__ import annotations

import numpy as np

from .errors import ShapeError

__all__ = ["evaluate_float", "float_rounding_bounds", "evaluate_sequences", "augmented", "SPARSE_MAX"]

_EPS = 2.0**-52


def _times_last_token(M: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``M x_N`` for every sequence of the batch ``X`` (shape ``(n, N, d)``), as ``(n, d)``.

    Probe tokens are sparse: when every query token has at most 8 nonzeros, only those
    columns of ``M`` are gathered (O(n·d) instead of O(n·d²)).  Either way each sequence's
    product is computed by the same operations in the same order, whatever the batch.
    """
    last = X[:, -1, :]
    nnz = (last != 0).sum(axis=1)
    k = int(nnz.max()) if nnz.size else 0
    if k > 8:
        return np.einsum("nd,ed->ne", last, M, optimize=False)
    n = X.shape[0]
    rows, cols = np.nonzero(last)  # row-major: each token's nonzeros in increasing column order
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(nnz, out=start[1:])
    slot = np.arange(rows.size) - start[rows]
    idx = np.zeros((n, max(k, 1)), dtype=np.int64)
    vals = np.zeros((n, max(k, 1)))
    idx[rows, slot] = cols
    vals[rows, slot] = last[rows, cols]  # zero where a token has fewer than k nonzeros
    MT = np.ascontiguousarray(M.T)
    out = np.zeros((n, M.shape[0]))
    for t in range(idx.shape[1]):  # summed in a fixed order
        out += MT[idx[:, t]] * vals[:, t : t + 1]
    return out


def augmented(W: np.ndarray, v: np.ndarray, c, b) -> tuple[np.ndarray, np.ndarray]:
    """``(W̃, ṽ)`` with ``W̃ = [[W, c], [0, 0]]`` and ``ṽ = (v, b)``: on tokens ``(x_i, 1)`` the bias-free
    head ``(W̃, ṽ)`` is the head with biases, since ``(x_i, 1)ᵀW̃(x_N, 1) = x_iᵀ(W x_N + c)`` and
    ``ṽᵀ(x_i, 1) = vᵀx_i + b``.

    >>> Wt, vt = augmented(np.eye(1), np.ones(1), np.array([2.0]), 3.0)
    >>> Wt.tolist(), vt.tolist()
    ([[1.0, 2.0], [0.0, 0.0]], [1.0, 3.0])
    """
    d = W.shape[0]
    Wt = np.zeros((d + 1, d + 1))
    Wt[:d, :d] = W
    Wt[:d, d] = np.zeros(d) if c is None else c
    return Wt, np.append(v, b)


def _biased(c, b) -> bool:
    return (c is not None and bool(np.any(c))) or bool(b)


def evaluate_float(W: np.ndarray, v: np.ndarray, X, *, c=None, b=0.0) -> float | np.ndarray:
    """Vectorised float64 evaluation of a single head on ``(N, d)`` or ``(n, N, d)`` inputs
    (with the biases ``c``, ``b`` when given).

    >>> float(evaluate_float(np.eye(2), np.ones(2), [[1.0, 0.0], [0.0, 1.0]]))
    1.0
    >>> round(float(evaluate_float(np.eye(2), np.ones(2), [[1.0, 0.0], [0.0, 1.0]], b=0.5)), 12)
    1.5
    """
    X = np.asarray(X, dtype=np.float64)
    shape = X.shape
    single = X.ndim == 2
    if single:
        X = X[None]
    if X.ndim != 3 or X.shape[2] != W.shape[0]:
        raise ShapeError(f"X: expected shape (N, {W.shape[0]}) or (n, N, {W.shape[0]}), got {shape}")
    if _biased(c, b):
        W, v = augmented(W, v, c, b)
        X = np.concatenate([X, np.ones(X.shape[:2] + (1,))], axis=2)
    # einsum without BLAS (optimize=False), not matmul: a sequence's value must not
    # depend on which batch it is evaluated in (BLAS picks kernels by size).
    q = _times_last_token(W, X)  # (n, d): W x_N
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
    Wx = _times_last_token(np.abs(W), A)
    ds = 2 * g[:, None] * np.einsum("nid,nd->ni", A, Wx, optimize=False)
    ca = np.einsum("nid,d->ni", A, np.abs(v), optimize=False)
    c = np.abs(np.einsum("nid,d->ni", X, v, optimize=False)) + g[:, None] * ca
    N = X.shape[1]
    with np.errstate(over="ignore"):
        rel = np.expm1(2 * ds.max(axis=1)) + (N + 6) * _EPS
        err = c.max(axis=1) * rel + g * ca.max(axis=1) + 4 * _EPS * np.abs(ys)
    return 2 * err + 1e-300


#: Sequences whose tokens have at most this many nonzeros are evaluated sparsely.
SPARSE_MAX = 16


def _sparse(seqs, d: int, rows_of: list | None = None):
    """Padded index and value arrays ``(n, N, K)`` of a batch of sequences of one length.

    Values are the sequences' entries as floats (exact: the entries are float64 values);
    padding has index 0 and value 0, which adds exact zeros at the end of every sum.
    ``rows_of`` is each sequence's rows, when the caller has read them already.
    """
    rows_of = [s.rows for s in seqs] if rows_of is None else rows_of
    n, N = len(seqs), seqs[0].length
    K = max(1, max(len(r) for rows in rows_of for r in rows))
    floats: dict = {}  # id(value) -> (value, float): probes repeat a few value objects
    at: list = []  # flat positions in the (n, N, K) arrays, with their indices and values
    index: list = []
    value: list = []
    for a, rows in enumerate(rows_of):
        for t, row in enumerate(rows):
            p = (a * N + t) * K
            for k, (j, q) in enumerate(row):
                hit = floats.get(id(q))
                if hit is None or hit[0] is not q:
                    hit = floats[id(q)] = (q, q.numerator / q.denominator)
                at.append(p + k)
                index.append(j)
                value.append(hit[1])
    idx = np.zeros(n * N * K, dtype=np.int64)
    val = np.zeros(n * N * K)
    idx[at] = index
    val[at] = value
    return idx.reshape(n, N, K), val.reshape(n, N, K)


def _sparse_terms(W: np.ndarray, v: np.ndarray, idx: np.ndarray, val: np.ndarray):
    """Scores ``x_tᵀ W x_N`` and values ``vᵀ x_t`` from the sparse form, summed in a fixed order."""
    last_i, last_v = idx[:, -1, :], val[:, -1, :]
    Wsub = W[idx[:, :, :, None], last_i[:, None, None, :]]  # (n, N, K, K)
    s = np.einsum("ntk,ntkl,nl->nt", val, Wsub, last_v, optimize=False)
    c = np.einsum("ntk,ntk->nt", val, v[idx], optimize=False)
    return s, c


def evaluate_sequences(W: np.ndarray, v: np.ndarray, seqs, *, c=None, b=0.0) -> tuple[np.ndarray, np.ndarray]:
    """float64 answers and their rounding bounds for sequences of one length (a list of Sequence),
    for the head ``(W, v)`` or, given biases, ``(W, c, v, b)`` (evaluated as :func:`augmented`).

    Sparse sequences (tokens with at most :data:`SPARSE_MAX` nonzeros) are evaluated from
    their nonzeros, in O(nonzeros) per sequence; others densely.  Either way a sequence's
    answer and bound depend on that sequence alone, not on the batch.
    """
    if _biased(c, b):
        from .sequences import Sequence

        d = W.shape[0]
        W, v = augmented(W, v, c, b)
        seqs = [Sequence.sparse(d + 1, [dict(r) | {d: 1} for r in s.rows]) for s in seqs]
    rows_of = [s.rows for s in seqs]
    dense = [i for i, rows in enumerate(rows_of) if max(map(len, rows)) > SPARSE_MAX]
    if dense:  # each sequence takes its own path, so its answer does not depend on its batch
        ys, errs = np.empty(len(seqs)), np.empty(len(seqs))
        X = np.stack([seqs[i].to_numpy() for i in dense])
        ys[dense] = np.asarray(evaluate_float(W, v, X)).reshape(-1)
        errs[dense] = float_rounding_bounds(W, v, X, ys[dense])
        rest = [i for i in range(len(seqs)) if i not in set(dense)]
        if rest:
            ys[rest], errs[rest] = evaluate_sequences(W, v, [seqs[i] for i in rest])
        return ys, errs
    idx, val = _sparse(seqs, W.shape[0], rows_of)
    s, c = _sparse_terms(W, v, idx, val)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    ys = np.einsum("ni,ni->n", e, c, optimize=False) / e.sum(axis=1)
    # the same bound as float_rounding_bounds, from the nonzeros
    A = np.abs(val)
    k = np.maximum(1, (val != 0).sum(axis=2).max(axis=1))
    g = (k + 2) * _EPS
    ds_raw, _ = _sparse_terms(np.abs(W), np.abs(v), idx, A)
    ds = 2 * g[:, None] * ds_raw
    ca = np.einsum("ntk,ntk->nt", A, np.abs(v)[idx], optimize=False)
    cc = np.abs(c) + g[:, None] * ca
    N = val.shape[1]
    with np.errstate(over="ignore"):
        rel = np.expm1(2 * ds.max(axis=1)) + (N + 6) * _EPS
        err = cc.max(axis=1) * rel + g * ca.max(axis=1) + 4 * _EPS * np.abs(ys)
    return ys, 2 * err + 1e-300
