"""Low-rank heads: a query-optimal exact sketch learner (beyond [BSHK26], Theorem 5.1 setting).

If ``rank(W) <= r``, then ``W`` lies on the manifold of rank-``r`` matrices, of
dimension ``2rd − r²``.  :func:`learn_low_rank` recovers ``W`` and ``v`` exactly with

    d + d·r + r·(d − r) = 2rd − r² + d   queries (rank given),

which is that dimension plus the ``d`` queries for ``v``.

1. ``v`` from ``d`` one-token queries; probes ``u_k`` as in Theorem 4.1 (pivot trick,
   ``U`` unit-triangular, ``|vᵀu_k| >= |v_p|/2``).
2. **Column sketch.**  For seeded generic rational vectors ``b_1..b_c`` (entries
   ``n/2^20``, ``|n| <= 2^20``) measure every ``u_kᵀ W b_c`` with the logit primitive on
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

The rank is an assumption when given: if ``rank(W) > r`` the queries are consistent
with a rank-``r`` matrix and cannot reveal it (no learner with this count can); the
certificate records the bound (``conditions={"max_rank": r}``) and rejects models
above it.  A smaller true rank is found and reported (``details["rank"]``), with
fewer queries.  Exactness also needs the sketch to be generic, which fails with
probability below ``r·2^-20`` over the random seed; the seed is fresh for every call
unless given, so no ``W`` can be chosen against it.
"""

from __future__ import annotations

import secrets
import time
from fractions import Fraction

import numpy as np
from flint import fmpq_mat

from ..arith import Measurement, get_arithmetic
from ..canonical import canonical_factors, from_fmpq_mat, pivot_columns
from ..certify import make_certificate
from ..errors import CertificateInvalid, ShapeError
from ..models import SingleHead
from ..numbers import format_rational, to_fmpq, to_fraction
from ..sequences import Sequence
from ._common import Asker, read_v
from .result import LearnResult
from .single_head import ProbePlan

__all__ = ["learn_low_rank", "low_rank_query_count", "SKETCH_BITS"]

#: Sketch entries are ``n / 2^SKETCH_BITS`` with ``|n| <= 2^SKETCH_BITS``.
SKETCH_BITS = 20


def low_rank_query_count(d: int, r: int, *, rank_known: bool = True) -> int:
    """Queries of :func:`learn_low_rank`: ``2rd − r² + d``, or ``2rd − r² + 2d − r`` with unknown rank.

    >>> low_rank_query_count(64, 4), low_rank_query_count(64, 4, rank_known=False)
    (560, 620)
    >>> low_rank_query_count(8, 8) == low_rank_query_count(8, 8, rank_known=False) == 8 * 8 + 8
    True
    """
    if not 0 <= r <= d:
        raise ValueError(f"rank: expected 0 <= r <= d = {d}, got {r}")
    return 2 * r * d - r * r + d + (0 if rank_known else d - r)


def _sketch(rng: np.random.Generator, d: int) -> list[Fraction]:
    top = 1 << SKETCH_BITS
    while True:
        b = [Fraction(int(n), top) for n in rng.integers(-top, top + 1, size=d)]
        if any(b):
            return b


