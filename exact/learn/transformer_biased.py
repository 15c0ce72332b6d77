"""A one-layer Transformer **with biases**, with or without a residual, exactly (docs/transformer.md).

The block (torch's ``nn.MultiheadAttention`` followed by ``Linear``, ``ReLU``, ``Linear``) is

    s_i = x_iᵀ(W x_N + c),   h(X) = Σ_i α_i (V x_i + μ),   α = softmax(s),
    T(X) = wᵀReLU(A·h(X) + a) + b        or, with the residual,   wᵀReLU(A(x_N + h(X)) + a) + b.

The odd part ``T(X) − T(−X)`` no longer reduces it (the biases are even), so the FFN is inverted:

1. **One-token queries see the FFN alone** (``α = 1``): ``g₁(x) = T([x])`` is a ReLU network with
   biases, learned exactly by :func:`~exact.learn.ffn_affine.learn_ffn_biased`'s search.
2. **The block is ``g₁`` of a point on a segment.**  With ``h̄ = Σ α_i x_i``,
   ``T(X) = g₁(x_N + K(h̄ − x_N))`` where ``K = I`` without the residual and ``K = (I + V)⁻¹V``
   with it.  For a two-token query ``[p + t·u; p]`` that point is ``p + α·t·Ku``, with the logit
   ``ℓ = t·uᵀ(W p + c)``.
3. **Without the residual** the segment ``[p, p + t·u]`` is known: ``p`` and ``t`` are chosen so
   that it lies inside one linear region of ``g₁`` (decided exactly on the learned form) where
   ``g₁`` is not constant along ``u``, so ``T = g₁(p) + α·(g₁(p + tu) − g₁(p))`` is a logit
   measurement with known base and slope: ``d`` directions at each of ``d + 1`` affinely
   independent points give ``uᵀ(W p_k + c)``, hence ``W p_k + c`` and then ``(W, c)``:
   ``d(d + 1)`` queries.
4. **With the residual** the direction ``Ku`` is unknown, so each direction is asked twice,
   ``[p ± t·u; p]`` (logits ``±ℓ``): inside one region of gradient ``G``,
   ``T₊ − T₋ = κ = t·GᵀKu`` exactly (a rational: an answer pair whose difference is irrational
   crossed a kink, and is asked again at a sixteenth of the scale), and ``T₊ = g₁(p) + κσ(ℓ)``.
   The ``κ`` at ``d + 1`` points whose gradients span ``ℝ^d`` give ``K``; ``2d(d + 1)`` queries.

Checks: every logit is confirmed exactly against its answer (with the residual, both answers of
the pair), the extra point's equations are satisfied exactly, with the residual the learned ``K``
must keep every probe inside its region, the whole transcript is replayed, and the driver's
random verification sequences are decided exactly.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import registry
from ..arith import Measurement
from ..errors import ExactAttentionError, InvalidArgument, NotIdentifiable, OracleInconsistent, PrecisionInsufficient
from ..ffn import FunctionForm
from ..linalg import QMatrix
from ..numbers import format_rational
from ..oracles import answer_difference, answer_equals_logistic
from ..protocols import Oracle
from ..transformer import Transformer
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from .ffn import FFN_CONDITIONS, FFNDetails, check_options
from .ffn_affine import _extract, _standing
from ._common import rerun_verdict
from .result import LearnResult
from .transformer_points import (_basis, _dot, _fq, _margin, _points, _pow2_below, _Probe, _region,
                                 _residual_model, _steep_basis)
from .transformer_residual_float import TransformerBiasedFloatDetails, learn_residual_float, logit_interval

__all__ = ["learn_transformer_biased", "attention_query_count", "SPEC"]

#: How many times one residual probe pair is asked again, each time at a sixteenth of its scale.
RESCALES = 4

RESIDUAL_REGIONS = ("each residual probe pair [p ± t·u; p] stays inside one linear region of the one-token "
                    "function (tested exactly: a rational difference T₊ − T₋, both answers logistic in one logit, "
                    "and the learned K keeps both points inside)")


def attention_query_count(d: int, residual: bool) -> int:
    """The queries beyond the FFN's on a generic block: ``d(d + 1)``, twice that with the residual.

    >>> attention_query_count(8, False), attention_query_count(8, True)
    (72, 144)
    """
    return d * (d + 1) * (2 if residual else 1)


@dataclass(frozen=True)
class _Plan:
    """What the attention part found."""

    W: tuple
    c: tuple
    K: tuple | None
    queries: int
    rescaled: int


def _attention(ask, form: FunctionForm, arith, d: int, rng, residual: bool) -> _Plan:
    pts, grads, values = _points(form, rng, residual)
    n0 = 0
    probes: list[_Probe] = []
    for k, (p, G) in enumerate(zip(pts, grads)):
        if residual:
            dirs = [[Fraction(int(i == j)) for j in range(d)] for i in range(d)]
        else:
            dirs = _basis(G)
        for u in dirs:
            cap = Fraction(1, 1 + int(max(abs(x) for x in p)))
            t = _pow2_below(_margin(form, p, u), cap) if not residual else \
                _pow2_below(min((m for m in (_margin(form, p, u), _margin(form, p, [-x for x in u])) if m is not None),
                                default=None), cap)
            probes.append(_Probe(k, u, t))
    rescaled = 0
    if not residual:
        answers = ask([pr.seq(pts[pr.k]) for pr in probes])
        n0 += len(probes)
        for pr, a in zip(probes, answers):
            pr.plus = a
        meas = [Measurement(values[pr.k], form.value([x + pr.t * y for x, y in zip(pts[pr.k], pr.u)]) - values[pr.k],
                            pr.t) for pr in probes]
        K = None
    else:
        pending, K = list(probes), None
        for round_ in range(2 * RESCALES + 1):
            if pending:
                got = ask([s for pr in pending for s in (pr.seq(pts[pr.k]), pr.seq(pts[pr.k], -1))])
                n0 += len(got)
                rescaled += len(pending) if round_ else 0
                again = []
                for pr, plus, minus in zip(pending, got[::2], got[1::2]):
                    pr.plus, pr.minus = plus, minus
                    pr.kappa = answer_difference(plus, minus).rational()
                    if pr.kappa is None:  # the pair crossed a kink of g₁: ask again closer in
                        pr.t /= 16
                        again.append(pr)
                if again:
                    pending = again
                    continue
            try:
                K = _learn_K(probes, grads, d)
            except OracleInconsistent:
                if round_ == 2 * RESCALES:
                    raise
                # a pair of logit 0 has a rational difference even across a kink (σ(0) = 1/2): every pair closer in
                for pr in probes:
                    pr.t /= 16
                pending = list(probes)
                continue
            pending = _outside(probes, pts, form, K)  # with this K, a pair that leaves its region: closer in
            if not pending:
                break
        else:
            raise OracleInconsistent(
                f"{len(pending)} residual probe pairs never give a rational T₊ − T₋ inside their regions, even at "
                f"16^-{RESCALES} of their scale: the black box is not a one-layer Transformer with a residual (with "
                "these biases)")
        zero = [pr for pr in probes if pr.kappa == 0]
        for pr in zero:  # G_kᵀKe_i = 0: use e_i + e_j with G_kᵀKe_j ≠ 0 (its κ is then known in advance)
            row = [q for q in probes if q.k == pr.k and q.kappa]
            if not row:
                raise NotIdentifiable(f"at probe point {pr.k} the attention does not move the FFN (G_kᵀK = 0): "
                                      "the residual block shows no logit there")
            j = row[0]
            pr.u = [x + y for x, y in zip(pr.u, j.u)]
            pr.t = min(pr.t, j.t)
        if zero:
            got = ask([s for pr in zero for s in (pr.seq(pts[pr.k]), pr.seq(pts[pr.k], -1))])
            n0 += len(got)
            rescaled += len(zero)
            for pr, plus, minus in zip(zero, got[::2], got[1::2]):
                pr.plus, pr.minus = plus, minus
                pr.kappa = answer_difference(plus, minus).rational()
                if pr.kappa != pr.t * _dot(grads[pr.k], _matvec(K, pr.u)):
                    raise OracleInconsistent("a residual probe's T₊ − T₋ differs from t·GᵀKu with the K learned "
                                             "from the other probes: the block is not of this class")
        if _outside(probes, pts, form, K):
            raise OracleInconsistent("with the learned K a residual probe leaves its region of the one-token "
                                     "function, so its answer was not the measurement it was read as")
        meas = [Measurement(values[pr.k], _known(pr.kappa), pr.t) for pr in probes]
    try:
        ys = arith.combine([pr.plus for pr in probes], meas, [[(1, i)] for i in range(len(probes))], None)
    except (PrecisionInsufficient, OracleInconsistent) as e:
        hint = "" if residual else "; a block with a residual is learned with residual=True"
        raise OracleInconsistent(f"a probe's answer is not its logit measurement through the learned FFN ({e}): the "
                                 f"black box is not a one-layer Transformer of this class{hint}") from None
    if residual:
        for pr, y in zip(probes, ys):
            if not answer_equals_logistic(pr.minus, _fq(values[pr.k]), _fq(-_known(pr.kappa)), _fq(-pr.t * y)):
                raise OracleInconsistent("a residual probe pair's second answer is not g₁(p) − κσ(−ℓ): the black box "
                                         "is not a one-layer Transformer with a residual")
    # W p_k + c from the d directions at p_k, then (W, c) from the d + 1 points
    Z = []
    for k in range(d + 1):
        rows = [(pr.u, y) for pr, y in zip(probes, ys) if pr.k == k]
        U = QMatrix.from_rows([u for u, _ in rows])
        Z.append([Fraction(int(x.p), int(x.q)) for x in U.inv().matvec([_fq(Fraction(y)) for _, y in rows])])
    Bt = QMatrix.from_rows([p + [Fraction(1)] for p in pts])  # rows (p_k, 1): Bt·[W | c]ᵀ = Z
    Wc = (Bt.inv() @ QMatrix.from_rows(Z)).rows()  # (d + 1) × d: [Wᵀ; cᵀ]
    W = tuple(tuple(Wc[j][i] for j in range(d)) for i in range(d))
    c = tuple(Wc[d][i] for i in range(d))
    return _Plan(W, c, K, n0, rescaled)


def _known(kappa: Fraction | None) -> Fraction:
    """A pair's ``κ``, rational once its pair was asked inside its region."""
    if kappa is None:  # pragma: no cover - every pair is asked again until its difference is rational
        raise OracleInconsistent("internal: a residual probe pair's κ was never read")
    return kappa


