"""Learning a single head from a noisy oracle — Theorem 6.1 of [BSHK26], with a certified error bound.

The oracle answers ``y = f(X) + η`` with ``|η| <= τ`` (its declared ``error_bound`` per
answer).  Assumptions: ``|W_ij| <= ‖W‖_F <= 𝒲`` (the ``w_bound``), and every query
token has Euclidean norm at most ``R`` (the ``token_norm`` budget: without one, scaling
the inputs up would shrink any noise away).

The paper's learner makes ``d² + d`` queries:

1. ``v̂_i = f([R·e_i])/R``, so ``|v̂_i − v_i| <= τ/R``.
2. For every ``(i, j)``: ``X = [B·e_i + A·e_j; A·e_j]`` with ``A = s·a``, ``B = s·b``,
   ``a = 1/2``, ``b = 1/𝒲`` and ``s = min(1, R/(a + b))`` (the paper's probes, shrunk
   only if the budget is below their norm ``a + b``).  Then
   ``f(X) = A·v_j + σ(ℓ)·B·v_i`` with logit ``ℓ = AB·W_ij``, ``|ℓ| <= λ = AB·𝒲 = s²/2``.
3. ``α̂ = (y − A·v̂_j)/(B·v̂_i)``, clipped to ``[σ(−λ), σ(λ)]``, and
   ``Ŵ_ij = σ⁻¹(α̂)/(AB)``.

**The certified bound**, from the answers alone.  Exactly,
``α̂ − α = (η − A·δ_j − α·B·δ_i)/(B·v̂_i)`` with ``δ = v̂ − v``, so
``|α̂ − α| <= ε_ij = (τ_ij + A·τ_j/R + σ(λ)·B·τ_i/R)/(B·|v̂_i|)``.  Clipping onto an
interval that holds ``α`` only brings ``α̂`` closer, and ``σ⁻¹`` is ``L``-Lipschitz
there with ``L = 1/(σ(λ)σ(−λ))`` (Lemma A.1: ``L < 5`` at ``λ = 1/2``), so

    |Ŵ_ij − W_ij| <= min(L · min(ε_ij, σ(λ) − σ(−λ)), 2λ) / (AB).

With ``|v̂_i| >= μ − τ``, ``R = 1`` and ``𝒲 >= 2`` this is the paper's
``L·τ(3𝒲² + 2σ(½)𝒲)/(μ − τ)``, and in Frobenius norm at most ``K·𝒲²·d·τ/μ`` with
``K = L(3 + 2σ(½)/𝒲)/(1 − τ/μ)``; the learner reports the per-entry form, which uses
the measured ``|v̂_i|`` instead of the unknown margin ``μ``.  Every bound is computed in
ball arithmetic and rounded up, and the float64 rounding of each ``Ŵ_ij`` is added.
A row whose ``|v̂_i| <= τ_i/R`` (the margin is not certified: ``v_i`` may be 0) gets an
infinite bound, never a finite wrong one.  An answer whose ``α̂`` lies further than
``ε_ij`` outside ``[σ(−λ), σ(λ)]`` proves ``|W_ij| > 𝒲``, and the learner says so.

References
----------
[BSHK26] Bhattamishra, Shah, Hahn, Kanade, *Provably Learning Attention with Queries*,
arXiv 2601.16873 (ICML 2026), Theorem 6.1 and Lemma A.1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, ctx, fmpq

from .. import registry
from ..errors import InvalidArgument, OracleInconsistent
from ..models import SingleHead
from ..numbers import approx, ball_interval, floor_log2, to_fmpq, to_fraction
from ..oracles import ExactAnswer
from ..protocols import Oracle
from ..sequences import Sequence
from .driver import Run, oracle_dimension
from .details import Details
from .result import ErrorBound, LearnResult

__all__ = ["learn_noisy", "PaperPlan", "noisy_query_count", "SPEC", "PAPER_A", "LIPSCHITZ_HALF"]

#: The paper's token coefficient ``a`` (``b = 1/𝒲``).
PAPER_A = Fraction(1, 2)

#: ``L = 1/(σ(½)σ(−½)) = 2 + 2·cosh(½) ≈ 4.2552``: the Lipschitz constant of σ⁻¹ on
#: ``[σ(−½), σ(½)]`` (Lemma A.1 bounds it by 5).
LIPSCHITZ_HALF = 2 + 2 * math.cosh(0.5)

_PREC = 128  # bits of the ball arithmetic that certifies the bounds


def noisy_query_count(d: int) -> int:
    """``d² + d``: ``d`` value probes and ``d²`` logit probes.

    >>> noisy_query_count(16)
    272
    """
    return d * d + d


def float_down(q: Fraction) -> Fraction:
    """The largest float64 value ``<= q`` (``q > 0``), exactly: probes are float64 numbers.

    >>> float_down(Fraction(5, 6)) <= Fraction(5, 6) < float_down(Fraction(5, 6)) + Fraction(1, 2**53)
    True
    """
    f = Fraction(float(q))
    return f if f <= q else Fraction(math.nextafter(float(q), 0.0))


#: ``𝒲`` and ``R`` lie in ``[2^-40, 2^40]``: far beyond any attention model, and where the
#: probes' scales, their float64 entries and the certified arithmetic all stay in range.
SCALE_RANGE = (Fraction(1, 2**40), Fraction(2**40))


def _positive(value, name: str) -> Fraction:
    q = to_fraction(value, name=name)
    if q <= 0:
        raise InvalidArgument(f"{name}: expected a positive number, got {value!r}")
    lo, hi = SCALE_RANGE
    if not lo <= q <= hi:
        raise InvalidArgument(f"{name}: expected a number between 2^-40 and 2^40, got {approx(q, 3)}")
    return q


@dataclass(frozen=True)
class PaperPlan:
    """The probes of Theorem 6.1 for ``d``, ``𝒲`` and the token-norm budget ``R``.

    >>> plan = PaperPlan.make(2, w_bound=2)
    >>> plan.token_norm, plan.A, plan.B, plan.lam
    (Fraction(1, 1), Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))
    >>> [s.dense() for s in plan.sequences()][2]   # (i, j) = (0, 0): [(A + B)e_0; A e_0]
    [[Fraction(1, 1), Fraction(0, 1)], [Fraction(1, 2), Fraction(0, 1)]]
    """

    d: int
    w_bound: Fraction
    token_norm: Fraction
    A: Fraction
    B: Fraction

    @classmethod
    def make(cls, d: int, *, w_bound, token_norm=None) -> "PaperPlan":
        """The paper's probes; ``token_norm`` defaults to their largest norm ``max(1, a + b)``."""
        W = _positive(w_bound, "w_bound")
        a, b = PAPER_A, 1 / W
        R = float_down(max(Fraction(1), a + b) if token_norm is None else _positive(token_norm, "token_norm"))
        s = min(Fraction(1), R / (a + b))
        # Probe entries are float64 numbers, so a float64 black box receives exactly these
        # probes: A and B are rounded down (the token norms only shrink) to a common grid
        # fine enough for A, B and A + B to have at most 53 significant bits.  With 𝒲 in
        # [2^-40, 2^40], b/a = 2/𝒲 >= 2^-39, so B is at least 2^11 grid steps: never 0.
        grid = Fraction(2) ** (floor_log2(max(s * a, s * b)) - 50)
        A, B = (math.floor(x / grid) * grid for x in (s * a, s * b))
        return cls(d, W, R, A, B)

    @property
    def lam(self) -> Fraction:
        """``λ = AB·𝒲``: every probe logit lies in ``[−λ, λ]``."""
        return self.A * self.B * self.w_bound

    def sequences(self) -> list[Sequence]:
        """``d`` value probes ``[R·e_i]``, then ``[B·e_i + A·e_j; A·e_j]`` row-major in ``(i, j)``."""
        d, A, B, R = self.d, self.A, self.B, self.token_norm
        out = [Sequence.sparse(d, [{i: R}]) for i in range(d)]
        for i in range(d):
            for j in range(d):
                first = {j: A + B} if i == j else {i: B, j: A}
                out.append(Sequence.sparse(d, [first, {j: A}]))
        return out


