"""The [KKG26] claims: the canonical form of a multi-head model, exactly, at 4Hd² − 2H + 1 queries."""

from __future__ import annotations

import statistics
from fractions import Fraction

from .. import registry
from ..canonical import canonical_form
from ..errors import OracleInconsistent, PrecisionInsufficient
from ..multihead import MultiHead
from ..oracles import ExactOracle, FloatOracle
from .budget import pick
from .core import Claim, Instance

__all__ = ["kkg_claims"]

_FLAGS = {"": {}, " dup-W": {"duplicate_w": True}, " zero-v": {"zero_v": True}, " shared-v": {"shared_v": True}}


def _paper(d: int, H: int) -> int:
    return 4 * H * d * d - 2 * H + 1


def _run(inst: Instance, learner: str, mode: str | None = None):
    model, H, seed = inst.model
    oracle = ExactOracle(model)
    r = registry.get(learner).learn(oracle, heads=H, seed=seed, mode=mode)
    exact = r.exact and r.model == canonical_form(model) and r.report is not None and r.report.holds
    counted = oracle.count == r.queries + r.verification_queries and r.max_length == 2 * H + 1
    return r, exact, counted


def _paper_check(inst: Instance):
    r, exact, counted = _run(inst, "multi-head")
    d, H = inst.model[0].d, inst.model[1]
    ok = counted and r.queries == _paper(d, H) and r.details["redraws"] == 0
    return exact, ok, f"{r.queries} = 4Hd² − 2H + 1, {r.model.H} canonical head(s), length {r.max_length}", {
        "d": d, "H": H, "plan": "paper", "queries": r.queries, "formula": _paper(d, H)}


def _symbolic_check(inst: Instance):
    r, exact, counted = _run(inst, "multi-head", mode="symbolic")
    d, H = inst.model[0].d, inst.model[1]
    return exact and r.mode == "symbolic", counted and r.queries == _paper(d, H), "sympy confirms every block", {
        "d": d, "H": H, "plan": "paper", "queries": r.queries, "formula": _paper(d, H)}


def _fast_check(inst: Instance):
    r, exact, counted = _run(inst, "multi-head-fast")
    d, H = inst.model[0].d, inst.model[1]
    formula = registry.get("multi-head-fast").query_count(d, heads=H)
    generic = r.details["fallback_groups"] == 0
    ok = counted and (r.queries == formula if generic else formula < r.queries <= _paper(d, H))
    return exact, ok, (f"{r.queries} queries = {r.queries / _paper(d, H):.2f}× the paper's, "
                       f"lower bound H(d² + d) = {r.details['lower_bound']}"
                       + ("" if generic else f", {r.details['fallback_groups']} group(s) fell back to links")), {
        "d": d, "H": H, "plan": "fast", "queries": r.queries, "formula": formula, "paper": _paper(d, H)}


def _median_check(inst: Instance):
    ratios = []
    for d, H, seed in inst.model:
        model = MultiHead.random(d, H, seed=seed)
        oracle = ExactOracle(model)
        r = registry.get("multi-head-fast").learn(oracle, heads=H, seed=seed)
        if not (r.exact and r.model == canonical_form(model)):
            return False, False, f"d={d} H={H} seed={seed}: not exact"
        ratios.append((oracle.count - r.verification_queries) / _paper(d, H))
    med = statistics.median(ratios)
    return True, med <= 0.6, f"median fast/paper = {med:.3f} over {len(ratios)} generic instances (target <= 0.6)"


def _refusal_check(inst: Instance):
    model, H, expect = inst.model
    try:
        registry.get("multi-head").learn(ExactOracle(model), heads=H, seed=0)
    except OracleInconsistent as e:
        return expect in str(e), True, str(e)[:70]
    return False, True, "no error: a wrong form could have been returned"