def _matvec(K, u) -> list:
    return [_dot(r, u) for r in K]


def _learn_K(probes, grads, d: int) -> tuple:
    """``K`` from ``G_kᵀK e_i = κ_{k,i}/t``: ``d`` independent gradients solve it, the last checks it."""
    R = [[Fraction(0)] * d for _ in grads]
    for pr in probes:
        i = next(j for j, x in enumerate(pr.u) if x)
        R[pr.k][i] = pr.kappa / pr.t
    order = list(range(len(grads)))
    chosen: list[int] = []
    for k in order:
        trial = chosen + [k]
        if QMatrix.from_rows([grads[j] for j in trial]).rank() == len(trial):
            chosen = trial
        if len(chosen) == d:
            break
    Gs = QMatrix.from_rows([grads[j] for j in chosen])
    K = (Gs.inv() @ QMatrix.from_rows([R[j] for j in chosen])).rows()
    for k in order:
        if k not in chosen:
            if [_dot(grads[k], [K[r][i] for r in range(d)]) for i in range(d)] != R[k]:
                raise OracleInconsistent("the residual probes at the extra point disagree with K learned from the "
                                         "others: the black box is not a one-layer Transformer with a residual")
    return K


def _outside(probes, pts, form: FunctionForm, K) -> list:
    """The pairs whose points ``p ± t·Ku`` leave ``p``'s region with this ``K``; their scale is
    lowered to fit (so asking them again is inside if ``K`` is right)."""
    out = []
    for pr in probes:
        p = pts[pr.k]
        v = _matvec(K, pr.u)
        home = _region(form, p)
        if all(_region(form, [x + s * pr.t * y for x, y in zip(p, v)]) == home for s in (1, -1)):
            continue
        bound = min((x for x in (_margin(form, p, v), _margin(form, p, [-y for y in v])) if x is not None),
                    default=None)
        pr.t = min(pr.t / 2, _pow2_below(bound, pr.t))
        out.append(pr)
    return out


