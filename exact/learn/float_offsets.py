"""Each hyperplane's offset read again near the origin (docs/ffn.md, "From float answers").

The line search reads a plane's offset as ``o = −n·x_k`` at its crossing ``x_k`` of the search line.
The normal ``n`` carries an error ``δn`` from the gradient differences, and ``o`` inherits
``|δn|·|x_k|``: a plane that crosses the line far out (a trained network's planes often do) gets an
offset far worse than its normal.  Here each plane is crossed a second time, along its own normal,
through a point of it near the origin (its foot ``−o·n/‖n‖²``, or a point beside it where the other
planes leave room).  Along a normal the slope changes most at the kink, so the crossing ``t*`` is
located best, and ``|x*|`` is as small as the plane allows: ``o = −n·x*`` then carries
``|δn|·|x*| + |n·D|·δt*``.

The second reading replaces the first where its estimate is smaller, and the two must agree within
the sum of their estimates (else the answers contradict one of them: :class:`PrecisionInsufficient`).
A segment that shows no kink, or more than one, says nothing of the offset: the plane keeps its
first reading, as it does when its neighbours leave no room near the origin, or when its own row
places the crossing too loosely (beyond an eighth of the room) for the segment to be sure to hold it.  Cost: 9 queries per plane when the first guess of the crossing is confirmed.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import PrecisionInsufficient
from .float_line import GRID_BITS, Searcher

__all__ = ["refine_offsets"]

#: Distances from the foot, along a direction in the plane, tried for the second crossing's point.
SHIFTS = (0.0, 2.0**-6, 2.0**-4, 2.0**-2)
#: The room each side (along the line, in units of the point's scale) that accepts a point at once.
ENOUGH_ROOM = 2.0**-6
#: Below this room a plane keeps its first reading (its neighbours' planes are not known well enough
#: to keep the segment's samples off them).
LEAST_ROOM = 2.0**-24
#: The segment's samples each side, as fractions of the room.
FRACTIONS = (0.9, 0.6, 0.3)


def _grid(x: np.ndarray, unit: float) -> np.ndarray:
    lim = (1 << GRID_BITS) - 1
    return np.clip(np.round(x / unit * (1 << GRID_BITS)), -lim, lim) / (1 << GRID_BITS) * unit


def _line(N: np.ndarray, Ne: np.ndarray, j: int, shift: float, q: np.ndarray) -> tuple:
    """The point (on the grid of :class:`Searcher`), direction, unit and the room left and right of plane
    ``j``'s crossing ``t_j`` along it: up to the nearest other crossing, less both crossings' uncertainty
    (from the rows' estimates), so that the segment's samples keep off every learned plane but ``j``."""
    d = N.shape[1] - 1
    n, o = N[j, :d], N[j, d]
    foot = -o * n / float(n @ n) + shift * q
    big = float(np.abs(foot).max())
    unit = 1.0 if big < 1 - 2.0**-GRID_BITS else 2.0 ** (math.ceil(math.log2(big)) + 1)
    P = _grid(foot, unit)
    D = _grid(n / float(np.abs(n).max()), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = N[:, :d] @ D
        t = -(N[:, :d] @ P + N[:, d]) / slope
        # a crossing's uncertainty: the row's errors at the point P + t·D, over the row's slope along D
        reach = np.abs(P)[None, :] + np.abs(t)[:, None] * np.abs(D)[None, :]
        dt = ((Ne[:, :d] * reach).sum(axis=1) + Ne[:, d]) / np.abs(slope)
    tj, dtj = float(t[j]), float(dt[j])
    keep = np.isfinite(t) & (np.arange(len(t)) != j)
    others, dto = t[keep], np.nan_to_num(dt[keep], nan=np.inf)
    gap = np.abs(others - tj)
    # each neighbour's uncertainty shrinks the room by at most half its distance (a nearly parallel plane's
    # crossing is uncertain far beyond it; the kink search then shows any kink that strays in)
    near = gap - np.minimum(dto + dtj, gap / 2)
    cap = unit
    right = float(np.min(near[others >= tj], initial=cap))  # a crossing at t_j itself closes both sides
    left = float(np.min(near[others <= tj], initial=cap))
    return P, D, unit, tj, dtj, left, right


def _second_crossing(ask, N: np.ndarray, Ne: np.ndarray, kap: np.ndarray, ke: np.ndarray, j: int) -> tuple | None:
    """``(o, error)`` from plane ``j``'s crossing of its normal line near the origin, or ``None``."""
    d = N.shape[1] - 1
    n = N[j, :d]
    q = np.random.default_rng(j).standard_normal(d)
    q -= (q @ n) / float(n @ n) * n
    nq = float(np.linalg.norm(q))
    q = q / nq if nq > 0 else q
    candidates = []
    for shift in SHIFTS:
        P, D, unit, tj, dtj, left, right = _line(N, Ne, j, shift, q)
        candidates.append((min(left, right) / unit, P, D, unit, tj, dtj, left, right))
        if candidates[-1][0] >= ENOUGH_ROOM:
            break
    room, P, D, unit, tj, dtj, left, right = max(candidates, key=lambda c: c[0])
    if room < LEAST_ROOM:
        return None
    us = np.array([tj - f * left for f in FRACTIONS] + [tj + f * right for f in FRACTIONS[::-1]])
    scan = Searcher(ask, P, D, 2 * len(N) + 2, unit=unit).scan(us)
    if len(scan.kinks) != 1:
        # none: the kink is below the answers' resolution here; more: a neighbour strayed into the segment, or
        # a unit the search line missed (the off-line checks look for those): the first reading stays
        return None
    t, terr = scan.kinks[0], scan.errs[0]
    # the kink is plane j's only if its slope jumps as j's term does: κ|n·x + o| changes the slope along D by
    # 2κ|n·D| (a neighbour that strayed in jumps by its own κ and normal)
    left_line, right_line = scan.lines[0], scan.lines[1]
    jump = right_line.s - left_line.s
    want = 2 * kap[j] * abs(float(n @ D))
    slack = left_line.s_err + right_line.s_err + 2 * ke[j] * abs(float(n @ D)) + 2 * abs(kap[j]) * float(Ne[j, :d] @ np.abs(D))
    if abs(jump - want) > 4 * slack + 2.0**-40 * abs(want):
        return None
    x = P + t * D
    o = -float(n @ x)
    terms = float(np.abs(n) @ (np.abs(P) + abs(t) * np.abs(D)))
    err = float(np.abs(x) @ Ne[j, :d] + abs(float(n @ D)) * terr) + (d + 6) * 2.0**-52 * terms
    return o, err


def refine_offsets(ask, N: np.ndarray, Ne: np.ndarray, kap: np.ndarray, ke: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The rows ``N`` (normal and offset per plane, largest normal entry 1; ``kap`` their kinks, ``ke`` the
    kinks' errors) with each offset read again near the origin where that reading's estimate is smaller;
    ``ask(X) -> (values, errors)``.  Two passes: a plane not read again in the first is tried once more
    with its neighbours' rows as the first pass left them.

    Returns ``(N, Ne, refined)``: the rows, their errors and how many offsets were replaced.

    Raises
    ------
    PrecisionInsufficient
        The two readings of an offset differ by more than the sum of their estimates.
    """
    d = N.shape[1] - 1
    N, Ne = N.copy(), Ne.copy()
    done: set = set()
    replaced = 0
    for _ in range(2):
        for j in range(len(N)):
            if j in done:
                continue
            got = _second_crossing(ask, N, Ne, kap, ke, j)
            if got is None:
                continue
            o, err = got
            if abs(o - N[j, d]) > Ne[j, d] + err:
                raise PrecisionInsufficient(f"hyperplane #{j}'s offset read at two crossings differs by "
                                            f"{abs(o - N[j, d]):.3g}, beyond the estimates {Ne[j, d]:.3g} and {err:.3g}")
            done.add(j)
            if err < Ne[j, d]:
                N[j, d], Ne[j, d] = o, err
                replaced += 1
    return N, Ne, replaced
