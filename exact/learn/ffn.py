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
from ..numbers import coprime_fraction
from ..oracles import ExactAnswer
from ..sequences import Sequence
from .driver import Run, oracle_dimension
from .ffn_orient import Orientation, orient
from .ffn_path import PathRetry, dyadic_between, scan_segment
from .result import LearnResult

__all__ = ["learn_ffn", "ffn_query_bound", "SPEC", "FFNDetails"]

#: Random points the learner itself checks (a mismatch sends it to another path); with the
#: driver's :data:`DEFAULT_FFN_CHECKS` verification points, 8 random points are decided exactly.
OFF_PATH_CHECKS = 2
DEFAULT_FFN_CHECKS = 6
_PATH_BITS = 20  # p and q have integer entries in [−2^20, 2^20]
_PROBE_BITS = 24  # coordinate probes start at 2^-24 of the region's width along the path


def ffn_query_bound(d: int, m: int) -> int:
    """``(m + 1)(d − 2) + 5m + 20``: the count a run stays within (verification included) on a
    path without degeneracies."""
    return (m + 1) * max(d - 2, 0) + 5 * m + 20


def _q(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _f(x: fmpq) -> Fraction:
    return coprime_fraction(int(x.p), int(x.q))


@dataclass(frozen=True)
class FFNDetails:
    """What the run found besides the model (kept in ``LearnResult.details``)."""

    function_form: FunctionForm
    orientation: Orientation
    paths: int


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
        g = math.gcd(den, *nums)
        if g > 1:
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

    def probe(self, i: int) -> tuple[list, int]:
        """``x + δ·e_i`` as ``(numerators, 2^k)`` (``δ`` a power of two)."""
        nums, den = self.point
        step = int(self.delta.q)  # δ = 1/step
        common = max(den, step)
        out = [n * (common // den) for n in nums]
        out[i] += common // step
        return out, common


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


def _attempt(reader: _Reader, rng, d: int, m: int | None, max_units: int):
    p, q = _path(rng, d)
    segs = [(p, [b - a for a, b in zip(p, q)]), (q, [-a - b for a, b in zip(p, q)])]
    scans: list = []
    regions: list = []
    for s, (P, D) in enumerate(segs):
        def h(ts: list, P: list = P, D: list = D) -> list:
            return reader.values([_at(P, D, t) for t in ts])

        scan = scan_segment(
            h,
            start=scans[-1].end if scans else None,  # g(q) ends the first segment and starts the second
            max_breakpoints=max_units if m is None else m,
        )
        scans.append(scan)
        pair = _pair(P, D) if d > 1 else (0, 0)
        if pair is None:
            raise PathRetry("the path's segment is parallel to its start")
        regions.append(_regions(P, D, scan, pair, s))
    first, second = regions
    if sum(len(s.breakpoints) for s in scans) > (m if m is not None else max_units):
        raise OracleInconsistent(f"the path crosses more hyperplanes than m = {m}" if m is not None else
                                 f"more than {max_units} hyperplanes: raise max_units")
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
    points = [[-x for x in q]] + away
    for z, gz in zip(points, reader.values([(z, 1) for z in points])):
        if _f(gz) != form.value(z):
            raise PathRetry("a point off the path disagrees with the learned function (a hyperplane through p, "
                            "or two hyperplanes crossing the path at one point)")
    return form, len(form.normals)


def _realize(form: FunctionForm, orientation: Orientation) -> ReLUFFN:
    """A network with exactly the learned function: the unit form when identified, else the
    function-level form written as units (κ|n·x| = κReLU(n·x) + κReLU(−n·x), L·x as a pair)."""
    if orientation.identifiable:
        return orientation.solutions[0].network()
    units = []
    for n, k in zip(form.normals, form.kinks):
        units += [(n, k), (tuple(-x for x in n), k)]
    return UnitForm(tuple(units), form.linear).network()


def _extract(ask, transcript, replay, d: int, *, m, seed: int, retries: int, max_units: int):
    """The learner's queries and decisions, given how to ask, read the transcript and replay.

    Returns ``(form, orientation, model, paths)``.  The run and the certificate check both
    call it, so a certificate can re-derive the very queries the learner made.
    """
    rng = np.random.default_rng(seed)
    reader = _Reader(ask, d)
    last = ""
    for attempt in range(retries + 1):
        try:
            form, _ = _attempt(reader, rng, d, m, max_units)
        except PathRetry as e:
            last = str(e)
            continue
        orientation = orient(form, m=m)
        model = _realize(form, orientation)
        bad = replay(model, transcript())
        if bad:
            last = f"the learned function does not reproduce {len(bad)} answers (first #{bad[0]})"
            continue
        return form, orientation, model, attempt + 1
    raise OracleInconsistent(f"no consistent ReLU network after {retries + 1} paths (last: {last}): the black box is "
                             "not a bias-free one-hidden-layer ReLU network, or its hyperplanes cross every path "
                             "tried closer together than the search resolves")


def learn_ffn(oracle, *, m: int | None = None, seed=None, checks: int = DEFAULT_FFN_CHECKS, check_seed=None,
              retries: int = 3, max_units: int = 4096) -> LearnResult:
    """Extract ``g(x) = wᵀReLU(Ax)`` exactly from one-token value queries ``g([x])``.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle on one-token sequences (e.g. ``ExactOracle(ReLUFFN(...))``, or a
        one-layer Transformer's oracle: one-token queries of it are its FFN).
    m : int, optional
        The number of hidden units, if known: the search stops at ``m`` hyperplanes, and
        the unit level is identifiable only if the units found are ``m``.
    seed : int, optional
        Seed of the search path (fresh when omitted; reported).
    checks : int
        Random verification points the driver decides exactly after learning (default 6;
        with the learner's own two random points off the path, 8 in all).
    check_seed : int, optional
        Seed of the verification points (fresh when omitted).
    retries : int
        New paths to try when one is degenerate.
    max_units : int
        With ``m`` unknown: give up (not piecewise linear) beyond this many hyperplanes.

    Returns
    -------
    LearnResult
        ``model`` a network computing exactly the learned function (the unit form when it
        is identifiable); ``details["function_form"]``, ``details["unit_forms"]``,
        ``details["identifiable"]``.

    Examples
    --------
    >>> from exact import ExactOracle
    >>> net = ReLUFFN([[1, 2, 0], [0, -1, 3]], [1, "-1/2"])
    >>> r = learn_ffn(ExactOracle(net), m=2, seed=0)
    >>> r.details["function_form"] == net.function_form(), r.model.unit_form() == net.unit_form()
    (True, True)
    >>> r.details["identifiable"], r.exact
    (True, True)
    """
    d = oracle_dimension(oracle)
    if m is not None and (not isinstance(m, int) or isinstance(m, bool) or m < 0):
        raise InvalidArgument(f"m: expected a non-negative number of units, got {m!r}")
    for name, value in (("retries", retries), ("max_units", max_units)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"{name}: expected a non-negative integer, got {value!r}")
    if seed is None:
        seed = secrets.randbits(63)
    elif not _seed_ok(seed):
        raise InvalidArgument(f"seed: expected an integer in [0, 2^63), got {seed!r}")
    if not oracle.exact:
        raise InvalidArgument("oracle: the ReLU learner reads exact rational answers; this oracle is approximate")
    run = Run(SPEC, oracle, mode="certified", queries=ffn_query_bound(d, m) - DEFAULT_FFN_CHECKS if m is not None else None,
              checks=checks, check_seed=check_seed)
    with run:
        form, orientation, model, paths = _extract(run.ask, lambda: run.transcript, run.replay, d, m=m, seed=seed,
                                                   retries=retries, max_units=max_units)
        details = {
            "function_form": form,
            "unit_forms": orientation.solutions,
            "identifiable": orientation.identifiable,
            "orientations": len(orientation.solutions),
            "unit_reason": orientation.reason,
            "hyperplanes": len(form.normals),
            "paths": paths,
            "seed": seed,
        }
        conditions = {"seed": seed, "retries": retries, **({"m": m} if m is not None else {})}
        if units_seen(orientation, m):
            conditions["units_seen"] = True
        return run.finish(model, conditions=conditions, details=details)


#: What an extraction from finitely many queries rests on, unless all ``m`` units were seen.
HIDDEN_UNITS = ("no hidden units: every hyperplane's kink shows on the search path (no cluster of units whose "
                "kinks cancel there, a tent, and no two hyperplanes crossing it within 2^-32); give m to check it")


def units_seen(orientation: Orientation, m: int | None) -> bool:
    """All ``m`` units accounted for: one unit form, no residual, exactly ``m`` units."""
    if m is None or len(orientation.solutions) != 1 or not orientation.identifiable:
        return False
    sol = orientation.solutions[0]
    return not any(sol.residual) and len(sol.units) == m


def _standing(conditions) -> tuple:
    return () if conditions.get("units_seen") else (HIDDEN_UNITS,)


def _seed_ok(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63


def rederive(ffn, conditions) -> tuple[list, object]:
    """The queries the learner makes on the network ``ffn`` with the recorded seed, and the form it finds."""
    from ..certify import failed_entries
    from ..oracles import ExactOracle

    box = ExactOracle(ffn)
    form, _, _, _ = _extract(box.query_batch, lambda: box.transcript, lambda mdl, tr: failed_entries(mdl, tr), ffn.d,
                             m=conditions.get("m"), seed=conditions["seed"], retries=conditions.get("retries", 3),
                             max_units=1 << 16)
    return [q.X for q in box.transcript], form


def check_ffn_part(ffn, queries: list, conditions) -> tuple[str | None, int]:
    """Why ``queries`` do not begin with the ReLU learner's queries on ``ffn`` (or its claims do not
    hold), or ``None``; and how many queries that part holds."""
    if conditions.get("seed") is None:
        return "the certificate must record the FFN learner's path seed (conditions seed)", 0
    if conditions.get("units_seen") and (conditions.get("m") is None or len(ffn.unit_form().units) != conditions["m"]):
        return "the certificate claims all m units were seen, but the network does not have exactly m units", 0
    try:
        expected, form = rederive(ffn, conditions)
    except (ExactAttentionError, ArithmeticError) as e:
        return f"re-running the ReLU learner on the certified network fails: {type(e).__name__}: {e}"[:300], 0
    if form != ffn.function_form():
        return ("the ReLU learner, re-run on the certified network, finds another function: part of it hides "
                "from the search"), 0
    if queries[:len(expected)] != expected:
        return ("the transcript is not the queries the ReLU learner makes on this network with this seed, "
                "so it need not identify the network"), 0
    return None, len(expected)


def _check_certificate(model, transcript, conditions) -> str | None:
    """Re-run the learner on the certified network (same seed): its queries must be the transcript's,
    and the function it finds must be the network's."""
    xs = [q.X for q in transcript]
    reason, n = check_ffn_part(model, xs, conditions)
    if reason is None and n != len(xs):
        reason = "the transcript holds more queries than the ReLU learner makes on this network"
    return reason


def _unchecked(conditions) -> tuple:
    return ("among bias-free one-hidden-layer ReLU networks",)


SPEC = registry.register(
    registry.LearnerSpec(
        name="ffn",
        summary="exact bias-free ReLU FFN extraction in ℚ: path search, gradient jumps, orientation",
        model_kind="ffn",
        modes=("certified",),
        learn=learn_ffn,
        query_count=lambda d, m=None, **conditions: ffn_query_bound(d, m if m is not None else d),
        count_formula="<= (m + 1)(d − 2) + 5m + 20",
        conditions={"m": registry.int_at_least(0), "seed": _seed_ok, "retries": registry.int_at_least(0),
                    "units_seen": lambda x: x is True},
        check_certificate=_check_certificate,
        standing=_standing,
        scope=lambda conditions: "as a function, among bias-free one-hidden-layer ReLU networks",
        unchecked=_unchecked,
        model_class=lambda conditions: "a bias-free one-hidden-layer ReLU network",
        options=(
            registry.Option("m", "int", "the number of hidden units, if known", minimum=0),
            registry.Option("seed", "int", "seed of the search path (default: fresh, reported)", minimum=0),
        ),
        command="ffn",
        method="exact",
        rederive_in_run=False,
    )
)
