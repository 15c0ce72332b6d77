"""The Theorem 4.1 claims (single head, d² + d queries) on a built-in sweep."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

from .. import registry
from ..errors import NotIdentifiable, OracleInconsistent
from ..models import SingleHead
from ..oracles import ExactOracle, FloatOracle
from .budget import pick
from .core import Claim, Instance

__all__ = ["single_head_claims", "single_head_instances"]


def learn_single_head(oracle, **kwargs):
    """The registered Theorem 4.1 learner (found by name, never imported)."""
    return registry.get("single-head").learn(oracle, **kwargs)


def single_head_query_count(d: int) -> int:
    return registry.get("single-head").query_count(d)


def single_head_instances(*, max_d: int = 16, budget: str = "standard") -> tuple[Instance, ...]:
    """The built-in sweep: random rational heads for d = 1..max_d (two seeds, four at ``full``) and
    the edge cases (no 1e6 entries at ``quick``)."""
    seeds = pick(budget, quick=(0, 1), standard=(0, 1), full=(0, 1, 2, 3))
    out = [Instance(f"rational d={d} seed={s}", SingleHead.random(d, seed=s)) for d in range(1, max_d + 1) for s in seeds]
    out += [
        Instance(f"v zeros d={d} ({z} of {d})", SingleHead.random(d, seed=10 + d, v_zeros=z))
        for d, z in ((2, 1), (4, 2), (8, 7))
    ]
    out += [
        Instance("singular W d=6 rank 1", SingleHead.random(6, seed=20, rank=1)),
        Instance("singular W d=4 W=0", SingleHead.random(4, seed=21, rank=0)),
    ]
    out += [
        Instance("huge entries d=3 |W| <= 1e4", SingleHead.random(3, seed=30, bound=10**4)),
        Instance("huge entries d=2 |W| <= 1e6", SingleHead.random(2, seed=31, bound=10**6)),
    ]
    out += [
        Instance(f"float32 grid d={d}", SingleHead.random(d, seed=40 + d, grid="float32"), grid="float32")
        for d in (4, 8)
    ]
    out += [Instance("bfloat16 grid d=8", SingleHead.random(8, seed=50, grid="bfloat16"), grid="bfloat16")]
    if budget == "quick":
        out = [i for i in out if "huge" not in i.name or "1e4" in i.name]
    return tuple(out)


def _exact_check(mode: str, *, use_grid: bool = False):
    def check(inst: Instance):
        oracle = ExactOracle(inst.model)
        grid = inst.grid if use_grid else None
        r = learn_single_head(oracle, mode=mode, grid=grid)
        d = inst.model.d
        exact = r.model == inst.model and r.exact and r.certificate.check().holds
        formula = single_head_query_count(d)
        count = r.queries == formula == oracle.count - r.verification_queries and r.max_length == 2
        return exact, count, f"{r.seconds['total']:.3f}s", {"d": d, "queries": r.queries, "formula": formula}

    return check


def _float_check(bound: float):
    def check(inst: Instance):
        oracle = FloatOracle(inst.model)
        r = learn_single_head(oracle, mode="float")
        err = max(
            abs(float(a) - float(b))
            for a, b in zip(
                [x for row in r.model.W for x in row] + list(r.model.v),
                [x for row in inst.model.W for x in row] + list(inst.model.v),
            )
        )
        formula = single_head_query_count(inst.model.d)
        count = r.queries == formula == oracle.count - r.verification_queries
        return err <= bound, count, f"max error {err:.2e}", {
            "d": inst.model.d, "error": err, "bound": bound, "queries": r.queries, "formula": formula}

    return check


def _float_grid_check(inst: Instance):
    oracle = FloatOracle(inst.model)  # float64 answers, each with its own rounding bound
    r = learn_single_head(oracle, grid=inst.grid)
    exact = r.model == inst.model and r.exact and r.certificate.check().holds and r.certificate.kind == "consistent"
    formula = single_head_query_count(inst.model.d)
    return exact, r.queries == formula == oracle.count - r.verification_queries, "exact from float64 answers", {
        "d": inst.model.d, "queries": r.queries, "formula": formula}


def _v_zero_check(inst: Instance):
    oracle = ExactOracle(inst.model)
    try:
        learn_single_head(oracle)
    except NotIdentifiable:
        d = inst.model.d
        return True, oracle.count == d, "NotIdentifiable", {"d": d, "queries": oracle.count, "formula": d}
    return False, False, "no error raised"


def _tamper_check(inst: Instance):
    r = learn_single_head(ExactOracle(inst.model))
    W = [list(row) for row in r.model.W]
    W[-1][0] += Fraction(1, 10**30)
    bad = dataclasses.replace(r.certificate, model=SingleHead(W, r.model.v))
    return (not bad.check().holds) and r.certificate.check().holds, True, "tampered certificate rejected"


class _OutOfRange(ExactOracle):
    """An exact oracle that lies once: one answer is scaled out of the attainable range."""

    def __init__(self, model):
        super().__init__(model)
        self._n = 0
        self._d = model.d

    def _answer(self, seq):
        self._n += 1
        answer = super()._answer(seq)
        if self._n == self._d + 1:
            return ExactOracle(SingleHead([[0] * self._d] * self._d, [7] * self._d))._answer(seq)
        return answer


def _liar_check(inst: Instance):
    try:
        learn_single_head(_OutOfRange(inst.model))
    except OracleInconsistent:
        return True, True, "OracleInconsistent"
    return False, True, "lie not detected"


def single_head_claims(*, max_d: int = 16, budget: str = "standard") -> list[Claim]:
    """The Theorem 4.1 claims on the built-in sweep."""
    inst = single_head_instances(max_d=max_d, budget=budget)
    small = tuple(i for i in inst if i.model.d <= pick(budget, quick=6, standard=8, full=max_d))
    grid_inst = tuple(i for i in inst if i.grid)
    float_inst = tuple(
        Instance(f"float d={d} |W| <= 10", SingleHead.random(d, seed=60 + d, bound=10)) for d in range(1, max_d + 1)
    ) + tuple(i for i in inst if max(abs(x) for row in i.model.W for x in row) <= 10 and "rational" not in i.name)
    big = (Instance("float d=4 |W| ~ 1e3", SingleHead.random(4, seed=70, bound=1000)),)
    zero = tuple(Instance(f"v = 0 d={d}", SingleHead([[1] * d] * d, [0] * d)) for d in (1, 3))
    f32 = tuple(
        Instance(f"float32 head d={d}", SingleHead.random(d, seed=80 + d, grid="float32", bound=4), grid="float32")
        for d in (2, 4, 6)
    )
    few = tuple(Instance(f"rational d={d} seed={s}", SingleHead.random(d, seed=s)) for d in (3, 5) for s in (0, 1))
    return [
        Claim("Thm 4.1: exact W, v in d²+d queries (certified)", inst, _exact_check("certified")),
        Claim("Thm 4.1: exact W, v in d²+d queries (symbolic)", small, _exact_check("symbolic")),
        Claim("Thm 4.1: grid heads bit for bit (certified, grid)", grid_inst, _exact_check("certified", use_grid=True)),
        Claim("Thm 4.1: float64 oracle + float32 grid: bit for bit", f32, _float_grid_check),
        Claim("Thm 4.1: float mode error <= 1e-9 for |W| <= 10", float_inst, _float_check(1e-9)),
        Claim("Thm 4.1: float mode error <= 1e-6 at |W| ~ 1e3", big, _float_check(1e-6)),
        Claim("v = 0 raises NotIdentifiable after exactly d queries", zero, _v_zero_check),
        Claim("tampered certificate is rejected", few, _tamper_check, counts=False),
        Claim("out-of-range answer raises OracleInconsistent", few, _liar_check, counts=False),
    ]


