"""Exact breakpoint search along a segment, for a piecewise-linear black box (the ReLU learner's path).

On a segment ``x(t) = P + t·D``, ``t ∈ [0, 1]``, a bias-free ReLU network restricted to the
segment, ``h(t) = g(x(t))``, is piecewise linear with rational breakpoints.  The search
finds them exactly, without bisecting to a tolerance:

* every interval ``(l, r)`` carries the line ``ℓ_l`` of ``h`` just right of ``l`` and the line
  ``ℓ_r`` just left of ``r``;
* equal lines: no breakpoint; otherwise the candidate is their intersection ``t*``;
* ``t*`` is **accepted** only when ``h`` is on ``ℓ_l`` at a point just left of it and on
  ``ℓ_r`` at a point just right of it: points on both sides, two queries.  A single-point
  check is unsafe (kinks of opposite signs can put ``h(t*)`` on both lines by
  coincidence); two points off by coincidence at once need a structured network, and
  then the chain and replay checks below catch the miss;
* otherwise ``h`` is linear on the short window ``(a, c)`` around ``t*`` (or around a short
  dyadic point near the middle, when ``t*`` lies outside), so the same two answers give its
  line there, and the interval splits into ``(l, a)`` and ``(c, r)``.  Every step costs two
  queries.

"Just left/right" means within ``offset`` (default ``2^-32`` of the segment), at short
dyadic points.  What the search rests on is checked afterwards: the lines of consecutive
breakpoints must chain (the line right of one breakpoint is the line left of the next),
and the learner replays every answer against the model it builds.  A box that is not
piecewise linear (a smooth function) keeps failing the acceptance test; the search stops
with :class:`~exact.errors.OracleInconsistent` when the breakpoints exceed ``max_breakpoints``
or an interval shrinks below ``2^-min_width_bits``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flint import fmpq

from ..errors import OracleInconsistent

__all__ = ["Line", "Breakpoint", "SegmentScan", "scan_segment", "dyadic_between", "PathRetry"]

_ZERO, _ONE = fmpq(0), fmpq(1)


class PathRetry(Exception):
    """The path met a degenerate configuration (a self-check failed): try another path."""


@dataclass(frozen=True)
class Line:
    """``ℓ(t) = slope·t + intercept`` (exact)."""

    slope: fmpq
    intercept: fmpq

    @classmethod
    def through(cls, t1: fmpq, y1: fmpq, t2: fmpq, y2: fmpq) -> "Line":
        s = (y2 - y1) / (t2 - t1)
        return cls(s, y1 - s * t1)

    def __call__(self, t: fmpq) -> fmpq:
        return self.slope * t + self.intercept


@dataclass(frozen=True)
class Breakpoint:
    """A breakpoint ``t`` of ``h`` with the lines on its left and right."""

    t: fmpq
    left: Line
    right: Line


@dataclass(frozen=True)
class SegmentScan:
    """Every breakpoint of ``h`` on ``(0, 1)``, sorted, and the lines of the regions between them
    (``lines[k]`` holds on ``(t_{k-1}, t_k)``, with ``t_{-1} = 0`` and ``t_K = 1``)."""

    breakpoints: tuple
    lines: tuple
    queries: int
    end: fmpq  # h(1)


def _crossing(u: Line, v: Line) -> fmpq | None:
    """Where two lines cross (``None`` if parallel)."""
    if u.slope == v.slope:
        return None
    return (v.intercept - u.intercept) / (u.slope - v.slope)


def dyadic_between(a: fmpq, b: fmpq) -> fmpq:
    """The dyadic rational with the smallest denominator in the open interval ``(a, b)``, ``a < b``.

    >>> dyadic_between(fmpq(1, 3), fmpq(1, 2))
    3/8
    """
    k, scale = 0, 1
    while True:
        c = (a * scale).floor() + 1
        q = fmpq(c, scale)
        if q < b:
            return q
        k += 1
        scale <<= 1


def scan_segment(
    h: Callable[[list], list],
    *,
    start: fmpq | None = None,
    offset: fmpq = fmpq(1, 2**32),
    max_breakpoints: int = 1 << 16,
    min_width_bits: int = 256,
    interior: Callable[[fmpq, fmpq], fmpq] | None = None,
) -> SegmentScan:
    """Find every breakpoint of the piecewise-linear ``h`` on ``(0, 1)`` exactly.

    Parameters
    ----------
    h : callable
        ``h(ts) -> values``: ``h`` at a batch of ``t`` (``fmpq``), exactly; each call is counted
        by the caller.
    start : fmpq, optional
        ``h(0)``, when it is already known (it is not asked again).
    offset : fmpq
        How close to a point its side lines are measured.
    max_breakpoints, min_width_bits :
        When to give up on a box that is not piecewise linear.
    interior : callable, optional
        ``interior(lo, hi) -> t`` with ``lo < t < hi``: after the search, ``h`` is asked at one
        such point inside every region it takes as linear (one query each, repeated for
        regions that new breakpoints create).  A point off the region's line reveals
        structure the search stepped over (a tent between its samples), which is then
        searched like the rest.  ``None`` (default): no such points.

    Examples
    --------
    >>> f = lambda t: abs(3 * t - 1) - 2 * abs(t - fmpq(3, 4)) + t
    >>> scan = scan_segment(lambda ts: [f(t) for t in ts])
    >>> [b.t for b in scan.breakpoints]
    [1/3, 3/4]
    """
    asked = 0

    def ask(ts):
        nonlocal asked
        asked += len(ts)
        return h(ts)

    d0 = offset
    if start is None:
        y0, y0p, y1m, y1 = ask([_ZERO, d0, _ONE - d0, _ONE])
    else:
        y0 = start
        y0p, y1m, y1 = ask([d0, _ONE - d0, _ONE])
    first, last = Line.through(_ZERO, y0, d0, y0p), Line.through(_ONE - d0, y1m, _ONE, y1)
    found: dict = {}
    stack = [(_ZERO, _ONE, first, last)]
    min_width = fmpq(1, 2**min_width_bits)
    # A window on neither line gives a chord taken as h's line there.  If a breakpoint sat
    # exactly at the candidate (outer lines can meet exactly at an inner breakpoint in
    # structured networks), the chord is no line of h and the intervals next to it cannot
    # resolve; after two failures next to a chord, h at its candidate shows the kink.
    chords: dict = {}  # id(line) -> [a, t, c, ya, yc, failures, replacement or None, line]
    # (each entry holds its line, so that no other line can be allocated at the same id)

    def resolve(line, side):
        info = chords.get(id(line))
        if info is None or info[6] is None:
            return line
        return info[6][side]

    def split(l, r, ll, lr, t, yt):
        """``h(t)`` is on neither outer line: one more point gives h's line at ``t``, and the interval splits there."""
        c = dyadic_between(t, t + min(d0, (r - t) / 4))
        (yc,) = ask([c])
        mid = Line.through(t, yt, c, yc)
        stack.append((c, r, mid, lr))
        stack.append((l, t, ll, mid))

    def note_failure(*lines):
        for line in lines:
            info = chords.get(id(line))
            if info is not None and info[6] is None:
                info[5] += 1

    probed: set = set()
    while True:
        while stack:
            l, r, ll, lr = stack.pop()
            ll, lr = resolve(ll, 1), resolve(lr, 0)
            for line in (ll, lr):
                info = chords.get(id(line))
                if info is not None and info[6] is None and info[5] >= 8:
                    a, t, c, ya, yc = info[:5]
                    (yt,) = ask([t])
                    left, right = Line.through(a, ya, t, yt), Line.through(t, yt, c, yc)
                    info[6] = (line, line) if left == right else (left, right)
                    if left != right:
                        found[t] = Breakpoint(t, left, right)
            ll, lr = resolve(ll, 1), resolve(lr, 0)
            if ll == lr:
                continue
            if len(found) > max_breakpoints:
                raise OracleInconsistent(
                    f"the black box is not piecewise linear along the search path (more than {max_breakpoints} "
                    "breakpoints): not a ReLU network with that many units"
                )
            if r - l < min_width:  # not piecewise linear here, or kinks closer than the windows resolve
                raise PathRetry(f"an interval shrank below 2^-{min_width_bits} without resolving")
            t = None
            if ll.slope != lr.slope:
                t = (lr.intercept - ll.intercept) / (ll.slope - lr.slope)
                if not l < t < r:
                    t = None
            if t is None:  # parallel lines, or crossing outside: at least two breakpoints
                # one point near the middle first: on ℓ_l, the breakpoints lie right of it; on ℓ_r,
                # left of it; on neither, it is inside and one more point gives its line
                note_failure(ll, lr)
                quarter = (r - l) / 4
                t = dyadic_between(l + quarter, r - quarter)
                (yt,) = ask([t])
                if yt == ll(t):
                    stack.append((t, r, ll, lr))
                    continue
                if yt == lr(t):
                    stack.append((l, t, ll, lr))
                    continue
                split(l, r, ll, lr, t, yt)
                continue
            eps = min(d0, (t - l) / 4, (r - t) / 4)
            a, c = dyadic_between(t - eps, t), dyadic_between(t, t + eps)
            ya, yc = ask([a, c])
            left_ok, right_ok = ya == ll(a), yc == lr(c)
            if left_ok and right_ok:
                found[t] = Breakpoint(t, ll, lr)
                continue
            note_failure(ll, lr)
            if left_ok:  # ℓ_l holds up to a
                if yc == ll(c):  # and past c: every breakpoint lies right of c
                    stack.append((c, r, ll, lr))
                    continue
                # h leaves ℓ_l inside the window: a breakpoint within eps of t (t was nearly right)
                c2 = dyadic_between(c, c + min(d0, (r - c) / 4))
                (yc2,) = ask([c2])
                right = Line.through(c, yc, c2, yc2)
                b = _crossing(ll, right)
                stack.append((c2, r, right, lr))
                if b is not None and a < b < c:  # points on both sides, on their lines, close to b
                    found[b] = Breakpoint(b, ll, right)
                else:
                    stack.append((a, c, ll, right))
                continue
            if right_ok:  # the mirror image: ℓ_r holds from c on
                if ya == lr(a):
                    stack.append((l, a, ll, lr))
                    continue
                a2 = dyadic_between(a - min(d0, (a - l) / 4), a)
                (ya2,) = ask([a2])
                left = Line.through(a2, ya2, a, ya)
                b = _crossing(left, lr)
                if b is not None and a < b < c:
                    found[b] = Breakpoint(b, left, lr)
                else:
                    stack.append((a, c, left, lr))
                stack.append((l, a2, ll, left))
                continue
            # h is on neither line near t: t is not a breakpoint (or the chord is repaired later),
            # h is linear on the short window (a, c), so the two answers give its line there,
            # and the interval splits around it
            mid = Line.through(a, ya, c, yc)
            chords[id(mid)] = [a, t, c, ya, yc, 0, None, mid]
            stack.append((c, r, mid, lr))
            stack.append((l, a, ll, mid))
        if interior is None:
            break
        # one point inside every region taken as linear: off its line, something hides there
        ts_now = [_ZERO] + sorted(found) + [_ONE]
        lines_now = [first] + [found[t].right for t in sorted(found)]
        for lo, hi, line in zip(ts_now, ts_now[1:], lines_now):
            if (lo, hi) in probed:
                continue
            probed.add((lo, hi))
            t = interior(lo, hi)
            (yt,) = ask([t])
            if yt == line(t):
                continue
            split(lo, hi, line, line, t, yt)
        if not stack:
            break

    bps = tuple(found[t] for t in sorted(found))
    lines = [first] + [b.right for b in bps]
    for k, b in enumerate(bps):  # the lines must chain: right of one breakpoint = left of the next
        if b.left != lines[k]:
            raise PathRetry(f"the lines around breakpoint {k} do not chain (a breakpoint hid in a measuring window)")
    if lines[-1] != last:
        raise PathRetry("the last region's line is not the line measured at the segment's end")
    return SegmentScan(bps, tuple(lines), asked, y1)
