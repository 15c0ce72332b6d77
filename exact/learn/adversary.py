"""A learner-aware adversary for the noisy learners: noise in [−τ, τ] chosen to maximise the error.

The adversary knows the hidden head and the learner (its probes and its decoding), as the
worst case of Theorem 6.1 allows.  It simulates the learner in float64 and chooses one
``η`` per query:

1. **Signs of the sensitivities.**  For fixed noise on the ``d`` value queries, each logit
   estimate depends on its own answer only, monotonically, and ``Ŵ`` is linear in the
   logits.  So ``‖Ŵ − W‖_F`` is convex in the logit answers and its maximum over the box
   ``[−τ, τ]^{d²}`` sits at a vertex; the adversary takes ``η = τ·sign(∂‖Ŵ − W‖²/∂y)`` and
   repeats a few times (for the paper learner, whose ``Ŵ_ij`` depends on ``y_ij`` alone,
   the per-entry choice of the larger of the two ends is exactly optimal).
2. **Local search on the value queries.**  The noise on ``v``'s queries moves every
   estimate (and, for the frame learner, the probes themselves); the adversary flips one
   sign at a time and keeps each flip that increases the error, for a few rounds.

:func:`adversary` returns the strategy for :class:`~exact.noise.Adversarial`; the noisy
oracle then answers the learner's queries, in order, with the chosen ``η``.

Examples
--------
>>> from exact import NoisyOracle, SingleHead
>>> from exact.noise import Adversarial
>>> from exact.learn import learn_noisy
>>> truth = SingleHead.gaussian(3, seed=0)
>>> strategy = adversary(truth, "paper", tau=1e-4, w_bound=2, token_norm=1)
>>> hurt = learn_noisy(NoisyOracle(truth, Adversarial(1e-4, strategy)), w_bound=2, token_norm=1)
>>> calm = learn_noisy(NoisyOracle(truth, "uniform:1e-4", seed=0), w_bound=2, token_norm=1)
>>> err = lambda r: np.linalg.norm(np.array(r.model.to_numpy()[0]) - np.array(truth.to_numpy()[0]))
>>> bool(err(hurt) > err(calm)), bool(err(hurt) <= hurt.error_bound.W_frobenius)
(True, True)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import InvalidArgument
from ..floateval import evaluate_sequences
from ..numbers import to_fraction
from ..sequences import Sequence
from .noisy import PaperPlan
from .noisy_frame import FramePlan, default_token_norm

__all__ = ["adversary"]


def _logit(alpha: np.ndarray) -> np.ndarray:
    return np.log(alpha) - np.log1p(-alpha)


def _sigma(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


class _Paper:
    """The paper learner, simulated in float64."""

    def __init__(self, d, w_bound, token_norm):
        self.plan = PaperPlan.make(d, w_bound=w_bound, token_norm=token_norm)
        p = self.plan
        self.R, self.A, self.B = float(p.token_norm), float(p.A), float(p.B)
        lam = float(p.lam)
        self.lo, self.hi = _sigma(-lam), _sigma(lam)

    def probes(self, v_hat) -> list[Sequence]:
        return self.plan.sequences()[self.plan.d :]

    def decode(self, probes_state, yv, yw):
        d = self.plan.d
        vh = yv / self.R
        Y = yw.reshape(d, d)
        with np.errstate(all="ignore"):
            alpha = (Y - self.A * vh[None, :]) / (self.B * vh[:, None])
        alpha = np.clip(np.nan_to_num(alpha, nan=0.5), self.lo, self.hi)
        return _logit(alpha) / (self.A * self.B)


class _Frame:
    """The frame learner, simulated in float64 (its probes depend on v̂)."""

    def __init__(self, d, w_bound, token_norm, tau):
        self.d, self.w_bound, self.tau = d, to_fraction(w_bound), tau
        self.R = default_token_norm(self.w_bound, token_norm)  # the learner's own default, capped at 2^40

    def plan(self, v_hat):
        tv = [Fraction(self.tau) / self.R] * self.d
        return FramePlan.make([Fraction(float(x)) for x in v_hat], tv, w_bound=self.w_bound, token_norm=self.R,
                              tau=self.tau)

    def probes(self, v_hat):
        return self.plan(v_hat).sequences()

    def decode(self, plan, yv, yw):
        d = self.d
        vh = yv / float(self.R)
        rows = plan.rows()
        U = np.array([[float(r.get(i, 0)) for i in range(d)] for r in rows])
        beta = np.array([[float(x) for x in r] for r in plan.beta])
        gam = np.array([[float(x) for x in r] for r in plan.gamma])
        sgn = np.where(U > 0, -1.0, 1.0)  # s_kj = −sign(u_kj)
        s = U @ vh
        Y = yw.reshape(d, d)
        lam = beta * gam * np.array([[float(x) for x in r] for r in plan.t_bound])
        with np.errstate(all="ignore"):
            alpha = (Y - beta * vh[None, :]) / (sgn * gam * s[:, None])
        lo = 1 / (1 + np.exp(lam))
        alpha = np.clip(np.nan_to_num(alpha, nan=0.5), lo, 1 - lo)
        T = _logit(alpha) / (sgn * beta * gam)
        return np.linalg.solve(U, T)

    def gradient(self, plan, yv, yw, Wt):
        """∂‖Ŵ − W‖²/∂y for every logit answer: ``Ŵ = U⁻¹T̂`` is linear in ``T̂``, and each
        ``T̂_kj`` depends on ``y_kj`` alone (its derivative by one vectorised difference)."""
        d = self.d
        U = np.array([[float(r.get(i, 0)) for i in range(d)] for r in plan.rows()])
        What = self.decode(plan, yv, yw)
        h = 1e-7 * max(1.0, float(np.abs(yw).max()))
        T0, T1 = U @ What, U @ self.decode(plan, yv, yw + h)
        dT = (T1 - T0) / h
        gT = 2 * np.linalg.solve(U.T, What - Wt)  # ∂‖U⁻¹T − W‖²/∂T = 2·U^{-T}(Ŵ − W)
        return (gT * dT).ravel()


def adversary(truth, learner: str = "paper", *, tau, w_bound, token_norm=None, rounds: int = 3):
    """The strategy of a learner-aware adversary against ``learner`` ("paper" or "frame") on ``truth``.

    Parameters
    ----------
    truth : SingleHead
        The hidden head (the adversary knows it).
    learner : {"paper", "frame"}
    tau : number
        The noise level: every ``η`` lies in ``[−τ, τ]``.
    w_bound, token_norm :
        The learner's options (they fix its probes).
    rounds : int
        Rounds of sign refinement and of local search.

    Returns
    -------
    callable
        ``strategy(index, X, clean, tau) -> η`` for :class:`~exact.noise.Adversarial`; it
        answers the learner's queries in order (query ``index`` of the run).
    """
    if learner not in ("paper", "frame"):
        raise InvalidArgument(f"learner: expected 'paper' or 'frame', got {learner!r}")
    t = float(to_fraction(tau, name="tau"))
    if t < 0:
        raise InvalidArgument(f"tau: expected a noise level >= 0, got {tau!r}")
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise InvalidArgument(f"rounds: expected a positive integer, got {rounds!r}")
    d = truth.d
    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    sim: Any = _Paper(d, w_bound, token_norm) if learner == "paper" else _Frame(d, w_bound, token_norm, t)
    R = float(sim.plan.token_norm) if learner == "paper" else float(sim.R)
    clean_v = R * vt

    def inner(signs_v):
        """The best logit noise for this value noise: ``(error, probes, η_W)``."""
        yv = clean_v + t * signs_v
        state = sim.plan if learner == "paper" else sim.plan(yv / R)
        probes = sim.probes(yv / R) if learner == "frame" else sim.probes(None)
        clean_w, _ = evaluate_sequences(Wt, vt, probes)
        eta = np.full(len(probes), t)
        best = None
        for _ in range(rounds + 1):
            What = sim.decode(state, yv, clean_w + eta)
            err = float(np.linalg.norm(What - Wt))
            if best is None or err > best[0]:
                best = (err, probes, eta.copy())
            if learner == "paper":  # Ŵ_ij depends on y_ij alone: compare both ends entry by entry
                up = (sim.decode(state, yv, clean_w + t) - Wt) ** 2
                down = (sim.decode(state, yv, clean_w - t) - Wt) ** 2
                eta = np.where((up >= down).ravel(), t, -t)
                What = sim.decode(state, yv, clean_w + eta)
                err = float(np.linalg.norm(What - Wt))
                if err > best[0]:
                    best = (err, probes, eta.copy())
                break
            grad = sim.gradient(state, yv, clean_w + eta, Wt)
            new = np.where(grad >= 0, t, -t)
            if np.array_equal(new, eta):
                break
            eta = new
        return best

    signs = -np.sign(vt)  # start by shrinking every |v̂_i|: it divides the logit estimates
    signs[signs == 0] = 1
    best = inner(signs)
    for _ in range(rounds):
        improved = False
        for i in range(d):
            trial = signs.copy()
            trial[i] = -trial[i]
            cand = inner(trial)
            if cand[0] > best[0]:
                signs, best, improved = trial, cand, True
        if not improved:
            break
    _, probes, eta_w = best
    table = [int(x) for x in signs] + [1 if x >= 0 else -1 for x in eta_w]  # η = ±τ: the box's vertices
    R_exact = sim.plan.token_norm if learner == "paper" else sim.R
    expected = [Sequence.sparse(d, [{i: R_exact}]) for i in range(d)] + list(probes)

    def strategy(index, X, clean, tau_):
        if index < len(table) and X == expected[index]:
            return table[index] * Fraction(tau_)
        return Fraction(tau_)  # a query the simulation did not foresee: a plain bias

    return strategy


def paper_adversary(truth, **options):
    """The adversary the paper learner's registry entry names (the command line's ``adversarial:τ``)."""
    return adversary(truth, "paper", **options)


def frame_adversary(truth, **options):
    """The adversary the frame and refining learners' entries name: the refining learner's first
    d² + d queries are the frame learner's, so it plays them; later ones get the constant bias +τ."""
    return adversary(truth, "frame", **options)
