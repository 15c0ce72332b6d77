"""Float mode of the canonical multi-head learner: the paper's plan on float answers, with error estimates.

The plan, the probes and the query count (``4Hd² − 2H + 1``) are those of
:mod:`exact.learn.multi_head`; what changes is how a block is fitted and how heads are
matched:

**The block fit.**  The samples ``y_k``, k = 0..2H, are fitted by a rational function of
type (h, h) in barycentric form (the Loewner-matrix step of the AAA algorithm): ``h + 1``
support points, the weights from the smallest singular vector of the Loewner matrix on
the other points, the poles from an ``h × h`` eigenproblem, the residues in closed form.
That is the well-conditioned interpolation: the naive scheme solves ``y_k D(k) = N(k)``
in the monomial basis, whose matrix has a condition number of about 10^18 already at
H = 4 (reported as ``monomial_condition``).  The barycentric guess is then polished by
Gauss–Newton steps on the model ``A − Σ c_h/(1 + k e^{s_h})`` itself.  The types
h = 0, 1, …, H are tried in turn; the first whose residual is within the answers' errors
must be H itself.

**Fewer heads than the bound are refused.**  With ``2H + 1`` samples of a type-(H, H)
function, a fit with h < H poles leaves ``2(H − h)`` equations of slack, and float answers
cannot tell one head from two whose scores are close: splitting a pole changes the samples
only to second order in the separation, so splits far larger than the h-head fit's first-order
estimate fit the same answers (for merged duplicate-W heads, splits of 10^-4 to 10^-1 in the
score against estimates of 10^-9).  Nor can they tell an absent head from one with a small
residue or a far pole.  So the estimate of an h-head fit, which assumes exactly h heads, does
not bound the error against the H-head models the answers also fit (three heads with scores
within 0.011 of each other fit two heads, with an estimate several hundred times below the
error).  A block whose answers some type h < H reproduces is refused.

**The error estimate** is a posteriori and first order: if ``F(θ̂) = y + ρ`` (residual
ρ) and ``y = F(θ) + η`` (answer error η), then ``θ̂ − θ ≈ J⁻¹(ρ − η)`` with ``J = ∂F/∂θ``
at θ̂, so ``|θ̂ − θ| ≲ |J⁻¹|(|ρ| + |η|)``, doubled for safety.  ``cond(J)`` is the
**intrinsic** condition number of the block — the sensitivity of the poles and residues to
the answers, whatever the scheme: about 10^8–10^10 at H = 4 and 10^13–10^17 at H = 6 for
samples at k = 0..2H.  So float64 answers give about 7 digits at H = 4 and, at H = 6,
estimates that honestly say little is resolved.  Estimates propagate through the linear
reconstruction as ``|M⁻¹|·δ`` bounds.

**Matching** accepts a pairing when the link block shows the sum within the combined
estimates; an ambiguous or missing match raises :class:`PrecisionInsufficient` (use the
certified mode on an exact oracle).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import PrecisionInsufficient
from ..multihead import MultiHead
from ..sequences import Sequence

__all__ = ["FloatFit", "fit_block_float", "float_plan", "monomial_condition"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class FloatFit:
    """A float block fit: ``A``, the poles' ``s`` and residues ``c`` (sorted by ``s``), their
    first-order error estimates, the intrinsic condition number and the residual."""

    A: float
    s: tuple
    c: tuple
    A_err: float
    s_err: tuple
    c_err: tuple
    condition: float
    monomial_condition: float


def _model(theta: np.ndarray, ks: np.ndarray, h: int) -> np.ndarray:
    s, c = theta[1 : 1 + h], theta[1 + h :]
    return theta[0] - (c[None, :] / (1 + ks[:, None] * np.exp(s)[None, :])).sum(axis=1)


def _jacobian(theta: np.ndarray, ks: np.ndarray, h: int) -> np.ndarray:
    s, c = theta[1 : 1 + h], theta[1 + h :]
    r = np.exp(s)
    den = 1 + ks[:, None] * r[None, :]
    return np.hstack([np.ones((len(ks), 1)), c[None, :] * ks[:, None] * r[None, :] / den**2, -1 / den])


def _barycentric(ks: np.ndarray, ys: np.ndarray, h: int) -> np.ndarray | None:
    """A first guess ``θ = (A, s, c)`` from the Loewner matrix, or ``None`` if it has no valid poles."""
    n = len(ks)
    if h == 0:
        return np.array([float(np.mean(ys))])
    sup = sorted({int(round(i * (n - 1) / h)) for i in range(h + 1)})
    test = [i for i in range(n) if i not in sup]
    kp, yp, kt, yt = ks[sup], ys[sup], ks[test], ys[test]
    L = (yt[:, None] - yp[None, :]) / (kt[:, None] - kp[None, :])
    w = np.linalg.svd(L)[2][-1]
    j0 = int(np.argmax(np.abs(w)))
    rest = [j for j in range(h + 1) if j != j0]
    a = w.sum() / w[j0]
    if a == 0 or not np.isfinite(a):
        return None
    u = w[rest] / w[j0] * (kp[rest] - kp[j0])
    # the zeros of Σ_j w_j/(λ − k_j) are the eigenvalues of diag(k_rest) − (u/a)·1ᵀ
    poles = np.linalg.eigvals(np.diag(kp[rest]) - np.outer(u / a, np.ones(h)))
    poles = poles.real
    if not (np.all(np.isfinite(poles)) and np.all(poles < 0)):
        return None
    with np.errstate(all="ignore"):
        num = np.array([(w * yp / (z - kp)).sum() for z in poles])
        dder = np.array([-(w / (z - kp) ** 2).sum() for z in poles])
    r = -1 / poles
    theta = np.concatenate([[(w * yp).sum() / w.sum()], np.log(r), -r * num / dder])
    return theta if np.all(np.isfinite(theta)) else None


def _polish(theta: np.ndarray, ks: np.ndarray, ys: np.ndarray, h: int) -> np.ndarray:
    """Gauss–Newton on the model itself, from the barycentric guess."""
    for _ in range(50):
        with np.errstate(all="ignore"):
            J = _jacobian(theta, ks, h)
            res = _model(theta, ks, h) - ys
        if not (np.all(np.isfinite(J)) and np.all(np.isfinite(res))):
            break
        step = np.linalg.lstsq(J, res, rcond=None)[0]
        theta = theta - step
        if np.max(np.abs(step)) <= 4 * _EPS * (1 + np.max(np.abs(theta))):
            break
    return theta


def monomial_condition(ks, ys, h: int) -> float:
    """The condition number of the naive monomial system ``y_k D(k) = N(k)`` (columns scaled)."""
    if h == 0:
        return 1.0
    ks = np.asarray(ks, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    cols = [ks**j for j in range(h + 1)] + [-ys * ks**j for j in range(1, h + 1)]
    M = np.array(cols).T
    M = M / np.maximum(np.linalg.norm(M, axis=0), 1e-300)
    return float(np.linalg.cond(M))


def fit_block_float(ks, ys, errs, H: int) -> FloatFit:
    """Fit a block's float samples by H poles, refusing a block that fewer poles fit within their errors.

    Examples
    --------
    >>> import numpy as np
    >>> ks = np.arange(5.0)
    >>> ys = 0.5 - 0.25 / (1 + ks * np.exp(0.75)) - 1.0 / (1 + ks * np.exp(-0.5))
    >>> fit = fit_block_float(ks, ys, np.full(5, 1e-16), 2)
    >>> [round(x, 9) for x in fit.s], [round(x, 9) for x in fit.c], round(fit.A, 9)
    ([-0.5, 0.75], [1.0, 0.25], 0.5)
    >>> max(fit.s_err) < 1e-6 and fit.condition > 1
    True
    """
    ks = np.asarray(ks, dtype=np.float64)
    ys = np.asarray(ys, dtype=np.float64)
    errs = np.asarray(errs, dtype=np.float64)
    scale = float(np.max(np.abs(ys))) if len(ys) else 1.0
    tol = 8 * float(np.max(errs)) + 64 * _EPS * scale
    best = (np.inf, np.inf)  # (residual, condition) of the best fit that missed, for the message
    for h in range(0, H + 1):
        theta = _barycentric(ks, ys, h)
        if theta is None:
            continue
        theta = _polish(theta, ks, ys, h)
        with np.errstate(all="ignore"):
            res = _model(theta, ks, h) - ys
            J = _jacobian(theta, ks, h)
        if not (np.all(np.isfinite(res)) and np.all(np.isfinite(J))):
            continue
        if np.max(np.abs(res)) > tol:
            best = min(best, (float(np.max(np.abs(res))), float(np.linalg.cond(J))))
            continue
        if h < H:
            raise PrecisionInsufficient(
                f"float mode: a block's answers are reproduced within their errors by {h} heads, fewer heads than the "
                f"bound {H}: float answers cannot tell heads merged (close scores) or missing (small residues, poles "
                f"far from the sampled copies) from absent ones, and they fit {H} heads as well, farther from the "
                f"{h}-head fit than its error estimate; use the certified mode on an exact oracle"
            )
        est = 2 * (np.abs(np.linalg.pinv(J)) @ (np.abs(res) + errs))
        order = np.argsort(theta[1 : 1 + h])
        s, c = theta[1 : 1 + h][order], theta[1 + h :][order]
        es, ec = est[1 : 1 + h][order], est[1 + h :][order]
        _check_resolved(theta, est, ks, ys, errs, h, s, c, es, ec)
        return FloatFit(
            float(theta[0]), tuple(map(float, s)), tuple(map(float, c)), float(est[0]), tuple(map(float, es)),
            tuple(map(float, ec)), float(np.linalg.cond(J)), monomial_condition(ks, ys, h),
        )
    found = (f"; the closest fit misses by {best[0]:.2g} with condition number {best[1]:.2g}"
             if np.isfinite(best[0]) else "")
    raise PrecisionInsufficient(
        f"float mode: no rational function of type (h, h), h <= {H}, fits this block's answers within their errors "
        f"({tol:.2g}){found}: float64 answers do not resolve these poles (or the model has more heads); use the "
        "certified mode on an exact oracle"
    )


#: A block is decoded only when its poles and residues are resolved this many times over their
#: estimates: the estimate is first order, and it is trusted only far from where heads merge.
RESOLUTION = 10

#: Perturbed refits that test the first-order estimate (seeded, so a run is reproducible).
_TRIALS = 4


#: The largest condition number at which the first-order estimate is computed reliably in
#: float64 (its own rounding, about cond·2^-52, stays below 10^-4).
MAX_CONDITION = 1e12


def _check_resolved(theta, est, ks, ys, errs, h, s, c, es, ec) -> None:
    """Refuse a fit whose heads are not resolved far beyond their estimates, or whose estimate
    the answers' own errors can break (refits from answers moved within their errors)."""
    if not h:
        return
    condition = float(np.linalg.cond(_jacobian(theta, ks, h)))
    if not condition <= MAX_CONDITION:
        raise PrecisionInsufficient(
            f"float mode: a block's condition number is {condition:.2g}, above {MAX_CONDITION:.0e}: float64 "
            "answers cannot resolve its poles and residues (nor estimate their error); use the certified mode on "
            "an exact oracle"
        )
    gaps = np.diff(s)
    if (np.any(RESOLUTION * ec >= np.abs(c)) or np.any(RESOLUTION * (es[1:] + es[:-1]) >= gaps)
            or np.any(RESOLUTION * es >= 1)):
        raise PrecisionInsufficient(
            f"float mode: a block's {h} poles are not resolved {RESOLUTION}x beyond their error estimates "
            f"(condition number {np.linalg.cond(_jacobian(theta, ks, h)):.2g}): float answers cannot tell these "
            "heads apart; use the certified mode on an exact oracle"
        )
    rng = np.random.default_rng(len(ks) * 1000 + h)
    for _ in range(_TRIALS):
        moved = ys + errs * rng.choice((-1.0, 1.0), size=len(ys))
        other = _polish(theta.copy(), ks, moved, h)
        if np.any(np.abs(other - theta) > est):
            raise PrecisionInsufficient(
                "float mode: answers moved within their errors move a block's poles beyond the first-order "
                "estimate (the fit is too nonlinear at this precision); use the certified mode on an exact oracle"
            )


