"""Symbolic proofs of the identities the learners rest on."""

from proofs.core import Proof
from proofs.logit import prove_logit_primitive

__all__ = ["Proof", "prove_logit_primitive"]
