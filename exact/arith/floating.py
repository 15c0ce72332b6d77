"""Float arithmetic: numpy float64, vectorised, with a first-order error estimate."""

from __future__ import annotations

import numpy as np

from ..errors import PrecisionInsufficient
from .base import Arithmetic

__all__ = ["FloatArithmetic"]


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
