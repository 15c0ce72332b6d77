"""Exp-polynomials: exact arithmetic and decidable equality.

An *exp-polynomial* is a finite sum ``Σ c_k · e^{q_k}`` with rational coefficients
``c_k`` and rational exponents ``q_k``.  By the Lindemann–Weierstrass theorem the
numbers ``e^{q}`` for distinct rationals ``q`` are linearly independent over the
algebraic numbers, so an exp-polynomial is zero **iff** all its coefficients vanish
once like exponents are merged.  Equality of exp-polynomials, and of their ratios,
is therefore decidable: that is what certificates rest on.

Every exact answer of a softmax model is an :class:`ExpRatio` (numerator over the
softmax normaliser).  Internally numbers are flint ``fmpq`` for speed; the public
constructors accept anything :func:`exact.numbers.to_fraction` accepts.
"""

from __future__ import annotations

import math
from fractions import Fraction

from flint import arb, ctx, fmpq

from .errors import InvalidArgument, InvalidFormat
from .numbers import exact_rational, format_rational, to_fmpq, to_fraction

__all__ = ["ExpPoly", "ExpRatio", "ExpSum", "exp_form_from_json", "softmax2_approx"]


def _q(x) -> fmpq:
    return x if isinstance(x, fmpq) else to_fmpq(to_fraction(x))


class ExpPoly:
    """A normalised exp-polynomial ``Σ c_k e^{q_k}`` (immutable).

    Parameters
    ----------
    terms : iterable of (coefficient, exponent)
        Like exponents are merged and zero coefficients dropped.

    Examples
    --------
    >>> p = ExpPoly([(1, "1/2"), (2, 0), (-1, "1/2")])
    >>> p
    ExpPoly([(2, 0)])
    >>> (ExpPoly([(1, 1)]) * ExpPoly([(1, -1)])) == ExpPoly.constant(1)
    True
    """

    __slots__ = ("_terms",)

    def __init__(self, terms=()):
        self._terms = _merge([(_q(q), _q(c)) for c, q in terms])

    @classmethod
    def _raw(cls, pairs: list) -> "ExpPoly":
        """From ``(exponent, coefficient)`` fmpq pairs, merging like exponents."""
        obj = cls.__new__(cls)
        obj._terms = _merge(pairs)
        return obj

    @classmethod
    def constant(cls, c) -> "ExpPoly":
        """The exp-polynomial ``c · e^0``."""
        return cls([(c, 0)])

    @property
    def terms(self) -> tuple:
        """``((exponent, coefficient), ...)`` sorted by exponent, as ``fmpq``."""
        return self._terms

    def is_zero(self) -> bool:
        """Decide whether the value is exactly zero (Lindemann–Weierstrass)."""
        return not self._terms

    def __eq__(self, other) -> bool:
        if not isinstance(other, ExpPoly):
            return NotImplemented
        return self._terms == other._terms

    def __hash__(self) -> int:
        return hash(self._terms)

    def __neg__(self) -> "ExpPoly":
        obj = ExpPoly.__new__(ExpPoly)
        obj._terms = tuple((q, -c) for q, c in self._terms)
        return obj

    def __add__(self, other: "ExpPoly") -> "ExpPoly":
        return ExpPoly._raw(list(self._terms) + list(other._terms))

    def __sub__(self, other: "ExpPoly") -> "ExpPoly":
        return self + (-other)

    def __mul__(self, other) -> "ExpPoly":
        if not isinstance(other, ExpPoly):
            s = _q(other)
            return ExpPoly._raw([(q, c * s) for q, c in self._terms])
        return ExpPoly._raw([(q1 + q2, c1 * c2) for q1, c1 in self._terms for q2, c2 in other._terms])

    __rmul__ = __mul__

    def shifted(self, q, c) -> "ExpPoly":
        """``self · e^{-q} / c``: every exponent minus ``q``, every coefficient over ``c``."""
        obj = ExpPoly.__new__(ExpPoly)
        obj._terms = tuple((e - q, x / c) for e, x in self._terms)
        return obj

    def max_exponent(self):
        """The largest exponent (``None`` for the zero polynomial)."""
        return self._terms[-1][0] if self._terms else None

    def ball(self, prec: int, *, shift=0) -> arb:
        """A rigorous ball for ``e^{-shift} · Σ c e^{q}`` at ``prec`` bits."""
        with ctx.workprec(prec):
            s = arb(0)
            for q, c in self._terms:
                s += arb(c) * arb(q - shift).exp()
            return s

    def sympy(self):
        """The exact sympy expression ``Σ c·exp(q)``."""
        import sympy

        return sympy.Add(*[_sympy_rational(c) * sympy.exp(_sympy_rational(q)) for q, c in self._terms])

    def to_json(self) -> list:
        """``[[coefficient, exponent], ...]`` with rationals as ``"p/q"`` strings."""
        return [[_fmt(c), _fmt(q)] for q, c in self._terms]

    @classmethod
    def from_json(cls, data) -> "ExpPoly":
        if not isinstance(data, list) or not all(isinstance(t, list) and len(t) == 2 for t in data):
            raise InvalidFormat(f"exp-polynomial: expected a list of [coefficient, exponent] pairs, got {data!r}")
        return cls((c, q) for c, q in data)

    def __repr__(self) -> str:
        inner = ", ".join(f"({_short(c)}, {_short(q)})" for q, c in self._terms)
        return f"ExpPoly([{inner}])"


