"""The line search of the float learners (docs/ffn.md, "From float answers"): answers along a line
``x(u) = P + u·D`` in float64, split into linear pieces by second differences held to the answers'
declared errors, and each kink located where the neighbouring pieces' lines cross, confirmed by three
more answers.

The points asked are exact in float64: ``P`` and ``D`` have ``GRID_BITS``-bit entries in ``(−unit, unit)``
and ``(−1, 1)``, and ``u`` is rounded by :func:`on_grid` (scaled by ``unit``, a power of two).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import OracleInconsistent, PrecisionInsufficient

__all__ = ["GRID_BITS", "U_BITS", "MAX_DEPTH", "Searcher", "on_grid"]

MAX_DEPTH = 14


@dataclass
class _Line:
    """``h(u) = s·u + c`` on ``[lo, hi]`` (both ends sampled), with the errors of its two end values."""

    lo: float
    hi: float
    y_lo: float
    y_hi: float
    e_lo: float
    e_hi: float

    @property
    def s(self) -> float:
        return (self.y_hi - self.y_lo) / (self.hi - self.lo)

    def at(self, u: float) -> float:
        """The line at ``u``, from its nearer end (a far end's large value would cost precision)."""
        if abs(u - self.hi) < abs(u - self.lo):
            return self.y_hi + self.s * (u - self.hi)
        return self.y_lo + self.s * (u - self.lo)

    def err(self, u: float) -> float:
        """The error of :meth:`at` from the end values' errors (linear interpolation and extrapolation),
        plus the rounding of :meth:`at` itself."""
        w = self.hi - self.lo
        near = min(abs(u - self.hi), abs(u - self.lo))
        own = 4 * 2.0**-53 * (max(abs(self.y_lo), abs(self.y_hi)) + abs(self.s) * (near + w))
        return self.e_lo * abs(self.hi - u) / w + self.e_hi * abs(u - self.lo) / w + own

    @property
    def s_err(self) -> float:
        return (self.e_lo + self.e_hi) / (self.hi - self.lo)


@dataclass
class _Scan:
    """Kinks ``t_k`` (sorted, with errors) and the lines between them."""

    kinks: list = field(default_factory=list)
    errs: list = field(default_factory=list)
    lines: list = field(default_factory=list)


def _pieces(us: np.ndarray, ys: np.ndarray, es: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs ``[i, j]`` (``j >= i + 2``) whose interior samples lie on the line of their neighbours."""
    n = len(us)
    flat = np.zeros(n, dtype=bool)
    if n >= 3:
        # equal spacing is not assumed: the middle sample against the chord of its neighbours
        w = (us[1:-1] - us[:-2]) / (us[2:] - us[:-2])
        chord = ys[:-2] + w * (ys[2:] - ys[:-2])
        flat[1:-1] = np.abs(ys[1:-1] - chord) <= 2 * (es[1:-1] + (1 - w) * es[:-2] + w * es[2:]) + 1e-300
    runs, i = [], 0
    while i < n - 2:
        if not flat[i + 1]:
            i += 1
            continue
        j = i + 1
        while j + 1 < n - 1 and flat[j + 1]:
            j += 1
        runs.append((i, j + 1))
        i = j + 2  # the next run starts after a gap: the kink lies in [u_{j+1}, u_{next}]
    return runs


class Searcher:
    """The kinks along ``X0 + u·D`` (``ask(X) -> (values, errors)``): :meth:`scan` of the points ``us``.
    ``X0``'s entries are ``GRID_BITS``-bit multiples of ``unit`` (a power of two) below it, ``D``'s in (−1, 1)."""

    def __init__(self, ask, X0: np.ndarray, D: np.ndarray, max_kinks: int, *, unit: float = 1.0):
        self.ask, self.X0, self.D, self.max_kinks, self.unit = ask, X0, D, max_kinks, unit

    def h(self, us) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The answers at the line points ``u`` (rounded to :func:`on_grid`, so that ``P + u·D`` is
        exact in float64): ``(u, values, errors)``."""
        us = on_grid(np.asarray(us, dtype=np.float64) / self.unit) * self.unit
        ys, es = self.ask(self.X0[None, :] + us[:, None] * self.D[None, :])
        return us, ys, es

    def scan(self, us: np.ndarray) -> _Scan:
        us, ys, es = self.h(us)
        return self._solve(us, ys, es, 0)

    def _solve(self, us, ys, es, depth: int) -> _Scan:
        runs = _pieces(us, ys, es)
        if not runs:
            raise PrecisionInsufficient("the float answers show no linear stretch along the line (kinks closer than "
                                        "the samples, or the answers' noise beyond their declared errors)")
        out = _Scan()
        lines = [_Line(us[i], us[j], ys[i], ys[j], es[i], es[j]) for i, j in runs]
        if runs[0][0] != 0 or runs[-1][1] != len(us) - 1:  # the window's ends must be linear stretches
            return self._edges(us, ys, es, runs, lines, depth)
        out.lines.append(lines[0])
        for (i0, j0), (i1, j1), right in zip(runs, runs[1:], lines[1:]):
            sub = self._gap(us[j0], us[i1], out.lines[-1], right, depth)
            out.kinks += sub.kinks
            out.errs += sub.errs
            out.lines[-1] = sub.lines[0]  # the gap's search may have lengthened either line
            out.lines += sub.lines[1:]
        if len(out.kinks) > self.max_kinks:
            raise OracleInconsistent(f"more than {self.max_kinks} kinks along the line: not a ReLU network with that "
                                     "many units")
        return out

    def _edges(self, us, ys, es, runs, lines, depth):
        """A window whose end is no linear stretch: sample the ends more finely, then solve again."""
        if depth >= MAX_DEPTH:
            raise PrecisionInsufficient("kinks crowd the window's end closer than float64 resolves")
        extra = []
        if runs[0][0] != 0:
            extra += list(np.linspace(us[0], us[runs[0][0]], 10)[1:-1])
        if runs[-1][1] != len(us) - 1:
            extra += list(np.linspace(us[runs[-1][1]], us[-1], 10)[1:-1])
        eu, ey, ee = self.h(extra)
        allu = np.concatenate([us, eu])
        order = np.argsort(allu)
        return self._solve(allu[order], np.concatenate([ys, ey])[order], np.concatenate([es, ee])[order], depth + 1)

    def _gap(self, a: float, b: float, left: _Line, right: _Line, depth: int, points: int = 10) -> _Scan:
        """The kinks in ``(a, b)``, between the known lines ``left`` (ends at ``a``) and ``right``."""
        ds = left.s - right.s
        if ds != 0 and points == 10:
            t = a + (right.at(a) - left.at(a)) / ds
            if a <= t <= b:
                # the side points just beyond t's own uncertainty: a second kink in the gap then shows
                t_err = (left.err(t) + right.err(t)) / abs(ds)
                eta = min((b - a) / 4, max(16 * t_err, 2.0**-30 * max(1.0, abs(t))))
                pts, ys, es = self.h([t - eta, t, t + eta])
                moved = abs(ds) * abs(pts[1] - t)  # the point asked is t on the grid: h there may be off both
                ok = [abs(ys[0] - left.at(pts[0])) <= 2 * (es[0] + left.err(pts[0])),
                      abs(ys[1] - left.at(pts[1])) <= 2 * (es[1] + left.err(pts[1]) + right.err(pts[1]) + moved),
                      abs(ys[2] - right.at(pts[2])) <= 2 * (es[2] + right.err(pts[2]))]
                if all(ok):
                    err = (left.err(t) + right.err(t)) / abs(ds)
                    return _Scan([t], [err], [left, right])
        if depth >= MAX_DEPTH or b - a <= 1e-12 * max(1.0, abs(a), abs(b)):
            raise PrecisionInsufficient(f"two kinks along the line within {b - a:.2g} of each other: closer than the "
                                        "float answers resolve")
        inner, ys, es = self.h(np.linspace(a, b, points)[1:-1])
        us = np.concatenate([[a], inner, [b]])
        # the gap's ends sit on the known lines: their values are those lines' (with their errors)
        ys = np.concatenate([[left.at(a)], ys, [right.at(b)]])
        es = np.concatenate([[left.err(a)], es, [right.err(b)]])
        keep = np.concatenate([[True], np.diff(us) > 0])  # points the grid merged
        us, ys, es = us[keep], ys[keep], es[keep]
        if us[-1] != b:
            us, ys, es = np.append(us[:-1], b), np.append(ys[:-1], right.at(b)), np.append(es[:-1], right.err(b))
        if not _pieces(us, ys, es):  # kinks in every cell: sample the gap four times finer
            return self._gap(a, b, left, right, depth + 1, 4 * points)
        return self._solve_inner(us, ys, es, left, right, depth + 1)

    def _solve_inner(self, us, ys, es, left, right, depth):
        """The gap's samples ``us`` (its ends on ``left`` and ``right``): the kinks between its pieces.

        Pieces that meet (a run starting where ``left`` ends, or ending where ``right`` starts)
        are first joined into one line through their outer ends: the longest baseline, so the
        most accurate slope, for the kinks on either side."""
        runs = _pieces(us, ys, es)
        items = [(left, us[0])] + [(_Line(us[i], us[j], ys[i], ys[j], es[i], es[j]), us[j]) for i, j in runs]
        items.append((right, right.hi))
        joined: list = []
        for line, stop in items:
            if joined and line.lo <= joined[-1][1]:
                prev = joined[-1][0]
                joined[-1] = (_Line(prev.lo, line.hi, prev.y_lo, line.y_hi, prev.e_lo, line.e_hi), stop)
            else:
                joined.append((line, stop))
        out = _Scan(lines=[joined[0][0]])
        for (_, end), (line, _) in zip(joined, joined[1:]):
            g = self._gap(end, line.lo, out.lines[-1], line, depth)
            out.kinks += g.kinks
            out.errs += g.errs
            out.lines[-1] = g.lines[0]
            out.lines += g.lines[1:]
        return out


#: Bits of the line's P and D entries (integers over 2^GRID_BITS in (−1, 1)), and of the line points u
#: relative to max(1, |u|): then every point P + u·D the search asks is exact in float64.
GRID_BITS = 12
U_BITS = 52 - GRID_BITS


def on_grid(us: np.ndarray) -> np.ndarray:
    """``u`` rounded to a multiple of ``2^-U_BITS·2^⌈log₂ max(1, |u|)⌉``.

    >>> float(on_grid(np.array([1 / 3]))[0]) * 2**40 % 1 == 0
    True
    """
    mag = np.ceil(np.log2(np.maximum(1.0, np.abs(us))))
    quantum = np.ldexp(1.0, (mag - U_BITS).astype(int))
    return np.round(us / quantum) * quantum
