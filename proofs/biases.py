"""Symbolic proof of the normal form of a head with biases, as torch builds it.

A torch head computes ``q = W_Q x_N + b_q``, ``k_i = W_K x_i + b_k``, values
``W_V x_i + b_v``, scores ``s_i = ρ k_iᵀq`` (``ρ = 1/√r``) and the readout
``wᵀ(W_O Σ_i α_i (W_V x_i + b_v) + b_o)``.  The claim: this is the head

    s_i = x_iᵀ(W x_N + c),   f(X) = b + Σ_i softmax(s)_i vᵀx_i,

    W = ρ W_KᵀW_Q,  c = ρ W_Kᵀb_q,  v = W_VᵀW_Oᵀw,  b = wᵀ(W_O b_v + b_o),

for every sequence length N, and ``b_k`` cancels.  The argument has four steps, each
checked exactly: the torch score minus the normal score is a polynomial free of the
token ``x_i`` (so it is one shift ``κ(x_N)`` for all tokens, whatever N); a common shift
leaves the softmax unchanged (an identity of sums over a symbolic N); each token's
value is ``vᵀx_i + b`` (polynomial expansion); and ``Σ α_i (u_i + b) = Σ α_i u_i + b``
(a symbolic-N sum identity).  The whole head is then compared as a rational function
for small N, with every ``e^{s}`` a positive symbol (:mod:`proofs.expsymbols`).

The same statement is proved in Coq, for every dimension and sequence length, in ``proofs/coq/biases.v``:
``bias_normal_form`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy

from proofs._symbolic import _Check, _expands_to_zero, _is_identity, _positive_ints, _softmax_readout, _verdict
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols

__all__ = ["prove_bias_normal_form"]

_STATEMENT = (
    "A torch head with biases, s_i = rho (W_K x_i + b_k)^T (W_Q x_N + b_q) and "
    "f(X) = w^T(W_O sum_i alpha_i (W_V x_i + b_v) + b_o), equals for every N the head "
    "s_i = x_i^T (W x_N + c), f(X) = b + sum_i alpha_i v^T x_i with W = rho W_K^T W_Q, c = rho W_K^T b_q, "
    "v = W_V^T W_O^T w, b = w^T(W_O b_v + b_o); the key bias b_k only adds rho b_k^T(W_Q x_N + b_q) to every "
    "score, so it cancels and is not identifiable."
)
_METHOD = (
    "per-token polynomial identities by expansion (sympy.expand) for symbolic weights, biases and tokens; the "
    "softmax shift and the output-bias step as identities of sums over a symbolic length N (sympy.simplify of "
    "Sum expressions); the whole head for N = 1..3 as a rational-function identity (sympy.cancel) with every "
    "e^{s} a positive symbol, the torch scores' exponentials assigned as E_i * K with K = e^{kappa}"
)


class _Head:
    """Symbolic weights of one torch head: ``d`` tokens' dimension, ``r`` head dimension, ``dv`` value width."""

    def __init__(self, d: int, r: int, dv: int):
        M = lambda name, rows, cols: sympy.Matrix(rows, cols, sympy.symbols(f"{name}_0:{rows}_0:{cols}"))  # noqa: E731
        V = lambda name, n: sympy.Matrix(sympy.symbols(f"{name}_0:{n}"))  # noqa: E731
        self.d = d
        self.Wq, self.Wk, self.Wv, self.Wo = M("q", r, d), M("k", r, d), M("vv", dv, d), M("o", d, dv)
        self.bq, self.bk, self.bv, self.bo, self.w = V("bq", r), V("bk", r), V("bv", dv), V("bo", d), V("w", d)
        self.rho = sympy.Symbol("rho", positive=True)
        self.W = self.rho * self.Wk.T * self.Wq
        self.c = self.rho * self.Wk.T * self.bq
        self.v = self.Wv.T * self.Wo.T * self.w
        self.b = (self.w.T * (self.Wo * self.bv + self.bo))[0, 0]

    def torch_score(self, x, xN):
        return self.rho * ((self.Wk * x + self.bk).T * (self.Wq * xN + self.bq))[0, 0]

    def score(self, x, xN):
        return (x.T * (self.W * xN + self.c))[0, 0]

    def shift(self, xN):
        return self.rho * (self.bk.T * (self.Wq * xN + self.bq))[0, 0]

    def torch_value(self, x):
        return (self.w.T * (self.Wo * (self.Wv * x + self.bv) + self.bo))[0, 0]

    def value(self, x):
        return (self.v.T * x)[0, 0] + self.b


def _token(name: str, d: int) -> sympy.Matrix:
    return sympy.Matrix(sympy.symbols(f"{name}_0:{d}"))


