"""Low-rank heads: a query-optimal exact sketch learner (beyond [BSHK26], Theorem 5.1 setting).

If ``rank(W) <= r``, then ``W`` lies on the manifold of rank-``r`` matrices, of
dimension ``2rd − r²``.  :func:`learn_low_rank` recovers ``W`` and ``v`` exactly with

    d + d·r + r·(d − r) = 2rd − r² + d   queries (rank given),

which is that dimension plus the ``d`` queries for ``v``.

1. ``v`` from ``d`` one-token queries; probes ``u_k`` as in Theorem 4.1 (pivot trick,
   ``U`` unit-triangular, ``|vᵀu_k| >= |v_p|/2``).
2. **Column sketch.**  For seeded generic rational vectors ``b_1..b_c`` (entries
   ``n/2^24``, ``|n| <= 2^20``: ``2^21 + 1`` values, each at most ``1/16``) measure every ``u_kᵀ W b_c`` with the logit primitive on
   ``[b_c + u_k; b_c]``: that is ``T = U W B`` (``d·c`` queries), and ``Y = W B = U⁻¹T``
   exactly.  ``rank(Y) = rank(W)`` with probability 1 (it fails only if the sketch
   meets a proper algebraic subset, chance below ``r·2^-20``).
3. **Rows, chosen from the data.**  Rows ``K`` of ``T`` with ``T[K, :]`` invertible
   (exact row echelon form) name probes ``u_k``, ``k ∈ K``, whose row sketch
   ``Z = U_K W`` is wanted.  Its products with the sketch columns, ``Z B = T[K, :]``,
   are already known, so only the columns ``j ∉ J`` are measured, where ``B[J, :]`` is
   invertible: ``r·(d − c)`` queries ``[e_j + u_k; e_j]``; the rest follows by an
   exact solve.
4. ``W = Y C⁻¹ Z`` with the core ``C = T[K, :]``, which is invertible by the choice of
   ``K``: no singular-core case can arise, whatever the leading block of ``W``.

With ``rank=None`` the column sketch grows one column at a time until its exact rank
stops growing; the one extra column costs ``d − r`` queries net (its ``r`` row
products are known), so the count is ``2rd − r² + 2d − r``, and ``d² + d`` at
``r = d``.

The rank is an assumption when given: if ``rank(W) > r`` the learner's own queries
are consistent with a rank-``r`` matrix and cannot reveal it (no learner with this
count can).  So, by default, two **verification queries** follow (random sequences of
length 3 and 4 with fresh randomness, decided exactly): a head of larger rank, or a
black box that is not a single head, fails them with probability 1 and raises
:class:`~exact.errors.OracleInconsistent`.  They are reported apart from the learner's
count.  With ``checks=0`` the result is exact "among heads of rank ≤ r" (and "among
single heads"), and says so.  A smaller true rank is found and reported
(``details["rank"]``), with fewer queries.  Exactness also needs the sketch to be
generic, which fails with probability below ``r·2^-20`` over the random seed; the
seed is fresh for every call unless given, and it is recorded in the certificate
(``conditions["sketch_seed"]``, with the entries' scale ``conditions["sketch_scale_bits"] = 24``; a
certificate that records no scale was made with entries ``n/2^20`` and is rebuilt with them) so that
``certify`` rebuilds the probe set from the certified model and compares it with the transcript.
"""
from __future__ import annotations

import itertools
import secrets
from collections import abc
from fractions import Fraction

import numpy as np
from flint import fmpq

from dataclasses import dataclass, field

from .. import registry
from ..arith import Measurement
from ..arith.base import CompiledCombos, OuterMeasurements
from ..errors import InvalidArgument, ShapeError
from ..linalg import QMatrix
from ..models import SingleHead
from ..numbers import format_rational, to_fmpq, to_fraction
from ..protocols import Oracle
from ..sequences import Sequence, int_row
from ._common import read_v
from .details import Details
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from .result import LearnResult
from .single_head import ProbePlan

__all__ = ["learn_low_rank", "low_rank_query_count", "SKETCH_BITS", "SPEC"]

#: Up to this many entries (d = 2048) a learned head's W is formed; beyond, it is kept as its factors only.
DENSE_ENTRIES = 1 << 22

#: Sketch entries are ``n / 2^SKETCH_SCALE_BITS`` with ``|n| <= 2^SKETCH_BITS``: ``2^21 + 1`` values, which
#: is what genericity rests on, of size at most ``2^-4``, so that a sketch logit stays small (its answer
#: then resolves the logit's bits at a lower precision).
SKETCH_BITS = 20
SKETCH_SCALE_BITS = 24

#: The scale of a certificate that records none (``conditions["sketch_scale_bits"]``): entries ``n / 2^20``,
#: as the learner drew them before the sketch was scaled down.
LEGACY_SCALE_BITS = 20
SCALES = (LEGACY_SCALE_BITS, SKETCH_SCALE_BITS)


