"""The exact sketch learner's plan, run on float answers: low-rank heads from real modules.

The plan is :mod:`exact.learn.low_rank`'s, with ``2rd − r² + d`` queries: ``v`` from ``d``
one-token queries; a column sketch ``T = U W B`` (``d·r`` queries ``[βb_c + γu_k; βb_c]``);
``r`` rows ``K`` of ``T`` and ``r`` rows ``J`` of ``B`` chosen for conditioning (greedy
pivoted Gram–Schmidt, in float64); the row sketch ``Z = U_K W`` measured off ``J`` (``r(d − r)``
queries); then ``Z_J = (C − Z_{J̄} B_{J̄}) B_J⁻¹`` and ``W = Y C⁻¹ Z`` with ``Y = U⁻¹T`` and the
core ``C = T[K, :]``.  In float64 the choices that the exact learner makes by exact rank are
made by conditioning, and the error is a first-order estimate:

    ‖δW‖_F <= ‖U⁻¹‖₂‖δT‖_F‖C⁻¹Z‖₂ + ‖YC⁻¹‖₂‖δT‖_F‖C⁻¹Z‖₂ + ‖YC⁻¹‖₂‖δZ‖_F,
    ‖δZ‖_F <= ‖δZ_{J̄}‖_F + (‖δT‖_F + ‖δZ_{J̄}‖_F‖B_{J̄}‖₂)‖B_J⁻¹‖₂,

with ``δT``, ``δZ_{J̄}`` the logits' first-order errors (the core's condition numbers enter
through ``‖C⁻¹Z‖`` and ``‖YC⁻¹‖``).  The estimate is refused when it is not small against
``‖W‖``: a first-order estimate says nothing there.  Probe scales are adaptive, as for
Theorem 4.1 (a probe whose logit lies beyond ±3 is asked again at a quarter of its scale).

Without ``rank`` the sketch grows a column at a time, and the rank is where the singular
values of ``Y`` drop below the noise with a gap: ``σ_{r+1} <= ‖U⁻¹‖₂‖δT‖_F`` and
``σ_r >= 1000·σ_{r+1}`` (small singular values of ``W`` itself, within the noise bound but
without such a gap, keep the sketch growing); the gap ``σ_r/σ_{r+1}`` is reported, and the
estimate adds the part of ``W`` the left-out singular value could hold.  The extra column is kept (``B`` has ``r + 1``
columns, so ``J`` has ``r + 1`` rows), which makes the count ``2rd − r² + 2d − r``, as for
the exact learner.
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..arith import FloatArithmetic, Measurement
from ..errors import InvalidArgument, PrecisionInsufficient
from ..models import SingleHead
from ..sequences import Sequence
from ._common import ask_rescaled, read_v
from .details import Details
from .driver import Run
from .single_head import ProbePlan

__all__ = ["learn_low_rank_float", "LowRankFloatDetails"]

#: A first-order estimate above this fraction of ‖W‖_F is refused: second-order terms may dominate.
TRUST = 1e-3
#: Without a rank, the sketch stops growing at a column whose singular value is within the noise
#: and at least this factor below the one before.
GAP = 1e3
#: Beyond this many entries of W (d > 256) the result is kept as its two factors, ``W = (YC⁻¹)·Z``:
#: forming d² rationals from floats costs more than the whole plan's own work.
DENSE_ENTRIES = 1 << 16
_START = Fraction(1, 2)  # the first probe scale β = γ (that of |W_ij| <= 1)


def _greedy_rows(M: np.ndarray, r: int) -> list[int]:
    """``r`` rows of ``M`` chosen by pivoted Gram–Schmidt: each the row of largest residual norm."""
    R = np.array(M, dtype=float)
    out: list[int] = []
    for _ in range(r):
        norms = np.linalg.norm(R, axis=1)
        norms[out] = -1.0
        i = int(np.argmax(norms))
        if norms[i] <= 0:
            break
        out.append(i)
        q = R[i] / norms[i]
        R = R - np.outer(R @ q, q)
    return sorted(out)


class _Shear:
    """The probe basis ``U = I + σ e_pᵀ`` (``u_k = e_k + σ_k e_p``, ``σ_p = 0``), applied without forming it:
    ``U⁻¹ = I − σ e_pᵀ``, and ``‖U‖₂ = ‖U⁻¹‖₂ = (|σ| + √(|σ|² + 4))/2`` (on the plane of ``e_p`` and
    ``σ ⟂ e_p`` it is the shear ``[[1, 0], [|σ|, 1]]``; elsewhere the identity).

    >>> from exact.learn.single_head import ProbePlan
    >>> sh = _Shear(ProbePlan.choose([4.0, 0.0, 1.0]))
    >>> U = np.eye(3) + np.outer(sh.sigma, np.eye(3)[sh.pivot])
    >>> bool(np.allclose(sh.inv(U), np.eye(3))), bool(np.isclose(sh.norm, np.linalg.norm(U, 2)))
    (True, True)
    """

    def __init__(self, plan: ProbePlan):
        self.pivot = plan.pivot
        self.sigma = np.array([float(x) for x in plan.shifts])
        a = float(np.linalg.norm(self.sigma))
        self.norm = (a + math.sqrt(a * a + 4)) / 2

    def inv(self, M: np.ndarray) -> np.ndarray:
        """``U⁻¹ M``."""
        return M - np.outer(self.sigma, M[self.pivot])

    def inv_abs(self, M: np.ndarray) -> np.ndarray:
        """``|U⁻¹| M`` for ``M >= 0`` entrywise."""
        return M + np.outer(np.abs(self.sigma), M[self.pivot])


@dataclass(frozen=True)
class LowRankFloatDetails(Details):
    """The float plan: the rank (given or found, with the singular-value gap), the sketch seed, the
    core's condition number, and how many probes were asked again at a smaller scale."""

    rank: int
    rank_known: bool
    seed: int
    gap: float | None
    core_condition: float
    rescaled: int
    biases: bool

    def rows(self, result) -> list:
        found = "given" if self.rank_known else f"found (σ_r/σ_r+1 = {self.gap:.3g})"
        out = [("rank", f"{self.rank}, {found}; core condition number {self.core_condition:.3g}")]
        if self.rescaled:
            out.append(("scales", f"{self.rescaled} probes re-asked at a smaller scale (their logits lay beyond ±3)"))
        return out


