"""One line of the float multi-head sweep: find the heads' steps on it, fit them, estimate the error.

Along the line ``q(t) = q₀ + t·e`` with the first token ``u(t) = q(t) + w`` the two-token
answer is

    y(t) = A + B·t + Σ_h β_h σ(o_h + t·γ_h),

with ``A = b + Vᵀq₀``, ``B = Vᵀe``, and per head the height ``β_h = wᵀv_h``, the offset
``o_h = wᵀ(W_h q₀ + c_h)`` and the slope ``γ_h = wᵀW_h e`` (``docs/multi_head_float.md``).
Between steps ``y − B·t`` is constant; each head adds one logistic step of width ``1/|γ_h|``
centred at ``−o_h/γ_h``.  A long ``w`` makes every step narrow, so the steps stand apart and
each is read by its own samples: that is what makes this well conditioned, where one block
of copy counts is not.

:func:`fit_line` finds the steps (a grid, then bisection of each interval that jumps), adds
samples across each step, fits the whole line by Levenberg–Marquardt in float64, and returns
the parameters with a first-order error bound ``|J⁺|·e`` from the answers' declared errors.
The fit's residual must lie within those errors, or the line is refused (``None``).

A step and its mirror ``(β, o, γ) → (−β, −o, −γ)`` (with ``A`` moved by ``β``) give the same
line, so every step is returned with ``β > 0``; :func:`resolve_signs` restores the true signs
of a set of lines that share ``w`` from the known constant ``A``.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import numpy as np

__all__ = ["Step", "LineFit", "fit_line", "resolve_signs", "line_model", "line_jacobian"]

#: Grid samples along the window ``[−T, T]`` before the bisection of the intervals that jump.
GRID = 33
#: Samples added across each step found, at these multiples of its width from its centre.
SPREAD = (-3.0, -1.5, -0.5, 0.5, 1.5, 3.0)
#: A difference counts as a jump beyond this many times the answers' errors, and beyond this
#: fraction of the line's whole rise (a step's exponential tails reach far beyond its width:
#: the fit models them, the search need not see them).
JUMP = 16.0
RELATIVE_JUMP = 1e-3
#: The fit's residual may reach this many times an answer's declared error.
RESIDUAL = 3.0
#: No answer is taken to be closer than this fraction of the line's largest answer: the line's
#: model is evaluated in float64 as a sum of terms of about that size.
FLOOR = 16 * 2.0**-52
#: Samples within one width of a fitted step's centre (on both sides) before it counts as read.
ACROSS = 4
#: Two fitted steps closer than this many widths, and of widths within :data:`SAME_WIDTH` of each
#: other, are one step written twice (steps at one centre with different widths are two).
APART = 0.5
SAME_WIDTH = 1.25
#: The largest condition number of a line fit's (column-scaled, weighted) Jacobian.
MAX_CONDITION = 1e10
#: Undamped Gauss–Newton steps after Levenberg–Marquardt stops.
POLISH = 4
#: The window is widened (doubled) at most this many times on each side.
MAX_WIDEN = 10
#: The adaptive sampling of one line stops after this many samples.
MAX_SAMPLES = 4000


@dataclass(frozen=True)
class Step:
    """One head's step on a line: height, offset and slope, and their first-order error bounds."""

    beta: float
    o: float
    gamma: float
    e_beta: float
    e_o: float
    e_gamma: float

    def flipped(self) -> "Step":
        """The same step written as its mirror (the true signs when ``β`` was normalised)."""
        return Step(-self.beta, -self.o, -self.gamma, self.e_beta, self.e_o, self.e_gamma)

    @property
    def centre(self) -> float:
        return -self.o / self.gamma


@dataclass(frozen=True)
class LineFit:
    """A fitted line: the constant and slope (with bounds), the steps (``β > 0``), the worst
    residual in units of the declared error, and the samples asked (all of them, the search's too)."""

    A: float
    B: float
    e_A: float
    e_B: float
    steps: tuple
    residual: float
    samples: int
    excess: bool = False  # fitted by one step more than the bound, and not by the bound


def line_model(theta: np.ndarray, t: np.ndarray) -> np.ndarray:
    """``A + B·t + Σ β σ(o + tγ)`` for ``theta = (A, B, β…, o…, γ…)``."""
    n = (len(theta) - 2) // 3
    beta, o, g = theta[2 : 2 + n], theta[2 + n : 2 + 2 * n], theta[2 + 2 * n :]
    return theta[0] + theta[1] * t + (beta * _sigmoid(o + t[:, None] * g)).sum(axis=1)


