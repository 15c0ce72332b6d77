"""Exact learning of a single softmax-attention head — Theorem 4.1 of [BSHK26].

The learner makes exactly ``d² + d`` value queries: ``d`` of length 1 and ``d²`` of
length 2.

1. ``f([e_i]) = v_i`` for ``i = 1..d``.  If ``v = 0``, ``W`` has no effect on ``f``:
   :class:`NotIdentifiable` is raised.
2. Pivot ``p = argmax |v_i|``.  Probe ``u_k = e_k`` when ``|v_k| >= |v_p|/2``, else
   ``u_k = e_k + σ_k e_p`` with ``σ_k = sign(v_k)·sign(v_p)`` (``+1`` when ``v_k = 0``),
   so ``|vᵀu_k| >= |v_p|/2`` for every ``k``: no probe is ever ill-conditioned, not
   just nonzero.  ``U = [u_k]`` is unit-triangular, so ``W_kj = t_kj − σ_k t_pj``.
   (SPEC's choice is the special case "shift only when ``v_k = 0``".)
3. For every column ``j`` and row ``k``, query ``X = [βe_j + γu_k; βe_j]``; by the
   logit primitive ``f(X) = βv_j + σ(βγ·t_kj)·γvᵀu_k`` with ``t_kj = u_kᵀ W e_j``.

The arithmetic is a parameter (:mod:`exact.arith`): ``certified`` (default for
exact oracles and whenever a grid is declared), ``symbolic`` or ``float``.  Exact
modes use ``β = γ = 1``; float mode scales the tokens so logits stay within ±1
given a bound on ``|W_ij|``, or, by default, adaptively: it starts at the scale of
``|W_ij| <= 1`` and asks a probe again at a quarter of its scale while its logit lies
beyond ±3 (one more query each time).

References
----------
[BSHK26] Bhattamishra, Shah, Hahn, Kanade, *Provably Learning Attention with Queries*,
arXiv 2601.16873 (ICML 2026), Theorem 4.1.
"""

from __future__ import annotations

import dataclasses
from collections import abc
import functools
from dataclasses import dataclass
from fractions import Fraction

from flint import fmpq

from .. import registry
from .details import Details
from ..arith import CertifiedArithmetic, FloatArithmetic, Measurement
from ..arith.base import CompiledCombos, MatrixParams, OuterMeasurements
from ..errors import CertificateInvalid, ExactAttentionError, InvalidArgument
from ..grids import parse_w_scale
from ..linalg import QMatrix, less_pivot_rows
from ..models import SingleHead
from ..numbers import floor_log2, format_rational, parse_rational, to_fraction
from ..protocols import Oracle
from ..sequences import Sequence
from ._common import ask_rescaled, read_v
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from .result import LearnResult

__all__ = ["learn_single_head", "single_head_query_count", "ProbePlan", "SPEC"]


def single_head_query_count(d: int) -> int:
    """The exact query count of :func:`learn_single_head`: ``d² + d``.

    >>> single_head_query_count(64)
    4160
    """
    return d * d + d


def _sign(x) -> int:
    return (x > 0) - (x < 0)


class _ParamNames:
    """The names ``W[k][j]`` of the d² parameters, row-major, made only when a message needs one."""

    __slots__ = ("d",)

    def __init__(self, d: int):
        self.d = d

    def __len__(self) -> int:
        return self.d * self.d

    def __getitem__(self, i: int) -> str:
        if not 0 <= i < self.d * self.d:
            raise IndexError(i)
        return f"W[{i // self.d}][{i % self.d}]"

    def __iter__(self):
        return (self[i] for i in range(len(self)))


