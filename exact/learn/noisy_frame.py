"""A noisy-oracle learner that beats Theorem 6.1 with the same ``d² + d`` queries and token budget.

The paper's probes read ``W_ij`` through ``v_i``: its bound divides by the smallest
``|v_i|`` (the margin μ), and its logit scale is fixed, so the error grows like
``𝒲²/μ``.  This learner changes the probes, not the count:

1. ``v̂ = f([R·e_i])/R`` as before (``d`` queries).
2. **A 45° frame.**  ``n ≈ v̂/‖v̂‖`` (on the grid 2^-40, so probes stay short) and
   ``σ_k = sign(n_k)``; the probe directions are the rows ``u_k = e_k + σ_k·n``.  Each
   makes about 45° with ``v``: ``|vᵀu_k| = |v_k| + ‖v‖·(nᵀv̂/‖v̂‖) >= ‖v̂‖(1 − …)``, so no
   coordinate of ``v`` needs a margin.  ``U = I + σnᵀ`` is inverted exactly
   (Sherman–Morrison): ``U⁻¹ = I − σnᵀ/(1 + ‖n‖₁)``, whose entries are at most 1.
3. **Scales that minimise the certified bound.**  The query for ``(k, j)`` is
   ``[β·e_j + s_kj·γ_k·u_k; β·e_j]`` with the sign ``s_kj = −sign(u_kj)``, so that the
   first token's norm is at most ``√(β² + γ_k²‖u_k‖²)``; its logit is ``s_kj·βγ_k·t_kj``
   with ``t_kj = u_kᵀ W e_j``, ``|t_kj| <= ‖u_k‖·𝒲``.  With ``g = γ_k‖u_k‖`` the same
   for every row, the bound behaves like ``L(βg𝒲)/(βg²)`` under ``β² + g² <= R²``;
   ``(β, g)`` is chosen on a grid to minimise it, which keeps the logit scale ``βg𝒲``
   near 1 and makes the error *linear* in 𝒲.
4. ``T̂ = σ⁻¹(clip(α̂))/(βγ_k)`` per entry, ``Ŵ = U⁻¹T̂``, then projection onto the
   ball ``‖W‖_F <= 𝒲`` (which can only bring ``Ŵ`` closer to ``W`` in Frobenius norm).

**The certified bound.**  With ``δ = v̂ − v``, exactly
``α̂ − α = (η − β·δ_j − α·γ_k·δᵀu_k)/(γ_k·v̂ᵀu_k)``, so
``|α̂ − α| <= ε_kj = (τ_kj + β·τ_j/R + σ(λ_k)·γ_k·Σ_i |u_ki|·τ_i/R)/(γ_k·|v̂ᵀu_k|)``; then
``|Δt_kj| <= E_kj = min(L_k·min(ε_kj, σ(λ_k) − σ(−λ_k)), 2λ_k)/(βγ_k)`` with
``L_k = 1/(σ(λ_k)σ(−λ_k))``, and ``ΔW = U⁻¹ΔT`` gives, entry by entry,
``|ΔW_kj| <= E_kj + (Σ_i |n_i|·E_ij)/(1 + ‖n‖₁)``.  Projection keeps the Frobenius
bound and adds ``(1 − c)|Ŵ_kj|`` to an entry's.  Everything is computed in ball
arithmetic and rounded up, the float64 rounding of ``Ŵ`` included.  A probe row whose
``|v̂ᵀu_k|`` is not certified above the noise gets only the trivial bound: ``Ŵ`` and ``W`` both
lie in the ball, so every error is at most ``2𝒲``, and every bound is capped there.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from flint import arb, ctx, fmpq

from .. import registry
from ..errors import InvalidArgument, OracleInconsistent
from ..models import SingleHead
from ..numbers import to_fmpq, to_fraction
from ..protocols import Oracle
from ..sequences import Sequence
from .driver import Run, oracle_dimension
from .noisy import (_PREC, MAX_LOGIT, _arb_min, SCALE_RANGE, NoisyDetails, _positive, _upper, _value, float_down,
                    noisy_query_count)
from .result import ErrorBound, LearnResult

__all__ = ["learn_noisy_frame", "FramePlan", "SPEC"]

_DIRECTION_BITS = 40  # n lies on the grid 2^-40: probes stay short, float64-exact rationals


def _dyadic_down(x: float, bits: int) -> Fraction:
    """``x > 0`` rounded down to ``bits`` significant bits."""
    e = math.frexp(x)[1]
    step = Fraction(2) ** (e - bits)
    return math.floor(Fraction(x) / step) * step


def _sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _scale_grid(R: float, W: float | None) -> list[tuple[float, float]]:
    """Candidate scales ``(β, g)`` with ``β² + g² <= R²`` and ``2^-40·g <= β <= 16·g`` (so that
    ``β`` is a nonzero point of the grid 2^45 finer than ``γ = g/‖u‖`` and stays within 2^6 of
    ``γ``: float64 probes), on a polar grid and on log scales down to
    ``2^-50·R`` (a large budget may need a small logit scale); with ``W``, also ``βg𝒲 <=
    MAX_LOGIT/2``."""
    out = []
    betas = [R * math.cos(math.pi / 2 * i / 64) for i in range(1, 64)] + [R * 2.0 ** (-k / 2) for k in range(2, 101)]
    for beta in betas:
        top = math.sqrt(max(R * R - beta * beta, 0.0))
        if W is not None:
            top = min(top, MAX_LOGIT / 2 / (beta * W))  # logit scale βg𝒲 <= MAX_LOGIT/2
        fracs = (1.0, 0.85, 0.75, 0.6, 0.5, 0.35, 0.25, 0.15, 0.1, 0.05, 0.02, 0.01) + tuple(
            2.0 ** (-k / 2) for k in range(14, 101, 2))
        for frac in fracs:
            g = top * frac
            if g > 0 and g * 2.0**-40 <= beta <= 16 * g:  # β within [2^-40, 2^4]·g: on γ's grid, float64 probes
                out.append((beta, g))
    return out


def _require_scales(R: float, W: float) -> None:
    """Refuse a budget that leaves no probe scale: with ``𝒲`` and ``R`` both large, ``βg𝒲 <=
    MAX_LOGIT/2`` forces ``g`` below ``2^-40·β``, off the float64 grid of the probes."""
    if not _scale_grid(R, W):
        raise InvalidArgument(
            f"w_bound = {W:.3g} and token_norm = {R:.3g}: no probe scales (β, g) satisfy β² + g² <= R², "
            f"2^-40·g <= β <= 16·g and βg𝒲 <= {MAX_LOGIT / 2:g}; lower token_norm (or w_bound)")


def _better(best, cand):
    """The lower score; between (nearly) equal scores, the smaller logit scale (saturated probes tie)."""
    if best is None or cand[0] < best[0] * (1 - 1e-9) or (cand[0] <= best[0] * (1 + 1e-9) and cand[1] < best[1]):
        return cand
    return best


def _proxy(beta: float, g: float, w: float, tau: float, tau_v: float, vnorm: float) -> float:
    """The float estimate of one entry's bound for scales ``(β, g)`` (``‖u‖ ≈ √2``, ``|vᵀu| ≈ ‖v‖/√2·‖u‖``)."""
    lam = beta * g * w
    if lam > 700:  # the softmax saturates far beyond any useful scale
        return math.inf
    lip = 2 + 2 * math.cosh(lam)
    gamma = g / math.sqrt(2)
    s = vnorm  # |v̂ᵀu| with ‖u‖ = √2 at 45°
    eps = (tau + beta * tau_v + _sigma(lam) * gamma * 2 * tau_v) / (gamma * s)
    return min(lip * eps, 2 * lam) / (beta * gamma)


