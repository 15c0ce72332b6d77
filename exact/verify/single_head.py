"""The Theorem 4.1 claims (single head, d² + d queries) on a built-in sweep."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction

from .. import registry
from ..errors import NotIdentifiable, OracleInconsistent
from ..models import SingleHead
from ..numbers import format_rational
from ..oracles import ExactOracle, FloatOracle
from .budget import pick
from .cases import HeadCase
from .core import Claim, Instance, Verdict, conditions
from .formulas import SINGLE_HEAD, ZERO_V

__all__ = ["single_head_claims", "single_head_instances", "difference"]


def learn_single_head(oracle, **kwargs):
    """The registered Theorem 4.1 learner (found by name, never imported)."""
    return registry.get("single-head").learn(oracle, **kwargs)


def single_head_instances(*, max_d: int = 16, budget: str = "standard") -> tuple[Instance[HeadCase], ...]:
    """The built-in sweep: random rational heads for d = 1..max_d (two seeds, four at ``full``) and
    the edge cases (no 1e6 entries at ``quick``)."""
    seeds = pick(budget, quick=(0, 1), standard=(0, 1), full=(0, 1, 2, 3))
    out = [Instance(f"rational d={d} seed={s}", HeadCase(SingleHead.random(d, seed=s)))
           for d in range(1, max_d + 1) for s in seeds]
    out += [
        Instance(f"v zeros d={d} ({z} of {d})", HeadCase(SingleHead.random(d, seed=10 + d, v_zeros=z)))
        for d, z in ((2, 1), (4, 2), (8, 7))
    ]
    out += [
        Instance("singular W d=6 rank 1", HeadCase(SingleHead.random(6, seed=20, rank=1))),
        Instance("singular W d=4 W=0", HeadCase(SingleHead.random(4, seed=21, rank=0))),
    ]
    out += [
        Instance("huge entries d=3 |W| <= 1e4", HeadCase(SingleHead.random(3, seed=30, bound=10**4))),
        Instance("huge entries d=2 |W| <= 1e6", HeadCase(SingleHead.random(2, seed=31, bound=10**6))),
    ]
    out += [
        Instance(f"float32 grid d={d}", HeadCase(SingleHead.random(d, seed=40 + d, grid="float32"), grid="float32"))
        for d in (4, 8)
    ]
    out += [Instance("bfloat16 grid d=8", HeadCase(SingleHead.random(8, seed=50, grid="bfloat16"), grid="bfloat16"))]
    if budget == "quick":
        out = [i for i in out if "huge" not in i.name or "1e4" in i.name]
    return tuple(out)


def difference(learned, truth) -> str:
    """Where two single heads first differ, e.g. ``W[0][1] is 3/2, the model's is 1``."""
    for name, a, b in (("W", learned.W, truth.W), ("v", [learned.v], [truth.v])):
        for i, (row_a, row_b) in enumerate(zip(a, b)):
            for j, (x, y) in enumerate(zip(row_a, row_b)):
                if x != y:
                    at = f"[{i}][{j}]" if name == "W" else f"[{j}]"
                    return f"{name}{at} is {format_rational(x)}, the model's is {format_rational(y)}"
    return "the learned head differs from the model" if learned != truth else ""


def _exact_check(mode: str, *, use_grid: bool = False) -> Callable[[HeadCase], Verdict]:
    def check(case: HeadCase) -> Verdict:
        oracle = ExactOracle(case.model)
        r = learn_single_head(oracle, mode=mode, grid=case.grid if use_grid else None)
        d = case.model.d
        exact, why = conditions((r.model == case.model, difference(r.model, case.model)),
                                (r.exact, "the result is not labelled exact"),
                                (r.certificate.check().holds, "its certificate does not hold"))
        count = SINGLE_HEAD.check(oracle.count - r.verification_queries, reported=r.queries, longest=r.max_length,
                                  longest_expected=2, d=d)
        return Verdict(exact, count, why, f"{r.seconds['total']:.3f}s", {"d": d})

    return check


def _float_error(learned, truth) -> float:
    return max(abs(float(a) - float(b)) for a, b in zip(
        [x for row in learned.W for x in row] + list(learned.v), [x for row in truth.W for x in row] + list(truth.v)))