class _Interned:
    """One shared object per distinct probe value, and its ``fmpq``, for one probe set.

    Probe tokens use a handful of values, so ``d²`` probes share a few objects; the
    ``fmpq`` of a value is looked up by the identity of the shared object.
    """

    __slots__ = ("values", "fq")

    def __init__(self):
        self.values: dict = {}
        self.fq: dict = {}

    def __call__(self, x) -> Fraction:
        x = Fraction(x)
        return self.values.setdefault(x, x)

    def fmpq(self, x: Fraction) -> fmpq:
        """``fmpq`` of an interned value (``x`` must come from this table, so its id is its own)."""
        q = self.fq.get(id(x))
        if q is None:
            q = self.fq[id(x)] = fmpq(x.numerator, x.denominator)
        return q

    def add_entry(self, row: tuple, j: int, pair: tuple) -> tuple:
        """The sparse row ``row + b·e_j`` for ``pair = (j, b)``: sorted by index, zeros dropped,
        and ``pair`` itself inserted when ``row`` has no entry ``j`` (pairs are shared).

        >>> t = _Interned()
        >>> one, two = t(1), t(2)
        >>> t.add_entry(((0, one), (2, one)), 1, (1, two))
        ((0, Fraction(1, 1)), (1, Fraction(2, 1)), (2, Fraction(1, 1)))
        >>> t.add_entry(((0, one), (2, one)), 2, (2, one)), t.add_entry(((0, one), (2, t(-1))), 2, (2, one))
        (((0, Fraction(1, 1)), (2, Fraction(2, 1))), ((0, Fraction(1, 1)),))
        >>> t.add_entry(((1, one),), 0, (0, two)), t.add_entry(((1, one),), 3, (3, two))
        (((0, Fraction(2, 1)), (1, Fraction(1, 1))), ((1, Fraction(1, 1)), (3, Fraction(2, 1))))
        """
        for n, (i, x) in enumerate(row):
            if i >= j:
                if i > j:
                    return row[:n] + (pair,) + row[n:]
                y = self(x + pair[1])
                return row[:n] + (((j, y),) if y else ()) + row[n + 1 :]
        return row + (pair,)


