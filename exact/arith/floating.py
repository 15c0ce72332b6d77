"""Float arithmetic: numpy float64, vectorised, with a first-order error estimate."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import numpy as np

from ..errors import OracleInconsistent, PrecisionInsufficient
from ..numbers import approx
from ..oracles import FloatAnswer
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
        raise OracleInconsistent(
            f"answer #{i} is about {approx(answers[i])}, beyond float64's range: float mode cannot use it "
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
        return np.array([float(self.oracle.error_bound(a)) for a in answers]) + 2.0**-53 * np.abs(y)

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
        names: Names | None,
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
                "(0, 1)): the logit is too large for float64 at this probe scale; pass a larger w_bound, "
                "or use mode='certified'"
            )
        ell = np.log(alpha) - np.log1p(-alpha)
        base_err = np.array([m.base_err for m in measurements])
        slope_err = np.array([m.slope_err for m in measurements])
        d_alpha = (self._err(answers) + base_err + np.abs(alpha) * slope_err) / np.abs(slope)
        d_ell = d_alpha / (alpha * (1 - alpha))
        return ell / scale, d_ell / scale

    def errors(self) -> float:
        return self._max_error

    def add_error(self, error: float) -> None:
        self._max_error = max(self._max_error, float(error))

