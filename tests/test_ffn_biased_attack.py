"""The structured cases of the bias-free robustness suite, rebuilt with biases, each with its required
outcome: the learner of networks with biases (and the Transformer learner built on it) returns the
function, or refuses, or states the assumption a wrong function rests on; never a wrong function
without it, and its certificate never holds without what the result rests on."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest
from test_ffn_attack import _planted, _round_trip, _units

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import learn_ffn_biased, learn_transformer_biased
from exact.learn.ffn import PATH_SEED, at_most
from exact.learn.ffn_affine import HIDDEN_AFFINE
from exact.transformer import Transformer


def _biased(net: ReLUFFN, rng) -> ReLUFFN:
    """The same units with random offsets: a planted pattern keeps its shape, moved off the origin
    (a cancelled pair a, −a with offsets o, −o stays affine, so it still hides)."""
    a = [Fraction(int(rng.integers(-7, 8)), int(rng.integers(1, 4))) for _ in net.w]
    for i in range(1, len(net.w)):  # keep antipodal and parallel pairs' offsets paired, so they stay planted
        if [-x for x in net.A[i]] == list(net.A[i - 1]):
            a[i] = -a[i - 1]
    return ReLUFFN(net.A, net.w, a=a, b=Fraction(int(rng.integers(-9, 10)), 2))


def _stated(r, m, net=None) -> None:
    """What the result rests on is stated: "no hidden units" unless the check line proved every unit, and
    then (m at least the truth's units here) the function must be the network's."""
    assert PATH_SEED in r.assumptions and (m is None or at_most(m) in r.assumptions)
    seen = r.details["units_seen"]
    assert (HIDDEN_AFFINE in r.assumptions) != seen
    if seen and net is not None:
        assert r.details["function_form"] == net.function_form(), "all units seen, yet the function is wrong"


def _attack(cases: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    tally = {"cases": 0, "refused": 0, "right": 0, "right, all units seen": 0, "wrong, assumption stated": 0}
    for case in range(cases):
        d = int(rng.integers(1, 6))
        plain, kinds = _planted(rng, d, int(rng.integers(1, 8)))
        net = _biased(plain, rng)
        m = _units(net) + int(rng.integers(0, 2))
        tally["cases"] += 1
        try:
            r = learn_ffn_biased(ExactOracle(net), m=m, seed=int(rng.integers(2**62)), checks=0)
        except ExactAttentionError:
            tally["refused"] += 1
            continue
        _stated(r, m, net)
        right = r.details.function_form == net.function_form()
        tally["right"] += right
        tally["right, all units seen"] += right and r.details["units_seen"]
        tally["wrong, assumption stated"] += not right
        cert = _round_trip(r.certificate) if case % 2 == 0 else r.certificate
        assert cert.check().holds, f"case {case}: {kinds}: an honest certificate fails"
        for a in r.assumptions:
            if a in cert.assumptions:
                stripped = replace(cert, assumptions=tuple(x for x in cert.assumptions if x != a))
                assert not stripped.check().holds, f"case {case}: {kinds}: holds without {a!r}"
    return tally


def test_planted_structure_with_biases_is_right_refused_or_stated():
    tally = _attack(60, seed=205)
    assert tally["cases"] == 60
    assert tally["right"] >= 30  # most planted networks are found whole
    assert tally["right, all units seen"] >= 10  # and many of them proved whole
    assert tally["wrong, assumption stated"] >= 1  # a hidden pattern does come back wrong, with its assumption


@pytest.mark.slow
def test_planted_structure_with_biases_sweep_of_600_cases():
    tally = _attack(600, seed=206)
    print(tally)
    assert tally["cases"] == 600


E40 = Fraction(1, 2**40)
_EDGES = [
    # (network, m, the function must come back right)
    (ReLUFFN([[0, 0, 0], [1, 2, 3]], [5, 1], a=[2, -1], b=3), 2, True),  # a zero row: a constant unit, folded
    (ReLUFFN([[4, 4, 1], [1, 2, 3]], [0, 1], a=[1, 1], b=0), 2, True),  # a zero weight
    (ReLUFFN([[0, 0]], [0], a=[0], b=Fraction(7, 3)), 1, True),  # constant
    (ReLUFFN([[3]], [2], a=[-5], b=1), 1, True),  # d = 1
    (ReLUFFN([[3], [-2]], [1, 1], a=[1, 4], b=0), 2, True),  # d = 1, two kinks
    (ReLUFFN([[3], [-3]], [1, -1], a=[2, -2], b=0), 2, True),  # a cancelled pair: affine, and that is its function
    (ReLUFFN([[1, 0], [0, 1], [1, 1], [1, -1], [2, 1]], [1, -1, 2, 1, -3], a=[1, -1, 0, 2, -3], b=1), 5, True),
    (ReLUFFN([[1, 0], [1, 0], [0, 1]], [1, 1, 1], a=[0, -E40, 0], b=0), 3, True),  # parallel, 2^-40 apart: found
    (ReLUFFN([[2**300, 1, 3], [1, Fraction(1, 2**300), 7]], [Fraction(1, 2**200), 2**100], a=[2**290, 1], b=0), 2,
     True),  # huge and tiny entries
    (ReLUFFN([[1, 2, 3], [3, -1, 2]], [Fraction(1, 2**500), 1], a=[1, 1], b=-1), 2, True),
]


@pytest.mark.parametrize("net, m, right", _EDGES)
def test_edge_cases_with_biases(net, m, right):
    r = learn_ffn_biased(ExactOracle(net), m=m, seed=0, checks=0)
    assert (r.details.function_form == net.function_form()) is right
    _stated(r, m, net)
    assert _round_trip(r.certificate).check().holds


def test_a_tent_between_the_samples_comes_back_wrong_only_with_its_assumption():
    """Three parallel units whose kinks cancel outside a slab 2^-40 wide: the line's samples step over
    it (it is hidden); the result is then wrong, and says what it rests on."""
    e = E40
    net = ReLUFFN([[1, 0], [1, 0], [1, 0], [0, 1]], [1, -2, 1, 1], a=[e, 0, -e, 0], b=0)
    r = learn_ffn_biased(ExactOracle(net), m=4, seed=0, checks=0)
    assert r.details.function_form != net.function_form()
    _stated(r, 4, net)
    assert not r.details["units_seen"]


def test_m_below_the_truth_is_refused_or_stated():
    net = ReLUFFN.random(3, 5, seed=4, biases=True)
    try:
        r = learn_ffn_biased(ExactOracle(net), m=2, seed=0)
    except ExactAttentionError as e:
        assert "m = 2" in str(e) or "more than" in str(e)
    else:
        _stated(r, 2)


def test_the_transformer_with_biases_keeps_the_ffns_assumptions():
    rng = np.random.default_rng(7)
    for case in range(6):
        d = int(rng.integers(2, 4))
        plain, kinds = _planted(rng, d, int(rng.integers(2, 6)))
        net = _biased(plain, rng)
        T = Transformer.random(d, 1, seed=case, biases=True)
        block = Transformer(T.W, net.A, net.w, c=T.c, a=net.a, b=net.b)
        m = _units(net) + 1
        try:
            r = learn_transformer_biased(ExactOracle(block), m=m, seed=case)
        except ExactAttentionError:
            continue
        _stated(r, m)
        if r.details.function_form == block.ffn.function_form():
            assert r.model.canonical() == block.canonical(), f"case {case}: {kinds}"
