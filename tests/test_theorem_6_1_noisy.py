"""Theorem 6.1: the paper's noisy learner, its d² + d queries and its certified error bound."""

import math
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, NoisyOracle, SingleHead, learn_noisy, learn_noisy_frame
from exact.learn import noisy_query_count
from exact.errors import InvalidArgument, InvalidNumber, OracleInconsistent
from exact.noise import Adversarial
from exact.learn.noisy import LIPSCHITZ_HALF, PaperPlan
from exact.learn.noisy_frame import FramePlan

NOISES = ["uniform:1e-4", "uniform:1e-8", "round:6", "float32", "adversarial:1e-6"]
SIGMA_HALF = 1 / (1 + math.exp(-0.5))


def _errors(result, truth):
    W, v = (np.array(x, dtype=float) for x in result.model.to_numpy())
    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    return np.linalg.norm(W - Wt), np.abs(W - Wt).max(), np.linalg.norm(v - vt), np.abs(v - vt).max()


def _within(result, truth) -> bool:
    fro, mx, vn, vm = _errors(result, truth)
    b = result.error_bound
    return fro <= b.W_frobenius and mx <= b.W_max and vn <= b.v_norm and vm <= b.v_max


LEARNERS = {"paper": learn_noisy, "frame": learn_noisy_frame}


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("d", [2, 4])
def test_the_measured_error_never_exceeds_the_certified_bound(noise, d, learner):
    for seed in range(3):
        truth = SingleHead.gaussian(d, seed=seed)
        r = LEARNERS[learner](NoisyOracle(truth, noise, seed=seed), w_bound=2, token_norm=1)
        assert r.queries == noisy_query_count(d) == d * d + d and not r.exact
        assert r.certificate is None and r.error_bound is not None
        assert _within(r, truth), (noise, seed, _errors(r, truth), r.error_bound)


@pytest.mark.parametrize("learner", LEARNERS)
def test_probes_respect_the_token_budget_and_count_exactly(learner):
    truth = SingleHead.gaussian(3, seed=0)
    for R in (Fraction(1), Fraction(1, 3), Fraction(5, 2)):
        oracle = NoisyOracle(truth, "uniform:1e-6", seed=1)
        r = LEARNERS[learner](oracle, w_bound=2, token_norm=R)
        assert oracle.count == r.queries == 12
        norms = [math.sqrt(sum(float(x) ** 2 for x in row)) for q in oracle.transcript for row in q.X.dense()]
        assert max(norms) <= float(R) * (1 + 1e-12)
        assert r.max_length == 2 and _within(r, truth)


@pytest.mark.parametrize("tau", [1e-3, 1e-6])
def test_the_paper_closed_form_holds_whenever_tau_is_below_the_margin(tau):
    """With R = 1 and 𝒲 = 2: |ΔW_ij| <= L·τ(3𝒲² + 2σ(½)𝒲)/(μ − τ) and ‖ΔW‖_F <= K·𝒲²·d·τ/μ."""
    W_bound, d = 2.0, 4
    for seed in range(5):
        truth = SingleHead.gaussian(d, seed=seed)
        mu = float(min(abs(x) for x in truth.v))
        oracle = NoisyOracle(truth, f"uniform:{tau}", seed=seed)
        r = learn_noisy(oracle, w_bound=2, token_norm=1)
        if tau >= mu:
            continue
        t = tau * (1 + 1e-9)  # the answers' float64 rounding, well inside this slack
        entry = LIPSCHITZ_HALF * t * (3 * W_bound**2 + 2 * SIGMA_HALF * W_bound) / (mu - t)
        K = LIPSCHITZ_HALF * (3 + 2 * SIGMA_HALF / W_bound) / (1 - t / mu)
        assert r.error_bound.W_max <= entry
        assert r.error_bound.W_frobenius <= K * W_bound**2 * d * t / mu
        fro, mx, _, _ = _errors(r, truth)
        assert mx <= entry and fro <= K * W_bound**2 * d * t / mu


def test_v_is_read_within_sqrt_d_tau_over_R():
    d, tau = 5, 1e-5
    truth = SingleHead.gaussian(d, seed=3)
    for R in (1, 4):
        r = learn_noisy(NoisyOracle(truth, f"uniform:{tau}", seed=2), w_bound=2, token_norm=R)
        _, _, vn, _ = _errors(r, truth)
        assert vn <= r.error_bound.v_norm <= math.sqrt(d) * tau / R * (1 + 1e-9)