def _plan(ask, transcript, replay, d: int, arith, *, m, seed: int, retries: int, max_units: int, residual: bool):
    """The whole learner without its verification queries: ``(model, form, orientation, paths, plan, ffn queries)``."""
    form, orientation, ffn, paths, sighting = _extract(ask, transcript, replay, d, m=m, seed=seed, retries=retries,
                                                       max_units=max_units)
    n_ffn = len(transcript())
    rng = np.random.default_rng([seed, 1])
    plan = _attention(ask, form, arith, d, rng, residual)
    if residual:
        model = _residual_model(plan.W, plan.c, plan.K, ffn)
    else:
        model = Transformer(plan.W, ffn.A, ffn.w, c=plan.c, a=ffn.a, b=ffn.b)
    return model, form, orientation, paths, plan, n_ffn, sighting


def _standing_all(m, residual: bool, seen: bool = False) -> tuple:
    """The FFN part's assumptions ("no hidden units" unless its check line proved every unit) and, with the
    residual, that every pair stays in its regions."""
    return _standing(m, seen) + ((RESIDUAL_REGIONS,) if residual else ())


def learn_transformer_biased(oracle: Oracle, *, m: int | None = None, residual: bool = False, seed=None,
                             checks: int = DEFAULT_CHECKS, check_seed=None, retries: int = 3,
                             max_units: int = 4096, mode: str | None = None) -> LearnResult:
    """Learn a one-layer Transformer with biases (and optionally a residual) exactly.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle of the block.
    m : int, optional
        An upper bound on the FFN's hidden units (stated).
    residual : bool
        Whether the block has the residual ``x_N + h(X)`` (a stated class: a block of the other
        kind fails the checks).
    seed : int, optional
        Seed of the FFN's search line and of the probe points (fresh when omitted; reported).
    checks, check_seed, retries, max_units :
        As for :func:`~exact.learn.learn_ffn_biased`.
    mode : {None, "certified", "float"}
        ``"float"`` (the default for an approximate oracle) reads float answers: the FFN by the float
        plan, then the same logits with first-order estimates (:func:`_learn_float`; with the residual,
        :func:`~exact.learn.transformer_residual_float.learn_residual_float`, which reads ``K`` too).

    Returns
    -------
    LearnResult
        ``model`` a :class:`~exact.transformer.Transformer` whose canonical form ``(W, c, g₁, K)``
        is what is exact.

    Examples
    --------
    >>> from exact import ExactOracle
    >>> T = Transformer([[1, "1/2"], [0, -1]], [[1, 1], [2, -1], [0, 1]], [1, "-1/2", 2], c=[1, 0], a=[0, 1, -1], b=3)
    >>> r = learn_transformer_biased(ExactOracle(T), m=3, seed=0)
    >>> r.model.canonical() == T.canonical(), r.exact
    (True, True)
    >>> r.details["attention_queries"]  # d(d + 1)
    6
    """
    d = oracle_dimension(oracle)
    check_options(m=m, seed=seed, retries=retries, max_units=max_units, interior=False)
    if not isinstance(residual, bool):
        raise InvalidArgument(f"residual: expected True or False, got {residual!r}")
    if mode not in (None, "certified", "float"):
        raise InvalidArgument(f"mode: expected 'certified' or 'float', got {mode!r}")
    if seed is None:
        seed = secrets.randbits(63)
    if mode == "float" or (mode is None and not oracle.exact):
        if residual:
            return learn_residual_float(oracle, d, spec=SPEC, m=m, seed=seed, check_seed=check_seed,
                                        retries=min(retries, 2), max_units=max_units)
        return _learn_float(oracle, d, m=m, seed=seed, check_seed=check_seed, retries=min(retries, 2),
                            max_units=max_units)
    if not oracle.exact:
        raise InvalidArgument("oracle: the exact Transformer learner reads exact answers; this oracle is approximate "
                              "(learn it with mode='float')")
    run = Run(SPEC, oracle, mode="certified", checks=checks, check_seed=check_seed)
    with run:
        model, form, orientation, paths, plan, n_ffn, sighting = _plan(
            run.ask, lambda: run.transcript, run.replay, d, run.arith, m=m, seed=seed, retries=retries,
            max_units=max_units, residual=residual)
        details = TransformerBiasedDetails(
            function_form=form, unit_forms=orientation.solutions, identifiable=False,
            orientations=len(orientation.solutions),
            unit_reason=(orientation.reason or "one orientation found") + "; the block's units are not claimed "
                        "identified (the canonical form is the function g₁)",
            hyperplanes=len(form.normals), proved_hyperplanes=sighting.proved, units_seen=sighting.seen,
            sighting=sighting.reason, paths=paths, seed=seed,
            ffn_queries=n_ffn, attention_queries=plan.queries, residual=residual, rescaled=plan.rescaled,
            c=plan.c, K=plan.K)
        conditions = {"seed": seed, "retries": retries, "residual": residual, **({"m": m} if m is not None else {})}
        return run.finish(model, conditions=conditions, details=details,
                          standing=_standing_all(m, residual, sighting.seen))


