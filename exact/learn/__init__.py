"""Learners: one module per algorithm family, each declaring its :class:`~exact.registry.LearnerSpec`.

The registry (:mod:`exact.registry`) finds the built-in learners by module name and other
packages' learners through the ``exact_attention.learners`` entry-point group.  A learner
module needs only a ``learn_*`` function built on :class:`~exact.learn.driver.Run` and its
``SPEC``; see ``docs/adding-a-learner.md``.
"""

from ._common import read_v
from .driver import DEFAULT_CHECKS, Run, check_sequences
from .low_rank import learn_low_rank, low_rank_query_count
from .low_rank_cs import cs_measurements, learn_low_rank_cs
from .noisy import learn_noisy, noisy_query_count
from .noisy_frame import learn_noisy_frame
from .noisy_refine import learn_noisy_refine
from .threshold import learn_threshold
from .ffn import learn_ffn
from .ffn_affine import learn_ffn_biased
from .transformer import learn_transformer
from .transformer_biased import learn_transformer_biased
from .multi_head import learn_multi_head, paper_query_count, fast_query_count
from .adversary import adversary
from .result import ErrorBound, LearnResult
from .single_head import ProbePlan, learn_single_head, single_head_query_count
from .single_head_biased import biased_query_count, learn_single_head_biased

__all__ = [
    "LearnResult",
    "ErrorBound",
    "learn_noisy",
    "learn_noisy_frame",
    "learn_noisy_refine",
    "learn_threshold",
    "learn_ffn",
    "learn_ffn_biased",
    "learn_transformer",
    "learn_transformer_biased",
    "learn_multi_head",
    "paper_query_count",
    "fast_query_count",
    "adversary",
    "noisy_query_count",
    "Run",
    "DEFAULT_CHECKS",
    "check_sequences",
    "read_v",
    "ProbePlan",
    "learn_single_head",
    "single_head_query_count",
    "learn_single_head_biased",
    "biased_query_count",
    "learn_low_rank",
    "low_rank_query_count",
    "learn_low_rank_cs",
    "cs_measurements",
]
