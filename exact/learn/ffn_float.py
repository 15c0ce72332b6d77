"""A ReLU network ``g(x) = wᵀReLU(Ax + a) + b`` (biases or not) from **float** answers, with an
a posteriori error estimate per recovered parameter (docs/ffn.md, "From float answers").

The plan is the exact learner's with biases (:mod:`exact.learn.ffn_affine`), in float64, with every
equality replaced by a test against the answers' declared rounding errors
(:meth:`~exact.protocols.Oracle.error_bound`):

1. **One line** ``x(u) = P + u·D`` (Gaussian, seeded), sampled at ``N`` equally spaced points of
   ``[−T, T]``.  Three consecutive samples on one line (second difference within the summed
   errors) are one linear piece; each gap between two pieces holds a kink.  The pieces' lines,
   fitted through their end points, cross at the candidate kink ``t*``; ``h(t*)`` on both lines and
   one point on each side accept it, otherwise the gap is sampled again, eight times finer.
2. **Gradients** of every region at its midpoint ``x_r``, from ``d`` coordinate differences, twice:
   a first pass with tiny steps gives approximate hyperplanes; the second pass takes each step as
   large as a quarter of the distance to the nearest of them, so its rounding error is smallest.
   The slope along the line must agree with ``G_r·D``, or the region's probes are asked closer in.
3. **Hyperplanes from the jumps** ``G_{r+1} − G_r = c·n`` (``n`` scaled so its first entry is 1),
   ``κ = c·sign(n·D)/2``, the offset ``o = −n·x(t_k)``; the linear part from the first region.
4. **Offsets read again** where each plane crosses its own normal near the origin
   (:mod:`exact.learn.float_offsets`): ``−n·x_k`` carries the normal's error times ``|x_k|``, and a
   plane may cross the line far out.
5. **Estimates**: first-order propagation of the answers' errors through every difference and
   ratio above, per parameter; **checks**: points off the line must agree with the learned
   function within the estimate it implies there (else the result is refused).

What it cannot see is stated: units hidden from the line (as for the exact learner), and kinks
whose slope change moves the answers by less than their rounding error.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .. import registry
from ..errors import InvalidArgument, OracleInconsistent, PrecisionInsufficient
from ..ffn import FunctionForm, ReLUFFN, UnitForm
from ..protocols import Oracle
from ..oracles import ExactAnswer
from ..sequences import Sequence
from .details import Comparison, Details
from .driver import Run, oracle_dimension
from .float_line import GRID_BITS, Searcher, _Line, _Scan, on_grid
from .float_offsets import refine_offsets
from .ffn_terms import PATH_SEED, at_most, check_options
from .result import LearnResult

__all__ = ["FloatForm", "float_ffn_plan", "form_error", "learn_ffn_float", "FLOAT_KINKS", "SPEC"]

#: What a float result rests on beyond the exact learner's assumptions.
FLOAT_KINKS = ("every kink moves the answers near it by more than their rounding error (a smaller one is not "
               "resolved), and the estimate is first order in the answers' declared errors")
#: The largest relative answer error the float learner accepts (its estimates are validated below it).
MAX_RELATIVE_ERROR = 2.0**-26
#: Samples per expected kink on the first pass along the line.
SAMPLES_PER_UNIT = 8


@dataclass(frozen=True)
class FloatForm:
    """A learned affine function form in float64: ``(L, ℓ₀)ᵀ(x, 1) + Σ κ_k|n_kᵀx + o_k|`` with
    each ``n_k``'s largest entry 1 (the "max" form: the best-resolved entry), and the estimated error
    of every entry."""

    normals: np.ndarray  # (K, d + 1): n_k and o_k
    kinks: np.ndarray  # (K,)
    linear: np.ndarray  # (d + 1,)
    normals_err: np.ndarray
    kinks_err: np.ndarray
    linear_err: np.ndarray

    @property
    def d(self) -> int:
        return self.linear.shape[0] - 1

    def to_json(self) -> dict:
        """The form and its estimates as float lists (infinite estimates as ``"Infinity"``)."""
        from .details import jsonable

        return {k: jsonable(getattr(self, k)) for k in ("normals", "kinks", "linear", "normals_err", "kinks_err",
                                                          "linear_err")}

    @property
    def error_estimate(self) -> float:
        """The largest estimated error of any parameter."""
        parts = [self.normals_err.ravel(), self.kinks_err, self.linear_err]
        return float(max((float(p.max()) for p in parts if p.size), default=0.0))

    def value(self, X: np.ndarray) -> np.ndarray:
        """The function at ``(n, d)`` points, in float64."""
        Xh = np.hstack([X, np.ones((X.shape[0], 1))])
        return Xh @ self.linear + (np.abs(Xh @ self.normals.T) @ self.kinks if self.kinks.size else 0.0)

    def value_error(self, X: np.ndarray) -> np.ndarray:
        """The error of :meth:`value` that the parameters' estimates imply (first order)."""
        Xh = np.abs(np.hstack([X, np.ones((X.shape[0], 1))]))
        out = Xh @ self.linear_err
        if self.kinks.size:
            z = np.abs(np.hstack([X, np.ones((X.shape[0], 1))]) @ self.normals.T)
            out = out + z @ self.kinks_err + (Xh @ self.normals_err.T) @ np.abs(self.kinks)
        return out

    def to_function_form(self) -> FunctionForm:
        """The same form with each float as the exact binary rational it is."""
        terms = [(tuple(Fraction(float(x)) for x in n), Fraction(float(k))) for n, k in zip(self.normals, self.kinks)]
        return FunctionForm.build_affine(self.d, terms, [Fraction(float(x)) for x in self.linear])

    def network(self) -> ReLUFFN:
        """A network computing this form: κ|z| = κReLU(z) + κReLU(−z), ℓ₀ as ``b``."""
        units = []
        for n, k in zip(self.normals, self.kinks):
            full = tuple(Fraction(float(x)) for x in n)
            units += [(full, Fraction(float(k))), (tuple(-x for x in full), Fraction(float(k)))]
        return UnitForm(tuple(units), tuple(Fraction(float(x)) for x in self.linear), True).network()