def _learn_float(oracle, d: int, *, m, seed: int, check_seed, retries: int, max_units: int) -> LearnResult:
    """Float answers, no residual: the FFN with biases by the float plan; then at d + 1 probe points
    (chosen on the learned form, with margins) ``g₁(p)``, ``g₁(p + t·u)`` and ``T([p + t·u; p])`` are
    asked, and ``ℓ = σ⁻¹((T − g₁(p))/(g₁(p + tu) − g₁(p)))`` carries its first-order error to
    ``uᵀ(Wp + c) = ℓ/t`` and, through the exact inverses of the directions and the points, to W and c."""
    from .ffn_float import _asker, check_block, float_extract, float_standing

    if check_seed is None:
        check_seed = secrets.randbits(63)
    run = Run(SPEC, oracle, mode="float", certify=False, checks=0)
    with run:
        ask1 = _asker(run)
        fform, ffn_details = float_extract(ask1, d, m=m, seed=seed, check_seed=check_seed, checks=8,
                                           retries=retries, max_units=max_units)
        n_ffn = oracle.count - run.start
        form = fform.to_function_form()  # the learned planes, for choosing points and scales (with margins)
        pts, grads, _ = _points(form, np.random.default_rng([seed, 1]), False)
        probes = []
        for k, (p, G) in enumerate(zip(pts, grads)):
            for u in _steep_basis(G):
                cap = Fraction(1, 1 + int(max(abs(x) for x in p)))
                probes.append(_Probe(k, u, _pow2_below(_margin(form, p, u), cap) / 4))  # a quarter: the planes are estimates
        ends = np.array([[float(x) for x in p] for p in pts] +
                        [[float(x + pr.t * y) for x, y in zip(pts[pr.k], pr.u)] for pr in probes])
        g, ge = ask1(ends)
        answers = run.ask([pr.seq(pts[pr.k]) for pr in probes])
        ys, es = [], []
        for i, (pr, a) in enumerate(zip(probes, answers)):
            base, slope = g[pr.k], g[d + 1 + i] - g[pr.k]
            e_base, e_slope = ge[pr.k], ge[d + 1 + i] + ge[pr.k]
            T = float(a)
            e_T = float(oracle.error_bound(a)) + (abs(T) * 2.0**-52 if oracle.exact else 0.0)  # an exact answer, rounded
            if not abs(slope) > 8 * e_slope:
                raise PrecisionInsufficient("a probe segment's slope is below the float answers' resolution")
            alpha = (T - base) / slope
            e_alpha = (e_T + e_base + abs(alpha) * e_slope) / abs(slope) * (1 + 1e-9)
            y, e_y = logit_interval(alpha, e_alpha, float(pr.t), "a probe's answer")
            ys.append(y)
            es.append(e_y)
        Z, Ze = [], []
        for k in range(d + 1):
            idx = [i for i, pr in enumerate(probes) if pr.k == k]
            Uinv = np.array([[float(x) for x in r] for r in QMatrix.from_rows([probes[i].u for i in idx]).inv().rows()])
            yk, ek = np.array([ys[i] for i in idx]), np.array([es[i] for i in idx])
            Z.append(Uinv @ yk)
            Ze.append(np.abs(Uinv) @ ek)
        Binv = np.array([[float(x) for x in r] for r in QMatrix.from_rows([p + [Fraction(1)] for p in pts]).inv().rows()])
        Wc, Wce = Binv @ np.array(Z), np.abs(Binv) @ np.array(Ze)  # (d + 1) × d: [Wᵀ; cᵀ]
        W, c = Wc[:d].T, Wc[d]
        W_est = float(max(Wce.max(), 0.0)) * (1 + 1e-6) + 1e-300
        net = fform.network()
        model = Transformer([[Fraction(float(x)) for x in r] for r in W], net.A, net.w,
                            c=[Fraction(float(x)) for x in c], a=net.a, b=net.b)
        check_block(run, model, fform, W_est, np.random.default_rng([check_seed, 7]))
        details = TransformerBiasedFloatDetails(form=fform, ffn=ffn_details, ffn_queries=n_ffn,
                                                attention_queries=oracle.count - run.start - n_ffn,
                                                W_estimate=W_est, W_errors=Wce[:d].T.copy(), c_errors=Wce[d].copy())
        standing = float_standing(m, ffn_details.kinks) + (
            "each probe segment [p, p + t·u] lies inside one linear region of the one-token function (chosen on the "
            "learned hyperplanes, a quarter of the room to the nearest)",)
        return run.finish(model, conditions={"seed": seed, **({"m": m} if m is not None else {})}, details=details,
                          error_estimate=max(W_est, fform.error_estimate), standing=standing)


