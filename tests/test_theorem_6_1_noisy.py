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


def test_a_noisy_oracle_given_to_an_exact_mode_is_refused_with_a_pointer():
    """The low-rank learner's exact modes need exact answers: refused, pointing at float mode and at
    the learners with certified bounds; float mode runs on it, with a first-order estimate."""
    from exact import learn_low_rank

    truth = SingleHead.random(4, seed=1, rank=1)
    oracle = NoisyOracle(truth, "uniform:1e-6", seed=0)
    with pytest.raises(InvalidArgument, match="mode=.float.*For a noisy oracle with certified bounds, use learn_noisy"):
        learn_low_rank(oracle, rank=1, mode="certified")
    assert oracle.count == 0
    r = learn_low_rank(oracle, rank=1, seed=0)  # float mode's sketch is fresh unless seeded
    assert r.mode == "float" and not r.exact and r.queries == 2 * 4 - 1 + 4
    assert np.abs(np.array(r.model.to_numpy()[0]) - np.array(truth.to_numpy()[0])).max() <= r.error_estimate


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


# --- the certified bound against the exact error, measured in rationals against the hidden truth ---

def _exact_errors(result, truth):
    """``(‖ΔW‖_F², max |ΔW_ij|, ‖Δv‖², max |Δv_i|)``, exactly (the learned entries are exact binary values)."""
    dW = [abs(Fraction(a) - Fraction(b)) for ra, rb in zip(result.model.W, truth.W) for a, b in zip(ra, rb)]
    dv = [abs(Fraction(a) - Fraction(b)) for a, b in zip(result.model.v, truth.v)]
    return sum(x * x for x in dW), max(dW), sum(x * x for x in dv), max(dv)


def _certified(result, truth) -> tuple:
    """Assert that every certified bound is a nonnegative number at least the exact error; return
    ``(‖ΔW‖_F, max |ΔW_ij|)`` measured and bounded, as floats, for tightness checks."""
    b = result.error_bound
    fro2, mx, vn2, vm = _exact_errors(result, truth)
    for name, sq, bound in (("W_frobenius", True, b.W_frobenius), ("W_max", False, b.W_max),
                            ("v_norm", True, b.v_norm), ("v_max", False, b.v_max)):
        assert bound >= 0, (name, bound)  # never negative (and never nan)
        if math.isfinite(bound):
            err = {"W_frobenius": fro2, "W_max": mx, "v_norm": vn2, "v_max": vm}[name]
            assert err <= (Fraction(bound) ** 2 if sq else Fraction(bound)), (name, float(err) ** (0.5 if sq else 1),
                                                                               bound)
    assert b.W_max <= b.W_frobenius and b.v_max <= b.v_norm
    return math.sqrt(fro2), float(mx), b.W_frobenius, b.W_max


def _rational_head(d: int, seed: int, v=None) -> SingleHead:
    """A head whose entries are not float64 numbers (sevenths), so that Ŵ carries a rounding error."""
    rng = np.random.default_rng(seed)
    W = [[Fraction(int(x), 7 * d) for x in row] for row in rng.integers(-4, 5, (d, d))]
    if v is None:
        v = [Fraction(int(x), 3) for x in rng.choice([-5, -4, -3, -2, 2, 3, 4, 5], d)]
    return SingleHead(W, v)


@pytest.mark.parametrize("learner", LEARNERS)
def test_an_exact_oracle_s_bound_is_nonnegative_and_covers_the_rounding_of_w_hat(learner):
    """Answered exactly, only the rounding of Ŵ to float64 remains: the certified bound must
    cover it (it is measured here exactly, in rationals) and stay at rounding level."""
    from exact import FloatOracle

    for seed in range(3):
        for d in (1, 2, 3):
            truth = _rational_head(d, seed)
            for oracle in (ExactOracle(truth), NoisyOracle(truth, "uniform:0", seed=seed)):
                r = LEARNERS[learner](oracle, w_bound=2, token_norm=1)
                fro, mx, b_fro, b_max = _certified(r, truth)
                assert mx > 0  # sevenths are not float64 numbers: the rounding is there to cover
                assert b_max < 1e-14 and b_fro < 1e-14
        gauss = SingleHead.gaussian(3, seed=seed)  # float64 entries: recovered exactly, the bound still >= 0
        r = LEARNERS[learner](ExactOracle(gauss), w_bound=2, token_norm=1)
        _certified(r, gauss)
        r = LEARNERS[learner](FloatOracle(gauss), w_bound=2, token_norm=1)
        _certified(r, gauss)


def _constant(sign):
    return lambda i, X, clean, tau: sign * tau


def _alternating(i, X, clean, tau):
    return tau if i % 2 else -tau


def _by_query(i, X, clean, tau):
    return tau if (i * 7919) % 5 < 2 else -tau