def _largest(N: np.ndarray) -> np.ndarray:
    """Per row, the first entry within a relative 10⁻⁶ of the largest magnitude (ties go to the first)."""
    a = np.abs(N)
    return np.argmax(a >= (1 - 1e-6) * a.max(axis=1, keepdims=True), axis=1)


def max_normalized(form: FloatForm) -> FloatForm:
    """The same function with each hyperplane scaled so that its largest normal entry is 1 (``κ``
    scaled inversely; entries within a relative 10⁻⁶ of the largest count as tied, and the first of
    them is taken), and the estimates with it: a canonical form that does not depend on how small a
    normal's first entry is."""
    d = form.d
    if not form.kinks.size:
        return form
    idx = _largest(form.normals[:, :d])
    f = form.normals[np.arange(len(idx)), idx]  # the scale: the largest entry, with its sign
    fe = form.normals_err[np.arange(len(idx)), idx]
    N = form.normals / f[:, None]
    Ne = (form.normals_err + np.abs(N) * fe[:, None]) / np.abs(f)[:, None]
    Ne[np.arange(len(idx)), idx] = 0.0
    return dataclasses.replace(form, normals=N, normals_err=Ne, kinks=form.kinks * np.abs(f),
                               kinks_err=form.kinks_err * np.abs(f) + np.abs(form.kinks) * fe)


def first_normalized(form: FloatForm) -> FloatForm:
    """The same function with each normal's first nonzero entry 1 (the exact function form's rule),
    errors propagated.  The first entry its error keeps away from 0 is taken as that one; a row in
    which an earlier entry lies within its error of 0 (it may be the truth's first nonzero entry,
    however small) gets infinite errors: that form is then not determined by the answers."""
    if not form.kinks.size:
        return form
    d = form.d
    resolved = np.abs(form.normals[:, :d]) > form.normals_err[:, :d]  # entries the errors keep away from 0
    known = resolved.any(axis=1)
    first = np.argmax(resolved, axis=1)  # the first of them: the exact form's first nonzero entry
    rows = np.arange(len(first))
    f, fe = form.normals[rows, first], form.normals_err[rows, first]
    safe = np.where(known, f, 1.0)
    N = form.normals / safe[:, None]
    Ne = (form.normals_err + np.abs(N) * fe[:, None]) / np.abs(safe)[:, None]
    Ne[rows, first] = 0.0
    # an entry before it lies within its error of 0: the truth's first nonzero entry may be that one
    undetermined = ~known | (first > 0)
    Ne[undetermined] = np.inf
    K = form.kinks * np.abs(safe)
    Ke = np.where(undetermined, np.inf, form.kinks_err * np.abs(safe) + np.abs(form.kinks) * fe)
    return dataclasses.replace(form, normals=N, normals_err=Ne, kinks=K, kinks_err=Ke)


def kink_scaled(form: FloatForm) -> FloatForm:
    """The same function with each term ``κ|n·x + o|`` written as ``sign(κ)·|(|κ|n)·x + |κ|o|``: the
    hyperplanes carry their kink's size, and ``κ`` becomes ``±1``.  For a network this is each unit
    as ``sign(w)·ReLU(|w|(Aᵀx + a))``, up to the factor 2 of the function form: no entry divides."""
    if not form.kinks.size:
        return form
    k = np.abs(form.kinks)
    d = form.d
    idx = _largest(form.normals[:, :d])
    k = k * np.sign(form.normals[np.arange(len(idx)), idx])  # the sign of the form's convention: largest entry > 0
    N = form.normals * k[:, None]
    k = np.abs(k)
    Ne = form.normals_err * k[:, None] + np.abs(form.normals) * form.kinks_err[:, None]
    return dataclasses.replace(form, normals=N, normals_err=Ne, kinks=np.sign(form.kinks),
                               kinks_err=np.zeros_like(form.kinks))