def low_rank_query_count(d: int, r: int, *, rank_known: bool = True) -> int:
    """Queries of :func:`learn_low_rank`: ``2rd − r² + d``, or ``2rd − r² + 2d − r`` with unknown rank.

    >>> low_rank_query_count(64, 4), low_rank_query_count(64, 4, rank_known=False)
    (560, 620)
    >>> low_rank_query_count(8, 8) == low_rank_query_count(8, 8, rank_known=False) == 8 * 8 + 8
    True
    """
    if not 0 <= r <= d:
        raise InvalidArgument(f"rank: expected 0 <= r <= d = {d}, got {r}")
    return 2 * r * d - r * r + d + (0 if rank_known else d - r)


class _Column(list):
    """A sketch column: its entries as Fractions, and the same as flint ``fmpq`` in ``fq``."""

    __slots__ = ("fq",)
    fq: list


def _sketch(rng: np.random.Generator, d: int, scale_bits: int = SKETCH_SCALE_BITS) -> list[Fraction]:
    top, den = 1 << SKETCH_BITS, 1 << scale_bits
    while True:
        ns = rng.integers(-top, top + 1, size=d).tolist()
        if any(ns):
            b = _Column(Fraction(n, den) for n in ns)
            b.fq = [fmpq(n, den) for n in ns]
            return b


def _columns(cols: list) -> QMatrix:
    """The sketch columns as one d × c matrix (from their ``fmpq`` entries where they carry them)."""
    return QMatrix.from_columns([getattr(b, "fq", b) for b in cols])


_ONE = Fraction(1)


class _Basis(list):
    """The basis vector ``e_j`` as a list of Fractions that knows its ``j`` (probes on it are sparse)."""

    __slots__ = ("j",)
    j: int


def _basis(d: int, j: int) -> list[Fraction]:
    e = _Basis([Fraction(0)] * d)
    e[j] = Fraction(1)
    e.j = j
    return e


def _base(b: list, d: int) -> Sequence:
    """The one-token ``[b]`` with its ``fmpq`` and integer forms (a basis column ``e_j`` is one entry)."""
    row = ((b.j, _ONE),) if type(b) is _Basis else tuple((j, Fraction(x)) for j, x in enumerate(b) if x)
    if type(b) is _Column:
        fq = tuple((j, b.fq[j]) for j, _ in row)
    else:
        fq = tuple((j, fmpq(x.numerator, x.denominator)) for j, x in row)
    return Sequence._exact(d, (row,), (fq,), (int_row(row, d),))


def _offset(plan: ProbePlan, k: int) -> tuple:
    """``u_k = e_k + σ_k e_p`` as sorted ``(index, Fraction)`` and ``(index, fmpq)`` pairs."""
    p = plan.pivot
    u = ((k, _ONE),) if not plan.shifts[k] else tuple(sorted(((k, _ONE), (p, Fraction(plan.shifts[k])))))
    return u, tuple((j, fmpq(x.numerator, x.denominator)) for j, x in u)


def _grid_probes(plan: ProbePlan, columns: list, ks, *, columns_outer: bool = True) -> list[Sequence]:
    """The queries ``[b + u_k; b]`` for every column ``b`` and every ``k`` in ``ks`` (the columns outer,
    or the ``k`` outer), each kept as ``[b]`` and the offset ``u_k`` (a few entries, not ``d``;
    :meth:`~exact.sequences.Sequence._offset_pair`), which exact evaluation reads through ``W b``: one
    base token per column and one offset per ``k``, shared by their probes, the probes built in
    C-level passes."""
    bases = [_base(b, plan.d) for b in columns]
    offsets = [_offset(plan, k) for k in ks]
    return Sequence._offset_pairs(bases, offsets, offsets_outer=not columns_outer)


def _probes(plan: ProbePlan, pairs) -> list[Sequence]:
    """The queries ``[b + u_k; b]`` for any ``(k, b)`` pairs, as :func:`_grid_probes` builds them
    (each distinct ``b``, by identity, converted once; each ``u_k`` once)."""
    bases: dict = {}
    offsets: dict = {}
    out = []
    for k, b in pairs:
        base = bases.get(id(b))
        if base is None:
            base = bases[id(b)] = (b, _base(b, plan.d))  # (holding b keeps its id its own)
        offset = offsets.get(k)
        if offset is None:
            offset = offsets[k] = _offset(plan, k)
        out.append(Sequence._offset_pair(base[1], *offset))
    return out