# -- the plan in floats --------------------------------------------------------------------------


@dataclass
class _Pair:
    s: float
    c: float
    es: float
    ec: float

    def __add__(self, other: "_Pair") -> "_Pair":
        return _Pair(self.s + other.s, self.c + other.c, self.es + other.es, self.ec + other.ec)


def _pairs(fit: FloatFit) -> list:
    return [_Pair(s, c, es, ec) for s, c, es, ec in zip(fit.s, fit.c, fit.s_err, fit.c_err)]


def _close(a: _Pair, b: _Pair, *, c_only: bool = False) -> bool:
    ok_c = abs(a.c - b.c) <= 4 * (a.ec + b.ec) + 1e-14
    return ok_c if c_only else ok_c and abs(a.s - b.s) <= 4 * (a.es + b.es) + 1e-14


def _match(base: list, other: list, link: list, how) -> list:
    """The unique bijection ``j → l`` for which ``how(base[j], other[l])`` is shown by the link."""
    order = []
    for b in base:
        hits = [i for i, o in enumerate(other) if any(how(b, o, x) for x in link)]
        if len(hits) != 1:
            raise PrecisionInsufficient(
                f"float mode: a head matches {len(hits)} heads across blocks within the error estimates (the "
                "answers do not resolve the heads apart); use the certified mode on an exact oracle"
            )
        order.append(hits[0])
    if len(set(order)) != len(order):
        raise PrecisionInsufficient("float mode: two heads match the same head across blocks within the estimates")
    return order


