"""The claims for heads with biases (``(W, c, v, b)``, d² + 2d + 1 queries) on a built-in sweep."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction

from .. import registry
from ..errors import NotIdentifiable
from ..models import SingleHead
from ..numbers import format_rational
from ..oracles import ExactOracle, FloatOracle
from .budget import pick
from .cases import HeadCase
from .core import Claim, Instance, Verdict, conditions
from .formulas import BIASED, BIASED_ZERO_V

__all__ = ["biased_claims", "biased_instances", "difference"]


def _learn(oracle, **kwargs):
    """The registered learner of heads with biases (found by name, never imported)."""
    return registry.get("single-head-biased").learn(oracle, **kwargs)


def _with_zeros(h: SingleHead, c_zeros: int) -> SingleHead:
    return SingleHead(h.W, h.v, (Fraction(0),) * c_zeros + h.c[c_zeros:], h.b)


def biased_instances(*, max_d: int = 16, budget: str = "standard") -> tuple[Instance[HeadCase], ...]:
    """Random rational heads with biases for d = 1..max_d (two seeds), zero entries of ``v`` and ``c``,
    ``b = 0`` with ``c ≠ 0``, and float32-grid heads."""
    seeds = pick(budget, quick=(0,), standard=(0, 1), full=(0, 1, 2, 3))
    out = [Instance(f"rational d={d} seed={s}", HeadCase(SingleHead.random(d, seed=s, biases=True)))
           for d in range(1, max_d + 1) for s in seeds]
    out += [Instance(f"zeros d={d} (v: {z}, c: {z})",
                     HeadCase(_with_zeros(SingleHead.random(d, seed=100 + d, v_zeros=z, biases=True), z)))
            for d, z in ((2, 1), (4, 2), (8, 7))]
    h = SingleHead.random(5, seed=7, biases=True)
    out += [Instance("b = 0, c != 0 d=5", HeadCase(SingleHead(h.W, h.v, h.c, 0))),
            Instance("c = 0, b != 0 d=5", HeadCase(SingleHead(h.W, h.v, None, h.b)))]
    out += [Instance(f"float32 grid d={d}", HeadCase(SingleHead.random(d, seed=40 + d, grid="float32", biases=True),
                                                     grid="float32")) for d in (4, 8)]
    return tuple(out)


def difference(learned: SingleHead, truth: SingleHead) -> str:
    """Where two heads with biases first differ, e.g. ``c[1] is 3/2, the model's is 1``."""
    pairs = [(f"W[{i}][{j}]", x, y) for i, (ra, rb) in enumerate(zip(learned.W, truth.W)) for j, (x, y) in
             enumerate(zip(ra, rb))]
    pairs += [(f"v[{i}]", x, y) for i, (x, y) in enumerate(zip(learned.v, truth.v))]
    pairs += [(f"c[{i}]", x, y) for i, (x, y) in enumerate(zip(learned.c, truth.c))] + [("b", learned.b, truth.b)]
    for name, x, y in pairs:
        if x != y:
            return f"{name} is {format_rational(x)}, the model's is {format_rational(y)}"
    return ""


def _exact_check(mode: str, *, use_grid: bool = False) -> Callable[[HeadCase], Verdict]:
    def check(case: HeadCase) -> Verdict:
        oracle = ExactOracle(case.model)
        r = _learn(oracle, mode=mode, grid=case.grid if use_grid else None)
        d = case.model.d
        exact, why = conditions((r.model == case.model, difference(r.model, case.model)),
                                (r.exact, "the result is not labelled exact"),
                                (r.certificate.check().holds, "its certificate does not hold"))
        count = BIASED.check(oracle.count - r.verification_queries, reported=r.queries, longest=r.max_length,
                             longest_expected=2, d=d)
        return Verdict(exact, count, why, f"{r.seconds['total']:.3f}s", {"d": d})

    return check