class _Design:
    """The probe design shared by the learner and its certificate check.

    ``measure(columns)`` returns ``T = U W B`` for new sketch columns (the learner
    asks the oracle; the certificate check computes it from the certified model);
    everything else — the sketch, the rows ``K``, the columns ``J`` — follows from
    the seed and ``T``, exactly as the learner chose them.
    """

    def __init__(self, plan: ProbePlan, seed: int, rank: int | None, measure, require=None,
                 scale_bits: int = SKETCH_SCALE_BITS):
        d = plan.d
        rng = np.random.default_rng(seed)
        B_cols: list = []
        T_cols: list = []
        if rank is not None:
            B_cols = [_sketch(rng, d, scale_bits) for _ in range(rank)]
            T_cols = measure(B_cols) if rank else []
        else:
            while len(B_cols) < d:
                if require is not None:
                    require(d, "one more sketch column")
                B_cols.append(_sketch(rng, d, scale_bits))
                T_cols += measure(B_cols[-1:])
                if len(QMatrix.from_columns(T_cols).independent()[1]) < len(T_cols):  # the new column added nothing
                    break
        self.plan, self.B_cols, self.scale_bits = plan, B_cols, scale_bits
        self.T = QMatrix.from_columns(T_cols, nrows=d)  # d × c
        # independent columns P of T (and of Y = U⁻¹T), and rows K with T[K, P] invertible; found modulo a
        # prime and proved exactly (QMatrix.independent), the first ones, as an exact echelon form gives them
        self.K, self.P = self.T.independent()
        self.rank = len(self.P)
        self.J = self.Jc = []
        if self.rank:
            self.B = _columns(B_cols)  # d × c
            self.J = self.B.independent()[0]  # rows with B[J, :] invertible
            if len(self.J) < len(B_cols):  # pragma: no cover - probability ~ 2^-20 per column
                raise InvalidArgument(f"learn_low_rank: degenerate sketch for seed={seed}; retry with another seed")
            self.Jc = [j for j in range(d) if j not in self.J]

    def row_columns(self) -> list:
        """The basis columns ``e_j``, ``j ∈ J^c``, of the row sketch (one list per ``j``: probes share it)."""
        return [_basis(self.plan.d, j) for j in self.Jc]

    def row_pairs(self) -> list:
        """The row sketch's ``(k, e_j)`` pairs, ``k ∈ K`` outer: the order of its probes."""
        return [(k, b) for k in self.K for b in self.row_columns()]

    def row_probes(self, columns: list | None = None) -> list:
        """``[e_j + u_k; e_j]`` for ``k ∈ K`` (outer) and ``j ∈ J^c``."""
        return _grid_probes(self.plan, self.row_columns() if columns is None else columns, self.K,
                            columns_outer=False)


#: A likely denominator of a sketch logit is its first column's, times this: ``2^8`` for a few more
#: factors of two than the first column's numerator may have cancelled, ``720720 = lcm(1, …, 16)`` for
#: small primes.  A hint is only a guess, confirmed exactly (see ``combine(denominators=)``).
HINT_COFACTOR = (1 << 8) * 720720


def _row_hints(first: list) -> list:
    """Per row ``k``, ``den(T[k, 0])·HINT_COFACTOR``: the logits ``u_kᵀ W b_c`` of row ``k`` share
    ``u_kᵀW`` and differ only in ``b_c``, whose entries all have denominator ``2^24``, so their
    denominators divide ``2^24`` times the least common denominator of ``u_kᵀW``'s entries, which the
    first column's denominator shows up to factors its numerator cancelled.

    >>> _row_hints([Fraction(3, 2**24 * 7), Fraction(5)]) == [2**24 * 7 * HINT_COFACTOR, HINT_COFACTOR]
    True
    """
    return [Fraction(x).denominator * HINT_COFACTOR for x in first]


class _Names:
    """``"<what> #i"``, the name of measurement ``i`` of ``n``, made only when a message needs it."""

    __slots__ = ("what", "n")

    def __init__(self, what: str, n: int) -> None:
        self.what, self.n = what, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        return f"{self.what} #{i}"


_LAST_PROBES: dict = {}  # the last design's probes, by the design's key (see _design_probes)


def _design_probes(design: "_Design") -> list:
    """The sketch and row probes of a design, in the learner's order.

    They are a function of the design's key (plan, sketch columns, rows K, columns J),
    so the last design's probes are remembered: checking a certificate right after the
    learn that made it compares the transcript with the very objects that were sent.
    """
    key = _design_key(design)
    if _LAST_PROBES.get("key") == key:
        return _LAST_PROBES["probes"]
    probes = _grid_probes(design.plan, design.B_cols, range(design.plan.d)) + design.row_probes()
    _remember(design, probes)
    return probes


def _design_key(design: "_Design") -> tuple:
    return (design.plan, tuple(map(tuple, design.B_cols)), tuple(design.K), tuple(design.Jc))


