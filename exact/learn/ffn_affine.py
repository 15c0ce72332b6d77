"""Exact extraction of a ReLU network **with biases**, ``g(x) = wᵀReLU(Ax + a) + b``, in ℚ.

The hyperplanes ``n_kᵀx + o_k = 0`` no longer pass through the origin, so the bias-free
path ``p → q → −p`` and its odd identity do not apply.  Instead (docs/ffn.md, "Networks with
biases: the learner"):

1. **One line** ``x(u) = P + u·D`` (random integers, ``|P_i| <= 2^10``, ``|D_i| <= 2^20``),
   scanned on ``u ∈ [−T, T]`` with the exact breakpoint search of :mod:`exact.learn.ffn_path`.
   A line crosses every hyperplane with ``n_kᵀD ≠ 0`` exactly once, at
   ``u_k = −(n_kᵀP + o_k)/(n_kᵀD)``; the window starts at ``T = 1`` and, when ``m`` is given and
   fewer than ``m`` hyperplanes were found, widens to ``2^10`` and ``2^20``.
2. **Every region's affine piece** ``g = G_r·x + β_r``: the line gives ``G_r·D`` (its slope)
   and ``g(x_r)``; ``d − 1`` coordinate probes give the rest, and ``β_r = g(x_r) − G_r·x_r``.
3. **Each hyperplane from a jump**: ``G_{r+1} − G_r = c·n_k`` gives the normal (first nonzero
   entry 1) and ``κ_k = c·sign(n_kᵀD)/2``; the offset is ``o_k = −n_kᵀx_k`` at the breakpoint
   ``x_k``, and the intercepts must jump by ``c·o_k`` (checked exactly).
4. **The affine form** ``(L, ℓ₀)ᵀ(x, 1) + Σ κ_k|n_kᵀx + o_k|`` from the first region; then the
   orientation (``L = Σ_k σ_kκ_kn_k``; ``b`` from ``ℓ₀``), exact when the normals are
   independent, by the bias-free subset sum when they are dependent and distinct.
5. **Checks**: every probe proved inside its region (exact signs), the jumps' intercepts,
   four random points off the line (two far, two near the origin) decided exactly, a replay
   of every answer, and the driver's verification points.  A failed check sends the learner
   to another line.
6. **All m units seen** (``m`` given, ``m`` hyperplanes found): a check line with entries in
   ``[−2^62, 2^62]``, drawn after the form is fixed, scanned over an integer window holding every
   learned crossing; its exact samples must prove ``m`` breakpoints at determined points, each on
   exactly one learned hyperplane.  Then, among networks with at most ``m`` units, the learned
   function is the black box's but for a probability of ``2m²/(2^63 − 3)`` per check line
   (docs/ffn.md, "All m units seen, with biases"), and the units are identified when the
   orientation is unique.

What the result rests on is stated: **no hidden units** (a hyperplane the line crosses beyond
the window, a tent between samples, or an antipodal pair, which is affine, hide) unless the check
line proves every unit, ``m`` when given, and the line's independence of the network.
"""

from __future__ import annotations

import secrets
from fractions import Fraction

import numpy as np
from flint import fmpq

from .. import registry
from ..errors import ExactAttentionError, InvalidArgument, OracleInconsistent
from ..ffn import FunctionForm, ReLUFFN, UnitForm
from ..protocols import Oracle
from .driver import Run, oracle_dimension
from ..linalg import QMatrix
from .ffn import (
    _CHECK_BITS,
    DEFAULT_FFN_CHECKS,
    FFN_CONDITIONS,
    FFNDetails,
    PATH_SEED,
    PathRetry,
    Sighting,
    _at,
    _dot,
    _f,
    _jump,
    _proved,
    _q,
    _Reader,
    _refute_m,
    _regions,
    _sign,
    at_most,
    check_options,
    failure_bound,
)
from .ffn_orient import Orientation, orient
from .ffn_path import Breakpoint, Line, SegmentScan, scan_segment
from ._common import rerun_verdict
from .result import LearnResult

__all__ = ["learn_ffn_biased", "affine_query_count", "SPEC"]

_P_BITS, _D_BITS = 10, 20
#: The windows ``[−T, T]`` tried on one line, in order, while fewer than ``m`` hyperplanes show.
WINDOWS = (1, 1 << 10, 1 << 20)
OFF_LINE_CHECKS = 4
#: Queries per hyperplane on the check line (two in each stretch between crossings; two more at the ends).
CHECK_LINE_QUERIES = 2