def test_a_noise_level_above_the_margin_gives_an_infinite_bound_never_a_wrong_one():
    truth = SingleHead([[1, 0], [0, 1]], [1, "1/1000"])  # μ = 1e-3 < τ: v̂_1 = −0.009 may come from v_1 = 0
    r = learn_noisy(NoisyOracle(truth, Adversarial(Fraction(1, 100), lambda i, X, c, t: -t)), w_bound=2)
    # nothing certified beyond the trivial ‖Ŵ − W‖_F <= 2𝒲 (both in the ball)
    assert r.error_bound.W_frobenius >= 4 and r.error_bound.W_max >= 4
    assert math.isfinite(r.error_bound.v_norm)
    assert all(math.isfinite(float(x)) for row in r.model.W for x in row)
    assert "‖ΔW‖_F <= inf" in r.claim


def test_a_huge_noise_with_a_certified_margin_still_gives_a_valid_bound():
    truth = SingleHead([[1, 0], [0, 1]], [1, "1/1000"])
    r = learn_noisy(NoisyOracle(truth, "adversarial:1e-2"), w_bound=2)  # v̂_1 = 0.011 > τ: v_1 ≠ 0
    assert r.error_bound.W_max <= 4 + 1e-12 and _within(r, truth)  # at most 2λ/(AB) = 2𝒲


def test_answers_that_prove_a_larger_entry_than_w_bound_are_refused():
    truth = SingleHead([[9, 0], [0, 1]], [1, 1])  # |W_00| = 9 > 𝒲 = 2
    with pytest.raises(OracleInconsistent, match=r"proves \|W\[0\]\[0\]\| > w_bound = 2 .*raise --w-bound"):
        learn_noisy(NoisyOracle(truth, "uniform:1e-9", seed=0), w_bound=2)


def test_an_exact_oracle_gives_a_bound_near_zero():
    truth = SingleHead([[1, "-1/2"], ["1/3", 0]], [2, "-1"])
    r = learn_noisy(ExactOracle(truth), w_bound=2)
    assert r.error_bound.W_max < 1e-14 and _within(r, truth)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"w_bound": 0}, r"w_bound: expected a positive number, got 0"),
        ({"w_bound": "-1"}, r"w_bound: expected a positive number"),
        ({"w_bound": 2, "token_norm": 0}, r"token_norm: expected a positive number, got 0"),
        ({"w_bound": "nan"}, r"w_bound: expected an integer, 'p/q' or decimal string"),
    ],
)
def test_bad_options_are_refused_before_any_query(kwargs, message):
    oracle = NoisyOracle(SingleHead([[1]], [1]), "uniform:1e-6")
    with pytest.raises((InvalidArgument, InvalidNumber), match=message):
        learn_noisy(oracle, **kwargs)
    assert oracle.count == 0


def test_the_plan_is_the_paper_s_and_shrinks_only_below_its_norm():
    plan = PaperPlan.make(3, w_bound=4)
    assert (plan.A, plan.B, plan.token_norm, plan.lam) == (Fraction(1, 2), Fraction(1, 4), 1, Fraction(1, 2))
    small = PaperPlan.make(3, w_bound=4, token_norm=Fraction(3, 8))
    assert (small.A, small.B, small.lam) == (Fraction(1, 4), Fraction(1, 8), Fraction(1, 8))
    assert PaperPlan.make(3, w_bound=4, token_norm=10).A == Fraction(1, 2)  # never grows
    assert PaperPlan.make(3, w_bound=Fraction(1, 2)).token_norm == Fraction(5, 2)  # max(1, a + b)


def test_the_frame_learner_beats_the_paper_at_equal_queries_and_budget():
    ratios = []
    for seed in range(5):
        truth = SingleHead.gaussian(8, seed=seed)
        errs = [_errors(fn(NoisyOracle(truth, "uniform:1e-6", seed=seed), w_bound=2, token_norm=1), truth)[0]
                for fn in (learn_noisy, learn_noisy_frame)]
        ratios.append(errs[0] / errs[1])
    assert min(ratios) >= 3 and float(np.median(ratios)) >= 10


def test_the_frame_is_at_45_degrees_and_within_budget():
    v = [Fraction(3), Fraction(-4), Fraction(1, 10)]
    plan = FramePlan.make(v, [Fraction(0)] * 3, w_bound=2, token_norm=1, tau=1e-6)
    vn = math.sqrt(sum(float(x) ** 2 for x in v))
    for row in plan.rows():
        u = np.array([float(row.get(i, 0)) for i in range(3)])
        cos = abs(u @ np.array([float(x) for x in v])) / (np.linalg.norm(u) * vn)
        assert cos >= 1 / math.sqrt(2) - 1e-9  # every probe direction within 45° of v
    assert plan.max_token_norm() <= 1


