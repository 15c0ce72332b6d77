"""Float mode of the multi-head learner: the sweep of narrow steps, its model and its refusals.

:func:`learn_float` runs :func:`exact.learn.multi_head_sweep.sweep` through the run (every
query counted), turns its float heads into a :class:`~exact.multihead.MultiHead` (exact
binary rationals of the float64 results), and refuses what it cannot stand behind:

* two heads whose ``(W, c)`` agree within their error bounds (near-equal heads: the answers
  cannot tell them from one merged head, or from two others);
* an estimate above :data:`MAX_RELATIVE` of the parameters' size (first-order bounds mean
  little there);
* a bias-free learn whose answers show an output bias ``b`` beyond its bound.

The error estimate is the largest first-order bound of any entry of ``W``, ``c``, ``v`` or
``b`` (``docs/multi_head_float.md``); the driver's verification queries then check the model
against fresh random sequences within it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import OracleInconsistent, PrecisionInsufficient
from ..models import SingleHead
from ..multihead import MultiHead
from ..oracles import ExactAnswer
from ..sequences import Sequence
from .multi_head_sweep import SweepCounts, sweep

__all__ = ["FloatSweep", "learn_float", "merge_distance", "MAX_RELATIVE"]

#: The largest error estimate returned, relative to the largest parameter (beyond it a
#: first-order bound is not to be trusted, and the heads count as not resolved).
MAX_RELATIVE = 1e-2
#: Two heads closer than this many times their summed bounds are near-equal.
NEAR = 4.0


@dataclass(frozen=True)
class FloatSweep:
    """A float sweep's result: the model, its per-entry estimate, the sweep's counts, and the
    distance below which two heads may come back merged (:func:`merge_distance`)."""

    model: MultiHead
    estimate: float
    counts: SweepCounts
    merge: float  # heads closer than this may come back as one (the answers differ at second order)


#: The least error an answer is given (an exact answer of 0 has none; 1/e must stay finite).
ERROR_FLOOR = 1e-300


def _askers(run):
    """``ask1(X)`` for an ``(n, d)`` array of one-token queries and ``ask2(X)`` for an ``(n, 2, d)``
    array of two-token ones, through the run; both return ``(values, errors)``."""
    oracle = run.oracle

    def ask(X: np.ndarray):
        if not np.isfinite(X).all():
            raise PrecisionInsufficient("float sweep: a query overflows float64 (the line's window is too wide)")
        answers = run.ask([Sequence._floats(x) for x in X])
        ys = np.array([float(a) for a in answers])
        # the declared error, plus the rounding of an exact answer to float64 (nothing for a float answer)
        es = np.array([float(oracle.error_bound(a)) for a in answers]) + np.where(
            [isinstance(a, ExactAnswer) for a in answers], np.abs(ys) * 2.0**-52, 0.0)
        if not (np.isfinite(ys).all() and np.isfinite(es).all()):
            raise OracleInconsistent("the oracle answered a non-finite value or error bound")
        # no float64 answer is closer than its own rounding; an exact 0 declared exact still gets a floor far
        # below every answer's error, so that the fits' weights 1/e stay finite
        return ys, np.maximum(es, np.maximum(np.abs(ys) * 2.0**-53, ERROR_FLOOR))

    return (lambda X: ask(np.asarray(X, dtype=np.float64)[:, None, :])), (lambda X: ask(np.asarray(X, dtype=np.float64)))


def learn_float(run, d: int, H: int, seed: int, biases: bool) -> FloatSweep:
    """The sweep through ``run``, checked (module docstring)."""
    ask1, ask2 = _askers(run)
    heads, (b, eb), bounds, counts = sweep(ask1, ask2, d, H, biases=biases, seed=seed)
    size = max([1e-300] + [float(np.max(np.abs(x))) for h in heads for x in h] + [abs(b)])
    if not biases and abs(b) > 8 * eb + 1e-12 * size:
        raise OracleInconsistent(
            f"the answers show an output bias b ≈ {b:.3g} (bound {eb:.2g}): not a sum of heads without biases; "
            "learn with biases=True")
    # without biases b = 0 is returned: within |b̂| + e_b of the truth's (and refused below beyond 8 e_b)
    estimate = max([eb + (0.0 if biases else abs(b))] + [float(np.max(x)) for bd in bounds for x in bd])
    if estimate > MAX_RELATIVE * size:
        raise PrecisionInsufficient(
            f"float sweep: the heads are not resolved: the error bound {estimate:.3g} is above {MAX_RELATIVE:g} of "
            f"the parameters' size {size:.3g}")
    for i in range(len(heads)):
        for j in range(i):
            gap = max(float(np.max(np.abs(heads[i][0] - heads[j][0]) - NEAR * (bounds[i][0] + bounds[j][0]))),
                      float(np.max(np.abs(heads[i][2] - heads[j][2]) - NEAR * (bounds[i][2] + bounds[j][2]))))
            if gap <= 0:
                raise PrecisionInsufficient(
                    f"float sweep: heads {j + 1} and {i + 1} have (W, c) equal within {NEAR:g}× their error bounds: "
                    "near-equal heads, which float answers cannot tell from one merged head")
    out = [SingleHead(_exact(W), _exact(v), c=_exact(c) if biases else None) for W, v, c in heads]
    model = MultiHead(out, d=d, b=_exact(b) if biases else 0)
    return FloatSweep(model, estimate, counts, merge_distance(counts.relative_error, size))


def merge_distance(relative_error: float, size: float) -> float:
    """How close two heads may be and still come back as one: ``100·√ε·(1 + size)`` for answers with
    relative error ε.  Two heads ``W ± δ`` with half the value each differ from one head ``W`` only at
    second order in δ, in every answer (their first-order terms cancel), so a split is seen only once
    δ² clears ε; the factor covers the part of the split a one-step fit absorbs (measured: 10⁻⁶ apart
    at ε ≈ 2·10⁻¹² is merged), and is an order of magnitude beyond it."""
    return 100.0 * math.sqrt(max(relative_error, 2.0**-53)) * (1.0 + size)


def _exact(x):
    """The exact binary rationals of float64 numbers (nested lists kept)."""
    if isinstance(x, np.ndarray):
        return [_exact(y) for y in x]
    return Fraction(float(x))
