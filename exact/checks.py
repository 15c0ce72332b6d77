"""Verification queries: random sequences longer than any probe, rebuilt from a seed.

A learner's own probes identify a model only within the class it assumes.  After
learning, the driver asks a few random sequences of length 3 and 4 and decides them
exactly; a certificate records the seed and rebuilds the very same sequences from the
certified model, so verification queries cannot be chosen (or forged) after the fact.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .protocols import Model
from .sequences import Sequence

__all__ = ["check_sequences"]


#: What verification queries rest on: their seed was drawn independently of the black box.
#: A certificate with verification queries always states one of these (a checker cannot
#: tell a fresh seed from one picked after trying many), the learn result only the second.
FRESH_SEED = "independent of the check seed (drawn afresh by the learner)"
CHOSEN_SEED = "independent of the check seed (which the caller chose)"
SEED_ASSUMPTIONS = (FRESH_SEED, CHOSEN_SEED)


def check_sequences(model: Model, n: int, seed: int, *, magnitude: int | None = None) -> list[Sequence]:
    """``n`` random verification sequences of lengths 3, 4, 3, 4, ... (or the model's
    ``query_length``, for a model queried on sequences of one length only).

    Entries are dyadic (exact in float64, so a callable sees exactly these tokens),
    scaled by a power of two so that the scores ``x_iᵀ W x_N`` of the learned model are
    typically of order 1 and answers do not saturate the softmax.  The last token is
    never 0, and the tokens of a sequence are pairwise distinct (a sequence of equal tokens
    has the same value under every attention model).  The sequences are a function of the
    model and the seed, so a certificate can rebuild them and compare.  ``magnitude``, if given,
    is the ``e`` with ``|W_ij| < 2^e`` to scale by (a float result's, from its float64 view, with no
    certificate to rebuild them), in place of the model's exact :meth:`magnitude_bits`.
    """
    rng = np.random.default_rng(seed)
    d = model.d
    # |W_ij| < 2^e with e from bit lengths (integers only: cheap at any d).
    if magnitude is not None:
        e = magnitude
    elif hasattr(model, "magnitude_bits"):
        e = model.magnitude_bits()
    else:
        e = max((x.numerator.bit_length() - x.denominator.bit_length() + 1 for x in model.parameters()), default=0)
    # scale 2^-k with d·4^-k·2^e <= 1: a score is a sum of d² terms of random sign, so it is
    # typically of order 1 (the softmax weights are informative), and at most d in size
    k = max(0, -((-((d - 1).bit_length() + max(e, 0))) // 2))
    den = 256 << k
    fixed = getattr(model, "query_length", None)  # a model queried on sequences of one length (a ReLU net: 1)
    out = []
    for i in range(n):
        length = fixed if fixed is not None else 3 + i % 2
        while True:
            rows = rng.integers(-256, 257, size=(length, d))
            if rows[-1].any() and len({tuple(r) for r in rows.tolist()}) == length:
                break
        out.append(
            Sequence._exact(d, tuple(tuple((j, Fraction(int(x), den)) for j, x in enumerate(r) if x) for r in rows))
        )
    return out
