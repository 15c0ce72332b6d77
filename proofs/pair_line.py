"""Symbolic proof of the pair-line identity of multi-head attention (the pair plan, docs/multi-head.md).

With k copies of a token u_a, one copy of u_b and the final token q, every head h gives

    f([u_a,...,u_a, u_b, q]) = A - sum_h C_h / (1 + k R_h),
    R_h = r_h / (1 + t_h),  C_h = ca_h - cb_h t_h/(1 + t_h),

with A = u_a^T sum_h v_h, ca_h = (u_a - q)^T v_h, cb_h = (u_b - q)^T v_h, r_h = e^{(u_a - q)^T W_h q}
and t_h = e^{(u_b - q)^T W_h q}: a rational function of k of type (H, H).  The residue lies strictly
between ca_h and ca_h - cb_h (it names its head), and (r_h, t_h) come back from (R_h, C_h, ca_h, cb_h).
Per head, e^{s_q}, r_h and t_h are positive symbols from :class:`proofs.expsymbols.ExpSymbols` and the
copies' exponentials are assigned after bilinearity is checked, so every identity is decided in a
rational function field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import sympy

from proofs._symbolic import _Check, _expands_to_zero, _is_identity, _positive_ints, _softmax_readout, _verdict, _weights
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols

__all__ = ["prove_pair_line"]

_STATEMENT = (
    "With k copies of u_a, one copy of u_b and the final token q, H heads (W_h, v_h) give "
    "f = A - sum_h C_h/(1 + k R_h) with R_h = r_h/(1 + t_h), C_h = ca_h - cb_h t_h/(1 + t_h), A = u_a^T sum_h v_h, "
    "ca_h = (u_a - q)^T v_h, cb_h = (u_b - q)^T v_h, r_h = exp((u_a - q)^T W_h q), t_h = exp((u_b - q)^T W_h q), "
    "for every k >= 0 (type (H, H) in k); C_h lies strictly between ca_h and ca_h - cb_h when cb_h != 0, and "
    "t_h = theta/(1 - theta) with theta = (ca_h - C_h)/cb_h, r_h = R_h (1 + t_h)."
)
_METHOD = (
    "per head, e^{s_q} -> E_q, r_h -> R_h, t_h -> T_h positive symbols and k a positive integer symbol; each "
    "identity checked in the rational function field (sympy.cancel); the interval by the identity "
    "(C - ca)(C - ca + cb) = -cb^2 T/(1 + T)^2; degrees in k from sympy.together; explicit sequences for small k "
    "at d=2 with fully symbolic tokens, W_h and v_h"
)


def _pole(r: sympy.Expr, t: sympy.Expr) -> sympy.Expr:
    """The pole's R_h = r_h / (1 + t_h)."""
    return r / (1 + t)


def _pair_checks(n_heads: int, pole: Callable[[sympy.Expr, sympy.Expr], sympy.Expr]) -> list[_Check]:
    k = sympy.Symbol("k", integer=True, positive=True)
    scope = f"for H={n_heads}"
    outputs, closed_terms, per_head, interval, inverse = [], [], [], [], []
    A = 0
    for h in range(n_heads):
        table = ExpSymbols(f"E{h}")
        s_q, la, lb = sympy.symbols(f"s_q{h} La_{h} Lb_{h}", real=True)
        e_q = table(s_q, name=f"E_q{h}")
        r = table(la, name=f"R_{h}")
        t = table(lb, name=f"T_{h}")
        e_a = table.assign(s_q + la, e_q * r)  # s_a = s_q + (u_a - q)^T W_h q (bilinearity)
        e_b = table.assign(s_q + lb, e_q * t)
        a, b, c = sympy.symbols(f"a_{h} b_{h} c_{h}")  # u_a^T v_h, u_b^T v_h, q^T v_h
        output = (k * e_a * a + e_b * b + e_q * c) / (k * e_a + e_b + e_q)
        outputs.append(output)
        ca, cb = a - c, b - c
        R = pole(r, t)
        C = ca - cb * t / (1 + t)
        term = C / (1 + k * R)
        closed_terms.append(term)
        A += a
        per_head.append(_is_identity(output, a - term))
        interval.append(_is_identity((C - ca) * (C - ca + cb), -cb**2 * t / (1 + t) ** 2))
        theta = (ca - C) / cb
        inverse.append(_is_identity(theta / (1 - theta), t) and _is_identity(R * (1 + theta / (1 - theta)), r))
    closed = A - sympy.Add(*closed_terms)
    sum_ok = _is_identity(sympy.Add(*outputs), closed)
    numerator, denominator = sympy.fraction(sympy.together(closed))
    deg_num, deg_den = sympy.Poly(numerator, k).degree(), sympy.Poly(denominator, k).degree()
    type_ok = deg_num <= n_heads and deg_den <= n_heads
    explicit_ok = _explicit(n_heads, pole)
    return [
        _Check(f"per head {scope}",
               "per head h, with e^{s_a} = E_q R_h and e^{s_b} = E_q T_h: cancel((k E_q R_h a_h + E_q T_h b_h + "
               "E_q c_h)/(k E_q R_h + E_q T_h + E_q) - (a_h - C_h/(1 + k R_h/(1 + T_h)))) "
               f"{_verdict(all(per_head))} for h = 1..{n_heads}, symbolic k", all(per_head)),
        _Check(f"sum over heads {scope}", f"cancel(sum_h head_h - (A - sum_h C_h/(1 + k R_h))) {_verdict(sum_ok)}",
               sum_ok),
        _Check(f"rational type {scope}",
               f"together(A - sum_h C_h/(1 + k R_h)) has degree {deg_num} in k in the numerator and {deg_den} in "
               f"the denominator, both <= H = {n_heads}" + ("" if type_ok else " (check FAILED)"), type_ok),
        _Check(f"residue interval {scope}",
               "cancel((C_h - ca_h)(C_h - ca_h + cb_h) + cb_h^2 T_h/(1 + T_h)^2) "
               f"{_verdict(all(interval))}: negative for T_h > 0 and cb_h != 0, so C_h lies strictly between ca_h "
               "and ca_h - cb_h", all(interval)),
        _Check(f"inversion {scope}",
               "theta = (ca_h - C_h)/cb_h: cancel(theta/(1 - theta) - T_h) and cancel(R(1 + T_h) - R_h) "
               f"{_verdict(all(inverse))}", all(inverse)),
        _Check(f"explicit sequences {scope}",
               "explicit sequences [u_a,...,u_a,u_b,q] with k in [0, 1, 2] copies and fully symbolic u_a, u_b, q, "
               f"W_h, v_h at d=2: the softmax output minus the closed form {_verdict(explicit_ok)}", explicit_ok),
    ]


