"""Float mode of the multi-head learner (the sweep): every result is refused or within its stated estimate.

The measured error is computed here, from the true model's canonical form, never from the
learner's own numbers: the learned heads are matched one to one with the canonical true heads
(the best of all matchings) and the largest entry error of W and v is taken.  A result with
another number of heads than the truth's canonical form (heads merged or missing) has an
infinite error: it must be refused.
"""

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, MultiHead, learn_multi_head
from exact.canonical import canonical_form
from exact.errors import PrecisionInsufficient
from exact.errors import OracleInconsistent
from exact.learn.multi_head import FLOAT_RESOLUTION
from exact.oracles import FloatOracle

F = Fraction

#: Three heads in d = 1 with W = 3/4, −3/8, 5/8 (v = 1 each): every head's step on a line lies at one centre.
REPRODUCER = MultiHead([([["3/4"]], [1]), ([["-3/8"]], [1]), ([["5/8"]], [1])], d=1)


def matched_error(learned: MultiHead, truth: MultiHead) -> float:
    """The largest entry error of W and v over the best one-to-one matching of the learned heads
    with the canonical true heads; infinite when the numbers of heads differ."""
    T = [h.to_numpy() for h in canonical_form(truth).heads]
    L = [h.to_numpy() for h in learned.heads]
    if len(T) != len(L):
        return float("inf")
    return min(
        (max((max(float(np.max(np.abs(T[t][0] - L[p[t]][0]))), float(np.max(np.abs(T[t][1] - L[p[t]][1]))))
              for t in range(len(T))), default=0.0)
         for p in itertools.permutations(range(len(L)))),
        default=0.0,
    )


def test_the_error_measure_on_known_pairs():
    truth = MultiHead([([[1]], [2]), ([[F(9, 8)]], [3])], d=1)
    assert matched_error(MultiHead([([[F(9, 8)]], [3]), ([[1]], [F(5, 2)])], d=1), truth) == 0.5  # order is free
    assert matched_error(MultiHead([([[F(9, 8)]], [3]), ([[F(5, 4)]], [2])], d=1), truth) == 0.25
    assert matched_error(MultiHead([([[1]], [5])], d=1), truth) == float("inf")  # merged: never within an estimate
    # a list that is not canonical is not the canonical form, though it has the same map
    assert matched_error(MultiHead([([[1]], [2]), ([[0]], [0]), ([[F(9, 8)]], [3])], d=1), truth) == float("inf")


def instances(n: int, seed: int) -> list:
    """``n`` seeded small instances: d = 2..3, H = 2..4, heads random, on a grid of eighths, or close
    (one base W plus steps of 1/4 down to 1/64), each with its probe seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d, H = rng.randint(2, 3), rng.randint(2, 4)
        kind = rng.choice(("random", "grid", "close"))
        if kind == "random":
            model = MultiHead.random(d, H, seed=rng.randrange(10**6))
        else:
            base = [[F(rng.randint(-8, 8), 8) for _ in range(d)] for _ in range(d)]
            heads = []
            for _ in range(H):
                if kind == "grid":
                    W = [[F(rng.randint(-8, 8), 8) for _ in range(d)] for _ in range(d)]
                else:
                    step = F(1, 2 ** rng.randint(2, 6))
                    W = [[x + step * rng.randint(-3, 3) for x in row] for row in base]
                v = [F(rng.choice((-4, -3, -2, -1, 1, 2, 3, 4)), rng.choice((1, 2, 4))) for _ in range(d)]
                heads.append((W, v))
            model = MultiHead(heads, d=d)
        out.append((model, H, rng.randrange(1000)))
    return out


def sweep(cases) -> dict:
    """Learn every case in float mode from a float oracle and from an exact one: count refusals,
    acceptances, and the worst ratio of measured error to stated estimate."""
    figures = {"instances": 0, "refused": 0, "accepted": 0, "worst_ratio": 0.0, "violations": []}
    for model, H, seed in cases:
        for oracle in (FloatOracle(model), ExactOracle(model)):
            figures["instances"] += 1
            try:
                result = learn_multi_head(oracle, heads=H, mode="float", seed=seed)
            except PrecisionInsufficient:
                figures["refused"] += 1
                continue
            figures["accepted"] += 1
            error = matched_error(result.model, model)  # infinite for heads merged or missing
            ratio = error / result.error_estimate
            figures["worst_ratio"] = max(figures["worst_ratio"], ratio)
            if not error <= result.error_estimate:
                figures["violations"].append((model, H, seed, type(oracle).__name__, error, result.error_estimate))
    return figures


def test_d_1_without_biases_is_refused_with_its_reason():
    """In d = 1 every head's step on a line has the centre −q₀/e: the lines cannot separate them."""
    for oracle in (FloatOracle(REPRODUCER), ExactOracle(REPRODUCER)):
        with pytest.raises(PrecisionInsufficient, match="d = 1"):
            learn_multi_head(oracle, heads=3, mode="float", seed=5)
    assert FloatOracle(REPRODUCER).count == 0


