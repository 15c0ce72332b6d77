"""The identities the learners rest on, one claim each, proved in sympy and checked by Coq.

Each claim runs the proof in :mod:`proofs` at the budget's sizes and, where the statement is
formalised, looks up its Coq theorems in the check of ``proofs/coq/``
(:func:`proofs.coq_check.coq_status`: every file compiled by ``coqc``, no admits, only the
standard real-number axioms).  A claim holds when the sympy proof reduced every check exactly
and Coq did not fail; without ``coqc`` its note says "Coq: skipped, coqc not found".  The
query-count formulas, the last item of the list, are checked by every learner claim against
counted oracles.
"""

from __future__ import annotations

from .budget import pick
from .cases import ProofCase
from .core import Claim, Instance, Verdict

__all__ = ["lemma_claims", "coq_verdict"]


def coq_verdict(theorems: tuple[str, ...]) -> tuple[str, bool, dict]:
    """``(status, fails, metrics)`` of the Coq theorems ``FILE.NAME``: "checked (…)", "skipped, …",
    "FAILED: …" or "not formalised"; ``fails`` is true only when Coq rejected something;
    ``metrics`` has the Coq version and the axioms the theorems rest on."""
    from proofs.coq_check import coq_status  # the prover is looked up when it runs

    if not theorems:
        return "not formalised", False, {}
    check = coq_status()
    if check.status == "skipped":
        return f"skipped, {check.reason}", False, {}
    seen = {"coq_version": check.version}
    if check.status != "checked":
        return f"FAILED: {check.reason}", True, seen
    found = [check.theorem(t) for t in theorems]
    missing = [t for t, f in zip(theorems, found) if f is None]
    if missing:
        return f"FAILED: {', '.join(missing)} not audited", True, seen
    axioms = sorted({a for f in found if f is not None for a in f.axioms})
    return f"checked ({', '.join(theorems)})", False, {**seen, "coq_axioms": ", ".join(axioms)}


def _coqc_missing() -> str | None:
    """Why a claim proved in Coq only cannot be checked here, or ``None``."""
    from proofs.coq_check import coqc_path

    return "it is proved in Coq only, and coqc is not found (install Coq 8.16: apt-get install coq)" \
        if coqc_path() is None else None


def _proof_check(case: ProofCase) -> Verdict:
    import proofs  # verify is an application layer over exact and proofs; the prover is looked up when it runs

    sympy, method, held = "none (Coq only)", "", True
    if case.prover:
        options: dict = {}
        if case.dims:
            options["dims"] = case.dims
        if case.heads:
            options["heads"] = case.heads
        proof = getattr(proofs, case.prover)(**options)
        held, method = proof.verified, proof.method
        sympy = "holds" if held else "does not hold"
    coq, coq_fails, coq_metrics = coq_verdict(case.coq)
    note = f"sympy: {sympy}; Coq: {coq}"
    why = "; ".join(w for w, bad in ((f"{case.prover} did not prove it ({method})", not held),
                                     (f"Coq: {coq}", coq_fails)) if bad)
    metrics = {"sympy": sympy, "coq": coq.split(" (")[0].split(":")[0], **coq_metrics}
    return Verdict(held and not coq_fails, True, why, note, metrics)


def lemma_claims(*, budget: str = "standard") -> list[Claim[ProofCase]]:
    """One claim per identity: the logit primitive, oddness, the Transformer's odd part and its inversion,
    token copy, Lemma A.1, the normal form of a head with biases, Theorem 4.1's decoding and
    Proposition 7.1's families."""
    dims = pick(budget, quick=(1, 2), standard=(1, 2, 3), full=(1, 2, 3, 4))
    heads = pick(budget, quick=(1, 2), standard=(1, 2, 3), full=(1, 2, 3, 4))
    table = (
        ("Logit primitive: f([b+u; b]) = vᵀb + σ(uᵀWb)·vᵀu", "symbolic W, v, u, b",
         ProofCase("prove_logit_primitive", dims=dims, coq=("logit.logit_primitive", "logit.logit_inverse"))),
        ("Oddness of attention: h(−X) = −h(X)", "symbolic W, X",
         ProofCase("prove_attention_oddness", dims=dims, coq=("oddness.attention_odd",))),
        ("Transformer odd part: T(X) − T(−X) = (Aᵀw)ᵀh(X)", "symbolic A, w, h",
         ProofCase("prove_transformer_odd_part",
                   coq=("transformer.transformer_odd_part", "transformer.transformer_one_token"))),
        ("Token copy: f([u,…,u,q]) = A − Σ c_h/(1 + k r_h), symbolic k", "H heads",
         ProofCase("prove_token_copy", heads=heads, coq=("token_copy.token_copy",))),
        ("Lemma A.1: clipped σ⁻¹ is 5-Lipschitz on [σ(−½), 1 − σ(−½)]", "arb and rational bounds",
         ProofCase("prove_lemma_a1", coq=("lemma_a1.lemma_a1", "lemma_a1.lemma_a1_constant",
                                          "lemma_a1.lemma_a1_not_4"))),
        ("Biases: torch's head with biases is (W, c, v, b) for every N, and b_k cancels",
         "symbolic weights, biases and tokens",
         ProofCase("prove_bias_normal_form", dims=dims, coq=("biases.bias_normal_form",))),
        ("Transformer inversion: T(X) = g₁(x_N + K(h̄ − x_N)), K = (I + V)⁻¹V with the residual, I without",
         "symbolic A, V, μ, a, W, c, tokens", ProofCase("prove_transformer_inversion", dims=dims[:2])),
        ("Theorem 4.1 decoding: (W, v) comes back exactly from the d² + d answers, for every W and v ≠ 0",
         "every d (Coq)", ProofCase("", coq=("decoding.theorem_4_1_spec_plan", "decoding.theorem_4_1_learner_plan",
                                     "decoding.queries_count"))),
        ("Proposition 7.1: f is the map of its canonical form; split, zero and permuted heads, and any "
         "composition", "symbolic families; every d, N, H (Coq)",
         ProofCase("prove_families", dims=dims[:2], heads=(2,),
                   coq=("multihead.F_canon", "multihead.same_canon_same_map", "multihead.combination_family"))),
        ("Pair line: f([u_a,…,u_a,u_b,q]) = A − Σ C_h/(1 + k R_h), the residue between ca_h and ca_h − cb_h",
         "H heads, symbolic k", ProofCase("prove_pair_line", heads=pick(budget, quick=(1,), standard=(1, 2),
                                                                         full=(1, 2, 3)))),
    )
    return [Claim(name, (Instance(what, case),), _proof_check, counts=False,
                  needs=None if case.prover else _coqc_missing) for name, what, case in table]
