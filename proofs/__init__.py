"""Symbolic proofs of the identities the learners rest on."""

from proofs.core import Proof
from proofs.logit import prove_logit_primitive
from proofs.identities import (
    prove_attention_oddness,
    prove_lemma_a1,
    prove_token_copy,
    prove_transformer_odd_part,
)

__all__ = [
    "Proof",
    "prove_logit_primitive",
    "prove_attention_oddness",
    "prove_transformer_odd_part",
    "prove_token_copy",
    "prove_lemma_a1",
]