class FloatBlocks:
    """Blocks asked of the oracle and fitted in float64 (samples at k = 0..2H, the k = 0 value
    possibly known: a reused answer or ``qᵀV̂`` with its error)."""

    def __init__(self, ask, error_of, H: int):
        self.ask, self.error_of, self.H = ask, error_of, H
        self.blocks = 0
        self.condition = 1.0
        self.monomial_condition = 1.0

    def block(self, u, q, *, y0=None) -> tuple[FloatFit, tuple]:
        ks = list(range(0 if y0 is None else 1, 2 * self.H + 1))
        tu = {i: Fraction(x) for i, x in enumerate(u) if x}
        tq = {i: Fraction(x) for i, x in enumerate(q) if x}
        answers = self.ask([Sequence.sparse(len(q), [tu] * k + [tq]) for k in ks])
        ys = [float(a) for a in answers]
        # the answer's declared error, plus the rounding of its conversion to float64 (an exact
        # answer declares none, but float(a) is rounded)
        es = [float(self.error_of(a)) + abs(y) * _EPS for a, y in zip(answers, ys)]
        if y0 is not None:
            ks, ys, es = [0] + ks, [y0[0]] + ys, [y0[1]] + es
        fit = fit_block_float(ks, ys, es, self.H)
        self.blocks += 1
        self.condition = max(self.condition, fit.condition)
        self.monomial_condition = max(self.monomial_condition, fit.monomial_condition)
        return fit, (ys[0], es[0])


