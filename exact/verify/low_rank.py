"""The Theorem 5.1 claims (low-rank heads) on a built-in sweep."""

from __future__ import annotations

import numpy as np

from .. import registry
from ..models import SingleHead
from ..oracles import ExactOracle
from .budget import pick
from .core import Claim, Instance

__all__ = ["low_rank_claims", "low_rank_instances"]

CS_SUCCESS = 1e-6

#: The constant C of the compressed-sensing learner's default m = ceil(C·2rd).
DEFAULT_C = dict((o.name, o.default) for o in registry.get("low-rank-cs").options)["C"]


def low_rank_query_count(d: int, r: int, *, rank_known: bool = True) -> int:
    count = registry.get("low-rank").query_count(d, rank=r)
    return count if rank_known else count + d - r


def low_rank_instances(*, budget: str = "standard") -> tuple[Instance, ...]:
    """d ∈ {4, 8, 16, 32} (up to 16 at ``quick``, 64 at ``full``), r ∈ {1, 2, d/4}; a zero leading
    r×r block; v with zeros; r = d; W = 0."""
    dims = pick(budget, quick=(4, 8, 16), standard=(4, 8, 16, 32), full=(4, 8, 16, 32, 64))
    out = [
        Instance(f"d={d} r={r}", SingleHead.random(d, seed=100 * d + r, rank=r), rank=r)
        for d in dims
        for r in sorted({1, 2, d // 4})
    ]
    lead = SingleHead.from_factors([[0, 0, 1, 2, 1], [0, 0, 3, 1, -1]], [[1, 2, 0, 1, 1], [0, 1, 1, 1, 2]], [1, 2, 3, 4, 5])
    out += [
        Instance("d=5 r=2, zero leading 2×2 block", lead, rank=2),
        Instance("d=8 r=2, v with 4 zeros", SingleHead.random(8, seed=7, rank=2, v_zeros=4), rank=2),
        Instance("d=6 r=d", SingleHead.random(6, seed=8), rank=6),
        Instance("d=6 W=0", SingleHead.random(6, seed=9, rank=0), rank=0),
    ]
    return tuple(out)


def _sketch_check(mode: str, *, rank_known: bool):
    def check(inst: Instance):
        oracle = ExactOracle(inst.model)
        learn = registry.get("low-rank").learn
        r = learn(oracle, rank=inst.rank if rank_known else None, mode=mode, seed=0)
        d = inst.model.d
        exact = r.model == inst.model and r.exact and r.details["rank"] == inst.rank and r.certificate.check().holds
        assert inst.rank is not None  # every low-rank instance names its rank
        want = low_rank_query_count(d, inst.rank, rank_known=rank_known)
        count = r.queries == oracle.count - r.verification_queries == want
        return exact, count, f"{r.queries} queries (formula {want}) + {r.verification_queries} checks", {
            "d": d, "r": inst.rank, "queries": r.queries, "formula": want}

    return check


def _cs_check(inst: Instance):
    oracle = ExactOracle(inst.model)
    spec = registry.get("low-rank-cs")
    r = spec.learn(oracle, rank=inst.rank, C=DEFAULT_C, seed=1)
    W, _ = inst.model.to_numpy()
    Wh, _ = r.model.to_numpy()
    err = float(np.linalg.norm(Wh - W) / np.linalg.norm(W))
    want = spec.query_count(inst.model.d, rank=inst.rank, C=DEFAULT_C)
    return err <= CS_SUCCESS, r.queries == oracle.count == want, f"relative error {err:.2e}", {
        "d": inst.model.d, "r": inst.rank, "C": DEFAULT_C, "queries": r.queries, "formula": want, "error": err}


def _phase_check(inst: Instance):
    """Below 2rd − r² measurements no learner can pin the head down; at the default C the CS learner succeeds."""
    assert inst.rank is not None and inst.grid is not None  # every phase instance names its rank and C
    d, r, C = inst.model.d, inst.rank, float(inst.grid)
    spec = registry.get("low-rank-cs")
    oracle = ExactOracle(inst.model)
    result = spec.learn(oracle, rank=r, C=C, seed=1)
    W, _ = inst.model.to_numpy()
    Wh, _ = result.model.to_numpy()
    err = float(np.linalg.norm(Wh - W) / np.linalg.norm(W))
    measurements = spec.query_count(d, rank=r, C=C) - d
    dof = 2 * r * d - r * r
    success = err <= CS_SUCCESS
    if measurements < dof:
        ok, what = not success, f"{measurements} < {dof} measurements: must fail"
    elif C >= DEFAULT_C:
        ok, what = success, f"C = {C:g} >= {DEFAULT_C:g}: must succeed"
    else:
        ok, what = True, "inside the transition: recorded"
    return ok, result.queries == oracle.count == measurements + d, f"{what}, relative error {err:.1e}", {
        "d": d, "r": r, "C": C, "measurements": measurements, "dof": dof, "success": success, "error": err,
        "queries": result.queries, "formula": measurements + d}


def low_rank_claims(*, budget: str = "standard") -> list[Claim]:
    """The Theorem 5.1 claims: exact sketch recovery and counts, and the CS learner at the measured C."""
    inst = low_rank_instances(budget=budget)
    small = tuple(i for i in inst if i.model.d <= 8)
    cs = tuple(
        Instance(f"d={d} r={r} trial {t}", SingleHead.random(d, seed=500 + 10 * d + t, rank=r), rank=r)
        for d, r in pick(budget, quick=((8, 1), (8, 2)), standard=((8, 1), (8, 2), (16, 2)),
                         full=((8, 1), (8, 2), (16, 2), (16, 4), (32, 2)))
        for t in range(pick(budget, quick=1, standard=1, full=5))
    )
    phase = tuple(
        Instance(f"d={d} r={r} C={C} trial {t}", SingleHead.random(d, seed=700 + 10 * d + r + 1000 * t, rank=r),
                 grid=C, rank=r)
        for d, r in pick(budget, quick=((8, 1),), standard=((8, 1), (8, 2)), full=((8, 1), (8, 2), (16, 1), (16, 2)))
        for C in ("0.25", "0.5", "1", "1.5", "2", "2.5", "3", f"{DEFAULT_C:g}")
        for t in range(pick(budget, quick=1, standard=1, full=3))
    )
    return [
        Claim("Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (certified)", inst, _sketch_check("certified", rank_known=True)),
        Claim("Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (symbolic)", small, _sketch_check("symbolic", rank_known=True)),
        Claim("Thm 5.1 sketch, rank found: exact in 2rd−r²+2d−r queries", inst, _sketch_check("certified", rank_known=False)),
        Claim(f"Thm 5.1 CS learner: rel. error <= 1e-6 at C = {DEFAULT_C:g}", cs, _cs_check, requires="cvxpy"),
        Claim("Thm 5.1 CS phase transition: fails below 2rd − r² measurements, succeeds at the default C", phase,
              _phase_check, requires="cvxpy"),
    ]