def test_float_sweep_holds_its_estimate_or_refuses():
    """6 seeded instances, each from a float and an exact oracle: refused, or within the estimate."""
    figures = sweep(instances(6, seed=0))
    assert figures["instances"] == 12 and figures["accepted"] >= 6, figures
    assert figures["violations"] == [] and figures["worst_ratio"] <= 1, figures


def test_a_head_bound_below_the_truth_is_an_error():
    """Lines fitted by one step more than the bound, and not by the bound: the bound is refuted."""
    truth = MultiHead.random(3, 3, seed=4)
    with pytest.raises(OracleInconsistent, match="fitted by 3 steps and not by 2: the model has more than H = 2 canonical"):
        learn_multi_head(FloatOracle(truth), heads=2, mode="float", seed=1)


def test_a_float_result_states_the_class_it_rests_on():
    truth = MultiHead.random(2, 2, seed=1)
    result = learn_multi_head(FloatOracle(truth), heads=2, mode="float", seed=1)
    assert result.model.H == 2 and result.verification_queries > 0
    assert "among sums of at most 2 softmax heads without biases" in result.assumptions
    assert FLOAT_RESOLUTION in result.assumptions
    assert matched_error(result.model, truth) <= result.error_estimate < 1e-8


@pytest.mark.slow
def test_float_sweep_holds_its_estimate_or_refuses_at_scale():
    figures = sweep(instances(100, seed=1))
    assert figures["instances"] == 200 and figures["accepted"] >= 100, figures
    assert figures["violations"] == [] and figures["worst_ratio"] <= 1, figures


def _with_c(model: MultiHead, head: int, k: int, size: float) -> MultiHead:
    from exact.models import SingleHead

    heads = []
    for h, hd in enumerate(model.heads):
        c = [Fraction(0)] * model.d
        if h == head:
            c[k] = Fraction(size)
        heads.append(SingleHead(hd.W, hd.v, c=c))
    return MultiHead(heads, d=model.d)


def test_a_bias_free_learn_covers_a_score_bias_too_small_to_refuse():
    """Without biases the model returns c = 0; a truth with a score bias below the refusal
    threshold (8× the offsets' errors) must still lie within the estimate, which counts |ĉ| + e_c."""
    from exact.canonical import float_error

    m = MultiHead.random(4, 2, seed=2)
    est0 = learn_multi_head(FloatOracle(m), heads=2, mode="float", seed=2).error_estimate
    returned = 0
    for kap in (2, 4, 6):
        truth = _with_c(m, 1, 1, kap * est0)
        try:
            r = learn_multi_head(FloatOracle(truth), heads=2, mode="float", seed=2)
        except OracleInconsistent as e:
            assert "biases=True" in str(e)
            continue
        assert float_error(r.model, truth) <= r.error_estimate
        returned += 1
    assert returned  # at least one bias below the threshold came back, within the estimate
    with pytest.raises(OracleInconsistent, match="biases=True"):
        learn_multi_head(FloatOracle(_with_c(m, 1, 1, 24 * est0)), heads=2, mode="float", seed=2)


def test_a_bias_free_learn_covers_an_output_bias_too_small_to_refuse():
    from exact.canonical import float_error

    m = MultiHead.random(2, 3, seed=1)
    est0 = learn_multi_head(FloatOracle(m), heads=3, mode="float", seed=1).error_estimate
    truth = MultiHead(m.heads, d=2, b=Fraction(2 * est0))
    r = learn_multi_head(FloatOracle(truth), heads=3, mode="float", seed=1)
    assert float_error(r.model, truth) <= r.error_estimate


def test_a_head_no_line_resolves_is_refused_by_the_one_token_slopes():
    """A head whose score bias keeps its steps beyond every window is missing from the heads
    found; V = Σ v_h then misses the one-token answers' slopes, and the sweep refuses."""
    m = MultiHead.random(2, 2, seed=3, biases=True)
    big = [Fraction(60) * x for x in m.heads[0].c]
    from exact.models import SingleHead

    truth = MultiHead([SingleHead(m.heads[0].W, m.heads[0].v, c=big), m.heads[1]], d=2, b=m.b)
    with pytest.raises(PrecisionInsufficient, match="a head no line resolved"):
        learn_multi_head(FloatOracle(truth), heads=2, mode="float", seed=3, biases=True, checks=0)


