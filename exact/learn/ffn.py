"""Exact extraction of a bias-free one-hidden-layer ReLU network ``g(x) = wᵀReLU(Ax)`` in ℚ.

Every hyperplane ``a_j·x = 0`` passes through the origin, so the path ``p → q → −p``
crosses each one exactly once (``a_j·x`` changes sign between ``p`` and ``−p``, and is
linear on each of the two segments).  The learner:

1. **Finds every breakpoint exactly** on both segments (:mod:`exact.learn.ffn_path`): the
   lines of ``g`` along the path are fitted from exact answers, candidates are their
   intersections, and a candidate is accepted only when points on both sides lie on
   their lines.
2. **Measures the gradient of every region the path visits** (``m + 1`` of them): on a
   region ``g(x) = G·x`` (bias-free, so linear on each cone), the path gives two equations
   for free (Euler's ``G·x_r = g(x_r)`` from the fitted line, and the slope ``G·D``), and
   ``d − 2`` coordinate probes ``g(x_r + δe_i)`` give the rest.
3. **Reads each hyperplane off a gradient jump**: across hyperplane ``k`` the gradient
   jumps by ``2κ_k·sign(n_k·D)·n_k``, which gives the normal ``n_k`` (first nonzero entry 1)
   and the kink ``κ_k``; the residual linear part is ``L = G_r − Σ_k κ_k·sign(n_k·x_r)·n_k``.
   This function-level form (:class:`~exact.ffn.FunctionForm`) is always identifiable.
4. **Orients the units** (:mod:`exact.learn.ffn_orient`): one exact solve when the normals
   are independent, a subset sum when they are not; every solution is reported.
5. **Checks itself**: every probe is proved to lie in its region (exact signs against every
   normal found), the fitted lines must chain, the learned network must reproduce every
   answer of the run exactly, and (``checks``, default 8) random points are decided
   exactly.  A degenerate path (a hyperplane through ``p``, two breakpoints at one point, a
   kink hidden in a measuring window) fails one of these and the learner retries on a new
   path (``retries``); an oracle that is not a ReLU network raises
   :class:`~exact.errors.OracleInconsistent`.

A hyperplane through ``p`` is never crossed (its unit is linear along the whole path); one
more query, ``g(−q)``, against the odd identity ``g(x) − g(−x) = 2L·x`` exposes it.  Two
hyperplanes crossing the path at one point look like one hyperplane with the sum of their
normals, right all along the path and wrong away from it; two random points off the path
(with the driver's six verification points, eight random points in all) expose it.  Either
sends the learner to a new path.

The count is ``(m + 1)(d − 2)`` coordinate probes, about four queries per breakpoint (two
per acceptance or split), seven for the path's ends and one for ``g(−q)``, plus the
verification points.
"""

from __future__ import annotations

import secrets

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import fmpq

from .. import registry
from ..errors import ExactAttentionError, InvalidArgument, OracleInconsistent
from ..ffn import FunctionForm, ReLUFFN, UnitForm  # noqa: F401 (ReLUFFN: doctest)
from ..linalg import QMatrix
from ..numbers import coprime_fraction, format_rational
from ..oracles import ExactAnswer
from ..protocols import Oracle
from ..sequences import Sequence
from .driver import Run, oracle_dimension
from .ffn_orient import Orientation, orient
from .ffn_count import proved_breakpoints
from .ffn_path import PathRetry, dyadic_between, scan_segment
from .details import Comparison, Details
from .ffn_terms import PATH_SEED, _seed_ok, at_most, check_options  # noqa: F401 (re-exported)
from .result import LearnResult

__all__ = ["learn_ffn", "ffn_query_bound", "SPEC", "Sighting", "failure_bound"]

#: Random points the learner itself checks (a mismatch sends it to another path); with the
#: driver's :data:`DEFAULT_FFN_CHECKS` verification points, 8 random points are decided exactly.
OFF_PATH_CHECKS = 2
DEFAULT_FFN_CHECKS = 6
_PATH_BITS = 20  # p and q have integer entries in [−2^20, 2^20]
_PROBE_BITS = 24  # coordinate probes start at 2^-24 of the region's width along the path


def ffn_query_bound(d: int, m: int) -> int:
    """``(m + 1)(d − 2) + 10m + 32``: the count a run stays within (verification and the check
    path of "all m units seen" included) on paths without degeneracies."""
    return (m + 1) * max(d - 2, 0) + 10 * m + 32


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _f(x: fmpq) -> Fraction:
    return coprime_fraction(int(x.p), int(x.q))