@dataclass(frozen=True)
class FramePlan:
    """The frame ``u_k = e_k + σ_k·n`` and the per-probe scales ``β_kj``, ``γ_kj`` (all exact).

    ``t_bound[k][j]`` is what the plan assumes of ``t_kj = u_kᵀWe_j``: ``|t_kj| <= t_bound``,
    from ``‖W‖_F <= 𝒲`` for a first pass (``prior = "w_bound"``) or from a first pass's
    certified bounds for a refined one (``prior = "pilot"``).  It fixes each probe's clipping
    range.

    >>> plan = FramePlan.make([Fraction(3), Fraction(-4)], [Fraction(0)] * 2, w_bound=2, token_norm=1, tau=1e-6)
    >>> [float(x) for x in plan.n], plan.sigma
    ([0.6000000000003638, -0.8000000000001819], (1, -1))
    >>> len(plan.sequences()), plan.max_token_norm() <= 1
    (4, True)
    """

    d: int
    w_bound: Fraction
    token_norm: Fraction
    n: tuple
    sigma: tuple
    beta: tuple  # d×d: β_kj
    gamma: tuple  # d×d: γ_kj
    t_bound: tuple  # d×d: the assumed |t_kj| <= t_bound_kj
    prior: str = "w_bound"

    @classmethod
    def make(cls, v_hat, tau_v, *, w_bound, token_norm, tau: float) -> "FramePlan":
        """Choose the frame from ``v̂`` and the scales that minimise the bound at noise ``tau``."""
        d = len(v_hat)
        W, R = _positive(w_bound, "w_bound"), _positive(token_norm, "token_norm")
        v = np.array([float(x) for x in v_hat])
        vnorm = float(np.linalg.norm(v))
        if vnorm > 0:
            n = tuple(round(Fraction(float(x)) * 2**_DIRECTION_BITS) / Fraction(2**_DIRECTION_BITS) for x in v / vnorm)
        else:  # v̂ = 0: no direction to lean on; only the trivial bound 2𝒲 remains, never a finite wrong one
            n = (Fraction(1),) + (Fraction(0),) * (d - 1)
            vnorm = 1.0
        sigma = tuple(1 if x >= 0 else -1 for x in n)
        rows = [_row(d, k, n, sigma) for k in range(d)]
        norms = [math.sqrt(sum(float(x) ** 2 for x in r.values())) for r in rows]
        tv = max((float(t) for t in tau_v), default=0.0)
        Rf, Wf = float(R), float(W)
        best: tuple[float, float, float, float] | None = None
        for beta, g in _scale_grid(Rf, Wf):
            score = _proxy(beta, g, Wf, max(tau, 1e-300), tv, vnorm)
            best = _better(best, (score, beta * g * Wf, beta, g))
        if best is None:
            _require_scales(Rf, Wf)
        assert best is not None
        _, _, beta, g = best
        # Exact scales, rounded down so that every token stays within the budget, and short:
        # n lies on the grid 2^-40, each γ has a 6-bit mantissa and β lies on a grid 2^45
        # times finer than the γ, so every probe entry (γ·u_kj ± β) is a float64 number
        # and a float64 black box receives exactly these probes.
        gammas = [_dyadic_down(g * _SHRINK / nk, 6) for nk in norms]
        b = _beta_on_grid(beta, min(gammas))
        t_bound = tuple((W * _sqrt_up(sum((x * x for x in r.values()), Fraction(0))),) * d for r in rows)
        plan = cls(d, W, R, n, sigma, ((b,) * d,) * d, tuple((gk,) * d for gk in gammas), t_bound)
        plan._check_budget()
        return plan

    def refine(self, t_bound, s_hat, s_err, tau_v, *, tau: float) -> "FramePlan":
        """The same frame with per-probe scales for a second pass that knows ``|t_kj| <= t_bound[k][j]``.

        With ``t_kj`` known to be small, each probe can use a larger logit scale (more
        signal) at the same clipping cost; the scales minimise the same estimate of the bound
        as :meth:`make`, entry by entry.  ``s_hat``, ``s_err``: ``v̂ᵀu_k`` and its error.
        """
        d, R = self.d, float(self.token_norm)
        rows = self.rows()
        grid = np.array(_scale_grid(R, None))
        B, G = grid[:, 0], grid[:, 1]
        tv = max((float(t) for t in tau_v), default=0.0)
        beta = [list(r) for r in self.beta]
        gamma = [list(r) for r in self.gamma]
        bounds = [list(r) for r in self.t_bound]
        for k, row in enumerate(rows):
            nk = math.sqrt(sum(float(x) ** 2 for x in row.values()))
            s, e = abs(float(s_hat[k])), float(s_err[k])
            if not s > e:
                continue  # this row is not certified: keep the first pass's scales
            gam = G / nk
            for j in range(d):
                m = t_bound[k][j]
                if not math.isfinite(m) or Fraction(m) >= self.t_bound[k][j]:
                    continue  # nothing learned about t_kj: keep the first pass's scales
                lam = B * gam * m
                with np.errstate(over="ignore"):
                    lip = 2 + 2 * np.cosh(np.minimum(lam, 700))
                eps = (max(tau, 1e-300) + B * tv + gam * (1 / (1 + np.exp(-lam))) * e) / (gam * s)
                score = np.minimum(lip * eps, 2 * lam) / (B * gam)
                score[lam > MAX_LOGIT / 2] = np.inf
                if not np.isfinite(score).any():
                    continue
                low = score <= score.min() * (1 + 1e-9)  # among (nearly) tied scores, the smallest logit scale
                i = int(np.flatnonzero(low)[np.argmin(lam[low])])
                g = _dyadic_down(float(gam[i]) * _SHRINK, 6)
                gamma[k][j], beta[k][j] = g, _beta_on_grid(float(B[i]), g)
                bounds[k][j] = min(Fraction(m), self.t_bound[k][j])
        plan = dataclasses.replace(self, beta=tuple(map(tuple, beta)), gamma=tuple(map(tuple, gamma)),
                                   t_bound=tuple(map(tuple, bounds)), prior="pilot")
        plan._check_budget()
        return plan

    def _check_budget(self) -> None:
        if self.max_token_norm() > self.token_norm:  # pragma: no cover - the shrink margin covers float rounding
            raise InvalidArgument("token_norm: internal error, a probe token exceeds the budget")

    def rows(self) -> list[dict]:
        return [_row(self.d, k, self.n, self.sigma) for k in range(self.d)]

    def sums(self, v_hat, tau_v) -> tuple[list, list]:
        """``v̂ᵀu_k`` and a bound ``Σ_i |u_ki|·τ_i`` on its error, for every row (exact)."""
        rows = self.rows()
        s = [sum((x * v_hat[i] for i, x in row.items()), Fraction(0)) for row in rows]
        e = [sum((abs(x) * tau_v[i] for i, x in row.items()), Fraction(0)) for row in rows]
        return s, e

    def sequences(self) -> list[Sequence]:
        """``[β_kj·e_j + s_kj·γ_kj·u_k; β_kj·e_j]`` row-major in ``(k, j)``, ``s_kj = −sign(u_kj)``
        so that the first token's norm is at most ``√(β_kj² + γ_kj²‖u_k‖²)``."""
        out = []
        for k, row in enumerate(self.rows()):
            for j in range(self.d):
                b, g = self.beta[k][j], self.gamma[k][j]
                sg = -g if row.get(j, 0) > 0 else g
                tok = {i: sg * x for i, x in row.items()}
                tok[j] = tok.get(j, Fraction(0)) + b
                out.append(Sequence.sparse(self.d, [{i: x for i, x in tok.items() if x}, {j: b}]))
        return out

    def max_token_norm(self) -> Fraction:
        """An upper bound on the largest token norm (squares compared exactly)."""
        worst = Fraction(0)
        for k, row in enumerate(self.rows()):
            sq = sum((x * x for x in row.values()), Fraction(0))
            for j in range(self.d):
                b, g = self.beta[k][j], self.gamma[k][j]
                y = g * row.get(j, Fraction(0))
                y = -y if y > 0 else y
                worst = max(worst, b * b, g * g * sq - y * y + (y + b) ** 2)
        return _sqrt_up(worst)