def affine_query_count(d: int, m: int, breakpoint_queries: int = 5, check_line: bool = True) -> int:
    """The count on a generic line, one window: ``(m + 1)(d − 1)`` coordinate probes, about
    ``breakpoint_queries`` per breakpoint (four in the search, one at the breakpoint itself) and
    4 for the window's ends, the 4 points off the line, and (``m`` given) ``2m + 2`` for the check
    line of "all m units seen", 2m + 2 (the driver's verification points apart).

    >>> affine_query_count(8, 8), affine_query_count(8, 8, check_line=False)
    (129, 111)
    """
    return (m + 1) * (d - 1) + breakpoint_queries * m + 4 + OFF_LINE_CHECKS + (CHECK_LINE_QUERIES * (m + 1) if check_line
                                                                                else 0)


def _line(rng, d: int) -> tuple[list, list]:
    while True:
        P = [int(x) for x in rng.integers(-(1 << _P_BITS), (1 << _P_BITS) + 1, size=d)]
        D = [int(x) for x in rng.integers(-(1 << _D_BITS), (1 << _D_BITS) + 1, size=d)]
        if any(D):
            return P, D


def _affine_gradients(reader: _Reader, regions, d: int, i0: int) -> list:
    """``G`` of every region (set on it) and the list of intercepts ``β``: the line's slope, ``g(x_r)``
    and ``d − 1`` coordinate probes."""
    betas = []
    for r in regions:
        coords = [i for i in range(d) if i != i0]
        values = reader.probes(r.point, [(i, r.delta) for i in coords]) if coords else []
        G = [fmpq(0)] * d
        for i, v in zip(coords, values):
            G[i] = (v - r.gx) / r.delta
        G[i0] = (r.slope - sum((r.D[i] * G[i] for i in coords), fmpq(0))) / r.D[i0]
        r.G = G
        betas.append(r.gx - _dot(G, r.x))
    return betas


def _planes_check(regions, planes) -> bool:
    """Every region's probes lie strictly inside it: ``|n·x_r + o| > δ·max|n_i|`` for every plane."""
    for r in regions:
        for n, o in planes:
            z = _dot(n, r.x) + o
            if z == 0 or abs(z) <= r.delta * max(abs(x) for x in n):
                return False
    return True


def _resolved_scan(h, offset: fmpq, max_breakpoints: int, depth: int = 0) -> SegmentScan:
    """The breakpoint search, each breakpoint then checked at ``t*`` itself (one query each).

    The search accepts ``t*`` when ``h`` lies on the left line just left of it and on the right
    line just right of it; two kinks inside that window pass as one.  For two kinks of
    parallel hyperplanes the merged jump still points along their normal and every later check
    can pass (the learned function is wrong only between the two hyperplanes), so each ``t*``
    is asked: ``h(t*)`` off the two lines' common value shows a hidden kink, and the window
    around ``t*`` is searched again, about 2^30 times finer, up to four times.
    """
    scan = scan_segment(h, offset=offset, max_breakpoints=max_breakpoints)
    bps = list(scan.breakpoints)
    if not bps:
        return scan
    values = h([b.t for b in bps])
    out: list = []
    for b, y in zip(bps, values):
        if y == b.left(b.t):
            out.append(b)
            continue
        if depth >= 4:
            raise PathRetry("kinks crossing the line closer together than 2^-128 of it")
        w = 4 * offset  # every acceptance in the search brackets its kinks within 3 offsets of t*
        sub = _resolved_scan(lambda ts, lo=b.t - w: h([lo + t * 2 * w for t in ts]), offset, max_breakpoints, depth + 1)
        width = 2 * w
        lo = b.t - w

        def back(line: Line, lo=lo, width=width) -> Line:
            slope = line.slope / width
            return Line(slope, line.intercept - slope * lo)

        inner = [Breakpoint(lo + c.t * width, back(c.left), back(c.right)) for c in sub.breakpoints]
        if not inner or inner[0].left != b.left or inner[-1].right != b.right:
            raise PathRetry("a breakpoint's window, searched again, does not chain with its lines")
        out += inner
    if len(out) > max_breakpoints:
        raise PathRetry(f"more than {max_breakpoints} breakpoints once every window was searched again")
    return SegmentScan(tuple(out), (scan.lines[0],) + tuple(b.right for b in out), scan.queries, scan.end)


