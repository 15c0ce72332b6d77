"""Learners: one module per algorithm family."""

from .result import LearnResult
from .single_head import ProbePlan, learn_single_head, single_head_query_count

__all__ = ["LearnResult", "ProbePlan", "learn_single_head", "single_head_query_count"]
