"""A one-layer Transformer with biases **and a residual** from float answers, with estimates
(docs/ffn.md, "The one-layer Transformer from float answers").

The block is ``T(X) = g₁(x_N + K(h̄ − x_N))`` with ``K = (I + V)⁻¹V`` and ``h̄ = Σ α_i x_i``
(:mod:`exact.learn.transformer_biased`).  From float answers:

1. **The FFN** ``g₁ = T([x])`` by the float plan (:func:`~exact.learn.ffn_float.float_extract`).
2. **Points** ``p_0..p_d`` chosen on the learned form (affinely independent, off every learned
   plane, gradients spanning ``ℝ^d``), and ``g₁(p_k)`` asked.
3. **Pairs** ``[p ± t·e_i; p]``: inside one region of gradient ``G``, ``T₊ − T₋ = κ = t·GᵀKe_i`` and
   ``α = σ(ℓ) = (T₊ − g₁(p))/κ``.  ``K`` from ``G_kᵀK = (κ_{k,i}/t_i)_i`` at ``d`` points whose
   gradients are independent, the extra point's rows checked within their estimates; every pair
   whose points ``p ± t·Ke_i`` the learned ``K`` does not keep a quarter of the room inside its
   region is asked again closer in (at most :data:`ROUNDS` rounds).
4. **W and c** from the logits ``ℓ/t`` as without the residual.
5. **Estimates** to first order: the answers' declared errors and the form's gradient errors
   through ``κ``, ``K``, ``α``, ``ℓ`` and the exact inverses; **checks**: the extra point's rows,
   and six random sequences held to the error the estimates imply
   (:func:`~exact.learn.ffn_float.check_block`, with ``K`` and its error).

What it rests on is stated: the float FFN's assumptions, and that each pair's points lie in its
probe point's region (the learned ``K`` keeps them inside by a quarter of the room, which is
decided on the learned planes, not proved).
"""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..errors import NotIdentifiable, OracleInconsistent, PrecisionInsufficient
from ..linalg import QMatrix
from ..sequences import Sequence
from .details import Comparison, Details
from .driver import Run
from .result import LearnResult
from .transformer_points import _points, _residual_model, _steep_basis

__all__ = ["learn_residual_float", "logit_interval", "TransformerBiasedFloatDetails", "ROUNDS", "RESIDUAL_FLOAT_REGIONS"]

#: Rounds of asking the pairs that leave their regions again, each at a quarter of the room.
ROUNDS = 6
#: What a float residual result rests on beyond the FFN's assumptions.
RESIDUAL_FLOAT_REGIONS = ("each residual probe pair's points p ± t·Ke_i lie in the linear region of the one-token "
                          "function at p (the learned K keeps them a quarter of the room inside the learned planes)")