def rounding(theta: np.ndarray, t: np.ndarray) -> np.ndarray:
    """A bound on the float64 rounding of :func:`line_model` at ``t``: each step's argument
    ``o + tγ`` is rounded by about ε(|o| + |tγ|), which a steep step turns into ``|β|σ′·ε(|o| + |tγ|)``,
    besides the rounding of the sum's terms themselves."""
    n = (len(theta) - 2) // 3
    beta, o, g = theta[2 : 2 + n], theta[2 + n : 2 + 2 * n], theta[2 + 2 * n :]
    s = _sigmoid(o + t[:, None] * g)
    arg = 2 * (np.abs(o) + np.abs(t[:, None] * g))
    terms = np.abs(theta[0]) + np.abs(theta[1] * t) + np.abs(beta).sum()
    return 4 * _EPS * (terms + (np.abs(beta) * s * (1 - s) * arg).sum(axis=1))


_EPS = 2.0**-52


def line_jacobian(theta: np.ndarray, t: np.ndarray) -> np.ndarray:
    n = (len(theta) - 2) // 3
    beta, o, g = theta[2 : 2 + n], theta[2 + n : 2 + 2 * n], theta[2 + 2 * n :]
    s = _sigmoid(o + t[:, None] * g)
    ds = beta * s * (1.0 - s)
    return np.hstack([np.ones((len(t), 1)), t[:, None], s, ds, ds * t[:, None]])


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def _levenberg(theta: np.ndarray, t: np.ndarray, y: np.ndarray, e: np.ndarray, iterations: int = 200) -> np.ndarray:
    """Weighted Levenberg–Marquardt in the centre parametrisation ``σ(γ(t − c))`` (better scaled)."""
    n = (len(theta) - 2) // 3

    def to_centre(th):
        out = th.copy()
        out[2 + n : 2 + 2 * n] = -th[2 + n : 2 + 2 * n] / th[2 + 2 * n :]
        return out

    def from_centre(ph):
        out = ph.copy()
        out[2 + n : 2 + 2 * n] = -ph[2 + n : 2 + 2 * n] * ph[2 + 2 * n :]
        return out

    def jac(ph):
        th = from_centre(ph)
        J = line_jacobian(th, t)
        Jc = J.copy()  # ∂/∂c = ∂/∂o · (−γ);  ∂/∂γ|_c = ∂/∂γ|_o + ∂/∂o · (−c)
        do = J[:, 2 + n : 2 + 2 * n]
        Jc[:, 2 + n : 2 + 2 * n] = do * (-ph[2 + 2 * n :])
        Jc[:, 2 + 2 * n :] = J[:, 2 + 2 * n :] - do * ph[2 + n : 2 + 2 * n]
        return Jc

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a wild trial step is just rejected
        return _minimise(theta, t, y, e, iterations, n, to_centre, from_centre, jac)


def _minimise(theta, t, y, e, iterations, n, to_centre, from_centre, jac) -> np.ndarray:
    ph = to_centre(theta)
    r = (line_model(from_centre(ph), t) - y) / e
    cost, lam = float(r @ r), 1e-3
    for _ in range(iterations):
        J = jac(ph) / e[:, None]
        scale = np.sqrt((J * J).sum(axis=0)) + 1e-300
        Js = J / scale
        if not np.isfinite(Js).all():  # the Jacobian overflows here: no step can be trusted
            break
        g = Js.T @ r
        A = Js.T @ Js
        improved = False
        for _ in range(12):
            try:
                step = np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-12), -g)
            except np.linalg.LinAlgError:
                lam *= 10
                continue
            trial = ph + step / scale
            rt = (line_model(from_centre(trial), t) - y) / e
            ct = float(rt @ rt)
            if np.isfinite(ct) and ct < cost:
                small = cost - ct <= 1e-12 * cost
                ph, r, cost, lam, improved = trial, rt, ct, max(lam / 10, 1e-12), True
                if small:
                    return from_centre(ph)
                break
            lam *= 10
        if not improved:
            break
    for _ in range(POLISH):  # undamped Gauss–Newton steps, kept while they lower the cost
        J = jac(ph) / e[:, None]
        scale = np.sqrt((J * J).sum(axis=0)) + 1e-300
        if not np.isfinite(J / scale).all():  # the Jacobian overflows here: keep the damped fit
            break
        try:
            step, *_ = np.linalg.lstsq(J / scale, -r, rcond=None)
        except np.linalg.LinAlgError:  # LAPACK's SVD did not converge: keep the damped fit
            break
        trial = ph + step / scale
        rt = (line_model(from_centre(trial), t) - y) / e
        ct = float(rt @ rt)
        if not (np.isfinite(ct) and ct < cost):
            break
        ph, r, cost = trial, rt, ct
    return from_centre(ph)