@pytest.mark.parametrize("batched", [False, True])
def test_a_model_answering_exactly_zero_is_refused_as_showing_no_step(batched):
    from exact.oracles import CallableOracle

    f = (lambda X: np.zeros(len(X))) if batched else (lambda X: 0.0)
    oracle = CallableOracle(f, d=3, accuracy=0, batched=batched)
    with pytest.raises(PrecisionInsufficient, match="no head shows a step"):
        learn_multi_head(oracle, heads=2, mode="float", seed=0, biases=batched)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the overflows the refusal reports
def test_values_near_the_float64_limit_are_refused_not_crashed():
    from exact.models import SingleHead

    g = np.random.default_rng(4100)
    heads = [SingleHead(g.normal(size=(2, 2)).tolist(), (g.normal(size=2) * 1e300).tolist()) for _ in range(2)]
    with pytest.raises(PrecisionInsufficient):
        learn_multi_head(FloatOracle(MultiHead(heads)), heads=2, mode="float", seed=0)


@pytest.mark.parametrize("d, biases", [(1, False), (1, True), (3, False), (3, True)])
def test_a_single_head_is_learned_with_heads_1(d, biases):
    """H = 1: one step per line, d = 1 included (nothing to separate), within the estimate."""
    truth = MultiHead.random(d, 1, seed=3, biases=biases)
    for oracle in (FloatOracle(truth), ExactOracle(truth)):
        r = learn_multi_head(oracle, heads=1, mode="float", biases=biases, seed=0)
        assert r.model.H == 1 and matched_error(r.model, truth) <= r.error_estimate < 1e-8
        if biases:
            assert abs(float(r.model.b - truth.b)) <= r.error_estimate


def test_two_heads_in_d_1_are_not_returned_as_one():
    """d = 1 without biases and heads=1 against two heads: the lines show two steps (the bound refuted),
    or no pilot line fits one step; never one head returned."""
    with pytest.raises(OracleInconsistent, match="more than H = 1 canonical heads"):
        learn_multi_head(FloatOracle(MultiHead.random(1, 2, seed=0)), heads=1, mode="float", seed=0)
    truth = MultiHead([([["3/4"]], [1]), ([["-3/8"]], [2])], d=1)
    with pytest.raises(PrecisionInsufficient, match="no pilot line"):
        learn_multi_head(FloatOracle(truth), heads=1, mode="float", seed=0)


def _bump_model(seed: int, big: float = 1e4, dw: float = 1.0) -> MultiHead:
    """Two heads of large W (about ``big``) and opposite v whose W differ by O(dw), and one ordinary
    head: on every line the pair makes a bump narrower than the line's sampling."""
    g = np.random.default_rng(seed)
    A, B, D = g.normal(size=(2, 2)), g.normal(size=(2, 2)), g.normal(size=(2, 2))
    v, v3 = g.normal(size=2), g.normal(size=2)

    def head(W, v):
        return ([[Fraction(float(x)) for x in r] for r in W], [Fraction(float(x)) for x in v])

    return MultiHead([head(big * A, v), head(big * A + dw * D, -v), head(B, v3)], d=2)


def test_heads_no_sample_shows_are_stated_when_fewer_heads_than_the_bound_come_back():
    """A pair of cancelling heads whose steps fall between every line's samples leaves every answer
    asked as it would be without them (found by an adversarial review): no finite sampling excludes
    it, so a result with fewer heads than the bound says so; with the bound met there is no room."""
    from exact.learn.multi_head import hidden_heads

    truth = _bump_model(0)
    assert canonical_form(truth).H == 3
    r = learn_multi_head(FloatOracle(truth), heads=3, mode="float", seed=1, check_seed=0)
    assert r.model.H == 1 and hidden_heads(1, 3) in r.assumptions  # the pair is missing, and that is said
    assert "up to 2 more heads that no sampled answer shows" in hidden_heads(1, 3)
    full = learn_multi_head(FloatOracle(MultiHead.random(2, 2, seed=1)), heads=2, mode="float", seed=1, check_seed=0)
    assert full.model.H == 2 and not any("no sampled answer shows" in a for a in full.assumptions)