@dataclass(frozen=True)
class TransformerBiasedDetails(FFNDetails):
    """The FFN part's details, the queries of each part, the residual flag, the probe pairs asked
    again (closer in, or along another direction), and the learned ``c`` and ``K``."""

    ffn_queries: int
    attention_queries: int
    residual: bool
    rescaled: int
    c: tuple
    K: tuple | None

    def model_rows(self, result) -> list:
        rows = ["W ="] + ["  [" + ", ".join(format_rational(x) for x in row) + "]" for row in result.model.W]
        rows.append("c = [" + ", ".join(format_rational(x) for x in self.c) + "]")
        if self.K is not None:
            rows += ["K = (I + V)⁻¹V ="] + ["  [" + ", ".join(format_rational(x) for x in row) + "]" for row in self.K]
        return rows

    def _ffn(self, model):
        return model.ffn


def _count_text(result) -> str:
    det = result.details
    if isinstance(det, TransformerBiasedFloatDetails):
        return (f"{det.ffn_queries} for the FFN + {det.attention_queries} for the attention (g₁ at the probe points "
                "and segment ends, one logit each; float answers, no stated count)")
    d = result.model.d
    base = attention_query_count(d, det["residual"])
    return (f"{det['ffn_queries']} for the FFN + {det['attention_queries']} for the attention "
            f"({'2' if det['residual'] else ''}d(d + 1) = {base}, {det['rescaled']} pairs asked again) = "
            f"{det['ffn_queries'] + det['attention_queries']}, verification apart")


