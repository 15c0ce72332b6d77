"""Float arithmetic: numpy float64, vectorised, with a first-order error estimate."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..errors import ExactAttentionError, OracleInconsistent, PrecisionInsufficient
from ..numbers import approx
from ..oracles import ExactAnswer, FloatAnswer
from ..protocols import Oracle
from .base import OUTSIDE_CLASS, Answer, Arithmetic, Combo, Measurement, Names

__all__ = ["FloatArithmetic"]


def _float_or_inf(a: Answer) -> float:
    try:
        return float(a)
    except OverflowError:
        return np.inf


def _floats(answers: Sequence[Answer]) -> np.ndarray:
    """The answers as float64, refusing (not overflowing on) answers beyond float64's range."""
    try:
        out = np.array([float(a) for a in answers], dtype=np.float64)
    except OverflowError:
        out = np.array([_float_or_inf(a) for a in answers], dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(out))
    if bad.size:
        i = int(bad[0])
        a = answers[i]
        try:
            size = f"about {approx(a)}"
        except ExactAttentionError:  # an exact answer: its ball says how large it is
            size = f"about {a.ball(64).str(5, radius=False)}" if isinstance(a, ExactAnswer) else "not finite"
        raise OracleInconsistent(
            f"answer #{i} is {size}, beyond float64's range: float mode cannot use it "
            "(use mode='certified' with a grid)"
        )
    return out


