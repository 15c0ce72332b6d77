"""The Theorem 5.1 claims (low-rank heads) on a built-in sweep."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .. import registry
from ..models import SingleHead
from ..oracles import ExactOracle, FloatOracle
from .budget import pick
from .cases import LowRankCase
from .core import Claim, Instance, Verdict, conditions
from .formulas import CS, CS_MEASUREMENTS, LOW_RANK, LOW_RANK_BIASED, LOW_RANK_FOUND
from .single_head import difference

__all__ = ["low_rank_claims", "low_rank_instances"]

CS_SUCCESS = 1e-6

#: The constant C of the compressed-sensing learner's default m = ceil(C·2rd).
DEFAULT_C = dict((o.name, o.default) for o in registry.get("low-rank-cs").options)["C"]


def low_rank_instances(*, budget: str = "standard") -> tuple[Instance[LowRankCase], ...]:
    """d ∈ {4, 8, 16, 32} (up to 16 at ``quick``, 64 at ``full``), r ∈ {1, 2, d/4}; a zero leading
    r×r block; v with zeros; r = d; W = 0."""
    dims = pick(budget, quick=(4, 8, 16), standard=(4, 8, 16, 32), full=(4, 8, 16, 32, 64))
    out = [
        Instance(f"d={d} r={r}", LowRankCase(SingleHead.random(d, seed=100 * d + r, rank=r), r))
        for d in dims
        for r in sorted({1, 2, d // 4})
    ]
    lead = SingleHead.from_factors([[0, 0, 1, 2, 1], [0, 0, 3, 1, -1]], [[1, 2, 0, 1, 1], [0, 1, 1, 1, 2]], [1, 2, 3, 4, 5])
    out += [
        Instance("d=5 r=2, zero leading 2×2 block", LowRankCase(lead, 2)),
        Instance("d=8 r=2, v with 4 zeros", LowRankCase(SingleHead.random(8, seed=7, rank=2, v_zeros=4), 2)),
        Instance("d=6 r=d", LowRankCase(SingleHead.random(6, seed=8), 6)),
        Instance("d=6 W=0", LowRankCase(SingleHead.random(6, seed=9, rank=0), 0)),
    ]
    return tuple(out)


def _sketch_check(mode: str, *, rank_known: bool) -> Callable[[LowRankCase], Verdict]:
    formula = LOW_RANK if rank_known else LOW_RANK_FOUND

    def check(case: LowRankCase) -> Verdict:
        oracle = ExactOracle(case.model)
        learn = registry.get("low-rank").learn
        r = learn(oracle, rank=case.rank if rank_known else None, mode=mode, seed=0)
        d = case.model.d
        exact, why = conditions((r.model == case.model, difference(r.model, case.model)),
                                (r.exact, "the result is not labelled exact"),
                                (r.details["rank"] == case.rank, f"rank {r.details['rank']}, the model's is {case.rank}"),
                                (r.certificate.check().holds, "its certificate does not hold"))
        count = formula.check(oracle.count - r.verification_queries, reported=r.queries, d=d, r=case.rank)
        return Verdict(exact, count, why, f"{r.queries} queries (formula {count.expected}) + "
                       f"{r.verification_queries} checks", {"d": d, "r": case.rank})

    return check


def _biased_check(mode: str) -> Callable[[LowRankCase], Verdict]:
    """Heads with biases: W, c, v, b exactly, at 2rd − r² + 2d + 1 queries, with a holding certificate."""
    from .biases import difference as biased_difference

    def check(case: LowRankCase) -> Verdict:
        oracle = ExactOracle(case.model)
        r = registry.get("low-rank").learn(oracle, rank=case.rank, mode=mode, seed=0, biases=True)
        d = case.model.d
        exact, why = conditions((r.model == case.model, biased_difference(r.model, case.model)),
                                (r.exact, "the result is not labelled exact"),
                                (r.certificate.conditions.get("biases") is True, "the certificate omits the class"),
                                (r.certificate.check().holds, "its certificate does not hold"))
        count = LOW_RANK_BIASED.check(oracle.count - r.verification_queries, reported=r.queries, d=d, r=case.rank)
        return Verdict(exact, count, why, f"{r.queries} queries (formula {count.expected})", {"d": d, "r": case.rank})

    return check


def _float_head(d: int, r: int, seed: int) -> SingleHead:
    """A Gaussian head of rank r with entries of order 1/d, as torch initialises them."""
    rng = np.random.default_rng(seed)
    K, Q = rng.standard_normal((r, d)) / np.sqrt(d), rng.standard_normal((r, d)) / np.sqrt(d)
    return SingleHead(((K.T @ Q) / np.sqrt(r)).tolist(), rng.standard_normal(d).tolist())


def _float_check(case: LowRankCase) -> Verdict:
    oracle = FloatOracle(case.model)
    r = registry.get("low-rank").learn(oracle, rank=case.rank, mode="float", seed=0)
    err = _relative_error(r.model, case.model)
    W, _ = case.model.to_numpy()
    worst = float(np.abs(np.array(r.model.to_numpy()[0]) - W).max())
    d = case.model.d
    ok, why = conditions((err <= 1e-9, f"relative error {err:.2e} > 1e-9"),
                         (worst <= r.error_estimate, f"error {worst:.2e} above its estimate {r.error_estimate:.2e}"),
                         (not r.exact, "a float result labelled exact"))
    count = LOW_RANK.check(oracle.count - r.verification_queries, reported=r.queries, d=d, r=case.rank)
    return Verdict(ok, count, why, f"relative error {err:.1e}, estimate {r.error_estimate:.1e}",
                   {"d": d, "r": case.rank, "error": err, "estimate": r.error_estimate})


def _relative_error(learned, truth) -> float:
    W, _ = truth.to_numpy()
    Wh, _ = learned.to_numpy()
    return float(np.linalg.norm(Wh - W) / np.linalg.norm(W))


def _cs_check(case: LowRankCase) -> Verdict:
    oracle = ExactOracle(case.model)
    r = registry.get("low-rank-cs").learn(oracle, rank=case.rank, C=DEFAULT_C, seed=1)
    err = _relative_error(r.model, case.model)
    count = CS.check(oracle.count, reported=r.queries, d=case.model.d, r=case.rank, C=DEFAULT_C)
    return Verdict(err <= CS_SUCCESS, count, f"relative error {err:.2e} > {CS_SUCCESS:g}", f"relative error {err:.2e}",
                   {"d": case.model.d, "r": case.rank, "C": DEFAULT_C, "error": err})


def _phase_check(case: LowRankCase) -> Verdict:
    """Below 2rd − r² measurements no learner can pin the head down; at the default C the CS learner succeeds."""
    assert case.C is not None  # every phase instance names its C
    d, r, C = case.model.d, case.rank, case.C
    oracle = ExactOracle(case.model)
    result = registry.get("low-rank-cs").learn(oracle, rank=r, C=C, seed=1)
    err = _relative_error(result.model, case.model)
    measurements = CS_MEASUREMENTS(d=d, r=r, C=C)
    dof = 2 * r * d - r * r
    success = err <= CS_SUCCESS
    if measurements < dof:
        ok, what = not success, f"{measurements} < {dof} measurements: must fail"
    elif C >= DEFAULT_C:
        ok, what = success, f"C = {C:g} >= {DEFAULT_C:g}: must succeed"
    else:
        ok, what = True, "inside the transition: recorded"
    count = CS.check(oracle.count, reported=result.queries, d=d, r=r, C=C)
    return Verdict(ok, count, f"{what}, but the relative error is {err:.1e}", f"{what}, relative error {err:.1e}",
                   {"d": d, "r": r, "C": C, "measurements": measurements, "dof": dof, "success": success, "error": err})


def low_rank_claims(*, budget: str = "standard") -> list[Claim[LowRankCase]]:
    """The Theorem 5.1 claims: exact sketch recovery and counts, and the CS learner at the measured C."""
    inst = low_rank_instances(budget=budget)
    small = tuple(i for i in inst if i.case.model.d <= 8)
    cs = tuple(
        Instance(f"d={d} r={r} trial {t}", LowRankCase(SingleHead.random(d, seed=500 + 10 * d + t, rank=r), r))
        for d, r in pick(budget, quick=((8, 1), (8, 2)), standard=((8, 1), (8, 2), (16, 2)),
                         full=((8, 1), (8, 2), (16, 2), (16, 4), (32, 2)))
        for t in range(pick(budget, quick=1, standard=1, full=5))
    )
    phase = tuple(
        Instance(f"d={d} r={r} C={C} trial {t}",
                 LowRankCase(SingleHead.random(d, seed=700 + 10 * d + r + 1000 * t, rank=r), r, float(C)))
        for d, r in pick(budget, quick=((8, 1),), standard=((8, 1), (8, 2)), full=((8, 1), (8, 2), (16, 1), (16, 2)))
        for C in ("0.25", "0.5", "1", "1.5", "2", "2.5", "3", f"{DEFAULT_C:g}")
        for t in range(pick(budget, quick=1, standard=1, full=3))
    )
    floats = tuple(Instance(f"float d={d} r={r}", LowRankCase(_float_head(d, r, seed=d + r), r))
                   for d, r in pick(budget, quick=((16, 2), (32, 4)), standard=((16, 2), (32, 4), (64, 8)),
                                    full=((16, 2), (32, 4), (64, 8), (128, 16))))
    biased = tuple(
        Instance(f"d={d} r={r} with biases", LowRankCase(SingleHead.random(d, seed=300 * d + r, rank=r, biases=True), r))
        for d in pick(budget, quick=(4, 8), standard=(4, 8, 16), full=(4, 8, 16, 32))
        for r in sorted({0, 1, d // 4})
    )
    return [
        Claim("Thm 5.1 sketch (beyond): float answers, rel. error <= 1e-9 in 2rd−r²+d queries", floats, _float_check),
        Claim("Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (certified)", inst, _sketch_check("certified", rank_known=True)),
        Claim("Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (symbolic)", small, _sketch_check("symbolic", rank_known=True)),
        Claim("Thm 5.1 sketch, rank found: exact in 2rd−r²+2d−r queries", inst, _sketch_check("certified", rank_known=False)),
        Claim(f"Thm 5.1 CS learner: rel. error <= 1e-6 at C = {DEFAULT_C:g}", cs, _cs_check, requires="cvxpy"),
        Claim("Thm 5.1 CS phase transition: fails below 2rd − r² measurements, succeeds at the default C", phase,
              _phase_check, requires="cvxpy"),
        Claim("Thm 5.1 sketch with biases (beyond): exact W, c, v, b in 2rd−r²+2d+1 queries (certified)", biased,
              _biased_check("certified")),
        Claim("Thm 5.1 sketch with biases (beyond): exact W, c, v, b in 2rd−r²+2d+1 queries (symbolic)",
              tuple(i for i in biased if i.case.model.d <= 8), _biased_check("symbolic")),
    ]