def _attempt(reader: _Reader, rng, d: int, m, max_units: int):
    """One line: the affine function form it shows (raises :class:`PathRetry` when a check fails)."""
    P, D = _line(rng, d)
    i0 = next(i for i, x in enumerate(D) if x)
    windows = WINDOWS if m is not None else WINDOWS[:1]
    shown = 0
    for T in windows:
        X0 = [p - T * q for p, q in zip(P, D)]
        Delta = [2 * T * q for q in D]

        def h(ts: list, X0: list = X0, Delta: list = Delta) -> list:
            return reader.values([_at(X0, Delta, t) for t in ts])

        # the search's windows are 2^-32 of the segment: 2^-31/T of it keeps them 2^-31 wide in u
        scan = _resolved_scan(h, fmpq(1, 2**31 * 2 * T), max_units if m is None else m)
        if len(scan.breakpoints) < shown:
            raise PathRetry("a wider window shows fewer breakpoints than a narrower one")
        shown = len(scan.breakpoints)
        if m is None or shown >= m:
            break
    regions = _regions(X0, Delta, scan, (i0, i0), 0)
    for _ in range(3):
        betas = _affine_gradients(reader, regions, d, i0)
        planes, terms = [], []
        for k, (before, after) in enumerate(zip(regions, regions[1:])):
            normal, kap = _jump(before, after, Delta)  # G jumps by c·n with c = 2κ·sign(n·D)
            n = [_q(x) for x in normal]
            c = 2 * _q(kap) * _sign(_dot(n, Delta))
            nums, den = _at(X0, Delta, scan.breakpoints[k].t)
            o = -_dot(n, [fmpq(x, den) for x in nums])
            if betas[k + 1] - betas[k] != c * o:
                raise PathRetry("the intercepts do not jump as the hyperplane's offset says (a probe left its region)")
            planes.append((n, o))
            terms.append((normal + (_f(o),), kap))
        if len(set(t for t, _ in terms)) != len(terms):
            raise PathRetry("a hyperplane was crossed twice")
        if _planes_check(regions, planes):
            break
        for r in regions:
            r.delta /= 1 << 32
    else:
        raise PathRetry("coordinate probes keep leaving their regions")
    r0 = regions[0]
    assert r0.G is not None
    L, l0 = list(r0.G), betas[0]
    for (n, o), (_, kap) in zip(planes, terms):
        s = _sign(_dot(n, r0.x) + o)
        if not s:
            raise PathRetry("the first region's point lies on a hyperplane")
        L = [x - _q(kap) * s * y for x, y in zip(L, n)]
        l0 -= _q(kap) * s * o
    form = FunctionForm.build_affine(d, terms, [_f(x) for x in L] + [_f(l0)])
    # points off the line: two far (the scale of P), two near the origin (the scale of the offsets)
    away = [([int(x) for x in rng.integers(-(1 << _P_BITS), (1 << _P_BITS) + 1, size=d)], 1) for _ in range(2)]
    away += [([int(x) for x in rng.integers(-(1 << _D_BITS), (1 << _D_BITS) + 1, size=d)], 1 << _D_BITS)
             for _ in range(OFF_LINE_CHECKS - 2)]
    for (z, den), gz in zip(away, reader.values(away)):
        if _f(gz) != form.value([Fraction(x, den) for x in z]):
            raise PathRetry("a point off the line disagrees with the learned function (two hyperplanes crossing the "
                            "line at one point, or one containing it)")
    return form


def _rows(form: FunctionForm) -> list:
    """The learned hyperplanes as homogeneous rows ``(n, o)`` (``o = 0`` for a bias-free form)."""
    return [[_q(x) for x in n] + ([] if form.affine else [fmpq(0)]) for n in form.normals]


