"""The Proposition 7.1 claims (multi-head non-identifiability) and the identities the learners rest on."""

from __future__ import annotations

import random
from fractions import Fraction

from ..multihead import MultiHead
from .budget import pick
from .core import Claim, Instance

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
        Instance(f"d={d} H={H} {kind}", MultiHead.random(d, H, seed=100 * d + H), grid=kind)
        for d in dims
        for H in (2, 3, 4)
        for kind in mh.KINDS
    )

    def construction_check(inst: Instance):
        b = mh.construct(inst.model, inst.grid, seed=7)
        proof = mh.prove_equivalent(inst.model, b)
        agree = sum(inst.model.exact(X) == b.exact(X) for X in _inputs(inst.model.d, 20, seed=11))
        ok = b != inst.model and proof.verified and proof.details["equivalent"] and agree == 20
        return ok, True, f"H {inst.model.H}→{b.H}, proved, {agree}/20 inputs equal exactly"

    fams = tuple(
        Instance(f"symbolic {kind} d={d} H={H}", (kind, d, H))
        for kind in ("split", "zero", "permute")
        for d, H in ((1, 2), (2, 2), (3, 3))
    )

    def family_check(inst: Instance):
        A, B = mh.symbolic_family(*inst.model)
        proof = mh.prove_equivalent(A, B)
        return proof.verified, True, proof.method

    n_bad = pick(budget, quick=30, standard=100, full=500)
    bad = tuple(
        Instance(f"random pair {i}", (MultiHead.random(d, H, seed=2 * i), MultiHead.random(d, H, seed=2 * i + 1)))
        for i, (d, H) in enumerate(((1 + i % 3, 2 + i % 3) for i in range(n_bad)))
    )

    def refute_check(inst: Instance):
        a, b = inst.model
        proof = mh.prove_equivalent(a, b)
        if not proof.verified or proof.details["equivalent"]:
            return False, True, "not refuted"
        X = [[Fraction(x) for x in row] for row in proof.details["witness"]]
        return (not a.exact(X) == b.exact(X)), True, f"witness of length {len(X)}"

    return [
        Claim("Prop 7.1: constructions differ, same map for all N (proved)", pairs, construction_check, counts=False),
        Claim("Prop 7.1: symbolic families proved without numbers", fams, family_check, counts=False),
        Claim("Prop 7.1: non-equivalent pairs refuted by an exact witness", bad, refute_check, counts=False),
    ]