def _remember(design: "_Design", probes: list) -> None:
    _LAST_PROBES.clear()
    _LAST_PROBES.update(key=_design_key(design), probes=probes)


def _unit_triangular(plan: ProbePlan) -> QMatrix:
    U = QMatrix.identity(plan.d)
    for k in range(plan.d):
        if plan.shifts[k]:
            U.set(k, plan.pivot, plan.shifts[k])
    return U


def _times_U(plan: ProbePlan, M: QMatrix, *, inverse: bool = False) -> QMatrix:
    """``U M`` (or ``U⁻¹ M``) for the probe matrix ``U = I + σ e_pᵀ`` (rows ``u_k = e_k + σ_k e_p``,
    ``σ_p = 0``) without forming ``U``: row k of ``M`` plus (minus) ``σ_k`` times row p, in O(d·cols).

    >>> plan = ProbePlan(3, 2, (0, 1, 0))
    >>> M = QMatrix.from_rows([[1, 2], [3, 4], [5, 6]])
    >>> _times_U(plan, M) == _unit_triangular(plan) @ M, _times_U(plan, _times_U(plan, M), inverse=True) == M
    (True, True)
    """
    if not any(plan.shifts):
        return M
    sign = -1 if inverse else 1
    sigma = QMatrix.from_columns([[sign * x for x in plan.shifts]], nrows=plan.d)
    return M + sigma @ M.submatrix([plan.pivot], range(M.shape[1]))