def _check_line(reader: _Reader, rng, d: int, m: int, form: FunctionForm, drawn: int) -> Sighting:
    """The check line of the "all m units seen" rule with biases (docs/ffn.md): drawn after the learned
    function is fixed, scanned over an integer window holding every learned crossing; its samples must prove
    ``m`` breakpoints at determined points, each on exactly one learned hyperplane (raises
    :class:`PathRetry` when the learned form is refuted, :class:`OracleInconsistent` when ``m`` is)."""
    R = 1 << _CHECK_BITS
    rows = _rows(form)
    # the line x(t) = (p + t·D)·S/R, p, q integers in [−R, R]: S, a power of two, is the scale of the
    # learned planes' feet (fixed before the line is drawn), so that their crossings spread along it
    feet = [abs(row[d]) / max(abs(x) for x in row[:d]) for row in rows if any(row[:d])]
    big = max(feet, default=fmpq(1))
    S = 1 << max(0, int(big.ceil()).bit_length())
    while True:
        p = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
        q = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
        D = [b - a for a, b in zip(p, q)]
        if any(D):
            break
    ts = []
    for row in rows:
        slope = _dot(row[:d], D)
        if slope == 0:
            return Sighting(False, "the check line is parallel to a learned hyperplane (it proves nothing about it)", 0)
        ts.append(-(_dot(row[:d], p) + row[d] * R / S) / slope)
    # two samples in every stretch between consecutive learned crossings and two beyond each end: if the
    # black box breaks exactly there, every chord across a crossing changes slope and the samples prove
    # each breakpoint at the crossing of its neighbours' lines; whatever it is, they prove only what holds
    cuts = sorted(set(ts))
    us = [cuts[0] - 2, cuts[0] - 1] if cuts else [fmpq(0), fmpq(1)]
    for a, b in zip(cuts, cuts[1:]):
        us += [a + (b - a) / 3, a + 2 * (b - a) / 3]
    us += [cuts[-1] + 1, cuts[-1] + 2] if cuts else []

    def at(u: fmpq) -> tuple[list, int]:
        nums, den = _at(p, D, u)
        return [x * S for x in nums], den * R

    seen = list(zip(us, reader.values([at(u) for u in us])))
    _refute_m([seen], m, "check line")
    proved = _proved([seen])[0]
    if proved.count < m or proved.positions is None:
        return Sighting(False, f"the check line proves {proved.count} of the {m} hyperplanes at determined points "
                        "(two learned planes cross it at one point, or the black box does not break where they cross it)",
                        proved.count)
    if m:
        points = [at(u) for u in proved.positions]
        N = QMatrix.from_rows(rows)
        Z = QMatrix.from_columns([[fmpq(x, den) for x in nums] + [fmpq(1)] for nums, den in points], nrows=d + 1)
        zeros = [[j for j, x in enumerate(row) if x == 0] for row in (N @ Z).rows()]
        if sorted(len(z) for z in zeros) != [1] * m or len({z[0] for z in zeros}) != m:
            raise PathRetry("the check line's crossings do not lie one on each learned hyperplane: the learned "
                            "function is not the black box's")
    return Sighting(True, f"all {m} units seen: a check line proves {m} distinct hyperplanes, each on exactly one "
                    f"learned hyperplane (wrong with probability <= {failure_bound(m, drawn):.1e} over the line seed, "
                    f"{drawn} check line{'s' if drawn > 1 else ''} drawn)", proved.count)


def _orient_affine(form: FunctionForm) -> tuple[Orientation, ReLUFFN | None]:
    """The unit forms of an affine form and a network with exactly its function (``None`` when the
    units are not found: then the function form is written as units)."""
    d = form.d
    if not form.affine:  # zero offsets and constant: the bias-free case
        o = orient(form)
        net = o.solutions[0].network() if o.solutions and not any(o.solutions[0].residual) else None
        return o, net
    normals = [n[:d] for n in form.normals]
    offsets = [n[d] for n in form.normals]
    L, l0 = form.linear[:d], form.linear[d]
    if len(set(normals)) != len(normals):  # parallel hyperplanes: the bias-free subset sum does not apply
        return Orientation((), False, False, "parallel hyperplanes: the orientation search is not run"), None
    plain = orient(FunctionForm(tuple(normals), form.kinks, tuple(L)))
    sols = []
    for sol in plain.solutions:
        if any(sol.residual):
            continue
        units, const = [], Fraction(0)
        for u, w in sol.units:
            sigma = 1 if u in normals else -1
            k = normals.index(u if sigma == 1 else tuple(-x for x in u))
            units.append((tuple(u) + (sigma * offsets[k],), w))
            const += w * sigma * offsets[k] / 2
        # Σ w ReLU(σ(n x + o)) = Σ (w/2)(σ(n x + o) + |n x + o|): its constant is Σ (w/2)σo; b makes up ℓ₀
        sols.append(UnitForm.build_affine(d, units, tuple(Fraction(0) for _ in range(d)) + (l0 - const,)))
    orientation = Orientation(tuple(sols), plain.one_per_plane and bool(sols), plain.exhaustive, plain.reason)
    net = sols[0].network() if sols else None
    if net is not None and net.function_form() != form:
        raise PathRetry("the oriented units do not compute the learned function")
    return orientation, net


