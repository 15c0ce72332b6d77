"""Pilot and refine: 2(d² + d) queries, a certified bound that holds and never exceeds the pilot's."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from exact import CallableOracle, FloatOracle, NoisyOracle, SingleHead, learn_noisy_frame, learn_noisy_refine, registry
from exact.errors import InvalidArgument, InvalidNumber, OracleInconsistent
from exact.learn import learn_threshold
from exact.learn.adversary import adversary
from exact.learn.noisy_refine import refine_query_count
from exact.noise import Adversarial
from test_cli import run

NOISES = ["uniform:1e-4", "uniform:1e-8", "round:6", "float32", "adversarial:1e-6"]


def _errors(result, truth):
    W, v = (np.array(x, dtype=float) for x in result.model.to_numpy())
    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    return np.linalg.norm(W - Wt), np.abs(W - Wt).max(), np.linalg.norm(v - vt), np.abs(v - vt).max()


def _within(result, truth) -> bool:
    fro, mx, vn, vm = _errors(result, truth)
    b = result.error_bound
    return fro <= b.W_frobenius and mx <= b.W_max and vn <= b.v_norm and vm <= b.v_max


@pytest.mark.parametrize("noise", NOISES)
@pytest.mark.parametrize("d", [1, 2, 5])
def test_the_bound_holds_and_the_count_is_twice_the_frame_learners(noise, d):
    for seed in range(3):
        truth = SingleHead.gaussian(d, seed=seed)
        oracle = NoisyOracle(truth, noise, seed=seed)
        r = learn_noisy_refine(oracle, w_bound=2, token_norm=1)
        assert r.queries == oracle.count == refine_query_count(d) == 2 * (d * d + d)
        assert not r.exact and r.certificate is None and r.max_length == 2
        assert _within(r, truth), (noise, seed, _errors(r, truth), r.error_bound)
        assert r.error_bound.W_frobenius <= r.details["pilot_W_frobenius"] * (1 + 1e-9)


@pytest.mark.parametrize("w_bound", [2, 8])
def test_refining_tightens_the_bound_most_when_the_ball_is_large(w_bound):
    ratios = []
    for seed in range(4):
        truth = SingleHead.gaussian(8, seed=seed, w_frobenius=w_bound)
        frame = learn_noisy_frame(NoisyOracle(truth, "uniform:1e-6", seed=seed), w_bound=w_bound, token_norm=1)
        refine = learn_noisy_refine(NoisyOracle(truth, "uniform:1e-6", seed=seed), w_bound=w_bound, token_norm=1)
        assert _within(refine, truth)
        # the pilot is the frame learner: same probes, same answers (same seed), same bound
        assert refine.details["pilot_W_frobenius"] == pytest.approx(frame.error_bound.W_frobenius, rel=1e-12)
        ratios.append(frame.error_bound.W_frobenius / refine.error_bound.W_frobenius)
    assert min(ratios) >= (1.5 if w_bound == 2 else 3.5), ratios


def test_every_token_stays_within_the_budget():
    truth = SingleHead.gaussian(4, seed=3, w_frobenius=8)
    for R in (Fraction(1), Fraction(1, 3), Fraction(5, 2)):
        oracle = NoisyOracle(truth, "uniform:1e-6", seed=1)
        r = learn_noisy_refine(oracle, w_bound=8, token_norm=R)
        norms = [math.sqrt(sum(float(x) ** 2 for x in row)) for q in oracle.transcript for row in q.X.dense()]
        assert max(norms) <= float(R) * (1 + 1e-12) and _within(r, truth)


def test_the_probes_are_float64_numbers_so_a_float64_box_gets_the_bound_it_is_promised():
    truth = SingleHead.gaussian(6, seed=4, w_frobenius=8)
    oracle = FloatOracle(truth)
    r = learn_noisy_refine(oracle, w_bound=8, token_norm=1)
    for q in oracle.transcript:
        for row in q.X.dense():
            assert all(Fraction(float(x)) == x for x in row)
    assert _within(r, truth) and r.error_bound.W_frobenius < 1e-10


def test_a_head_whose_v_is_below_the_noise_gets_bounds_that_hold():
    truth = SingleHead([[1, "1/2"], ["-1/4", 1]], ["1e-9", "-2e-9"])
    r = learn_noisy_refine(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2, token_norm=1)
    assert _within(r, truth)
    assert r.error_bound.W_max > 1  # W is invisible through so small a v: no finite small bound is claimed
    for learner in (learn_noisy_frame, learn_noisy_refine):
        r = learner(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2, token_norm=1)
        # Ŵ and W both lie in the ball ‖·‖_F <= 𝒲: never a Frobenius bound above its diameter 2𝒲
        assert _within(r, truth) and 2 < r.error_bound.W_frobenius <= 4 * (1 + 2.0**-39), r.error_bound


def _liar(truth, *, honest: int, offset: float, tau: float = 1e-8):
    """Answers within ±τ for the first ``honest`` queries, then off by ``offset`` (declared: τ)."""
    state = {"n": 0}

    def f(X):
        state["n"] += 1
        return float(truth.float(X)) + (offset if state["n"] > honest else 0.0)

    return CallableOracle(f, d=truth.d, accuracy=tau)


@pytest.mark.parametrize("honest_part", ["sums", "refine"])
def test_a_second_half_that_breaks_its_declared_bound_is_refused(honest_part):
    truth = SingleHead.gaussian(3, seed=1)
    d = truth.d
    honest = d * d + d if honest_part == "sums" else 2 * d + d * d
    oracle = _liar(truth, honest=honest, offset=1e-2)
    with pytest.raises(OracleInconsistent, match="declared error|certified bounds|first pass"):
        learn_noisy_refine(oracle, w_bound=2, token_norm=1)


def test_bad_options_are_refused():
    truth = SingleHead.gaussian(2, seed=0)
    for kwargs, pattern in (({"w_bound": 0}, "w_bound"), ({"w_bound": -1}, "w_bound"),
                            ({"w_bound": 2, "token_norm": 0}, "token_norm"), ({"w_bound": float("nan")}, "w_bound: expected a finite")):
        with pytest.raises((InvalidArgument, InvalidNumber), match=pattern):
            learn_noisy_refine(NoisyOracle(truth, "uniform:1e-6", seed=0), **kwargs)


def test_the_frame_adversary_plays_the_shared_first_half():
    truth = SingleHead.gaussian(4, seed=2)
    tau = Fraction(1, 10**6)
    spec = registry.get("noisy-refine")
    assert spec.adversary is not None and spec.query_count(4) == 40 and spec.count_formula == "2(d² + d)"
    r = learn_noisy_refine(NoisyOracle(truth, Adversarial(tau, spec.load_adversary()(truth, tau=tau, w_bound=2, token_norm=1))),
                           w_bound=2, token_norm=1)
    frame = learn_noisy_frame(NoisyOracle(truth, Adversarial(tau, adversary(truth, "frame", tau=tau, w_bound=2,
                                                                             token_norm=1))), w_bound=2, token_norm=1)
    assert _within(r, truth) and _within(frame, truth)
    assert r.details["pilot_W_frobenius"] == pytest.approx(frame.error_bound.W_frobenius, rel=1e-12)


def test_threshold_bits_then_refine():
    truth = SingleHead.gaussian(3, seed=0)
    r = learn_threshold(truth, epsilon="1e-5", v_bound=10, w_bound=2, token_norm=1, learner="refine")
    assert r.queries == 24 and r.details["prior_misses"] == 0 and _within(r, truth)
    with pytest.raises(InvalidArgument, match="'frame', 'paper' or 'refine'"):
        learn_threshold(truth, epsilon="1e-5", v_bound=10, w_bound=2, learner="nope")


@pytest.mark.parametrize("noise", ["uniform:1e-6", "adversarial:1e-6"])
def test_the_command_line_runs_the_refining_learner(capsys, tmp_path, noise):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SingleHead.gaussian(4, seed=2, w_frobenius=8).to_json()))
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--noise", noise, "--learner", "refine",
                       "--w-bound", 8, "--token-norm", 1, "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == "noisy-refine" and result["queries"] == 40 and result["within_bound"] is True


def test_a_noisy_black_box_gets_the_frame_learner_by_default(capsys, tmp_path):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(SingleHead.gaussian(3, seed=1).to_json()))
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--noise", "uniform:1e-6", "--w-bound", 2,
                       "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == "noisy-frame" and result["queries"] == 12 and result["within_bound"] is True


@pytest.mark.parametrize("learner", [learn_noisy_frame, learn_noisy_refine])
@pytest.mark.parametrize("d, w_bound, token_norm, noise", [
    (2, 5e4, None, "uniform:1e-6"),  # a pilot that would pick a saturated logit scale
    (1, 5e4, None, "uniform:1e-6"),
    (2, 1e-5, None, "uniform:1e-6"),  # default R = 1/2 + 1/𝒲 = 1e5
    (2, 100, 10, "uniform:0.1"),
    (1, 10, 100, "uniform:1e-6"),
    (2, 2, 1e8, "uniform:1e-6"),
    (3, 1e4, None, "float32"),
])
def test_extreme_scales_give_bounds_that_hold(learner, d, w_bound, token_norm, noise):
    """Scales where every probe saturates: the logit scale stays below 40, the clipping range
    stays positive, and the bound (at worst the trivial 2𝒲) holds."""
    truth = SingleHead.gaussian(d, seed=1, w_frobenius=w_bound / 2)
    r = learner(NoisyOracle(truth, noise, seed=0), w_bound=w_bound, token_norm=token_norm)
    assert 0 <= r.error_bound.W_max <= r.error_bound.W_frobenius <= 2 * w_bound * (1 + 1e-9)
    assert _within(r, truth)


@pytest.mark.parametrize("learner", [learn_noisy_frame, learn_noisy_refine])
@pytest.mark.parametrize("w_bound, token_norm, noise", [(100, "1/1000", "uniform:1e-6"), (100, 10, "uniform:0.1"),
                                                        (10000, 10, "uniform:1e-6")])
def test_every_budget_sends_float64_probes(learner, w_bound, token_norm, noise):
    """β far above γ (saturated probes) once needed 54-bit entries: β is now kept below 2^6·γ's scale."""
    truth = SingleHead.gaussian(2, seed=1, w_frobenius=w_bound / 2)
    oracle = NoisyOracle(truth, noise, seed=0)
    learner(oracle, w_bound=w_bound, token_norm=token_norm)
    assert all(Fraction(float(x)) == x for q in oracle.transcript for row in q.X.dense() for x in row)


