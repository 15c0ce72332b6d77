"""Noise models and noisy oracles: every answer within the declared bound, seeded, counted."""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, FloatOracle, SingleHead
from exact.errors import InvalidArgument, OracleInconsistent
from exact.noise import Adversarial, FloatFormat, NoisyOracle, Round, Uniform, parse_noise
from exact.numbers import ball_interval
from exact.oracles import FloatAnswer
from exact.sequences import Sequence

SPECS = ["uniform:1e-3", "uniform:0", "round:4", "round:0", "float32", "float16", "adversarial:1e-6"]


def _queries(d: int, n: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [Sequence.from_rows(rng.integers(-3, 4, size=(int(rng.integers(1, 5)), d)).tolist()) for _ in range(n)]


def _distance(answer, truth: SingleHead, X) -> tuple[Fraction, Fraction]:
    """Rigorous bounds on |answer − f(X)|."""
    lo, hi = ball_interval(truth.exact(X).ball(200))
    y = Fraction(float(answer))
    return max(y - hi, lo - y, Fraction(0)), max(abs(y - lo), abs(y - hi))


@pytest.mark.parametrize("spec", SPECS)
def test_every_answer_is_within_the_declared_bound(spec):
    truth = SingleHead.random(3, seed=5)
    oracle = NoisyOracle(truth, spec, seed=1)
    queries = _queries(3, 40, seed=2)
    answers = oracle.query_batch(queries)
    assert oracle.count == 40 and len(oracle.transcript) == 40
    for X, y in zip(queries, answers):
        assert type(y) is FloatAnswer
        at_least, _ = _distance(y, truth, X)
        assert at_least <= oracle.error_bound(y)


def test_uniform_noise_is_seeded_and_spreads_over_the_interval():
    truth = SingleHead.random(2, seed=3)
    queries = _queries(2, 200, seed=4)
    a = NoisyOracle(truth, "uniform:1e-2", seed=7).query_batch(queries)
    b = NoisyOracle(truth, "uniform:1e-2", seed=7).query_batch(queries)
    c = NoisyOracle(truth, "uniform:1e-2", seed=8).query_batch(queries)
    assert [float(x) for x in a] == [float(x) for x in b] != [float(x) for x in c]
    etas = [float(y) - float(truth.exact(X).ball(100).mid()) for X, y in zip(queries, a)]
    assert max(etas) > 0.008 and min(etas) < -0.008  # it uses the whole of [−τ, τ]
    assert max(map(abs, etas)) <= 0.01 + 1e-15


def test_rounding_noise_answers_the_rounded_decimal():
    truth = SingleHead([[1, 0], [0, 1]], ["1/3", "-2/7"])
    o = NoisyOracle(truth, "round:4")
    y = o.query([[1, 0]])
    assert float(y) == 0.3333 and o.accuracy == Fraction(1, 20000)
    assert float(o.query([[0, 1]])) == -0.2857
    assert float(NoisyOracle(truth, "round:0").query([[3, 0]])) == 1.0


@pytest.mark.parametrize("fmt, dtype", [("float32", np.float32), ("float16", np.float16)])
def test_float_format_noise_answers_values_of_that_format(fmt, dtype):
    truth = SingleHead.random(3, seed=9)
    o = NoisyOracle(truth, fmt)
    for y in o.query_batch(_queries(3, 30, seed=1)):
        assert float(dtype(float(y))) == float(y)
    assert o.rtol > Fraction(1, 2 ** (24 if fmt == "float32" else 11))


def test_the_default_adversary_is_a_constant_bias_and_a_strategy_must_stay_within_tau():
    truth = SingleHead([[0]], [1])
    o = NoisyOracle(truth, "adversarial:1/8")
    assert float(o.query([[1]])) == 1.125
    calls = []

    def minus(index, X, clean, tau):
        calls.append(index)
        return -tau

    o = NoisyOracle(truth, Adversarial(Fraction(1, 8), minus))
    assert [float(y) for y in o.query_batch([[[1]], [[2]]])] == [0.875, 1.875] and calls == [0, 1]
    cheat = NoisyOracle(truth, Adversarial(Fraction(1, 8), lambda i, X, c, t: 2 * t))
    with pytest.raises(OracleInconsistent, match=r"outside \[−τ, τ\]"):
        cheat.query([[1]])


def test_an_approximate_inner_oracle_adds_its_own_error():
    truth = SingleHead.random(2, seed=1)
    inner = FloatOracle(truth, accuracy="1e-9")
    o = NoisyOracle(inner, "uniform:1e-6", seed=0)
    X = [[1, 2], [0, 1]]
    y = o.query(X)
    assert y.error >= 1e-9 and o.error_bound(y) >= Fraction(1, 10**6) + Fraction(1, 10**9)
    assert _distance(y, truth, Sequence.from_rows(X))[0] <= o.error_bound(y)
    assert inner.count == 1 and o.count == 1
    exact = NoisyOracle(ExactOracle(truth), "uniform:1e-6", seed=0)
    y = exact.query(X)
    assert y.error <= 2.0**-53 * abs(y) + 1e-40  # only the float64 rounding and the enclosure


@pytest.mark.parametrize(
    "spec, message",
    [
        ("uniform:-1e-3", r"uniform:τ: expected a noise level τ >= 0"),
        ("round:-1", r"round:k: expected an integer number of decimals 0 <= k <= 300"),
        ("round:1.5", r"round:k: expected an integer number of decimals, got '1.5'"),
        ("round:x", r"round:k: expected an integer, 'p/q' or decimal string"),
        ("uniform:nan", r"uniform:τ: expected an integer"),
        ("gauss:1", r"noise: expected one of uniform:TAU, round:K, float32, float16, adversarial:TAU"),
        ("float32:1", r"noise: expected one of"),
        ("uniform", r"noise: expected one of"),
        (7, r"noise: expected a spec string such as 'uniform:1e-6', got int"),
    ],
)
def test_bad_noise_specs_are_refused_clearly(spec, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_noise(spec)


def test_specs_round_trip_and_objects_pass_through():
    for spec in ["uniform:1e-06", "round:6", "float32", "float16", "adversarial:0.001", "uniform:1/3"]:
        assert parse_noise(spec).spec == spec
    noise = Uniform(Fraction(1, 10))
    assert parse_noise(noise) is noise and Round(2).accuracy == Fraction(1, 200)
    with pytest.raises(InvalidArgument):
        FloatFormat("bfloat8")


def test_bad_inner_oracles_and_seeds_are_refused():
    with pytest.raises(InvalidArgument, match="inner: expected an oracle or a model"):
        NoisyOracle(object(), "uniform:1e-3")
    with pytest.raises(InvalidArgument, match="seed: expected a non-negative integer"):
        NoisyOracle(SingleHead([[1]], [1]), "uniform:1e-3", seed=-1)


def test_a_budget_counts_noisy_queries():
    from exact.errors import QueryBudgetExceeded

    o = NoisyOracle(SingleHead([[1]], [1]), "round:2", budget=2)
    o.query_batch([[[1]], [[2]]])
    with pytest.raises(QueryBudgetExceeded):
        o.query([[3]])
