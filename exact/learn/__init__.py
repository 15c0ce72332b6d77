"""Learners: one module per algorithm family."""

from .low_rank import learn_low_rank, low_rank_query_count
from .low_rank_cs import cs_measurements, learn_low_rank_cs
from .result import LearnResult
from .single_head import ProbePlan, learn_single_head, single_head_query_count

__all__ = [
    "LearnResult",
    "ProbePlan",
    "learn_single_head",
    "single_head_query_count",
    "learn_low_rank",
    "low_rank_query_count",
    "learn_low_rank_cs",
    "cs_measurements",
]
