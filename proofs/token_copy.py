"""Symbolic proof of the token-copy identity of multi-head attention (SPEC 3.7, 3.9).

For H heads and the sequence of k copies of u followed by q,
f([u,...,u,q]) = A - sum_h c_h / (1 + k r_h), for a symbolic number k of
copies.  Per head, e^{s_q} and r_h = e^{(u - q)^T W_h q} are positive symbols
from :class:`proofs.expsymbols.ExpSymbols` and e^{s_u} = e^{s_q} r_h is
assigned after bilinearity has been checked, so the identity is decided in a
rational function field of k and those symbols.

The same statement is proved in Coq, for every dimension and sequence length, in ``proofs/coq/token_copy.v``:
``token_copy`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import sympy

from proofs._symbolic import (
    _Check,
    _expands_to_zero,
    _is_identity,
    _positive_ints,
    _softmax_readout,
    _verdict,
    _weights,
)
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols

__all__ = ["prove_token_copy"]

_COPY_STATEMENT = (
    "With k copies of a token u followed by q, H heads (W_h, v_h) give "
    "f([u,...,u,q]) = A - sum_h c_h/(1 + k r_h), A = u^T sum_h v_h, c_h = (u - q)^T v_h, "
    "r_h = exp((u - q)^T W_h q), for every k >= 0; as a function of k it is rational of type (H, H)."
)
_COPY_METHOD = (
    "bilinearity by polynomial expansion (sympy.expand) at d=2; per head, e^{s_q} -> E_q and "
    "e^{s_u} = E_q R_h with positive symbols, k a positive integer symbol, and the identity checked in "
    "the rational function field (sympy.cancel); degrees in k from sympy.together; explicit sequences "
    "for small k at d=2 as a consistency check"
)


def _copy_term(k: sympy.Expr, c: sympy.Expr, r: sympy.Expr) -> sympy.Expr:
    """Return the pole term c / (1 + k r) of the token-copy identity."""
    return c / (1 + k * r)


def _token_copy_checks(
    n_heads: int,
    term: Callable[[sympy.Expr, sympy.Expr, sympy.Expr], sympy.Expr] = _copy_term,
    explicit_k: Sequence[int] = (0, 1, 2, 3),
) -> list[_Check]:
    """Check the token-copy identity for ``n_heads`` heads and a symbolic k.

    Parameters
    ----------
    n_heads : int
        Number of heads H.
    term : callable, default c / (1 + k r)
        Pole term ``term(k, c_h, r_h)`` of the claimed closed form
        A - sum_h term(k, c_h, r_h); a wrong one makes the checks fail.
    explicit_k : sequence of int, default (0, 1, 2, 3)
        Numbers of copies for the explicit-sequence check at d = 2.

    Returns
    -------
    list of _Check
        Per-head identity, sum over heads, rational type (H, H), explicit sequences.
    """
    k = sympy.Symbol("k", integer=True, positive=True)
    table = ExpSymbols()
    exp_q, ratio, exp_u = [], [], []
    for h in range(n_heads):
        s_q, logit = sympy.symbols(f"s_q{h} L_{h}", real=True)  # q^T W_h q and (u - q)^T W_h q
        exp_q.append(table(s_q, name=f"E_q{h}"))
        ratio.append(table(logit, name=f"R_{h}"))
        exp_u.append(table.assign(s_q + logit, exp_q[h] * ratio[h]))  # s_u = s_q + L_h (bilinearity)
    value_u = sympy.symbols(f"a_0:{n_heads}")
    value_q = sympy.symbols(f"b_0:{n_heads}")
    scope = f"for H={n_heads}"

    outputs, per_head = [], []
    for h in range(n_heads):
        output = (k * exp_u[h] * value_u[h] + exp_q[h] * value_q[h]) / (k * exp_u[h] + exp_q[h])
        outputs.append(output)
        per_head.append(_is_identity(output, value_u[h] - term(k, value_u[h] - value_q[h], ratio[h])))
    head_ok = all(per_head)
    closed = sympy.Add(*value_u) - sympy.Add(
        *(term(k, value_u[h] - value_q[h], ratio[h]) for h in range(n_heads))
    )
    sum_ok = _is_identity(sympy.Add(*outputs), closed)
    numerator, denominator = sympy.fraction(sympy.together(closed))
    deg_num = sympy.Poly(numerator, k).degree()
    deg_den = sympy.Poly(denominator, k).degree()
    type_ok = deg_num <= n_heads and deg_den <= n_heads

    explicit_ok = _explicit_copy_check(n_heads, term, explicit_k)
    return [
        _Check(
            f"per head {scope}",
            "per head h, the k copies have score s_u = u^T W_h q and the last token s_q = q^T W_h q, so the "
            "copies carry weight k e^{s_u}/(k e^{s_u} + e^{s_q}); with e^{s_u} = E_q R_h: "
            "cancel((k E_q R_h a_h + E_q b_h)/(k E_q R_h + E_q) - (a_h - (a_h - b_h)/(1 + k R_h))) "
            f"{_verdict(head_ok)} for h = 1..{n_heads}, symbolic k (a_h = u^T v_h, b_h = q^T v_h)",
            head_ok,
        ),
        _Check(
            f"sum over heads {scope}",
            "summing the heads: cancel(sum_h head_h - (A - sum_h c_h/(1 + k R_h))) "
            f"{_verdict(sum_ok)} with A = sum_h a_h, c_h = a_h - b_h, {scope}",
            sum_ok,
        ),
        _Check(
            f"rational type {scope}",
            f"together(A - sum_h c_h/(1 + k R_h)) has degree {deg_num} in k in the numerator and {deg_den} "
            f"in the denominator, both <= H = {n_heads}: a rational function of k of type (H, H)"
            + ("" if type_ok else " (check FAILED)"),
            type_ok,
        ),
        _Check(
            f"explicit sequences {scope}",
            f"explicit sequences [u,...,u,q] with k in {list(explicit_k)} copies and fully symbolic u, q, "
            f"W_h, v_h at d=2 (each copy's score expands to u^T W_h q): the softmax output minus the closed "
            f"form {_verdict(explicit_ok)}",
            explicit_ok,
        ),
    ]


def _explicit_copy_check(
    n_heads: int,
    term: Callable[[sympy.Expr, sympy.Expr, sympy.Expr], sympy.Expr],
    explicit_k: Sequence[int],
    d: int = 2,
) -> bool:
    """Compare explicit softmax outputs on [u]*k + [q] with the closed form, fully symbolic at dimension d."""
    u = sympy.Matrix(sympy.symbols(f"u_0:{d}"))
    q = sympy.Matrix(sympy.symbols(f"q_0:{d}"))
    heads = []
    for h in range(n_heads):
        w = sympy.Matrix(d, d, sympy.symbols(f"W{h}_0:{d}_0:{d}"))
        v = sympy.Matrix(sympy.symbols(f"v{h}_0:{d}"))
        s_u, s_q = (u.T * w * q)[0, 0], (q.T * w * q)[0, 0]
        table = ExpSymbols(f"E{h}")
        exp_q = table(s_q)
        ratio = table(((u - q).T * w * q)[0, 0], name=f"R_{h}")  # e^{(u - q)^T W_h q}
        if not _expands_to_zero(s_u - s_q - ((u - q).T * w * q)[0, 0]):
            return False
        table.assign(s_u, exp_q * ratio)
        heads.append((w, v, table, ratio))
    for k in explicit_k:
        x = sympy.Matrix([list(u)] * k + [list(q)])
        f = 0
        for w, v, table, _ in heads:
            weights = _weights(x, w, table)
            f += _softmax_readout(weights, [(x[i, :] * v)[0, 0] for i in range(x.rows)])
        a_total = sympy.Add(*((u.T * v)[0, 0] for _, v, _, _ in heads))
        closed = a_total - sympy.Add(*(term(k, ((u - q).T * v)[0, 0], ratio) for _, v, _, ratio in heads))
        if not _is_identity(f, closed):
            return False
    return True


def _bilinear_copy_check(d: int = 2) -> _Check:
    """Check s_u - s_q = (u - q)^T W q for fully symbolic u, q and W at dimension d."""
    u = sympy.Matrix(sympy.symbols(f"u_0:{d}"))
    q = sympy.Matrix(sympy.symbols(f"q_0:{d}"))
    w = sympy.Matrix(d, d, sympy.symbols(f"W_0:{d}_0:{d}"))
    ok = _expands_to_zero((u.T * w * q)[0, 0] - (q.T * w * q)[0, 0] - ((u - q).T * w * q)[0, 0])
    return _Check(
        f"bilinearity d={d}",
        "s_u - s_q = (u - q)^T W_h q by bilinearity, so e^{s_u} = e^{s_q} r_h with r_h = R_h > 0: "
        f"expand(u^T W q - q^T W q - (u - q)^T W q) {_verdict(ok)} for symbolic d={d}",
        ok,
    )


def prove_token_copy(*, heads: Iterable[int] = (1, 2, 3)) -> Proof:
    """Prove the token-copy identity of multi-head attention for a symbolic number of copies.

    For H heads (W_h, v_h) and the sequence of k copies of u followed by q
    (length k + 1, query q),

        f([u,...,u,q]) = A - sum_h c_h / (1 + k r_h),

    with A = u^T sum_h v_h, c_h = (u - q)^T v_h, r_h = exp((u - q)^T W_h q)
    (SPEC 3.7).  Per head, every copy has score s_u = u^T W_h q and the
    last token s_q = q^T W_h q; bilinearity gives s_u = s_q + (u - q)^T W_h q,
    so e^{s_u} = E_q R_h with positive symbols E_q = e^{s_q}, R_h = r_h.
    The head output is then a rational function of k, E_q, R_h,
    a_h = u^T v_h and b_h = q^T v_h, and the identity holds in that field,
    for symbolic k.  Together with the sum over heads, the right-hand side
    has numerator and denominator of degree <= H in k: type (H, H).

    Parameters
    ----------
    heads : iterable of int, default (1, 2, 3)
        Numbers of heads H to check.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if every check reduced exactly as
        required; ``details`` records ``heads`` and each check's outcome.

    Raises
    ------
    ValueError
        If ``heads`` is empty or holds a non-positive integer.

    Examples
    --------
    >>> proof = prove_token_copy(heads=(2,))
    >>> proof.verified
    True
    >>> proof.details["checks"]["rational type for H=2"]
    True
    """
    heads = _positive_ints(heads, "heads")
    checks = [_bilinear_copy_check()]
    for n_heads in heads:
        checks += _token_copy_checks(n_heads)
    return Proof.from_checks(
        "token copy",
        _COPY_STATEMENT,
        _COPY_METHOD,
        checks,
        heads=list(heads),
    )
