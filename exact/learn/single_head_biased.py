"""Exact learning of a single softmax head with biases, as torch builds it.

A torch head with an input-projection bias ``(b_q, b_k, b_v)`` and an output bias ``b_o``,
read out by ``w``, is the head (``docs/biases.md``)

    s_i = x_iᵀ(W x_N + c),   f(X) = b + Σ_i softmax(s)_i vᵀx_i,

with ``W = W_KᵀW_Q/√r``, ``c = W_Kᵀb_q/√r``, ``v = W_VᵀW_Oᵀw`` and ``b = wᵀ(W_O b_v + b_o)``
(``b_k`` cancels in the softmax and is not identifiable).  These ``d² + 2d + 1`` numbers are
identifiable when ``v ≠ 0``, and the learner makes exactly that many value queries:

1. ``f([0]) = b`` (one token, the zero vector: its value is ``b`` whatever the rest);
2. ``f([e_i]) − b = v_i`` (``d`` one-token queries);
3. the probes ``u_k`` of Theorem 4.1 (pivot ``p``, shifts ``σ_k``) and, for each ``k``,
   ``f([γu_k; 0]) = b + σ(γu_kᵀc)·γvᵀu_k``: the score of the zero token is 0, so the logit
   is ``γu_kᵀc`` (``d`` queries);
4. ``f([βe_j + γu_k; βe_j]) = b + βv_j + σ(βγt_kj + γu_kᵀc)·γvᵀu_k`` with
   ``t_kj = u_kᵀWe_j``: Theorem 4.1's logit, shifted by the logit of step 3 (``d²`` queries).

Then ``t_kj = ℓ_kj/(βγ) − (u_kᵀc)/β``, ``W_kj = t_kj − σ_k t_pj`` and ``c_k = u_kᵀc − σ_k u_pᵀc``.
The arithmetic is a parameter (:mod:`exact.arith`), as for Theorem 4.1.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from .. import registry
from ..arith import CertifiedArithmetic, FloatArithmetic, Measurement
from ..errors import CertificateInvalid, NotIdentifiable
from ..linalg import QMatrix
from ..models import SingleHead
from ..numbers import format_rational, to_fraction
from ..protocols import Oracle
from ..sequences import Sequence
from .details import Details
from ._common import ask_rescaled
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from .result import LearnResult
from .single_head import ProbePlan, _float_scale, _positive_rational, scaled_grid

__all__ = ["learn_single_head_biased", "biased_query_count", "value_queries", "bias_probes", "SPEC"]


def biased_query_count(d: int) -> int:
    """The exact query count of :func:`learn_single_head_biased`: ``d² + 2d + 1``, the number of
    identifiable parameters of a head with biases.

    >>> biased_query_count(64)
    4225
    """
    return d * d + 2 * d + 1


def value_queries(d: int) -> list[Sequence]:
    """``[0], [e_0], …, [e_{d−1}]``: the answers are ``b`` and ``b + v_i``."""
    return [Sequence.sparse(d, [{}])] + [Sequence.basis(d, i) for i in range(d)]


def bias_probes(plan: ProbePlan) -> list[Sequence]:
    """``[γu_k; 0]`` for every ``k``: the logit of each is ``γu_kᵀc``."""
    g, p = plan.gamma, plan.pivot
    rows = [{k: g} if not plan.shifts[k] else {k: g, p: plan.shifts[k] * g} for k in range(plan.d)]
    return [Sequence.sparse(plan.d, [row, {}]) for row in rows]


def _names(d: int) -> list[str]:
    return [f"W[{k}][{j}]" for k in range(d) for j in range(d)] + [f"c[{k}]" for k in range(d)]


def _combos(plan: ProbePlan, inverse=None) -> list[list[tuple[int, int]]]:
    """``W`` row-major, then ``c``, as integer combinations of the measurements: the ``d`` bias
    probes first (``ℓ/γ = u_kᵀc``), then the ``d²`` logit probes (``ℓ/(βγ) = t_kj + u_kᵀc/β``).
    ``inverse[k][j]`` is ``1/β`` of probe ``(k, j)`` (default: the plan's, the same for all)."""
    d, p = plan.d, plan.pivot
    if inverse is None:
        inv = 1 / plan.beta
        if inv.denominator != 1:  # pragma: no cover - β is 1 or a power of two below 1
            raise CertificateInvalid("learn_single_head_biased: internal error, 1/β is not an integer")
        inverse = [[int(inv)] * d for _ in range(d)]

    def t(k: int, j: int) -> list[tuple[int, int]]:  # t_kj = m(k, j) − m_c(k)/β_kj
        return [(1, d + plan.index(k, j)), (-inverse[k][j], k)]

    out = []
    for k in range(d):
        for j in range(d):
            combo = t(k, j)
            if plan.shifts[k]:
                combo += [(-plan.shifts[k] * c, m) for c, m in t(p, j)]
            out.append(combo)
    for k in range(d):
        out.append([(1, k)] + ([(-plan.shifts[k], p)] if plan.shifts[k] else []))
    return out


def _measurements(plan: ProbePlan, v, v_err, b, b_err) -> list[Measurement]:
    """The bias probes' ``base = b``, ``slope = γvᵀu_k``, ``scale = γ``, then the logit probes'
    (Theorem 4.1's, with ``b`` added to every base)."""
    d, g, p = plan.d, plan.gamma, plan.pivot
    slope = [g * (v[k] + plan.shifts[k] * v[p]) for k in range(d)]
    probes = plan.measurements(v, v_err)
    if not any(v_err) and not b_err:
        return [Measurement(b, slope[k], g) for k in range(d)] + [
            Measurement(b + m.base, m.slope, m.scale) for m in probes]
    fg = float(g)
    slope_err = [fg * (v_err[k] + abs(plan.shifts[k]) * v_err[p]) for k in range(d)]
    return [Measurement(b, slope[k], g, b_err, slope_err[k]) for k in range(d)] + [
        Measurement(b + m.base, m.slope, m.scale, m.base_err + b_err, m.slope_err) for m in probes]


def _pow2_at_most(x: float) -> Fraction:
    """The largest power of two ``<= x`` (``x > 0``), as a Fraction."""
    e = math.floor(math.log2(x))
    return Fraction(2) ** e if e >= 0 else Fraction(1, 2 ** (-e))


def _float_probes(run: Run, arith, v, v_err, b, b_err, w_bound) -> tuple[list, list, list, dict]:
    """Float mode: the bias probes, then the logit probes scaled from what they learned.

    With ``w_bound`` given, every probe uses ``β`` from it (``2β²·w_bound <= 1``) and the bias
    probes ``γ = β``.  Without it the scales are adaptive: ``β = 1/2`` (the scale for
    ``w_bound = 1``), and each probe whose logit comes out beyond ±3 is asked again at a
    quarter of its scale, one more query each time.  The logit probes of row ``k`` use
    ``γ_k <= β`` with ``γ_k·|u_kᵀĉ| <= 1/2``.
    """
    d = run.d
    plan = ProbePlan.choose(v)
    adaptive = w_bound is None
    p, sh = plan.pivot, plan.shifts
    beta = _float_scale(1 if adaptive else w_bound)
    g_c = [beta] * d
    rescaled = 0

    def slope(k: int) -> tuple:
        return v[k] + sh[k] * v[p], v_err[k] + abs(sh[k]) * v_err[p]

    def row(k: int, g: Fraction) -> dict:
        return {k: g} if not sh[k] else {k: g, p: sh[k] * g}

    def c_probe(k: int) -> tuple:
        g = g_c[k]
        s, e = slope(k)
        return (Sequence.sparse(d, [row(k, g), {}]), Measurement(b, g * s, g, b_err, float(g) * e))

    def c_again(k: int) -> tuple:
        g_c[k] /= 4
        return c_probe(k)

    def ask(seqs, meas, again) -> list:
        nonlocal rescaled
        if not adaptive:
            return list(run.ask(seqs))
        answers, n = ask_rescaled(run, seqs, meas, again)
        rescaled += n
        return answers

    c_seqs, c_meas = (list(x) for x in zip(*[c_probe(k) for k in range(d)]))
    c_answers = ask(c_seqs, c_meas, c_again)
    uc = arith.combine(c_answers, c_meas, [[(1, k)] for k in range(d)], None)  # u_kᵀc
    gamma = [min(beta, _pow2_at_most(0.5 / abs(x))) if x else beta for x in uc]
    B = [[beta] * d for _ in range(d)]  # B[k][j]

    def w_probe(i: int) -> tuple:
        j, k = divmod(i, d)  # column-major, as Theorem 4.1's probes
        bb, g = B[k][j], gamma[k]
        top = row(k, g)
        top[j] = top.get(j, Fraction(0)) + bb
        s, e = slope(k)
        return (Sequence.sparse(d, [{i: x for i, x in top.items() if x}, {j: bb}]),
                Measurement(b + bb * v[j], g * s, bb * g, b_err + float(bb) * v_err[j], float(g) * e))

    def w_again(i: int) -> tuple:
        j, k = divmod(i, d)
        B[k][j] /= 4
        return w_probe(i)

    w_seqs, w_meas = (list(x) for x in zip(*[w_probe(i) for i in range(d * d)]))
    w_answers = ask(w_seqs, w_meas, w_again)
    combos = _combos(plan, [[int(1 / B[k][j]) for j in range(d)] for k in range(d)])
    scales = {"beta": str(beta), "gamma": str(min(gamma)), "gamma_c": str(min(g_c)),
              "smallest_beta": str(min(min(r) for r in B)), "rescaled": rescaled}
    return c_answers + w_answers, c_meas + w_meas, combos, scales


def learn_single_head_biased(
    oracle: Oracle,
    *,
    mode: str | None = None,
    grid=None,
    w_bound=None,
    prec: int = 64,
    max_prec: int = 1 << 23,
    certify: bool = True,
    checks: int = DEFAULT_CHECKS,
    check_seed: int | None = None,
    w_scale=None,
) -> LearnResult:
    """Learn ``W``, ``c``, ``v`` and ``b`` of a single softmax head with biases, with exactly
    ``d² + 2d + 1`` queries.

    Parameters
    ----------
    oracle : Oracle
        Read only through its public interface, as for :func:`~exact.learn.learn_single_head`.
    mode : {"certified", "symbolic", "float"}, optional
        Default: ``"certified"`` for exact oracles or when ``grid`` is given, else ``"float"``.
    grid : str or Grid, optional
        Certified mode only: identify every parameter on this grid.
    w_bound : number, optional
        Float mode only: an assumed bound on ``|W_ij|`` and ``|c_i|``, which fixes the probe
        scales (exactly ``d² + 2d + 1`` queries).  Default: adaptive scales, starting at those of
        ``w_bound = 1``; a probe whose logit lies beyond ±3 is asked again at a quarter of its
        scale, one more query each time (``details.rescaled`` counts them).
    prec, max_prec : int
        Certified mode: starting and largest working precision in bits.
    certify : bool
        Replay the whole transcript against the result (exact modes).
    checks : int
        Verification queries after learning (default 2): random sequences of length 3 and 4
        decided exactly.  With ``checks=0`` the result is exact "among single heads with biases".
    check_seed : int or None
        Seed of the verification queries; ``None`` draws a fresh one.
    w_scale : number or str, optional
        With ``grid``: the grid holds ``W/w_scale`` and ``c/w_scale`` (``v`` and ``b`` stay on it),
        as for :func:`~exact.learn.learn_single_head`; ``"1/sqrt(r)"`` is the float64 ``1/√r``.

    Returns
    -------
    LearnResult
        ``model`` is a :class:`~exact.models.SingleHead` with ``c`` and ``b``;
        ``queries == d*d + 2*d + 1`` (plus ``details.rescaled`` in adaptive float mode).

    Raises
    ------
    NotIdentifiable
        If ``v = 0``: then ``f = b`` is constant and neither ``W`` nor ``c`` has an effect.
    PrecisionInsufficient, OracleInconsistent, QueryBudgetExceeded
        As for :func:`~exact.learn.learn_single_head`.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> truth = SingleHead([[1, "-2/3"], [0, 5]], ["1/2", 0], c=[2, "-1/4"], b=-3)
    >>> r = learn_single_head_biased(ExactOracle(truth))
    >>> r.model == truth, r.queries, r.certificate.check().holds
    (True, 9, True)
    """
    d = oracle_dimension(oracle)
    scale = scaled_grid(w_scale, grid)
    run = Run(
        SPEC, oracle, mode=mode, grid=grid, prec=prec, max_prec=max_prec, queries=biased_query_count(d),
        certify=certify, checks=checks, check_seed=check_seed,
    )
    with run:
        arith = run.arith
        first = run.ask(value_queries(d))
        (b,) = arith.values(first[:1], ["b"])
        (b_err,) = arith.value_errors(["b"])
        names = [f"v[{i}]" for i in range(d)]
        v: list = arith.values(first[1:], names, offset=b)  # v_i = f([e_i]) − b, identified as such (on a grid too)
        v_err = [e + b_err for e in arith.value_errors(names)]
        arith.add_error(max(v_err, default=0.0))  # v_i carries the errors of f([e_i]) and of b
        if all(abs(x) <= e for x, e in zip(v, v_err)):
            raise NotIdentifiable(
                "v = 0" + ("" if arith.exact else " within the oracle's accuracy") + ": then f(X) = b for every X, "
                "so neither W nor c has an effect and they cannot be identified")
        plan = ProbePlan.choose(v)
        if isinstance(arith, FloatArithmetic):
            answers, meas, combos, scales = _float_probes(run, arith, v, v_err, b, b_err, w_bound)
        else:
            answers = list(run.ask(bias_probes(plan))) + list(run.ask(plan.sequences()))
            meas = _measurements(plan, v, v_err, b, b_err)
            if scale is not None:  # identify W/s and c/s on the grid
                meas = [dataclasses.replace(m, scale=m.scale * scale) for m in meas]
            combos = _combos(plan)  # in the measurements' units ℓ/scale
            scales = {"beta": "1", "gamma": "1", "gamma_c": "1", "smallest_beta": "1", "rescaled": 0}
        v_exact = tuple(to_fraction(x) for x in v)
        b_exact = to_fraction(b)
        transcript = run.transcript

        def build(flat) -> SingleHead:
            if scale is not None:
                flat = [scale * Fraction(x) for x in flat]
            return SingleHead([flat[k * d : (k + 1) * d] for k in range(d)], v_exact, flat[d * d :], b_exact)

        def confirm(flat, pending):
            W = QMatrix(d, d, flat[: d * d])
            c = tuple(Fraction(int(x.p), int(x.q)) for x in flat[d * d :])
            bad = run.replay(SingleHead._from_qmatrix(W, v_exact, c, b_exact), transcript)
            if any(i <= d for i in bad):  # pragma: no cover - b and v were confirmed exactly as they were read
                raise CertificateInvalid("learn_single_head_biased: internal error, a confirmed b or v_i is not "
                                         "reproduced")
            return [i - d - 1 for i in bad]

        if certify and isinstance(arith, CertifiedArithmetic) and arith.grid is None:
            arith.combine(answers, meas, combos, _names(d), confirm=confirm, as_fmpq=True)
            model = run.replayed
        else:
            model = build(arith.combine(answers, meas, combos, _names(d)))
        return run.finish(model, conditions={"w_scale": format_rational(scale)} if scale is not None else None,
                          details=BiasedHeadDetails(pivot=plan.pivot, shifts=tuple(plan.shifts), **scales))


@dataclass(frozen=True)
class BiasedHeadDetails(Details):
    """The probe plan: Theorem 4.1's pivot and shifts; the logit probes' first scale β, the
    smallest β a probe was re-asked at, the smallest γ of a row; the bias probes' smallest scale
    γ_c (all 1 in the exact modes); and how many probes float mode re-asked at a smaller scale."""

    pivot: int
    shifts: tuple
    beta: str
    gamma: str
    gamma_c: str
    smallest_beta: str
    rescaled: int

    def rows(self, result) -> list:
        if not self.rescaled:
            return []
        return [("scales", f"{self.rescaled} probes re-asked at a smaller scale (their logits lay beyond ±3), "
                           f"so {result.queries} queries = d² + 2d + 1 + {self.rescaled}")]


def _check_certificate(model, transcript, conditions) -> str | None:
    """The transcript must be exactly the probe set the learner derives from the model's ``v``."""
    d = model.d
    if not any(model.v):
        return "v = 0, so no query depends on W or c: the transcript cannot identify them"
    plan = ProbePlan.choose(model.v)
    expected = value_queries(d) + bias_probes(plan) + plan.sequences()
    if [q.X for q in transcript] != expected:
        return ("the transcript is not the probe set of the learner of heads with biases for this model's v, "
                "so it need not identify it")
    return None


SPEC = (
    registry.LearnerSpec(
        name="single-head-biased",
        summary="a single softmax head with biases (W, c, v, b), as torch builds it, exactly, from d² + 2d + 1 "
                "queries",
        model_kind="single-head",
        modes=("certified", "symbolic", "float"),
        learn=learn_single_head_biased,
        query_count=lambda d, **conditions: biased_query_count(d),
        count_formula="d² + 2d + 1",
        conditions={"w_scale": _positive_rational},
        check_certificate=_check_certificate,
        scope=lambda conditions: "among single heads with biases",
        unchecked=lambda conditions: ("among single heads with biases",),
        model_class=lambda conditions: "a single head with biases",
        options=(
            registry.Option("w_bound", "number", "float mode: assumed bound on |W_ij| and |c_i| (fixed probe scales; "
                            "default: adaptive scales, re-asking a saturated probe at a smaller scale)"),
            registry.Option("w_scale", "str", "with --grid: the grid holds W/w_scale and c/w_scale, a number or "
                            "'1/sqrt(r)' (the float64 1/√r a torch head multiplies its scores by)"),
        ),
        command="single-head",
        method="biased",
        switch="biases",
    )
)