def _float_check(bound: float) -> Callable[[HeadCase], Verdict]:
    def check(case: HeadCase) -> Verdict:
        oracle = FloatOracle(case.model)
        r = learn_single_head(oracle, mode="float", w_bound=1024)  # Theorem 4.1's plan: fixed scales, d² + d
        err = _float_error(r.model, case.model)
        d = case.model.d
        count = SINGLE_HEAD.check(oracle.count - r.verification_queries, reported=r.queries, d=d)
        return Verdict(err <= bound, count, f"max error {err:.2e} > {bound:g}", f"max error {err:.2e}",
                       {"d": d, "error": err, "bound": bound})

    return check


def _float_grid_check(case: HeadCase) -> Verdict:
    oracle = FloatOracle(case.model)  # float64 answers, each with its own rounding bound
    r = learn_single_head(oracle, grid=case.grid)
    exact, why = conditions((r.model == case.model, difference(r.model, case.model)),
                            (r.exact, "the result is not labelled exact"),
                            (r.certificate.check().holds, "its certificate does not hold"),
                            (r.certificate.kind == "consistent", f"a {r.certificate.kind!r} certificate, not 'consistent'"))
    d = case.model.d
    count = SINGLE_HEAD.check(oracle.count - r.verification_queries, reported=r.queries, d=d)
    return Verdict(exact, count, why, "exact from float64 answers", {"d": d})


def _v_zero_check(case: HeadCase) -> Verdict:
    oracle = ExactOracle(case.model)
    try:
        learn_single_head(oracle)
    except NotIdentifiable:
        return Verdict(True, ZERO_V.check(oracle.count, d=case.model.d), note="NotIdentifiable",
                       metrics={"d": case.model.d})
    return Verdict(False, False, "no NotIdentifiable raised: a result for a head whose W has no effect",
                   count_why="no refusal to count")


def _tamper_check(case: HeadCase) -> Verdict:
    r = learn_single_head(ExactOracle(case.model))
    W = [list(row) for row in r.model.W]
    W[-1][0] += Fraction(1, 10**30)
    bad = dataclasses.replace(r.certificate, model=SingleHead(W, r.model.v))
    exact, why = conditions((not bad.check().holds, "the tampered certificate (W off by 1e-30) checks as holding"),
                            (r.certificate.check().holds, "the untampered certificate does not hold"))
    return Verdict(exact, True, why, "tampered certificate rejected")


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


def _liar_check(case: HeadCase) -> Verdict:
    try:
        learn_single_head(_OutOfRange(case.model))
    except OracleInconsistent:
        return Verdict(True, note="OracleInconsistent")
    return Verdict(False, why="the out-of-range answer was not detected (no OracleInconsistent)")


def single_head_claims(*, max_d: int = 16, budget: str = "standard") -> list[Claim[HeadCase]]:
    """The Theorem 4.1 claims on the built-in sweep."""
    inst = single_head_instances(max_d=max_d, budget=budget)
    small = tuple(i for i in inst if i.case.model.d <= pick(budget, quick=6, standard=8, full=max_d))
    grid_inst = tuple(i for i in inst if i.case.grid)
    float_inst = tuple(
        Instance(f"float d={d} |W| <= 10", HeadCase(SingleHead.random(d, seed=60 + d, bound=10)))
        for d in range(1, max_d + 1)
    ) + tuple(i for i in inst if max(abs(x) for row in i.case.model.W for x in row) <= 10 and "rational" not in i.name)
    big = (Instance("float d=4 |W| ~ 1e3", HeadCase(SingleHead.random(4, seed=70, bound=1000))),)
    zero = tuple(Instance(f"v = 0 d={d}", HeadCase(SingleHead([[1] * d] * d, [0] * d))) for d in (1, 3))
    f32 = tuple(
        Instance(f"float32 head d={d}", HeadCase(SingleHead.random(d, seed=80 + d, grid="float32", bound=4),
                                                 grid="float32"))
        for d in (2, 4, 6)
    )
    few = tuple(Instance(f"rational d={d} seed={s}", HeadCase(SingleHead.random(d, seed=s)))
                for d in (3, 5) for s in (0, 1))
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