def _float_check(bound: float) -> Callable[[HeadCase], Verdict]:
    def check(case: HeadCase) -> Verdict:
        oracle = FloatOracle(case.model)
        r = _learn(oracle, mode="float", w_bound=4)
        a, t = r.model, case.model
        err = max(abs(float(x) - float(y)) for x, y in zip(a.parameters(), t.parameters())) if a.biased else 1.0
        d = t.d
        count = BIASED.check(oracle.count - r.verification_queries, reported=r.queries, d=d)
        ok = err <= bound and err <= r.error_estimate
        return Verdict(ok, count, f"max error {err:.2e}, bound {bound:g}, estimate {r.error_estimate:.2e}",
                       f"max error {err:.2e}", {"d": d, "error": err, "bound": bound})

    return check


def _float_grid_check(case: HeadCase) -> Verdict:
    oracle = FloatOracle(case.model)
    r = _learn(oracle, grid=case.grid)
    exact, why = conditions((r.model == case.model, difference(r.model, case.model)),
                            (r.exact, "the result is not labelled exact"),
                            (r.certificate.check().holds, "its certificate does not hold"))
    count = BIASED.check(oracle.count - r.verification_queries, reported=r.queries, d=case.model.d)
    return Verdict(exact, count, why, "exact from float64 answers", {"d": case.model.d})


def _v_zero_check(case: HeadCase) -> Verdict:
    oracle = ExactOracle(case.model)
    try:
        _learn(oracle)
    except NotIdentifiable:
        return Verdict(True, BIASED_ZERO_V.check(oracle.count, d=case.model.d), note="NotIdentifiable",
                       metrics={"d": case.model.d})
    return Verdict(False, False, "no NotIdentifiable raised: a result for a head whose W and c have no effect",
                   count_why="no refusal to count")


def _tamper_check(case: HeadCase) -> Verdict:
    r = _learn(ExactOracle(case.model))
    m = r.model
    moved = [SingleHead(m.W, m.v, (m.c[0] + Fraction(1, 10**30),) + m.c[1:], m.b),
             SingleHead(m.W, m.v, m.c, m.b + Fraction(1, 10**30))]
    held = [dataclasses.replace(r.certificate, model=x).check().holds for x in moved]
    exact, why = conditions((not any(held), "a certificate with c or b off by 1e-30 checks as holding"),
                            (r.certificate.check().holds, "the untampered certificate does not hold"))
    return Verdict(exact, True, why, "tampered certificates rejected")


def biased_claims(*, max_d: int = 16, budget: str = "standard") -> list[Claim[HeadCase]]:
    """The claims for heads with biases on the built-in sweep."""
    inst = biased_instances(max_d=max_d, budget=budget)
    small = tuple(i for i in inst if i.case.model.d <= pick(budget, quick=4, standard=6, full=max_d))
    grid_inst = tuple(i for i in inst if i.case.grid)
    float_inst = tuple(Instance(f"float d={d}", HeadCase(SingleHead.random(d, seed=60 + d, biases=True)))
                       for d in range(1, max_d + 1))
    zero = tuple(Instance(f"v = 0 d={d}", HeadCase(SingleHead([[1] * d] * d, [0] * d, [1] * d, 2))) for d in (1, 3))
    few = tuple(Instance(f"rational d={d}", HeadCase(SingleHead.random(d, seed=d, biases=True))) for d in (2, 4))
    return [
        Claim("Biases: exact W, c, v, b in d²+2d+1 queries (certified)", inst, _exact_check("certified")),
        Claim("Biases: exact W, c, v, b in d²+2d+1 queries (symbolic)", small, _exact_check("symbolic")),
        Claim("Biases: float64 oracle + float32 grid: bit for bit", grid_inst, _float_grid_check),
        Claim("Biases: float mode error <= 1e-9 and within its estimate", float_inst, _float_check(1e-9)),
        Claim("Biases: v = 0 raises NotIdentifiable after exactly d + 1 queries", zero, _v_zero_check),
        Claim("Biases: a certificate with c or b tampered is rejected", few, _tamper_check, counts=False),
    ]