def _gradient(fform, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The learned form's gradient at ``p`` and its error (the form's estimates, first order)."""
    d = fform.d
    G, Ge = fform.linear[:d].copy(), fform.linear_err[:d].copy()
    if fform.kinks.size:
        s = np.sign(fform.normals @ np.append(p, 1.0))
        G = G + (fform.kinks * s) @ fform.normals[:, :d]
        Ge = Ge + np.abs(fform.kinks) @ fform.normals_err[:, :d] + fform.kinks_err @ np.abs(fform.normals[:, :d])
        Ge = Ge + 2.0**-52 * (np.abs(fform.kinks) @ np.abs(fform.normals[:, :d])) * (len(fform.kinks) + 1)
    return G, Ge


def _room(fform, p: np.ndarray, v: np.ndarray) -> float:
    """The smallest ``|s|`` at which ``p + s·v`` (either sign) meets a learned plane."""
    if not fform.kinks.size:
        return math.inf
    z = fform.normals @ np.append(p, 1.0)
    nv = fform.normals[:, :-1] @ v
    with np.errstate(divide="ignore"):
        r = np.abs(z) / np.abs(nv)
    return float(r.min())


def _pow2(x: float, cap: float) -> float:
    """The largest power of two ``<= min(x, cap)`` (``x > 0``)."""
    return 2.0 ** math.floor(math.log2(min(x, cap)))


@dataclass(frozen=True)
class TransformerBiasedFloatDetails(Details):
    """Float answers: the FFN's float form and plan, the queries of each part, and the estimates of W
    (entrywise, ``W_errors``; the largest, ``W_estimate``) and of c."""

    form: Any
    ffn: Any
    ffn_queries: int
    attention_queries: int
    W_estimate: float
    W_errors: Any
    c_errors: Any
    K: Any = None  # with the residual: K = (I + V)⁻¹V in float64, its largest and entrywise estimates
    K_estimate: float = 0.0
    K_errors: Any = None

    def model_rows(self, result) -> list:
        from .ffn_float import float_form_rows

        rows = ["W ="] + ["  [" + ", ".join(f"{float(x):.17g}" for x in row) + "]" for row in result.model.W] + \
            ["c = [" + ", ".join(f"{float(x):.17g}" for x in result.model.c) + "]"]
        if self.K is not None:
            rows += ["K = (I + V)⁻¹V ="] + ["  [" + ", ".join(f"{float(x):.17g}" for x in row) + "]" for row in self.K]
        return rows + float_form_rows(self.form)

    def compare(self, result, truth) -> Comparison:
        from .ffn_float import compare_forms

        cf = truth.canonical()
        c_true = cf.c if cf.c is not None else (0,) * truth.d
        W_err = max(abs(float(a) - float(b)) for ra, rb in zip(result.model.W, cf.W) for a, b in zip(ra, rb))
        c_err = max(abs(float(a) - float(b)) for a, b in zip(result.model.c, c_true))
        extra: tuple = (("W", W_err, self.W_estimate), ("c", c_err, self.W_estimate))
        if self.K is not None:
            if cf.K is None:
                K_err = math.inf  # a residual result for a block without one
            else:
                K_err = max(abs(float(a) - float(b)) for ra, rb in zip(self.K, cf.K) for a, b in zip(ra, rb))
            extra += (("K", K_err, self.K_estimate),)
        return compare_forms(self.form, cf.function_form, extra)

    def rows(self, result) -> list:
        out = [("function", f"the FFN from float answers: {self.ffn.kinks} hyperplanes, largest parameter estimate "
                            f"{self.form.error_estimate:.3g}"),
               ("attention", f"W and c from {self.attention_queries} queries, largest estimate {self.W_estimate:.3g}")]
        if self.K is not None:
            out.append(("residual", f"K = (I + V)⁻¹V from the probe pairs, largest estimate {self.K_estimate:.3g}"))
        return out


def learn_residual_float(oracle, d: int, *, spec, m, seed: int, check_seed, retries: int,
                         max_units: int) -> LearnResult:
    """The float residual plan (module docstring); ``spec`` is the learner's registry entry."""
    from .ffn_float import _asker, check_block, float_extract, float_standing

    if check_seed is None:
        check_seed = secrets.randbits(63)
    run = Run(spec, oracle, mode="float", certify=False, checks=0)
    with run:
        ask1 = _asker(run)
        fform, ffn_details = float_extract(ask1, d, m=m, seed=seed, check_seed=check_seed, checks=8,
                                           retries=retries, max_units=max_units)
        n_ffn = oracle.count - run.start
        pts_q, pts, grads = _spanning_points(fform, seed, d)
        g, ge = ask1(pts)
        # t per pair: a quarter of the room along ±e_i (K unknown yet), at most 1/(1 + max|p|)
        t = np.array([[_pow2(_room(fform, p, np.eye(d)[i]) / 4, 1.0 / (1 + float(np.abs(p).max())))
                       for i in range(d)] for p in pts])
        Tp, Tm, Te_p, Te_m = (np.zeros((d + 1, d)) for _ in range(4))
        pending = [(k, i) for k in range(d + 1) for i in range(d)]
        K = Ke = None
        for round_ in range(ROUNDS):
            seqs = []
            for k, i in pending:
                for sign in (1, -1):
                    top = pts[k].copy()
                    top[i] += sign * t[k, i]
                    seqs.append(Sequence._floats(np.vstack([top, pts[k]])))
            answers = run.ask(seqs)
            for (k, i), a, b in zip(pending, answers[::2], answers[1::2]):
                Tp[k, i], Tm[k, i] = float(a), float(b)
                Te_p[k, i] = float(oracle.error_bound(a)) + abs(float(a)) * 2.0**-52
                Te_m[k, i] = float(oracle.error_bound(b)) + abs(float(b)) * 2.0**-52
            kap, kap_e = Tp - Tm, Te_p + Te_m + 2.0**-52 * np.abs(Tp - Tm)
            try:
                K, Ke = _learn_K(grads, kap / t, kap_e / t, d)
            except OracleInconsistent:
                if round_ == ROUNDS - 1:
                    raise
                # a pair that crossed a kink (K unknown, its t was read along ±e_i): every pair closer in
                t /= 16
                pending = [(k, i) for k in range(d + 1) for i in range(d)]
                continue
            pending = []
            for k in range(d + 1):
                for i in range(d):
                    v = K[:, i]
                    room = _room(fform, pts[k], v) if np.abs(v).max() > 0 else math.inf
                    if not t[k, i] <= room / 4:
                        t[k, i] = _pow2(room / 4, t[k, i] / 2) if room > 0 else t[k, i] / 16
                        pending.append((k, i))
            if not pending:
                break
        else:
            raise OracleInconsistent(f"{len(pending)} residual probe pairs keep leaving their regions with the learned K "
                                     f"after {ROUNDS} rounds: the black box is not a one-layer Transformer with a residual "
                                     "(with these biases), or the float answers do not resolve it")
        assert K is not None and Ke is not None
        # the logits along directions u with |r_k·u| >= max|r_k|/2, r_k = G_kᵀK (the pairs' own slopes κ/t):
        # e_i where that holds (its pair is asked already), e_i ± e_j where it does not (one new pair)
        Z, Ze = [], []
        for k in range(d + 1):
            dirs = _steep_basis([Fraction(float(x)) for x in kap[k] / t[k]])
            U = np.array([[float(x) for x in u] for u in dirs])
            ys, es = np.zeros(d), np.zeros(d)
            for i, u in enumerate(U):
                if np.count_nonzero(u) == 1:
                    a, b, ea, eb, tt = Tp[k, i], Tm[k, i], Te_p[k, i], Te_m[k, i], t[k, i]
                else:
                    v = K @ u
                    tt = _pow2(min(_room(fform, pts[k], v), _room(fform, pts[k], u)) / 4,
                               1.0 / (1 + float(np.abs(pts[k]).max())))
                    got = run.ask([Sequence._floats(np.vstack([pts[k] + sgn * tt * u, pts[k]])) for sgn in (1, -1)])
                    a, b = float(got[0]), float(got[1])
                    ea = float(oracle.error_bound(got[0])) + abs(a) * 2.0**-52
                    eb = float(oracle.error_bound(got[1])) + abs(b) * 2.0**-52
                ys[i], es[i] = _logit(a, b, ea, eb, g[k], ge[k], tt, k)
            Uinv = np.array([[float(x) for x in r] for r in QMatrix.from_rows(dirs).inv().rows()])
            Z.append(Uinv @ ys)
            Ze.append(np.abs(Uinv) @ es)
        ys, es = np.array(Z), np.array(Ze)
        Binv = np.array([[float(x) for x in r] for r in
                         QMatrix.from_rows([list(p) + [Fraction(1)] for p in pts_q]).inv().rows()])
        Wc, Wce = Binv @ ys, np.abs(Binv) @ es  # (d + 1) × d: [Wᵀ; cᵀ] (the directions are e_i)
        W, c = Wc[:d].T, Wc[d]
        W_est = float(max(Wce.max(), 0.0)) * (1 + 1e-6) + 1e-300
        K_est = float(max(Ke.max(), 0.0)) * (1 + 1e-6) + 1e-300
        if (np.abs(K - np.eye(d)) <= 4 * Ke + 2.0**-40).all():
            raise OracleInconsistent("the learned K is I within its estimate: the block has no residual (T(X) = g₁(h̄)); "
                                     "learn it with residual=False")
        net = fform.network()
        q = Fraction

        def exact(M):
            return [[q(float(x)) for x in r] for r in M]

        try:
            model = _residual_model(exact(W), [q(float(x)) for x in c], exact(K), net)
        except OracleInconsistent as e:
            raise OracleInconsistent(f"the learned K from float answers: {e}") from None
        check_block(run, model, fform, W_est, np.random.default_rng([check_seed, 7]), K=K, K_err=K_est)
        details = TransformerBiasedFloatDetails(form=fform, ffn=ffn_details, ffn_queries=n_ffn,
                                                attention_queries=oracle.count - run.start - n_ffn,
                                                W_estimate=W_est, W_errors=Wce[:d].T.copy(), c_errors=Wce[d].copy(),
                                                K=K, K_estimate=K_est, K_errors=Ke)
        standing = float_standing(m, ffn_details.kinks) + (RESIDUAL_FLOAT_REGIONS,)
        return run.finish(model, conditions={"seed": seed, "residual": True, **({"m": m} if m is not None else {})},
                          details=details, error_estimate=max(W_est, K_est, fform.error_estimate), standing=standing)