def _refine(sample, ts: np.ndarray, zs: np.ndarray, tol: float, min_len: float) -> tuple:
    """Adaptive sampling: halve every interval whose midpoint misses the chord by more than ``tol``
    (a step inside it, or curvature not yet resolved), down to ``min_len``."""
    todo = [(ts[k], zs[k], ts[k + 1], zs[k + 1]) for k in range(len(ts) - 1)]
    t_new: list = []
    z_new: list = []
    while todo and len(t_new) <= MAX_SAMPLES:
        mids = np.array([0.5 * (a + b) for a, _, b, _ in todo])
        zm, _ = sample(mids)
        nxt = []
        for (a, za, b, zb), m, z in zip(todo, mids, zm):
            t_new.append(m)
            z_new.append(z)
            if abs(z - 0.5 * (za + zb)) > tol and b - a > 2 * min_len:
                nxt += [(a, za, m, z), (m, z, b, zb)]
        todo = nxt
    t = np.concatenate([ts, t_new])
    z = np.concatenate([zs, z_new])
    order = np.argsort(t)
    return t[order], z[order]


def _bumps(t: np.ndarray, z: np.ndarray, H: int, floor: float) -> list:
    """Pilot steps ``(centre, slope > 0, jump)`` from a sampled profile: the local maxima of the
    secant slope's size, each with the rise of the region that falls away from it on both sides;
    the ``H`` with the largest rise above ``floor``."""
    s = np.diff(z) / np.diff(t)
    mid = 0.5 * (t[1:] + t[:-1])
    a = np.abs(s)
    n = len(s)
    out = []
    for i in range(n):
        if a[i] == 0 or (i > 0 and a[i - 1] > a[i]) or (i + 1 < n and a[i + 1] > a[i]):
            continue
        lo = i
        while lo > 0 and np.sign(s[lo - 1]) == np.sign(s[i]) and a[lo - 1] <= a[lo]:
            lo -= 1
        hi = i
        while hi + 1 < n and np.sign(s[hi + 1]) == np.sign(s[i]) and a[hi + 1] <= a[hi]:
            hi += 1
        jump = float(z[hi + 1] - z[lo])
        if jump != 0:
            out.append((abs(jump), float(mid[i]), 4.0 * float(a[i]) / abs(jump), jump))
    out.sort(reverse=True)
    return [(c, g, j) for size, c, g, j in out[:H] if size > floor]


def fit_line(sample, *, T: float, B0: float, H: int) -> LineFit | None:
    """Find, sample and fit the steps of one line (module docstring); ``None`` when the answers
    are not fitted within their errors by at most ``H + 1`` steps.  A line fitted by ``H + 1``
    steps and not by fewer is returned with ``excess`` set: evidence of more heads than ``H``.

    ``sample(ts) -> (ys, es)`` asks the line at the parameters ``ts`` (counted by the caller);
    ``B0`` is the line's slope ``Vᵀe`` from one-token answers, used to find the jumps.
    """
    asked = [0]
    top = [0.0]

    def counted(ts):
        asked[0] += len(ts)
        y, e = sample(ts)
        # the fit's own float64 evaluation (a sum of terms up to the line's largest answer) rounds too
        top[0] = max(top[0], float(np.max(np.abs(y))))
        return y, np.maximum(e, FLOOR * top[0])

    fit = _search(counted, T, B0, H + 1)
    if fit is None:
        return None
    return dataclasses.replace(fit, samples=asked[0], excess=len(fit.steps) > H)


