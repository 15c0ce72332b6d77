"""Pilot and refine: the frame learner run twice, the second pass adapted to the first (``2(d² + d)`` queries).

The frame learner (:mod:`exact.learn.noisy_frame`) must choose its logit scales before it
knows anything about ``W``: every probe has to stay invertible for the worst case
``|t_kj| = |u_kᵀWe_j| <= ‖u_k‖·𝒲``, which caps the scales, and so the signal, when 𝒲
is large.  With twice the budget this learner spends the first half on exactly that
learner (the **pilot**) and the second half on probes designed from what the pilot
certified:

1. **Pilot** (``d² + d`` queries): ``v̂``, the frame ``u_k``, and ``t̂_kj`` with certified
   bounds ``|t̂_kj − t_kj| <= E_kj``.
2. **Frame sums** (``d`` queries): ``f([c_k·u_k]) = c_k·vᵀu_k`` with ``c_k‖u_k‖ <= R``
   measures each ``vᵀu_k`` directly, to ``±τ/c_k ≈ τ·‖u_k‖/R``; through ``v̂`` it is
   known only to ``±Σ_i |u_ki|τ_i``, which grows like ``√d·τ``.  Both intervals hold
   ``vᵀu_k``; the learner keeps their intersection.  This error multiplies the softmax
   weight in every probe of row ``k``.
3. **Refine** (``d²`` queries): the same frame, but each probe's scales ``(β_kj, γ_kj)``
   minimise the bound for ``|t_kj| <= |t̂_kj| + E_kj`` instead of ``‖u_k‖·𝒲``.  Small
   ``t_kj`` allow a larger logit scale at the same clipping cost: more signal per unit of
   noise.  Each probe is clipped to the range the pilot certified.
4. **Intersect**: both passes are decoded with the sharper ``vᵀu_k``; each gives an
   interval for every ``t_kj``, and the learner keeps their intersection (it holds
   ``t_kj`` whenever every answer is within its declared error; an empty one proves an
   answer is not, and raises :class:`~exact.errors.OracleInconsistent`).  Then
   ``Ŵ = U⁻¹T̂`` and the projection onto ``‖W‖_F <= 𝒲``, as in the frame learner.

The certified bound is the frame learner's, computed from the intersected intervals; it is
never larger than the pilot's alone.  The gain is largest when 𝒲 is large (the pilot's
scales are capped hardest) and when ``d`` is large (the frame sums).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from flint import arb, ctx

from .. import registry
from ..errors import OracleInconsistent
from ..numbers import ball_interval, to_fmpq
from ..protocols import Oracle
from ..sequences import Sequence
from .driver import Run, oracle_dimension
from .noisy import _PREC, NoisyDetails, _positive, _upper, noisy_query_count
from .noisy_frame import (
    FramePlan,
    _dyadic_down,
    ask_v,
    ask_values,
    combine,
    decode_rows,
    default_token_norm,
    finish_frame,
)
from .result import ErrorBound, LearnResult

__all__ = ["learn_noisy_refine", "refine_query_count", "SPEC"]


def refine_query_count(d: int) -> int:
    """``2(d² + d)``: twice the frame learner's budget."""
    return 2 * noisy_query_count(d)


def _sum_scales(plan: FramePlan) -> list[Fraction]:
    """``c_k`` with ``‖c_k·u_k‖ <= R``, an 8-bit mantissa (so ``c_k·u_k`` is float64-exact)."""
    out = []
    for row in plan.rows():
        sq = sum((x * x for x in row.values()), Fraction(0))
        c = _dyadic_down(float(plan.token_norm) / math.sqrt(float(sq)) * (1 - 2.0**-20), 8)
        while c * c * sq > plan.token_norm**2:  # pragma: no cover - the margin covers float rounding
            c = _dyadic_down(float(c) * (1 - 2.0**-8), 8)
        out.append(c)
    return out


def _intersect(lo_a: Fraction, hi_a: Fraction, lo_b: Fraction, hi_b: Fraction, what: str) -> tuple[Fraction, Fraction]:
    """The midpoint and half-width of ``[lo_a, hi_a] ∩ [lo_b, hi_b]``; empty means an answer broke its bound."""
    lo, hi = max(lo_a, lo_b), min(hi_a, hi_b)
    if lo > hi:
        raise OracleInconsistent(f"{what}: two measurements disagree by more than their declared error bounds "
                                 "allow (an answer is off by more than its declared error)")
    return (lo + hi) / 2, (hi - lo) / 2


def _intersect_rows(d: int, passes):
    """Entry by entry, the intersection of every pass's interval for ``t_kj``, as ``(T, E)`` balls.

    ``passes`` is a list of ``(T, E)``; an entry with ``E`` ``None`` constrains nothing.
    """
    T: list[list[Any]] = [[None] * d for _ in range(d)]
    E: list[list[Any]] = [[None] * d for _ in range(d)]
    with ctx.workprec(_PREC):
        for k in range(d):
            for j in range(d):
                known = [(Tp[k][j], Ep[k][j]) for Tp, Ep in passes if Ep[k][j] is not None]
                if not known:  # no pass certifies this entry: its bound stays infinite
                    T[k][j] = passes[-1][0][k][j]
                    continue
                # exact endpoints (a ball's radius is kept to 30 bits only: it would loosen the bound)
                lo = max(ball_interval(t - e)[0] for t, e in known)
                hi = min(ball_interval(t + e)[1] for t, e in known)
                if lo > hi:
                    raise OracleInconsistent(
                        f"t[{k}][{j}]: the pilot and the refining pass disagree by more than their certified "
                        "bounds allow (an answer is off by more than its declared error)"
                    )
                T[k][j], E[k][j] = arb(to_fmpq((lo + hi) / 2)), arb(to_fmpq((hi - lo) / 2))
    return T, E