@pytest.mark.parametrize("learner", LEARNERS)
@pytest.mark.parametrize("d", [2, 3])
def test_noise_at_the_bound_never_beats_the_certified_bound(learner, d):
    """Every η at ±τ (constant, alternating, scrambled, and the learner-aware adversary): the
    exact error stays within the certified bound, on several seeds."""
    from exact.learn.adversary import adversary

    tau = Fraction(1, 10**5)
    for seed in range(4):
        truth = SingleHead.gaussian(d, seed=seed) if seed % 2 else _rational_head(d, seed)
        strategies = [_constant(1), _constant(-1), _alternating, _by_query]
        if seed < 2:
            strategies.append(adversary(truth, learner, tau=tau, w_bound=2, token_norm=1))
        for strategy in strategies:
            r = LEARNERS[learner](NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
            _certified(r, truth)


@pytest.mark.parametrize("learner, attained", [("paper", 0.85), ("frame", 0.2)])
def test_the_learner_aware_adversary_comes_close_to_the_certified_bound(learner, attained):
    """The bound is not loose: the worst-case noise reaches most of it (the paper's bound is
    nearly attained; the frame's within a small factor), and v's bound exactly."""
    from exact.learn.adversary import adversary

    tau = Fraction(1, 10**6)
    for seed in range(3):
        truth = SingleHead.gaussian(3, seed=seed)
        strategy = adversary(truth, learner, tau=tau, w_bound=2, token_norm=1)
        r = LEARNERS[learner](NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
        fro, mx, b_fro, b_max = _certified(r, truth)
        assert fro >= attained * b_fro and mx >= attained * b_max, (seed, fro / b_fro, mx / b_max)
        _, _, vn2, vm = _exact_errors(r, truth)
        assert float(vm) >= 0.999 * r.error_bound.v_max and math.sqrt(vn2) >= 0.999 * r.error_bound.v_norm
        assert r.error_bound.v_max <= float(tau) * (1 + 1e-6)  # |v̂_i − v_i| <= τ/R, R = 1


V_WITH_ZEROS = [
    ["0", 1, 2],  # a zero first
    [2, "-1", "0"],  # a zero last
    [1, 0, 0, "-2"],  # zeros inside
    [0, 0, "3/2"],  # all but one zero
    [0, "-1/3", 0, "1/2"],
    ["-5/4", 0],
]


@pytest.mark.parametrize("v", V_WITH_ZEROS, ids=lambda v: ",".join(map(str, v)))
def test_the_frame_learner_needs_no_margin_on_any_coordinate_of_v(v):
    """Zero coordinates of v: the frame rows lean on ‖v‖, not on v_i, so every entry of W gets a
    small bound, and the exact error stays within it (exact, noisy and worst-case answers)."""
    from exact.learn.adversary import adversary

    d = len(v)
    tau = Fraction(1, 10**6)
    for seed in range(2):
        truth = _rational_head(d, seed + 10, v=v)
        oracles = [ExactOracle(truth), NoisyOracle(truth, "uniform:1e-6", seed=seed),
                   NoisyOracle(truth, Adversarial(tau, _alternating)),
                   NoisyOracle(truth, Adversarial(tau, adversary(truth, "frame", tau=tau, w_bound=2, token_norm=1)))]
        for oracle in oracles:
            r = learn_noisy_frame(oracle, w_bound=2, token_norm=1)
            fro, mx, b_fro, b_max = _certified(r, truth)
            assert b_fro < 1e-3  # finite and small: no margin on v_i is needed


@pytest.mark.parametrize("v", V_WITH_ZEROS, ids=lambda v: ",".join(map(str, v)))
def test_the_paper_learner_gives_a_zero_coordinate_s_row_an_infinite_bound_and_the_rest_hold(v):
    """The paper reads row i through v_i: with v_i = 0 nothing about that row is certified (an
    infinite bound, never a finite wrong one); with exact answers every row is certified."""
    d = len(v)
    truth = _rational_head(d, 3, v=v)
    r = learn_noisy(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2, token_norm=1)
    assert r.error_bound.W_frobenius == r.error_bound.W_max == math.inf
    _certified(r, truth)
    assert all(math.isfinite(float(x)) for row in r.model.W for x in row)
    exact = learn_noisy(ExactOracle(truth), w_bound=2, token_norm=1)
    # v_i = 0 is read exactly, which certifies nothing either
    assert exact.error_bound.W_max == math.inf
    _certified(exact, truth)


def test_a_v_hat_exactly_at_its_noise_level_is_not_a_certified_margin():
    """v_1 = 0 answered +τ exactly: |v̂_1| = τ/R is no margin (v_1 may be 0), so W's bound is
    infinite; one ulp of margin above it (v_1 = τ) certifies the row and the bound is finite."""
    tau = Fraction(1, 2**20)
    up = Adversarial(tau, _constant(1))
    at = SingleHead([[1, "1/2"], ["-1/3", "1/4"]], [1, 0])
    r = learn_noisy(NoisyOracle(at, up), w_bound=2, token_norm=1)
    assert r.model.v[1] == tau and r.error_bound.v_max == float(tau)
    assert r.error_bound.W_max == r.error_bound.W_frobenius == math.inf
    _certified(r, at)
    above = SingleHead([[1, "1/2"], ["-1/3", "1/4"]], [1, tau])
    r = learn_noisy(NoisyOracle(above, up), w_bound=2, token_norm=1)
    assert r.model.v[1] == 2 * tau and math.isfinite(r.error_bound.W_frobenius)
    _certified(r, above)


def test_a_v_hat_of_zero_gives_no_information_and_the_midpoint_estimate():
    """Answers of 0 for v (v below the rounding): no row is readable, Ŵ = σ⁻¹(½)/(AB) = 0, and
    nothing finite is claimed about W."""
    truth = SingleHead([["1/2", "-1/3"], ["1/5", 1]], ["1/1000", "-1/1000"])
    r = learn_noisy(NoisyOracle(truth, "round:0"), w_bound=2, token_norm=1)
    assert r.model.v == (0, 0) and r.model.W == ((0, 0), (0, 0))
    assert r.error_bound.W_max == math.inf and 0.5 <= r.error_bound.v_max <= 0.5 * (1 + 1e-12)
    _certified(r, truth)


@pytest.mark.parametrize("entry, value", [((0, 0), 9), ((0, 1), -9), ((1, 0), 5), ((1, 1), "-3")])
def test_an_answer_proving_an_entry_beyond_w_bound_names_it_both_signs(entry, value):
    W = [[0, 0], [0, 0]]
    W[entry[0]][entry[1]] = value
    truth = SingleHead(W, [1, "-1/2"])
    m = 2 + 2 * entry[0] + entry[1]  # after the d value queries, row-major
    with pytest.raises(OracleInconsistent, match=rf"answer #{m} proves \|W\[{entry[0]}\]\[{entry[1]}\]\| > w_bound = 2 "
                                                 r"\(its softmax weight lies outside the range that bound allows, by "
                                                 r"more than the noise can explain\): raise --w-bound"):
        learn_noisy(NoisyOracle(truth, "uniform:1e-9", seed=0), w_bound=2, token_norm=1)


@pytest.mark.parametrize("sign", [1, -1])
def test_an_entry_at_w_bound_pushed_outside_by_the_noise_is_accepted_and_bounded(sign):
    """|W_00| = 𝒲 exactly: the noise pushes α̂ past the clip range, but by no more than the noise
    explains, so the answer is accepted (clipped) and the bound holds."""
    truth = SingleHead([[sign * 2, 0], [0, 0]], [1, "1/2"])  # ‖W‖_F = 𝒲 = 2
    tau = Fraction(1, 10**4)
    for push in (1, -1):
        r = learn_noisy(NoisyOracle(truth, Adversarial(tau, _constant(sign * push))), w_bound=2, token_norm=1)
        _certified(r, truth)
        t, mu = float(tau) * (1 + 1e-9), 0.5  # the paper's closed form with μ = min |v_i|
        closed = LIPSCHITZ_HALF * t * (3 * 2**2 + 2 * SIGMA_HALF * 2) / (mu - t)
        assert abs(float(r.model.W[0][0]) - 2 * sign) <= r.error_bound.W_max <= closed


def test_a_row_without_a_certified_margin_is_never_refused():
    """Row 1's v_1 is below the noise, so its answers say nothing provable about W[1]: a large
    W[1][0] is not refused (and nothing finite is claimed)."""
    truth = SingleHead([[0, "1/2"], [9, 0]], [1, "1/10000000"])
    r = learn_noisy(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2, token_norm=1)
    assert r.error_bound.W_max == math.inf


def test_the_result_states_its_assumptions_and_its_plan():
    truth = SingleHead.gaussian(2, seed=0)
    r = learn_noisy(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=4, token_norm=Fraction(3, 8))
    assert r.assumptions == ("|W_ij| <= ‖W‖_F <= w_bound = 4", "every answer within the oracle's declared error bound",
                             "among bias-free single heads")
    assert r.details.to_json() == {"checks": {"queries": 0, "lengths": [], "seed": None}, "learner": "paper",
                                   "token_norm": "3/8", "w_bound": "4", "A": "1/4", "B": "1/8", "lambda": "1/8"}
    assert len(r.details) == 7 and r.details["lambda"] == "1/8"
    assert r.claim.startswith("approximate (certified: ‖ΔW‖_F <= ") and "assuming |W_ij| <= ‖W‖_F <= w_bound = 4" in r.claim
    f = learn_noisy_frame(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=4, token_norm=Fraction(3, 8))
    assert f.assumptions == ("‖W‖_F <= w_bound = 4", "every answer within the oracle's declared error bound",
                             "among bias-free single heads")
    assert set(f.details) == {"checks", "learner", "token_norm", "w_bound", "beta", "projected"} and len(f.details) == 6
    assert (f.details["learner"], f.details["token_norm"], f.details["w_bound"]) == ("frame", "3/8", "4")
    assert f.details["projected"] in (True, False)


def test_the_reported_scales_are_the_scales_of_the_probes_sent():
    """The paper's A and B and the frame's β are the ones in the transcript: probe (0, 0) is
    [(A + B)e_0; A e_0] for the paper, [β e_0 + …; β e_0] for the frame."""
    for w_bound, R in ((2, 1), (3, Fraction(1, 3)), (Fraction(1, 2), None)):
        truth = SingleHead.gaussian(3, seed=1, w_frobenius=w_bound)
        oracle = NoisyOracle(truth, "uniform:1e-6", seed=0)
        r = learn_noisy(oracle, w_bound=w_bound, token_norm=R)
        A, B = Fraction(r.details["A"]), Fraction(r.details["B"])
        first, second = oracle.transcript[3].X.dense()
        assert second == [A, 0, 0] and first == [A + B, 0, 0]
        assert oracle.transcript[0].X.dense() == [[Fraction(r.details["token_norm"]), 0, 0]]
        assert Fraction(r.details["lambda"]) == A * B * Fraction(w_bound)
        # within the budget, the paper's a = 1/2, b = 1/𝒲, shrunk by one common factor only if needed
        assert A / B == Fraction(w_bound) / 2 or abs(A / B - Fraction(w_bound) / 2) < Fraction(1, 2**40)
        assert all(Fraction(float(x)) == x for q in oracle.transcript for row in q.X.dense() for x in row)
        oracle = NoisyOracle(truth, "uniform:1e-6", seed=0)
        f = learn_noisy_frame(oracle, w_bound=w_bound, token_norm=R)
        assert oracle.transcript[3].X.dense()[1] == [Fraction(f.details["beta"]), 0, 0]


@pytest.mark.parametrize("learner", LEARNERS)
def test_scales_at_the_ends_of_the_supported_range_are_accepted_and_beyond_them_refused(learner):
    truth = SingleHead([["1/3"]], ["1/2"])
    for w_bound in (Fraction(1, 2**40), Fraction(2**40)):
        r = LEARNERS[learner](NoisyOracle(truth, "uniform:1e-9", seed=0) if w_bound > 1 else ExactOracle(
            SingleHead([[Fraction(1, 2**41)]], ["1/2"])), w_bound=w_bound, token_norm=1)
        assert r.error_bound.W_max >= 0
    for w_bound in (Fraction(1, 2**40) * (1 - Fraction(1, 2**60)), Fraction(2**40) + Fraction(1, 2**20)):
        oracle = NoisyOracle(truth, "uniform:1e-9", seed=0)
        with pytest.raises(InvalidArgument, match=r"w_bound: expected a number between 2\^-40 and 2\^40, got "):
            LEARNERS[learner](oracle, w_bound=w_bound, token_norm=1)
        assert oracle.count == 0
    for R in (Fraction(1, 2**40), Fraction(2**40)):
        r = LEARNERS[learner](NoisyOracle(truth, "uniform:1e-9", seed=0), w_bound=2, token_norm=R)
        _certified(r, truth)
    with pytest.raises(InvalidArgument, match=r"token_norm: expected a number between 2\^-40 and 2\^40"):
        LEARNERS[learner](NoisyOracle(truth, "uniform:1e-9", seed=0), w_bound=2, token_norm=2**40 + 1)


def test_a_unit_w_bound_gives_the_paper_s_own_probes():
    """𝒲 = 1: a = 1/2, b = 1 and the default budget R = 3/2 = a + b; nothing shrinks."""
    plan = PaperPlan.make(2, w_bound=1)
    assert (plan.A, plan.B, plan.token_norm, plan.lam) == (Fraction(1, 2), 1, Fraction(3, 2), Fraction(1, 2))
    truth = _rational_head(2, 0)
    r = learn_noisy(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=1)
    _certified(r, truth)


def test_the_clip_range_holds_the_sigmoid_range_and_its_constants_are_upper_bounds():
    """[c_lo, c_hi] ⊇ [σ(−λ), σ(λ)], tightly; the Lipschitz constant and the logit span are upper
    bounds, tight too (checked against 60-digit mpmath); λ outside [0, 40] is refused."""
    import mpmath

    from exact.learn.noisy import _clip_interval
    from exact.numbers import ball_interval

    def mp(q):
        return mpmath.mpf(q.numerator) / q.denominator

    with mpmath.workdps(60):
        for lam in (Fraction(0), Fraction(1, 2), Fraction(1, 3), Fraction(7), Fraction(40)):
            c_lo, c_hi, lip, span = _clip_interval(lam, 128)
            lo, hi = Fraction(int(c_lo.p), int(c_lo.q)), Fraction(int(c_hi.p), int(c_hi.q))
            s = 1 / (1 + mpmath.exp(mp(lam)))  # σ(−λ)
            assert 0 < lo and hi == 1 - lo
            assert s * (1 - mpmath.mpf(2) ** -100) <= mp(lo) <= s
            L = 1 / (s * (1 - s))
            assert L <= mp(ball_interval(lip)[1]) <= L * (1 + mpmath.mpf(2) ** -90)
            assert mp(lam) <= mp(ball_interval(span)[1]) <= mp(lam) + mpmath.mpf(2) ** -90 * (1 + L)
    with pytest.raises(InvalidArgument, match=r"internal: a probe logit scale"):
        _clip_interval(Fraction(40) + Fraction(1, 10**9), 128)
    with pytest.raises(InvalidArgument, match=r"internal: a probe logit scale"):
        _clip_interval(Fraction(-1, 10**9), 128)


def test_upper_is_the_least_float_above_a_ball():
    from flint import arb, ctx, fmpq

    from exact.learn.noisy import _upper
    from exact.numbers import ball_interval

    with ctx.workprec(128):
        for q in (fmpq(1, 3), fmpq(-1, 3), fmpq(10**20 + 1, 7), fmpq(1, 10**30)):
            x = arb(q) + arb(0, fmpq(1, 2**100))
            u, hi = _upper(x), ball_interval(x)[1]
            assert Fraction(u) >= hi and Fraction(math.nextafter(u, -math.inf)) < hi
        assert _upper(arb(fmpq(1, 2))) == 0.5 and _upper(arb(0)) == 0.0  # an exact float stays itself
    assert _upper(arb("inf")) == math.inf and _upper(arb("nan")) == math.inf


# --- the frame learner: its frame, its guards and its trivial cap ---

@pytest.mark.parametrize("v", [[3, -4, "1/10"], *V_WITH_ZEROS], ids=lambda v: ",".join(map(str, v)))
def test_the_frame_is_inverted_exactly_by_sherman_morrison_and_leans_on_every_row(v):
    """U = I + σnᵀ (rows u_k = e_k + σ_k·n, n on the grid 2^-40, ‖n‖ ≈ 1) has the inverse
    I − σnᵀ/(1 + ‖n‖₁), exactly; every |vᵀu_k| >= ‖v‖ (no coordinate needs a margin)."""
    v = [Fraction(x) for x in v]
    d = len(v)
    plan = FramePlan.make(v, [Fraction(0)] * d, w_bound=2, token_norm=1, tau=1e-6)
    n, sigma = plan.n, plan.sigma
    assert all((x * 2**40).denominator == 1 for x in n)
    assert abs(sum(x * x for x in n) - 1) < Fraction(1, 2**38)
    assert all(s == (1 if x >= 0 else -1) for s, x in zip(sigma, n))
    U = [[Fraction(row.get(i, 0)) for i in range(d)] for row in plan.rows()]
    assert U == [[(1 if i == k else 0) + sigma[k] * n[i] for i in range(d)] for k in range(d)]
    one = 1 + sum(abs(x) for x in n)
    inv = [[(1 if i == k else 0) - sigma[i] * n[k] / one for k in range(d)] for i in range(d)]
    assert [[sum(U[i][m] * inv[m][k] for m in range(d)) for k in range(d)] for i in range(d)] == \
        [[Fraction(i == k) for k in range(d)] for i in range(d)]
    vnorm = math.sqrt(sum(float(x) ** 2 for x in v))
    s, _ = plan.sums(v, [Fraction(0)] * d)
    assert all(abs(float(x)) >= vnorm * (1 - 1e-9) for x in s)


def test_the_frame_sums_carry_an_error_bound_that_is_attained():
    """|v̂ᵀu_k − vᵀu_k| <= Σ_i |u_ki|·τ_i, with equality when every v̂_i is off by τ_i towards sign(u_ki)."""
    v = [Fraction(1), Fraction(0), Fraction(-2, 3)]
    tau = [Fraction(1, 1000), Fraction(1, 500), Fraction(1, 2000)]
    plan = FramePlan.make(v, tau, w_bound=2, token_norm=1, tau=1e-3)
    exact, _ = plan.sums(v, [Fraction(0)] * 3)
    for k, row in enumerate(plan.rows()):
        worst = [x + (t if row.get(i, 0) > 0 else -t) for i, (x, t) in enumerate(zip(v, tau))]
        s, e = plan.sums(worst, tau)
        assert s[k] - exact[k] == e[k] == sum(abs(row.get(i, 0)) * tau[i] for i in range(3))


def test_the_frame_s_token_norm_bound_covers_every_probe_and_stays_within_the_budget():
    for v, R in (([3, -4, "1/10"], 1), ([0, 1, 0, 2], Fraction(5, 2)), (["-5/4", 0], Fraction(1, 3))):
        v = [Fraction(x) for x in v]
        plan = FramePlan.make(v, [Fraction(1, 10**6)] * len(v), w_bound=2, token_norm=R, tau=1e-6)
        worst = max(sum(x * x for x in row) for q in plan.sequences() for row in q.dense())
        top = plan.max_token_norm()
        assert worst <= top * top <= R * R and top * top <= worst * (1 + Fraction(1, 2**30))
        assert all(Fraction(float(x)) == x for q in plan.sequences() for row in q.dense() for x in row)


def test_the_frame_learner_refuses_answers_that_prove_w_beyond_its_bound():
    d = 2
    for W in ([[9, 0], [0, 1]], [[-9, 0], [0, 1]], [[0, 0], [0, 3]], [[0, "-3"], [0, 0]]):
        oracle = NoisyOracle(SingleHead(W, [1, "-1/2"]), "uniform:1e-9", seed=0)
        with pytest.raises(OracleInconsistent, match=r"answer #(\d+) proves ‖W‖_F > w_bound = 2 \(its softmax weight "
                                                     r"lies outside the range that bound allows, by more than the "
                                                     r"noise can explain\): raise --w-bound") as info:
            learn_noisy_frame(oracle, w_bound=2, token_norm=1)
        m = int(str(info.value).split("#")[1].split()[0])
        assert d <= m < d + d * d  # a logit probe, numbered as the oracle counts its queries
        j = next(i for i, x in enumerate(oracle.transcript[m].X.dense()[1]) if x)
        assert any(W[i][j] != 0 for i in range(d))  # its column j of W is the one that is too large
    # each entry within 𝒲 but ‖W‖_F = 1.5·√3 > 2: only the estimate as a whole proves it
    oracle = NoisyOracle(SingleHead([["3/2", "3/2"], ["3/2", 0]], [1, "-1/2"]), "uniform:1e-9", seed=0)
    with pytest.raises(OracleInconsistent, match=r"^the answers prove ‖W‖_F > w_bound = 2 \(the estimate lies further "
                                                 r"than its certified bound outside that ball\): raise --w-bound$"):
        learn_noisy_frame(oracle, w_bound=2, token_norm=1)


@pytest.mark.parametrize("push", [1, -1])
def test_a_head_on_the_ball_s_boundary_is_accepted_and_its_bound_holds(push):
    """‖W‖_F = 𝒲 exactly with every answer pushed to ±τ: never refused, and within the bound."""
    tau = Fraction(1, 10**6)
    for W in ([["6/5", "8/5"], [0, 0]], [[0, 0], ["-2", 0]], [["-6/5", 0], [0, "8/5"]]):
        truth = SingleHead(W, [1, "-1/2"])
        for strategy in (_constant(push), _alternating):
            r = learn_noisy_frame(NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
            _certified(r, truth)
            assert r.error_bound.W_frobenius < 1e-3


def test_a_v_below_the_noise_gets_the_trivial_cap_and_no_more():
    """Rows whose |v̂ᵀu_k| is not certified above the noise: every bound is the cap 2𝒲 (Ŵ and W
    both lie in the ball), which holds."""
    for truth, noise in ((SingleHead([[1, "1/2"], ["-1/4", 1]], ["1e-9", "-2e-9"]), "uniform:1e-6"),
                         (SingleHead([["1/2"]], ["2/5"]), "round:0"),
                         (SingleHead([["-1/3", 0, "1/2"], [0, 1, 0], ["1/7", 0, 0]], [0, 0, 0]), "uniform:1e-3")):
        for w_bound in (2, 5):
            r = learn_noisy_frame(NoisyOracle(truth, noise, seed=0), w_bound=w_bound, token_norm=1)
            _certified(r, truth)
            cap = 2 * w_bound * (1 + 1e-12)
            assert 2 * w_bound <= r.error_bound.W_max <= r.error_bound.W_frobenius <= cap
            assert math.sqrt(sum(float(x) ** 2 for row in r.model.W for x in row)) <= w_bound * (1 + 1e-12)


@pytest.mark.parametrize("w_bound, R", [(2, None), (Fraction(1, 4), None), (Fraction(1, 3), None),
                                        (Fraction(1, 2**40), None), (2, Fraction(1, 3)), (2, 7)])
def test_the_frame_learner_s_default_budget_is_the_paper_s(w_bound, R):
    """R defaults to max(1, 1/2 + 1/𝒲) (as a float64 number, at most 2^40), as the paper learner's."""
    truth = SingleHead([["1/3"]], ["1/2"]) if w_bound >= Fraction(1, 3) else SingleHead([[0]], ["1/2"])
    r = learn_noisy_frame(NoisyOracle(truth, "uniform:1e-9", seed=0), w_bound=w_bound, token_norm=R)
    want = min(max(Fraction(1), Fraction(1, 2) + 1 / Fraction(w_bound)), Fraction(2**40)) if R is None else Fraction(R)
    got = Fraction(r.details["token_norm"])
    assert got <= want < got * (1 + Fraction(1, 2**52)) and Fraction(float(got)) == got
    if R is None and w_bound >= Fraction(1, 3):
        assert got == PaperPlan.make(1, w_bound=w_bound).token_norm


def _frame_bound(plan, truth, tau):
    """The Frobenius bound the frame decoder certifies for ``plan`` at noise ``tau``, on clean answers."""
    from exact.learn.noisy_frame import decode_frame
    from exact.learn.result import ErrorBound

    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    values = []
    for q in plan.sequences():
        X = np.array([[float(x) for x in row] for row in q.dense()])
        s = X @ Wt @ X[-1]
        p = np.exp(s - s.max())
        values.append(Fraction(float(p / p.sum() @ (X @ vt))))
    tau_v = [Fraction(tau)] * plan.d
    _, bound = decode_frame(plan, list(truth.v), tau_v, values, [Fraction(tau)] * len(values))
    return ErrorBound.from_entries(bound, []).W_frobenius


@pytest.mark.parametrize("w_bound, tau", [(2, 1e-6), (8, 1e-6), (Fraction(1, 2), 1e-8), (2, 1e-3)])
def test_the_frame_s_scales_minimise_its_certified_bound(w_bound, tau):
    """No nearby scales (β, γ) within the budget certify a bound more than 5% smaller than the
    ones the learner chose."""
    import dataclasses

    truth = SingleHead.gaussian(3, seed=1, w_frobenius=w_bound)
    plan = FramePlan.make(list(truth.v), [Fraction(tau)] * 3, w_bound=w_bound, token_norm=1, tau=tau)
    chosen = _frame_bound(plan, truth, tau)
    others = []
    for cb, cg in ((0.6, 1), (0.85, 1), (1, 0.6), (1, 0.85), (0.6, 0.6), (1.25, 0.85), (0.85, 1.1), (1.6, 0.7)):
        beta = plan.beta[0][0] * Fraction(cb)
        other = dataclasses.replace(plan, beta=((beta,) * 3,) * 3,
                                    gamma=tuple(tuple(g * Fraction(cg) for g in row) for row in plan.gamma))
        if other.max_token_norm() <= 1:
            others.append(_frame_bound(other, truth, tau))
    assert len(others) >= 5 and chosen <= 1.05 * min(others), (chosen, others)


def test_the_frame_s_exact_roundings_go_the_safe_way():
    """Scales round down to short dyadics (tokens only shrink), square roots round up."""
    from exact.learn.noisy_frame import _beta_on_grid, _dyadic_down, _sqrt_up

    for x in (1 / 3, 0.7, 5.0, 1e-9, 123456.789, 2.0**-30):
        for bits in (6, 8, 40):
            q = _dyadic_down(x, bits)
            e = math.frexp(x)[1]  # 2^(e-1) <= x < 2^e
            step = Fraction(2) ** (e - bits)
            assert 0 < q <= Fraction(x) < q + step and (q / step).denominator == 1
    for q in (Fraction(2), Fraction(1, 3), Fraction(10**12 + 7), Fraction(1, 10**20)):
        r = _sqrt_up(q)
        assert r * r >= q and (r * (1 - Fraction(1, 2**38))) ** 2 < q
    for beta, gamma in ((0.3, Fraction(21, 64)), (5.0, Fraction(1, 1024)), (1e-12, Fraction(3, 4))):
        b = _beta_on_grid(beta, gamma)
        e = math.frexp(float(gamma))[1]
        assert 0 <= b <= Fraction(beta) and b <= Fraction(2) ** (e + 5)
        assert (b / Fraction(2) ** (e - 46)).denominator == 1
        assert b > min(Fraction(beta), Fraction(2) ** (e + 5)) * (1 - Fraction(1, 2**19)) - Fraction(2) ** (e - 46)


def test_projection_moves_only_inward_and_states_how_far_each_entry_moved():
    from exact.learn.noisy_frame import _project

    inside = np.array([[1.2, 0.0], [0.0, -1.6]])  # ‖·‖_F = 2
    P, slack = _project(inside, Fraction(2))
    assert slack is None and (P == inside).all()
    outside = np.array([[3.0, 0.0], [0.0, -4.0]])  # ‖·‖_F = 5
    P, slack = _project(outside, Fraction(2))
    exact = [[Fraction(x) * Fraction(2, 5) for x in row] for row in outside]
    assert math.sqrt(math.fsum(float(x) ** 2 for x in P.ravel())) <= 2 * (1 + 1e-15)
    for k in range(2):
        for j in range(2):
            assert abs(Fraction(P[k, j]) - exact[k][j]) <= Fraction(slack[k, j]) - abs(Fraction(outside[k, j])) * Fraction(3, 5)
            assert abs(Fraction(P[k, j]) - Fraction(outside[k, j])) <= Fraction(slack[k, j])


@pytest.mark.parametrize("push", [1, -1])
def test_an_estimate_just_outside_the_ball_is_projected_and_the_bound_holds(push):
    """Truth on the sphere ‖W‖_F = 𝒲, noise pushing outward: the estimate lands outside the ball by
    less than its bound, is projected (and says so), and the exact error stays within the bound."""
    tau = Fraction(1, 10**3)
    projected = 0
    for seed in range(4):
        truth = SingleHead.gaussian(2, seed=seed, w_frobenius=2)
        for strategy in (_constant(push), _alternating, _by_query):
            r = learn_noisy_frame(NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
            _certified(r, truth)
            norm = math.sqrt(sum(float(x) ** 2 for row in r.model.W for x in row))
            assert norm <= 2 * (1 + 1e-12)
            projected += r.details["projected"]
            assert r.details["projected"] in (True, False)
    assert projected > 0


@pytest.mark.parametrize("R, W", [(1.0, None), (3.0, None), (1.0, 2.0), (1.0, 1e4), (1e-6, 5e4)])
def test_the_candidate_scales_obey_the_budget_and_cover_a_log_polar_grid(R, W):
    """Every candidate (β, g) has β² + g² <= R², 2^-40·g <= β <= 16·g (float64 probes) and, given 𝒲,
    βg𝒲 <= MAX_LOGIT/2; they cover the budget circle in angle, β on log scales down to 2^-50·R,
    and for every β a sweep of g down to the constraint's limit."""
    from exact.learn.noisy import MAX_LOGIT
    from exact.learn.noisy_frame import _scale_grid

    grid = _scale_grid(R, W)
    assert grid
    for beta, g in grid:
        assert g > 0 and beta * beta + g * g <= R * R * (1 + 1e-12)
        assert g * 2.0**-40 <= beta <= 16 * g
        if W is not None:
            assert beta * g * W <= MAX_LOGIT / 2 * (1 + 1e-12)
    betas = sorted({b for b, _ in grid})
    assert abs(betas[0] / (R * 2.0**-50) - 1) <= 1e-9  # the log scales end at 2^-50·R
    assert all(b2 / b1 <= math.sqrt(2) * (1 + 1e-9) for b1, b2 in zip(betas, betas[1:]))
    if W is None or R * R * W <= 2:  # the logit cap does not bind: the whole circle is available
        angles = sorted(math.atan2(g, b) for b, g in grid if b * b + g * g >= R * R * (1 - 1e-9))
        assert angles[0] <= math.atan(1 / 16) + math.pi / 64 and angles[-1] >= math.pi / 2 - math.pi / 64
        assert max(b - a for a, b in zip(angles, angles[1:])) <= math.pi / 100
    for beta in betas[:: max(1, len(betas) // 25)]:
        gs = sorted(g for b, g in grid if b == beta)
        top = math.sqrt(max(R * R - beta * beta, 0.0))
        if W is not None:
            top = min(top, MAX_LOGIT / 2 / (beta * W))
        if not gs:
            assert top * 2.0**-40 > beta or 16 * top < beta  # no g satisfies the constraints
            continue
        assert gs[-1] >= min(top * 0.85, beta * 2.0**40 / 2.5)
        assert all(g2 / g1 <= 2.5 * (1 + 1e-9) for g1, g2 in zip(gs, gs[1:]))
        assert gs[0] <= max(beta / 16, top * 2.0**-50) * 2.5


def test_better_keeps_the_lower_score_and_breaks_near_ties_by_the_smaller_logit_scale():
    from exact.learn.noisy_frame import _better

    a = (1.0, 3.0, "a")
    assert _better(None, a) is a
    assert _better(a, (0.5, 9.0, "b"))[2] == "b"  # a lower score wins, whatever its logit scale
    assert _better(a, (2.0, 0.1, "b")) is a  # a higher score loses, whatever its logit scale
    assert _better(a, (1.0 + 1e-10, 1.0, "b"))[2] == "b"  # a near tie: the smaller logit scale
    assert _better(a, (1.0 - 1e-10, 5.0, "b")) is a  # a near tie the other way: the smaller logit scale stays
    assert _better(a, (1.0, 3.0, "b")) is a  # an exact tie keeps the first
    assert _better(a, (1.0 + 1e-8, 1.0, "b")) is a  # not a tie: the lower score stays
    assert _better(a, (1.0 - 1e-8, 5.0, "b"))[2] == "b"


@pytest.mark.parametrize("w_bound, tau", [(2.0, 1e-6), (8.0, 1e-4), (0.5, 1e-9)])
def test_the_scale_search_s_estimate_is_the_certified_bound_of_a_45_degree_row(w_bound, tau):
    """Where the estimate's assumptions hold exactly (‖u_k‖ = √2, |vᵀu_k| = ‖v‖: a row k with
    v_k = 0), it equals the certified entry bound E_kj the decoder computes, for unsaturated and
    saturated scales alike."""
    import dataclasses

    from exact.learn.noisy_frame import _proxy, decode_rows

    v = [Fraction(0), Fraction(3, 2)]  # n = e_1, u_0 = e_0 + e_1
    tau_v = [Fraction(tau)] * 2
    base = FramePlan.make(v, tau_v, w_bound=w_bound, token_norm=1, tau=tau)
    assert base.rows()[0] == {0: 1, 1: 1}
    for beta, g in ((0.3, 0.5), (0.7, 0.7), (0.05, 0.99), (0.99, 0.1), (0.9, 0.4)):
        B, G = Fraction(beta), Fraction(g / math.sqrt(2))
        plan = dataclasses.replace(base, beta=((B, B), (B, B)), gamma=((G, G), (G, G)))
        lam = float(B * G * plan.t_bound[0][0])
        if lam > 40:
            continue
        s, e = plan.sums(v, tau_v)
        # answers of softmax weight ½ (W = 0); the bound does not depend on them
        values = [B * v[j] + (-1 if row.get(j, 0) > 0 else 1) * G * s[k] / 2
                  for k, row in enumerate(plan.rows()) for j in range(2)]
        _, E = decode_rows(plan, s, e, v, tau_v, values, [Fraction(tau)] * 4)
        est = _proxy(float(B), float(G) * math.sqrt(2), w_bound, tau, tau, 1.5)
        for j in range(2):
            assert float(E[0][j].mid()) == pytest.approx(est, rel=1e-6, abs=0), (beta, g, j)


@pytest.mark.parametrize("sign", [1, -1])
@pytest.mark.parametrize("tau", [Fraction(1, 10**5), Fraction(1, 2**30)])
def test_the_paper_s_entry_bound_is_attained_at_the_edge_of_the_clip_range(sign, tau):
    """W_00 = ±𝒲 (where σ⁻¹ is steepest, slope L), v̂_0 off by ±τ and the answer to probe (0, 0)
    off by ∓τ: α̂ − α = (η − (A + αB)·δ_0)/(B·v̂_0) moves inward by all of ε_00 (at W_00 = 𝒲), so
    the error reaches the certified bound to within 0.1% (and v̂_0's error its bound)."""
    truth = SingleHead([[2 * sign, 0], [0, 0]], [1, 4])  # rows of v_1 = 4 have smaller bounds

    def strategy(i, X, clean, t):
        return sign * t if i == 0 else (-sign * t if i == 2 else 0)

    r = learn_noisy(NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=2, token_norm=1)
    fro, mx, b_fro, b_max = _certified(r, truth)
    assert float(abs(Fraction(r.model.W[0][0]) - truth.W[0][0])) == mx
    # ε_00 counts the softmax weight's term at its largest, σ(λ)·B; the truth's weight is σ(±λ)
    A = B = 0.5
    share = (1 + A + 1 / (1 + math.exp(-sign * 0.5)) * B) / (1 + A + SIGMA_HALF * B)
    assert share * 0.999 * b_max <= mx <= share * 1.001 * b_max, (mx / b_max, share)
    assert abs(r.model.v[0] - truth.v[0] - sign * tau) <= Fraction(1, 2**52)  # at its bound, up to float64
    assert float(tau) <= r.error_bound.v_max <= float(tau) * (1 + 1e-9)


def test_the_published_lipschitz_constant_is_that_of_the_inverse_sigmoid_at_one_half():
    """L = 1/(σ(½)σ(−½)) = 2 + 2·cosh(½) ≈ 4.2552, below Lemma A.1's 5."""
    import mpmath

    with mpmath.workdps(40):
        s = 1 / (1 + mpmath.exp(-mpmath.mpf(1) / 2))
        assert abs(LIPSCHITZ_HALF - 1 / (s * (1 - s))) <= 1e-15 * 4.26
    assert 4.25 < LIPSCHITZ_HALF < 5


@pytest.mark.parametrize("w_bound, tau", [(2, 10.0), (100, 1e3)])
def test_under_noise_that_saturates_every_probe_the_smallest_logit_scale_is_chosen(w_bound, tau):
    """Every candidate scale then certifies the same trivial bound: among the ties the frame takes
    the smallest logit scale βg𝒲 (the narrowest clipping range)."""
    from exact.learn.noisy_frame import _scale_grid

    v = [Fraction(1), Fraction(-2), Fraction(1, 2)]
    plan = FramePlan.make(v, [Fraction(tau)] * 3, w_bound=w_bound, token_norm=1, tau=tau)
    smallest = min(b * g * w_bound for b, g in _scale_grid(1.0, float(w_bound)))
    for k, row in enumerate(plan.rows()):
        norm = math.sqrt(sum(float(x) ** 2 for x in row.values()))
        lam = float(plan.beta[k][0] * plan.gamma[k][0]) * norm * w_bound
        assert smallest * (1 - 2.0**-4) <= lam <= smallest * (1 + 1e-9)


@pytest.mark.parametrize("w_bound, token_norm", [(2**40, 2**40), (2**39, 2**40), (2**30, 2**40)])
def test_a_budget_that_leaves_no_probe_scale_is_refused_before_any_query(w_bound, token_norm):
    """Large 𝒲 and R together leave no scales with βg𝒲 within the logit cap and β on the probes' float64 grid."""
    oracle = NoisyOracle(SingleHead.random(2, seed=0), "uniform:1e-6", seed=0)
    with pytest.raises(InvalidArgument, match="no probe scales .* lower token_norm"):
        learn_noisy_frame(oracle, w_bound=w_bound, token_norm=token_norm)
    assert oracle.count == 0
    r = learn_noisy_frame(NoisyOracle(SingleHead.random(2, seed=0), "uniform:1e-6", seed=0), w_bound=w_bound)
    assert math.isfinite(r.error_bound.W_frobenius)  # the default R leaves scales, and a finite bound


def test_every_annotation_of_the_noisy_learners_modules_evaluates():
    """Postponed annotations are evaluated only by their readers (typing.get_type_hints, documentation tools)."""
    from hints import assert_annotations_evaluate

    from exact.learn import noisy, noisy_frame, noisy_refine

    assert assert_annotations_evaluate(noisy, noisy_frame, noisy_refine) > 20


@pytest.mark.parametrize("learn", [learn_noisy, learn_noisy_frame])
def test_the_noisy_learners_take_their_options_by_keyword_only(learn):
    """A positional 2 is refused, not read as 𝒲: the options are keyword-only, as everywhere in the library."""
    oracle = NoisyOracle(SingleHead.random(2, seed=0), "uniform:1e-6", seed=0)
    with pytest.raises(TypeError):
        learn(oracle, 2)
    assert oracle.count == 0
    with pytest.raises(TypeError):
        learn(oracle=oracle, w_bound=2, token_norm=1, bogus=1)


def test_a_row_whose_scale_is_not_certified_gets_no_bound_of_its_own():
    """A frame row k is decoded with a bound only when ``|v̂ᵀu_k|`` is certified above its error,
    strictly: at or below it, the sign of ``vᵀu_k`` is unknown and the row gets none (its columns
    then take the 2𝒲 cap), whatever its answers say."""
    from exact.learn.noisy_frame import combine, decode_rows

    truth = SingleHead([[1, "-1/2"], [0, "1/4"]], [1, "-3/4"])
    v, tau = [Fraction(1), Fraction(-3, 4)], [Fraction(1, 10**9)] * 2
    plan = FramePlan.make(v, tau, w_bound=2, token_norm=1, tau=1e-9)
    values = [Fraction(float(truth.float(x.dense()))) for x in plan.sequences()]
    errors = [Fraction(1, 10**9)] * len(values)
    s, e = plan.sums(v, tau)
    assert all(abs(x) > y for x, y in zip(s, e))
    T, E = decode_rows(plan, s, e, v, tau, values, errors)
    assert all(x is not None for row in E for x in row)  # both rows certified: every entry bounded
    assert np.isfinite(combine(plan, T, E)[1]).all()
    for spread in (abs(s[0]), 2 * abs(s[0])):  # at and below the error
        T2, E2 = decode_rows(plan, s, [spread, e[1]], v, tau, values, errors)
        assert E2[0] == [None, None] and all(x is not None for x in E2[1])
        assert all(t.is_finite() for row in T2 for t in row)
        assert np.isinf(combine(plan, T2, E2)[1]).all()  # every column holds row 0: no finite bound


def test_the_bound_of_a_minimum_of_two_balls_ends_at_the_smaller_upper_end():
    """``_arb_min(x, y)``, the bound of a probe that takes the smaller of two bounds, is an upper
    bound of ``min(a, b)`` for every ``a`` in ``x`` and ``b`` in ``y``, and no larger than it must be:
    it ends at the smaller of the two upper ends (rounded up to float64), also when the balls overlap."""
    from flint import arb

    from exact.learn.noisy import _arb_min
    from exact.numbers import ball_interval

    cases = [(arb(1), arb(2)), (arb(1.5, 0.5), arb(2.5, 0.5)), (arb(2, 1), arb(2.5, 0.25)), (arb(3), arb(3)),
             (arb(1, 0.25), arb(4, 1)), (arb(1) / 3, arb(2) / 7)]
    for x, y in cases + [(y, x) for x, y in cases]:
        hi = min(ball_interval(x)[1], ball_interval(y)[1])
        _, hi_m = ball_interval(_arb_min(x, y))
        assert hi <= hi_m <= hi * (1 + Fraction(1, 2**52)), (x, y, hi_m)