class FloatArithmetic(Arithmetic):
    """numpy float64 with a first-order error estimate per parameter."""

    name = "float"
    exact = False
    precision = 53

    def __init__(self, oracle: Oracle) -> None:
        super().__init__(oracle)
        self._max_error = 0.0
        self._value_err: dict[str, float] = {}

    def _err(self, answers: Sequence[Answer]) -> np.ndarray:
        """Declared answer errors, plus the rounding of exact answers to float64.

        A float answer's own rounding bound is read as a float (``.error``), without exact
        arithmetic; the sum is rounded up by a relative 2^-50 to stay an upper bound.
        """
        y = _floats(answers)
        if answers and all(type(a) is FloatAnswer for a in answers):
            own = np.array([a.error for a in answers if isinstance(a, FloatAnswer)])
            base = float(self.oracle.accuracy) + float(self.oracle.rtol) * np.abs(y)
            return (base + own) * (1 + 2.0**-50) + 2.0**-53 * np.abs(y)
        # an exact answer's float() is close to, not always the nearest, float64: 2^-49 covers it
        return np.array([float(self.oracle.error_bound(a)) for a in answers]) + 2.0**-49 * np.abs(y) + 2.0**-1070

    def values(self, answers: Sequence[Answer], names: Sequence[str], offset: Fraction | float | None = None) -> list[float]:
        y = _floats(answers)
        errs = self._err(answers)
        if offset:  # the offset's own error is the caller's to add; the subtraction rounds once more
            y = y - float(offset)
            errs = errs + 2.0**-53 * np.abs(y)
        self._value_err = dict(zip(names, errs.tolist()))
        self._max_error = max(self._max_error, float(errs.max(initial=0.0)))
        return [float(x) for x in y]

    def value_errors(self, names: Sequence[str]) -> list[float]:
        return [self._value_err[n] for n in names]

    def approximate_logits(self, answers: Sequence[Answer], measurements: Sequence[Measurement]) -> list[float]:
        """Each logit ``ℓ_m / scale_m`` in float64 (saturated answers raise PrecisionInsufficient)."""
        return self.combine(answers, measurements, [[(1, m)] for m in range(len(answers))], None)

    def combine(
        self, answers: Sequence[Answer], measurements: Sequence[Measurement], combos: Sequence[Combo],
        names: Names | None, *, denominators: Sequence[int | None] | None = None,
    ) -> list[float]:
        t, dt = self.logits(answers, measurements)
        out: list[float] = []
        errs: list[float] = []
        for combo in combos:
            out.append(float(sum(c * t[m] for c, m in combo)))
            errs.append(float(sum(abs(c) * dt[m] for c, m in combo)))
        self._max_error = max(self._max_error, max(errs, default=0.0))
        return out

    def logits(self, answers: Sequence[Answer], measurements: Sequence[Measurement]) -> tuple[np.ndarray, np.ndarray]:
        """Each logit ``ℓ_m / scale_m`` and its first-order error, as float64 arrays (refusing an answer
        outside what a head gives, and a saturated one)."""
        y = _floats(answers)
        memo: dict[int, tuple[Fraction | float, float]] = {}  # id(value) -> (value, float): shared value objects

        def fl(x: Fraction | float) -> float:
            hit = memo.get(id(x))
            if hit is None or hit[0] is not x:
                hit = memo[id(x)] = (x, float(x))
            return hit[1]

        base = np.array([fl(m.base) for m in measurements])
        slope = np.array([fl(m.slope) for m in measurements])
        scale = np.array([fl(m.scale) for m in measurements])
        alpha = (y - base) / slope
        bad = ~((alpha > 0) & (alpha < 1))
        if bad.any():
            base_err = np.array([m.base_err for m in measurements])
            slope_err = np.array([m.slope_err for m in measurements])
            room = (self._err(answers) + base_err + (np.abs(alpha) + 1) * slope_err) / np.abs(slope) * 4 + 1e-12
            outside = (alpha < -room) | (alpha > 1 + room)
            if outside.any():
                m = int(np.flatnonzero(outside)[0])
                raise OracleInconsistent(
                    f"float mode: measurement #{m} implies a softmax weight {alpha[m]:.3g}, outside [0, 1] beyond "
                    "the answers' errors; " + OUTSIDE_CLASS)
            m = int(np.flatnonzero(bad)[0])
            raise PrecisionInsufficient(
                f"float mode: measurement #{m} saturated (softmax weight {alpha[m]:.3g} is not strictly inside "
                "(0, 1)): the logit is too large for float64 at this probe scale, or the answers' errors swamp "
                "the probe's signal; use smaller probe scales (a larger w_bound, or the default adaptive ones), "
                "a more accurate oracle, or mode='certified'"
            )
        base_err = np.array([m.base_err for m in measurements])
        slope_err = np.array([m.slope_err for m in measurements])
        d_alpha = self.weight_errors(answers, measurements)
        reach = (alpha - d_alpha <= 0) | (alpha + d_alpha >= 1)
        if reach.any():
            m = int(np.flatnonzero(reach)[0])
            raise PrecisionInsufficient(
                f"float mode: measurement #{m}'s softmax weight {alpha[m]:.3g} is known only to ±{d_alpha[m]:.2g}, "
                "which reaches 0 or 1: any larger logit fits it (a saturated probe hidden by the answers' errors); "
                "use smaller probe scales (the default adaptive ones, or a larger w_bound), or a more accurate oracle"
            )
        ell = np.log(alpha) - np.log1p(-alpha)
        d_ell = d_alpha / (alpha * (1 - alpha))
        return ell / scale, d_ell / scale

    def weight_errors(self, answers: Sequence[Answer], measurements: Sequence[Measurement]) -> np.ndarray:
        """Bounds on the errors of the softmax weights ``α = (y − base)/slope``: with ``y = y* + δy`` and so
        on, ``α − α* = (δy − δbase − α*·δslope)/slope``, and the true weight ``α*`` lies in [0, 1]."""
        base_err = np.array([m.base_err for m in measurements])
        slope_err = np.array([m.slope_err for m in measurements])
        slope = np.array([float(m.slope) for m in measurements])
        return (self._err(answers) + base_err + slope_err) / np.abs(slope)

    def errors(self) -> float:
        return self._max_error

    def add_error(self, error: float) -> None:
        self._max_error = max(self._max_error, float(error))

