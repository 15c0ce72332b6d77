"""Symbolic proofs: the identities the learners rest on (SPEC §3.9) and the
non-identifiable multi-head parameterisations of Proposition 7.1 [BSHK26]."""

from proofs.core import Proof
from proofs.identities import (
    prove_attention_oddness,
    prove_lemma_a1,
    prove_token_copy,
    prove_transformer_odd_part,
)
from proofs.logit import prove_logit_primitive
from proofs.multihead import (
    KINDS,
    add_zero_head,
    construct,
    drop_zero_heads,
    mixed,
    permute_heads,
    prove_equivalent,
    split_v,
    symbolic_family,
)

__all__ = [
    "Proof",
    "prove_logit_primitive",
    "prove_attention_oddness",
    "prove_transformer_odd_part",
    "prove_token_copy",
    "prove_lemma_a1",
    "prove_equivalent",
    "KINDS",
    "construct",
    "split_v",
    "add_zero_head",
    "drop_zero_heads",
    "permute_heads",
    "mixed",
    "symbolic_family",
]
