"""The one-layer Transformer: exact evaluation, the odd oracle, and the reduction learner."""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, FloatOracle
from exact.errors import NotIdentifiable, OracleInconsistent
from exact.expfield import ExpPoly
from exact.learn import learn_transformer
from exact.models import SingleHead
from exact.odd import OddOracle
from exact.transformer import Transformer, exp_sign


def test_exact_evaluation_matches_float_and_one_token_inputs_see_the_ffn():
    T = Transformer.random(4, 5, seed=1)
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 5):
        X = [[Fraction(int(x), 4) for x in rng.integers(-8, 9, size=4)] for _ in range(n)]
        exact = float(T.ball(X, prec=96).mid())
        assert exact == pytest.approx(T.float(X), rel=1e-12, abs=1e-12)
    x = [Fraction(1, 3), -2, 0, 1]
    assert T.exact([x]).as_rational() == T.ffn.value(x)


def test_the_odd_part_is_the_single_head_with_v_eff():
    T = Transformer.random(3, 4, seed=2)
    odd, head = OddOracle(ExactOracle(T)), ExactOracle(T.odd_head)
    rng = np.random.default_rng(1)
    for n in (1, 2, 4):
        X = [[int(x) for x in rng.integers(-3, 4, size=3)] for _ in range(n)]
        a, b = odd.query(X), head.query(X)
        assert a._exp_form() == b._exp_form()
    assert odd.count == 3 and T.odd_head.v == T.v_eff


def test_signs_of_exp_polynomials_are_exact():
    assert exp_sign(ExpPoly([(1, 0), (-1, Fraction(-1, 10**9))])) == 1
    assert exp_sign(ExpPoly([(1, 1), (-1, 1)])) == 0
    assert exp_sign(ExpPoly([(-3, 0), (1, 1)])) == -1  # e − 3 < 0


@pytest.mark.parametrize("d, m", [(4, 4), (8, 8), (16, 16), (2, 5), (3, 1)])
def test_the_transformer_is_learned_exactly_with_the_stated_count(d, m):
    for seed in range(3 if d < 16 else 2):
        T = Transformer.random(d, m, seed=seed)
        oracle = ExactOracle(T)
        r = learn_transformer(oracle, m=m, seed=seed)
        assert r.model.W == T.W and r.details["function_form"] == T.ffn.function_form()
        if r.details["identifiable"]:
            assert r.model.ffn.unit_form() == T.ffn.unit_form()
        assert r.queries == r.details["ffn_queries"] + 2 * (d * d + d) == oracle.count - r.verification_queries
        assert r.details["odd_queries"] == d * d + d
        assert r.exact and r.certificate.check().holds


def test_a_vanishing_odd_part_is_not_identifiable_and_asks_it_nothing():
    T = Transformer([[1, 0], [0, 1]], [[1, 1], [-1, -1]], [1, 1])  # Aᵀw = 0
    oracle = ExactOracle(T)
    with pytest.raises(NotIdentifiable, match="Aᵀw = 0"):
        learn_transformer(oracle, seed=0)
    assert all(q.X.length == 1 for q in oracle.transcript)  # only the FFN's one-token queries


def test_a_black_box_that_is_not_a_transformer_is_refused():
    # one-token answers from one network, longer sequences from another W: v_eff disagrees
    T = Transformer.random(3, 3, seed=4)
    other = Transformer(T.W, [[2 * x for x in row] for row in T.A], T.w)

    class Mixed:
        kind = "transformer"
        d = 3

        def exact(self, X):
            return (T if X.length == 1 else other).exact(X)

    with pytest.raises(OracleInconsistent):
        learn_transformer(ExactOracle(Mixed()), seed=0)


def test_transformers_round_trip_and_bad_shapes_are_refused():
    T = Transformer.random(3, 2, seed=0)
    assert Transformer.from_json(T.to_json()) == T
    from exact.errors import ShapeError

    with pytest.raises(ShapeError, match="A: expected 3 columns"):
        Transformer(T.W, [[1, 2]], [1])
    with pytest.raises(Exception, match="approximate"):
        learn_transformer(FloatOracle(SingleHead(T.W, [1, 1, 1])))


def test_a_tampered_certificate_is_refused():
    from dataclasses import replace

    T = Transformer.random(3, 3, seed=6)
    r = learn_transformer(ExactOracle(T), m=3, seed=1)
    cert = r.certificate
    entries = list(cert.transcript)
    entries[-2], entries[-1] = entries[-1], entries[-2]  # swap the last odd pair
    assert not replace(cert, transcript=tuple(entries)).check().holds
    assert not replace(cert, conditions={**cert.conditions, "seed": 2}).check().holds