_SHRINK = 1 - 2.0**-20  # scales are rounded down by this much, so that tokens stay within the budget


def _beta_on_grid(beta: float, gamma: Fraction) -> Fraction:
    """``β`` rounded down onto a grid 2^45 times finer than ``γ``'s exponent, and below
    ``2^6·2^e(γ)``: then every probe entry ``β + s·γ·u_kj`` (``γ`` a 6-bit mantissa, ``u_kj`` a
    multiple of 2^-40 below 2) is a multiple of that grid below ``2^53`` of it, a float64 number."""
    e = math.frexp(float(gamma))[1]
    grid = Fraction(2) ** (e - 1 - 45)
    b = min(Fraction(beta * _SHRINK), Fraction(2) ** (e + 5))
    return math.floor(b / grid) * grid


def _sqrt_up(q: Fraction) -> Fraction:
    """A rational >= √q."""
    r = Fraction(math.sqrt(float(q)))
    while r * r < q:
        r = r * (1 + Fraction(1, 2**40)) + Fraction(1, 2**80)
    return r


def _row(d: int, k: int, n: tuple, sigma: tuple) -> dict:
    """``u_k = e_k + σ_k·n`` as ``{index: value}``."""
    row = {i: sigma[k] * x for i, x in enumerate(n) if x}
    row[k] = row.get(k, Fraction(0)) + 1
    return {i: x for i, x in row.items() if x}