def _truth_arrays(truth: FunctionForm, d: int, normalize: str) -> tuple:
    tn = np.array([[float(x) for x in n] for n in truth.normals]).reshape(-1, len(truth.normals[0])) \
        if truth.normals else np.zeros((0, d + 1))
    if not truth.affine:
        tn = np.hstack([tn, np.zeros((tn.shape[0], 1))]) if tn.size else np.zeros((0, d + 1))
    tk = np.array([float(k) for k in truth.kinks])
    if normalize == "max" and tn.size:
        idx = _largest(tn[:, :d])
        f = tn[np.arange(len(idx)), idx]
        tn, tk = tn / f[:, None], tk * np.abs(f)
    if normalize == "kink" and tn.size:
        # exactly: ±|κ|·n from the exact form (its largest normal entry made positive), then rounded once
        rows = []
        for n, k in zip(truth.normals, truth.kinks):
            big = max(range(d), key=lambda i: (abs(n[i]), -i))
            s = abs(k) * (1 if n[big] > 0 else -1)
            rows.append([float(s * x) for x in n])
        tn = np.array(rows).reshape(-1, len(truth.normals[0]))
        if not truth.affine:
            tn = np.hstack([tn, np.zeros((tn.shape[0], 1))])
        tk = np.sign(tk)
    return tn, tk


def form_error(form: FloatForm, truth: FunctionForm, *, normalize: str = "first") -> dict:
    """The largest error of the learned form against an exact one, each learned hyperplane matched
    to the nearest true one (``inf`` when the counts differ), and whether each error lies within
    its estimate.  ``normalize`` is the canonical form compared in: ``"first"`` (each normal's first
    entry 1, as :class:`~exact.ffn.FunctionForm`), ``"max"`` (its largest entry 1,
    :func:`max_normalized`) or ``"kink"`` (each hyperplane scaled by its kink, :func:`kink_scaled`).

    Returns ``{"max": ..., "within": bool, "normals": ..., "kinks": ..., "linear": ...}``.
    """
    d = form.d
    if normalize not in ("first", "max", "kink"):
        raise InvalidArgument(f"normalize: expected 'first', 'max' or 'kink', got {normalize!r}")
    original = form
    form = {"first": first_normalized(form) if normalize == "first" else form,
            "max": max_normalized(form) if normalize == "max" else form,
            "kink": kink_scaled(form) if normalize == "kink" else form}[normalize]
    tn, tk = _truth_arrays(truth, d, normalize)
    tl = np.array([float(x) for x in truth.linear] + ([] if truth.affine else [0.0]))
    if tn.shape[0] != form.normals.shape[0]:
        return {"max": math.inf, "within": False, "normals": math.inf, "kinks": math.inf, "linear": math.inf}
    # rows are matched in the max form, where no entry is amplified, and compared in the form asked for
    mn, _ = _truth_arrays(truth, d, "max")
    learned_max = max_normalized(original).normals
    used: set = set()
    en = ek = 0.0
    within = True
    # κ|n·x + o| = κ|(−n)·x − o|: a row and its negation are one term, so rows are matched and compared up
    # to sign (a normal whose two largest entries tie in size, with opposite signs, may be scaled by either)
    for i, n in enumerate(form.normals):
        j = min((j for j in range(mn.shape[0]) if j not in used),
                key=lambda j: min(float(np.abs(mn[j] - learned_max[i]).max()),
                                  float(np.abs(mn[j] + learned_max[i]).max())))
        used.add(j)
        dn = min((np.abs(tn[j] - n), np.abs(tn[j] + n)), key=lambda v: float(v.max()))
        dk = abs(tk[j] - form.kinks[i])
        en, ek = max(en, float(dn.max())), max(ek, dk)
        within &= bool((dn <= form.normals_err[i]).all()) and dk <= form.kinks_err[i]
    dl = np.abs(tl - form.linear)
    within &= bool((dl <= form.linear_err).all())
    return {"max": max(en, ek, float(dl.max())), "within": bool(within), "normals": en, "kinks": ek,
            "linear": float(dl.max())}