def _search(sample, T: float, B0: float, H: int) -> LineFit | None:
    lo, hi = _window(sample, T, B0)
    ts = np.linspace(lo, hi, GRID)
    ys, es = sample(ts)
    t_all, y_all, e_all = [ts], [ys], [es]

    def rec(tq):
        tq = np.clip(tq, lo, hi)  # refits never ask beyond the window the search established
        y, e = sample(tq)
        t_all.append(tq)
        y_all.append(y)
        e_all.append(e)
        return y - B0 * tq, e

    z = ys - B0 * ts
    noise = float(np.max(es))
    span = float(np.max(z) - np.min(z))

    def tol(e):
        return max(JUMP * (noise + e), RELATIVE_JUMP * span)

    t_r, z_r = _refine(rec, ts, z, tol(noise), min_len=1e-9 * T)
    merged = _bumps(t_r, z_r, H, tol(noise))
    if not merged:
        return _flat(ts, ys, es)
    for c, g, _ in merged:
        rec(np.array([c + k / g for k in SPREAD]))
    theta = None
    for _ in range(3 * H + 4):
        t, y, e = np.concatenate(t_all), np.concatenate(y_all), np.concatenate(e_all)
        fit, theta = _fit(t, y, e, merged, B0, lo, hi)
        if fit is not None:
            # a step read without samples across its own width is not read: its width could be
            # anything the samples around it allow, and the bound at the fitted point says nothing
            thin = [s for s in fit.steps if not _sampled(t, s)]
            if not thin:
                return fit
            for s in thin:
                rec(np.array([s.centre + k / abs(s.gamma) for k in SPREAD]))
            merged = [(s.centre, abs(s.gamma), _jump(s.beta, s.gamma)) for s in fit.steps]
            continue
        if theta is None:
            return None
        k = len(merged)
        fitted = [(-o / g, abs(g), _jump(b, g)) for b, o, g in
                  zip(theta[2 : 2 + k], theta[2 + k : 2 + 2 * k], theta[2 + 2 * k :])]
        # a step the fit pushed out of the window, or flattened wider than it, explains nothing
        fitted = [p for p in fitted if lo <= p[0] <= hi and 1.0 / p[1] < hi - lo]
        if not fitted:  # nothing the window shows is left to refine: the line is refused
            return None
        fitted.sort()
        single = fitted[:1]
        for p in fitted[1:]:  # two steps the fit pulled onto one another are one
            q = single[-1]
            if abs(p[0] - q[0]) * min(p[1], q[1]) < APART and max(p[1], q[1]) < SAME_WIDTH * min(p[1], q[1]):
                single[-1] = (single[-1][0], max(p[1], single[-1][1]), single[-1][2] + p[2])
            else:
                single.append(p)
        fitted = single
        r = line_model(theta, t) - y
        worst = int(np.argmax(np.abs(r) / e))
        near = min(fitted, key=lambda p: abs(p[0] - t[worst]))
        if len(fitted) < H and abs(near[0] - t[worst]) * near[1] < 3.0:
            # the worst miss lies inside a step: it may be two; split it about the miss
            fitted.remove(near)
            c, g, j = near
            fitted += [(min(c, float(t[worst])) - 0.5 / g, 0.5 * g, 0.5 * j), (max(c, float(t[worst])) + 0.5 / g, 0.5 * g, 0.5 * j)]
            rec(np.array([c + k / g for k in SPREAD]))
        elif len(fitted) < H:
            # a step the search missed (a small one): add it where the fit misses most
            g = near[1]
            fitted.append((float(t[worst]), g, float(-r[worst])))
            rec(np.array([t[worst] + j / g for j in SPREAD]))
        else:  # sample the step nearest the worst miss more finely, where the fit puts it now
            rec(np.array([near[0] + j / (2 * near[1]) for j in SPREAD]))
        merged = fitted
    return None


def _sampled(t: np.ndarray, s: Step) -> bool:
    """Whether the samples ``t`` read step ``s``: at least :data:`ACROSS` of them within one width of
    its centre, on both sides."""
    z = (t - s.centre) * abs(s.gamma)
    inside = np.abs(z) <= 1.0
    return int(inside.sum()) >= ACROSS and bool(np.any(inside & (z < 0))) and bool(np.any(inside & (z > 0)))


def _jump(beta: float, gamma: float) -> float:
    """A fitted step's rise as t grows (its pilot jump)."""
    return float(beta if gamma > 0 else -beta)


def _window(sample, T: float, B0: float) -> tuple[float, float]:
    """The window ``[lo, hi]``: ``[−T, T]``, each end pushed out (doubling) until the line is flat
    there at the answers' noise level, so that no step lies beyond it (its tail would show)."""
    ends = []
    for side in (-1.0, 1.0):
        t = T
        for _ in range(MAX_WIDEN + 1):
            pts = side * np.array([t, t * (1 - 1.0 / GRID), t * (1 + 1.0 / GRID)])
            y, e = sample(pts)
            z = y - B0 * pts
            if abs(z[0] - z[1]) <= JUMP * (e[0] + e[1]) and abs(z[2] - z[0]) <= JUMP * (e[0] + e[2]):
                break
            t *= 2.0
        ends.append(side * t)
    return ends[0], ends[1]


def _flat(ts, ys, es) -> LineFit | None:
    J = np.vstack([np.ones_like(ts), ts]).T
    sol, *_ = np.linalg.lstsq(J / es[:, None], ys / es, rcond=None)
    res = float(np.max(np.abs(J @ sol - ys) / es))
    if res > RESIDUAL:
        return None
    P = np.abs(np.linalg.pinv(J)) @ es
    return LineFit(float(sol[0]), float(sol[1]), float(P[0]), float(P[1]), (), res, len(ts))


