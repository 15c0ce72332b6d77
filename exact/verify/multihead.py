"""The Proposition 7.1 claims (multi-head non-identifiability)."""

from __future__ import annotations

import random
from fractions import Fraction

from ..multihead import MultiHead
from .budget import pick
from .cases import ConstructionCase, FamilyCase, PairCase
from .core import Claim, Instance, Verdict, conditions

__all__ = ["multihead_claims"]


def _inputs(d: int, n: int, seed: int):
    rng = random.Random(seed)
    for k in range(n):
        yield [[Fraction(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(d)] for _ in range(1 + k % 6)]


def multihead_claims(*, budget: str = "standard") -> list[Claim]:
    """Constructions are proved equivalent for every N; non-equivalent pairs are refuted."""
    from proofs import multihead as mh

    dims = pick(budget, quick=(1, 2), standard=(1, 2, 3), full=(1, 2, 3, 4, 5))
    pairs = tuple(
        Instance(f"d={d} H={H} {kind}", ConstructionCase(MultiHead.random(d, H, seed=100 * d + H), kind))
        for d in dims
        for H in (2, 3, 4)
        for kind in mh.KINDS
    )

    def construction_check(case: ConstructionCase) -> Verdict:
        a = case.model
        b = mh.construct(a, case.kind, seed=7)
        proof = mh.prove_equivalent(a, b)
        agree = sum(a.exact(X) == b.exact(X) for X in _inputs(a.d, 20, seed=11))
        ok, why = conditions((b != a, "the construction returned the same parameters"),
                             (proof.verified, "the equivalence proof did not go through"),
                             (bool(proof.details["equivalent"]), "the proof finds the maps different"),
                             (agree == 20, f"the maps differ on {20 - agree} of 20 exact inputs"))
        return Verdict(ok, True, why, f"H {a.H}→{b.H}, proved, {agree}/20 inputs equal exactly")

    fams = tuple(
        Instance(f"symbolic {kind} d={d} H={H}", FamilyCase(kind, d, H))
        for kind in ("split", "zero", "permute")
        for d, H in ((1, 2), (2, 2), (3, 3))
    )

    def family_check(case: FamilyCase) -> Verdict:
        A, B = mh.symbolic_family(case.kind, case.d, case.H)
        proof = mh.prove_equivalent(A, B)
        return Verdict(proof.verified, True, "the symbolic equivalence did not reduce to 0", proof.method)

    n_bad = pick(budget, quick=30, standard=100, full=500)
    bad = tuple(
        Instance(f"random pair {i}", PairCase(MultiHead.random(d, H, seed=2 * i), MultiHead.random(d, H, seed=2 * i + 1)))
        for i, (d, H) in enumerate(((1 + i % 3, 2 + i % 3) for i in range(n_bad)))
    )

    def refute_check(case: PairCase) -> Verdict:
        a, b = case.a, case.b
        proof = mh.prove_equivalent(a, b)
        if not proof.verified or proof.details["equivalent"]:
            return Verdict(False, True, "not refuted: the prover found no difference")
        X = [[Fraction(x) for x in row] for row in proof.details["witness"]]
        return Verdict(not a.exact(X) == b.exact(X), True, "the witness gives both maps the same value",
                       f"witness of length {len(X)}")

    return [
        Claim("Prop 7.1: constructions differ, same map for all N (proved)", pairs, construction_check, counts=False),
        Claim("Prop 7.1: symbolic families proved without numbers", fams, family_check, counts=False),
        Claim("Prop 7.1: non-equivalent pairs refuted by an exact witness", bad, refute_check, counts=False),
    ]