def _explicit(n_heads: int, pole, d: int = 2, ks=(0, 1, 2)) -> bool:
    ua = sympy.Matrix(sympy.symbols(f"ua_0:{d}"))
    ub = sympy.Matrix(sympy.symbols(f"ub_0:{d}"))
    q = sympy.Matrix(sympy.symbols(f"q_0:{d}"))
    heads = []
    for h in range(n_heads):
        w = sympy.Matrix(d, d, sympy.symbols(f"W{h}_0:{d}_0:{d}"))
        v = sympy.Matrix(sympy.symbols(f"v{h}_0:{d}"))
        table = ExpSymbols(f"X{h}")
        s_q = (q.T * w * q)[0, 0]
        e_q = table(s_q)
        r = table(((ua - q).T * w * q)[0, 0], name=f"r_{h}")
        t = table(((ub - q).T * w * q)[0, 0], name=f"t_{h}")
        for tok, ratio in ((ua, r), (ub, t)):
            s = (tok.T * w * q)[0, 0]
            if not _expands_to_zero(s - s_q - ((tok - q).T * w * q)[0, 0]):
                return False
            table.assign(s, e_q * ratio)
        heads.append((w, v, table, r, t))
    for k in ks:
        x = sympy.Matrix([list(ua)] * k + [list(ub), list(q)])
        f = 0
        closed = 0
        for w, v, table, r, t in heads:
            f += _softmax_readout(_weights(x, w, table), [(x[i, :] * v)[0, 0] for i in range(x.rows)])
            ca, cb = ((ua - q).T * v)[0, 0], ((ub - q).T * v)[0, 0]
            closed += (ua.T * v)[0, 0] - (ca - cb * t / (1 + t)) / (1 + k * pole(r, t))
        if not _is_identity(f, closed):
            return False
    return True


def prove_pair_line(*, heads: Iterable[int] = (1, 2, 3),
                    pole: Callable[[sympy.Expr, sympy.Expr], sympy.Expr] = _pole) -> Proof:
    """Prove the pair-line identity for a symbolic number of copies, the residue interval and the inversion.

    Parameters
    ----------
    heads : iterable of int, default (1, 2, 3)
        Numbers of heads H to check.
    pole : callable, default ``r/(1 + t)``
        The claimed pole ``R_h(r_h, t_h)``; a wrong one makes the checks fail.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if every check reduced exactly as required.

    Examples
    --------
    >>> prove_pair_line(heads=(2,)).verified
    True
    >>> prove_pair_line(heads=(1,), pole=lambda r, t: r / t).verified   # a false pole
    False
    """
    heads = _positive_ints(heads, "heads")
    checks: list[_Check] = []
    for n_heads in heads:
        checks += _pair_checks(n_heads, pole)
    return Proof.from_checks("pair line", _STATEMENT, _METHOD, checks, heads=list(heads))