class ExpRatio:
    """An exact real ``num / den`` with exp-polynomial numerator and denominator.

    Equality is exact and decidable: ``a/b == c/d`` iff ``a·d - c·b`` is the zero
    exp-polynomial.

    Examples
    --------
    >>> half = ExpRatio(ExpPoly([(1, 3)]), ExpPoly([(2, 3)]))
    >>> half == ExpRatio.rational("1/2")
    True
    >>> float(half.ball(64).mid())
    0.5
    """

    __slots__ = ("num", "den")

    def __init__(self, num: ExpPoly, den: ExpPoly):
        if den.is_zero():
            raise InvalidArgument("den: an exp-ratio needs a nonzero denominator, got the zero exp-polynomial")
        self.num = num
        self.den = den

    @classmethod
    def softmax(cls, scores, values) -> "ExpRatio":
        """``Σ c_i e^{s_i} / Σ e^{s_i}`` for ``fmpq`` scores and values: a softmax average.

        >>> from flint import fmpq
        >>> ExpRatio.softmax([fmpq(1), fmpq(1)], [fmpq(2), fmpq(4)]) == ExpRatio.rational(3)
        True
        """
        if len(scores) == 1:  # one token: the value itself
            n = ExpPoly.__new__(ExpPoly)
            n._terms = ((scores[0], values[0]),) if values[0] != 0 else ()
            d = ExpPoly.__new__(ExpPoly)
            d._terms = ((scores[0], _ONE_Q),)
            return cls(n, d)
        if len(scores) == 2:  # the logit primitive's queries: no sort, no merge loop
            (s0, s1), (c0, c1) = scores, values
            n = _new_poly()
            d = _new_poly()
            if s0 == s1:
                c = c0 + c1
                n._terms = ((s0, c),) if c else ()
                d._terms = ((s0, _TWO_Q),)
            else:
                if s1 < s0:
                    s0, s1, c0, c1 = s1, s0, c1, c0
                if c0 and c1:
                    n._terms = ((s0, c0), (s1, c1))
                else:
                    n._terms = ((s0, c0),) if c0 else (((s1, c1),) if c1 else ())
                d._terms = ((s0, _ONE_Q), (s1, _ONE_Q))
            r = _new_ratio()
            r.num, r.den = n, d  # the denominator has positive terms: never zero
            return r
        order = sorted(range(len(scores)), key=scores.__getitem__)
        num: list = []
        den: list = []
        last = None
        for i in order:
            s, c = scores[i], values[i]
            if den and s == last:
                den[-1] = (s, den[-1][1] + 1)
                num[-1] = (s, num[-1][1] + c)
            else:
                den.append((s, _ONE_Q))
                num.append((s, c))
                last = s
        n = ExpPoly.__new__(ExpPoly)
        n._terms = tuple(t for t in num if t[1] != 0)
        d = ExpPoly.__new__(ExpPoly)
        d._terms = tuple(den)
        return cls(n, d)

    @classmethod
    def _of_fmpq(cls, x: fmpq) -> "ExpRatio":
        """The rational ``x`` (an ``fmpq``) as an exp-ratio, without validation (hot paths)."""
        num = ExpPoly.__new__(ExpPoly)
        num._terms = ((_ZERO_Q, x),) if x else ()
        obj = cls.__new__(cls)
        obj.num, obj.den = num, _ONE_POLY
        return obj

    @classmethod
    def rational(cls, x) -> "ExpRatio":
        """The rational ``x`` as an exp-ratio."""
        return cls(ExpPoly.constant(x), ExpPoly.constant(1))

    def as_rational(self):
        """The value as a Fraction if it is rational, else ``None`` (decided exactly).

        ``num/den`` is rational iff ``num = r·den`` term by term (Lindemann–Weierstrass).

        >>> ExpRatio.softmax([fmpq(1)], [fmpq(3, 2)]).as_rational()
        Fraction(3, 2)
        >>> ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(1), fmpq(2)]).as_rational() is None
        True
        """
        num, den = self.num._terms, self.den._terms
        if not num:
            return Fraction(0)
        if len(num) != len(den):
            return None
        r = num[0][1] / den[0][1]
        if any(qn != qd or cn != r * cd for (qn, cn), (qd, cd) in zip(num, den)):
            return None
        return Fraction(int(r.p), int(r.q))

    def normalized(self) -> "ExpRatio":
        """The same value with the denominator's lowest term scaled to ``1·e^0``."""
        q, c = self.den.terms[0]
        if q == 0 and c == 1:
            return self
        return ExpRatio(self.num.shifted(q, c), self.den.shifted(q, c))

    def __add__(self, other: "ExpRatio") -> "ExpRatio":
        if self.den == other.den:
            return ExpRatio(self.num + other.num, self.den)
        return ExpRatio(self.num * other.den + other.num * self.den, self.den * other.den)

    def __eq__(self, other) -> bool:
        if isinstance(other, ExpSum):
            return other == self
        if not isinstance(other, ExpRatio):
            return NotImplemented
        if self.den == other.den:  # a/b == c/b  iff  a == c
            return self.num == other.num
        a, b = self.normalized(), other.normalized()
        if a.num == b.num and a.den == b.den:  # same normal form: equal, no multiplication needed
            return True
        return (self.num * other.den - other.num * self.den).is_zero()

    __hash__ = None  # type: ignore[assignment]  # equal values have many representations

    def ball(self, prec: int) -> arb:
        """A rigorous ball for the value at ``prec`` bits of working precision.

        Exponents are shifted by the largest exponent of the denominator, so nothing
        overflows however large the exponents are.
        """
        den_terms, num_terms = self.den._terms, self.num._terms
        if len(den_terms) == 2 and prec <= 4096:  # a two-token softmax: one exponential
            (q0, d0), (q1, d1) = den_terms  # q0 < q1: shift by q1
            old = ctx.prec
            try:
                ctx.prec = prec
                e = _exp_scaled(q0 - q1, prec)
                den = e * d0 + d1
                num = _ZERO_ARB
                for q, c in num_terms:
                    num = num + (e * c if q == q0 else (arb(c) if q == q1 else _exp_scaled(q - q1, prec) * c))
                return num / den
            finally:
                ctx.prec = old
        shift = self.den.max_exponent()
        old = ctx.prec
        try:
            ctx.prec = prec
            # e^(q - shift) for each exponent, computed once; looked up by linear scan
            # (a handful of terms; fmpq hashing is slower than comparing).
            cache: list = []
            den = arb(0)
            for q, c in self.den.terms:
                e = _exp_scaled(q - shift, prec)
                cache.append((q, e))
                den += e * c
            num = arb(0)
            for q, c in self.num.terms:
                for k, e in cache:
                    if k == q:
                        break
                else:
                    e = _exp_scaled(q - shift, prec)
                num += e * c
            return num / den
        finally:
            ctx.prec = old

    def equals_softmax2(self, s0, c0, s1, c1) -> bool:
        """Whether this value equals ``(c0 e^{s0} + c1 e^{s1}) / (e^{s0} + e^{s1})`` (``fmpq``
        arguments), decided exactly without building that exp-ratio.

        >>> r = ExpRatio.softmax([fmpq(1), fmpq(0)], [fmpq(2), fmpq(5)])
        >>> r.equals_softmax2(fmpq(1), fmpq(2), fmpq(0), fmpq(5)), r.equals_softmax2(fmpq(1), fmpq(2), fmpq(0), fmpq(4))
        (True, False)
        """
        den, num = self.den._terms, self.num._terms
        if len(den) == 2 and den[0][1] == 1 and den[1][1] == 1:  # the usual normal form
            if s1 < s0:
                s0, s1, c0, c1 = s1, s0, c1, c0
            if den[0][0] == s0 and den[1][0] == s1:
                if c0 and c1:
                    return num == ((s0, c0), (s1, c1))
                return num == (((s0, c0),) if c0 else (((s1, c1),) if c1 else ()))
        elif len(den) == 1 and den[0][1] == 2 and s0 == s1 == den[0][0]:
            c = c0 + c1
            return num == (((s0, c),) if c else ())
        return self == ExpRatio.softmax((s0, s1), (c0, c1))  # any other representation: decide in general

    def equals_logistic(self, base, slope, ell) -> bool:
        """Whether this value equals ``base + slope·σ(ell)`` (``fmpq`` arguments), decided exactly;
        without allocation when the denominator has two unit terms and the numerator no others (then
        the value is ``n₀ + (n₁ − n₀)·σ(gap)``, equal for ``ell ≠ 0`` and ``slope ≠ 0`` only if
        ``gap = ±ell`` with matching coefficients).

        >>> r = ExpRatio.softmax([fmpq(3), fmpq(1)], [fmpq(7), fmpq(2)])  # 2 + 5·σ(2)
        >>> r.equals_logistic(fmpq(2), fmpq(5), fmpq(2)), r.equals_logistic(fmpq(2), fmpq(5), fmpq(3))
        (True, False)
        >>> r.equals_logistic(fmpq(7), fmpq(-5), fmpq(-2)), r.equals_logistic(fmpq(2), fmpq(5), fmpq(-2))
        (True, False)
        """
        if not (type(base) is fmpq and type(slope) is fmpq and type(ell) is fmpq):  # exact rationals only
            base, slope, ell = (exact_rational(x, name=n) for x, n in ((base, "base"), (slope, "slope"), (ell, "ell")))
        den, num = self.den._terms, self.num._terms
        if ell != 0 and len(den) == 2 and den[0][1] == 1 and den[1][1] == 1:
            (q0, _), (q1, _) = den  # value = n0 + (n1 − n0)·σ(q1 − q0)
            n0 = n1 = _ZERO_Q
            for q, c in num:
                if q == q0:
                    n0 = c
                elif q == q1:
                    n1 = c
                else:
                    break
            else:
                gap = q1 - q0
                if gap == ell:
                    return n0 == base and n1 - n0 == slope
                if gap == -ell:  # σ(−ℓ) = 1 − σ(ℓ)
                    return n1 == base and n0 - n1 == slope
                if slope != 0:  # a gap other than ±ℓ: never equal (docs/exactness.md, "one logit")
                    return False
        lo, hi = (_ZERO_Q, ell) if ell > 0 else (ell, _ZERO_Q)
        c_lo, c_hi = (base, base + slope) if ell > 0 else (base + slope, base)
        if ell == 0:
            other = ExpRatio(ExpPoly._raw([(_ZERO_Q, 2 * base + slope)]), ExpPoly._raw([(_ZERO_Q, _TWO_Q)]))
        else:
            other = ExpRatio(ExpPoly._raw([(lo, c_lo), (hi, c_hi)]), ExpPoly._raw([(lo, _ONE_Q), (hi, _ONE_Q)]))
        return self == other

    def approx(self) -> float:
        """A float64 approximation of the value (not rigorous: a few ulps for a two-term
        denominator, computed in float arithmetic; otherwise the midpoint of a 64-bit ball).

        >>> round(ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(1), fmpq(3)]).approx(), 12)  # (1 + 3e)/(1 + e)
        2.46211715726
        """
        den = self.den._terms
        if len(den) == 2 and den[0][1] == 1 and den[1][1] == 1:
            (q0, _), (q1, _) = den  # q0 < q1
            t = float(q0 - q1)
            e = math.exp(t) if t > -745.0 else 0.0
            num = 0.0
            for q, c in self.num._terms:
                if q == q1:
                    num += float(c)
                elif q == q0:
                    num += float(c) * e
                else:
                    return float(self.ball(64).mid())
            return num / (1.0 + e)
        return float(self.ball(64).mid())

    def sympy(self):
        """The exact sympy expression ``num/den``."""
        return self.num.sympy() / self.den.sympy()

    def to_json(self) -> dict:
        return {"num": self.num.to_json(), "den": self.den.to_json()}

    @classmethod
    def from_json(cls, data) -> "ExpRatio":
        if not isinstance(data, dict) or set(data) != {"num", "den"}:
            raise InvalidFormat(f"exp-ratio: expected {{'num': ..., 'den': ...}}, got {data!r}")
        den = ExpPoly.from_json(data["den"])
        if den.is_zero():
            raise InvalidFormat("exp-ratio: the denominator is zero")
        return cls(ExpPoly.from_json(data["num"]), den)

    def __repr__(self) -> str:
        return f"ExpRatio({self.num!r}, {self.den!r})"