def _per_token_checks(d: int, r: int, dv: int) -> list[_Check]:
    h = _Head(d, r, dv)
    x, xN = _token("x", d), _token("xN", d)
    scope = f"for symbolic d={d}, r={r}, d_v={dv}"
    delta = sympy.expand(h.torch_score(x, xN) - h.score(x, xN))
    free = not (delta.free_symbols & set(x)) and _expands_to_zero(delta - h.shift(xN))
    values = _expands_to_zero(h.torch_value(x) - h.value(x))
    return [
        _Check(f"score shift {scope}",
               "s_i^torch - x_i^T(W x_N + c) = rho b_k^T(W_Q x_N + b_q), free of x_i: "
               f"expand(difference - shift) {_verdict(free)} and no x_i symbol remains {scope}", free),
        _Check(f"token value {scope}",
               f"w^T(W_O(W_V x_i + b_v) + b_o) = v^T x_i + b: expand(difference) {_verdict(values)} {scope}", values),
    ]


def _sum_checks() -> list[_Check]:
    """The two steps that hold for every N, as identities of symbolic sums."""
    N = sympy.Symbol("N", positive=True, integer=True)
    j = sympy.Symbol("j", integer=True)
    E = sympy.IndexedBase("E", positive=True)
    u = sympy.IndexedBase("u")
    K, b = sympy.Symbol("K", positive=True), sympy.Symbol("b")

    def S(e):
        return sympy.Sum(e, (j, 1, N))

    shift = sympy.simplify(S(E[j] * K * u[j]) / S(E[j] * K) - S(E[j] * u[j]) / S(E[j])) == 0
    bias = sympy.simplify(S(E[j] * (u[j] + b)) / S(E[j]) - S(E[j] * u[j]) / S(E[j]) - b) == 0
    return [
        _Check("softmax shift (every N)",
               "a common shift kappa of all N scores cancels: with E_j = e^{s_j} and K = e^{kappa}, "
               f"simplify(sum_j E_j K u_j / sum_j E_j K - sum_j E_j u_j / sum_j E_j) {_verdict(shift)} for symbolic N",
               shift),
        _Check("output bias (every N)",
               "the weights sum to 1: simplify(sum_j E_j (u_j + b) / sum_j E_j - sum_j E_j u_j / sum_j E_j - b) "
               f"{_verdict(bias)} for symbolic N", bias),
    ]


def _whole_head_check(d: int, r: int, dv: int, n: int) -> _Check:
    h = _Head(d, r, dv)
    X = [_token(f"x{i}", d) for i in range(n)]
    xN = X[-1]
    table = ExpSymbols("E")
    K = table(h.shift(xN), name="K")
    normal = [table(h.score(x, xN)) for x in X]
    scope = f"for symbolic d={d}, r={r}, d_v={dv}, N={n}"
    try:  # assign refuses unless s_i^torch expands to s_i + kappa
        shifted = [table.assign(h.torch_score(x, xN), e * K) for x, e in zip(X, normal)]
    except ValueError:
        return _Check(f"whole head {scope}", f"s_i^torch is not s_i + kappa (check FAILED) {scope}", False)
    torch_f = _softmax_readout(shifted, [h.torch_value(x) for x in X])
    normal_f = h.b + _softmax_readout(normal, [(h.v.T * x)[0, 0] for x in X])
    ok = _is_identity(torch_f, normal_f)
    return _Check(f"whole head {scope}",
                  "f^torch(X) = b + sum_i alpha_i v^T x_i with e^{s_i^torch} = E_i K: "
                  f"cancel(difference) {_verdict(ok)} {scope}", ok)


def prove_bias_normal_form(*, dims: Iterable[int] = (1, 2), head_dims: Iterable[int] = (1, 2),
                           lengths: Iterable[int] = (1, 2, 3)) -> Proof:
    """Prove that a torch head with biases is the head ``(W, c, v, b)``, and that ``b_k`` cancels.

    Parameters
    ----------
    dims : iterable of int, default (1, 2)
        Token dimensions ``d`` of the per-token and whole-head checks.
    head_dims : iterable of int, default (1, 2)
        Head dimensions ``r`` (the value width ``d_v`` is taken equal to ``r``).
    lengths : iterable of int, default (1, 2, 3)
        Sequence lengths of the whole-head check (the sum checks hold for every N).

    Returns
    -------
    Proof
        ``verified`` only if every check reduced exactly to 0.

    Examples
    --------
    >>> proof = prove_bias_normal_form(dims=(2,), head_dims=(1,), lengths=(2,))
    >>> proof.verified
    True
    >>> proof.details["checks"]["softmax shift (every N)"]
    True
    """
    dims = _positive_ints(dims, "dims")
    head_dims = _positive_ints(head_dims, "head_dims")
    lengths = _positive_ints(lengths, "lengths")
    checks = _sum_checks()
    for d in dims:
        for r in head_dims:
            checks += _per_token_checks(d, r, r)
            checks += [_whole_head_check(d, r, r, n) for n in lengths]
    return Proof.from_checks("bias normal form", _STATEMENT, _METHOD, checks, dims=list(dims),
                             head_dims=list(head_dims), lengths=list(lengths))