def _float_check(inst: Instance):
    model, H, expect = inst.model
    oracle = FloatOracle(model)
    try:
        r = registry.get("multi-head").learn(oracle, heads=H, seed=0)
    except PrecisionInsufficient as e:
        return expect == "refuse", True, f"refused: {str(e)[:60]}"
    if expect == "refuse":
        return False, True, "a result where the answers cannot resolve the heads"
    import numpy as np

    err = 0.0
    for h in canonical_form(model).heads:
        W, v = h.to_numpy()
        err = max(err, min(max(float(np.max(np.abs(g.to_numpy()[0] - W))), float(np.max(np.abs(g.to_numpy()[1] - v))))
                           for g in r.model.heads))
    ok = r.model.H == canonical_form(model).H and err <= r.error_estimate
    return ok, r.queries == _paper(model.d, H) == oracle.count - r.verification_queries, (
        f"error {err:.1e} <= estimate {r.error_estimate:.1e}, condition {r.details['condition']:.1e} "
        f"(monomial {r.details['monomial_condition']:.1e})"
    )


def _spread(H: int, d: int) -> MultiHead:
    """H heads with well-separated scores: W_h = w_h·I plus a small nilpotent part, w_h over [−3, 3]."""
    heads = []
    for j in range(H):
        w = Fraction(-3) + Fraction(6 * j, H - 1)
        W = [[w if a == b else (Fraction(j, 10) if b > a else Fraction(0)) for b in range(d)] for a in range(d)]
        heads.append((W, [Fraction((-1) ** (a + j) * (1 + (a + j) % 3), 2) for a in range(d)]))
    return MultiHead(heads, d=d)


def kkg_claims(*, budget: str = "standard") -> list[Claim]:
    """Exact canonical forms at the paper's count, the fast plan, symbolic and float modes, refusals."""
    dims = pick(budget, quick=(1, 2, 3), standard=(1, 2, 3, 5), full=(1, 2, 3, 4, 5, 6))
    # generic instances over the grid (H = 4 up to d = 3), the structured ones at one H per d; the
    # test suite's slow grid runs every combination with three seeds
    paper = tuple(
        Instance(f"d={d} H={H}{name}", (MultiHead.random(d, H, seed=10 * d + H, **flags), H, d + H))
        for d in dims
        for H in (2, 3, 4)
        for name, flags in _FLAGS.items()
        if (not name and (H < 4 or d <= 3)) or (name and H == (2 + d % 3 if d <= 3 else 2))
    )
    fast = tuple(
        Instance(f"d={d} H={H}{name}", (MultiHead.random(d, H, seed=10 * d + H + 1, **flags), H, d))
        for d in dims[:3]
        for H in (2, 3)
        for name, flags in _FLAGS.items()
        if name in ("", " shared-v")
    )
    sweep = tuple((d, H, seed) for d in range(1, 6) for H in (2, 3, 4) for seed in range(1))
    symbolic = tuple(
        Instance(f"d={d} H={H} dup-W", (MultiHead.random(d, H, seed=d + H, duplicate_w=True), H, 1))
        for d, H in ((1, 2), (2, 2), (2, 3))
    )
    refusals = (
        Instance("H bound 2 below 3 canonical heads", (MultiHead.random(3, 3, seed=1), 2, "more than 2 canonical")),
        Instance("H bound 1 below 4 canonical heads", (MultiHead.random(2, 4, seed=2), 1, "more than 1 canonical")),
    )
    floats = (
        Instance("H=2 d=2 random", (MultiHead.random(2, 2, seed=0), 2, "estimate")),
        Instance("H=2 d=3 random", (MultiHead.random(3, 2, seed=1), 2, "estimate")),
        Instance("H=4 d=1 separated scores", (_spread(4, 1), 4, "estimate")),
        Instance("H=6 d=1 separated scores (float64 cannot resolve them)", (_spread(6, 1), 6, "refuse")),
    )
    return [
        Claim("KKG26: canonical form exactly, 4Hd² − 2H + 1 queries of length <= 2H + 1", paper, _paper_check),
        Claim("KKG26: symbolic mode (sympy confirms every block)", symbolic, _symbolic_check),
        Claim("KKG26 (beyond): fast plan exact at its count, links only for shared v", fast, _fast_check),
        Claim("KKG26 (beyond): fast plan median <= 0.6× the paper's count",
              (Instance(f"{len(sweep)} generic instances, d 1..5, H 2..4", sweep),), _median_check),
        Claim("KKG26: a too-small H bound is refused, never misfit", refusals, _refusal_check, counts=False),
        Claim("KKG26: float mode within its error estimate, or refused", floats, _float_check),
    ]