_LOG2E = 1.4426950408889634
_ONE_Q = fmpq(1)
_TWO_Q = fmpq(2)
_ZERO_Q = fmpq(0)
_ONE_POLY = ExpPoly.__new__(ExpPoly)
_ONE_POLY._terms = ((_ZERO_Q, _ONE_Q),)  # the exp-polynomial 1·e^0


def _new_poly() -> ExpPoly:
    return ExpPoly.__new__(ExpPoly)


def _new_ratio() -> ExpRatio:
    return ExpRatio.__new__(ExpRatio)
_ONE = arb(1)
_ZERO_ARB = arb(0)


def _exp_scaled(x: fmpq, prec: int) -> arb:
    """``e^x`` to *absolute* accuracy about ``2^-prec`` (relative accuracy for ``x >= 0``).

    A tiny ``e^x`` (``x`` very negative) needs only ``prec + x·log2(e)`` relative bits
    to be known to ``2^-prec`` absolutely, plus the bits of ``|x|`` lost when ``x`` is
    rounded; computing it at full precision would cost far more for nothing.
    """
    if x >= -16:  # no precision to save
        return _ONE if x == 0 else arb(x).exp()
    if x.p.bit_length() - x.q.bit_length() > 1000:  # beyond float range: e^x is far below 2^-prec
        bits = 32
    else:
        xf = float(x)
        bits = int(prec + xf * _LOG2E) + max(int(-xf), 1).bit_length() + 16
    if bits < 32:
        bits = 32
    if bits >= prec:
        return arb(x).exp()
    with ctx.workprec(bits):
        return arb(x).exp()


