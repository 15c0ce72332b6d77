"""The learner-aware adversary: it hurts far more than random noise, yet the certified bounds hold."""

from fractions import Fraction

import numpy as np
import pytest

from exact import NoisyOracle, SingleHead, learn_noisy, learn_noisy_frame
from exact.errors import InvalidArgument
from exact.learn.adversary import adversary
from exact.noise import Adversarial
from exact.sequences import Sequence

LEARNERS = {"paper": learn_noisy, "frame": learn_noisy_frame}


def _error(result, truth) -> float:
    return float(np.linalg.norm(np.array(result.model.to_numpy()[0]) - np.array(truth.to_numpy()[0])))


def test_on_the_tightness_instance_the_adversary_reaches_91_percent_of_the_paper_bound():
    """v = ½·1 and ‖W‖_F <= 1e-3: every entry's estimate can be pushed the same way, to
    L'(½)/L·(1.75/1.81) ≈ 0.908 of its certified bound."""
    d, tau = 4, Fraction(1, 10**6)
    truth = SingleHead((np.random.default_rng(0).standard_normal((d, d)) * 1e-4).tolist(), [Fraction(1, 2)] * d)
    strategy = adversary(truth, "paper", tau=tau, w_bound=2, token_norm=1)
    r = learn_noisy(NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
    W, Wt = np.array(r.model.to_numpy()[0]), np.array(truth.to_numpy()[0])
    assert 0.90 <= np.abs(W - Wt).max() / r.error_bound.W_max <= 0.92
    assert 0.90 <= _error(r, truth) / r.error_bound.W_frobenius <= 0.92


@pytest.mark.parametrize("learner", LEARNERS)
def test_the_adversary_beats_uniform_noise_and_every_bound_still_holds(learner):
    tau, ratios = Fraction(1, 10**6), []
    for seed in range(7):
        truth = SingleHead.gaussian(4, seed=seed)
        strategy = adversary(truth, learner, tau=tau, w_bound=2, token_norm=1)
        hurt = LEARNERS[learner](NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
        calm = LEARNERS[learner](NoisyOracle(truth, "uniform:1e-6", seed=seed), w_bound=2, token_norm=1)
        assert _error(hurt, truth) <= hurt.error_bound.W_frobenius
        ratios.append(_error(hurt, truth) / _error(calm, truth))
    assert float(np.median(ratios)) >= 2, ratios


def test_every_eta_is_a_vertex_of_the_box_and_unforeseen_queries_get_a_bias():
    truth = SingleHead.gaussian(3, seed=1)
    tau = Fraction(1, 1000)
    strategy = adversary(truth, "paper", tau=tau, w_bound=2, token_norm=1)
    o = NoisyOracle(truth, Adversarial(tau, strategy))
    learn_noisy(o, w_bound=2, token_norm=1)
    assert strategy(0, Sequence.sparse(3, [{0: 1}]), Fraction(0), tau) in (tau, -tau)
    assert strategy(0, Sequence.sparse(3, [{1: 5}]), Fraction(0), tau) == tau  # not the learner's first query
    assert strategy(10**6, Sequence.sparse(3, [{0: 1}]), Fraction(0), tau) == tau


def test_bad_adversary_options_are_refused():
    truth = SingleHead([[1]], [1])
    with pytest.raises(InvalidArgument, match="learner: expected 'paper' or 'frame'"):
        adversary(truth, "best", tau=1e-3, w_bound=2)
    with pytest.raises(InvalidArgument, match="tau: expected a noise level >= 0"):
        adversary(truth, "paper", tau=-1, w_bound=2)
    with pytest.raises(InvalidArgument, match="rounds: expected a positive integer"):
        adversary(truth, "paper", tau=1e-3, w_bound=2, rounds=0)


def test_the_frame_adversary_takes_the_learners_default_token_norm_at_the_smallest_w_bound():
    """At 𝒲 = 2^-40 the default R, 1/2 + 1/𝒲, is above the largest budget 2^40: the learner caps it, and the
    adversary simulates that same run (it refused its own default before)."""
    truth = SingleHead([[0, 0], [0, 0]], [1, "1/2"])
    attack = adversary(truth, learner="frame", tau=1e-6, w_bound=Fraction(1, 2**40))
    r = learn_noisy_frame(NoisyOracle(truth, Adversarial(1e-6, attack)), w_bound=Fraction(1, 2**40))
    assert r.details["token_norm"] == str(2**40)
