"""The identities the learners rest on, one claim each, proved symbolically or by interval bounds.

Each claim runs the proof in :mod:`proofs` at the budget's sizes and holds only if the
proof reduced every check exactly.  The query-count formulas, the last item of the list,
are checked by every learner claim against counted oracles.
"""

from __future__ import annotations

from .budget import pick
from .cases import ProofCase
from .core import Claim, Instance, Verdict

__all__ = ["lemma_claims"]


def _proof_check(case: ProofCase) -> Verdict:
    import proofs  # verify is an application layer over exact and proofs; the prover is looked up when it runs

    options: dict = {}
    if case.dims:
        options["dims"] = case.dims
    if case.heads:
        options["heads"] = case.heads
    proof = getattr(proofs, case.prover)(**options)
    return Verdict(proof.verified, True, f"{case.prover} did not prove it ({proof.method})", proof.method)


def lemma_claims(*, budget: str = "standard") -> list[Claim[ProofCase]]:
    """One claim per identity: the logit primitive, oddness, the Transformer's odd part and its inversion,
    token copy, Lemma A.1, the normal form of a head with biases."""
    dims = pick(budget, quick=(1, 2), standard=(1, 2, 3), full=(1, 2, 3, 4))
    heads = pick(budget, quick=(1, 2), standard=(1, 2, 3), full=(1, 2, 3, 4))
    table = (
        ("Logit primitive: f([b+u; b]) = vᵀb + σ(uᵀWb)·vᵀu", "symbolic W, v, u, b",
         ProofCase("prove_logit_primitive", dims=dims)),
        ("Oddness of attention: h(−X) = −h(X)", "symbolic W, X", ProofCase("prove_attention_oddness", dims=dims)),
        ("Transformer odd part: T(X) − T(−X) = (Aᵀw)ᵀh(X)", "symbolic A, w, h", ProofCase("prove_transformer_odd_part")),
        ("Token copy: f([u,…,u,q]) = A − Σ c_h/(1 + k r_h), symbolic k", "H heads",
         ProofCase("prove_token_copy", heads=heads)),
        ("Lemma A.1: clipped σ⁻¹ is 5-Lipschitz on [σ(−½), 1 − σ(−½)]", "arb and rational bounds",
         ProofCase("prove_lemma_a1")),
        ("Biases: torch's head with biases is (W, c, v, b) for every N, and b_k cancels",
         "symbolic weights, biases and tokens", ProofCase("prove_bias_normal_form", dims=dims)),
        ("Transformer inversion: T(X) = g₁(x_N + K(h̄ − x_N)), K = (I + V)⁻¹V with the residual, I without",
         "symbolic A, V, μ, a, W, c, tokens", ProofCase("prove_transformer_inversion", dims=dims[:2])),
    )
    return [Claim(name, (Instance(what, case),), _proof_check, counts=False) for name, what, case in table]