def _logit(a: float, b: float, ea: float, eb: float, g: float, ge: float, t: float, k: int) -> tuple[float, float]:
    """``ℓ/t`` and its error from a pair's answers ``T₊ = a``, ``T₋ = b`` and ``g₁(p) = g``: ``κ = a − b``,
    ``α = (a − g)/κ``, ``ℓ = σ⁻¹(α)``."""
    kp, ke = a - b, ea + eb + 2.0**-52 * abs(a - b)
    if not abs(kp) > 8 * ke:
        raise NotIdentifiable(f"at probe point {k} the attention barely moves the FFN (|T₊ − T₋| = {abs(kp):.3g} within "
                              f"8× its error {ke:.2g}) along every direction tried: no logit there")
    alpha = (a - g) / kp
    e_alpha = (ea + ge + abs(alpha) * ke) / abs(kp) * (1 + 1e-9)
    return logit_interval(alpha, e_alpha, t, "a residual probe's answers")


def logit_interval(alpha: float, e_alpha: float, t: float, what: str) -> tuple[float, float]:
    """``σ⁻¹(α)/t`` and its error for ``α`` known within ``e_alpha``: the logit's distance to the ends of
    ``[σ⁻¹(α − e), σ⁻¹(α + e)]`` (σ⁻¹ is increasing, so this holds however large ``e`` is against ``α``).

    Raises
    ------
    PrecisionInsufficient
        ``α ± e`` reaches 0 or 1 while ``α`` lies inside: a score too large for the answers to resolve.
    OracleInconsistent
        ``α`` itself lies outside (0, 1) beyond its error.
    """

    def logit(x: float) -> float:
        return math.log(x) - math.log1p(-x)

    if not (0 < alpha - e_alpha and alpha + e_alpha < 1):
        if -e_alpha < alpha < 1 + e_alpha and 0 < alpha < 1:
            raise PrecisionInsufficient(
                f"{what} imply a softmax weight {alpha:.3g} (± {e_alpha:.2g}) too near 0 or 1 for the float answers "
                "to resolve its logit (a score of that size saturates the softmax): smaller scores, or exact answers")
        raise OracleInconsistent(
            f"{what} imply a softmax weight {alpha:.3g} (± {e_alpha:.2g}) not inside (0, 1): the black box is not a "
            "one-layer Transformer of this class, or the float answers do not resolve it")
    ell = logit(alpha)
    err = max(ell - logit(alpha - e_alpha), logit(alpha + e_alpha) - ell)
    return ell / t, err * (1 + 1e-9) / abs(t) + 2.0**-50 * abs(ell / t)


