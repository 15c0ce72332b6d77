"""App. B: threshold bits, bisection inside the known interval, and the noisy learner on top."""

from fractions import Fraction

import numpy as np
import pytest

from exact import NoisyOracle, SingleHead
from exact.errors import InvalidArgument, OracleInconsistent, QueryBudgetExceeded
from exact.learn import learn_threshold
from exact.numbers import ball_interval
from exact.sequences import Sequence
from exact.threshold import BisectingOracle, ThresholdOracle


def test_bits_are_decided_exactly_and_counted():
    t = ThresholdOracle(SingleHead([[0, 1], [0, 0]], ["1/3", 1]))
    assert t.query_bit([[1, 0]], "1/3") is True  # equality: f = 1/3 exactly
    assert t.query_bit([[1, 0]], Fraction(1, 3) + Fraction(1, 10**40)) is False
    assert t.query_bit([[1, 0], [0, 1]], Fraction(1, 2)) is True and t.count == 3
    limited = ThresholdOracle(SingleHead([[0]], [1]), budget=1)
    limited.query_bit([[1]], 0)
    with pytest.raises(QueryBudgetExceeded):
        limited.query_bit([[1]], 0)
    with pytest.raises(InvalidArgument, match="needs an exact oracle"):
        ThresholdOracle(NoisyOracle(SingleHead([[0]], [1]), "uniform:1e-3"))


@pytest.mark.parametrize("eps", ["1e-3", "1e-6"])
def test_every_bisected_value_is_within_epsilon_and_cheaper_than_full_range(eps):
    truth = SingleHead.gaussian(3, seed=4)
    o = BisectingOracle(ThresholdOracle(truth), epsilon=eps, v_bound=10, w_bound=2)
    rng = np.random.default_rng(0)
    axes = [Sequence.sparse(3, [{i: 1}]) for i in range(3)]
    pairs = [Sequence.from_rows((rng.standard_normal((2, 3)) / 4).tolist()) for _ in range(10)]
    for X in axes + pairs:
        y = o.query(X)
        lo, hi = ball_interval(truth.exact(X).ball(200))
        assert lo - Fraction(eps) <= y <= hi + Fraction(eps)
    assert o.misses == 0 and o.bits < o.full_range_bits and o.count == 13


def test_a_false_w_bound_is_a_counted_miss_and_a_false_v_bound_is_refused():
    truth = SingleHead([[40, 0], [0, -40]], [1, 2])  # ‖W‖_F ≈ 57 > 𝒲 = 1
    o = BisectingOracle(ThresholdOracle(truth), epsilon="1e-6", v_bound=5, w_bound=1)
    o.query_batch([[[1, 0]], [[0, 1]]])
    o.query(Sequence.from_rows([[1, 0], [1, 0]]))  # logit 0: inside any prior
    assert o.misses == 0
    y = o.query(Sequence.from_rows([[2, 0], [1, 0]]))  # logit W_00 = 40: f ≈ 2, far outside the 𝒲 = 1 prior
    assert o.misses == 1 and abs(y - 2) < Fraction(1, 10**5)  # re-bisected over the full range: still right
    small = BisectingOracle(ThresholdOracle(truth), epsilon="1e-3", v_bound="1/10")
    with pytest.raises(OracleInconsistent, match="the bound v_bound = 1/10 on ‖v‖ is false"):
        small.query([[0, 1]])


@pytest.mark.parametrize("learner", ["paper", "frame"])
def test_the_threshold_learner_holds_its_bound_and_saves_bits(learner):
    for seed in range(3):
        truth = SingleHead.gaussian(4, seed=seed)
        r = learn_threshold(truth, epsilon="1e-5", v_bound=10, w_bound=2, token_norm=1, learner=learner)
        W, v = (np.array(x, dtype=float) for x in r.model.to_numpy())
        Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
        assert np.linalg.norm(W - Wt) <= r.error_bound.W_frobenius and np.linalg.norm(v - vt) <= r.error_bound.v_norm
        d = r.details
        assert r.queries == d["value_queries"] == 20 and d["prior_misses"] == 0
        assert d["bit_queries"] < d["full_range_bits"]
        if learner == "paper":
            assert d["bit_queries"] <= 0.8 * d["full_range_bits"]


def test_bad_threshold_options_are_refused():
    with pytest.raises(InvalidArgument, match="epsilon: expected a positive accuracy"):
        learn_threshold(SingleHead([[1]], [1]), epsilon=0, v_bound=1, w_bound=1)
    with pytest.raises(InvalidArgument, match="learner: expected 'frame', 'paper' or 'refine'"):
        learn_threshold(SingleHead([[1]], [1]), epsilon="1e-3", v_bound=1, w_bound=1, learner="best")
    with pytest.raises(InvalidArgument, match="v_bound: expected a positive bound"):
        learn_threshold(SingleHead([[1]], [1]), epsilon="1e-3", v_bound=-1, w_bound=1)


def test_the_prior_covers_float_rounding_under_cancellation():
    """v̂ stored in float64 and a cancelling query: the answer still lies within ε."""
    truth = SingleHead([[0, 0], [0, 0]], ["1000000.3", "1000000.7"])
    o = BisectingOracle(ThresholdOracle(truth), epsilon="1e-12", v_bound=10**7)
    o.query_batch([Sequence.sparse(2, [{0: 1000}]), Sequence.sparse(2, [{1: 1000}])])
    y = o.query([[1, -1]])
    assert abs(y - Fraction(-2, 5)) <= Fraction(1, 10**12)
