"""Lemma A.1 [BSHK26]: sigma^{-1} is 5-Lipschitz on [sigma(-1/2), 1 - sigma(-1/2)].

The exact part (identities in E = e^t, a positive symbol from
:class:`proofs.expsymbols.ExpSymbols`; monotonicity by substitution; the
derivative of sigma^{-1}) is decided in a rational function field.  The one
numerical statement, 2 + 2 cosh(1/2) < bound, is decided twice: by ball
arithmetic (python-flint ``arb``) and, independently, by exact rational bounds
on e from its series.

The same statement is proved in Coq, in ``proofs/coq/lemma_a1.v``:
``lemma_a1``, ``lemma_a1_constant``, ``lemma_a1_not_4`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

import math
import numbers
from fractions import Fraction

import flint
import sympy

from proofs._symbolic import _Check, _is_identity, _sigmoid, _verdict
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols

__all__ = ["prove_lemma_a1"]

_LEMMA_METHOD = (
    "rational-function identities in E = e^t (sympy.cancel); sign of d/dt by substitution E = 1 + p "
    "or 1/(1 + p), p > 0; exact derivative (sympy.diff); the constant 2 + 2 cosh(1/2) bounded by "
    "python-flint arb ball arithmetic and, independently, by exact rational bounds on e from its series"
)
_FLINT_PRECISIONS = (53, 128, 512, 2048)


def _as_fraction(bound: object) -> Fraction:
    """Return ``bound`` as an exact fraction (ints, fractions, sympy rationals and finite floats).

    Raises
    ------
    TypeError
        If ``bound`` is not a real rational or finite float.
    """
    if isinstance(bound, bool):
        raise TypeError("bound must be a number, not a bool")
    if isinstance(bound, sympy.Rational):
        return Fraction(int(bound.p), int(bound.q))
    if isinstance(bound, numbers.Rational):
        return Fraction(bound)
    if isinstance(bound, float) and math.isfinite(bound):
        return Fraction(bound)
    raise TypeError(f"bound must be a rational number or a finite float, got {bound!r}")


def _e_bounds(terms: int) -> tuple[Fraction, Fraction]:
    """Return rationals lo < e < hi from the series of e truncated after 1/terms!.

    lo is the partial sum (all omitted terms are positive); for n > N,
    n! >= N! (N + 1)^{n - N}, so the tail is at most 1/(N! N).
    """
    partial = sum(Fraction(1, math.factorial(n)) for n in range(terms + 1))
    return partial, partial + Fraction(1, math.factorial(terms) * terms)


def _rational_decision(bound: Fraction, max_iterations: int = 200) -> dict[str, object]:
    """Decide 2 + e^{1/2} + e^{-1/2} < bound with exact rational brackets.

    Starts from 8/5 < e^{1/2} < 33/20 and, if that does not decide, bisects the
    bracket of e^{1/2} (adding series terms for e when needed).

    Returns
    -------
    dict
        ``certified`` (sup < bound proved), ``refuted`` (sup >= bound proved),
        the bracket of e and of e^{1/2} used, and the resulting bracket of the sup.
    """
    terms = 6
    e_lo, e_hi = _e_bounds(terms)
    lo, hi = Fraction(8, 5), Fraction(33, 20)
    for _ in range(max_iterations):
        upper = 2 + hi + 1 / lo  # e^{1/2} < hi and e^{-1/2} < 1/lo
        lower = 2 + lo + 1 / hi
        if upper < bound or lower >= bound:
            break
        mid = (lo + hi) / 2
        while e_lo <= mid * mid <= e_hi:
            terms += 2
            e_lo, e_hi = _e_bounds(terms)
        if mid * mid < e_lo:
            lo = mid
        else:
            hi = mid
    bracketed = lo * lo < e_lo and hi * hi > e_hi  # lo^2 < e < hi^2, i.e. lo < e^{1/2} < hi
    return {
        "certified": bracketed and upper < bound,
        "refuted": bracketed and lower >= bound,
        "series_terms": terms,
        "e": (e_lo, e_hi),
        "sqrt_e": (lo, hi),
        "sup": (lower, upper),
    }


def _arb_decision(bound: Fraction) -> dict[str, object]:
    """Decide 2 + 2 cosh(1/2) < bound with arb balls, raising the precision until decided."""
    saved = flint.ctx.prec
    try:
        for prec in _FLINT_PRECISIONS:
            flint.ctx.prec = prec
            sup = 2 + 2 * (flint.arb(1) / 2).cosh()
            scaled = sup * bound.denominator  # compare with an integer: no rounding of the bound
            certified = bool(scaled < bound.numerator)
            refuted = bool(scaled >= bound.numerator)
            if certified or refuted:
                break
        return {
            "certified": certified,
            "refuted": refuted,
            "precision_bits": prec,
            "ball": sup.str(20, radius=True),
            "mid": float(sup.mid()),
        }
    finally:
        flint.ctx.prec = saved


def _lemma_symbolic_checks() -> list[_Check]:
    """The exact part of Lemma A.1: identities in E = e^t, monotonicity, derivative of sigma^{-1}."""
    e = ExpSymbols()(sympy.Symbol("t", real=True), name="E")  # E = e^t
    p = sympy.Symbol("p", positive=True)
    a = sympy.Symbol("a", positive=True)
    sigma, sigma_neg = _sigmoid(e), _sigmoid(1 / e)  # sigma(t), sigma(-t)
    g = e + 2 + 1 / e

    reflect = _is_identity(1 - sigma_neg, sigma)
    sigma_slope = _is_identity(e * sympy.diff(sigma, e), sigma * (1 - sigma))  # d/dt = E d/dE
    reciprocal = _is_identity(1 / (sigma * (1 - sigma)), g)
    symmetric = _is_identity(g.subs(e, 1 / e), g)
    slope = sympy.cancel(e * sympy.diff(g, e))  # dg/dt = E - 1/E
    slope_is = _is_identity(slope, e - 1 / e)
    right = sympy.cancel(slope.subs(e, 1 + p))  # t > 0  <=>  E > 1
    left = sympy.cancel(slope.subs(e, 1 / (1 + p)))  # t < 0  <=>  E < 1
    monotone = slope_is and right.is_positive is True and left.is_negative is True
    endpoint = _is_identity(sigma * sigma_neg, sigma * (1 - sigma))
    concave = sympy.diff(a * (1 - a), a, 2) == -2
    logit_slope = sympy.diff(sympy.log(a / (1 - a)), a)
    derivative = _is_identity(logit_slope, 1 / (a * (1 - a)))

    return [
        _Check(
            "interval",
            "I = [sigma(-1/2), 1 - sigma(-1/2)] = sigma([-1/2, 1/2]): with E = e^t > 0, "
            f"cancel(1 - sigma(-t) - sigma(t)) {_verdict(reflect)}, and sigma is increasing since "
            f"cancel(d sigma/dt - sigma(1 - sigma)) {_verdict(sigma_slope)} with sigma(1 - sigma) > 0; "
            "so every a in I is a = sigma(t) with |t| <= 1/2",
            reflect and sigma_slope,
        ),
        _Check(
            "reciprocal",
            "1/(a(1 - a)) at a = sigma(t) equals g(t) = e^t + 2 + e^{-t} = 2 + 2 cosh t: "
            f"cancel(1/(sigma(t)(1 - sigma(t))) - (E + 2 + 1/E)) {_verdict(reciprocal)}",
            reciprocal,
        ),
        _Check(
            "monotone in |t|",
            f"g is even (cancel(g(1/E) - g(E)) {_verdict(symmetric)}) and dg/dt = E dg/dE = E - 1/E "
            f"(cancel(E dg/dE - (E - 1/E)) {_verdict(slope_is)}); for t > 0 put E = 1 + p, p > 0: dg/dt = {right} > 0 "
            f"({right.is_positive}); for t < 0 put E = 1/(1 + p): dg/dt = {left} < 0 ({left.is_negative}); "
            "so g increases with |t| and max_{|t| <= 1/2} g = g(1/2) = e^{1/2} + 2 + e^{-1/2}",
            symmetric and monotone,
        ),
        _Check(
            "endpoints",
            f"equivalently, a(1 - a) is concave (d^2/da^2 = {sympy.diff(a * (1 - a), a, 2)}), so on I its "
            "minimum is at an endpoint, where a(1 - a) = sigma(1/2) sigma(-1/2) = e^{1/2}/(1 + e^{1/2})^2: "
            f"cancel(sigma(t) sigma(-t) - sigma(t)(1 - sigma(t))) {_verdict(endpoint)}",
            endpoint and concave,
        ),
        _Check(
            "derivative",
            f"d/da sigma^{{-1}}(a) = d/da log(a/(1 - a)) = {logit_slope}; "
            f"cancel(that - 1/(a(1 - a))) {_verdict(derivative)}, positive on (0, 1); by the mean value "
            "theorem |sigma^{-1}(x) - sigma^{-1}(y)| <= (sup_I 1/(a(1 - a))) |x - y| on I, and clipping "
            "to I is 1-Lipschitz, so the clipped sigma^{-1} has Lipschitz constant sup_I 1/(a(1 - a)) "
            "= 2 + 2 cosh(1/2)",
            derivative,
        ),
    ]


def _fraction_text(value: Fraction) -> str:
    """Render a fraction as ``p/q (~ decimal)``."""
    return f"{value} (~{float(value):.6g})"


def prove_lemma_a1(*, bound: int | Fraction | float = 5) -> Proof:
    """Prove Lemma A.1: sigma^{-1} is ``bound``-Lipschitz on I = [sigma(-1/2), 1 - sigma(-1/2)].

    The derivative of sigma^{-1}(a) = log(a/(1 - a)) is 1/(a(1 - a)).  Writing
    a = sigma(t), the interval I is exactly |t| <= 1/2, and
    1/(sigma(t)(1 - sigma(t))) = e^t + 2 + e^{-t} = 2 + 2 cosh t increases
    with |t|, so sup_I 1/(a(1 - a)) = 2 + 2 cosh(1/2) ≈ 4.2553.  By the mean
    value theorem this sup is the Lipschitz constant of sigma^{-1} on I (and
    of the clipped sigma^{-1}, clipping being 1-Lipschitz).  The bound
    2 + 2 cosh(1/2) < ``bound`` is decided twice, by arb ball arithmetic and
    by exact rationals (8/5 < e^{1/2} < 33/20 from 1957/720 < e < 11743/4320,
    refined by bisection when ``bound`` is closer to the sup).  Used by the
    noisy learner of Theorem 6.1 of [BSHK26] (not implemented yet).

    Parameters
    ----------
    bound : int, Fraction or float, default 5
        The Lipschitz constant to certify; any value <= 4.2552... is refuted.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if the symbolic checks hold and both
        the arb and the rational computation prove sup < ``bound``;
        ``details`` holds the numeric sup, the arb ball, the rational
        brackets and each check's outcome.

    Raises
    ------
    TypeError
        If ``bound`` is not a rational number or a finite float.

    Examples
    --------
    >>> proof = prove_lemma_a1()
    >>> proof.verified
    True
    >>> round(proof.details["sup_numeric"], 4)
    4.2553
    >>> prove_lemma_a1(bound=4).verified
    False
    """
    bound_q = _as_fraction(bound)
    checks = _lemma_symbolic_checks()

    ball = _arb_decision(bound_q)
    checks.append(
        _Check(
            "arb bound",
            f"ball arithmetic ({ball['precision_bits']} bits): 2 + 2 cosh(1/2) in {ball['ball']}, "
            + (
                f"strictly below {bound_q}"
                if ball["certified"]
                else f"NOT below {bound_q}" if ball["refuted"] else f"undecided against {bound_q}"
            ),
            bool(ball["certified"]),
        )
    )

    exact = _rational_decision(bound_q)
    e_lo, e_hi = exact["e"]
    lo, hi = exact["sqrt_e"]
    sup_lo, sup_hi = exact["sup"]
    if exact["certified"]:
        verdict = f"< {bound_q}"
    elif exact["refuted"]:
        verdict = f"and 2 + e^{{1/2}} + e^{{-1/2}} > {_fraction_text(sup_lo)} >= {bound_q}: NOT below the bound"
    else:
        verdict = f"undecided against {bound_q}"
    checks.append(
        _Check(
            "rational bound",
            f"exact rationals: the series of e to 1/{exact['series_terms']}! with tail <= 1/(N! N) gives "
            f"{_fraction_text(e_lo)} < e < {_fraction_text(e_hi)}; ({lo})^2 = {_fraction_text(lo * lo)} < e and "
            f"({hi})^2 = {_fraction_text(hi * hi)} > e, so {lo} < e^{{1/2}} < {hi} and e^{{-1/2}} < {1 / lo}; "
            f"hence 2 + e^{{1/2}} + e^{{-1/2}} < 2 + {hi} + {1 / lo} = {_fraction_text(sup_hi)} {verdict}",
            bool(exact["certified"]),
        )
    )
    verified = all(check.ok for check in checks)
    checks.append(
        _Check(
            "conclusion",
            f"sup_I |d sigma^{{-1}}/da| = 2 + 2 cosh(1/2) ~ {ball['mid']:.6f} < {bound_q}: the clipped "
            f"sigma^{{-1}} is {bound_q}-Lipschitz on I"
            if verified
            else f"the Lipschitz constant {bound_q} is not certified (sup = 2 + 2 cosh(1/2) ~ {ball['mid']:.6f})",
            verified,
        )
    )
    return Proof(
        name="lemma A.1",
        statement=(
            f"On I = [sigma(-1/2), 1 - sigma(-1/2)], sigma^{{-1}}(a) = log(a/(1 - a)) is {bound_q}-Lipschitz: "
            "sup_I 1/(a(1 - a)) = 2 + 2 cosh(1/2) ≈ 4.2553"
        ),
        verified=verified,
        method=_LEMMA_METHOD,
        steps=tuple(check.sentence for check in checks),
        details={
            "bound": str(bound_q),
            "sup_expression": "2 + 2*cosh(1/2) = e^(1/2) + 2 + e^(-1/2)",
            "sup_numeric": ball["mid"],
            "sup_arb": ball["ball"],
            "arb_precision_bits": ball["precision_bits"],
            "arb_refuted": bool(ball["refuted"]),
            "rational": {
                "series_terms": exact["series_terms"],
                "e_bracket": [str(e_lo), str(e_hi)],
                "sqrt_e_bracket": [str(lo), str(hi)],
                "sup_bracket": [str(sup_lo), str(sup_hi)],
                "certified": bool(exact["certified"]),
                "refuted": bool(exact["refuted"]),
            },
            "checks": {check.label: check.ok for check in checks},
        },
    )
