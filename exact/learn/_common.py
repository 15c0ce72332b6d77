"""Steps shared by the single-head learners: reading ``v`` from one-token queries, and float
mode's adaptive probe scales."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..errors import NotIdentifiable
from ..sequences import Sequence

__all__ = ["read_v", "ask_rescaled", "LOGIT_CAP", "MAX_RESCALES"]

#: Float mode re-asks a probe at a quarter of its scale while its logit lies outside ±3 (a
#: softmax weight outside [σ(−3), σ(3)] ≈ [0.047, 0.953] loses more than 4 bits to the flat
#: ends of σ, and beyond them float64 saturates).
LOGIT_CAP = 3.0
#: At most this many rounds of re-asking (a scale 4^-12 ≈ 6·10⁻⁸ of the first).
MAX_RESCALES = 12


def ask_rescaled(run, seqs: list, meas: list, rebuild: Callable[[int], tuple]) -> tuple[list, int]:
    """The answers to ``seqs`` (logit probes with measurements ``meas``), with every probe whose
    logit lies outside ±:data:`LOGIT_CAP` asked again as ``rebuild(i) -> (sequence, measurement)``
    (a smaller scale) until it lies inside, at most :data:`MAX_RESCALES` rounds; and how many
    queries were asked again.  ``seqs`` and ``meas`` are updated in place.  A probe still outside
    after the last round, or whose softmax weight lies far outside [0, 1] (no head gives that at any
    scale), is left to the arithmetic, which refuses it with its cause."""
    from ..arith.floating import _floats

    answers = list(run.ask(seqs))
    lo, hi = 1 / (1 + math.exp(LOGIT_CAP)), 1 / (1 + math.exp(-LOGIT_CAP))
    again = 0
    for _ in range(MAX_RESCALES):
        y = _floats(answers)  # refuses answers beyond float64's range
        base = np.array([float(m.base) for m in meas])
        slope = np.array([float(m.slope) for m in meas])
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = (y - base) / slope
            spread = run.arith.weight_errors(answers, meas)
        # saturated (near 0 or 1, or its error interval reaching them), not far outside [0, 1]: no head
        # answers that, and a smaller scale cannot help; the arithmetic refuses it, naming the causes
        near = (alpha > -0.25) & (alpha < 1.25)
        inside = (alpha > lo) & (alpha < hi) & (alpha - spread > 0) & (alpha + spread < 1)
        bad = [int(i) for i in np.flatnonzero(near & ~inside)]
        if not bad:
            break
        run.require(len(bad), "re-scaled probes")
        for i in bad:
            seqs[i], meas[i] = rebuild(i)
        for i, a in zip(bad, run.ask([seqs[i] for i in bad])):
            answers[i] = a
        again += len(bad)
    return answers, again


def rerun_verdict(registry, found_same: bool, asked: list, transcript, standing, what: str, hides: str):
    """The verdict of a certificate check that re-ran its learner on the certified ``what``: the same
    model found (``found_same``), from the same queries (``asked``, against the transcript's)."""
    if not found_same:
        return registry.Rederived(f"the learner, re-run on the certified {what}, finds another {hides}", standing)
    if asked != [q.X for q in transcript]:
        return registry.Rederived(f"the transcript is not the queries the learner makes on this {what} with this "
                                  "seed, so it need not identify it", standing)
    return registry.Rederived(None, standing)


def read_v(run):
    """``v_i = f([e_i])`` from ``d`` one-token queries; returns ``(v, v_err)``.

    Raises
    ------
    NotIdentifiable
        If ``v = 0`` (exactly, or within the oracle's accuracy): then no query
        depends on ``W``.
    """
    d = run.d
    answers = run.ask([Sequence.basis(d, i) for i in range(d)])
    names = [f"v[{i}]" for i in range(d)]
    v = run.arith.values(answers, names)
    v_err = run.arith.value_errors(names)
    if all(abs(x) <= e for x, e in zip(v, v_err)):
        if run.arith.exact:
            raise NotIdentifiable("v = 0: then f(X) = 0 for every X, so W has no effect and cannot be identified")
        raise NotIdentifiable(
            f"v is zero within the oracle's accuracy (max |v_i| = {max(map(abs, v)):.3g}): then f does not "
            "depend on W and W cannot be identified"
        )
    return v, v_err
