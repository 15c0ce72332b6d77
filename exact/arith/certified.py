"""Certified arithmetic: python-flint ``arb`` balls, precision on demand, exact identification."""

from __future__ import annotations

from fractions import Fraction

from flint import arb, ctx, fmpq

from ..certify import answer_equals
from ..errors import OracleInconsistent, PrecisionInsufficient
from ..expfield import ExpRatio
from ..grids import Grid, certifiable_grids, parse_grid
from ..numbers import ball_interval, floor_log2, simplest_between, simplest_in_ball, to_fmpq, to_fraction
from ..oracles import ExactAnswer, answer_ball
from .base import Arithmetic, primitive_form

__all__ = ["CertifiedArithmetic", "MAX_HEIGHT_BITS"]

MAX_HEIGHT_BITS = 4096


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
                if lo is None:  # the softmax weight itself is not resolved inside (0, 1)
                    raise PrecisionInsufficient(
                        f"{what}: at the oracle's declared accuracy the softmax weight is not resolved inside "
                        "(0, 1): the logit is too large for this oracle to certify (scale the probes, or use "
                        "an oracle with better accuracy)"
                    )
                grids = certifiable_grids(hi - lo, (lo + hi) / 2) if hi > lo else "none"
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

    def _candidate(self, answer, base: fmpq, slope: fmpq, state: list, what):
        """The simplest rational in ℓ's ball at ``state = [prec, want, resolved]`` (raising prec until α is inside (0, 1))."""
        while True:
            ell, resolved = self._logit_ball(answer, base, slope, state[0], what, state[1])
            if ell is not None:
                state[2] = resolved
                return simplest_in_ball(ell), ell
            state[0] = self._next(state[0], answer, _what(what))

    def _escalate(self, answer, state: list, ell, what) -> None:
        """After a rejected candidate: use bits the answer already holds, else refine the answer."""
        prec, want, resolved = state
        if resolved > 2 * want:
            if want >= MAX_HEIGHT_BITS:
                raise PrecisionInsufficient(
                    f"{_what(what)}: no logit of height up to {MAX_HEIGHT_BITS} bits reproduces the answer, "
                    f"though it is known to {resolved} bits: the oracle does not behave like a single "
                    "softmax head with rational parameters (try mode='symbolic' for a definite verdict)"
                )
            state[1] = 2 * want
        else:
            lo, hi = ball_interval(ell)
            state[0] = self._next(prec, answer, _what(what), lo, hi)

    def approximate_logits(self, answers, measurements, *, bits: int = 60) -> list[float]:
        """Each logit ``ℓ_m / scale_m`` as a float, from a ball refined to ``bits`` bits (relative, absolute near 0)."""
        out = []
        for m, (answer, meas) in enumerate(zip(answers, measurements)):
            base, slope = to_fmpq(meas.base), to_fmpq(meas.slope)
            prec = self.prec0
            while True:
                ell, _ = self._logit_ball(answer, base, slope, prec, f"logit #{m}")
                if ell is not None:
                    mid = float(ell.mid())
                    if float(ell.rad()) <= 2.0**-bits * max(1.0, abs(mid)):  # near 0: absolute accuracy
                        out.append(mid / float(meas.scale))
                        break
                lo, hi = ball_interval(ell) if ell is not None else (None, None)
                prec = self._next(prec, answer, f"logit #{m}", lo, hi)
        return out

    def combine(self, answers, measurements, combos, names, *, confirm=None):
        """Parameters ``Σ c·ℓ_m/scale_m``; see :class:`~exact.arith.base.Arithmetic`.

        Without a grid every logit is the simplest rational in its ball, and candidates
        are confirmed exactly: by ``confirm(values, pending)`` if given (it returns the
        measurements whose answers the candidate model does not reproduce, typically by
        replaying the transcript, so the last call *is* the certificate), else one
        answer at a time against ``base + slope·σ(ℓ)``.  Rejected measurements are
        refined and retried until every one is confirmed.
        """
        if self.grid is not None:
            return [self._on_grid(answers, measurements, combo, name) for combo, name in zip(combos, names)]
        first = {}
        for combo, name in zip(combos, names):
            for _, m in combo:
                first.setdefault(m, name)
        fq = {m: (to_fmpq(measurements[m].base), to_fmpq(measurements[m].slope)) for m in first}
        inv_scale = {m: 1 / to_fmpq(measurements[m].scale) for m in first}
        state = {m: [self.prec0, 64, 0] for m in first}
        ell: dict = {}
        balls: dict = {}
        pending = list(first)
        while True:
            for m in pending:
                ell[m], balls[m] = self._candidate(answers[m], *fq[m], state[m], (first[m], m))
            values = [to_fraction(_combine(combo, ell, inv_scale)) for combo in combos]
            if confirm is not None:
                failed = confirm(values, pending)
            else:
                failed = [m for m in pending if not answer_equals(answers[m], primitive_form(*fq[m], ell[m]))]
            if not failed:
                return values
            for m in failed:
                self._escalate(answers[m], state[m], balls[m], (first[m], m))
            pending = failed

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


def _combine(combo, ell: dict, inv_scale: dict) -> fmpq:
    """``Σ c · ℓ_m / scale_m`` over one combo."""
    if len(combo) == 1:
        c, m = combo[0]
        t = ell[m] * inv_scale[m]
        return t if c == 1 else c * t
    total = fmpq(0)
    for c, m in combo:
        total += c * ell[m] * inv_scale[m]
    return total


def _what(what) -> str:
    """Error-message name: a string, or ``(parameter, measurement)`` rendered lazily.

    A measurement can feed several parameters (the pivot row's logits enter every
    shifted row), so it is named by its own index first.
    """
    return what if isinstance(what, str) else f"measurement #{what[1]} (needed for {what[0]})"


def _bits_to_resolve(error: Fraction) -> int:
    """Working precision beyond which an answer with this error bound stops sharpening."""
    if error <= 0:
        return 1 << 30
    return max(64, 64 - floor_log2(error))