def _check_certificate(model, transcript, conditions) -> registry.Rederived:
    """Re-run the learner on the certified block with the recorded seed: its queries must be the
    transcript's and the block it finds the certified one."""
    from ..arith import get_arithmetic
    from ..certify import failed_entries
    from ..oracles import ExactOracle

    residual = conditions.get("residual")
    standing = _standing_all(conditions.get("m"), bool(residual))
    if conditions.get("seed") is None or not isinstance(residual, bool):
        return registry.Rederived("the certificate must record the learner's seed and residual flag (conditions)",
                                  standing)
    if model.residual != residual:
        return registry.Rederived("the certified block's residual flag is not the one the learner ran with", standing)
    box = ExactOracle(model)
    try:
        found, *_, sighting = _plan(box.query_batch, lambda: box.transcript, lambda mdl, tr: failed_entries(mdl, tr),
                                    model.d, get_arithmetic("certified", box), m=conditions.get("m"),
                                    seed=conditions["seed"], retries=conditions.get("retries", 3), max_units=1 << 16,
                                    residual=residual)
    except (ExactAttentionError, ArithmeticError) as e:
        return registry.Rederived(f"re-running the learner on the certified block fails: {type(e).__name__}: {e}"[:300],
                                  standing)
    # the FFN part's sighting is the re-run's own (never read from the certificate)
    return rerun_verdict(registry, found.canonical() == model.canonical(), [q.X for q in box.transcript], transcript,
                         _standing_all(conditions.get("m"), residual, sighting.seen), "block", "block")