@dataclass(frozen=True)
class ProbePlan:
    """The probes of Theorem 4.1: pivot ``p``, shifts ``σ_k`` and token scales ``β, γ``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> plan = ProbePlan.choose([Fraction(2), Fraction(0), Fraction(-3)])
    >>> plan.pivot, plan.shifts          # u_0 = e_0, u_1 = e_1 + e_2 (v_1 = 0), u_2 = e_2
    (2, (0, 1, 0))
    >>> len(plan.sequences()), plan.sequences()[1].dense()[0]
    (9, [Fraction(1, 1), Fraction(1, 1), Fraction(1, 1)])
    """

    d: int
    pivot: int
    shifts: tuple  # σ_k in {-1, 0, 1}; σ_p = 0
    beta: Fraction = Fraction(1)
    gamma: Fraction = Fraction(1)

    def __post_init__(self):
        object.__setattr__(self, "beta", Fraction(self.beta))
        object.__setattr__(self, "gamma", Fraction(self.gamma))

    @classmethod
    def choose(cls, v, *, beta=Fraction(1), gamma=Fraction(1)) -> "ProbePlan":
        """Pick the pivot and shifts from (exact or approximate) values of ``v``.

        The pivot is the first index of largest ``|v_p|``; ``σ_k = 0`` where ``2|v_k| ≥ |v_p|``,
        else ``sign(v_k)·sign(v_p)`` (1 where ``v_k = 0``).  For every ``v ≠ 0`` this plan gives
        ``vᵀu_k ≠ 0`` for every probe, and decoding its ``d² + d`` exact answers returns ``(W, v)``:
        the Coq theorem ``theorem_4_1_learner_plan`` in ``proofs/coq/decoding.v``.
        """
        d = len(v)
        p = max(range(d), key=lambda i: abs(v[i]))
        shifts = tuple(
            0 if (k == p or 2 * abs(v[k]) >= abs(v[p])) else (_sign(v[k]) * _sign(v[p]) or 1) for k in range(d)
        )
        return cls(d, p, shifts, beta, gamma)

    def index(self, k: int, j: int) -> int:
        """Position of measurement ``(k, j)`` among the ``d²`` length-2 queries (column-major)."""
        return j * self.d + k

    def sequences(self) -> list[Sequence]:
        """The ``d²`` probe sequences ``[βe_j + γu_k; βe_j]``, column by column.

        Values are interned (one object per distinct value), so the sequences are
        cheap to hold.  The last plan's sequences are remembered, so that checking a
        learner's certificate right after the learn compares the transcript with the
        very objects it was built from (while the certificate holds them anyway).
        """
        return list(_probe_sequences(self))

    def _build_sequences(self) -> tuple:
        intern = _Interned()
        b, g, p, d = intern(self.beta), intern(self.gamma), self.pivot, self.d
        urows = [((k, g),) if not self.shifts[k] else tuple(sorted(((k, g), (p, intern(self.shifts[k] * g)))))
                 for k in range(d)]
        # Every (index, value) pair is built once and shared by all the rows it appears in, in
        # both the Fraction and the fmpq form: a probe costs little more than its two row tuples.
        fq_pairs: dict = {}  # id(pair) -> (pair, its fmpq form); holding the pair keeps its id its own

        def fq(pair: tuple) -> tuple:
            hit = fq_pairs.get(id(pair))
            if hit is None:
                hit = fq_pairs[id(pair)] = (pair, (pair[0], intern.fmpq(pair[1])))
            return hit[1]

        # [βe_j + γu_k; βe_j] kept as the token βe_j (shared by its d probes) and the offset γu_k (shared by
        # its d probes): a probe is a reference and a pair, its rows built only if something asks for them,
        # and exact evaluation reads W·βe_j once per column (SingleHead._pair_offset)
        offsets = [(row, tuple(fq(t) for t in row)) for row in urows]
        queries = [(j, b) for j in range(d)]
        bases = [Sequence._exact(d, ((t,),), ((fq(t),),)) for t in queries]
        return tuple(Sequence._offset_pairs(bases, offsets))

    def measurements(self, v, v_err=None) -> list[Measurement] | OuterMeasurements:
        """``base = βv_j``, ``slope = γ vᵀu_k``, ``scale = βγ`` for every probe.

        ``v_err`` (float mode) bounds the errors of ``v``; they are propagated to
        ``base`` and ``slope``.
        """
        b, g, p, d = self.beta, self.gamma, self.pivot, self.d
        scale = b * g
        slope = [g * (v[k] + self.shifts[k] * v[p]) for k in range(d)]
        base = [b * v[j] for j in range(d)]
        if not any(v_err or ()):  # exact modes: no error terms at all, and a probe's base is its column's
            return OuterMeasurements(base, slope, scale)
        fb, fg = float(b), float(g)
        base_err = [fb * v_err[j] for j in range(d)]
        slope_err = [fg * (v_err[k] + abs(self.shifts[k]) * v_err[p]) for k in range(d)]
        return [
            Measurement(base[j], slope[k], scale, base_err[j], slope_err[k]) for j in range(d) for k in range(d)
        ]

    def combos(self) -> CompiledCombos:
        """``W_kj = t_kj − σ_k t_pj`` as ``[(coefficient, measurement), ...]``, row-major in (k, j), compiled
        (the terms made when first read; the matrix form computes all of them in C).

        >>> plan = ProbePlan.choose([Fraction(2), Fraction(0), Fraction(-3)])   # σ = (0, 1, 0), pivot 2
        >>> list(plan.combos())[3:6]     # row 1: t_1j − t_2j
        [[(1, 1), (-1, 2)], [(1, 4), (-1, 5)], [(1, 7), (-1, 8)]]
        >>> c = plan.combos(); c.first[5], c.first[1 * 3 + 2]     # measurement (k, j) = (2, 1) is read by W_21
        (7, 7)
        """
        d, p, shifts = self.d, self.pivot, list(self.shifts)

        def terms() -> list:
            out: list = []
            for k, s in enumerate(shifts):
                if s:
                    out += [[(1, j * d + k), (-s, j * d + p)] for j in range(d)]
                else:
                    out += range(k, d * d, d)
            return out

        return CompiledCombos(terms, _FirstReader(d), matrix=lambda t: less_pivot_rows(t, d, shifts, p))