@pytest.mark.parametrize("value", [2**41, "1/2199023255553", 0])
def test_scales_outside_the_supported_range_are_refused(value):
    truth = SingleHead.gaussian(2, seed=1)
    with pytest.raises(InvalidArgument, match="w_bound"):
        learn_noisy_refine(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=value)


def test_a_larger_budget_never_makes_the_bound_trivial():
    """β is searched on log scales and within 2^6 of γ: the bound keeps shrinking as R grows."""
    truth = SingleHead.gaussian(3, seed=0)
    for learner in (learn_noisy_frame, learn_noisy_refine):
        bounds = [learner(NoisyOracle(truth, "uniform:1e-6", seed=0), w_bound=2, token_norm=R).error_bound.W_frobenius
                  for R in (1, 100, 10**6)]
        assert bounds[0] > bounds[1] > bounds[2] and bounds[2] < 1e-6


def test_the_smallest_ball_takes_the_default_budget_and_huge_values_are_refused_cleanly():
    tiny = SingleHead.gaussian(2, seed=0, w_frobenius=Fraction(1, 2**40))
    r = learn_noisy_frame(NoisyOracle(tiny, "uniform:1e-6", seed=0), w_bound=Fraction(1, 2**40))
    assert _within(r, tiny)
    for kwargs in ({"w_bound": 10**400}, {"w_bound": 2, "token_norm": "1e400"}):
        with pytest.raises(InvalidArgument, match="between 2\\^-40 and 2\\^40, got 1e\\+400"):
            learn_noisy_refine(NoisyOracle(tiny, "uniform:1e-6", seed=0), **kwargs)