class _Probes:
    """Logit probes ``[βb + γu_k; βb]`` with per-probe scales, asked with adaptive re-scaling.

    With biases, ``bias = (b, b_err)`` enters every base, and once :meth:`shifts` has measured
    ``u_kᵀc`` (the probes ``[γu_k; 0]``), each logit probe's ``t = u_kᵀWb + u_kᵀc/β`` is returned
    with that shift taken off.
    """

    def __init__(self, run: Run, plan: ProbePlan, v, v_err, bias=(0.0, 0.0)):
        if not isinstance(run.arith, FloatArithmetic):  # pragma: no cover - the caller chooses float mode
            raise InvalidArgument("learn_low_rank_float: internal error, not a float-mode run")
        self.arith: FloatArithmetic = run.arith
        self.run, self.plan, self.v, self.v_err = run, plan, v, v_err
        self.b, self.b_err = bias
        self.uc = np.zeros(plan.d)
        self.duc = np.zeros(plan.d)
        self.rescaled = 0
        self._va, self._va_err = np.array(v, dtype=float), np.array(v_err, dtype=float)
        self._bases: dict = {}
        self._deltas: dict = {}  # (k, scale) -> the offset g·u_k, its slope and the slope's error

    def shifts(self) -> tuple[np.ndarray, np.ndarray]:
        """``u_kᵀc`` for every ``k`` from ``[γu_k; 0]`` (the zero token's score is 0), and the errors."""
        d, p, sh = self.plan.d, self.plan.pivot, self.plan.shifts
        scales = [_START] * d

        def one(k: int) -> tuple:
            g = scales[k]
            row = {k: g} if not sh[k] else {k: g, p: sh[k] * g}
            s = self.v[k] + sh[k] * self.v[p]
            e = self.v_err[k] + abs(sh[k]) * self.v_err[p]
            return Sequence.sparse(d, [row, {}]), Measurement(self.b, g * s, g, self.b_err, float(g) * e)

        def again(k: int) -> tuple:
            scales[k] /= 4
            return one(k)

        seqs, meas = (list(x) for x in zip(*[one(k) for k in range(d)]))
        answers, n = ask_rescaled(self.run, seqs, meas, again)
        self.rescaled += n
        self.uc, self.duc = self.arith.logits(answers, meas)
        return self.uc, self.duc

    def _one(self, k: int, b, g: Fraction) -> tuple:
        """The probe ``[g(b + u_k); g b]`` and its measurement, for ``b`` a basis index ``j`` (``e_j``) or a
        float64 column (dyadic entries: ``g b + g u_k`` is float64 too, so the probe is what the oracle
        receives).  A column's base token is built once per scale and shared by its ``d`` probes."""
        hit = self._deltas.get((k, g))
        if hit is None:
            p, sh = self.plan.pivot, self.plan.shifts
            delta = tuple(sorted([(k, g)] + ([(p, sh[k] * g)] if sh[k] else [])))
            slope = g * (self.v[k] + sh[k] * self.v[p])
            hit = self._deltas[(k, g)] = (delta, slope, float(g) * (self.v_err[k] + abs(sh[k]) * self.v_err[p]))
        delta, slope, slope_err = hit
        if isinstance(b, int):
            top = dict(delta)
            top[b] = top.get(b, Fraction(0)) + g
            seq = Sequence._exact(self.plan.d, (tuple(sorted((j, x) for j, x in top.items() if x)), ((b, g),)))
            base = self.b + float(g) * self.v[b]
            base_err = self.b_err + float(g) * self.v_err[b]
        else:
            key = (id(b), g)
            got = self._bases.get(key)
            if got is None:
                col = b * float(g)  # g a power of two: exact
                got = self._bases[key] = (b, Sequence._floats(col[None]), float(col @ self._va),
                                          float(np.abs(col) @ self._va_err))
            _, token, dot, dot_err = got
            seq = Sequence._offset_pair(token, delta)
            base, base_err = self.b + dot, self.b_err + dot_err
        return seq, Measurement(base, slope, g * g, base_err, slope_err)

    def measure(self, pairs: list) -> tuple[np.ndarray, np.ndarray]:
        """``u_kᵀ W b`` for ``(k, b)`` pairs (``b`` a basis index or a float64 column), and each one's
        first-order error."""
        scales = [_START] * len(pairs)
        self._bases = {}
        seqs, meas = (list(x) for x in zip(*[self._one(k, b, _START) for k, b in pairs]))

        def again(i: int) -> tuple:
            scales[i] /= 2
            k, b = pairs[i]
            return self._one(k, b, scales[i])

        answers, n = ask_rescaled(self.run, seqs, meas, again)
        self._bases = {}
        self.rescaled += n
        t, dt = self.arith.logits(answers, meas)
        ks = np.array([k for k, _ in pairs])
        inv = np.array([float(1 / g) for g in scales])
        return t - self.uc[ks] * inv, dt + self.duc[ks] * inv


