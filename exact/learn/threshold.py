"""Learning a single head from threshold bits (App. B of [BSHK26]): bisection, then a noisy learner.

The black box answers only ``[f(X) >= θ]``.  Every value query of a noisy learner is
answered by bisecting ``θ`` inside the interval already known for ``f(X)``
(:class:`~exact.threshold.BisectingOracle`) down to ``±ε``; the noisy learner then runs
on those answers, with ``ε`` as its noise level, and certifies its bound as usual.
The result reports the bits spent (``details["bit_queries"]``), the value queries they
stand for (``queries``, ``d² + d``), what full-range bisection would have spent, and
any miss of the prior (a false ``v_bound`` or ``w_bound``; never silent).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from .. import registry
from ..errors import InvalidArgument
from ..protocols import Model, Oracle
from ..threshold import BisectingOracle, ThresholdOracle
from .noisy import learn_noisy, noisy_query_count
from .noisy_frame import learn_noisy_frame
from .noisy_refine import learn_noisy_refine
from .details import Checks, Details
from .result import LearnResult

__all__ = ["learn_threshold", "SPEC"]

_LEARNERS = {"frame": learn_noisy_frame, "paper": learn_noisy, "refine": learn_noisy_refine}


def learn_threshold(
    oracle: ThresholdOracle | Oracle | Model, *, epsilon, v_bound, w_bound, token_norm=None, learner: str = "paper"
) -> LearnResult:
    """Learn ``W`` and ``v`` from threshold bits: bisection to ``±ε``, then a noisy learner.

    Parameters
    ----------
    oracle : ThresholdOracle, exact oracle or model
        Anything but a :class:`~exact.threshold.ThresholdOracle` is wrapped in one.
    epsilon : number
        The accuracy each bisected value reaches.
    v_bound : number
        ``V``, an assumed bound on ``‖v‖₂`` (the range of the first bisections).
    w_bound : number
        ``𝒲``, an assumed bound on ``‖W‖_F``.
    token_norm : number, optional
        ``R``, passed to the noisy learner.
    learner : {"paper", "frame", "refine"}
        The noisy learner run on the bisected values.  The paper's (default) has the
        narrower logit range, so its prior intervals are narrower and cost fewer bits;
        the frame learner spends more bits for a smaller final error, and the refining
        one twice the value queries for a smaller one still.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    >>> r = learn_threshold(truth, epsilon="1e-6", v_bound=2, w_bound=2)
    >>> r.queries, r.details["bit_queries"] < r.details["full_range_bits"], r.details["prior_misses"]
    (6, True, 0)
    """
    if learner not in _LEARNERS:
        raise InvalidArgument(f"learner: expected 'frame', 'paper' or 'refine', got {learner!r}")
    bits = oracle if isinstance(oracle, ThresholdOracle) else ThresholdOracle(oracle)
    start = bits.count
    values = BisectingOracle(bits, epsilon=epsilon, v_bound=v_bound, w_bound=w_bound)
    result = _LEARNERS[learner](values, w_bound=w_bound, token_norm=token_norm)
    return dataclasses.replace(
        result,
        learner=SPEC.name,
        details=ThresholdDetails(
            value_learner=dataclasses.replace(result.details, checks=Checks()), learner=learner,
            bit_queries=bits.count - start, value_queries=result.queries, full_range_bits=values.full_range_bits,
            prior_misses=values.misses, epsilon=str(values.epsilon),
        ),
    )


@dataclass(frozen=True)
class ThresholdDetails(Details):
    """The bisection: the bits spent, the value queries they stood for, what a full-range
    bisection would have cost, the prior intervals missed, each value's accuracy; and the
    noisy learner's own details (``value_learner``, whose fields also read through this one)."""

    value_learner: Details = field(default_factory=Details)
    learner: str = "paper"
    bit_queries: int = 0
    value_queries: int = 0
    full_range_bits: int = 0
    prior_misses: int = 0
    epsilon: str = ""

    def __getitem__(self, key: str):
        try:
            return super().__getitem__(key)
        except KeyError:
            return self.value_learner[key]

    def rows(self, result) -> list:
        return [("bits", f"{self.bit_queries} threshold bits for {result.queries} value queries (full-range "
                         f"bisection: {self.full_range_bits}; prior misses: {self.prior_misses}; each value to "
                         f"±{self.epsilon})")]

    def compare(self, result, truth):
        return self.value_learner.compare(result, truth)


SPEC = (
    registry.LearnerSpec(
        name="threshold",
        summary="App. B [BSHK26]: threshold bits bisected to ±ε inside the known interval, then a noisy learner",
        model_kind="single-head",
        modes=("float",),
        learn=learn_threshold,
        query_count=lambda d, **conditions: noisy_query_count(d),
        count_formula="d² + d",
        exact=False,
        options=(
            registry.Option("epsilon", "number", "threshold: the accuracy of each bisected value", required=True),
            registry.Option("v_bound", "number", "threshold: V, an assumed bound on ‖v‖₂", required=True),
            registry.Option("w_bound", "number", "𝒲, an assumed bound on ‖W‖_F", required=True),
            registry.Option("token_norm", "number", "R, the largest token norm (default max(1, 1/2 + 1/𝒲))"),
            registry.Option("learner", "str", "threshold: the noisy learner run on the bisected values (default paper)",
                            choices=("paper", "frame", "refine")),
        ),
        command="single-head",
        method="threshold",
        switch="threshold",
        takes_noise=False,
    )
)
