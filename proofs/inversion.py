"""Symbolic proof of the inversion identity of a one-layer Transformer with biases and a residual.

The block is ``s_i = x_iᵀ(W x_N + c)``, ``h(X) = Σ_i α_i (V x_i + μ)`` with ``Σ_i α_i = 1``, and
the pre-activation ``z(X) = A h(X) + a`` (or ``A(x_N + h(X)) + a`` with the residual).  The claim:
with ``h̄ = Σ_i α_i x_i``,

* without the residual ``z(X) = Â h̄ + â`` with ``Â = AV``, ``â = Aμ + a``;
* with it ``z(X) = Â(x_N + K(h̄ − x_N)) + â`` with ``Â = A(I + V)``, ``K = (I + V)⁻¹V``, ``â = Aμ + a``;

so in both cases ``T(X) = g₁(x_N + K(h̄ − x_N))`` (``K = I`` without the residual), ``g₁(x) = T([x])``
being the FFN of one-token queries.  For the two-token query ``[p + t·u; p]`` the logit is
``ℓ = t·uᵀ(W p + c)`` and ``h̄ = p + σ(ℓ)·t·u``; where ``g₁`` is affine with gradient ``G`` on both
points, ``T₊ − T₋ = t·GᵀKu`` for the pair ``[p ± t·u; p]`` (their weights are ``σ(ℓ)`` and
``σ(−ℓ) = 1 − σ(ℓ)``).  Everything is checked as polynomial or rational-function identities with
symbolic matrices and weights (``(I + V)⁻¹`` through its adjugate over its determinant).
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy

from proofs._symbolic import _Check, _is_identity, _positive_ints, _verdict
from proofs.core import Proof

__all__ = ["prove_transformer_inversion"]

_STATEMENT = (
    "For s_i = x_i^T(W x_N + c), h(X) = sum_i alpha_i (V x_i + mu) with sum alpha_i = 1: A h(X) + a = "
    "A V hbar + (A mu + a), and A(x_N + h(X)) + a = A(I + V)(x_N + K(hbar - x_N)) + (A mu + a) with "
    "K = (I + V)^-1 V and hbar = sum_i alpha_i x_i; so T(X) = g1(x_N + K(hbar - x_N)) with g1(x) = T([x]) "
    "(K = I without the residual). For [p + t u; p] the logit is t u^T(W p + c) and hbar = p + sigma(l) t u; "
    "where g1 is affine with gradient G at both points of [p +- t u; p], T+ - T- = t G^T K u."
)
_METHOD = (
    "polynomial identities by expansion for symbolic A, V, mu, a, tokens and weights (the last weight "
    "1 - sum of the others); the residual identity as a rational-function identity with (I + V)^-1 = "
    "adj(I + V)/det(I + V) (sympy.cancel); the pair identity with sigma(l) = E/(1 + E), sigma(-l) = 1/(1 + E), "
    "E a positive symbol"
)


def _matrix(name: str, rows: int, cols: int) -> sympy.Matrix:
    return sympy.Matrix(rows, cols, sympy.symbols(f"{name}_0:{rows}_0:{cols}"))


def _vector(name: str, n: int) -> sympy.Matrix:
    return sympy.Matrix(sympy.symbols(f"{name}_0:{n}"))


def _zero(M: sympy.Matrix) -> bool:
    return all(_is_identity(x, sympy.Integer(0)) for x in M)


def _checks(d: int, m: int, N: int, broken: bool) -> list[_Check]:
    A, V, mu, a = _matrix("A", m, d), _matrix("V", d, d), _vector("mu", d), _vector("a", m)
    xs = [_vector(f"x{i}", d) for i in range(N)]
    alphas = list(sympy.symbols(f"alpha_0:{N - 1}")) if N > 1 else []
    alphas.append(1 - sum(alphas))
    h = sum((al * (V * x + mu) for al, x in zip(alphas, xs)), sympy.zeros(d, 1))
    hbar = sum((al * x for al, x in zip(alphas, xs)), sympy.zeros(d, 1))
    xN = xs[-1]
    I = sympy.eye(d)
    plain = A * h + a - (A * V * hbar + A * mu + a)
    K = V if broken else (I + V).adjugate() * V / (I + V).det()  # the control forgets the inverse
    residual = A * (xN + h) + a - (A * (I + V) * (xN + K * (hbar - xN)) + A * mu + a)
    ok_plain, ok_res = _zero(plain), _zero(residual)
    where = f"d = {d}, m = {m}, N = {N}"
    return [
        _Check(f"no residual ({where})", f"{where}: A h(X) + a − (AV h̄ + Aμ + a) expands to 0: {_verdict(ok_plain)}", ok_plain),
        _Check(f"residual ({where})", f"{where}: A(x_N + h(X)) + a − (A(I + V)(x_N + K(h̄ − x_N)) + Aμ + a) with "
               f"{'K = V (control)' if broken else 'K = adj(I + V)V/det(I + V)'} cancels to 0: {_verdict(ok_res)}",
               ok_res),
    ]


def _pair_checks(d: int) -> list[_Check]:
    W, c, p, u = _matrix("W", d, d), _vector("c", d), _vector("p", d), _vector("u", d)
    t = sympy.Symbol("t", positive=True)
    E = sympy.Symbol("E", positive=True)  # e^ℓ
    s_top, s_p = ((p + t * u).T * (W * p + c))[0, 0], (p.T * (W * p + c))[0, 0]
    ell = t * (u.T * (W * p + c))[0, 0]
    ok_logit = _is_identity(s_top - s_p, ell)
    alpha = E / (1 + E)  # the top token's weight, σ(ℓ); that of [p − t·u; p] is σ(−ℓ) = 1/(1 + E)
    hbar = alpha * (p + t * u) + (1 - alpha) * p
    ok_point = _zero(hbar - (p + alpha * t * u))
    G, K, g0 = _vector("G", d), _matrix("K", d, d), sympy.Symbol("g0")
    plus = g0 + (G.T * K * (alpha * t * u))[0, 0]  # g₁ affine: g₁(p + v) = g₁(p) + Gᵀv
    minus = g0 + (G.T * K * ((1 / (1 + E)) * (-t) * u))[0, 0]
    ok_pair = _is_identity(plus - minus, t * (G.T * K * u)[0, 0])
    return [
        _Check(f"logit (d = {d})", f"d = {d}: s(p + t·u) − s(p) − t·uᵀ(Wp + c) expands to 0: {_verdict(ok_logit)}", ok_logit),
        _Check(f"segment (d = {d})", f"d = {d}: h̄ of [p + t·u; p] is p + σ(ℓ)·t·u: {_verdict(ok_point)}", ok_point),
        _Check(f"pair (d = {d})", f"d = {d}: T₊ − T₋ = t·GᵀKu for σ(ℓ) = E/(1 + E), σ(−ℓ) = 1/(1 + E): {_verdict(ok_pair)}",
               ok_pair),
    ]


def prove_transformer_inversion(
    *, dims: Iterable[int] = (1, 2), hidden: Iterable[int] = (1, 2), lengths: Iterable[int] = (1, 2, 3),
    _broken: bool = False,
) -> Proof:
    """Prove ``T(X) = g₁(x_N + K(h̄ − x_N))`` for the block with biases (``K = (I + V)⁻¹V`` with the
    residual, ``I`` without), and the logit and pair identities the learner reads it by.

    Parameters
    ----------
    dims, hidden, lengths : iterable of int
        Token dimensions ``d``, hidden widths ``m`` and sequence lengths ``N`` checked.

    Returns
    -------
    Proof
        ``verified`` only if every identity reduced exactly.

    Examples
    --------
    >>> prove_transformer_inversion(dims=(2,), hidden=(1,), lengths=(2,)).verified
    True
    >>> prove_transformer_inversion(dims=(2,), hidden=(1,), lengths=(2,), _broken=True).verified  # K = V: false
    False
    """
    dims, hidden, lengths = (_positive_ints(x, name) for x, name in ((dims, "dims"), (hidden, "hidden"),
                                                                    (lengths, "lengths")))
    checks: list[_Check] = []
    for d in dims:
        for m in hidden:
            for N in lengths:
                checks += _checks(d, m, N, _broken)
        checks += _pair_checks(d)
    return Proof.from_checks("transformer inversion", _STATEMENT, _METHOD, checks, dims=list(dims),
                             hidden=list(hidden), lengths=list(lengths))