class ExpSum:
    """An exact real ``Σ_g num_g / den_g``: a sum of exp-ratios, such as a multi-head output.

    Terms are kept in a normal form: each denominator is scaled so its lowest term is
    ``1·e^0``, terms with the same denominator are merged (heads with equal score
    vectors merge here), and zero numerators are dropped.  Equal normal forms mean
    equal values; otherwise equality is decided exactly by bringing everything over
    one denominator (always correct, costlier).

    Examples
    --------
    >>> a = ExpRatio(ExpPoly([(1, 0), (2, 1)]), ExpPoly([(1, 0), (1, 1)]))
    >>> b = ExpRatio(ExpPoly([(3, 0), (2, 1)]), ExpPoly([(1, 0), (1, 1)]))
    >>> ExpSum([a, b]) == ExpRatio.rational(4)
    True
    >>> len(ExpSum([a, b]).terms)
    1
    """

    __slots__ = ("terms",)

    terms: tuple

    def __init__(self, ratios=()):
        groups: list = []  # [(den, num)] with normalised dens
        for r in ratios:
            if isinstance(r, ExpSum):
                items = r.terms
            else:
                n = r.normalized()
                items = ((n.den, n.num),)
            for den, num in items:
                for i, (d2, n2) in enumerate(groups):
                    if d2 == den:
                        groups[i] = (d2, n2 + num)
                        break
                else:
                    groups.append((den, num))
        kept = [(d, n) for d, n in groups if not n.is_zero()]
        kept.sort(key=lambda t: tuple((q, c) for q, c in t[0].terms))
        self.terms = tuple(kept)

    def as_ratio(self) -> ExpRatio:
        """The sum over one common denominator."""
        total = ExpRatio.rational(0)
        for den, num in self.terms:
            total = total + ExpRatio(num, den)
        return total

    def __eq__(self, other) -> bool:
        if isinstance(other, ExpRatio):
            other = ExpSum([other])
        if not isinstance(other, ExpSum):
            return NotImplemented
        if self.terms == other.terms:
            return True
        return self.as_ratio() == other.as_ratio()

    __hash__ = None  # type: ignore[assignment]

    def ball(self, prec: int) -> arb:
        """A rigorous ball for the value at ``prec`` bits."""
        total = arb(0)
        old = ctx.prec
        try:
            for den, num in self.terms:
                b = ExpRatio(num, den).ball(prec)
                ctx.prec = prec
                total += b
        finally:
            ctx.prec = old
        return total

    def sympy(self):
        """The exact sympy expression, a sum of ratios."""
        import sympy

        return sympy.Add(*[ExpRatio(n, d).sympy() for d, n in self.terms])

    def to_json(self) -> dict:
        return {"sum": [ExpRatio(n, d).to_json() for d, n in self.terms]}

    @classmethod
    def from_json(cls, data) -> "ExpSum":
        if not isinstance(data, dict) or set(data) != {"sum"} or not isinstance(data["sum"], list):
            raise InvalidFormat(f"exp-sum: expected {{'sum': [ratios]}}, got {data!r}")
        return cls(ExpRatio.from_json(r) for r in data["sum"])

    def __repr__(self) -> str:
        return f"ExpSum({[ExpRatio(n, d) for d, n in self.terms]!r})"