def learn_low_rank(
    oracle: Oracle,
    *,
    rank: int | None = None,
    mode: str | None = None,
    seed: int | None = None,
    prec: int = 64,
    max_prec: int = 1 << 23,
    certify: bool = True,
    checks: int = DEFAULT_CHECKS,
    check_seed: int | None = None,
    biases: bool = False,
) -> LearnResult:
    """Learn a head with ``rank(W) <= r`` exactly from ``2rd − r² + d`` queries.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle (the sketches are identified exactly).
    rank : int or None
        The assumed bound ``r`` on ``rank(W)``; ``None`` finds it (``d − r`` more
        queries).
    mode : {"certified", "symbolic", "float"}, optional
        Default ``"certified"`` for an exact oracle, ``"float"`` for an approximate one.  Float
        mode runs the same plan on float answers, with adaptive probe scales and a first-order
        error estimate in which the core's condition numbers enter
        (:mod:`exact.learn.low_rank_float`); without ``rank`` it finds the rank from the
        singular values and reports the gap.
    seed : int or None
        Seed of the generic column sketches.  ``None`` (the default) draws a fresh
        seed, so no fixed public sketch can be targeted by an adversarial ``W``; the
        seed used is in ``details["seed"]`` and in the certificate.
    prec, max_prec, certify
        As in :func:`~exact.learn.learn_single_head`.
    checks, check_seed
        Verification queries (default 2, fresh randomness) that catch a rank above
        the bound or an oracle that is not a single head; with ``checks=0`` the
        result is exact only "among heads of rank ≤ r".
    biases : bool
        A head with biases (``c``, ``b``, ``docs/biases.md``), in every mode: ``b = f([0])``,
        ``v_i = f([e_i]) − b`` and the ``d`` shifts ``u_kᵀc`` from ``[γu_k; 0]`` come first, and
        every sketch probe's shift is taken off; ``d + 1`` more queries (``2rd − r² + 2d + 1``),
        and ``c = U⁻¹(u_kᵀc)_k``.  The result is exact among heads with biases of rank ≤ r.

    Returns
    -------
    LearnResult
        ``model`` is the exact :class:`~exact.models.SingleHead`; ``details`` holds the
        ``rank``, whether it was ``rank_known``, and the canonical ``factors``
        ``{"K": ..., "Q": ...}`` with ``W = Kᵀ Q`` (see
        :func:`exact.canonical.canonical_factors`), as ``"p/q"`` strings.

    Raises
    ------
    InvalidArgument
        For an approximate oracle in an exact mode.
    OracleInconsistent
        If a verification query shows that ``rank(W)`` exceeds the bound, or that the
        oracle is not a single head.
    NotIdentifiable, PrecisionInsufficient, QueryBudgetExceeded
        As in :func:`~exact.learn.learn_single_head`.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> truth = SingleHead.random(6, seed=1, rank=2)
    >>> oracle = ExactOracle(truth)
    >>> result = learn_low_rank(oracle, rank=2)
    >>> result.model == truth, result.queries == low_rank_query_count(6, 2) == 2*2*6 - 2*2 + 6
    (True, True)
    >>> result.details["rank"], len(result.details["factors"]["Q"]), result.verification_queries
    (2, 2, 2)
    """
    d = oracle_dimension(oracle)
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= d):
        raise ShapeError(f"rank: expected an integer 0 <= r <= d = {d} or None, got {rank!r}")
    if mode == "float" or (mode is None and not oracle.exact):
        return _learn_float(oracle, rank=rank, seed=seed, checks=checks, check_seed=check_seed, biases=biases)
    if not isinstance(biases, bool):
        raise InvalidArgument(f"biases: expected True or False, got {biases!r}")
    if not oracle.exact:
        raise InvalidArgument(
            "learn_low_rank: an approximate oracle is learned in mode='float' (the same plan, with a first-order "
            "error estimate); exact modes need an exact oracle. For a noisy oracle with certified bounds, use "
            "learn_noisy or learn_noisy_frame"
        )
    if seed is None:
        seed = secrets.randbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
    # With r known the whole count is checked up front; otherwise step by step.
    extra = d + 1 if biases else 0
    run = Run(
        SPEC, oracle, mode=mode, prec=prec, max_prec=max_prec,
        queries=(low_rank_query_count(d, rank) if rank is not None else d) + extra,
        certify=certify, checks=checks, check_seed=check_seed,
    )
    with run:

        # Step 1: v (and b) and the probes (and the shifts u_kᵀc).
        b = Fraction(0)
        if biases:
            b, v = _read_b_v(run)
        else:
            v, _ = read_v(run)
        plan = ProbePlan.choose(v)
        slopes = [v[k] + plan.shifts[k] * v[plan.pivot] for k in range(d)]
        uc = _read_shifts(run, plan, v, b) if biases else [0] * d
        sent: list = []  # the probes, in the order they were asked

        bias = b

        vq = [to_fmpq(Fraction(x)) for x in v]

        def vb(b) -> Fraction:
            if type(b) is _Basis:
                return Fraction(v[b.j])
            total = fmpq(0)  # vᵀb in flint rationals (b carries its entries as fmpq)
            for x, y in zip(vq, b.fq if type(b) is _Column else map(to_fmpq, map(Fraction, b))):
                total += x * y
            return Fraction(int(total.p), int(total.q))

        def ask(probes) -> list:
            sent.extend(probes)
            return run.ask(probes)

        def logits(answers, what: str, *, columns=None, pairs=None, hints=None) -> list:
            """Exact logits ``u_kᵀ(W b + c)`` from the answers to ``[b + u_k; b]``: for the column sketch
            (``columns``: every ``k`` for each column in turn) the measurements go over as a grid, a base
            per column and a slope per ``k``; otherwise one per ``(k, b)`` in ``pairs``."""
            meas: abc.Sequence
            if columns is not None:
                meas = OuterMeasurements([bias + vb(b) for b in columns], slopes)
            else:
                meas = []
                base_of: dict = {}  # vᵀb per distinct b (by identity: the pairs hold every b alive)
                for k, b in pairs:
                    base = base_of.get(id(b))
                    if base is None:
                        base = base_of[id(b)] = vb(b)
                    meas.append(Measurement(bias + base, slopes[k]))
            n = len(meas)
            extra = {"denominators": hints} if hints is not None else {}
            return run.arith.combine(answers, meas, CompiledCombos(list(range(n)), range(n)), _Names(what, n), **extra)

        def less_shifts(got, ks) -> list:
            if not biases:
                return got
            return [to_fraction(x) - uc[k] for x, k in zip(got, ks)]  # u_kᵀ(W b + c) − u_kᵀc

        row_hints: list = []  # per k, a likely denominator of the logits u_kᵀ(W b + c), from the first column

        def measure_columns(cols) -> list:
            """The column sketch's logits, column by column: the first column's denominators, times
            :data:`HINT_COFACTOR`, are hints for the others' (:func:`_row_hints`)."""
            answers = ask(_grid_probes(plan, cols, range(d)))
            flat: list = []
            if not row_hints:
                flat = logits(answers[:d], "column sketch", columns=cols[:1])
                row_hints.extend(_row_hints(flat))
                cols, answers = cols[1:], answers[d:]
            if cols:
                flat += logits(answers, "column sketch", columns=cols, hints=row_hints * len(cols))
            flat = less_shifts(flat, itertools.cycle(range(d)))
            return [flat[i * d : (i + 1) * d] for i in range(len(flat) // d)]

        # Step 2: the column sketch T = U W B (grown one column at a time if r is unknown).
        design = _Design(plan, seed, rank, measure_columns, require=run.require, scale_bits=SKETCH_SCALE_BITS)
        r_eff, K, J, Jc, c = design.rank, design.K, design.J, design.Jc, len(design.B_cols)
        if rank is None:
            run.require(r_eff * (d - c), "row sketch")

        # Step 3: rows K; only the row entries not implied by Z B = T[K, :] are measured.
        if r_eff:
            row_columns = design.row_columns()
            answers = ask(design.row_probes(row_columns))
            pairs = [(k, b) for k in K for b in row_columns]
            meas_rows = less_shifts(logits(answers, "row", pairs=pairs), (k for k, _ in pairs))
            Z = QMatrix.zeros(r_eff, d)
            for i in range(r_eff):
                for jj, j in enumerate(Jc):
                    Z.set(i, j, meas_rows[i * len(Jc) + jj])
            # Z[:, J] = (T[K, :] − Z[:, Jc] B[Jc, :]) · B[J, :]⁻¹
            T, Bm = design.T, design.B
            rhs = T.submatrix(K, range(c)) - Z.submatrix(range(r_eff), Jc) @ Bm.submatrix(Jc, range(c))
            ZJ = rhs @ Bm.submatrix(J, range(c)).inv()
            for i in range(r_eff):
                for jj, j in enumerate(J):
                    Z.set(i, j, ZJ.entry(i, jj))
            # Step 4: W = Y C⁻¹ Z with Y = U⁻¹ T[:, P] and C = T[K, P].
            Y = _times_U(plan, T.submatrix(range(d), design.P), inverse=True)
            YC = Y @ T.submatrix(K, design.P).inv()
        v_exact = tuple(to_fraction(x) for x in v)
        c_vec = (tuple(to_fraction(x) for x in _times_U(plan, QMatrix.from_columns([uc], nrows=d), inverse=True).column(0))
                 if biases else None)
        # W = YC·Z = C·M⁻¹·Z with M = Z[:, pivots] and C = YC·M = W[:, pivots]: kept as those factors (C
        # and Z have W's small entries, only the r×r M⁻¹ is large), so W's d² entries are formed only if
        # asked for; the replay evaluates W x right to left and reads the few rows of W a sparse probe needs.
        # The canonical factors are K = Cᵀ and Q = M⁻¹Z, Z's reduced row echelon form (W's row space).
        if r_eff:
            (Cw, Minv, Z), Qmat, (Kf, Qf) = _factors(YC, Z)
            model = SingleHead._from_factors((Cw, Minv, Z), v_exact, c_vec, to_fraction(b))
        else:
            model = SingleHead._from_qmatrix(QMatrix.zeros(d, d), v_exact, c_vec, to_fraction(b))
            Kf, Qf = (), ()
        if r_eff and d * d <= DENSE_ENTRIES:
            # W's integer form (the verification queries' scale) comes cheaply from W itself: up to this
            # size W is formed once, in flint
            model.__dict__["_Wmat"] = Cw @ Qmat
        _remember(design, sent)

        conditions = {"sketch_seed": seed, "sketch_scale_bits": design.scale_bits} | ({"biases": True} if biases else {})
        if rank is not None:
            conditions["rank"] = rank
        model.__dict__["rank"] = len(Kf)  # the rank of its row echelon form: no second elimination
        return run.finish(
            model,
            conditions=conditions,
            details=LowRankDetails(
                seed=seed, rank=r_eff, rank_known=rank is not None, sketch_columns=c, core_rows=tuple(K),
                pivot=plan.pivot,
                factors={"K": [[format_rational(x) for x in row] for row in Kf],
                         "Q": [[format_rational(x) for x in row] for row in Qf]},
            ),
        )


def _factors(YC: QMatrix, Z: QMatrix) -> tuple[tuple, QMatrix, tuple]:
    """``(C, M⁻¹, Z)`` with ``W = YC·Z = C·M⁻¹·Z``, ``Q = M⁻¹Z`` and :func:`~exact.canonical.canonical_factors`
    of ``W`` as rows, for ``YC`` (d×r) and ``Z`` (r×d) of rank r.

    W's row space is Z's, so W's reduced row echelon form is Z's: with ``pivots`` its pivot columns and
    ``M = Z[:, pivots]``, ``Q = M⁻¹Z`` and ``K = W[:, pivots]ᵀ = (YC·M)ᵀ``.  The pivots are found by
    :meth:`~exact.linalg.QMatrix.independent` (a prime's search, proved exactly), and ``Q`` is checked to
    be the echelon form (zero left of each pivot) before it is used; otherwise Z's exact rref answers.
    """
    r, n = Z.shape
    pivots = Z.independent()[1]
    Q = None
    if len(pivots) == r and pivots == sorted(pivots):
        Minv = Z.submatrix(range(r), pivots).inv()
        Q = Minv @ Z
        flat = Q.entries()
        if any(flat[i * n + j] != 0 for i in range(r) for j in range(pivots[i])):
            Q = None
    if Q is None:  # pragma: no cover - a prime's accident: the exact elimination
        R, rank = Z.rref()
        pivots = [next(j for j in range(n) if R.entry(i, j) != 0) for i in range(rank)]
        Minv = Z.submatrix(range(r), pivots).inv()
        Q = R.submatrix(range(rank), range(n))
    M = Z.submatrix(range(r), pivots)
    C = YC @ M  # W[:, pivots]
    return (C, Minv, Z), Q, (C.T.rows(), Q.rows())


def _read_b_v(run) -> tuple:
    """``b = f([0])`` and ``v_i = f([e_i]) − b``, exactly (the first ``d + 1`` queries with biases)."""
    from ..errors import NotIdentifiable
    from .single_head_biased import value_queries

    d = run.d
    first = run.ask(value_queries(d))
    (b,) = run.arith.values(first[:1], ["b"])
    v = run.arith.values(first[1:], [f"v[{i}]" for i in range(d)], offset=b)
    if not any(v):
        raise NotIdentifiable("v = 0: then f(X) = b for every X, so neither W nor c has an effect and they cannot be "
                              "identified")
    return b, v


def _read_shifts(run, plan: ProbePlan, v, b) -> list:
    """``u_kᵀc`` for every probe ``u_k``, from ``[γu_k; 0]`` (``d`` queries), exactly."""
    from .single_head_biased import bias_probes

    d, g, p = plan.d, plan.gamma, plan.pivot
    answers = run.ask(bias_probes(plan))
    meas = [Measurement(b, g * (v[k] + plan.shifts[k] * v[p]), g) for k in range(d)]
    got = run.arith.combine(answers, meas, [[(1, k)] for k in range(d)], [f"u_{k}ᵀc" for k in range(d)])
    return [to_fraction(x) for x in got]


def _learn_float(oracle, *, rank, seed, checks, check_seed, biases=False) -> LearnResult:
    """Float mode: the same plan on float answers (:mod:`exact.learn.low_rank_float`)."""
    from .low_rank_float import LowRankFloatDetails, learn_low_rank_float

    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
    d = oracle_dimension(oracle)
    extra = d + 1 if biases else 0
    run = Run(SPEC, oracle, mode="float", queries=(low_rank_query_count(d, rank) if rank is not None else d) + extra,
              certify=False, checks=checks, check_seed=check_seed)
    with run:
        model, est, facts = learn_low_rank_float(run, rank=rank, seed=seed, biases=biases)
        conditions = {"sketch_seed": facts["seed"]} | ({"rank": rank} if rank is not None else {})
        # float answers cannot rule out a direction of W below their noise, and two verification queries
        # within a float estimate are weak evidence: the rank is always stated
        if rank is not None:
            standing: tuple = (f"among heads of rank <= {rank}",)
        elif facts["rank"] < d:
            gap = facts["gap"]
            standing = (f"rank(W) = {facts['rank']}, found at a singular-value gap"
                        + (f" of {gap:.3g}" if gap else "") + " (a direction of W below the answers' noise can hide)",)
        else:
            standing = ()
        return run.finish(model, conditions=conditions, error_estimate=est, details=LowRankFloatDetails(**facts),
                          standing=standing)


@dataclass(frozen=True)
class LowRankDetails(Details):
    """The sketch: its seed, the rank found (or given), its columns, the core's rows, and the
    canonical factors ``W = Kᵀ Q`` (``Q`` in reduced row echelon form), as exact strings."""

    ALIASES = {"core_rows": "rows"}
    seed: int = 0
    rank: int = 0
    rank_known: bool = False
    sketch_columns: int = 0
    core_rows: tuple = ()
    pivot: int = 0
    factors: dict = field(default_factory=dict)

    def rows(self, result) -> list:
        known = "within the given bound" if self.rank_known else "found by exact rank tests"
        return [("rank", f"{self.rank} ({known}; sketch seed {self.seed})")]

    def model_rows(self, result) -> list:
        lines = super().model_rows(result) + ["W = Kᵀ Q with canonical factors (Q in reduced row echelon form):"]
        for name in ("K", "Q"):
            lines += [f"  {name}[{i}] = [" + ", ".join(row) + "]" for i, row in enumerate(self.factors.get(name, ()))]
        return lines


def _check_certificate(model, transcript, conditions) -> str | None:
    """Rebuild the learner's probe set from the certified model, its rank bound and the sketch seed."""
    d = model.d
    biases = conditions.get("biases") is True
    if getattr(model, "biased", False) and not biases:
        return ("the certified head has biases (c or b nonzero), which the bias-free sketch's probe set does not "
                "identify; a certificate of a head with biases records the condition biases=true")
    if not any(model.v):
        return "v = 0, so no query depends on W: the transcript cannot identify it"
    seed = conditions.get("sketch_seed")
    if seed is None:
        return "a low-rank certificate must record its sketch seed (conditions sketch_seed)"
    rank = conditions.get("rank")
    if rank is not None and rank > d:
        return f"the rank bound r = {rank} exceeds d = {d}"
    if rank is not None and model.rank > rank:
        return f"the model has rank {model.rank}, above the assumed bound r = {rank}"
    plan = ProbePlan.choose(model.v)

    def measure(cols):
        T = _times_U(plan, model._times(_columns(cols)))
        return [T.column(j) for j in range(len(cols))]

    design = _Design(plan, seed, rank, measure, scale_bits=conditions.get("sketch_scale_bits", LEGACY_SCALE_BITS))
    if design.rank != model.rank:  # then W = Y C⁻¹ Z fails: the transcript's answers decode to another W
        return (f"the sketch of this seed sees rank {design.rank} of the model's W, whose rank is {model.rank}: it is "
                "not generic for this model, so the transcript does not identify it")
    if biases:
        from .single_head_biased import bias_probes, value_queries

        seqs = value_queries(d) + bias_probes(plan) + _design_probes(design)
    else:
        seqs = [Sequence.basis(d, i) for i in range(d)] + _design_probes(design)
    if [q.X for q in transcript] != seqs:
        return (
            "the transcript is not the low-rank learner's probe set for this model, rank bound and sketch seed, "
            "so it need not identify the model"
        )
    return None


def _seed_ok(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64


#: The sketch identifies W only if it is generic for W: true with probability 1 for a seed
#: drawn independently of W (the default draws a fresh one), but a W can be built against a
#: seed that is known in advance.  Verification queries check it; without them it is stated.
GENERIC = "for a sketch generic for W (its seed independent of W)"


def _heads(conditions) -> str:
    return "single heads with biases" if conditions.get("biases") is True else "bias-free single heads"


def _scope(conditions) -> str:
    r = conditions.get("rank")
    rank = f" of rank <= {r}" if r is not None else " (rank found by exact rank tests)"
    return f"among {_heads(conditions)}{rank}, {GENERIC}"


def _unchecked(conditions) -> tuple:
    r = conditions.get("rank")
    return (f"among {_heads(conditions)}",) + ((f"among heads of rank <= {r}",) if r is not None else ()) + (GENERIC,)


def _count_text(result) -> str:
    """The count a low-rank result was asked to meet: the manifold dimension plus d for a tight
    bound, the sketch with the found rank otherwise."""
    d, r = result.model.d, result.details["rank"]
    if result.certificate is None:  # float mode
        base = 2 * r * d - r * r + d if result.details["rank_known"] else 2 * r * d - r * r + 2 * d - r
        text = "2rd − r² + d" if result.details["rank_known"] else "2rd − r² + 2d − r"
        extra = [("d + 1", d + 1)] if result.details["biases"] else []
        extra += [(f"{result.details['rescaled']} re-asked", result.details["rescaled"])] if result.details["rescaled"] else []
        return " + ".join([text] + [t for t, _ in extra]) + f" = {base + sum(n for _, n in extra)} with r = {r}"
    bound = result.certificate.conditions.get("rank")
    plus, more = (" + d + 1", d + 1) if result.certificate.conditions.get("biases") is True else ("", 0)
    if not result.details["rank_known"]:
        return f"2rd − r² + 2d − r{plus} = {2 * r * d - r * r + 2 * d - r + more} with the found r = {r}"
    if r == bound:
        return f"2rd − r² + d{plus} = {low_rank_query_count(d, r) + more}"
    return f"d + d·r + r'(d − r){plus} = {d + d * bound + r * (d - bound) + more} with r = {bound}, found r' = {r}"


def _model_class(conditions) -> str:
    r = conditions.get("rank")
    return "a single head" + (" with biases" if conditions.get("biases") is True else "") + (
        f" of rank <= {r}" if r is not None else "")


SPEC = (
    registry.LearnerSpec(
        name="low-rank",
        summary="exact sketch learner for rank(W) <= r: 2rd − r² + d queries (the manifold dimension plus d)",
        model_kind="single-head",
        modes=("certified", "symbolic", "float"),
        learn=learn_low_rank,
        query_count=lambda d, rank=None, biases=False, **conditions: low_rank_query_count(d, rank) + (
            d + 1 if biases is True else 0),
        count_formula="2rd − r² + d",
        count_text=_count_text,
        conditions={"rank": registry.int_at_least(0), "sketch_seed": _seed_ok, "biases": lambda x: x is True,
                    "sketch_scale_bits": lambda x: type(x) is int and x in SCALES},
        check_certificate=_check_certificate,
        scope=_scope,
        unchecked=_unchecked,
        model_class=_model_class,
        options=(
            registry.Option("rank", "int", "the rank bound r (omit to find it by exact rank tests)", minimum=0),
            registry.Option("seed", "int", "seed of the sketch (default: fresh, reported)", minimum=0),
            registry.Option("biases", "flag", "a head with biases (c, b; d + 1 more queries)",
                            from_model=lambda model: True if model.biased else None),
        ),
        command="low-rank",
        method="sketch",
    )
)