def _fit(t, y, e, pilots, B0, lo: float, hi: float) -> tuple:
    """The fitted line, or ``None``, and the parameters reached (``None`` when the fit broke down).
    A fit is refused when a step lies outside the window ``[lo, hi]``, when two steps lie within
    :data:`APART` widths of each other (one step written twice: the Jacobian is singular), or when
    the Jacobian's columns are dependent beyond :data:`MAX_CONDITION` (no first-order bound)."""
    n = len(pilots)
    cs = np.array([p[0] for p in pilots])
    gs = np.array([p[1] for p in pilots])
    js = np.array([p[2] for p in pilots])
    # a rising step is β σ(g(t − c)); a falling one β σ(−g(t − c)), which is β at t → −∞
    falling = js < 0
    level = float(y[0] - B0 * t[0])  # the first grid sample, at t = −T
    A0 = level - float(np.sum(np.abs(js[falling])))
    sign = np.where(falling, -1.0, 1.0)
    theta = np.concatenate([[A0, B0], np.abs(js), -sign * gs * cs, sign * gs])
    theta = _levenberg(theta, t, y, e)
    if np.isfinite(theta).all():  # the answers' errors, plus the line model's own float64 rounding there
        e = e + rounding(theta, t)
        if not np.isfinite(e).all():  # the rounding bound overflows: answers near float64's largest
            return None, None
        theta = _levenberg(theta, t, y, e)
    res = float(np.max(np.abs(line_model(theta, t) - y) / e))
    if not np.isfinite(res):
        return None, None
    if res > RESIDUAL:
        return None, theta
    k = (len(theta) - 2) // 3
    centres = -theta[2 + k : 2 + 2 * k] / theta[2 + 2 * k :]
    slopes = np.abs(theta[2 + 2 * k :])
    if np.any((centres < lo) | (centres > hi)) or np.any(1.0 / slopes > hi - lo):
        return None, theta
    order = np.argsort(centres)
    c, g = centres[order], slopes[order]
    ratio = np.maximum(g[1:], g[:-1]) / np.minimum(g[1:], g[:-1])
    if np.any((np.diff(c) * np.minimum(g[1:], g[:-1]) < APART) & (ratio < SAME_WIDTH)):
        return None, theta
    J = line_jacobian(theta, t)
    Js = J / e[:, None]
    Js = Js / (np.sqrt((Js * Js).sum(axis=0)) + 1e-300)
    if not np.isfinite(Js).all():  # declared errors near float64's smallest: no first-order bound
        return None, None
    sv = np.linalg.svd(Js, compute_uv=False)
    if not sv[-1] > sv[0] / MAX_CONDITION:
        return None, theta
    try:  # a-posteriori, first order: θ̂ − θ ≈ J⁺(ρ − η), with ρ the residual and |η| <= e
        # scaled columns: a parameter the samples barely see gets a large bound, not a truncated one
        scale = np.sqrt((J * J).sum(axis=0)) + 1e-300
        P = (np.abs(np.linalg.pinv(J / scale, rcond=1e-300)) / scale[:, None]) @ (e + np.abs(line_model(theta, t) - y))
    except np.linalg.LinAlgError:
        return None, None
    A, B = float(theta[0]), float(theta[1])
    steps = []
    for h in range(n):
        s = Step(float(theta[2 + h]), float(theta[2 + n + h]), float(theta[2 + 2 * n + h]),
                 float(P[2 + h]), float(P[2 + n + h]), float(P[2 + 2 * n + h]))
        if s.beta < 0:  # normalise to β > 0: β σ(z) = β + |β| σ(−z)
            A += s.beta
            s = s.flipped()
        steps.append(s)
    return LineFit(A, B, float(P[0]) + sum(s.e_beta for s in steps), float(P[1]), tuple(steps), res, len(t)), theta


def resolve_signs(A_known: float, e_known: float, A_fit: float, e_fit: float, betas, e_betas) -> tuple | None:
    """The subset ``S`` of (normalised, ``β > 0``) heads whose true heights are negative:
    ``A_known − A_fit = Σ_{h∈S} β_h``.  ``None`` unless exactly one subset fits within the errors."""
    n = len(betas)
    gap = A_known - A_fit
    hits = []
    for bits in itertools.product((0, 1), repeat=n):
        total = sum(b for b, x in zip(betas, bits) if x)
        err = e_known + e_fit + sum(e for e, x in zip(e_betas, bits) if x)
        if abs(gap - total) <= 4 * err:
            hits.append(bits)
            if len(hits) > 1:
                return None
    return hits[0] if hits else None