class _Reader:
    """Exact rational answers to one-token queries, through ``ask(sequences) -> answers``.

    Every point the learner asks is ``P + t·D`` with integer ``P``, ``D`` and rational ``t``
    (dyadic but for a rare repair), or such a point plus a power of two on one coordinate,
    so it is given as integer numerators over one denominator, and the sequence is built in
    the integer form the oracle evaluates without a rational per entry.
    """

    def __init__(self, ask, d: int):
        self.ask, self.d = ask, d

    def sequence(self, nums: list, den: int) -> Sequence:
        g = math.gcd(den, *nums)  # >= 1, as den > 0
        nums, den = [x // g for x in nums], den // g
        rows = []
        for j, x in enumerate(nums):
            if x:
                h = math.gcd(x, den)
                rows.append((j, coprime_fraction(x // h, den // h)))
        form = (den, list(nums), None) if 4 * len(rows) > self.d else (den, None, [(j, x) for j, x in enumerate(nums) if x])
        return Sequence._exact(self.d, (tuple(rows),), ints=(form,))

    def values(self, points: list) -> list[fmpq]:
        return self._read([self.sequence(nums, den) for nums, den in points])

    def probes(self, point: tuple[list, int], shifts: list) -> list[fmpq]:
        """``g(x + step·e_i)`` for every ``(i, step)``: compact shifted sequences of one base."""
        base = self.sequence(*point)
        return self._read([Sequence._shifted(base, i, _f(step)) for i, step in shifts])

    def _read(self, seqs: list) -> list[fmpq]:
        out = []
        for a in self.ask(seqs):
            r = a.rational() if isinstance(a, ExactAnswer) else None
            if r is None:
                raise OracleInconsistent("the oracle answered an irrational number on a one-token query: "
                                         "not a ReLU network (its answers are rational)")
            out.append(_q(r))
        return out


def _at(P: list, D: list, t: fmpq) -> tuple[list, int]:
    """The point ``P + t·D`` (integer ``P``, ``D``, rational ``t = a/b``) as ``(numerators, b)``."""
    a, den = int(t.p), int(t.q)
    return [den * p + a * q for p, q in zip(P, D)], den


def _path(rng: np.random.Generator, d: int) -> tuple[list, list]:
    while True:
        p = [int(x) for x in rng.integers(-(1 << _PATH_BITS), (1 << _PATH_BITS) + 1, size=d)]
        q = [int(x) for x in rng.integers(-(1 << _PATH_BITS), (1 << _PATH_BITS) + 1, size=d)]
        if any(p) and any(q) and (d == 1 or _pair(p, [b - a for a, b in zip(p, q)]) is not None):
            return p, q


def _pair(P, D):
    """Two coordinates ``(i1, i2)`` on which ``P`` and ``D`` are independent (``None`` if there are none)."""
    d = len(P)
    for i1 in range(d):
        for i2 in range(i1 + 1, d):
            if P[i1] * D[i2] - P[i2] * D[i1] != 0:
                return i1, i2
    return None


def _dot(a, b) -> fmpq:
    s = fmpq(0)
    for x, y in zip(a, b):
        if x and y:
            s += x * y
    return s


def _sign(x: fmpq) -> int:
    return (x > 0) - (x < 0)


class _Region:
    """A region the path visits: a point ``x`` in it, ``g(x)``, the segment direction and slope."""

    __slots__ = ("x", "point", "gx", "D", "slope", "pair", "delta", "G", "segment")

    def __init__(self, point, gx, D, slope, pair, delta, segment):
        nums, den = point
        self.point, self.x = point, [fmpq(n, den) for n in nums]
        self.gx, self.D, self.slope, self.pair, self.delta = gx, D, slope, pair, delta
        self.G = None
        self.segment = segment


def _regions(P, D, scan, pair, segment: int) -> list[_Region]:
    ts = [fmpq(0)] + [b.t for b in scan.breakpoints] + [fmpq(1)]
    scale = max(abs(x) for x in D)
    out = []
    for k, line in enumerate(scan.lines):
        lo, hi = ts[k], ts[k + 1]
        t = dyadic_between(lo, hi)
        width = (hi - lo) * scale
        delta = fmpq(1)
        while delta > width / (1 << _PROBE_BITS):
            delta /= 2
        out.append(_Region(_at(P, D, t), line(t), D, line.slope, pair, delta, segment))
    return out


def _gradients(reader: _Reader, regions: list[_Region], d: int) -> None:
    """``G`` of every region: Euler and the path slope for free, ``d − 2`` coordinate probes."""
    probes: dict = {}
    for r in regions:
        if d == 1:
            continue
        skip = set(r.pair)
        coords = [i for i in range(d) if i not in skip]
        if not coords:
            continue
        values = reader.probes(r.point, [(i, r.delta) for i in coords])
        probes[id(r)] = {i: (v - r.gx) / r.delta for i, v in zip(coords, values)}
    for r in regions:
        if d == 1:
            r.G = [r.gx / r.x[0]]
            continue
        G = [fmpq(0)] * d
        known = probes.get(id(r), {})
        for i, g in known.items():
            G[i] = g
        i1, i2 = r.pair
        rest_x = r.gx - sum((r.x[i] * g for i, g in known.items()), fmpq(0))
        rest_d = r.slope - sum((r.D[i] * g for i, g in known.items()), fmpq(0))
        det = r.x[i1] * r.D[i2] - r.x[i2] * r.D[i1]
        G[i1] = (rest_x * r.D[i2] - rest_d * r.x[i2]) / det
        G[i2] = (r.x[i1] * rest_d - r.D[i1] * rest_x) / det
        r.G = G


def _jump(before: _Region, after: _Region, D) -> tuple[tuple, Fraction]:
    """The hyperplane crossed between two regions: ``(normal, κ)`` from the gradient jump."""
    assert after.G is not None and before.G is not None
    J = [a - b for a, b in zip(after.G, before.G)]
    c = next((x for x in J if x), None)
    if c is None:
        raise PathRetry("a breakpoint without a gradient jump")
    n = [x / c for x in J]
    s = _sign(_dot(n, D))
    if not s:
        raise PathRetry("a gradient jump parallel to the path")
    return tuple(_f(x) for x in n), _f(c) * s / 2


def _region_check(regions, normals) -> bool:
    """Every coordinate probe lies in its region: ``|n·x_r| > δ·max|n_i|`` for every normal (exact)."""
    if not normals:
        return True
    Nq = QMatrix.from_rows([list(n) for n in normals])
    tops = [max(abs(_q(x)) for x in n) for n in normals]
    for r in regions:
        s = Nq.matvec(r.x)
        for sk, top in zip(s, tops):
            if sk == 0 or abs(sk) <= r.delta * top:
                return False
    return True


def _attempt(reader: _Reader, rng, d: int, m: int | None, max_units: int, interior: bool = False):
    """One path: ``(form, samples)``, ``samples`` the exact ``(t, g)`` pairs read on each of its two segments."""
    p, q = _path(rng, d)
    segs = [(p, [b - a for a, b in zip(p, q)]), (q, [-a - b for a, b in zip(p, q)])]
    scans: list = []
    regions: list = []
    samples: list = []
    for s, (P, D) in enumerate(segs):
        seen: list = [] if not scans else [(fmpq(0), scans[-1].end)]

        def h(ts: list, P: list = P, D: list = D, seen: list = seen) -> list:
            values = reader.values([_at(P, D, t) for t in ts])
            seen.extend(zip(ts, values))
            return values

        try:
            scan = scan_segment(
                h,
                start=scans[-1].end if scans else None,  # g(q) ends the first segment and starts the second
                max_breakpoints=max_units if m is None else m,
                interior=_interior_points(rng) if interior else None,
            )
        except OracleInconsistent:
            if m is None:
                raise
            _refute_m(samples + [seen], m)  # only what the samples prove refutes m
            raise PathRetry(f"the search accepted more than m = {m} breakpoints, but its samples prove no more") from None
        scans.append(scan)
        samples.append(seen)
        pair = _pair(P, D) if d > 1 else (0, 0)
        if pair is None:
            raise PathRetry("the path's segment is parallel to its start")
        regions.append(_regions(P, D, scan, pair, s))
    first, second = regions
    _refute_m(samples, m)
    if sum(len(s.breakpoints) for s in scans) > (m if m is not None else max_units):
        if m is not None:  # accepted, not proved: the search, not the black box, is in doubt
            raise PathRetry(f"the search accepted more than m = {m} breakpoints, but its samples prove no more")
        raise OracleInconsistent(f"more than {max_units} hyperplanes: raise max_units")
    for attempt in range(3):
        # the corner region: the same as the first segment's last unless a hyperplane passes through q
        _gradients(reader, first + second[1:], d)
        corner = first[-1]
        D2 = segs[1][1]
        through_q = _dot(corner.G, D2) != second[0].slope
        if through_q:
            _gradients(reader, [second[0]], d)
        else:
            second[0].G = corner.G
        terms = []
        for seg, D in ((first, segs[0][1]), (second, D2)):
            for before, after in zip(seg, seg[1:]):
                terms.append(_jump(before, after, D))
        if through_q:
            terms.append(_jump(corner, second[0], D2))
        normals = [n for n, _ in terms]
        if len(set(normals)) != len(normals):
            raise PathRetry("a hyperplane was crossed twice")
        visited = first + second[1:] + ([second[0]] if through_q else [])
        if _region_check(visited, normals):
            break
        for r in visited:  # a probe may have left its region: probe much closer and measure again
            r.delta /= 1 << 32
    else:
        raise PathRetry("coordinate probes keep leaving their regions")
    r0 = first[0]
    assert r0.G is not None
    L = list(r0.G)
    for n, kap in terms:
        s = _sign(_dot([_q(x) for x in n], r0.x))
        if not s:
            raise PathRetry("the first region's point lies on a hyperplane")
        L = [a - _q(kap) * s * _q(b) for a, b in zip(L, n)]
    form = FunctionForm.build(d, terms, [_f(x) for x in L])
    # A hyperplane through p is never crossed (a·x keeps one sign along the whole path), and
    # its unit looks linear there.  The odd part g(x) − g(−x) = 2L·x shows it: one query g(−q).
    # Two breakpoints at one point of the path look like one hyperplane whose normal is the
    # sum of theirs; that is right all along the path and wrong away from it: random points
    # off the path show it (and send the learner to another path, where it is not).
    away = [[int(x) for x in rng.integers(-(1 << _PATH_BITS), (1 << _PATH_BITS) + 1, size=d)]
            for _ in range(OFF_PATH_CHECKS)]
    points: list = [([-x for x in q], 1)] + [(z, 1) for z in away]
    # A hyperplane that contains the whole path (through p and q: a seed chosen against the
    # network) is never crossed either, and the coordinate probes see its unit on whichever
    # side sign(n_i) puts them.  One probe x_0 − δ'u, u > 0 on every probed coordinate, lands
    # on the side the probes did not predict (see docs/ffn.md).
    side = _side_probe(r0, form, rng, d)
    if side is not None:
        points.append(side)
    for (z, den), gz in zip(points, reader.values(points)):
        if _f(gz) != form.value([Fraction(x, den) for x in z]):
            raise PathRetry("a point off the path disagrees with the learned function (a hyperplane through p or "
                            "containing the path, or two hyperplanes crossing the path at one point)")
    return form, samples, (p, q)


def _interior_points(rng):
    """``interior(lo, hi)``: a random point ``lo + u·(hi − lo)``, ``u`` a random 30-bit dyadic in ``(0, 1)``."""
    def pick(lo: fmpq, hi: fmpq) -> fmpq:
        return lo + (hi - lo) * fmpq(int(rng.integers(1, 1 << 30)), 1 << 30)
    return pick


def _side_probe(r0: _Region, form: FunctionForm, rng, d: int):
    """``x_0 − δ'·u`` (``u`` random in ``[1, 256]`` on the coordinates the region probes, 0 on its pair),
    with ``δ'`` a power of two small enough to stay on ``x_0``'s side of every learned hyperplane."""
    coords = [i for i in range(d) if i not in set(r0.pair)] if d > 2 else []
    if not coords:
        return None  # d <= 2: no hyperplane contains two independent points and the origin
    u = [0] * d
    for i in coords:
        u[i] = int(rng.integers(1, 257))
    nums, den = r0.point
    x0 = [Fraction(n, den) for n in nums]
    step = Fraction(int(r0.delta.p), int(r0.delta.q))
    while True:
        z = [a - step * b for a, b in zip(x0, u)]
        if all((_dotf(n, z) > 0) == (_dotf(n, x0) > 0) and _dotf(n, z) != 0 for n in form.normals):
            break
        step /= 1 << 16
    den2 = math.lcm(*(x.denominator for x in z))
    return [int(x * den2) for x in z], den2


def _dotf(a, b) -> Fraction:
    return sum((x * y for x, y in zip(a, b) if x and y), Fraction(0))


def _realize(form: FunctionForm, orientation: Orientation) -> ReLUFFN:
    """A network with exactly the learned function: the (first) unit form found, else the
    function-level form written as units (κ|n·x| = κReLU(n·x) + κReLU(−n·x), L·x as a pair)."""
    if orientation.solutions and not any(orientation.solutions[0].residual):
        return orientation.solutions[0].network()
    units = []
    for n, k in zip(form.normals, form.kinks):
        units += [(n, k), (tuple(-x for x in n), k)]
    return UnitForm(tuple(units), form.linear).network()


# -- all m units seen -------------------------------------------------------------------

#: What an extraction from finitely many queries rests on, unless all m units were seen.
HIDDEN_UNITS = ("no hidden units: every hyperplane's kink shows on the search path (no cluster of units whose "
                "kinks cancel there, a tent, and no two hyperplanes crossing it within 2^-32); give m, an upper "
                "bound on the units, to remove it when the search sees m hyperplanes")
@dataclass(frozen=True)
class Sighting:
    """Whether every unit of the black box is accounted for ("all m units seen", docs/ffn.md).

    Attributes
    ----------
    seen : bool
        ``m`` was given, the learned function has ``m`` hyperplanes, a check path's samples
        prove ``m`` distinct hyperplanes of the black box at determined points, and each
        learned hyperplane holds exactly one of those points.  Then, among networks with at
        most ``m`` units, the learned function is the black box's (but for a failure
        probability of at most :func:`failure_bound` over the path seed).
    reason : str
        What the rule rests on, or why it does not hold.
    proved : int
        Distinct hyperplanes of the black box that the search path's samples prove (a
        lower bound on its units, whatever the network).
    """

    seen: bool
    reason: str
    proved: int = 0


#: The check path's integer entries lie in [−2^62, 2^62]: the bound of docs/ffn.md rests on it.
_CHECK_BITS = 62


def failure_bound(m: int, paths: int = 1) -> float:
    """The probability, over the seed, that "all m units seen" holds for a wrong function:
    at most ``2m²/(2R − 3)`` per check path drawn, ``R = 2^62`` (Schwartz–Zippel, docs/ffn.md),
    rounded up.

    >>> failure_bound(128) < 2.0 ** -47
    True
    """
    return math.nextafter(paths * m * m * 2.0 / (2.0 * 2.0**_CHECK_BITS - 3.0), math.inf)


def _proved(samples) -> list:
    return [proved_breakpoints(seg) for seg in samples]


def _planes(n: int) -> str:
    return f"{n} distinct hyperplane{'s' if n != 1 else ''}"


def _refute_m(samples, m, path: str = "search path") -> None:
    """More distinct hyperplanes proved on the path than ``m``: the stated bound is false."""
    if m is None:
        return
    n = sum(b.count for b in _proved(samples))
    if n > m:
        raise OracleInconsistent(f"m = {m} is too small: the {path}'s exact samples prove {_planes(n)}, "
                                 f"so the black box has at least {n} hidden unit{'s' if n > 1 else ''}")


def _check_path(reader: _Reader, rng, d: int, m: int, form: FunctionForm, interior: bool = False,
                drawn: int = 1) -> Sighting:
    """The second path of the "all m units seen" rule: it must prove ``m`` hyperplanes at determined points,
    each on exactly one learned hyperplane (raises :class:`PathRetry` when the learned form is refuted)."""
    R = 1 << _CHECK_BITS
    while True:
        p = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
        q = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
        if any(p) and any(q):
            break
    segs = [(p, [b - a for a, b in zip(p, q)]), (q, [-a - b for a, b in zip(p, q)])]
    samples: list = []
    end = None
    for P, D in segs:
        seen: list = [] if end is None else [(fmpq(0), end)]

        def h(ts: list, P: list = P, D: list = D, seen: list = seen) -> list:
            values = reader.values([_at(P, D, t) for t in ts])
            seen.extend(zip(ts, values))
            return values

        try:
            scan = scan_segment(h, start=end, max_breakpoints=m, interior=_interior_points(rng) if interior else None)
        except OracleInconsistent:
            _refute_m(samples + [seen], m, "check path")
            raise PathRetry(f"the check path's search accepted more than m = {m} breakpoints, but its samples prove "
                            "no more") from None
        end = scan.end
        samples.append(seen)
    _refute_m(samples, m, "check path")
    proved = _proved(samples)
    total = sum(b.count for b in proved)
    if total < m or any(b.positions is None for b in proved):
        return Sighting(False, f"the check path proves {total} of the {m} hyperplanes at determined points "
                        "(two of them cross it closer together than its samples resolve)", total)
    points = [_at(P, D, t) for (P, D), b in zip(segs, proved) for t in b.positions]
    if m:
        N = QMatrix.from_rows([list(n) for n in form.normals])
        Z = QMatrix.from_columns([[fmpq(x, den) for x in nums] for nums, den in points], nrows=d)
        zeros = [[j for j, x in enumerate(row) if x == 0] for row in (N @ Z).rows()]
        if sorted(len(z) for z in zeros) != [1] * m or len({z[0] for z in zeros}) != m:
            raise PathRetry("the check path's crossings do not lie one on each learned hyperplane: the learned "
                            "function is not the black box's")
    return Sighting(True, f"all {m} units seen: a check path proves {m} distinct hyperplanes, each on exactly one "
                    f"learned hyperplane (wrong with probability <= {failure_bound(m, drawn):.1e} over the path seed, "
                    f"{drawn} check path{'s' if drawn > 1 else ''} drawn)", total)


@dataclass(frozen=True)
class Extraction:
    """What :func:`_extract` found: the function, its units, the network returned, and the sighting."""

    form: FunctionForm
    orientation: Orientation
    model: ReLUFFN
    paths: int
    sighting: Sighting
    identifiable: bool
    unit_reason: str


def _unit_level(orientation: Orientation, sighting: Sighting, m) -> tuple[bool, str]:
    """Whether the unit level is identified, and what that rests on (or why not)."""
    if not sighting.seen:
        why = orientation.reason or "one orientation with one unit per hyperplane"
        if m is None:
            return False, f"{why}; the units are identified only when every unit is accounted for: give m"
        return False, f"{why}; not every unit is accounted for ({sighting.reason})"
    if not orientation.unique:
        return False, orientation.reason
    return True, (f"identifiable among networks with at most {m} units: all {m} hyperplanes seen, one unit on each, "
                  "and a unique orientation")


def _extract(ask, transcript, replay, d: int, *, m, seed: int, retries: int, max_units: int,
             interior: bool = False) -> Extraction:
    """The learner's queries and decisions, given how to ask, read the transcript and replay.

    The run and the certificate check both call it, so a certificate re-derives the very
    queries the learner made, and every decision on them (the sighting included), from the
    answers alone.
    """
    rng = np.random.default_rng(seed)
    reader = _Reader(ask, d)
    last = ""
    drawn = 0  # check paths drawn: the failure bound is a union over them
    for attempt in range(retries + 1):
        try:
            form, samples, _ = _attempt(reader, rng, d, m, max_units, interior)
            proved = sum(b.count for b in _proved(samples))
            orientation = orient(form)
            if m is not None and len(form.normals) == m:
                drawn += 1
                sighting = _check_path(reader, rng, d, m, form, interior, drawn)
            elif m is not None and len(form.normals) > m:
                # computing the learned function takes more than m units, so "at most m" cannot be stated for
                # it; the samples do not prove the excess (else m was refuted), so another path decides
                raise PathRetry(f"the search found {len(form.normals)} hyperplanes, more than m = {m}, but its "
                                "samples prove no more than m")
            else:
                sighting = Sighting(False, "no m given" if m is None else (
                    f"the search found {len(form.normals)} hyperplanes for m = {m}: units merged on one hyperplane, "
                    "an antipodal pair, or units hidden from the search"), proved)
        except PathRetry as e:
            last = str(e)
            continue
        if sighting.seen and orientation.exhaustive and not orientation.one_per_plane:
            # proved the black box's if it has at most m units, yet no m units compute it: it has more
            raise OracleInconsistent(
                f"m = {m} is too small: the learned function, which is the black box's if it has at most m units, "
                f"needs more than m units ({orientation.reason})")
        model = _realize(form, orientation)
        bad = replay(model, transcript())
        if bad:
            last = f"the learned function does not reproduce {len(bad)} answers (first #{bad[0]})"
            continue
        identifiable, unit_reason = _unit_level(orientation, sighting, m)
        return Extraction(form, orientation, model, attempt + 1, sighting, identifiable, unit_reason)
    raise OracleInconsistent(f"no consistent ReLU network after {retries + 1} paths (last: {last}): the black box is "
                             "not a bias-free one-hidden-layer ReLU network (biases wᵀReLU(Ax + a) + b, torch's "
                             "nn.Linear default, are outside this learner's class), or part of it hides from every "
                             "path tried (a tent between the samples, or hyperplanes crossing the paths closer "
                             "together than the search resolves)")


def standing_assumptions(m, seen: bool) -> tuple:
    """What an FFN result rests on beyond its certificate: the path seed, ``m`` if given, and no
    hidden units unless all ``m`` were seen."""
    out: tuple[str, ...] = () if seen else (HIDDEN_UNITS,)
    if m is not None:
        out += (at_most(m),)
    return out + (PATH_SEED,)


@dataclass(frozen=True)
class FFNDetails(Details):
    """What the ReLU learner found: the function-level form, the unit forms, whether the unit
    level is identified and why (or why not), the hyperplanes found and proved, whether all
    ``m`` units were seen (and what that rests on), the paths tried and the path seed."""

    function_form: FunctionForm
    unit_forms: tuple
    identifiable: bool
    orientations: int
    unit_reason: str
    hyperplanes: int
    proved_hyperplanes: int
    units_seen: bool
    sighting: str
    paths: int
    seed: int

    def rows(self, result) -> list:
        form = self.function_form
        if form.affine:
            d = form.d
            out = [("function", f"g(x) = Lᵀx + ℓ₀ + Σ κ_k|n_kᵀx + o_k| with {len(form.normals)} hyperplanes"),
                   ("", "L = [" + ", ".join(format_rational(x) for x in form.linear[:d]) + "], ℓ₀ = "
                    + format_rational(form.linear[d]))]
            out += [("", f"κ = {format_rational(k)}, n = [" + ", ".join(format_rational(x) for x in n[:d])
                     + f"], o = {format_rational(n[d])}") for n, k in zip(form.normals, form.kinks)]
        else:
            out = [("function", f"g(x) = Lᵀx + Σ κ_k|n_kᵀx| with {len(form.normals)} hyperplanes"),
                   ("", "L = [" + ", ".join(format_rational(x) for x in form.linear) + "]")]
            out += [("", f"κ = {format_rational(k)}, n = [" + ", ".join(format_rational(x) for x in n) + "]")
                    for n, k in zip(form.normals, form.kinks)]
        out.append(("seen", self.sighting))
        if self.identifiable:
            out.append(("units", f"identifiable: {len(self.unit_forms[0].units)} units (up to order and positive "
                                 f"scaling; {self.unit_reason})"))
            out += [("", f"w = {format_rational(w)}, a = [" + ", ".join(format_rational(x) for x in a) + "]")
                    for a, w in self.unit_forms[0].units]
        else:
            out.append(("units", f"not identifiable: {self.unit_reason} ({self.orientations} orientation(s) found)"))
        return out

    def model_rows(self, result) -> list:
        return []  # the forms above are the model

    def _ffn(self, model):
        return model

    def compare(self, result, truth) -> Comparison:
        """The function-level forms, and the unit forms when the result claims them identified."""
        same = result.model.canonical() == truth.canonical()
        if self.identifiable:
            same = same and self._ffn(result.model).unit_form() == self._ffn(truth).unit_form()
        verdict = "yes: the canonical form equals the model's" if same else "NO: differs from the model's canonical form"
        suffix = f" (assuming {'; '.join(result.assumptions)})" if result.assumptions else ""
        return Comparison(same, rows=(("exact", verdict + suffix),))


def ffn_details(ex: Extraction, seed: int, cls=FFNDetails, **more) -> FFNDetails:
    return cls(function_form=ex.form, unit_forms=ex.orientation.solutions, identifiable=ex.identifiable,
               orientations=len(ex.orientation.solutions), unit_reason=ex.unit_reason, hyperplanes=len(ex.form.normals),
               proved_hyperplanes=ex.sighting.proved, units_seen=ex.sighting.seen, sighting=ex.sighting.reason,
               paths=ex.paths, seed=seed, **more)


def _count_text(result) -> str:
    m = result.certificate.conditions.get("m") if result.certificate is not None else None
    paths = f"{result.details['paths']} path(s), seed {result.details['seed']}"
    if m is None:
        return f"no bound without m; {paths}"
    return (f"the stated bound, checks included: (m + 1)(d − 2) + 10m + 32 = {ffn_query_bound(result.model.d, m)} "
            f"for m = {m}; {paths}")


def learn_ffn(oracle: Oracle, *, m: int | None = None, seed=None, checks: int = DEFAULT_FFN_CHECKS, check_seed=None,
              retries: int = 3, max_units: int = 4096, interior: bool = False, mode: str | None = None) -> LearnResult:
    """Extract ``g(x) = wᵀReLU(Ax)`` exactly from one-token value queries ``g([x])``.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle on one-token sequences (e.g. ``ExactOracle(ReLUFFN(...))``, or a
        one-layer Transformer's oracle: one-token queries of it are its FFN).
    m : int, optional
        An upper bound on the number of hidden units, if known.  It is stated as an
        assumption; the search stops at ``m`` hyperplanes, a path that proves more refutes
        it (:class:`~exact.errors.OracleInconsistent`), and when the search sees ``m``
        hyperplanes a check path can prove that no unit hides (docs/ffn.md).
    seed : int, optional
        Seed of the search paths (fresh when omitted; reported).
    checks : int
        Random verification points the driver decides exactly after learning (default 6;
        with the learner's own two random points off the path, 8 in all).
    check_seed : int, optional
        Seed of the verification points (fresh when omitted).
    retries : int
        New paths to try when one is degenerate.
    max_units : int
        With ``m`` unknown: give up (not piecewise linear) beyond this many hyperplanes.
    interior : bool
        Ask one random point inside every stretch of the paths the search takes as linear
        (about ``m + 2`` queries more per path): it reveals some tents the search steps over
        (measured in ``benchmarks/ffn_hidden.py``; most stay hidden).  Default ``False``.
    mode : {None, "certified", "float"}
        ``"float"`` learns from float answers, biases or not, with an estimate
        (:func:`~exact.learn.ffn_float.learn_ffn_float`, which takes ``m``, ``seed``, ``check_seed``
        and ``retries`` from here); default: certified for an exact oracle, float otherwise.

    Returns
    -------
    LearnResult
        ``model`` a network computing exactly the learned function (a unit form when one
        was found); ``details["function_form"]``, ``details["unit_forms"]``,
        ``details["identifiable"]``, ``details["units_seen"]``.  ``assumptions`` says what the
        exactness rests on: no hidden units unless all ``m`` units were seen, the bound ``m``
        itself when given, and the path seed's independence of the network.

    Examples
    --------
    >>> from exact import ExactOracle
    >>> net = ReLUFFN([[1, 2, 0], [0, -1, 3]], [1, "-1/2"])
    >>> r = learn_ffn(ExactOracle(net), m=2, seed=0)
    >>> r.details["function_form"] == net.function_form(), r.model.unit_form() == net.unit_form()
    (True, True)
    >>> r.details["units_seen"], r.details["identifiable"], r.exact
    (True, True, True)
    >>> r.assumptions
    ('among networks with at most 2 hidden units', 'for a search path independent of the network (its seed drawn independently of it)')
    """
    d = oracle_dimension(oracle)
    if mode not in (None, "certified", "float"):
        raise InvalidArgument(f"mode: expected 'certified' or 'float', got {mode!r}")
    if mode == "float" or (mode is None and not oracle.exact):
        from .ffn_float import learn_ffn_float

        if interior:
            raise InvalidArgument("interior: the float learner takes no interior points")
        return learn_ffn_float(oracle, m=m, seed=seed, check_seed=check_seed, retries=min(retries, 2),
                               max_units=max_units)
    check_options(m=m, seed=seed, retries=retries, max_units=max_units, interior=interior)
    if seed is None:
        seed = secrets.randbits(63)
    if not oracle.exact:
        raise InvalidArgument("oracle: the ReLU learner reads exact rational answers; this oracle is approximate "
                              "(learn it with mode='float')")
    run = Run(SPEC, oracle, mode="certified", queries=ffn_query_bound(d, m) - DEFAULT_FFN_CHECKS if m is not None else None,
              checks=checks, check_seed=check_seed)
    with run:
        ex = _extract(run.ask, lambda: run.transcript, run.replay, d, m=m, seed=seed, retries=retries,
                      max_units=max_units, interior=interior)
        conditions = ffn_conditions(seed, retries, m, interior)
        return run.finish(ex.model, conditions=conditions, details=ffn_details(ex, seed),
                          standing=standing_assumptions(m, ex.sighting.seen))


def ffn_conditions(seed: int, retries: int, m, interior: bool) -> dict:
    """What a certificate records to re-run the search: its seed, retries, ``m`` and the interior points."""
    return {"seed": seed, "retries": retries, **({"m": m} if m is not None else {}),
            **({"interior": True} if interior else {})}


def rederive(ffn, conditions) -> tuple[list, Extraction]:
    """The queries the learner makes on the network ``ffn`` with the recorded seed, and what it finds there."""
    from ..certify import failed_entries
    from ..oracles import ExactOracle

    box = ExactOracle(ffn)
    ex = _extract(box.query_batch, lambda: box.transcript, lambda mdl, tr: failed_entries(mdl, tr), ffn.d,
                  m=conditions.get("m"), seed=conditions["seed"], retries=conditions.get("retries", 3),
                  max_units=1 << 16, interior=conditions.get("interior", False))
    return [q.X for q in box.transcript], ex


@dataclass(frozen=True)
class FFNPart:
    """The ReLU learner's part of a transcript, re-derived by :func:`check_ffn_part`.

    ``queries``: how many queries of the transcript it holds; ``seen``: whether all ``m`` units
    were seen there (re-derived from the answers, never read from the certificate).
    """

    queries: int
    seen: bool


def check_ffn_part(ffn, queries: list, conditions) -> str | FFNPart:
    """Why ``queries`` do not begin with the ReLU learner's queries on ``ffn`` (or its claims do not
    hold), or, when they do, that part (:class:`FFNPart`)."""
    if conditions.get("seed") is None:
        return "the certificate must record the FFN learner's path seed (conditions seed)"
    if getattr(ffn, "biased", False):
        return ("the certified network has biases (a or b nonzero), which the bias-free ReLU learner does not "
                "identify")
    try:
        expected, ex = rederive(ffn, conditions)
    except (ExactAttentionError, ArithmeticError) as e:
        return f"re-running the ReLU learner on the certified network fails: {type(e).__name__}: {e}"[:300]
    if ex.form != ffn.function_form():
        return ("the ReLU learner, re-run on the certified network, finds another function: part of it hides "
                "from the search")
    if queries[:len(expected)] != expected:
        return ("the transcript is not the queries the ReLU learner makes on this network with this seed, "
                "so it need not identify the network")
    return FFNPart(len(expected), ex.sighting.seen)


def _check_certificate(model, transcript, conditions) -> registry.Rederived:
    """Re-run the learner on the certified network (same seed): its queries must be the transcript's,
    the function it finds must be the network's, and what the claim rests on is re-derived there."""
    xs = [q.X for q in transcript]
    part = check_ffn_part(model, xs, conditions)
    if isinstance(part, str):
        return registry.Rederived(part, standing_assumptions(conditions.get("m"), False))
    reason = None if part.queries == len(xs) else "the transcript holds more queries than the ReLU learner makes on this network"
    return registry.Rederived(reason, standing_assumptions(conditions.get("m"), part.seen))


def _unchecked(conditions) -> tuple:
    return ("among bias-free one-hidden-layer ReLU networks",)


#: What an FFN (or Transformer) certificate may record; nothing that removes an assumption.
FFN_CONDITIONS = {"m": registry.int_at_least(0), "seed": _seed_ok, "retries": registry.int_at_least(0),
                  "interior": lambda x: x is True}

SPEC = (
    registry.LearnerSpec(
        name="ffn",
        summary="exact bias-free ReLU FFN extraction in ℚ: path search, gradient jumps, orientation",
        model_kind="ffn",
        modes=("certified",),
        learn=learn_ffn,
        query_count=lambda d, m=None, **conditions: ffn_query_bound(d, m if m is not None else d),
        count_formula="<= (m + 1)(d − 2) + 10m + 32",
        count_text=_count_text,
        conditions=FFN_CONDITIONS,
        check_certificate=_check_certificate,
        standing=lambda conditions: standing_assumptions(conditions.get("m"), False),
        scope=lambda conditions: "as a function, among bias-free one-hidden-layer ReLU networks",
        unchecked=_unchecked,
        model_class=lambda conditions: "a bias-free one-hidden-layer ReLU network whose units all show on the search "
                                       "path (a verification point disagrees: units hidden from it, such as a tent)",
        options=(
            registry.Option("m", "int", "an upper bound on the hidden units, if known", minimum=0),
            registry.Option("seed", "int", "seed of the search paths (default: fresh, reported)", minimum=0),
            registry.Option("interior", "flag", "one random point inside every stretch taken as linear "
                            "(finds some tents the search steps over)"),
        ),
        command="ffn",
        method="exact",
        rederive_in_run=False,
    )
)
