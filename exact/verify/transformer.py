"""The one-layer Transformer claims (SPEC §3.5, §3.6): exact ReLU FFN extraction and the odd-query reduction."""

from __future__ import annotations

from .. import registry
from ..errors import NotIdentifiable
from ..ffn import ReLUFFN
from ..oracles import ExactOracle
from ..transformer import Transformer
from .budget import pick
from .core import Claim, Instance

__all__ = ["transformer_claims"]


def _ffn_check(inst: Instance):
    net, m = inst.model, inst.model.m
    oracle = ExactOracle(net)
    spec = registry.get("ffn")
    r = spec.learn(oracle, m=m, seed=0)
    form_ok = r.details["function_form"] == net.function_form()
    unit_ok = not r.details["identifiable"] or r.model.unit_form() == net.unit_form()
    total = oracle.count
    bound = (m + 1) * max(net.d - 2, 0) + 10 * m + 32  # docs/ffn.md, stated apart from the learner's own count
    exact = (form_ok and unit_ok and r.exact and r.certificate.check().holds
             and r.details["units_seen"]  # all m units seen: no hidden-units assumption left
             and not any(a.startswith("no hidden units") for a in r.assumptions + r.certificate.assumptions))
    return exact, total == r.queries + r.verification_queries and total <= bound, (
        f"{total} queries <= {bound}, {total / len(net.parameters()):.2f} per parameter"
    ), {"d": net.d, "m": m, "queries": total, "bound": bound, "parameters": len(net.parameters())}


def _edge_check(inst: Instance):
    net = inst.model
    expect = inst.grid  # what the unit level must report: "unit" (identified) or a word of the reason
    r = registry.get("ffn").learn(ExactOracle(net), m=net.m, seed=0)
    form_ok = r.details["function_form"] == net.function_form() and r.exact
    if expect == "unit":
        ok = r.details["identifiable"] and r.model.unit_form() == net.unit_form()
    else:
        ok = not r.details["identifiable"] and expect in r.details["unit_reason"]
        if expect == "merged":  # the merged canonical form is still reported
            ok = ok and r.details["unit_forms"][0] == net.unit_form()
    return form_ok and ok, True, (r.details["unit_reason"] or "unit level identified")[:60]


def _transformer_check(inst: Instance):
    T = inst.model
    oracle = ExactOracle(T)
    r = registry.get("transformer").learn(oracle, m=T.m, seed=0)
    d = T.d
    exact = (r.model.W == T.W and r.details["function_form"] == T.ffn.function_form()
             and (not r.details["identifiable"] or r.model.ffn.unit_form() == T.ffn.unit_form())
             and r.exact and r.certificate.check().holds)
    count = r.queries == r.details["ffn_queries"] + 2 * (d * d + d) == oracle.count - r.verification_queries
    formula = r.details["ffn_queries"] + 2 * (d * d + d)
    return exact, count, f"{r.details['ffn_queries']} + 2(d² + d) = {r.queries} oracle calls", {
        "d": d, "m": T.m, "queries": r.queries, "formula": formula}


def _not_identifiable_check(inst: Instance):
    try:
        registry.get("transformer").learn(ExactOracle(inst.model), seed=0)
    except NotIdentifiable as e:
        return "Aᵀw = 0" in str(e), True, "NotIdentifiable: Aᵀw = 0"
    return False, True, "no NotIdentifiable raised"


def transformer_claims(*, budget: str = "standard") -> list[Claim]:
    """FFN extraction (exact, within the count), its edge cases, the Transformer reduction."""
    shapes = pick(budget, quick=((4, 4), (8, 8), (8, 4), (8, 16)),
                  standard=((4, 4), (8, 8), (16, 16), (8, 4), (8, 16), (32, 32)),
                  full=((4, 4), (8, 8), (16, 16), (8, 4), (8, 16), (32, 32), (16, 32), (48, 48)))
    seeds = range(pick(budget, quick=2, standard=3, full=5))
    nets = tuple(Instance(f"(d, m) = ({d}, {m}) seed {s}", ReLUFFN.random(d, m, seed=s)) for d, m in shapes for s in seeds)
    edges = (
        Instance("antipodal pair (units not all accounted for)", ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]],
                                                                         [1, 2, -1]), grid="antipodal"),
        Instance("duplicate unit (merged, flagged)", ReLUFFN([[1, 2, 0], [2, 4, 0], [0, 1, 1]], [1, 3, -1]),
                 grid="merged"),
        Instance("cancelled pair (linear residual)", ReLUFFN([[1, 2, 0], [-1, -2, 0], [0, 1, 1]], [1, -1, -1]),
                 grid="span"),
        Instance("tent, m > d (every orientation)", ReLUFFN([[1, 0], [0, 1], [-1, -1]], [2, 2, 2]), grid="orientations"),
        Instance("structured: Hadamard rows", ReLUFFN([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]],
                                                       [1, 2, 3, 4]), grid="unit"),
    )
    tshapes = pick(budget, quick=((4, 4), (8, 8)), standard=((4, 4), (8, 8), (16, 16)),
                   full=((4, 4), (8, 8), (16, 16), (24, 24)))
    trans = tuple(Instance(f"(d, m) = ({d}, {m}) seed {s}", Transformer.random(d, m, seed=s))
                  for d, m in tshapes for s in seeds)
    zero = (Instance("Aᵀw = 0", Transformer([[1, 0], [0, 1]], [[1, 1], [-1, -1]], [1, 1])),)
    return [
        Claim("FFN: exact canonical form, Q <= (m+1)(d-2)+10m+32", nets, _ffn_check),
        Claim("FFN edge cases: function exact, units as stated", edges, _edge_check, counts=False),
        Claim("Transformer: exact W and FFN, Q_FFN + 2(d²+d) calls", trans, _transformer_check),
        Claim("Transformer: Aᵀw = 0 raises NotIdentifiable", zero, _not_identifiable_check, counts=False),
    ]