def test_norms_of_tiny_bounds_do_not_underflow():
    from exact.learn.result import ErrorBound

    b = ErrorBound.from_entries([[5e-324, 3e-320]], [1e-170, 1e-170])
    assert b.W_frobenius >= 3e-320 and b.v_norm >= 1.4e-170


# --- the refined bound against the exact error, measured in rationals against the hidden truth ---

def _certified(result, truth):
    """Every certified bound is a nonnegative number at least the exact error (rationals, no rounding)."""
    b = result.error_bound
    dW = [abs(Fraction(a) - Fraction(t)) for ra, rb in zip(result.model.W, truth.W) for a, t in zip(ra, rb)]
    dv = [abs(Fraction(a) - Fraction(t)) for a, t in zip(result.model.v, truth.v)]
    for bound, err, squared in ((b.W_frobenius, sum(x * x for x in dW), True), (b.W_max, max(dW), False),
                                (b.v_norm, sum(x * x for x in dv), True), (b.v_max, max(dv), False)):
        assert bound >= 0, b
        if math.isfinite(bound):
            assert err <= (Fraction(bound) ** 2 if squared else Fraction(bound)), (float(err), b)
    assert b.W_max <= b.W_frobenius
    return b


def _sevenths(d, seed, v=None):
    rng = np.random.default_rng(seed)
    W = [[Fraction(int(x), 7 * d) for x in row] for row in rng.integers(-4, 5, (d, d))]
    return SingleHead(W, v if v is not None else [Fraction(int(x), 3) for x in rng.choice([-4, -2, 2, 5], d)])