#: Point sets drawn for the residual's probes before its gradients are declared not to span.
POINT_SETS = 16


def _spanning_points(fform, seed: int, d: int) -> tuple:
    """``d + 1`` probe points (exact and float), each farther from every learned plane than 2^10 times the
    plane's uncertainty there, whose learned gradients span ``ℝ^d`` by more than their errors (their
    smallest singular value, and each one's largest entry, above 2^20 times the largest gradient
    error), and the gradients."""
    form = fform.to_function_form()
    best = 0.0
    for attempt in range(POINT_SETS):
        pts_q, _, _ = _points(form, np.random.default_rng([seed, 1, attempt] if attempt else [seed, 1]), True)
        pts = np.array([[float(x) for x in p] for p in pts_q])
        if not all(_off_planes(fform, p) for p in pts):
            continue  # a point within its rows' uncertainty of a learned plane: its region is not known
        grads = [_gradient(fform, p) for p in pts]
        G = np.array([gk for gk, _ in grads])
        sv = float(np.linalg.svd(G, compute_uv=False).min())
        err = float(max(float(e.max()) for _, e in grads))
        best = max(best, sv)
        floor = 2.0**20 * max(err, 2.0**-52 * float(np.abs(G).max()))
        # and every point's own gradient well above its error (a flat region's learned gradient is noise)
        if sv > floor and all(float(np.abs(gk).max()) > floor for gk, _ in grads):
            return pts_q, pts, grads
    raise NotIdentifiable(f"in {POINT_SETS} draws of probe points, none clear of the learned planes with the one-token "
                          f"function's gradients spanning ℝ^d by more than their errors (best smallest singular value "
                          f"{best:.2g}): the residual's K is seen only along the FFN's gradients")