def _model(W: np.ndarray, left: np.ndarray, right: np.ndarray, v: list, bias_kw: dict) -> SingleHead:
    """The head of the float estimate ``W = left·right``: ``W``'s float64 entries up to :data:`DENSE_ENTRIES`,
    beyond it the two factors' (``d·r`` entries each: ``W``'s d² are never formed as rationals)."""
    from ..linalg import QMatrix

    d = W.shape[0]
    if d * d <= DENSE_ENTRIES:
        return SingleHead(W.tolist(), v, **bias_kw)
    factors = (QMatrix.from_rows(_fractions(left)), QMatrix.from_rows(_fractions(right)))
    vq = tuple(Fraction(x) for x in v)
    c = tuple(Fraction(x) for x in bias_kw["c"]) if "c" in bias_kw else None
    return SingleHead._from_factors(factors, vq, c, Fraction(bias_kw.get("b", 0.0)))


def _fractions(M: np.ndarray) -> list:
    return [[Fraction(x) for x in row] for row in M.tolist()]


def learn_low_rank_float(run: Run, *, rank: int | None, seed: int | None, biases: bool = False) -> tuple:
    """The plan above on ``run`` (a float-mode run of the low-rank learner): ``(model, estimate, details)``."""
    if not isinstance(run.arith, FloatArithmetic):  # pragma: no cover - the caller chooses float mode
        raise InvalidArgument("learn_low_rank_float: internal error, not a float-mode run")
    d = run.d
    seed = secrets.randbits(63) if seed is None else seed
    rng = np.random.default_rng(seed)
    top = 1 << 20

    def column() -> np.ndarray:  # entries n/2^20, |n| <= 2^20: float64 exactly
        return rng.integers(-top, top + 1, size=d) / top

    if biases:  # b = f([0]), then v_i = f([e_i]) − b
        first = run.ask([Sequence.sparse(d, [{}])] + [Sequence.basis(d, i) for i in range(d)])
        (b,) = run.arith.values(first[:1], ["b"])
        (b_err,) = run.arith.value_errors(["b"])
        names = [f"v[{i}]" for i in range(d)]
        v = run.arith.values(first[1:], names, offset=b)
        v_err = [e + b_err for e in run.arith.value_errors(names)]
        if all(abs(x) <= e for x, e in zip(v, v_err)):
            from ..errors import NotIdentifiable

            raise NotIdentifiable("v is zero within the oracle's accuracy: then f = b, and neither W nor c has "
                                  "an effect")
    else:
        v, v_err = read_v(run)
        b, b_err = 0.0, 0.0
    v = [float(x) for x in v]
    plan = ProbePlan.choose(v)
    shear = _Shear(plan)
    probes = _Probes(run, plan, v, v_err, (float(b), float(b_err)))
    if biases:
        uc, duc = probes.shifts()
        c_vec = shear.inv(uc[:, None])[:, 0]
        c_err = float(shear.inv_abs(duc[:, None]).max())
    cols: list = []
    t_cols: list = []
    e_cols: list = []
    gap = None
    truncated = 0.0  # the singular value left out when the rank is found

    def add(n: int) -> None:
        new = [column() for _ in range(n)]
        t, dt = probes.measure([(k, b) for b in new for k in range(d)])
        cols.extend(new)
        t_cols.extend(t.reshape(n, d))
        e_cols.extend(dt.reshape(n, d))

    if rank is not None:
        r = rank
        if r:
            add(r)
    else:
        while True:
            run.require(d, "one more sketch column")
            add(1)
            Y = shear.inv(np.array(t_cols).T)
            s = np.linalg.svd(Y, compute_uv=False)
            c = len(cols)
            noise = float(np.linalg.norm(np.array(e_cols))) * shear.norm
            # the new column adds nothing: its singular value is within the noise, and far below the
            # one before (a gap of GAP at least; small singular values of W itself have no such gap)
            if s[-1] <= noise and (c == 1 or s[-2] >= GAP * s[-1]):
                r = c - 1
                gap = float(s[-2] / max(s[-1], 1e-300)) if c > 1 else None
                truncated = float(s[-1])
                break
            if c == d:
                r, truncated = d, 0.0
                break
    bias_kw = dict(c=c_vec.tolist(), b=float(b)) if biases else {}
    bias_err = max(c_err, float(b_err)) if biases else 0.0
    if r:  # a given rank above the sketch's: the rows and columns that span it, as the exact learner does
        T0 = np.array(t_cols).T
        r = min(r, len(_greedy_rows(T0.T, r)))
    if r == 0:
        # W = 0 within the sketch: the estimate keeps v's errors and what a left-out direction could hold
        U2 = shear.norm
        Bm = np.array(cols).T if cols else np.zeros((d, 0))
        hidden = (float(np.abs(np.array(t_cols)).max()) + truncated) * U2 * (float(np.linalg.norm(np.linalg.pinv(Bm), 2))
                                                                            if cols else 0.0) if cols else 0.0
        model = SingleHead([[0] * d] * d, v, **bias_kw)
        return model, max(bias_err, max(v_err, default=0.0), hidden), dict(rank=0, rank_known=rank is not None, seed=seed, gap=gap, core_condition=1.0,
                                     rescaled=probes.rescaled, biases=biases)
    T = np.array(t_cols).T  # d × c: c = r, or r + 1 when the rank was found (the last column adds nothing)
    c = T.shape[1]
    eT = np.array(e_cols).T  # entrywise first-order errors of T
    B = np.array(cols).T  # d × c
    P = _greedy_rows(T.T, r)  # r columns of T spanning its range
    K = _greedy_rows(T[:, P], r)
    if len(P) < r or len(K) < r:  # pragma: no cover - r was cut to the greedy rank above
        raise PrecisionInsufficient("low-rank float mode: the sketch's rank fell below r while choosing rows")
    J = _greedy_rows(B, c)
    Jc = [j for j in range(d) if j not in J]
    zc, dzc = probes.measure([(k, j) for k in K for j in Jc]) if Jc else (np.zeros(0), np.zeros(0))
    Zc = zc.reshape(r, len(Jc)) if Jc else np.zeros((r, 0))
    eZc = dzc.reshape(r, len(Jc)) if Jc else np.zeros((r, 0))
    C = T[np.ix_(K, P)]
    BJ, BJc = B[J, :], B[Jc, :]
    ZJ = np.linalg.solve(BJ.T, (T[K, :] - Zc @ BJc).T).T  # Z B = T[K, :], solved for the columns J
    Z = np.zeros((r, d))
    Z[:, J], Z[:, Jc] = ZJ, Zc
    Y = shear.inv(T[:, P])
    CinvZ = np.linalg.solve(C, Z)
    YCinv = np.linalg.solve(C.T, Y.T).T
    W = Y @ CinvZ
    n2 = lambda M: float(np.linalg.norm(M, 2)) if M.size else 0.0  # noqa: E731
    # first order, entrywise (|·| of a matrix is its entries' absolute values):
    # |δZ_J| <= (|δT_K| + |δZ_J̄||B_J̄|)|B_J⁻¹|,  |δW| <= |U⁻¹||δT_P||C⁻¹Z| + |YC⁻¹||δC||C⁻¹Z| + |YC⁻¹||δZ|
    A = np.abs
    eZ = np.zeros((r, d))
    eZ[:, Jc] = eZc
    eZ[:, J] = (A(eT[K, :]) + A(eZc) @ A(BJc)) @ A(np.linalg.inv(BJ))
    eW = (shear.inv_abs(A(eT[:, P])) @ A(CinvZ) + A(YCinv) @ A(eT[np.ix_(K, P)]) @ A(CinvZ) + A(YCinv) @ eZ)
    est = float(eW.max())
    # a rank found by a gap leaves out the last singular value: W's part along it, through the sketch
    est = est + max(v_err, default=0.0) + truncated * shear.norm * n2(np.linalg.pinv(B))
    cond = float(np.linalg.cond(C))
    norm = float(np.linalg.norm(W))
    if not np.isfinite(W).all() or not np.isfinite(est) or est > TRUST * max(norm, 1e-300):
        raise PrecisionInsufficient(
            f"low-rank float mode: the first-order error estimate {est:.3g} is not small against ‖W‖_F = {norm:.3g} "
            f"(core condition number {cond:.3g}); the rank bound may be too small or the sketch ill-conditioned: "
            "give the rank, try another seed, or use learn_single_head in float mode")
    model = _model(W, YCinv, Z, v, bias_kw)
    return model, max(est, bias_err), dict(rank=r, rank_known=rank is not None, seed=seed, gap=gap,
                                           core_condition=cond, rescaled=probes.rescaled, biases=biases)