@pytest.mark.slow
@pytest.mark.parametrize("d", [4, 8, 16, 32])
def test_bound_validity_sweep(d):
    """The issue's conventions: Gaussian heads, ‖W‖_F = 𝒲 = 2, R = 1, 20 instances per d, four τ."""
    for tau in ("1e-2", "1e-4", "1e-6", "1e-8"):
        for noise in ("uniform", "adversarial"):
            for seed in range(20):
                truth = SingleHead.gaussian(d, seed=seed)
                for fn in (learn_noisy, learn_noisy_frame):
                    r = fn(NoisyOracle(truth, f"{noise}:{tau}", seed=seed), w_bound=2, token_norm=1)
                    assert _within(r, truth)


def test_a_float64_black_box_receives_exactly_the_probes_and_the_frame_learner_is_near_exact():
    """Probe entries are float64 numbers, so a float64 model sees the very probes the bound is
    about; at τ = 0 with |W_ij| <= 50 the frame learner's error is at rounding level."""
    from exact import FloatOracle

    for seed in range(3):
        rng = np.random.default_rng(seed)
        W = rng.uniform(-50, 50, (6, 6))
        truth = SingleHead(W.tolist(), rng.standard_normal(6).tolist())
        for fn in (learn_noisy, learn_noisy_frame):
            r = fn(FloatOracle(truth), w_bound=float(np.linalg.norm(W)) * 1.01, token_norm=1)
            Wh = np.array(r.model.to_numpy()[0])
            assert np.isfinite(Wh).all() and np.abs(Wh - W).max() <= r.error_bound.W_max
            if fn is learn_noisy_frame:
                assert np.abs(Wh - W).max() <= 1e-11
    R = PaperPlan.make(2, w_bound=Fraction(3, 2)).token_norm  # the default max(1, 1/2 + 2/3) = 7/6, as a float64
    assert Fraction(float(R)) == R <= Fraction(7, 6) < R + Fraction(1, 2**52)


def test_a_noisy_oracle_given_to_an_exact_only_learner_is_refused_with_a_pointer():
    from exact import learn_low_rank

    oracle = NoisyOracle(SingleHead.random(4, seed=1, rank=1), "uniform:1e-6", seed=0)
    with pytest.raises(InvalidArgument, match="for a noisy oracle, learn_noisy or learn_noisy_frame"):
        learn_low_rank(oracle, rank=1)
    assert oracle.count == 0


def test_projection_never_scales_outward_so_the_bound_holds_at_the_ball_boundary():
    """‖Ŵ‖_F just below 𝒲 must not be scaled out to 𝒲 (that would move Ŵ away from W)."""
    from fractions import Fraction as F

    for d in (1, 2, 3):
        truth = SingleHead.gaussian(d, seed=d, w_frobenius=1)  # ‖W‖_F = 1 − 2^-40
        for noise in ("round:15", "uniform:0"):
            r = learn_noisy_frame(NoisyOracle(truth, noise, seed=0), w_bound=1, token_norm=1)
            W = [[F(x) for x in row] for row in r.model.W]
            exact_max = max(abs(a - b) for ra, rb in zip(W, truth.W) for a, b in zip(ra, rb))
            assert r.error_bound.W_max >= 0 and exact_max <= r.error_bound.W_max, (d, noise)
    single = SingleHead([[1 - 2.0**-41]], [1])
    r = learn_noisy_frame(ExactOracle(single), w_bound=1, token_norm=1)
    assert abs(float(r.model.W[0][0]) - (1 - 2.0**-41)) <= r.error_bound.W_max


def test_large_budgets_and_a_zero_v_hat_give_results_not_crashes():
    truth = SingleHead.gaussian(2, seed=0)
    for w_bound, R in ((10000, 1), (2, 30)):
        r = learn_noisy_frame(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=w_bound, token_norm=R)
        assert _within(r, truth)
    zero = SingleHead([["1/2"]], ["2/5"])  # round:0 answers 0 for v: v̂ = 0, nothing certified
    r = learn_noisy_frame(NoisyOracle(zero, "round:0"), w_bound=2)
    # nothing certified beyond the trivial ‖Ŵ − W‖_F <= 2𝒲 (both in the ball)
    assert r.error_bound.W_frobenius >= 4 and r.error_bound.W_max >= 4
