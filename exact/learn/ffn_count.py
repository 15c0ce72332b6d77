"""How many breakpoints exact samples of a piecewise-linear function prove, and where they are.

Take exact samples ``(t_0, y_0), …, (t_n, y_n)`` (``t`` strictly increasing) of a continuous
piecewise-linear function ``h``.  The chord slopes ``σ_i`` between consecutive samples
*change* at sample ``i`` when ``σ_{i−1} ≠ σ_i``; then ``h`` is not linear on
``[t_{i−1}, t_{i+1}]``, so it has a breakpoint in the open window ``(t_{i−1}, t_{i+1})``.
A single breakpoint lies in the windows of at most two consecutive changes (the windows
of changes ``i`` and ``j > i + 1`` are disjoint), so a maximal run of ``r`` consecutive
changes needs at least ``⌈r/2⌉`` breakpoints, and the runs' windows are disjoint:

    count = Σ over runs ⌈r/2⌉   is a lower bound on the breakpoints of **every** such ``h``.

Suppose ``h`` has **exactly** ``count`` breakpoints.  Then every breakpoint lies in the
windows of a run, none lies elsewhere, and ``h`` is linear between.  For a run of even
length ``2j`` starting at change ``i`` the breakpoints are forced into the gaps
``(t_{i+2l}, t_{i+2l+1})``, with ``h`` linear on the sample pairs around each gap, so each
breakpoint is the crossing of the lines through ``(t_{i+2l−1}, t_{i+2l})`` and
``(t_{i+2l+1}, t_{i+2l+2})``; if those lines do not cross inside the gap, the run needs
one breakpoint more, and ``count`` is raised by one.  A run of length 1 at a sample ``i``
with ``2 <= i <= n − 2``, and no other change at ``i − 2`` or ``i + 2``, puts the breakpoint
exactly at that sample: inside a neighbouring gap it would change the neighbouring chord too,
and that chord is a line of ``h`` because no other breakpoint can lie beside it.  A run of
odd length ``>= 3``, or of length 1 next to an end sample or two samples from another
change (whose breakpoint may then sit in the chord between), leaves a choice, so the
positions are then not determined.

The ReLU learner uses this as the part of its proof that no oracle answer can fool: it
depends on nothing but the samples (see ``docs/ffn.md``, "All m units seen").
"""

from __future__ import annotations

from dataclasses import dataclass

from flint import fmpq

__all__ = ["Breakpoints", "proved_breakpoints"]


@dataclass(frozen=True)
class Breakpoints:
    """What exact samples prove about the breakpoints of a continuous piecewise-linear function.

    Attributes
    ----------
    count : int
        A lower bound on the number of breakpoints inside ``(t_0, t_n)`` of every continuous
        piecewise-linear function through the samples.
    positions : tuple of fmpq or None
        The breakpoints, sorted, of every such function with exactly ``count`` breakpoints,
        when the samples determine them; ``None`` when they do not (a run of odd length
        ``>= 3``, or a run that needs more breakpoints than ``count`` allows).
    """

    count: int
    positions: tuple | None


def _slope(t0: fmpq, y0: fmpq, t1: fmpq, y1: fmpq) -> fmpq:
    return (y1 - y0) / (t1 - t0)


def proved_breakpoints(samples) -> Breakpoints:
    """The breakpoints that exact samples ``[(t, y), ...]`` prove (see the module docstring).

    Samples may come in any order; repeated ``t`` must carry equal ``y``.

    Examples
    --------
    >>> h = lambda t: abs(3 * t - 1) + t          # one breakpoint, at 1/3
    >>> ts = [fmpq(k, 8) for k in range(9)]
    >>> proved_breakpoints([(t, h(t)) for t in ts])
    Breakpoints(count=1, positions=(1/3,))
    >>> proved_breakpoints([(t, fmpq(2) * t) for t in ts])   # linear: nothing proved
    Breakpoints(count=0, positions=())
    >>> peak = lambda ys: [(fmpq(t), fmpq(y)) for t, y in enumerate(ys)]
    >>> proved_breakpoints(peak([0, 1, 2, 1, 0]))   # a kink at a sample: there
    Breakpoints(count=1, positions=(2,))
    >>> proved_breakpoints(peak([0, 1, 0]))         # next to an end: somewhere in (0, 2)
    Breakpoints(count=1, positions=None)
    """
    pts: dict = {}
    for t, y in samples:
        t, y = fmpq(t), fmpq(y)
        if t in pts and pts[t] != y:
            raise ValueError(f"two samples at t = {t} with different values")
        pts[t] = y
    ts = sorted(pts)
    ys = [pts[t] for t in ts]
    n = len(ts)
    if n < 3:
        return Breakpoints(0, ())
    sig = [_slope(ts[i], ys[i], ts[i + 1], ys[i + 1]) for i in range(n - 1)]
    changes = [i for i in range(1, n - 1) if sig[i - 1] != sig[i]]
    change_set = set(changes)
    runs: list = []
    for i in changes:
        if runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    count = 0
    positions: list | None = []
    for run in runs:
        r = len(run)
        count += (r + 1) // 2
        if r == 1:
            # at its sample, unless a neighbouring chord could hold it unseen: next to an end sample,
            # or two samples from another change, whose breakpoint may sit in the chord between
            i = run[0]
            if i in (1, n - 2) or i - 2 in change_set or i + 2 in change_set:
                positions = None
            elif positions is not None:
                positions.append(ts[run[0]])
            continue
        if r % 2:
            positions = None
            continue
        for l in range(0, r, 2):
            i = run[l]  # the breakpoint must lie in (t_i, t_{i+1}); h is linear on [t_{i-1}, t_i] and [t_{i+1}, t_{i+2}]
            s_left, s_right = sig[i - 1], sig[i + 1]
            if s_left == s_right:
                b = None
            else:
                # y_i + s_left (b − t_i) = y_{i+1} + s_right (b − t_{i+1})
                b = (ys[i + 1] - ys[i] + s_left * ts[i] - s_right * ts[i + 1]) / (s_left - s_right)
            if b is None or not ts[i] < b < ts[i + 1]:
                count += 1  # one breakpoint cannot explain this pair of changes: the run needs one more
                positions = None
                break
            if positions is not None:
                positions.append(b)
    return Breakpoints(count, tuple(positions) if positions is not None else None)
