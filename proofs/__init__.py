"""Symbolic proofs: the identities the learners rest on (SPEC §3.9) and the
non-identifiable multi-head parameterisations of Proposition 7.1 [BSHK26].

One module per result: :mod:`~proofs.logit`, :mod:`~proofs.oddness`,
:mod:`~proofs.transformer`, :mod:`~proofs.token_copy`, :mod:`~proofs.pair_line`, :mod:`~proofs.lemma_a1`,
:mod:`~proofs.biases`,
:mod:`~proofs.constructions` and :mod:`~proofs.multihead`.  Every exponential
e^{s} becomes a positive symbol through :mod:`~proofs.expsymbols` only.  This
package never imports :mod:`exact`; numeric multi-head models are duck-typed.
"""

from proofs.biases import prove_bias_normal_form
from proofs.core import Proof
from proofs.lemma_a1 import prove_lemma_a1
from proofs.logit import prove_logit_primitive
from proofs.multihead import (
    KINDS,
    add_zero_head,
    construct,
    drop_zero_heads,
    mixed,
    permute_heads,
    prove_equivalent,
    prove_families,
    split_v,
    symbolic_family,
)
from proofs.oddness import prove_attention_oddness
from proofs.token_copy import prove_token_copy
from proofs.pair_line import prove_pair_line
from proofs.transformer import prove_transformer_odd_part
from proofs.inversion import prove_transformer_inversion

__all__ = [
    "Proof",
    "prove_logit_primitive",
    "prove_attention_oddness",
    "prove_transformer_odd_part",
    "prove_transformer_inversion",
    "prove_token_copy",
    "prove_pair_line",
    "prove_lemma_a1",
    "prove_bias_normal_form",
    "prove_equivalent",
    "prove_families",
    "KINDS",
    "construct",
    "split_v",
    "add_zero_head",
    "drop_zero_heads",
    "permute_heads",
    "mixed",
    "symbolic_family",
]