def _off_planes(fform, p: np.ndarray) -> bool:
    """``p`` lies farther from every learned plane than 2^10 times the plane's uncertainty there."""
    if not fform.kinks.size:
        return True
    z = np.abs(fform.normals @ np.append(p, 1.0))
    unc = fform.normals_err[:, :-1] @ np.abs(p) + fform.normals_err[:, -1] + 2.0**-52 * (np.abs(fform.normals[:, :-1])
                                                                                          @ np.abs(p))
    return bool((z > 2.0**10 * unc + 1e-300).all())


def _independent(G: np.ndarray, d: int) -> list[int]:
    """The first ``d`` rows of ``G`` that are independent (greedy), as :func:`_learn_K` chooses them."""
    chosen: list[int] = []
    for k in range(len(G)):
        trial = chosen + [k]
        if np.linalg.matrix_rank(G[trial]) == len(trial):
            chosen = trial
        if len(chosen) == d:
            break
    return chosen


def _learn_K(grads, R: np.ndarray, Re: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``K`` from ``G_kᵀK = R_k`` at the ``d`` points whose gradients are best conditioned (the first ``d``
    independent ones), its first-order error, and the extra point's rows checked within their estimates."""
    G = np.array([gk for gk, _ in grads])
    Gerr = np.array([e for _, e in grads])
    chosen = _independent(G, d)
    if len(chosen) < d:
        raise NotIdentifiable("the probe points' gradients do not span ℝ^d: the residual's K is not seen")
    Ginv = np.linalg.inv(G[chosen])
    K = Ginv @ R[chosen]
    # first order: δK = G⁻¹(δR − δG·K); the inverse's own rounding relative to its condition number
    cond = float(np.abs(Ginv).sum(axis=1).max() * np.abs(G[chosen]).sum(axis=1).max())
    Ke = np.abs(Ginv) @ (Re[chosen] + Gerr[chosen] @ np.abs(K)) + cond * 2.0**-50 * np.abs(K).max()
    for k in range(len(grads)):
        if k in chosen:
            continue
        dev = np.abs(G[k] @ K - R[k])
        allowed = Re[k] + Gerr[k] @ np.abs(K) + np.abs(G[k]) @ Ke
        if (dev > 4 * allowed + 1e-300).any():
            raise OracleInconsistent("the residual probes at the extra point disagree with K learned from the others "
                                     "beyond their estimates: the black box is not a one-layer Transformer with a residual")
    return K, Ke