SPEC = (
    registry.LearnerSpec(
        name="transformer-biased",
        summary="one-layer Transformer with biases (and a residual): the FFN with biases exactly, then the attention "
                "read through it on segments inside its linear regions",
        model_kind="transformer",
        modes=("certified", "float"),
        learn=learn_transformer_biased,
        query_count=lambda d, m=None, **conditions: None,
        count_formula="Q_FFN-biased(d, m) + d(d + 1), or + 2d(d + 1) with the residual",
        count_text=_count_text,
        conditions={**{k: v for k, v in FFN_CONDITIONS.items() if k != "interior"}, "residual": lambda x: isinstance(x, bool)},
        check_certificate=_check_certificate,
        standing=lambda conditions: _standing_all(conditions.get("m"), bool(conditions.get("residual"))),
        scope=lambda conditions: "among one-layer Transformers with biases" + (
            " and a residual" if conditions.get("residual") else " without a residual"),
        unchecked=lambda conditions: ("among one-layer Transformers with biases" + (
            " and a residual" if conditions.get("residual") else " without a residual"),),
        model_class=lambda conditions: "a one-layer Transformer with biases whose FFN's units all show on the line",
        options=(
            registry.Option("m", "int", "an upper bound on the hidden units, if known", minimum=0),
            registry.Option("residual", "flag", "the block has the residual T = wᵀReLU(A(x_N + h(X)) + a) + b"),
            registry.Option("seed", "int", "seed of the FFN's search line and the probe points (default: fresh, "
                                           "reported)", minimum=0),
        ),
        command="transformer",
        method="biased",
        switch="biases",
        rederive_in_run=False,
    )
)