class _FirstReader(abc.Sequence):
    """For measurement ``m = j·d + k``, the parameter ``W_kj`` (index ``k·d + j``) that reads it."""

    __slots__ = ("d",)

    def __init__(self, d: int):
        self.d = d

    def __len__(self) -> int:
        return self.d * self.d

    def __getitem__(self, m):
        j, k = divmod(m, self.d)
        return k * self.d + j


@functools.lru_cache(maxsize=1)
def _probe_sequences(plan: ProbePlan) -> tuple:
    return plan._build_sequences()


def _float_scale(w_bound) -> Fraction:
    """The largest power of two ``β`` with ``2·β²·w_bound <= 1`` (so logits stay in ±1)."""
    bound = to_fraction(w_bound, name="w_bound")
    if bound <= 0:
        raise InvalidArgument(f"w_bound: expected a positive bound on |W_ij|, got {w_bound!r}")
    e = 0  # the least e >= 0 with 2·bound <= 4^e, in exact arithmetic (no float overflow)
    while 2 * bound > Fraction(4) ** e:
        e += 1
        if e > 500:  # β² = 4^-e would underflow float64
            raise InvalidArgument(
                f"w_bound: about 2^{floor_log2(bound)} is too large for float-mode probes; use mode='certified'"
            )
    return Fraction(1, 2**e)


