"""Toy third-party learners for the corpus plugin's tests (Theorem 4.1 only).

They use nothing but the documented oracle interface (``oracle.d``, ``oracle.query``,
``answer.decimal``, ``answer.rational``), mpmath and the standard library, as a learner
written outside this package would: v from d one-token queries, then each W_ij from one
two-token logit query [e_j + u; e_j], inverted with σ⁻¹ at as many digits as it takes and
read back as the simplest nearby fraction.  ``learn`` is right; ``learn_off_by_1e30`` adds
1e-30 to W[0][0].
"""

from fractions import Fraction

import mpmath


def _unit(d, i, scale=1):
    return [Fraction(scale) if t == i else Fraction(0) for t in range(d)]


def _logit(oracle, v, i, j, p):
    """u_iᵀ W e_j for u = e_i (v_i ≠ 0) or u = e_i + e_p (v_p ≠ 0), as a fraction."""
    d = oracle.d
    u = _unit(d, i) if v[i] != 0 or i == p else [a + b for a, b in zip(_unit(d, i), _unit(d, p))]
    vu = sum(a * b for a, b in zip(v, u))
    b = _unit(d, j)
    answer = oracle.query([[x + y for x, y in zip(b, u)], b])
    digits = 60
    while True:
        with mpmath.workdps(digits + 10):
            ratio = (mpmath.mpf(answer.decimal(digits)) - mpmath.mpf(v[j].numerator) / v[j].denominator) / (
                mpmath.mpf(vu.numerator) / vu.denominator)
            if mpmath.mpf(10) ** (20 - digits) < ratio < 1 - mpmath.mpf(10) ** (20 - digits):
                t = mpmath.log(ratio / (1 - ratio))
                return Fraction(mpmath.nstr(t, digits - 20)).limit_denominator(10**12)
        digits *= 4


def learn(oracle, *, theorem, hints):
    if theorem != "4.1":
        raise NotImplementedError(f"this toy learns single heads only, not {theorem}")
    d = oracle.d
    v = [oracle.query([_unit(d, i)]).rational() for i in range(d)]
    p = next(i for i in range(d) if v[i] != 0)
    W = [[None] * d for _ in range(d)]
    for j in range(d):
        W[p][j] = _logit(oracle, v, p, j, p)
        for i in range(d):
            if i != p:
                s = _logit(oracle, v, i, j, p)
                W[i][j] = s if v[i] != 0 else s - W[p][j]
    return {"W": [[str(x) for x in row] for row in W], "v": [str(x) for x in v]}


def learn_off_by_1e30(oracle, *, theorem, hints):
    out = learn(oracle, theorem=theorem, hints=hints)
    out["W"][0][0] = str(Fraction(out["W"][0][0]) + Fraction(1, 10**30))
    return out