def _as_units(form: FunctionForm) -> ReLUFFN:
    """The affine form written as units: κ|z| = κReLU(z) + κReLU(−z), L as an antipodal pair, ℓ₀ as b."""
    if not form.affine:
        units = [(n, k) for n, k in zip(form.normals, form.kinks)] + [(tuple(-x for x in n), k)
                                                                       for n, k in zip(form.normals, form.kinks)]
        return UnitForm(tuple(units), form.linear).network()
    units = [(n, k) for n, k in zip(form.normals, form.kinks)] + [(tuple(-x for x in n), k)
                                                                   for n, k in zip(form.normals, form.kinks)]
    return UnitForm(tuple(units), form.linear, True).network()


def _extract(ask, transcript, replay, d: int, *, m, seed: int, retries: int, max_units: int):
    """The learner's queries and decisions (the sighting included), given how to ask, read the transcript
    and replay: ``(form, orientation, model, lines, sighting)``.  The run and the certificate check both
    call it, so a certificate re-derives every decision from the answers alone."""
    rng = np.random.default_rng(seed)
    reader = _Reader(ask, d)
    last = ""
    drawn = 0  # check lines drawn: the failure bound is a union over them
    for attempt in range(retries + 1):
        try:
            form = _attempt(reader, rng, d, m, max_units)
            if m is not None and len(form.normals) > m:
                raise PathRetry(f"the search found {len(form.normals)} hyperplanes, more than m = {m}")
            if m is not None and len(form.normals) == m:
                drawn += 1
                sighting = _check_line(reader, rng, d, m, form, drawn)
            else:
                sighting = Sighting(False, "no m given" if m is None else (
                    f"the search found {len(form.normals)} hyperplanes for m = {m}: units merged on one hyperplane, "
                    "an antipodal pair, or units hidden from the line"))
            orientation, net = _orient_affine(form)
        except PathRetry as e:
            last = str(e)
            continue
        if sighting.seen and orientation.exhaustive and not orientation.one_per_plane:
            # proved the black box's if it has at most m units, yet no m units compute it: it has more
            raise OracleInconsistent(
                f"m = {m} is too small: the learned function, which is the black box's if it has at most m units "
                f"(but for the check line's failure probability), needs more than m units ({orientation.reason})")
        model = net if net is not None else _as_units(form)
        bad = replay(model, transcript())
        if bad:
            last = f"the learned function does not reproduce {len(bad)} answers (first #{bad[0]})"
            continue
        return form, orientation, model, attempt + 1, sighting
    small = f"m = {m} is below its number of units, or " if m is not None and "more than" in last else ""
    raise OracleInconsistent(f"no consistent ReLU network with biases after {retries + 1} lines (last: {last}): "
                             f"{small}the black box is not a one-hidden-layer ReLU network, or part of it hides from "
                             "every line tried")


#: What a result of this learner rests on unless all m units were seen (the check line).
HIDDEN_AFFINE = ("no hidden units: every hyperplane crosses the search line inside its window and shows its kink "
                 "there (no tent between the samples, no units whose kinks cancel on it, no two kinks that the check "
                 "at each breakpoint cannot separate); give m, an upper bound on the units, to remove it when the "
                 "line shows m hyperplanes and a check line proves them")


def _standing(m, seen: bool = False) -> tuple:
    return (() if seen else (HIDDEN_AFFINE,)) + ((at_most(m),) if m is not None else ()) + (PATH_SEED,)


def _unit_level(orientation: Orientation, sighting: Sighting, m) -> tuple[bool, str]:
    """Whether the units are identified, and what that rests on (or why not)."""
    why = orientation.reason or "one orientation found"
    if not sighting.seen:
        if m is None:
            return False, f"{why}; the units are identified only when every unit is accounted for: give m"
        return False, f"{why}; not every unit is accounted for ({sighting.reason})"
    if not orientation.unique:
        return False, why
    return True, (f"identifiable among networks with at most {m} units: all {m} hyperplanes seen, one unit on each, "
                  "and a unique orientation")