def _at(sign_of):
    return lambda i, X, clean, tau: tau if sign_of(i) else -tau


def test_an_exact_oracle_s_refined_bound_is_nonnegative_and_covers_the_rounding():
    from exact import ExactOracle

    for seed in range(3):
        for d in (1, 2, 3):
            truth = _sevenths(d, seed)
            r = learn_noisy_refine(ExactOracle(truth), w_bound=2, token_norm=1)
            b = _certified(r, truth)
            assert b.W_frobenius < 1e-14
            assert max(abs(Fraction(a) - t) for ra, rb in zip(r.model.W, truth.W) for a, t in zip(ra, rb)) > 0
        gauss = SingleHead.gaussian(3, seed=seed)
        _certified(learn_noisy_refine(ExactOracle(gauss), w_bound=2, token_norm=1), gauss)


@pytest.mark.parametrize("w_bound", [2, 8])
def test_noise_at_the_bound_never_beats_the_refined_bound(w_bound):
    """Every η at ±τ (constant, alternating, scrambled, and the frame adversary on the pilot)."""
    tau = Fraction(1, 10**5)
    spec = registry.get("noisy-refine")
    for seed in range(3):
        truth = SingleHead.gaussian(3, seed=seed, w_frobenius=w_bound) if seed % 2 else _sevenths(3, seed)
        strategies = [_at(lambda i: True), _at(lambda i: False), _at(lambda i: i % 2), _at(lambda i: (i * 7919) % 5 < 2)]
        if seed == 0:
            strategies.append(spec.load_adversary()(truth, tau=tau, w_bound=w_bound, token_norm=1))
        for strategy in strategies:
            r = learn_noisy_refine(NoisyOracle(truth, Adversarial(tau, strategy)), w_bound=w_bound, token_norm=1)
            _certified(r, truth)
            assert r.error_bound.W_frobenius <= r.details["pilot_W_frobenius"] * (1 + 1e-9)


@pytest.mark.parametrize("v", [[0, 1, 2], [2, "-1", 0], [1, 0, 0, "-2"], [0, 0, "3/2"], ["-5/4", 0]],
                         ids=lambda v: ",".join(map(str, v)))