def _line_of(rng, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``P`` and ``D``: Gaussian entries rounded to ``GRID_BITS`` bits in (−1, 1), ``D ≠ 0``."""
    lim = (1 << GRID_BITS) - 1
    while True:
        P = np.clip(np.round(rng.standard_normal(d) * (1 << (GRID_BITS - 2))), -lim, lim) / (1 << GRID_BITS)
        D = np.clip(np.round(rng.standard_normal(d) * (1 << (GRID_BITS - 2))), -lim, lim) / (1 << GRID_BITS)
        if D.any():
            return P, D


def _probes(ask, x: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``G`` at ``x`` from the differences ``g(x + δ_i e_i) − g(x)``, and the error of each entry (the step
    actually taken is ``fl(x_i + δ_i) − x_i``, computed exactly)."""
    pts = np.vstack([x[None, :], x[None, :] + np.diag(steps)])
    taken = np.diag(pts[1:]) - x  # exact (Sterbenz) for the steps used, which are below |x_i| or exact
    ys, es = ask(pts)
    G = (ys[1:] - ys[0]) / taken
    return G, (es[1:] + es[0]) / np.abs(taken) + np.abs(G) * 2.0**-52, float(ys[0]), float(es[0])


def float_ffn_plan(ask, d: int, *, m, seed: int, windows=(1.0, 2.0**10, 2.0**20), max_units: int = 4096,
                   attempt: int = 0):
    """The float plan (module docstring); ``ask(X) -> (values, errors)`` for an ``(n, d)`` array.

    Returns ``(form, facts)``.
    """
    rng = np.random.default_rng(seed if not attempt else [seed, attempt])
    P, D = _line_of(rng, d)
    cap = m if m is not None else max_units
    n0 = max(64, SAMPLES_PER_UNIT * (m if m is not None else d))
    # a crossing u_k = −(n·P + o)/(n·D) is a ratio of near-Gaussians: dense near 0, with tails like
    # 1/u², so [−1, 1] is sampled evenly and beyond it eight points per octave out to ±T
    T = float(windows[-1] if m is not None else windows[1])
    octaves = int(math.log2(T))
    outer = np.geomspace(1.0, T, 8 * octaves + 1)[1:] if octaves else np.zeros(0)
    us = np.concatenate([-outer[::-1], np.linspace(-1.0, 1.0, n0), outer])
    probe_y, probe_e = ask(np.vstack([P, P + D, P - D]))  # the answers' declared accuracy, before the search
    rel = float(np.max(probe_e) / max(float(np.abs(probe_y).max()), 1e-300))
    if rel > MAX_RELATIVE_ERROR:
        raise InvalidArgument(
            f"the oracle declares its answers only to about 2^{math.log2(rel):.0f} relative at the line's first "
            "points: the float learner's estimates are validated on float64 answers (2^-26 and below); a float32 "
            "module is not supported yet (cast it with module.double() to learn the network its weights define)")
    scan = Searcher(ask, P, D, cap).scan(us)
    K = len(scan.kinks)
    lines = scan.lines
    bounds = [-T] + list(scan.kinks) + [T]
    # each region's point as near the origin as its interval allows (far points carry larger errors)
    mids = []
    for lo, hi in zip(bounds, bounds[1:]):
        if lo < 0 < hi:
            mids.append(0.0 if min(-lo, hi) > (hi - lo) / 8 else (lo + hi) / 2)
        elif lo >= 0:
            mids.append(lo + min((hi - lo) / 2, max(1.0, lo)))
        else:
            mids.append(hi - min((hi - lo) / 2, max(1.0, -hi)))
    mids = list(on_grid(np.array(mids)))
    xs = [P + u * D for u in mids]
    scale = max(1.0, float(np.abs(D).max()))
    widths = [min(hi - lo, 2 * max(1.0, abs(u))) for (lo, hi), u in zip(zip(bounds, bounds[1:]), mids)]
    # pass 1: short steps (1/64 of the region's length along the line): only the step sizes of pass 2
    # are read from it (a probe that left its region there costs accuracy, never correctness)
    G1 = []
    for x, wdt in zip(xs, widths):
        G, _, _, _ = _probes(ask, x, np.full(d, min(wdt * scale, max(1.0, float(np.abs(x).max()))) * 2.0**-6))
        G1.append(G)
    planes1 = _planes(G1, scan.kinks, P, D)
    # pass 2: each region's point moved deeper into its region (same signs against every plane of
    # pass 1), and each step taken on the side with more room, a quarter of the distance to the
    # nearest plane that way: the rounding error of a difference falls as its step grows
    Nn = np.array([n for n, _ in planes1]).reshape(-1, d)
    On = np.array([o for _, o in planes1])
    Gs, Gerr, gx, gx_err = [], [], [], []
    for r in range(len(xs)):
        floor = widths[r] * scale * 2.0**-20
        for x in (_deeper(ask, xs[r], Nn, On, D, lines[r], floor), xs[r]):  # deeper in, else the line's own point
            steps = _steps(x, Nn, On, max(1.0, float(np.abs(x).max())))
            steps = np.where(np.abs(steps) < floor, floor, steps)
            for _ in range(4):
                G, E, y0, e0 = _probes(ask, x, steps)
                if abs(G @ D - lines[r].s) <= 4 * (np.abs(D) @ E + lines[r].s_err) + 1e-300:
                    break
                steps = steps / 16  # a probe left the region: closer in
            else:
                continue
            break
        else:
            raise PrecisionInsufficient("a region's coordinate probes keep disagreeing with its slope along the line")
        xs[r] = x
        Gs.append(G)
        Gerr.append(E)
        gx.append(y0)
        gx_err.append(e0)
    base = min(range(len(mids)), key=lambda r: abs(mids[r]))  # L and ℓ₀ where |x| is smallest
    N, Ne, kap, ke = _hyperplanes(Gs, Gerr, scan, P, D)
    N, Ne, refined = refine_offsets(ask, N, Ne, kap, ke)
    form = _form(N, Ne, kap, ke, Gs, Gerr, gx, gx_err, xs, D, base)
    facts = {"kinks": K, "window": T, "seed": seed, "line_samples": n0, "offsets_refined": refined}
    return form, facts


def _center(x: np.ndarray, N: np.ndarray, O: np.ndarray, rounds: int = 40) -> np.ndarray:
    """``x`` moved away from its nearest planes, keeping its side of every one: a few steps of
    ascent on the smallest distance ``|n_k·x + o_k|/‖n_k‖``, each accepted only if that grows."""
    if not N.size:
        return x
    norms = np.linalg.norm(N, axis=1)
    sig = np.sign(N @ x + O)
    box = 4 * max(1.0, float(np.abs(x).max()))

    def margin(y):
        return float((sig * (N @ y + O) / norms).min())

    best, cur = margin(x), x
    beta = best
    for _ in range(rounds):
        k = int(np.argmin(sig * (N @ cur + O) / norms))
        trial = cur + beta * sig[k] * N[k] / norms[k]
        if np.abs(trial).max() <= box and margin(trial) > best:
            cur, best = trial, margin(trial)
            beta *= 1.5
        else:
            beta /= 2
    return cur


def _deeper(ask, x: np.ndarray, N: np.ndarray, O: np.ndarray, D: np.ndarray, line: _Line, h: float) -> np.ndarray:
    """:func:`_center`'s point if two queries show the region's slope along the line there (a plane of the
    first pass read badly could put it in another region), else ``x`` itself."""
    c = _center(x, N, O)
    if c is x:
        return x
    with np.errstate(divide="ignore"):
        room = np.abs(N @ c + O) / np.abs(N @ D)  # along D, to each plane of the first pass
    h = max(h, float(room.min()) / 2 if room.size else h)
    ys, es = ask(np.vstack([c, c + h * D]))
    slope = (ys[1] - ys[0]) / h
    if abs(slope - line.s) <= 4 * ((es[0] + es[1]) / h + line.s_err):
        return c
    return x


def _steps(x: np.ndarray, N: np.ndarray, O: np.ndarray, cap: float) -> np.ndarray:
    """A signed step per coordinate: on the side with more room before a plane, half of it (the planes
    of the first pass are known to far better than that; a step that still leaves the region fails the
    slope check and is asked again closer in)."""
    d = len(x)
    if not N.size:
        return np.full(d, cap)
    z = N @ x + O  # (K,)
    with np.errstate(divide="ignore", invalid="ignore"):
        room = -z[:, None] / N  # the step along e_i that reaches plane k (signed)
    up = np.where(room > 0, room, np.inf).min(axis=0)
    down = np.where(room < 0, -room, np.inf).min(axis=0)
    return np.where(up >= down, np.minimum(up / 2, cap), -np.minimum(down / 2, cap))


def _planes(G, kinks, P, D) -> list:
    out = []
    for k, t in enumerate(kinks):
        J = G[k + 1] - G[k]
        j = int(np.argmax(np.abs(J) > 1e-6 * np.abs(J).max())) if np.abs(J).max() > 0 else 0
        if J[j] == 0:
            continue
        n = J / J[j]
        out.append((n, -float(n @ (P + t * D))))
    return out


def _hyperplanes(Gs, Gerr, scan: _Scan, P, D) -> tuple:
    """Per kink along the line: the row ``(n, o)`` (largest normal entry 1), its errors, ``κ`` and its error."""
    d = len(P)
    normals, kinks, nerr, kerr = [], [], [], []
    for k, (t, terr) in enumerate(zip(scan.kinks, scan.errs)):
        J = Gs[k + 1] - Gs[k]
        JE = Gerr[k + 1] + Gerr[k] + 2.0**-52 * (np.abs(Gs[k + 1]) + np.abs(Gs[k]))  # and the subtraction's rounding
        j = int(_largest(J[None, :])[0])  # the largest entry (the best resolved) is 1: the "max" form
        if abs(J[j]) <= 8 * JE[j]:
            raise PrecisionInsufficient(f"kink #{k} along the line: its gradient jump is below the float answers' "
                                        "resolution")
        c = J[j]
        n = J / c
        n_err = (JE + np.abs(n) * JE[j]) / abs(c) + 2.0**-52 * np.abs(n)  # and the division's
        n_err[j] = 0.0
        xk = P + t * D
        o = -float(n @ xk)
        # the estimate: n's errors over x_k, t's error along D, and the rounding of x_k = P + t·D (relative to
        # |P| + |t·D|, which cancel when the crossing lies near the origin) and of the dot product
        terms = float(np.abs(n) @ (np.abs(P) + abs(t) * np.abs(D)))
        o_err = float(np.abs(xk) @ n_err + abs(float(n @ D)) * terr) + (d + 4) * 2.0**-52 * terms
        kap = c * np.sign(float(n @ D)) / 2
        normals.append(np.append(n, o))
        nerr.append(np.append(n_err, o_err))
        kinks.append(kap)
        kerr.append(JE[j] / 2)
    return (np.array(normals).reshape(-1, d + 1), np.array(nerr).reshape(-1, d + 1), np.array(kinks),
            np.array(kerr))


def _form(N, Ne, kap, ke, Gs, Gerr, gx, gx_err, xs, D, base: int) -> FloatForm:
    """The form from the rows (in the line's order) and the linear part read at region ``base``."""
    d = len(D)
    x0 = xs[base]
    L = Gs[base].copy()
    Le = Gerr[base].copy()
    l0 = gx[base] - float(Gs[base] @ x0)
    l0e = gx_err[base] + float(np.abs(x0) @ Gerr[base])
    for idx, ((n, o), k, ne, kk) in enumerate(zip(((row[:d], row[d]) for row in N), kap, Ne, ke)):
        # the base region lies after the kinks before it along the line and before the rest: its side of
        # each plane is known from the order alone (n·x + o grows along D when n·D > 0)
        along = np.sign(float(n @ D))
        s = along if idx < base else -along
        L -= k * s * n
        Le += abs(k) * ne[:d] + kk * np.abs(n) + 2.0**-52 * (np.abs(L) + 2 * np.abs(k * n))  # and the roundings
        l0 -= k * s * o
        l0e += abs(k) * ne[d] + kk * abs(o) + 2.0**-52 * (abs(l0) + 2 * abs(k * o))
    # the point itself must lie on that side of each plane, as the slope check of its region showed
    for idx, n in enumerate(N):
        along = np.sign(float(n[:d] @ D))
        if np.sign(float(n[:d] @ x0 + n[d])) != (along if idx < base else -along):
            raise PrecisionInsufficient("the base region's point is not on the side of a plane its place on the line "
                                        "says: a kink was read badly")
    order = np.lexsort(N.T[::-1]) if N.size else np.arange(0)
    return FloatForm(N[order], kap[order], np.append(L, l0), Ne[order], ke[order], np.append(Le, l0e))


@dataclass(frozen=True)
class FloatFFNDetails(Details):
    """The float plan: the kinks found, the window, the seed, the samples on the line, the
    function form with its per-parameter estimates, and the off-line checks."""

    form: FloatForm
    kinks: int
    window: float
    seed: int
    line_samples: int
    off_line_checks: int
    worst_check: float
    lines: int = 1
    offsets_refined: int = 0

    def compare(self, result, truth) -> Comparison:
        """The learned form against the truth's exact function form, in the max and kink forms, each
        error held to its estimate."""
        return compare_forms(self.form, _ffn_of(truth).function_form())

    def model_rows(self, result) -> list:
        return float_form_rows(self.form)

    def rows(self, result) -> list:
        f = self.form
        return [("function", f"g(x) = Lᵀx + ℓ₀ + Σ κ_k|n_kᵀx + o_k| with {self.kinks} hyperplanes (float64)"),
                ("estimate", f"largest parameter error estimated {f.error_estimate:.3g}; off-line checks within "
                             f"{self.worst_check:.2g} of their bound"),
                ("line", f"seed {self.seed}, window ±{self.window:g}, {self.line_samples} first samples"),
                ("offsets", f"{self.offsets_refined} of {self.kinks} read again where the plane crosses its normal "
                            "near the origin")]


def float_form_rows(form: FloatForm, limit: int = 8) -> list:
    """Lines showing a float form: L, ℓ₀ and the first ``limit`` hyperplanes (largest entry 1)."""
    d = form.d
    g = lambda x: f"{float(x):.17g}"  # noqa: E731
    lines = ["L = [" + ", ".join(g(x) for x in form.linear[:d]) + f"], ℓ₀ = {g(form.linear[d])}"]
    for n, k in list(zip(form.normals, form.kinks))[:limit]:
        lines.append(f"κ = {g(k)}, n = [" + ", ".join(g(x) for x in n[:d]) + f"], o = {g(n[d])}")
    if len(form.kinks) > limit:
        lines.append(f"… {len(form.kinks) - limit} more hyperplanes (details.form)")
    return lines


#: Random sequences a float block result is checked on (lengths 2 and 3).
BLOCK_CHECKS = 6


def check_block(run, model, form: FloatForm, score_err: float, rng, n: int = BLOCK_CHECKS, *, K=None,
                K_err: float = 0.0) -> float:
    """``n`` random sequences (lengths 2 and 3) asked of the block: each answer must lie within 4× the
    error the estimates imply there (the scores' error moving the attention average, through the FFN's
    Lipschitz bound, plus the form's own error and the answer's; with a residual's ``K`` and its entrywise
    bound ``K_err``, the point ``x_N + K(h̄ − x_N)`` and ``K``'s error moving it); returns the worst ratio
    (<= 1)."""
    d = form.d
    lip = float(np.abs(form.linear[:d]).sum() + np.abs(form.kinks) @ np.abs(form.normals[:, :d]).sum(axis=1)) \
        if form.kinks.size else float(np.abs(form.linear[:d]).sum())
    seqs, Xs = [], []
    for i in range(n):
        X = rng.standard_normal((2 + i % 2, d))
        Xs.append(X)
        seqs.append(Sequence._floats(X))
    answers = run.ask(seqs)
    worst = 0.0
    for X, a in zip(Xs, answers):
        y = float(a)
        e = float(run.oracle.error_bound(a)) + (abs(y) * 2.0**-52 if isinstance(a, ExactAnswer) else 0.0)
        norms = np.abs(X).sum(axis=1)
        ds = score_err * float(norms.max()) * (float(norms[-1]) + 1)  # W and c: |Δs_i| <= ε(‖x_i‖₁‖x_N‖₁ + ‖x_i‖₁)
        s = X @ (np.array([[float(v) for v in r] for r in model.W]) @ X[-1] + np.array([float(v) for v in model.c]))
        alpha = np.exp(s - s.max())
        alpha /= alpha.sum()
        hbar = alpha @ X
        moved = math.expm1(min(2 * ds, 700.0)) * float(np.abs(X - hbar).max())
        if K is not None:  # the residual: g₁ is read at x_N + K(h̄ − x_N)
            gap = hbar - X[-1]
            point = X[-1] + K @ gap
            moved = float(np.abs(K).sum(axis=1).max()) * moved + K_err * float(np.abs(gap).sum())
            hbar = point
        bound = float(form.value_error(hbar[None, :])[0]) + lip * moved + e
        dev = abs(float(model.float(X)) - y)
        ratio = dev / max(4 * bound, 1e-300)
        worst = max(worst, ratio)
        if ratio > 1:
            raise OracleInconsistent(
                f"a random sequence misses the learned block by {dev:.3g}, beyond 4× its estimate {bound:.2g}: the black "
                "box is not a block of the class learned (a residual, biases, or a unit the line did not see)")
    return worst


def _ffn_of(truth):
    return truth.ffn if getattr(truth, "kind", None) == "transformer" else truth


def compare_forms(form: FloatForm, truth_form: FunctionForm, extra: tuple = ()) -> Comparison:
    """A :class:`~exact.learn.details.Comparison` of a learned float form (and ``extra`` rows
    ``(name, error, estimate)``) with an exact one."""
    errs = {n: form_error(form, truth_form, normalize=n) for n in ("max", "kink")}
    within = all(e["within"] for e in errs.values()) and all(err <= est for _, err, est in extra)
    rows = tuple(("error" if i == 0 else "", f"{n} form: largest parameter error {e['max']:.3g} "
                  f"({'within' if e['within'] else 'NOT within'} the estimates)") for i, (n, e) in enumerate(errs.items()))
    rows += tuple(("", f"{name}: error {err:.3g}, estimated <= {est:.3g} ({'within' if err <= est else 'NOT within'})")
                  for name, err, est in extra)
    measured = {"max": errs["max"]["max"], "kink": errs["kink"]["max"], **{name: err for name, err, _ in extra}}
    return Comparison(False, within, measured, rows=rows)


def check_off_line(ask, form: FloatForm, d: int, rng, n: int) -> float:
    """``n`` random points off the line (half near the origin, half at the line's scale): each answer must
    lie within the learned form's implied error plus its own; returns the worst ratio (<= 1)."""
    X = np.vstack([rng.standard_normal((n - n // 2, d)), 0.05 * rng.standard_normal((n // 2, d))])
    ys, es = ask(X)
    bound = form.value_error(X) + es
    dev = np.abs(form.value(X) - ys)
    ratio = float((dev / np.maximum(4 * bound, 1e-300)).max()) if n else 0.0
    if ratio > 1:
        i = int(np.argmax(dev / np.maximum(4 * bound, 1e-300)))
        raise OracleInconsistent(
            f"an off-line check misses the learned function by {dev[i]:.3g}, beyond 4× its estimate {bound[i]:.2g}: "
            "a unit hidden from the line, a kink below the answers' resolution, or not a ReLU network with biases")
    return ratio


def _asker(run: Run):
    """``ask(X) -> (values, errors)`` for an ``(n, d)`` float array, through the run (counted)."""
    oracle = run.oracle

    def ask(X: np.ndarray):
        X = np.asarray(X, dtype=np.float64)
        if not np.isfinite(X).all():
            raise PrecisionInsufficient("the float learner's query points overflow float64 (the line's window is "
                                        "too wide for this network)")
        answers = run.ask([Sequence._floats(row[None, :]) for row in X])
        ys = np.array([float(a) for a in answers])
        # the declared error, plus the rounding of an exact answer to float64 (nothing for a float answer)
        es = np.array([float(oracle.error_bound(a)) for a in answers]) + np.where(
            [isinstance(a, ExactAnswer) for a in answers], np.abs(ys) * 2.0**-52, 0.0)
        if not (np.isfinite(ys).all() and np.isfinite(es).all()):
            raise OracleInconsistent("the oracle answered a non-finite value or error bound")
        return ys, es

    return ask


HIDDEN_FLOAT = ("no hidden units: every hyperplane crosses the search line inside its window and shows its kink "
                "there (no tent between the samples, no units whose kinks cancel on it, no two kinks closer along "
                "it than the check at each kink separates, about the answers' error over the slope change)")


def learn_ffn_float(oracle: Oracle, *, m: int | None = None, seed=None, checks: int = 8, check_seed=None,
                    retries: int = 2, max_units: int = 4096) -> LearnResult:
    """Learn ``g(x) = wᵀReLU(Ax + a) + b`` (biases or not) from float answers, with an estimate.

    Parameters
    ----------
    oracle : Oracle
        One-token value queries answered in floating point, each answer's rounding error declared
        (:meth:`~exact.protocols.Oracle.error_bound`; a :class:`~exact.oracles.FloatOracle` of a
        :class:`~exact.ffn.ReLUFFN`, or a :class:`~exact.native.TorchOracle` of an ``nn.Sequential``).
    m : int, optional
        An upper bound on the hidden units (stated); the line's window widens until ``m`` kinks show.
    seed : int, optional
        Seed of the line (fresh when omitted; reported).
    checks : int
        Random points off the line that must agree with the learned function within its estimate.
    check_seed : int, optional
        Their seed (fresh when omitted).
    retries : int
        Other lines to try when one cannot be resolved (kinks closer than the answers separate, or an
        off-line check missed).

    Returns
    -------
    LearnResult
        Not exact: ``details.form`` is the function form in float64 with an estimated error per
        parameter (``normals_err``, ``kinks_err``, ``linear_err``), ``error_estimate`` the largest.

    Examples
    --------
    >>> from exact.oracles import FloatOracle
    >>> net = ReLUFFN.random(6, 4, seed=1, biases=True)
    >>> r = learn_ffn_float(FloatOracle(net), m=4, seed=0, check_seed=0)
    >>> err = form_error(r.details.form, net.function_form())
    >>> r.exact, err["within"], err["max"] < 1e-9
    (False, True, True)
    """
    d = oracle_dimension(oracle)
    check_options(m=m, seed=seed, retries=retries, max_units=max_units, interior=False)
    if not isinstance(checks, int) or isinstance(checks, bool) or checks < 0:
        raise InvalidArgument(f"checks: expected a non-negative integer, got {checks!r}")
    if seed is None:
        seed = secrets.randbits(63)
    if check_seed is None:
        check_seed = secrets.randbits(63)
    run = Run(SPEC, oracle, mode="float", certify=False, checks=0)
    with run:
        form, details = float_extract(_asker(run), d, m=m, seed=seed, check_seed=check_seed, checks=checks,
                                      retries=retries, max_units=max_units)
        standing = float_standing(m, details.kinks)
        conditions = {"seed": seed, **({"m": m} if m is not None else {})}
        return run.finish(form.network(), conditions=conditions, details=details, error_estimate=form.error_estimate,
                          standing=standing)


def float_extract(ask, d: int, *, m, seed: int, check_seed: int, checks: int, retries: int, max_units: int):
    """The float plan on up to ``retries + 1`` lines, each checked off the line: ``(form, details)``."""
    last: Exception | None = None
    for attempt in range(retries + 1):
        try:
            form, facts = float_ffn_plan(ask, d, m=m, seed=seed, max_units=max_units, attempt=attempt)
            if m is not None and facts["kinks"] > m:
                raise OracleInconsistent(f"the line shows {facts['kinks']} kinks, more than m = {m}")
            worst = check_off_line(ask, form, d, np.random.default_rng([check_seed, attempt]), checks)
            return form, FloatFFNDetails(form=form, off_line_checks=checks, worst_check=worst, lines=attempt + 1,
                                         **facts)
        except (PrecisionInsufficient, OracleInconsistent) as e:
            last = e
    assert last is not None
    raise type(last)(f"{last} (on each of {retries + 1} lines)") from None


def float_standing(m, found: int | None = None) -> tuple:
    """What a float FFN result rests on; with ``m`` given and fewer hyperplanes ``found``, that too."""
    short: tuple = ()
    if m is not None and found is not None and found < m:
        short = (f"m = {m} is an upper bound not reached: {found} hyperplane{'' if found == 1 else 's'} found on the "
                 "line, so any other unit hides from it (beyond its window, or below the answers' resolution)",)
    return (HIDDEN_FLOAT, FLOAT_KINKS) + ((at_most(m),) if m is not None else ()) + short + (PATH_SEED,)


def _count_text(result) -> str:
    det = result.details
    return f"{result.queries} queries for {det['kinks']} kinks on the line (no stated count: float answers)"


SPEC = (
    registry.LearnerSpec(
        name="ffn-float",
        summary="a ReLU FFN with biases from float answers: the line search and gradient jumps in float64, with a "
                "posteriori estimates per parameter",
        model_kind="ffn",
        modes=("float",),
        learn=learn_ffn_float,
        query_count=lambda d, m=None, **conditions: None,
        count_formula="about 2(m + 1)(d + 1) + 8·max(m, 8) + 12m",
        count_text=_count_text,
        exact=False,
        options=(
            registry.Option("m", "int", "an upper bound on the hidden units, if known", minimum=0),
            registry.Option("seed", "int", "seed of the search line (default: fresh, reported)", minimum=0),
        ),
        command="ffn",
        method="float",
    )
)