def learn_low_rank(
    oracle,
    *,
    rank: int | None = None,
    mode: str | None = None,
    seed: int | None = None,
    prec: int = 64,
    max_prec: int = 1 << 23,
    certify: bool = True,
) -> LearnResult:
    """Learn a head with ``rank(W) <= r`` exactly from ``2rd − r² + d`` queries.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle (the sketches are identified exactly).
    rank : int or None
        The assumed bound ``r`` on ``rank(W)``; ``None`` finds it (``d − r`` more
        queries).
    mode : {"certified", "symbolic"}, optional
        Default ``"certified"``.
    seed : int or None
        Seed of the generic column sketches.  ``None`` (the default) draws a fresh
        seed, so no fixed public sketch can be targeted by an adversarial ``W``; the
        seed used is in ``details["seed"]`` for replay.
    prec, max_prec, certify
        As in :func:`~exact.learn.learn_single_head`.

    Returns
    -------
    LearnResult
        ``model`` is the exact :class:`~exact.models.SingleHead`; ``details`` holds the
        ``rank``, whether it was ``rank_known``, and the canonical ``factors``
        ``{"K": ..., "Q": ...}`` with ``W = Kᵀ Q`` (see
        :func:`exact.canonical.canonical_factors`), as ``"p/q"`` strings.

    Raises
    ------
    ValueError
        For ``mode="float"`` or an approximate oracle: the sketch learner is exact.  Use :func:`learn_low_rank_cs` or :func:`learn_single_head` instead.
    NotIdentifiable, PrecisionInsufficient, OracleInconsistent, QueryBudgetExceeded
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
    >>> result.details["rank"], len(result.details["factors"]["Q"])
    (2, 2)
    """
    t_start = time.perf_counter()
    d = oracle.d
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= d):
        raise ShapeError(f"rank: expected an integer 0 <= r <= d = {d} or None, got {rank!r}")
    if mode == "float" or not oracle.exact:
        raise ValueError(
            "learn_low_rank is exact and needs an exact oracle with mode='certified' or 'symbolic'; "
            "for float or approximate oracles use learn_low_rank_cs, or learn_single_head with a grid"
        )
    arith = get_arithmetic(mode, oracle, prec=prec, max_prec=max_prec)
    # With r known the whole count is checked up front; otherwise step by step.
    oracle.require(low_rank_query_count(d, rank) if rank is not None else d, what=f"learn_low_rank (d={d}, r={rank})")
    start = oracle.count
    ask = Asker(oracle)
    if seed is None:
        seed = secrets.randbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer or None, got {seed!r}")
    rng = np.random.default_rng(seed)

    # Step 1: v and the probes.
    v, _ = read_v(ask, arith, d)
    plan = ProbePlan.choose(v)
    U = fmpq_mat(d, d, [0] * (d * d))
    for k in range(d):
        U[k, k] = 1
        if plan.shifts[k]:
            U[k, plan.pivot] = plan.shifts[k]
    U_inv = U.inv()
    vq = [to_fmpq(x) for x in v]
    slope = [vq[k] + plan.shifts[k] * vq[plan.pivot] for k in range(d)]

    slope_q = [to_fraction(s) for s in slope]

    def measure(pairs, what):
        """Exact logits ``u_kᵀ W b`` for ``(k, b)`` pairs, via ``[b + u_k; b]``."""
        seqs, meas = [], []
        token: dict = {}  # per distinct b: its sparse row and vᵀb, computed once
        for k, b in pairs:
            key = tuple(b)
            if key not in token:
                token[key] = (_pairs(dict(enumerate(b))), sum((x * y for x, y in zip(v, b) if y), Fraction(0)))
            row, base = token[key]
            a = dict(row)
            a[k] = a.get(k, 0) + 1
            if plan.shifts[k]:
                a[plan.pivot] = a.get(plan.pivot, 0) + plan.shifts[k]
            seqs.append(Sequence._exact(d, (_pairs(a), row)))
            meas.append(Measurement(base, slope_q[k]))
        answers = ask(seqs)
        names = [f"{what} #{i}" for i in range(len(pairs))]
        return arith.combine(answers, meas, [[(1, i)] for i in range(len(pairs))], names)

    # Step 2: the column sketch, T = U W B (grown one column at a time if r is unknown).
    B_cols, T_cols = [], []
    if rank is not None:
        B_cols = [_sketch(rng, d) for _ in range(rank)]
        flat = measure([(k, b) for b in B_cols for k in range(d)], "column sketch")
        T_cols = [flat[i * d : (i + 1) * d] for i in range(rank)]
    else:
        while len(B_cols) < d:
            oracle.require(d, what="learn_low_rank (one more sketch column)")
            B_cols.append(_sketch(rng, d))
            T_cols.append(measure([(k, B_cols[-1]) for k in range(d)], f"column {len(B_cols) - 1}"))
            if _mat(T_cols).rank() < len(T_cols):  # the new column added nothing: rank found
                break
    c = len(B_cols)
    T = _mat(T_cols) if c else fmpq_mat(d, 0, [])  # d × c
    r_eff = T.rank() if c else 0
    if rank is None:
        oracle.require(r_eff * (d - c), what="learn_low_rank (row sketch)")

    # Step 3: rows K and columns P with T[K, P] invertible; known products Z B = T[K, :].
    Z = fmpq_mat(r_eff, d, [0] * (r_eff * d))
    P = K = []
    if r_eff:
        P = pivot_columns(T)  # independent columns of T (and of Y = U⁻¹T)
        K = pivot_columns(_submatrix(T, range(d), P).transpose())  # rows with T[K, P] invertible
        Bm = _mat(B_cols)  # d × c
        J = pivot_columns(Bm.transpose())  # rows with B[J, :] invertible
        if len(J) < c:  # pragma: no cover - probability ~ 2^-20 per column
            raise ValueError(f"learn_low_rank: degenerate sketch for seed={seed}; retry with another seed")
        Jc = [j for j in range(d) if j not in J]
        meas_rows = measure([(k, _basis(d, j)) for k in K for j in Jc], "row")
        for i in range(r_eff):
            for jj, j in enumerate(Jc):
                Z[i, j] = to_fmpq(meas_rows[i * len(Jc) + jj])
        # Z[:, J] = (T[K, :] − Z[:, Jc] B[Jc, :]) · B[J, :]⁻¹
        rhs = _submatrix(T, K, range(c)) - _submatrix(Z, range(r_eff), Jc) * _submatrix(Bm, Jc, range(c))
        ZJ = rhs * _submatrix(Bm, J, range(c)).inv()
        for i in range(r_eff):
            for jj, j in enumerate(J):
                Z[i, j] = ZJ[i, jj]

    # Step 4: W = Y C⁻¹ Z with Y = U⁻¹ T[:, P] and C = T[K, P].
    if r_eff:
        Y = U_inv * _submatrix(T, range(d), P)
        W = Y * _submatrix(T, K, P).inv() * Z
    else:
        W = fmpq_mat(d, d, [0] * (d * d))
    model = SingleHead(from_fmpq_mat(W), [to_fraction(x) for x in v])

    transcript = oracle.transcript[start:]
    certificate = make_certificate(model, transcript, learner="low_rank", conditions={"max_rank": rank if rank is not None else r_eff})
    t = time.perf_counter()
    if certify:
        report = certificate.check()
        if not report.holds:  # pragma: no cover - would be a bug in the arithmetic
            raise CertificateInvalid(f"learn_low_rank: internal error, {report.message}")
    t_cert = time.perf_counter() - t
    total = time.perf_counter() - t_start
    Kf, Qf = canonical_factors(model.W)
    return LearnResult(
        model=model,
        mode=arith.name,
        exact=True,
        queries=oracle.count - start,
        max_length=max(q.X.length for q in transcript),
        certificate=certificate,
        precision=arith.precision,
        seconds={"query": ask.seconds, "certify": t_cert, "total": total, "solve": total - ask.seconds - t_cert},
        details={
            "seed": seed,
            "rank": r_eff,
            "rank_known": rank is not None,
            "sketch_columns": c,
            "rows": tuple(K),
            "pivot": plan.pivot,
            "factors": {
                "K": [[format_rational(x) for x in row] for row in Kf],
                "Q": [[format_rational(x) for x in row] for row in Qf],
            },
        },
    )


def _pairs(a: dict) -> tuple:
    return tuple((j, Fraction(a[j])) for j in sorted(a) if a[j])


def _basis(d: int, j: int) -> list[Fraction]:
    e = [Fraction(0)] * d
    e[j] = Fraction(1)
    return e


def _mat(cols) -> fmpq_mat:
    """The ``d × c`` matrix whose columns are ``cols``."""
    d, c = len(cols[0]), len(cols)
    return fmpq_mat(d, c, [to_fmpq(cols[j][i]) for i in range(d) for j in range(c)])


def _submatrix(M: fmpq_mat, rows, cols) -> fmpq_mat:
    rows, cols = list(rows), list(cols)
    return fmpq_mat(len(rows), len(cols), [M[i, j] for i in rows for j in cols])