def decode_rows(plan: FramePlan, s_hat, s_err, v_hat, tau_v, values, errors):
    """``(T, E)``: the estimates ``t̂_kj`` of ``t_kj = u_kᵀWe_j`` (balls) and their certified
    error bounds (balls; ``None`` for a row whose ``|v̂ᵀu_k|`` is not certified above its error).

    ``s_hat[k]``, ``s_err[k]``: an estimate of ``vᵀu_k`` and a bound on its error.
    """
    d = plan.d
    clips: dict = {}
    with ctx.workprec(_PREC):
        T: list[list[Any]] = [[None] * d for _ in range(d)]
        E: list[list[Any]] = [[None] * d for _ in range(d)]
        for k, row in enumerate(plan.rows()):
            s, spread = s_hat[k], s_err[k]
            certified = abs(s) > spread
            for j in range(d):
                beta, g = plan.beta[k][j], plan.gamma[k][j]
                lam = beta * g * plan.t_bound[k][j]  # >= |logit|
                if lam not in clips:
                    clips[lam] = _clip(lam)
                c_lo, c_hi, lip, span = clips[lam]
                m = k * d + j
                y, tau = values[m], errors[m]
                sg = -1 if row.get(j, 0) > 0 else 1  # the probe's sign s_kj
                alpha = to_fmpq((y - beta * v_hat[j]) / (sg * g * s)) if s else fmpq(1, 2)
                clipped = min(max(alpha, c_lo), c_hi)
                T[k][j] = (arb(clipped) / (1 - arb(clipped))).log() / to_fmpq(sg * beta * g)
                if certified:
                    eps = (arb(to_fmpq(tau + beta * tau_v[j])) + arb(c_hi) * to_fmpq(g * spread)) / abs(arb(to_fmpq(g * s)))
                    if alpha != clipped and abs(arb(alpha) - arb(clipped)) > eps:
                        raise OracleInconsistent(_outside(plan, m))
                    # the true logit lies in [−λ, λ], the clipped estimate's in [−span, span]; the
                    # width cap L·(c_hi − c_lo) never binds (it is 2·sinh(span) >= λ + span)
                    E[k][j] = _arb_min(lip * eps, arb(to_fmpq(lam)) + span) / to_fmpq(beta * g)
                    if not (E[k][j] >= 0 and T[k][j].is_finite()):  # pragma: no cover - guards the arithmetic
                        raise InvalidArgument(f"internal: probe ({k}, {j}) gave a bound that is not a finite "
                                              "nonnegative number")
    return T, E