#: The largest logit scale a probe may use: σ(−40) ≈ 4e-18, far past any useful scale, and
#: small enough that the clipping range and its rationals stay short.
MAX_LOGIT = 40


def _clip_interval(lam: Fraction, prec: int) -> tuple[fmpq, fmpq, arb, arb]:
    """Rationals ``0 < c_lo <= σ(−λ)`` and ``c_hi = 1 − c_lo >= σ(λ)``, an upper ball for the
    Lipschitz constant ``1/(c_lo·c_hi)`` of σ⁻¹ on ``[c_lo, c_hi]``, and ``σ⁻¹(c_hi) >= λ``,
    the largest logit a clipped estimate can take."""
    if not 0 <= lam <= MAX_LOGIT:
        raise InvalidArgument(f"internal: a probe logit scale λ = {float(lam):.3g} outside [0, {MAX_LOGIT}]")
    with ctx.workprec(prec):
        s = 1 / (1 + arb(to_fmpq(lam)).exp())  # σ(−λ)
        lo, _ = ball_interval(s)
        lo *= 1 - Fraction(1, 2 ** (prec - 8))  # a relative margin: c_lo stays positive however small σ(−λ) is
        c_lo = to_fmpq(lo)
        c_hi = 1 - c_lo
        lip = 1 / (arb(c_lo) * arb(c_hi))
        span = (arb(c_hi) / arb(c_lo)).log()
    return c_lo, c_hi, lip, span


