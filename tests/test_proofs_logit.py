"""Tests for the symbolic proof of the logit primitive."""

import json
import random
from fractions import Fraction

import mpmath
import pytest
import sympy

from proofs import Proof, prove_logit_primitive
from proofs._symbolic import _is_identity, _sigmoid


@pytest.fixture(scope="module")
def proof() -> Proof:
    return prove_logit_primitive(dims=(1, 2, 3))


@pytest.fixture
def head_symbols():
    exp_s2, exp_l = sympy.symbols("E_s2 E_L", positive=True)
    value_b, value_u = sympy.symbols("B C")
    exp_s1 = exp_s2 * exp_l
    f = (exp_s1 * (value_b + value_u) + exp_s2 * value_b) / (exp_s1 + exp_s2)
    return f, exp_l, value_b, value_u


def test_proof_verifies(proof):
    assert isinstance(proof, Proof)
    assert proof.verified is True
    assert bool(proof)
    assert all(proof.details["checks"].values())
    assert proof.details["dims"] == [1, 2, 3]


def test_json_round_trip(proof):
    payload = proof.to_json()
    restored = json.loads(json.dumps(payload))
    assert restored == payload
    assert restored["verified"] is True
    assert restored["steps"] == list(proof.steps)
    assert restored["details"]["dims"] == [1, 2, 3]


def test_steps_mention_each_dimension(proof):
    for d in (1, 2, 3):
        mentions = [step for step in proof.steps if f"d={d}" in step]
        assert any("bilinearity" in step for step in mentions)
        assert any("sigma(L)" in step for step in mentions)


def test_str_reports_verdict_and_numbered_steps(proof):
    text = str(proof)
    assert "Verdict: verified" in text
    assert f"  {len(proof.steps)}. " in text


def test_dims_are_validated():
    with pytest.raises(ValueError):
        prove_logit_primitive(dims=(0,))
    with pytest.raises(ValueError):
        prove_logit_primitive(dims=(True,))


def test_checker_accepts_true_identity(head_symbols):
    f, exp_l, value_b, value_u = head_symbols
    assert _is_identity(f, value_b + _sigmoid(exp_l) * value_u)


@pytest.mark.parametrize(
    "wrong_rhs",
    [
        lambda e, b, c: b + _sigmoid(1 / e) * c,  # sigma(-L) instead of sigma(L)
        lambda e, b, c: b + _sigmoid(e) * 2 * c,  # doubled value gap
        lambda e, b, c: c + _sigmoid(e) * b,  # B and C swapped
    ],
)
def test_checker_rejects_wrong_identity(head_symbols, wrong_rhs):
    f, exp_l, value_b, value_u = head_symbols
    assert _is_identity(f, wrong_rhs(exp_l, value_b, value_u)) is False


def test_checker_refuses_exponentials():
    t = sympy.Symbol("t")
    with pytest.raises(ValueError):
        _is_identity(sympy.exp(t) / (1 + sympy.exp(t)), 1 / (1 + sympy.exp(-t)))


def _random_rational_vector(rng: random.Random, d: int) -> list[Fraction]:
    return [Fraction(rng.randint(-9, 9), rng.randint(1, 9)) for _ in range(d)]


def _dot(x, y):
    return sum(xi * yi for xi, yi in zip(x, y))


def _mpf(q: Fraction) -> mpmath.mpf:
    return mpmath.mpf(q.numerator) / q.denominator


def _random_head_values(seed: int, d: int = 3):
    """Return (f computed from the softmax, v^T b, v^T u, u^T W b) at 50 digits."""
    rng = random.Random(seed)
    w = [_random_rational_vector(rng, d) for _ in range(d)]
    v, u, b = (_random_rational_vector(rng, d) for _ in range(3))
    a = [bi + ui for bi, ui in zip(b, u)]

    def bilinear(x, y):
        return _dot(x, [_dot(row, y) for row in w])

    scores = [_mpf(bilinear(x, b)) for x in (a, b)]
    top = max(scores)
    weights = [mpmath.exp(s - top) for s in scores]
    f_direct = sum(wi * _mpf(_dot(v, x)) for wi, x in zip(weights, (a, b))) / sum(weights)
    return f_direct, _mpf(_dot(v, b)), _mpf(_dot(v, u)), _mpf(bilinear(u, b))


@pytest.mark.parametrize("seed", range(5))
def test_numeric_cross_check_mpmath(seed):
    with mpmath.workdps(50):
        f_direct, value_b, value_u, logit = _random_head_values(seed)
        f_primitive = value_b + mpmath.sigmoid(logit) * value_u
        assert abs(f_direct - f_primitive) < mpmath.mpf("1e-45")


@pytest.mark.parametrize("seed", range(5))
def test_numeric_inverse_recovers_logit(seed):
    with mpmath.workdps(50):
        f_direct, value_b, value_u, logit = _random_head_values(seed)
        assert value_u != 0
        alpha = (f_direct - value_b) / value_u
        # error in f of ~1e-45 is amplified by 1 / (|v^T u| alpha (1 - alpha))
        tolerance = mpmath.mpf("1e-44") / (abs(value_u) * alpha * (1 - alpha))
        assert abs(mpmath.log(alpha / (1 - alpha)) - logit) < tolerance