def _outside(plan: FramePlan, m: int) -> str:
    if plan.prior == "w_bound":
        return (f"answer #{plan.d + m} proves ‖W‖_F > w_bound = {plan.w_bound} (its softmax weight lies "
                "outside the range that bound allows, by more than the noise can explain): raise --w-bound")
    return (f"refining answer #{m} contradicts the first pass: its softmax weight lies outside the range "
            "the first pass certified, by more than the noise can explain (an answer is off by more than "
            "its declared error bound)")


def combine(plan: FramePlan, T, E) -> tuple[np.ndarray, np.ndarray]:
    """``Ŵ = U⁻¹T̂`` (Sherman–Morrison) and its entrywise certified bounds (the float64 rounding included)."""
    d = plan.d
    W = np.zeros((d, d))
    bound = np.full((d, d), math.inf)
    with ctx.workprec(_PREC):
        one_plus = 1 + sum((abs(x) for x in plan.n), Fraction(0))  # 1 + σᵀn = 1 + ‖n‖₁
        inv = arb(to_fmpq(1 / one_plus))
        nq = [to_fmpq(x) for x in plan.n]
        for j in range(d):
            c = sum((nq[i] * T[i][j] for i in range(d)), arb(0)) * inv  # (nᵀT)_j/(1 + ‖n‖₁)
            col_ok = all(E[i][j] is not None for i in range(d))
            spill = sum((abs(nq[i]) * E[i][j] for i in range(d)), arb(0)) * inv if col_ok else None
            for k in range(d):
                w = T[k][j] - plan.sigma[k] * c
                W[k, j] = float(w.mid())
                if col_ok:
                    rounding = abs(arb(to_fmpq(Fraction(W[k, j]))) - w)
                    bound[k, j] = _upper(E[k][j] + spill + rounding)
    return W, bound