def test_zero_coordinates_of_v_need_no_margin_in_either_pass(v):
    tau = Fraction(1, 10**6)
    for seed in range(2):
        truth = _sevenths(len(v), seed + 10, v=v)
        for oracle in (NoisyOracle(truth, "uniform:1e-6", seed=seed), NoisyOracle(truth, Adversarial(tau, _at(lambda i: i % 2)))):
            r = learn_noisy_refine(oracle, w_bound=2, token_norm=1)
            b = _certified(r, truth)
            assert b.W_frobenius < 1e-3 and b.W_frobenius <= r.details["pilot_W_frobenius"] * (1 + 1e-9)


def test_the_refining_pass_uses_larger_logit_scales_only_where_the_pilot_certified_small_t():
    """The pilot's scales are capped by |t_kj| <= ‖u_k‖·𝒲; refined, a probe whose t_kj is known to be
    small uses a larger logit scale, and its clipping range still holds the true logit."""
    truth = SingleHead.gaussian(3, seed=0, w_frobenius=8)
    oracle = NoisyOracle(truth, "uniform:1e-6", seed=0)
    r = learn_noisy_refine(oracle, w_bound=8, token_norm=1)
    pilot_beta = Fraction(oracle.transcript[3].X.dense()[1][0])  # the pilot's probe (0, 0): second token β e_0
    refined = [q for q in oracle.transcript[3 + 9 + 3:]]
    assert len(refined) == 9
    betas = [Fraction(max(abs(x) for x in q.X.dense()[1])) for q in refined]
    assert Fraction(r.details["max_logit_scale"]) > 0 and any(b != pilot_beta for b in betas)
    _certified(r, truth)
    assert r.details["learner"] == "refine" and r.details["token_norm"] == "1"
    assert r.assumptions == ("‖W‖_F <= w_bound = 8", "every answer within the oracle's declared error bound",
                             "among bias-free single heads")


def test_refine_keeps_the_pilot_s_scales_where_nothing_was_learned():
    """A row not certified (s <= its error) or an entry with no finite pilot bound keeps the pilot's scales."""
    from exact.learn.noisy import MAX_LOGIT
    from exact.learn.noisy_frame import FramePlan

    v = [Fraction(1), Fraction(-1, 2)]
    tau = [Fraction(1, 10**6)] * 2
    plan = FramePlan.make(v, tau, w_bound=8, token_norm=1, tau=1e-6)
    s, e = plan.sums(v, tau)
    same = plan.refine([[math.inf] * 2] * 2, s, e, tau, tau=1e-6)
    assert (same.beta, same.gamma, same.t_bound, same.prior) == (plan.beta, plan.gamma, plan.t_bound, "pilot")
    blind = plan.refine([[1e-3] * 2] * 2, s, [abs(x) for x in s], tau, tau=1e-6)  # no row certified
    assert (blind.beta, blind.gamma, blind.t_bound) == (plan.beta, plan.gamma, plan.t_bound)
    blinder = plan.refine([[1e-3] * 2] * 2, s, [2 * abs(x) for x in s], tau, tau=1e-6)  # s below its error
    assert (blinder.beta, blinder.gamma, blinder.t_bound) == (plan.beta, plan.gamma, plan.t_bound)
    loose = plan.refine([[float(plan.t_bound[0][0]) * 2] * 2] * 2, s, e, tau, tau=1e-6)  # no better than the prior
    assert (loose.beta, loose.gamma, loose.t_bound) == (plan.beta, plan.gamma, plan.t_bound)
    tight = plan.refine([[1e-3, math.inf], [1e-3, 1e-3]], s, e, tau, tau=1e-6)
    assert tight.t_bound[0][0] == Fraction(1e-3) and tight.t_bound[0][1] == plan.t_bound[0][1]
    assert tight.beta[0][0] * tight.gamma[0][0] > plan.beta[0][0] * plan.gamma[0][0]  # a larger logit scale
    assert (tight.beta[0][1], tight.gamma[0][1]) == (plan.beta[0][1], plan.gamma[0][1])
    assert tight.max_token_norm() <= 1
    for k in range(2):
        for j in range(2):
            # every probe keeps a factor 2 of headroom below the largest logit scale
            assert tight.beta[k][j] * tight.gamma[k][j] * tight.t_bound[k][j] <= MAX_LOGIT / 2