def exp_form_from_json(data):
    """An :class:`ExpRatio` or :class:`ExpSum` from its JSON form."""
    return ExpSum.from_json(data) if isinstance(data, dict) and "sum" in data else ExpRatio.from_json(data)


def _merge(pairs: list) -> tuple:
    """Sort ``(exponent, coefficient)`` pairs, add like exponents, drop zeros.

    Comparisons only, no hashing: exp-polynomials here have a handful of terms.
    """
    pairs.sort(key=_first)
    out: list = []
    for q, c in pairs:
        if out and out[-1][0] == q:
            out[-1] = (q, out[-1][1] + c)
        else:
            out.append((q, c))
    return tuple(t for t in out if t[1] != 0)


def _first(t):
    return t[0]


def _fmt(x: fmpq) -> str:
    return format_rational(to_fraction(x))


def _short(x: fmpq) -> str:
    return str(int(x.p)) if x.q == 1 else f"{int(x.p)}/{int(x.q)}"


def _sympy_rational(x: fmpq):
    import sympy

    return sympy.Rational(int(x.p), int(x.q))


def softmax2_approx(s1, c1, s2, c2) -> float:
    """``(c1 e^s1 + c2 e^s2)/(e^s1 + e^s2)`` in float64 (not rigorous), for ``fmpq`` arguments."""
    if s2 < s1:
        s1, c1, s2, c2 = s2, c2, s1, c1
    t = float(s1 - s2)
    e = math.exp(t) if t > -745.0 else 0.0
    return (float(c1) * e + float(c2)) / (1.0 + e)