def decode_frame(plan: FramePlan, v_hat, tau_v, values, errors):
    """``(Ŵ, W bounds)`` from the ``d²`` logit answers of one pass (values and error bounds exact)."""
    s, e = plan.sums(v_hat, tau_v)
    return combine(plan, *decode_rows(plan, s, e, v_hat, tau_v, values, errors))


def _clip(lam: Fraction):
    from .noisy import _clip_interval

    return _clip_interval(lam, _PREC)


def _project(W: np.ndarray, w_bound: Fraction) -> tuple[np.ndarray, np.ndarray | None]:
    """Project onto ``‖W‖_F <= 𝒲``: ``(P, None)`` when ``W`` is inside, else ``(P, slack)`` with
    ``|P_kj − W_kj| <= slack_kj`` (the scaling and its float64 rounding)."""
    norm = math.sqrt(math.fsum(float(x) ** 2 for x in W.ravel()))
    if norm <= float(w_bound):
        return W, None  # inside (or within rounding of) the ball: left as it is
    c = min(float(w_bound) / norm, 1.0)  # inward only: an outward scaling could move Ŵ away from W
    P = W * c
    return P, np.abs(W) * (1 - c) + np.abs(W) * 2.0**-50


def default_token_norm(w_bound: Fraction, token_norm=None) -> Fraction:
    """``R``: the given budget, or the paper learner's ``max(1, 1/2 + 1/𝒲)`` (rounded down to float64,
    and at most 2^40, the largest budget the learners take)."""
    if token_norm is None:
        return float_down(min(max(Fraction(1), Fraction(1, 2) + 1 / w_bound), SCALE_RANGE[1]))
    return float_down(_positive(token_norm, "token_norm"))


def ask_values(run: Run, oracle, sequences) -> tuple[list, list]:
    """The answers to ``sequences`` as exact rationals, and a bound on each one's error."""
    values, errors = [], []
    for a in run.ask(sequences):
        y, r = _value(a)
        values.append(y)
        errors.append(to_fraction(oracle.error_bound(a), name="error bound") + r)
    return values, errors


def ask_v(run: Run, oracle, d: int, R: Fraction) -> tuple[list, list, float]:
    """``v̂ = f([R·e_i])/R`` (``d`` queries), its error bounds, and the largest answer error."""
    yv, err_v = ask_values(run, oracle, [Sequence.sparse(d, [{i: R}]) for i in range(d)])
    return [y / R for y in yv], [e / R for e in err_v], max(float(e) for e in err_v)