def learn_single_head(
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
    """Learn ``W`` and ``v`` of a single softmax head with exactly ``d² + d`` queries.

    Parameters
    ----------
    oracle : Oracle
        Read only through its public interface (``d``, ``exact``, ``accuracy``,
        ``rtol``, ``count``, ``transcript``, ``require``, ``error_bound``,
        ``query_batch``) and the answers' public interface (balls, sympy form).
    mode : {"certified", "symbolic", "float"}, optional
        Default: ``"certified"`` for exact oracles or when ``grid`` is given, else
        ``"float"``.
    grid : str or Grid, optional
        Certified mode only: identify every parameter on this grid (``"float32"``,
        ``"rational:Q"``, ...).  Required for approximate oracles; without it, an
        exact oracle's answers are identified as simplest rationals and confirmed
        exactly.
    w_bound : number, optional
        Float mode only: assumed bound on ``|W_ij|``; probes are scaled so logits
        stay within ±1, with exactly ``d² + d`` queries.  Too small a bound saturates the
        softmax and raises :class:`PrecisionInsufficient`; too large a bound costs accuracy
        (the error grows like ``w_bound``).  Default: adaptive scales, starting at those of
        ``w_bound = 1``; a probe whose logit lies beyond ±3 is asked again at a quarter of
        its scale, one more query each time (``details.rescaled`` counts them).
    prec, max_prec : int
        Certified mode: starting and largest working precision in bits.  A logit
        ``L`` needs about ``|L|/ln 2`` bits.
    certify : bool
        Replay the whole transcript against the result (exact modes).  On a grid
        the replay is what confirms the identification, so without it the result
        is not labelled exact.
    checks : int
        Verification queries after learning (default 2): random sequences of length
        3 and 4, decided exactly, that catch an oracle which is not a single head
        (some multi-head models agree with a single head on every input of length
        ≤ 2).  They are counted in ``verification_queries``, not in ``queries``.
        With ``checks=0`` the result is exact "among bias-free single heads".
    check_seed : int or None
        Seed of the verification queries; ``None`` draws a fresh one.
    w_scale : number or str, optional
        With ``grid``: the grid holds ``W/w_scale`` rather than ``W`` (``v`` stays on the grid).
        ``"1/sqrt(r)"`` is the float64 value of ``1/√r``, the factor a float64 torch head
        multiplies its scores by, so that a module whose ``W_KᵀW_Q`` lies on the grid is
        recovered bit for bit even when ``√r`` is irrational.  Recorded in the certificate.

    Returns
    -------
    LearnResult
        ``model`` is a :class:`SingleHead`; ``queries == d*d + d`` (plus
        ``details.rescaled`` in adaptive float mode).

    Raises
    ------
    NotIdentifiable
        If ``v = 0`` (then no query depends on ``W``).
    PrecisionInsufficient
        If the answers cannot certify the result within ``max_prec`` or the
        oracle's declared accuracy; never returns a guess as exact.
    OracleInconsistent
        If the answers cannot come from a single softmax head (a verification query
        is not reproduced, or an answer is out of range).
    QueryBudgetExceeded
        Before the first query, if ``d² + d`` queries plus the checks do not fit the budget.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> truth = SingleHead([[1, "-2/3"], [0, 5]], ["1/2", 0])
    >>> oracle = ExactOracle(truth)
    >>> result = learn_single_head(oracle)
    >>> result.model == truth, result.queries, result.verification_queries, result.certificate.check().holds
    (True, 6, 2, True)
    """
    d = oracle_dimension(oracle)
    scale = scaled_grid(w_scale, grid)
    run = Run(
        SPEC, oracle, mode=mode, grid=grid, prec=prec, max_prec=max_prec, queries=single_head_query_count(d),
        certify=certify, checks=checks, check_seed=check_seed,
    )
    with run:
        arith = run.arith

        # Step 1: v from one-token queries.
        v, v_err = read_v(run)

        # Step 2: probes, chosen from v alone.
        floating = isinstance(arith, FloatArithmetic)
        beta = _float_scale(1 if w_bound is None else w_bound) if floating else Fraction(1)
        plan = ProbePlan.choose(v, beta=beta, gamma=beta)

        # Step 3: the d² logit measurements (in adaptive float mode, saturated ones asked again).
        rescaled = 0
        meas: abc.Sequence[Measurement]
        if floating and w_bound is None:
            answers, meas, rescaled = _ask_adaptive(run, plan, v, v_err)
        else:
            answers = run.ask(plan.sequences())
            meas = plan.measurements(v, v_err)
        if scale is not None:  # identify W/s on the grid: each logit's parameter part is ℓ/(scale·s)
            meas = [dataclasses.replace(m, scale=m.scale * scale) for m in meas]
        names = _ParamNames(d)
        transcript = run.transcript
        v_exact = tuple(to_fraction(x) for x in v)

        def build(flat) -> SingleHead:
            if scale is not None:
                flat = [scale * Fraction(x) for x in flat]
            return SingleHead([flat[k * d : (k + 1) * d] for k in range(d)], v_exact)

        def confirm(flat, pending):
            # Candidates (flint rationals) are confirmed by the certificate itself: replay
            # every answer exactly against the candidate model; rejected measurements are refined.
            W = flat.qmatrix if type(flat) is MatrixParams else QMatrix(d, d, flat)
            bad = run.replay(SingleHead._from_qmatrix(W, v_exact), transcript)
            if any(i < d for i in bad):  # pragma: no cover - v was confirmed exactly in step 1
                raise CertificateInvalid("learn_single_head: internal error, a confirmed v_i is not reproduced")
            return [i - d for i in bad]

        if certify and isinstance(arith, CertifiedArithmetic) and arith.grid is None:
            arith.combine(answers, meas, plan.combos(), names, confirm=confirm, as_fmpq=True)
            # identify returns once a confirmation fails nowhere, and that confirmation replayed
            # the whole transcript against exactly the model of the values returned
            model = run.replayed
        else:
            model = build(arith.combine(answers, meas, plan.combos(), names))
        return run.finish(
            model, conditions={"w_scale": format_rational(scale)} if scale is not None else None,
            details=SingleHeadDetails(pivot=plan.pivot, shifts=tuple(plan.shifts), beta=str(plan.beta),
                                      gamma=str(plan.gamma), rescaled=rescaled),
        )


def _ask_adaptive(run: Run, plan: ProbePlan, v, v_err) -> tuple[list, list, int]:
    """The d² probes at the plan's scales, each asked again at a quarter of its scale
    (β and γ halved) while its logit lies beyond ±3; the answers, measurements and re-asks."""
    d, p = plan.d, plan.pivot
    seqs, meas = plan.sequences(), list(plan.measurements(v, v_err))  # (a list: re-asked probes replace theirs)
    scale = [plan.beta] * (d * d)  # β = γ of each probe

    def again(i: int) -> tuple:
        j, k = divmod(i, d)  # column-major: index(k, j) = j·d + k
        scale[i] /= 2
        g = scale[i]
        top = {k: g} if not plan.shifts[k] else {k: g, p: plan.shifts[k] * g}
        top[j] = top.get(j, Fraction(0)) + g
        s = v[k] + plan.shifts[k] * v[p]
        e = v_err[k] + abs(plan.shifts[k]) * v_err[p]
        return (Sequence.sparse(d, [{a: x for a, x in top.items() if x}, {j: g}]),
                Measurement(g * v[j], g * s, g * g, float(g) * v_err[j], float(g) * e))

    answers, n = ask_rescaled(run, seqs, meas, again)
    return answers, meas, n


@dataclass(frozen=True)
class SingleHeadDetails(Details):
    """Theorem 4.1's probe plan: the pivot, the probes' pivot shifts, the float scales β, γ, and how
    many probes adaptive float mode asked again at a smaller scale."""

    pivot: int = 0
    shifts: tuple = ()
    beta: str = "1"
    gamma: str = "1"
    rescaled: int = 0

    def rows(self, result) -> list:
        if not self.rescaled:
            return []
        return [("scales", f"{self.rescaled} probes re-asked at a smaller scale (their logits lay beyond ±3), "
                           f"so {result.queries} queries = d² + d + {self.rescaled}")]


def scaled_grid(w_scale, grid) -> Fraction | None:
    """``s`` for a grid that holds ``W/s`` (None without ``w_scale``); refused without a grid."""
    if w_scale is None:
        return None
    if grid is None:
        raise InvalidArgument("w_scale: applies with grid= (certified mode): the grid then holds W/w_scale")
    return parse_w_scale(w_scale)


def _positive_rational(value) -> bool:
    if not isinstance(value, str):
        return False
    try:
        return parse_rational(value, name="w_scale") > 0
    except ExactAttentionError:
        return False


def _check_certificate(model, transcript, conditions) -> str | None:
    """The transcript must be exactly the probe set the learner derives from the model's ``v``."""
    d = model.d
    if getattr(model, "biased", False):
        return ("the certified head has biases (c or b nonzero), which Theorem 4.1's probe set does not identify "
                "(a head with biases agrees with a bias-free one on all of it); it is the single-head-biased "
                "learner's to certify")
    if not any(model.v):
        return "v = 0, so no query depends on W: the transcript cannot identify it"
    expected = [Sequence.basis(d, i) for i in range(d)] + ProbePlan.choose(model.v).sequences()
    if [q.X for q in transcript] != expected:
        return "the transcript is not the Theorem 4.1 probe set for this model's v, so it need not identify it"
    return None


SPEC = (
    registry.LearnerSpec(
        name="single-head",
        summary="Theorem 4.1 [BSHK26]: W and v of a single softmax head, exactly, from d² + d queries",
        model_kind="single-head",
        modes=("certified", "symbolic", "float"),
        learn=learn_single_head,
        query_count=lambda d, **conditions: single_head_query_count(d),
        count_formula="d² + d",
        conditions={"w_scale": _positive_rational},
        check_certificate=_check_certificate,
        scope=lambda conditions: "among bias-free single heads",
        unchecked=lambda conditions: ("among bias-free single heads",),
        options=(
            registry.Option("w_bound", "number", "float mode: assumed bound on |W_ij| (fixed probe scales that keep "
                            "logits in ±1; default: adaptive scales, re-asking a saturated probe at a smaller scale)"),
            registry.Option("w_scale", "str", "with --grid: the grid holds W/w_scale, a number or '1/sqrt(r)' (the "
                            "float64 1/√r a torch head multiplies its scores by)"),
        ),
    )
)
