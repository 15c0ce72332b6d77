"""The float multi-head sweep: every head's parameters from narrow steps along lines.

For a final token ``q`` and a first token ``u = q + w`` the two-token answer is
``b + Vᵀq + Σ_h σ(wᵀ(W_h q + c_h))·wᵀv_h``.  The sweep fixes ``q₀`` and draws
``n = d + extra + ⌊d/4⌋`` *rows* ``w_i`` (long vectors) and ``n`` *line directions* ``e_j`` (unit
vectors), and asks each row along each line ``q = q₀ + t·e_j`` (:mod:`exact.learn.multi_head_lines`).
Line ``(i, j)`` shows head h as a step with

* height ``β_h(i) = w_iᵀv_h`` and offset ``o_h(i) = w_iᵀ(W_h q₀ + c_h)``: the same on every
  line of the row, so they *label* the head within the row;
* slope ``γ_h(i, j) = w_iᵀ W_h e_j``: one entry of ``W_h`` in the bases ``(w_i)``, ``(e_j)``.

A link row ``w_1 + w_i`` shows each head with the sums of its two rows' labels, which names
row i's heads by row 1's.  Then per head, by weighted least squares over every line that
resolved it: ``W_hᵀw_i`` from the slopes of row i (and, without biases, from ``o_h(i) =
(W_hᵀw_i)ᵀq₀``), ``W_h`` from those, ``v_h`` from the heights, ``c_h`` from the offsets, and
``b = A − Σ_h v_hᵀq₀`` from the constant ``A = f([q₀])``.  Every error bound is first order:
the lines' ``|J⁺|·e``, carried through the least-squares maps' absolute values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import OracleInconsistent, PrecisionInsufficient
from .multi_head_lines import fit_line, resolve_signs

__all__ = ["SweepCounts", "sweep", "EXTRA"]

#: Rows and line directions beyond d: with exactly d, one row or line where a head's step is
#: small or wide decides that head's error; a few more let the weighted fit avoid it.
EXTRA = 4
#: The line window ``t ∈ [−T, T]``.
T = 4.0
#: Two heads' labels agree when they differ by at most this many times their error bounds.
MATCH = 8.0
#: A line is set aside when one of its heads' labels lies this many robust spreads from the row's.
OUTLIER = 20.0
#: Pilot lines tried (each at six row lengths) before the sweep gives up.
PILOTS = 4
#: The target median step width on the lines (in units of t).
WIDTH = 0.002


@dataclass(frozen=True)
class SweepCounts:
    """What the sweep asked and kept: rows and lines, the lines refused, links, the row scale."""

    rows: int
    lines: int
    lines_refused: int
    rows_dropped: int
    links: int
    readings_aside: int  # slope readings set aside as disagreeing with the rest of their head's
    scale: float
    samples: int
    relative_error: float  # the median declared error of the line answers, relative to the answer


class _Rows:
    """Asks rows along lines: ``ask(X) -> (ys, es)`` for an ``(n, 2, d)`` array of two-token queries."""

    def __init__(self, ask, q0: np.ndarray, E: np.ndarray, B: np.ndarray, H: int):
        self.ask, self.q0, self.E, self.B, self.H = ask, q0, E, B, H
        self.lines = self.refused = self.samples = self.excess = self.links = 0
        self.relative: list = []
        self.why: dict = {}

    def line(self, w: np.ndarray, j: int):
        e = self.E[j]

        def sample(ts):
            q = self.q0[None, :] + ts[:, None] * e[None, :]
            X = np.stack([q + w[None, :], q], axis=1)
            self.samples += len(ts)
            y, err = self.ask(X)
            self.relative.append(float(np.median(err / np.maximum(np.abs(y), 1e-300))))
            return y, err

        self.lines += 1
        fit = fit_line(sample, T=T, B0=float(self.B[j]), H=self.H)
        if fit is not None and fit.excess:
            self.excess += 1
            fit = None
        if fit is None:
            self.refused += 1
        return fit

    def _fail(self, why: str) -> list | None:
        self.why[why] = self.why.get(why, 0) + 1
        return None

    def why_text(self) -> str:
        return "; ".join(f"{n} rows: {why}" for why, n in self.why.items())

    def row(self, w: np.ndarray, js, A: float, eA: float) -> list | None:
        """The row's heads: ``[(β, eβ, o, eo, {j: (γ, eγ)})]`` with true signs, or ``None``."""
        fits = {j: f for j in js if (f := self.line(w, j)) is not None}
        if not fits:
            return self._fail("every line refused")
        clusters: list[list] = []  # [β, eβ, o, eo, {j: step}]
        for j, f in fits.items():
            for s in sorted(f.steps, key=lambda s: s.e_beta):
                for c in clusters:
                    if j not in c[4] and _close(c[0], c[1], s.beta, s.e_beta) and _close(c[2], c[3], s.o, s.e_o):
                        c[4][j] = s
                        break
                else:
                    clusters.append([s.beta, s.e_beta, s.o, s.e_o, {j: s}])
        if len(clusters) > self.H:
            # a label seen on only a few of the row's lines is a fit beside the truth: set those lines aside
            few = max(2, len(fits) // 10)
            stray = {j for c in clusters if len(c[4]) <= few for j in c[4]}
            clusters = [c for c in clusters if len(c[4]) > few]
            for c in clusters:
                for j in stray:
                    c[4].pop(j, None)
            clusters = [c for c in clusters if c[4]]
            fits = {j: f for j, f in fits.items() if j not in stray}
            if len(clusters) > self.H or not fits:
                return self._fail(f"more than H = {self.H} labels (heights and offsets) among its lines")
        # a line whose fit settled beside the truth (within the declared errors, which may be far
        # above the answers' true rounding) disagrees with the row on some head's height or offset
        bad = _outliers(clusters)
        for c in clusters:
            for j in bad:
                c[4].pop(j, None)
        clusters = [c for c in clusters if c[4]]
        fits = {j: f for j, f in fits.items() if j not in bad}
        # labels from every line that shows the head (weighted means), and the signs from A
        heads: list[list] = []
        for c in clusters:
            st = list(c[4].values())
            beta, eb = _mean([s.beta for s in st], [s.e_beta for s in st])
            o, eo = _mean([s.o for s in st], [s.e_o for s in st])
            heads.append([beta, eb, o, eo, dict(c[4])])
        # every line of the row must show every head (a line that misses one has a wrong constant)
        full = [f for j, f in fits.items() if all(j in h[4] for h in heads)]
        if not full:
            return self._fail("no line showing every head")
        Af, eAf = _mean([f.A for f in full], [f.e_A for f in full])
        signs = resolve_signs(A, eA, Af, eAf, [h[0] for h in heads], [h[1] for h in heads])
        if signs is None:
            return self._fail("no unique set of signs from f([q₀])")
        out = []
        for h, neg in zip(heads, signs):
            g = {j: ((-s.gamma if neg else s.gamma), s.e_gamma) for j, s in h[4].items()}
            out.append((-h[0] if neg else h[0], h[1], -h[2] if neg else h[2], h[3], g))
        return out


def _outliers(clusters: list) -> set:
    """Lines whose height or offset of some head lies beyond :data:`OUTLIER` robust spreads (scaled
    median absolute deviations, at least a few float64 ulps) of the row's median for that head."""
    bad: set = set()
    for c in clusters:
        if len(c[4]) < 3:
            continue
        for key in ("beta", "o"):
            js = list(c[4])
            xs = np.array([getattr(c[4][j], key) for j in js])
            med = float(np.median(xs))
            spread = max(1.4826 * float(np.median(np.abs(xs - med))), 8 * 2.0**-52 * abs(med))
            bad |= {j for j, x in zip(js, xs) if abs(x - med) > OUTLIER * spread}
    return bad


def _close(a, ea, b, eb) -> bool:
    return abs(a - b) <= MATCH * (ea + eb) + 1e-15 * (abs(a) + abs(b))


def _mean(xs, es) -> tuple[float, float]:
    w = 1.0 / np.maximum(np.asarray(es), 1e-300) ** 2
    m = float(np.sum(w * np.asarray(xs)) / np.sum(w))
    # each reading within its bound puts the weighted mean within the same mean of the bounds
    return m, float(np.sum(w * np.asarray(es)) / np.sum(w))


def _lsq(A: np.ndarray, y: np.ndarray, e: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Weighted least squares ``A x ≈ y`` (errors ``e``): ``x``, its first-order bound (:func:`_wls`)
    and the worst residual in units of ``e``."""
    x, bound, res, _ = _wls(A, y, e, what)
    return x, bound, float(np.max(res / e))


def sweep(ask1, ask2, d: int, H: int, *, biases: bool, seed: int, extra: int = EXTRA):
    """Run the sweep (module docstring); return ``(heads, b, bounds, counts)`` with ``heads`` a
    list of float ``(W, v, c)`` and ``bounds`` their first-order error bounds (same shapes) and
    ``b``'s.  ``ask1(X)`` asks one-token queries (an ``(n, d)`` array), ``ask2(X)`` two-token
    queries (an ``(n, 2, d)`` array); both return ``(values, errors)``."""
    if d == 1 and not biases and H > 1:
        raise PrecisionInsufficient(
            f"float sweep: in d = 1 without biases every head's step lies at one centre (−q₀/e on every line), so "
            f"the lines cannot separate H = {H} heads; learn d = 1 from exact answers (the certified mode), or with "
            "heads=1 when the model has one head")
    rng = np.random.default_rng(seed)
    # rows: a row in which a head's steps are all small or wide says little of it; lines: at d = 64 and
    # H = 8 a head is read on about 70 % of them, and its W needs d² readings in all
    n = nr = d + extra + d // 4
    q0 = _unit(rng, d) * 0.5
    E = _frame(rng, n, d)
    Wdir = _frame(rng, nr, d)
    y1, e1 = ask1(np.vstack([q0, q0 + E]))
    A, eA = float(y1[0]), float(e1[0])
    B = y1[1:] - A
    rows = _Rows(ask2, q0, E, B, H)
    try:
        R = _scale(rows, Wdir)
    except PrecisionInsufficient:
        _too_many(rows, H)
        raise
    M = Wdir * R
    js = list(range(n))
    found = {}
    for i in range(nr):
        r = rows.row(M[i], js, A, eA)
        if r is not None:
            found[i] = r
    _too_many(rows, H)
    if not found:
        raise PrecisionInsufficient(f"float sweep: no row of lines was resolved ({rows.refused} of {rows.lines} lines "
                                    f"refused; {rows.why_text()})")
    m = max(len(r) for r in found.values())
    if m == 0:
        raise PrecisionInsufficient(
            f"float sweep: no row showed a step ({rows.refused} of {rows.lines} lines refused): the answers declare "
            f"errors of about {float(np.median(rows.relative)):.1g} of their size, which can hide every head; or the "
            "heads are too close to resolve; or every head has v = 0")
    if m > H:
        raise OracleInconsistent(f"the answers show {m} heads on every line of a row, more than the bound H = {H}")
    # a row may miss one head (a small height there, or steps beyond every window): the link names it
    kept = {i: r for i, r in found.items() if len(r) >= max(m - 1, 1)}
    if len(kept) < d:
        raise PrecisionInsufficient(
            f"float sweep: only {len(kept)} of {nr} rows showed at least {max(m - 1, 1)} of the {m} heads (d = {d} are "
            f"needed): the heads are not resolved (steps too small, too wide or too close), or near-equal heads "
            f"({rows.why_text() or 'no row refused'})")
    # the base row names the heads; a base on which two heads' labels nearly agree links few rows, so
    # when most rows stay unlinked the next row showing every head is tried (up to LINK_BASES)
    linker = None
    for base in [i for i, r in sorted(kept.items()) if len(r) == m][:LINK_BASES]:
        trial = _Linker(rows, M, kept, base, m, A, eA)
        for i in sorted(kept):
            if i != base:
                trial.link(i)
        if linker is None or len(trial.order) > len(linker.order):
            linker = trial
        if 2 * len(linker.order) > len(kept):
            break
    assert linker is not None
    # a head whose readings cannot determine its W with some room (linker.cover): draw more rows, at most
    # as many again, until each head's can
    for w in _frame(rng, nr, d):
        if all(linker.cover(h, d) >= d * (d + extra) for h in range(m)):
            break
        i = len(M)
        M = linker.M = np.vstack([M, R * w[None, :]])
        r = rows.row(M[i], js, A, eA)
        if r is not None and len(r) >= max(m - 1, 1):
            kept[i] = r
            linker.link(i)
    order = linker.order
    heads, bounds = [], []
    aside = 0
    used: set = set()
    for h in range(m):
        idx = [i for i in sorted(order) if order[i][h] is not None]
        if len(idx) < d:
            raise PrecisionInsufficient(
                f"float sweep: head {h + 1} was read in only {len(idx)} linked rows (d = {d} are needed; "
                f"{len(order)} of {len(M)} rows linked; {linker.why_text()})")
        if (cover := linker.cover(h, d)) < d * d:
            raise PrecisionInsufficient(
                f"float sweep: head {h + 1}'s slope readings can determine at most {cover} of the d² = {d * d} entries "
                f"of its W ({len(idx)} linked rows read it; a row or a line holds at most d useful readings): it is "
                "resolved on too few lines of too many rows (steps too wide, or beyond the window)")
        used |= set(idx)
        per = [kept[i][order[i][h]] for i in idx]
        heads_h, bounds_h, dropped = _solve(M[idx], E, q0, per, biases, d)
        aside += dropped
        heads.append(heads_h)
        bounds.append(bounds_h)
    V = sum(hd[1] for hd in heads) if heads else np.zeros(d)
    eV = sum(bd[1] for bd in bounds) if bounds else np.zeros(d)
    # the one-token answers give V's slopes f([q₀ + e_j]) − f([q₀]) = Vᵀe_j: the heads found must sum to it
    miss = np.abs(E @ V - B) / (np.abs(E) @ eV + e1[1:] + eA)
    if float(np.max(miss)) > MATCH:
        raise PrecisionInsufficient(
            f"float sweep: the {m} heads found sum to a V whose slopes miss the one-token answers' "
            f"f([q₀ + e_j]) − f([q₀]) by up to {float(np.max(miss)):.3g}× their errors: a head no line resolved (its "
            "steps beyond every window, or too small to see)")
    b = A - float(V @ q0)
    eb = eA + float(eV @ np.abs(q0))
    counts = SweepCounts(rows=len(M), lines=rows.lines, lines_refused=rows.refused, rows_dropped=len(M) - len(used),
                         links=rows.links, readings_aside=aside, scale=R, samples=rows.samples + len(y1),
                         relative_error=float(np.median(rows.relative)))
    return heads, (b, eb), bounds, counts


def _too_many(rows: _Rows, H: int) -> None:
    """Raise when most lines show one step more than the bound (a model with more heads than ``H``)."""
    if rows.excess and 2 * rows.excess > rows.lines:
        raise OracleInconsistent(
            f"{rows.excess} of {rows.lines} lines are fitted by {H + 1} steps and not by {H}: the model has more than "
            f"H = {H} canonical heads (raise the bound)")


def _unit(rng, d: int) -> np.ndarray:
    x = rng.normal(size=d)
    return x / np.linalg.norm(x)


def _frame(rng, n: int, d: int) -> np.ndarray:
    """``n`` random vectors in ℝ^d forming a tight frame (orthonormal columns, scaled to rows of mean
    square norm 1): every least-squares map over them is as well conditioned as ``n`` allows."""
    Q, _ = np.linalg.qr(rng.normal(size=(n, d)))
    return Q * np.sqrt(n / d)


def _scale(rows: _Rows, Wdir: np.ndarray) -> float:
    """The row length that makes the median step on a pilot line about :data:`WIDTH` wide: row 1 along
    line 1 at lengths 1, 8, …, 8⁵, then (a pilot line whose steps crowd) the next rows and lines."""
    flat = 0
    for k in range(PILOTS):
        w, j = Wdir[k % len(Wdir)], k % len(rows.E)
        R = 1.0
        for _ in range(6):
            fit = rows.line(R * w, j)
            if fit is None or not fit.steps:
                flat += fit is not None
                R *= 8.0
                continue
            width = float(np.median([1.0 / abs(s.gamma) for s in fit.steps]))
            return R * width / WIDTH
    if flat == 6 * PILOTS:
        raise PrecisionInsufficient(
            f"float sweep: every pilot line ({PILOTS} lines at 6 row lengths, 1 to 8^5) is a straight line within the "
            "answers' errors: no head shows a step (every v_h = 0 or every W_h = 0, a model of no heads, or steps "
            "beyond every window); the sweep returns no model without a step to read")
    raise PrecisionInsufficient(f"float sweep: no pilot line ({PILOTS} tried) was fitted within the answers' errors at "
                                "any row length tried (1 to 8^5): steps too close to resolve (near-equal or structured "
                                "heads), none at all, or answers less accurate than they declare")


#: Lines of a link row tried against one linked row, once they show every head, before the next is tried.
LINK_LINES = 3
#: Linked rows (showing every head) tried as the other half of a row's link.
LINK_BASES = 3


class _Linker:
    """Names each kept row's heads by the base row's: ``order[i][h]`` is the index in row i of the base
    row's head h (``None`` where row i misses it).  Row i is linked through a link row ``w_b + w_i``
    to the base or, failing that, to another linked row b that shows every head."""

    def __init__(self, rows: _Rows, M: np.ndarray, kept: dict, base: int, m: int, A: float, eA: float):
        self.rows, self.M, self.kept, self.m, self.A, self.eA = rows, M, kept, m, A, eA
        self.order: dict = {base: list(range(m))}
        self.why: dict = {}

    def reads(self, h: int) -> int:
        """How many linked rows show the base row's head h."""
        return sum(o[h] is not None for o in self.order.values())

    def cover(self, h: int, d: int) -> int:
        """A bound on the rank of head h's slope design: its readings of a row i (lines S_i) are
        ``w_i ⊗ e_j`` for j ∈ S_i, which span at most ``min(|S_i|, d)`` dimensions, and likewise
        per line; so the rank is at most both sums (and a fit needs d²)."""
        S = [self.kept[i][o[h]][4] for i, o in self.order.items() if o[h] is not None]
        per_line: dict = {}
        for g in S:
            for j in g:
                per_line[j] = per_line.get(j, 0) + 1
        return min(sum(min(len(g), d) for g in S), sum(min(k, d) for k in per_line.values()))

    def why_text(self) -> str:
        return "; ".join(f"{n} rows {why}" for why, n in self.why.items()) or "every kept row linked"

    def link(self, i: int) -> bool:
        full = [b for b in self.order if len(self.kept[b]) == self.m]
        why = "found no link line showing every head"
        n = len(self.rows.E)
        per = max(LINK_LINES, -(-n // LINK_BASES))  # link lines asked per b: about n over every b tried
        for b in full[:LINK_BASES]:
            tried = 0
            for j in range(min(per, n)):
                r = self.rows.row(self.M[b] + self.M[i], [j], self.A, self.eA)
                self.rows.links += 1  # every link line asked, by every base tried
                if r is None or len(r) != self.m:
                    continue
                perm = _link(self.kept[b], self.kept[i], r)
                if perm is not None:  # row i's heads named by row b's, and row b's by the base's
                    self.order[i] = [perm[a] for a in self.order[b]]
                    return True
                why = "had no unique pairing of their labels with a linked row's"
                tried += 1
                if tried == LINK_LINES:
                    break
        self.why[why] = self.why.get(why, 0) + 1
        return False


def _link(base: list, other: list, link: list) -> list | None:
    """The map naming ``other``'s heads by ``base``'s: each link head is the sum of one head of each
    (heights and offsets add).  ``other`` may miss one of base's heads: then exactly one link head
    pairs with nothing, and names the base head left over, which maps to ``None``.  ``None``
    unless every pairing is unique."""
    perm: list = [None] * len(base)
    left = []
    for L in link:
        hits = [(a, b) for a, x in enumerate(base) for b, y in enumerate(other)
                if _close(L[0], L[1], x[0] + y[0], x[1] + y[1]) and _close(L[2], L[3], x[2] + y[2], x[3] + y[3])]
        if not hits and len(other) < len(base):
            left.append(L)
            continue
        if len(hits) != 1 or perm[hits[0][0]] is not None:
            return None
        perm[hits[0][0]] = hits[0][1]
    named = [p for p in perm if p is not None]
    if len(set(named)) != len(named) or len(named) != len(other) or len(left) != len(base) - len(other):
        return None
    return perm


def _solve(M: np.ndarray, E: np.ndarray, q0: np.ndarray, per: list, biases: bool, d: int):
    """One head from its rows' readings: ``(W, v, c)`` and their first-order bounds.

    ``W`` comes from one weighted least-squares fit over every slope reading ``γ(i, j) =
    w_iᵀ W e_j`` of every row (``d²`` unknowns), so a row needs no set number of lines: the
    readings together must determine ``W``.  Readings that disagree with the rest beyond
    :data:`MATCH` times their errors are set aside, a few at a time (:func:`_robust`)."""
    r_idx = [r for r, p in enumerate(per) for _ in p[4]]
    j_idx = [j for p in per for j in p[4]]
    y = np.array([g[0] for p in per for g in p[4].values()])
    e = np.array([g[1] for p in per for g in p[4].values()])
    if len(y) < d * d:
        raise PrecisionInsufficient(
            f"float sweep: a head was resolved on only {len(y)} lines, fewer than the d² = {d * d} entries of its W")
    design = (M[r_idx][:, :, None] * E[j_idx][:, None, :]).reshape(len(y), d * d)
    x, eW, dropped = _robust(design, y, e)
    W, eW = x.reshape(d, d), eW.reshape(d, d)
    betas = np.array([p[0] for p in per])
    ebs = np.array([p[1] for p in per])
    v, ev, _ = _lsq(M, betas, ebs, "v (from the heights)")
    # the offsets o(i) = w_iᵀ(W q₀ + c); M⁺M = I, so c = M⁺o − W q₀ (bound |M⁺|e_o + |e_W||q₀|)
    os_ = np.array([p[2] for p in per])
    eos = np.array([p[3] for p in per])
    Wq0, eWq0 = W @ q0, eW @ np.abs(q0)
    u, eu, _ = _lsq(M, os_, eos, "W q₀ + c (from the offsets)")
    c, ec = u - Wq0, eu + eWq0
    if not biases:  # the offsets must be W's alone; c = 0 is then returned, within |ĉ| + e_c of the truth's
        off = np.abs(M @ Wq0 - os_) / (eos + np.abs(M) @ eWq0)
        if float(np.max(off)) > MATCH:
            raise OracleInconsistent(
                f"float sweep: a head's offsets are not its slopes' ({float(np.max(off)):.3g}× their errors at worst): "
                "the scores have biases (learn with biases=True)")
        c, ec = np.zeros(d), np.abs(c) + ec
    return (W, v, c), (eW, ev, ec), dropped


#: At most this share of a head's slope readings may be set aside as disagreeing.
ASIDE = 0.1


def _robust(A: np.ndarray, y: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Weighted least squares ``A x ≈ y`` that sets aside readings disagreeing beyond :data:`MATCH`
    times their errors: each round drops those whose standardised residual is at least half the
    worst, up to :data:`ASIDE` of them.  Returns ``x``, its bound and how many were set aside."""
    keep = np.ones(len(y), dtype=bool)
    for _ in range(8):
        x, bound, res, z = _wls(A[keep], y[keep], e[keep], "W (from the slopes)")
        if float(np.max(res / e[keep])) <= MATCH:
            return x, bound, int(len(y) - keep.sum())
        worst = float(np.max(z))
        at = np.flatnonzero(keep)[z >= max(0.5 * worst, 1.0)]
        if len(y) - keep.sum() + len(at) > ASIDE * len(y):
            break
        keep[at] = False
    raise PrecisionInsufficient(
        f"float sweep: a head's slope readings disagree beyond {MATCH:g}× their errors ({len(y) - int(keep.sum())} of "
        f"{len(y)} set aside, at most {ASIDE:.0%} may be): some line fits settled beside the truth")


def _wls(A: np.ndarray, y: np.ndarray, e: np.ndarray, what: str):
    """Weighted least squares by QR: ``x``, its first-order bound ``|P|(e + |ρ|/(1 − h))`` (ρ the
    residuals, h the leverages: ``ρ/(1 − h)`` is what a reading's own deviation would have to be to
    leave the residual ρ), the residuals ``|ρ|`` and their standardised sizes ``|ρ|/(e√(1 − h))``."""
    if A.shape[0] < A.shape[1]:
        raise PrecisionInsufficient(
            f"float sweep: {A.shape[0]} readings cannot determine {A.shape[1]} unknowns")
    Q, R = np.linalg.qr(A / e[:, None])
    # each unknown's column against the span of those before it (the sine of the angle; the weights of
    # the readings may spread over many decades, so R's diagonal alone says nothing of rank)
    sine = np.abs(np.diag(R)) / np.maximum(np.linalg.norm(R, axis=0), 1e-300)
    if not sine.size or float(sine.min()) <= 1e-10:
        raise PrecisionInsufficient(
            f"float sweep: the lines that resolved a head do not determine its {what}: one unknown's column lies "
            f"within {float(sine.min()):.2g} of the others' span")
    Pw = np.linalg.solve(R, Q.T)  # the weighted pseudo-inverse: x = Pw·(y/e)
    x = Pw @ (y / e)
    res = np.abs(A @ x - y)
    free = np.maximum(1.0 - np.einsum("ij,ij->i", Q, Q), 1e-6)
    return x, np.abs(Pw) @ (1.0 + res / (e * free)), res, res / (e * np.sqrt(free))