def float_plan(blocks: FloatBlocks, d: int, seed: int, draw) -> tuple[MultiHead, float, dict]:
    """The paper's plan on float answers: the canonical heads, their largest error estimate, and the counts."""
    probes = draw(d, random.Random(seed))
    q = np.array([[float(x) for x in row] for row in probes.q])
    w = np.array([[float(x) for x in row] for row in probes.w])
    Minv = np.linalg.inv(w)  # rows w_i: s(w_i) = w_iᵀa
    aMinv = np.abs(Minv)
    Qinv = np.linalg.inv(q.T)  # columns q_g
    aQinv = np.abs(Qinv)
    links = cross = 0

    # group 1
    Pq, Pw = probes.q, probes.w  # exact tokens (the sequences); q, w their float64 values (exactly)
    fit0, y0 = blocks.block(_tok(Pq[0], Pw[0]), Pq[0])
    group = [_pairs(fit0)]
    limits, lim_err = [fit0.A], [fit0.A_err]
    for i in range(1, d):
        fit, _ = blocks.block(_tok(Pq[0], Pw[i]), Pq[0], y0=y0)
        group.append(_pairs(fit))
        limits.append(fit.A)
        lim_err.append(fit.A_err)
    V = Minv @ (np.array(limits) - y0[0])
    V_err = aMinv @ (np.array(lim_err) + y0[1])
    # f([q_1]) = q_1ᵀV for bias-free heads: an output bias shows as their difference
    b_hat = y0[0] - float(q[0] @ V)
    b_err = y0[1] + float(np.abs(q[0]) @ V_err) + 4 * _EPS * (abs(y0[0]) + float(np.abs(q[0]) @ np.abs(V)))
    m = len(group[0])
    if any(len(p) != m for p in group):
        raise PrecisionInsufficient("float mode: the blocks of group 1 show different numbers of heads")
    first, n = _label(blocks, group, Pq[0], Pw, y0)
    links += n
    s_of = [[np.array([p.s for p in first[j]])] for j in range(m)]
    s_err = [[np.array([p.es for p in first[j]])] for j in range(m)]
    c_vec = [np.array([p.c for p in first[j]]) for j in range(m)]
    c_err = [np.array([p.ec for p in first[j]]) for j in range(m)]
    for g in range(1, d):
        yg = (float(q[g] @ V), float(np.abs(q[g]) @ V_err) + 4 * _EPS * float(np.abs(q[g]) @ np.abs(V)))
        fits = [_pairs(blocks.block(_tok(Pq[g], Pw[i]), Pq[g], y0=yg)[0]) for i in range(d)]
        if any(len(p) != m for p in fits):
            raise PrecisionInsufficient(f"float mode: a block of group {g + 1} shows another number of heads than {m}")
        local, n = _label(blocks, fits, Pq[g], Pw, yg)
        links += n
        qq = q[0] + q[g]
        yq = (float(qq @ V), float(np.abs(qq) @ V_err) + 4 * _EPS * float(np.abs(qq) @ np.abs(V)))
        qq_exact = _tok(Pq[0], Pq[g])
        link, _ = blocks.block(_tok(qq_exact, Pw[0]), qq_exact, y0=yq)
        cross += 1
        shown = _pairs(link)
        base = [first[j][0] for j in range(m)]
        order = _match(base, [local[l][0] for l in range(m)], shown,
                       lambda b, o, x: _close(_Pair(b.s + o.s, b.c, b.es + o.es, b.ec), x) and _close(b, o, c_only=True))
        for j in range(m):
            s_of[j].append(np.array([p.s for p in local[order[j]]]))
            s_err[j].append(np.array([p.es for p in local[order[j]]]))
    heads, worst = [], 0.0
    for j in range(m):
        v = Minv @ c_vec[j]
        v_err = aMinv @ c_err[j]
        Wq = np.array([Minv @ s_of[j][g] for g in range(d)]).T  # columns W q_g
        Wq_err = np.array([aMinv @ s_err[j][g] for g in range(d)]).T
        W = Wq @ Qinv
        W_err = Wq_err @ aQinv + 8 * _EPS * (np.abs(Wq) @ aQinv)
        worst = max(worst, float(np.max(W_err)), float(np.max(v_err)))
        heads.append(([[Fraction(float(x)) for x in row] for row in W], [Fraction(float(x)) for x in v]))
    model = MultiHead(heads, d=d)
    return model, worst, {"links": links, "cross_links": cross, "b_hat": b_hat, "b_err": b_err}


def _tok(*vectors) -> tuple:
    """The exact sum of probe vectors."""
    return tuple(sum(xs, Fraction(0)) for xs in zip(*vectors))


def _label(blocks: FloatBlocks, fits: list, qg, w, y0) -> tuple[list, int]:
    d, m = len(fits), len(fits[0])
    labelled = [[fits[0][j]] for j in range(m)]
    for i in range(1, d):
        link, _ = blocks.block(_tok(qg, w[0], w[i]), qg, y0=y0)
        shown = _pairs(link)
        if len(shown) != m:
            raise PrecisionInsufficient(f"float mode: a link block shows {len(shown)} heads, its blocks {m}")
        order = _match(fits[0], fits[i], shown, lambda b, o, x: _close(b + o, x))
        for j in range(m):
            labelled[j].append(fits[i][order[j]])
    return labelled, d - 1
