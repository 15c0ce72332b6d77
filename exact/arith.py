"""The three arithmetics a learner runs in: ``symbolic``, ``certified`` and ``float``.

A learner is written once, as a plan of value queries whose answers are either
rational values directly (``f([e_i]) = v_i``) or *logit measurements*: the answer
``y`` of the logit primitive [BSHK26, Sec. 4] satisfies

    y = base + slope · σ(ℓ),   so   ℓ = σ⁻¹((y − base)/slope),

with ``base`` and ``slope`` known from earlier answers.  Each parameter is a fixed
linear combination ``Σ c · ℓ_m / scale_m`` of measurements.  An arithmetic turns
answers into parameters:

``symbolic``
    sympy, exact: each ``e^q`` in an answer becomes an independent positive symbol,
    σ⁻¹ is computed in the rational function field and must reduce to a monomial,
    whose exponent is read back as an exact rational (or the run fails loudly).
``certified``
    python-flint ``arb`` balls.  Without a grid (exact oracles only) each number is
    the simplest rational in its ball, confirmed exactly against the answer it must
    reproduce; precision doubles until it is.  With a grid, each parameter is the
    unique grid point its ball holds.  Refining an answer is not a new query.
``float``
    numpy float64, vectorised, with a first-order error estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, ctx, fmpq

from .certify import answer_equals
from .errors import OracleInconsistent, PrecisionInsufficient
from .expfield import ExpPoly, ExpRatio
from .grids import Grid, certifiable_grids, parse_grid
from .numbers import ball_interval, floor_log2, simplest_between, simplest_in_ball, to_fmpq, to_fraction
from .oracles import ExactAnswer, answer_ball

__all__ = ["Measurement", "Arithmetic", "SymbolicArithmetic", "CertifiedArithmetic", "FloatArithmetic", "get_arithmetic", "MODES"]

MODES = ("certified", "symbolic", "float")

#: Certified mode without a grid gives up on a number once the simplest rationals in
#: its ball are this many bits tall and still do not reproduce the answer: a rational
#: parameter that tall (a 2000-bit denominator) is not a realistic model parameter,
#: while answers that are not of the assumed form would otherwise be refined forever.
MAX_HEIGHT_BITS = 4096


@dataclass(frozen=True)
class Measurement:
    """A logit measurement: ``answer = base + slope·σ(ℓ)`` and the parameter part is ``ℓ/scale``."""

    base: object
    slope: object
    scale: Fraction = Fraction(1)


def primitive_form(base: fmpq, slope: fmpq, logit: fmpq) -> ExpRatio:
    """The exact value ``base + slope·σ(logit)`` as an exp-ratio (``fmpq`` arguments)."""
    if logit == 0:
        return ExpRatio(ExpPoly._raw([(_ZERO, 2 * base + slope)]), ExpPoly._raw([(_ZERO, _TWO)]))
    lo, hi = (_ZERO, logit) if logit > 0 else (logit, _ZERO)
    c_lo, c_hi = (base, base + slope) if logit > 0 else (base + slope, base)
    num = ExpPoly.__new__(ExpPoly)
    num._terms = tuple(t for t in ((lo, c_lo), (hi, c_hi)) if t[1] != 0)
    den = ExpPoly.__new__(ExpPoly)
    den._terms = ((lo, _ONE), (hi, _ONE))
    return ExpRatio(num, den)


_ZERO, _ONE, _TWO = fmpq(0), fmpq(1), fmpq(2)


class Arithmetic:
    """Interface shared by the three arithmetics.

    ``values(answers, names)`` reads answers that are parameters themselves;
    ``combine(answers, measurements, combos, names)`` returns the parameters
    ``Σ c · ℓ_m / scale_m`` for each combo ``[(c, m), ...]``.
    """

    name: str
    exact: bool
    precision: int = 0

    def __init__(self, oracle):
        self.oracle = oracle

    def values(self, answers, names):
        raise NotImplementedError

    def combine(self, answers, measurements, combos, names):
        raise NotImplementedError

    def errors(self) -> float:
        """The largest estimated parameter error (0 for exact arithmetics)."""
        return 0.0


# -- symbolic ---------------------------------------------------------------------


class SymbolicArithmetic(Arithmetic):
    """Exact answers through their sympy form; every result is a Fraction."""

    name = "symbolic"
    exact = True

    def __init__(self, oracle):
        super().__init__(oracle)
        if not oracle.exact:
            raise ValueError("mode='symbolic' needs an exact oracle; use mode='certified' with a grid, or mode='float'")

    def values(self, answers, names):
        import sympy

        out = []
        for a, name in zip(answers, names):
            expr = a.sympy()
            if not isinstance(expr, sympy.Rational):
                raise OracleInconsistent(f"{name}: expected a rational answer, got {expr}")
            out.append(Fraction(int(expr.p), int(expr.q)))
        return out

    def combine(self, answers, measurements, combos, names):
        ell = {}
        for combo in combos:
            for _, m in combo:
                if m not in ell:
                    meas = measurements[m]
                    ell[m] = symbolic_logit(answers[m].sympy(), meas.base, meas.slope, what=f"measurement #{m}")
        return [sum((Fraction(c) * ell[m] / measurements[m].scale for c, m in combo), Fraction(0)) for combo in combos]


def symbolic_logit(expr, base: Fraction, slope: Fraction, *, what: str = "logit") -> Fraction:
    """Exact ``σ⁻¹((expr − base)/slope)`` for an answer made of ``c·exp(q)`` terms.

    Each distinct ``exp(q)`` is replaced by an independent positive symbol and the
    odds ``α/(1−α)`` are computed in the rational function field; they must reduce
    to a monomial ``Π E_k^{n_k}`` with coefficient 1, whose logarithm is
    ``Σ n_k q_k``.  (Running ``cancel`` on ``exp(Rational)`` terms directly can
    overflow gmp or hang; the substitution avoids it.)

    Raises
    ------
    OracleInconsistent
        If the odds are not such a monomial (the logit is not rational).

    Examples
    --------
    >>> import sympy
    >>> e = (2 * sympy.exp(sympy.Rational(3, 2)) + 1) / (sympy.exp(sympy.Rational(3, 2)) + 1)
    >>> symbolic_logit(e, Fraction(1), Fraction(1))
    Fraction(3, 2)
    """
    import sympy

    atoms = sorted(expr.atoms(sympy.exp), key=sympy.default_sort_key)
    if expr.has(sympy.E):  # sympy writes exp(1) as the constant E
        atoms.append(sympy.E)
    syms, exps = [], []
    for i, a in enumerate(atoms):
        q = sympy.Integer(1) if a is sympy.E else a.args[0]
        if not isinstance(q, sympy.Rational):
            raise OracleInconsistent(f"{what}: the answer contains exp({q}), whose exponent is not rational")
        syms.append(sympy.Symbol(f"E{i}", positive=True))
        exps.append(Fraction(int(q.p), int(q.q)))
    e = expr.xreplace(dict(zip(atoms, syms)))
    alpha = (e - sympy.Rational(base.numerator, base.denominator)) / sympy.Rational(slope.numerator, slope.denominator)
    odds = sympy.cancel(sympy.together(alpha / (1 - alpha)))
    num, den = sympy.fraction(odds)
    logit = Fraction(0)
    coeff = Fraction(1)
    for part, sign in ((num, 1), (den, -1)):
        poly = sympy.Poly(part, *syms) if syms else sympy.Poly(part, sympy.Symbol("_c"))
        if len(poly.terms()) != 1:
            raise OracleInconsistent(f"{what}: the odds α/(1−α) = {odds} are not a single exponential")
        monom, c = poly.terms()[0]
        if not isinstance(c, sympy.Rational):
            raise OracleInconsistent(f"{what}: the odds α/(1−α) = {odds} are not a rational multiple of an exponential")
        c = Fraction(int(c.p), int(c.q))
        coeff = coeff * c if sign > 0 else coeff / c
        if syms:
            logit += sign * sum((n * q for n, q in zip(monom, exps)), Fraction(0))
    if coeff <= 0:
        raise OracleInconsistent(f"{what}: the answer implies a softmax weight outside (0, 1) (odds {odds})")
    if coeff != 1:
        raise OracleInconsistent(
            f"{what}: the odds α/(1−α) = {odds} have the coefficient {coeff}, so the logit log({coeff}) + ... "
            "is not rational"
        )
    return logit


# -- certified ----------------------------------------------------------------------


class CertifiedArithmetic(Arithmetic):
    """Rigorous balls with precision escalation and exact identification.

    Parameters
    ----------
    oracle : Oracle
    grid : Grid or str or None
        Required for approximate oracles; optional for exact ones.
    prec : int
        Starting precision in bits.
    max_prec : int
        Give up (raise :class:`PrecisionInsufficient`) rather than go beyond this.
    """

    name = "certified"
    exact = True

    def __init__(self, oracle, *, grid=None, prec: int = 64, max_prec: int = 1 << 23):
        super().__init__(oracle)
        self.grid: Grid | None = parse_grid(grid)
        if self.grid is None and not oracle.exact:
            raise ValueError(
                "mode='certified' on an approximate oracle needs a declared grid (e.g. grid='float32' or "
                "grid='rational:1000'): its answers alone cannot make a result exact; or use mode='float'"
            )
        self.prec0 = int(prec)
        self.max_prec = int(max_prec)
        self.precision = self.prec0

    # escalation ------------------------------------------------------------------

    def _next(self, prec: int, answer, what: str, lo=None, hi=None) -> int:
        if not isinstance(answer, ExactAnswer):
            bits = _bits_to_resolve(self.oracle.error_bound(answer))
            if prec >= bits:
                grids = certifiable_grids(hi - lo, (lo + hi) / 2) if lo is not None and hi > lo else "none"
                raise PrecisionInsufficient(
                    f"{what}: the oracle's declared accuracy cannot certify it on grid "
                    f"{self.grid.name if self.grid else None} (ball [{float(lo):.6g}, {float(hi):.6g}]); "
                    f"grids certifiable at this accuracy: {grids}"
                )
        if 2 * prec > self.max_prec:
            raise PrecisionInsufficient(
                f"{what}: not certified at {prec} bits and max_prec={self.max_prec}; raise max_prec "
                "(a logit of size L needs about L/ln 2 bits) or use mode='symbolic'"
            )
        self.precision = max(self.precision, 2 * prec)
        return 2 * prec

    def _ball(self, answer, prec: int) -> arb:
        return answer_ball(answer, prec, self.oracle.error_bound(answer))

    # values ------------------------------------------------------------------------

    def values(self, answers, names):
        return [self._value(a, name) for a, name in zip(answers, names)]

    def _value(self, answer, what: str) -> Fraction:
        prec = self.prec0
        while True:
            lo, hi = ball_interval(self._ball(answer, prec))
            if self.grid is not None:
                g = self.grid.identify(lo, hi, what=what)
                if g is not None:
                    return g
            else:
                cand = simplest_between(lo, hi)
                if answer_equals(answer, ExpRatio.rational(cand)):
                    return cand
            prec = self._next(prec, answer, what, lo, hi)

    # logits -----------------------------------------------------------------------

    def _logit_ball(self, answer, base: fmpq, slope: fmpq, prec: int, what, want: int | None = None):
        """A ball for ℓ and the bits the answer resolved, or ``(None, 0)`` if α is not yet inside (0, 1).

        ``want`` caps the relative precision of the log: the odds may be known to far
        more bits than identification needs (at a logit of 10^6 the answer needs ~1.4M
        bits), and both the log and the rational search would pay for all of them.
        """
        old = ctx.prec
        try:
            ctx.prec = prec
            y = answer.ball(prec) if isinstance(answer, ExactAnswer) else self._ball(answer, prec)
            alpha = (y - base) / slope
            if not (alpha > 0 and alpha < 1):
                if alpha <= 0 or alpha >= 1:
                    raise OracleInconsistent(
                        f"{_what(what)}: the answer implies a softmax weight {alpha.str(5)} outside (0, 1); "
                        "the oracle is not a single softmax head"
                    )
                return None, 0
            odds = alpha / (1 - alpha)
            resolved = odds.rel_accuracy_bits()
            ctx.prec = max(64, min(prec, resolved if want is None else min(resolved, want)) + 32)
            ell = odds.log()
        finally:
            ctx.prec = old
        return (ell, resolved) if ell.is_finite() else (None, 0)

    def _exact_logit(self, answer, base: fmpq, slope: fmpq, what) -> fmpq:
        prec, want = self.prec0, 64
        while True:
            ell, resolved = self._logit_ball(answer, base, slope, prec, what, want)
            lo = hi = None
            if ell is not None:
                cand = simplest_in_ball(ell)
                if answer_equals(answer, primitive_form(base, slope, cand)):
                    return cand
                if resolved > 2 * want:  # the answer already holds more bits: use them first
                    if want >= MAX_HEIGHT_BITS:
                        raise PrecisionInsufficient(
                            f"{_what(what)}: no logit of height up to {MAX_HEIGHT_BITS} bits reproduces the answer, "
                            f"though it is known to {resolved} bits: the oracle does not behave like a single "
                            "softmax head with rational parameters (try mode='symbolic' for a definite verdict)"
                        )
                    want *= 2
                    continue
                lo, hi = ball_interval(ell)
            prec = self._next(prec, answer, _what(what), lo, hi)

    def combine(self, answers, measurements, combos, names):
        if self.grid is None:
            ell: dict = {}
            out = []
            for combo, name in zip(combos, names):
                total = fmpq(0)
                for c, m in combo:
                    t = ell.get(m)
                    if t is None:
                        meas = measurements[m]
                        base, slope = to_fmpq(meas.base), to_fmpq(meas.slope)
                        t = ell[m] = self._exact_logit(answers[m], base, slope, (name, m)) / to_fmpq(meas.scale)
                    total += c * t
                out.append(to_fraction(total))
            return out
        return [self._on_grid(answers, measurements, combo, name) for combo, name in zip(combos, names)]

    def _on_grid(self, answers, measurements, combo, what: str) -> Fraction:
        prec = self.prec0
        while True:
            total = arb(0)
            lo = hi = None
            with ctx.workprec(prec):
                for c, m in combo:
                    meas = measurements[m]
                    ell, _ = self._logit_ball(answers[m], to_fmpq(meas.base), to_fmpq(meas.slope), prec, what)
                    if ell is None:
                        total = None
                        break
                    total += ell * to_fmpq(Fraction(c) / measurements[m].scale)
            if total is not None:
                lo, hi = ball_interval(total)
                g = self.grid.identify(lo, hi, what=what)
                if g is not None:
                    return g
            prec = self._next(prec, answers[combo[0][1]], what, lo, hi)


def _what(what) -> str:
    """Error-message name of a parameter: a string, or ``(name, measurement)`` built lazily."""
    return what if isinstance(what, str) else f"{what[0]} (measurement #{what[1]})"


def _bits_to_resolve(error: Fraction) -> int:
    """Working precision beyond which an answer with this error bound stops sharpening."""
    if error <= 0:
        return 1 << 30
    return max(64, 64 - floor_log2(error))


# -- float ---------------------------------------------------------------------------


class FloatArithmetic(Arithmetic):
    """numpy float64 with a first-order error estimate per parameter."""

    name = "float"
    exact = False
    precision = 53

    def __init__(self, oracle):
        super().__init__(oracle)
        self._max_error = 0.0

    def _err(self, answers) -> np.ndarray:
        return np.array([float(self.oracle.error_bound(a)) for a in answers])

    def values(self, answers, names):
        y = np.array([float(a) for a in answers])
        self._value_err = dict(zip(names, self._err(answers)))
        self._max_error = max(self._max_error, float(self._err(answers).max(initial=0.0)))
        return [float(x) for x in y]

    def value_errors(self, names) -> list[float]:
        return [self._value_err[n] for n in names]

    def combine(self, answers, measurements, combos, names, *, base_err=None, slope_err=None):
        y = np.array([float(a) for a in answers])
        base = np.array([float(m.base) for m in measurements])
        slope = np.array([float(m.slope) for m in measurements])
        scale = np.array([float(m.scale) for m in measurements])
        alpha = (y - base) / slope
        bad = ~((alpha > 0) & (alpha < 1))
        if bad.any():
            m = int(np.flatnonzero(bad)[0])
            raise PrecisionInsufficient(
                f"float mode: measurement #{m} saturated (softmax weight {alpha[m]:.3g} is not strictly inside "
                "(0, 1)): the logit is too large for float64 at this probe scale; pass a larger w_bound, "
                "or use mode='certified'"
            )
        ell = np.log(alpha) - np.log1p(-alpha)
        d_alpha = (self._err(answers) + _as(base_err, len(y)) + np.abs(alpha) * _as(slope_err, len(y))) / np.abs(slope)
        d_ell = d_alpha / (alpha * (1 - alpha))
        t, dt = ell / scale, d_ell / scale
        out, errs = [], []
        for combo in combos:
            out.append(float(sum(c * t[m] for c, m in combo)))
            errs.append(float(sum(abs(c) * dt[m] for c, m in combo)))
        self._max_error = max(self._max_error, max(errs, default=0.0))
        return out

    def errors(self) -> float:
        return self._max_error


def _as(x, n):
    return np.zeros(n) if x is None else np.asarray(x, dtype=float)


def get_arithmetic(mode: str | None, oracle, *, grid=None, prec: int = 64, max_prec: int = 1 << 23) -> Arithmetic:
    """The arithmetic for ``mode``; ``None`` picks certified for exact oracles or a declared grid, else float."""
    if mode is None:
        mode = "certified" if (oracle.exact or grid is not None) else "float"
    if mode not in MODES:
        raise ValueError(f"mode: expected one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if mode != "certified" and grid is not None:
        raise ValueError(f"grid: only mode='certified' identifies on a grid, got mode={mode!r}")
    if mode == "certified":
        return CertifiedArithmetic(oracle, grid=grid, prec=prec, max_prec=max_prec)
    if mode == "symbolic":
        return SymbolicArithmetic(oracle)
    return FloatArithmetic(oracle)