def learn_ffn_biased(oracle: Oracle, *, m: int | None = None, seed=None, checks: int = DEFAULT_FFN_CHECKS,
                     check_seed=None, retries: int = 3, max_units: int = 4096) -> LearnResult:
    """Extract ``g(x) = wᵀReLU(Ax + a) + b`` exactly from one-token value queries ``g([x])``.

    Parameters are those of :func:`~exact.learn.learn_ffn` (``m`` an upper bound on the units,
    stated; ``seed`` of the line; ``checks`` verification points).  The result's
    ``details["function_form"]`` is the affine function-level form, which is what is exact; with
    ``m`` given and every unit seen on the check line, "no hidden units" is dropped and the unit
    level is identified where the orientation is unique (``details["units_seen"]``,
    ``details["identifiable"]``).

    Examples
    --------
    >>> from exact import ExactOracle
    >>> net = ReLUFFN([[1, 2, 0], [0, -1, 3]], [1, "-1/2"], a=[1, "-2/3"], b=5)
    >>> r = learn_ffn_biased(ExactOracle(net), m=2, seed=0)
    >>> r.details["function_form"] == net.function_form(), r.exact
    (True, True)
    """
    d = oracle_dimension(oracle)
    check_options(m=m, seed=seed, retries=retries, max_units=max_units, interior=False)
    if seed is None:
        seed = secrets.randbits(63)
    if not oracle.exact:
        raise InvalidArgument("oracle: the ReLU learner reads exact rational answers; this oracle is approximate")
    run = Run(SPEC, oracle, mode="certified", queries=None, checks=checks, check_seed=check_seed)
    with run:
        form, orientation, model, paths, sighting = _extract(run.ask, lambda: run.transcript, run.replay, d, m=m,
                                                             seed=seed, retries=retries, max_units=max_units)
        identifiable, unit_reason = _unit_level(orientation, sighting, m)
        details = FFNDetails(function_form=form, unit_forms=orientation.solutions, identifiable=identifiable,
                             orientations=len(orientation.solutions), unit_reason=unit_reason,
                             hyperplanes=len(form.normals), proved_hyperplanes=sighting.proved,
                             units_seen=sighting.seen, sighting=sighting.reason, paths=paths, seed=seed)
        conditions = {"seed": seed, "retries": retries, **({"m": m} if m is not None else {})}
        return run.finish(model, conditions=conditions, details=details, standing=_standing(m, sighting.seen))


def _check_certificate(model, transcript, conditions) -> registry.Rederived:
    """Re-run the learner on the certified network with the recorded seed: its queries must be the
    transcript's and the function it finds the network's."""
    from ..certify import failed_entries
    from ..oracles import ExactOracle

    standing = _standing(conditions.get("m"))
    if conditions.get("seed") is None:
        return registry.Rederived("the certificate must record the learner's line seed (conditions seed)", standing)
    box = ExactOracle(model)
    try:
        form, _, _, _, sighting = _extract(box.query_batch, lambda: box.transcript, lambda mdl, tr: failed_entries(mdl, tr),
                                 model.d, m=conditions.get("m"), seed=conditions["seed"],
                                 retries=conditions.get("retries", 3), max_units=1 << 16)
    except (ExactAttentionError, ArithmeticError) as e:
        return registry.Rederived(f"re-running the learner on the certified network fails: {type(e).__name__}: {e}"[:300],
                                  standing)
    # what the claim rests on is re-derived there: "no hidden units" drops only where the re-run's own
    # check line proves every unit (never read from the certificate)
    return rerun_verdict(registry, form == model.function_form(), [q.X for q in box.transcript], transcript,
                         _standing(conditions.get("m"), sighting.seen), "network",
                         "function: part of it hides from the line")


SPEC = (
    registry.LearnerSpec(
        name="ffn-biased",
        summary="exact extraction of a ReLU FFN with biases, wᵀReLU(Ax + a) + b, in ℚ: one line, gradient jumps, "
                "offsets",
        model_kind="ffn",
        modes=("certified",),
        learn=learn_ffn_biased,
        query_count=lambda d, m=None, **conditions: affine_query_count(d, m if m is not None else d, check_line=m is not None),
        count_formula="about (m + 1)(d − 1) + 7m + 10 (2m + 2 of it the check line, m given)",
        conditions={k: v for k, v in FFN_CONDITIONS.items() if k != "interior"},
        check_certificate=_check_certificate,
        standing=lambda conditions: _standing(conditions.get("m")),
        scope=lambda conditions: "as a function, among one-hidden-layer ReLU networks with biases",
        unchecked=lambda conditions: ("among one-hidden-layer ReLU networks with biases",),
        model_class=lambda conditions: "a one-hidden-layer ReLU network with biases whose units all show on the line",
        options=(
            registry.Option("m", "int", "an upper bound on the hidden units, if known", minimum=0),
            registry.Option("seed", "int", "seed of the search line (default: fresh, reported)", minimum=0),
        ),
        command="ffn",
        method="biased",
        switch="biases",
        rederive_in_run=False,
    )
)