def learn_noisy_refine(oracle: Oracle, *, w_bound, token_norm=None) -> LearnResult:
    """Learn a single head from a noisy oracle: a frame pilot, then probes adapted to it (``2(d² + d)`` queries).

    Parameters
    ----------
    oracle : Oracle
        Any oracle; each answer's ``error_bound`` is the noise level the bound uses.
    w_bound : number
        ``𝒲``, an assumed bound on ``‖W‖_F``.
    token_norm : number, optional
        ``R``, the largest Euclidean norm of a query token; default ``max(1, 1/2 + 1/𝒲)``.

    Returns
    -------
    LearnResult
        ``exact`` is False; ``error_bound`` holds the certified bounds;
        ``details["pilot_W_frobenius"]`` the pilot's own bound, for comparison.

    Examples
    --------
    >>> from exact import NoisyOracle, SingleHead
    >>> truth = SingleHead([[4, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    >>> r = learn_noisy_refine(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=8)
    >>> r.queries, r.error_bound.W_frobenius < r.details["pilot_W_frobenius"] / 2
    (12, True)
    """
    d = oracle_dimension(oracle)
    W_bound = _positive(w_bound, "w_bound")
    R = default_token_norm(W_bound, token_norm)
    run = Run(SPEC, oracle, mode="float", queries=refine_query_count(d), certify=False, checks=0)
    with run:
        v_hat, tau_v, tau = ask_v(run, oracle, d, R)
        pilot = FramePlan.make(v_hat, tau_v, w_bound=W_bound, token_norm=R, tau=tau)
        y0, e0 = ask_values(run, oracle, pilot.sequences())
        s_v, err_v = pilot.sums(v_hat, tau_v)
        T0, E0 = decode_rows(pilot, s_v, err_v, v_hat, tau_v, y0, e0)
        _, pilot_bound = combine(pilot, T0, E0)
        # the frame sums vᵀu_k, measured directly and intersected with what v̂ says
        scales = _sum_scales(pilot)
        ys, es = ask_values(run, oracle, [Sequence.sparse(d, [{i: c * x for i, x in row.items()}])
                                          for c, row in zip(scales, pilot.rows())])
        s_hat, s_err = [], []
        for k, (c, y, e) in enumerate(zip(scales, ys, es)):
            mid, half = _intersect(s_v[k] - err_v[k], s_v[k] + err_v[k], (y - e) / c, (y + e) / c, f"vᵀu_{k}")
            s_hat.append(mid)
            s_err.append(half)
        # the refining pass: scales for |t_kj| <= |t̂_kj| + E_kj
        with ctx.workprec(_PREC):
            t_bound = [[_upper(abs(T0[k][j]) + E0[k][j]) if E0[k][j] is not None else math.inf for j in range(d)]
                       for k in range(d)]
        plan = pilot.refine(t_bound, s_hat, s_err, tau_v, tau=tau)
        y1, e1 = ask_values(run, oracle, plan.sequences())
        passes = [(T0, E0),
                  decode_rows(pilot, s_hat, s_err, v_hat, tau_v, y0, e0),  # the pilot again, with the sharper sums
                  decode_rows(plan, s_hat, s_err, v_hat, tau_v, y1, e1)]
        W, bound = combine(pilot, *_intersect_rows(d, passes))
        details = NoisyDetails(learner="refine", token_norm=str(R),
                               pilot_W_frobenius=ErrorBound.from_entries(pilot_bound, []).W_frobenius,
                               max_logit_scale=str(max(b * g for rb, rg in zip(plan.beta, plan.gamma)
                                                       for b, g in zip(rb, rg))))
        return finish_frame(run, W, bound, v_hat, tau_v, W_bound, details)


SPEC = (
    registry.LearnerSpec(
        adversary="exact.learn.adversary:frame_adversary",
        name="noisy-refine",
        summary="beyond Theorem 6.1: a frame pilot, direct frame sums, then probes scaled to the pilot's bounds; "
        "2(d² + d) queries, certified bound",
        model_kind="single-head",
        modes=("float",),
        learn=learn_noisy_refine,
        query_count=lambda d, **conditions: refine_query_count(d),
        count_formula="2(d² + d)",
        exact=False,
        options=(
            registry.Option("w_bound", "number", "𝒲, an assumed bound on ‖W‖_F", required=True),
            registry.Option("token_norm", "number", "R, the largest token norm (default max(1, 1/2 + 1/𝒲))"),
        ),
        command="single-head",
        method="noisy-refine",
        selector=("learner", "refine"),
    )
)