def finish_frame(run: Run, W: np.ndarray, bound: np.ndarray, v_hat, tau_v, W_bound: Fraction, details: NoisyDetails):
    """Refuse an estimate proved outside ``‖W‖_F <= 𝒲``, project onto that ball, certify, finish."""
    far = ErrorBound.from_entries(bound, []).W_frobenius
    if math.sqrt(math.fsum(float(x) ** 2 for x in W.ravel())) * (1 - 2.0**-40) > float(W_bound) + far:
        raise OracleInconsistent(
            f"the answers prove ‖W‖_F > w_bound = {W_bound} (the estimate lies further than its certified "
            "bound outside that ball): raise --w-bound"
        )
    W, slack = _project(W, W_bound)
    projected = slack is not None
    v = np.array([float(x) for x in v_hat])
    v_bound = [_upper(arb(to_fmpq(t)) + abs(arb(to_fmpq(x)) - arb(to_fmpq(Fraction(f)))))
               for t, x, f in zip(tau_v, v_hat, v)]
    # Ŵ and W both lie in the ball ‖·‖_F <= 𝒲 (Ŵ after projection, or found inside it up to
    # float rounding), so no error exceeds 2𝒲: a cap on every bound
    cap = math.nextafter(2 * float(W_bound) * (1 + 2.0**-40), math.inf)
    bound = np.minimum(bound, cap)
    eb = ErrorBound.from_entries(bound, v_bound)
    if not projected and eb.W_frobenius > cap:
        eb = ErrorBound(cap, eb.W_max, eb.v_norm, eb.v_max)
    if projected:
        # Projection onto a convex set that holds W is non-expansive in Frobenius norm, so the
        # unprojected bound stands, plus the float64 rounding of the scaling (2^-50|Ŵ| covers
        # it); an entry may move by the whole scaling.
        rounding = ErrorBound.from_entries(np.abs(W) * 2.0**-49, []).W_frobenius
        fro = min(eb.W_frobenius, 2 * float(W_bound)) * (1 + 2.0**-50) + rounding
        entries = ErrorBound.from_entries(bound + slack, v_bound)
        eb = ErrorBound(math.nextafter(fro, math.inf), entries.W_max, eb.v_norm, eb.v_max)
    if eb.W_max > eb.W_frobenius:  # no entry's error exceeds the Frobenius error
        eb = ErrorBound(eb.W_frobenius, eb.W_frobenius, eb.v_norm, eb.v_max)
    return run.finish(
        SingleHead(W.tolist(), v.tolist()),
        approximate=True,
        error_estimate=eb.W_max,
        error_bound=eb,
        assumptions=(
            f"‖W‖_F <= w_bound = {W_bound}",
            "every answer within the oracle's declared error bound",
            "among bias-free single heads",
        ),
        details=dataclasses.replace(details, projected=projected, w_bound=str(W_bound)),
    )


def learn_noisy_frame(oracle: Oracle, *, w_bound, token_norm=None) -> LearnResult:
    """Learn a single head from a noisy oracle with ``d² + d`` queries on a 45° frame.

    Parameters
    ----------
    oracle : Oracle
        Any oracle; each answer's ``error_bound`` is the noise level the bound uses.
    w_bound : number
        ``𝒲``, an assumed bound on ``‖W‖_F``.
    token_norm : number, optional
        ``R``, the largest Euclidean norm of a query token; default ``max(1, 1/2 + 1/𝒲)``,
        the paper learner's, so the two compare at equal budgets.

    Returns
    -------
    LearnResult
        ``exact`` is False; ``error_bound`` holds the certified bounds.

    Examples
    --------
    >>> from exact import NoisyOracle, SingleHead
    >>> truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    >>> r = learn_noisy_frame(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2)
    >>> r.queries, r.error_bound.W_frobenius < 2e-4
    (6, True)
    """
    d = oracle_dimension(oracle)
    W_bound = _positive(w_bound, "w_bound")
    R = default_token_norm(W_bound, token_norm)
    _require_scales(float(R), float(W_bound))  # before any query
    run = Run(SPEC, oracle, mode="float", queries=noisy_query_count(d), certify=False, checks=0)
    with run:
        v_hat, tau_v, tau = ask_v(run, oracle, d, R)
        plan = FramePlan.make(v_hat, tau_v, w_bound=W_bound, token_norm=R, tau=tau)
        values, errors = ask_values(run, oracle, plan.sequences())
        W, bound = decode_frame(plan, v_hat, tau_v, values, errors)
        return finish_frame(run, W, bound, v_hat, tau_v, W_bound,
                            NoisyDetails(learner="frame", beta=str(plan.beta[0][0]), token_norm=str(R)))


SPEC = (
    registry.LearnerSpec(
        adversary="exact.learn.adversary:frame_adversary",
        name="noisy-frame",
        summary="beyond Theorem 6.1: a 45° probe frame and bound-minimising scales, d² + d queries, certified bound",
        model_kind="single-head",
        modes=("float",),
        learn=learn_noisy_frame,
        query_count=lambda d, **conditions: noisy_query_count(d),
        count_formula="d² + d",
        exact=False,
        options=(
            registry.Option("w_bound", "number", "𝒲, an assumed bound on ‖W‖_F", required=True),
            registry.Option("token_norm", "number", "R, the largest token norm (default max(1, 1/2 + 1/𝒲))"),
        ),
        command="single-head",
        method="noisy-frame",
        selector=("learner", "frame"),
        noisy_default=True,
    )
)
