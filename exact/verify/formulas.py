"""The papers' query counts, as ``verify`` checks them: see :mod:`exact.formulas`."""

from ..formulas import (BIASED, BIASED_ZERO_V, CS, CS_MEASUREMENTS, FFN, FFN_BIASED, KKG_BIASED, KKG_FAST, KKG_FAST_BIASED,
                        KKG_LOWER, KKG_LOWER_BIASED, KKG_PAPER, LOW_RANK, LOW_RANK_BIASED, LOW_RANK_FOUND, NOISY, REFINE,
                        SINGLE_HEAD, TRANSFORMER, ZERO_V, Count, Formula)

__all__ = [
    "Count", "Formula", "SINGLE_HEAD", "LOW_RANK", "LOW_RANK_FOUND", "LOW_RANK_BIASED", "CS", "CS_MEASUREMENTS", "NOISY", "REFINE",
    "KKG_PAPER", "KKG_FAST", "KKG_LOWER", "KKG_BIASED", "KKG_FAST_BIASED", "KKG_LOWER_BIASED", "FFN", "FFN_BIASED", "TRANSFORMER", "ZERO_V", "BIASED", "BIASED_ZERO_V",
]