def _value(answer) -> tuple[Fraction, Fraction]:
    """An answer's value as an exact rational, and how far it may be from the answer (0 for numbers)."""
    if isinstance(answer, ExactAnswer):
        lo, hi = ball_interval(answer.ball(_PREC))
        return (lo + hi) / 2, (hi - lo) / 2
    return to_fraction(answer, name="answer"), Fraction(0)


def _upper(x: arb) -> float:
    """The least float64 >= every point of the ball (inf if unbounded)."""
    if not x.is_finite():
        return math.inf
    _, hi = ball_interval(x)
    f = float(hi)
    return f if Fraction(f) >= hi else math.nextafter(f, math.inf)


def decode_paper(plan: PaperPlan, values: list, errors: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(Ŵ, v̂, W bounds, v bounds)`` from the answers' values and error bounds (both exact).

    Certified: every bound is an upper bound computed in ball arithmetic, the float64
    rounding of ``Ŵ`` included.  Raises :class:`OracleInconsistent` when an answer
    proves ``|W_ij| > 𝒲``.
    """
    d, A, B, R = plan.d, plan.A, plan.B, plan.token_norm
    v_hat = [y / R for y in values[:d]]
    tau_v = [t / R for t in errors[:d]]
    c_lo, c_hi, lip, span = _clip_interval(plan.lam, _PREC)
    AB = to_fmpq(A * B)
    W = np.zeros((d, d))
    bound = np.zeros((d, d))
    with ctx.workprec(_PREC):
        for i in range(d):
            vi = v_hat[i]
            certified = abs(vi) > tau_v[i]
            for j in range(d):
                m = d + i * d + j
                y, tau = values[m], errors[m]
                if vi == 0:
                    alpha = fmpq(1, 2)  # no information on row i: the midpoint of the clip interval
                    eps = None
                else:
                    alpha = to_fmpq((y - A * v_hat[j]) / (B * vi))
                    eps = (arb(to_fmpq(tau + A * tau_v[j])) + arb(c_hi) * to_fmpq(B * tau_v[i])) / abs(arb(to_fmpq(B * vi)))
                    if certified and (alpha < c_lo or alpha > c_hi):
                        gap = (arb(c_lo) - alpha) if alpha < c_lo else (alpha - arb(c_hi))
                        if gap > eps:
                            raise OracleInconsistent(
                                f"answer #{m} proves |W[{i}][{j}]| > w_bound = {plan.w_bound} (its softmax weight "
                                "lies outside the range that bound allows, by more than the noise can explain): "
                                "raise --w-bound"
                            )
                clipped = min(max(alpha, c_lo), c_hi)
                ell = (arb(clipped) / (1 - arb(clipped))).log() / AB
                w = float(ell.mid())
                W[i, j] = w
                rounding = abs(arb(fmpq(*Fraction(w).as_integer_ratio())) - ell)
                if eps is None or not certified:
                    bound[i, j] = math.inf
                else:
                    # the true logit lies in [−λ, λ] and the clipped estimate in [−span, span],
                    # so |Δℓ| <= λ + span whatever the noise.  (The width cap L·(c_hi − c_lo) of
                    # the formula never binds: with c_lo = σ(−μ), μ = span >= λ, it is 2·sinh μ >= λ + span.)
                    err = _arb_min(lip * eps, arb(to_fmpq(plan.lam)) + span) / AB + rounding
                    bound[i, j] = _upper(err)
    v_out = np.array([float(x) for x in v_hat])
    v_bound = np.array([_upper(arb(to_fmpq(t)) + abs(arb(to_fmpq(x)) - arb(to_fmpq(Fraction(f)))))
                        for t, x, f in zip(tau_v, v_hat, v_out)])
    return W, v_out, bound, v_bound


def _arb_min(x: arb, y: arb) -> arb:
    """An upper bound of ``min(a, b)`` over ``a`` in ``x``, ``b`` in ``y``: the smaller upper end, as a
    point (a bound needs only its upper end)."""
    return arb(min(_upper(x), _upper(y)))


def learn_noisy(
    oracle: Oracle,
    *,
    w_bound,
    token_norm=None,
) -> LearnResult:
    """Learn a single head from a noisy oracle with the paper's ``d² + d`` probes (Theorem 6.1).

    Parameters
    ----------
    oracle : Oracle
        Any oracle; its ``error_bound`` of each answer is the noise level ``τ`` the
        bound uses (a :class:`~exact.noise.NoisyOracle` declares its noise model's).
    w_bound : number
        ``𝒲``, an assumed bound on ``‖W‖_F`` (only ``|W_ij| <= 𝒲`` is used).
    token_norm : number, optional
        ``R``, the largest Euclidean norm of a query token; default the paper's
        largest, ``max(1, 1/2 + 1/𝒲)``.

    Returns
    -------
    LearnResult
        ``exact`` is False; ``error_bound`` holds the certified bounds on
        ``‖Ŵ − W‖_F``, ``max |Ŵ_ij − W_ij|``, ``‖v̂ − v‖₂`` and ``max |v̂_i − v_i|``.
        They hold under the stated assumptions (``assumptions``).

    Examples
    --------
    >>> from exact import NoisyOracle, SingleHead
    >>> truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    >>> r = learn_noisy(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2)
    >>> r.queries, r.error_bound.W_frobenius < 2e-4
    (6, True)
    >>> print(r.claim)  # doctest: +ELLIPSIS
    approximate (certified: ‖ΔW‖_F <= 0.000145, ‖Δv‖ <= 1.41e-06), assuming |W_ij| <= ‖W‖_F <= w_bound = 2; ...
    >>> bool(np.abs(np.array(r.model.to_numpy()[0]) - np.array(truth.to_numpy()[0])).max() <= r.error_bound.W_max)
    True
    """
    d = oracle_dimension(oracle)
    plan = PaperPlan.make(d, w_bound=w_bound, token_norm=token_norm)
    run = Run(SPEC, oracle, mode="float", queries=noisy_query_count(d), certify=False, checks=0)
    with run:
        answers = run.ask(plan.sequences())
        values, errors = [], []
        for a in answers:
            y, r = _value(a)
            values.append(y)
            errors.append(to_fraction(oracle.error_bound(a), name="error bound") + r)
        W, v, bound, v_bound = decode_paper(plan, values, errors)
        model = SingleHead(W.tolist(), v.tolist())
        eb = ErrorBound.from_entries(bound, v_bound)
        assumptions = (
            f"|W_ij| <= ‖W‖_F <= w_bound = {plan.w_bound}",
            "every answer within the oracle's declared error bound",
            "among bias-free single heads",
        )
        return run.finish(
            model,
            approximate=True,
            error_estimate=eb.W_max,
            error_bound=eb,
            assumptions=assumptions,
            details=NoisyDetails(learner="paper", A=str(plan.A), B=str(plan.B), token_norm=str(plan.token_norm),
                                 lam=str(plan.lam), w_bound=str(plan.w_bound)),
        )


@dataclass(frozen=True)
class NoisyDetails(Details):
    """The noisy learners' plan: which learner, its scales and the bounds it assumed (as exact strings).

    ``projected`` says whether the estimate was projected onto ``‖W‖_F <= 𝒲`` (frame learners);
    a refining run adds its pilot's bound and the largest logit scale it used.  The
    comparison with a true model measures the errors against the certified bound.
    """

    ALIASES = {"lam": "lambda"}
    learner: str = "paper"
    token_norm: str = ""
    w_bound: str = ""
    A: str | None = None
    B: str | None = None
    lam: str | None = None
    beta: str | None = None
    projected: bool | None = None
    pilot_W_frobenius: float | None = None
    max_logit_scale: str | None = None

    def __iter__(self):  # the fields this learner filled
        return (k for k in super().__iter__() if k == "checks" or self[k] is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


SPEC = (
    registry.LearnerSpec(
        adversary="exact.learn.adversary:paper_adversary",
        name="noisy-paper",
        summary="Theorem 6.1 [BSHK26]: W and v of a single head from a noisy oracle, d² + d queries, certified bound",
        model_kind="single-head",
        modes=("float",),
        learn=learn_noisy,
        query_count=lambda d, **conditions: noisy_query_count(d),
        count_formula="d² + d",
        exact=False,
        options=(
            registry.Option("w_bound", "number", "𝒲, an assumed bound on ‖W‖_F", required=True),
            registry.Option("token_norm", "number", "R, the largest token norm (default max(1, 1/2 + 1/𝒲))"),
        ),
        command="single-head",
        method="noisy-paper",
        selector=("learner", "paper"),
    )
)
