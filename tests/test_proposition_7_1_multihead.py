"""Multi-head attention (SPEC §1.2) and Proposition 7.1: the MultiHead model, its exact values, the
constructions that change the parameters but not the map, and the canonical form that identifies them."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from exact.canonical import canonical_form
from exact.errors import InvalidFormat, QueryBudgetExceeded, ShapeError
from exact.expfield import ExpPoly, ExpRatio, ExpSum
from exact.io import model_from_json
from exact.models import SingleHead
from exact.multihead import MultiHead
from exact.oracles import ExactAnswer, ExactOracle
from proofs.multihead import KINDS, add_zero_head, construct

F = Fraction


def rational_inputs(d: int, n: int, seed: int, *, max_len: int = 6) -> list:
    """``n`` seeded random sequences of rational tokens, lengths cycling through 1..max_len."""
    rng = random.Random(seed)
    return [
        [[F(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(d)] for _ in range(1 + k % max_len)]
        for k in range(n)
    ]


def floats(X) -> list:
    return [[float(x) for x in row] for row in X]


def head(W, v) -> SingleHead:
    return SingleHead(W, v)


# -- validation ----------------------------------------------------------------------------------------


BAD_MODELS = {
    "mixed-d": (
        lambda: MultiHead([([[1]], [1]), ([[1, 0], [0, 1]], [1, 1])]),
        r"^heads: expected every head to have the same d, got \[1, 2\]$",
    ),
    "mixed-d-three-heads": (
        lambda: MultiHead([([[1, 0], [0, 1]], [1, 1]), ([[1]], [1]), ([[1, 0, 0], [0, 1, 0], [0, 0, 1]], [1, 1, 1])]),
        r"^heads: expected every head to have the same d, got \[1, 2, 3\]$",
    ),
    "no-heads-no-d": (lambda: MultiHead([]), r"^d: a model with no heads needs d given explicitly$"),
    "no-heads-tuple-no-d": (lambda: MultiHead(()), r"^d: a model with no heads needs d given explicitly$"),
    "head-is-int": (lambda: MultiHead([5]), r"^heads\[0\]: expected a SingleHead or a \(W, v\) pair, got int$"),
    "head-is-str": (
        lambda: MultiHead([([[1]], [1]), "Wv"]),
        r"^heads\[1\]: expected a SingleHead or a \(W, v\) pair, got str$",
    ),
    "head-is-triple": (
        lambda: MultiHead([([[1]], [1], [2])]),
        r"^heads\[0\]: expected a SingleHead or a \(W, v\) pair, got tuple$",
    ),
    "head-is-dict": (
        lambda: MultiHead([{"W": [[1]], "v": [1]}]),
        r"^heads\[0\]: expected a SingleHead or a \(W, v\) pair, got dict$",
    ),
    "heads-not-iterable": (lambda: MultiHead(5), r"^heads: expected a list of heads, got int$"),
    "pair-with-bad-W": (lambda: MultiHead([([[1, 2]], [1])]), r"^W: expected a square d×d matrix, got 1×2$"),
    "pair-with-short-v": (lambda: MultiHead([([[1, 2], [3, 4]], [1])]), r"^v: expected length 2, got 1$"),
    "d-disagrees-with-heads": (lambda: MultiHead([([[1]], [1])], d=2), r"^d: given d=2 but the heads have d=1$"),
    "d-zero": (lambda: MultiHead([], d=0), r"^d: expected an integer d >= 1, got 0$"),
    "d-float": (lambda: MultiHead([], d=2.0), r"^d: expected an integer d >= 1, got 2\.0$"),
}


@pytest.mark.parametrize("name", list(BAD_MODELS))
def test_multihead_validation(name):
    build, match = BAD_MODELS[name]
    with pytest.raises(ShapeError, match=match):
        build()


def test_validation_errors_are_value_errors():
    with pytest.raises(ValueError, match="same d"):
        MultiHead([([[1]], [1]), ([[1, 0], [0, 1]], [1, 1])])


def test_bool_d_is_rejected():
    with pytest.raises(ShapeError, match=r"^d: expected an integer d >= 1, got True$"):
        MultiHead([], d=True)


def test_heads_given_as_pairs_or_singleheads_are_the_same_model():
    W1, v1, W2, v2 = [[1, "1/2"], [0, -1]], [2, 0], [[0, 1], [1, 0]], ["-1/3", 1]
    a = MultiHead([(W1, v1), [W2, v2]])
    b = MultiHead((head(W1, v1), head(W2, v2)), d=2)
    c = MultiHead(iter([head(W1, v1), (W2, v2)]))  # any iterable
    assert a == b == c
    assert a.heads == (head(W1, v1), head(W2, v2))  # stored as a tuple of SingleHeads
    assert all(type(h) is SingleHead for h in a.heads)
    assert (a.H, a.d) == (2, 2)
    assert a != MultiHead([(W2, v2), (W1, v1)])  # order matters as parameters


@pytest.mark.parametrize("kwargs,match", [
    (dict(d=2, H=-1), r"^H: expected a non-negative number of heads, got -1$"),
    (dict(d=2, H=2, seed=-1), r"^seed: expected a non-negative integer or None, got -1$"),
    (dict(d=2, H=2, seed=1.5), r"^seed: expected a non-negative integer or None, got 1\.5$"),
    (dict(d=2, H="2"), r"^H: expected a non-negative number of heads, got '2'$"),
])
def test_random_argument_errors(kwargs, match):
    d, H = kwargs.pop("d"), kwargs.pop("H")
    with pytest.raises(ValueError, match=match):
        MultiHead.random(d, H, **kwargs)


def test_random_is_seeded():
    assert MultiHead.random(3, 4, seed=9) == MultiHead.random(3, 4, seed=9)
    assert MultiHead.random(3, 4, seed=9) != MultiHead.random(3, 4, seed=10)
    m = MultiHead.random(3, 4, seed=9)
    assert (m.H, m.d) == (4, 3)
    assert len(set(m.heads)) == 4  # independent heads
    z = MultiHead.random(3, 2, seed=1, v_zeros=2)
    assert all(sum(x == 0 for x in h.v) == 2 for h in z.heads)
    assert MultiHead.random(2, 0, seed=0) == MultiHead([], d=2)


# -- H = 0 ----------------------------------------------------------------------------------------------


def test_model_without_heads_is_zero():
    m = MultiHead([], d=3)
    assert (m.H, m.d) == (0, 3)
    for X in rational_inputs(3, 6, seed=0):
        y = m.exact(X)
        assert isinstance(y, ExpSum)
        assert y.terms == ()
        assert y == ExpRatio.rational(0)
        assert y != ExpRatio.rational(F(1, 10**40))
        assert m.ball(X).is_zero()
        assert m.sympy(X) == 0
        assert m.float(floats(X)) == 0.0
    batch = np.ones((5, 4, 3))
    out = m.float(batch)
    assert isinstance(out, np.ndarray) and out.shape == (5,)
    assert (out == 0.0).all()


def test_model_without_heads_still_checks_the_input_shape():
    m = MultiHead([], d=2)
    with pytest.raises(ShapeError, match="expected every token to have d=2 entries"):
        m.exact([[1, 2, 3]])


def test_wrong_token_dimension_is_rejected():
    m = MultiHead.random(2, 3, seed=0)
    with pytest.raises(ShapeError, match=r"^X: expected every token to have d=2 entries, token 0 has 3$"):
        m.exact([[1, 2, 3]])


# -- exact and float evaluation --------------------------------------------------------------------


@pytest.mark.parametrize("d,H", [(1, 1), (1, 3), (2, 2), (3, 4), (5, 2)])
def test_exact_and_float_agree(d, H):
    m = MultiHead.random(d, H, seed=10 * d + H)
    for X in rational_inputs(d, 12, seed=d * H):
        ball = m.ball(X, prec=128)
        assert ball.rad() < 1e-30
        exact = float(ball.mid())
        assert abs(m.float(floats(X)) - exact) <= 1e-12
        assert abs(float(m.ball(X, prec=64).mid()) - exact) <= 1e-12


@pytest.mark.parametrize("d,H", [(1, 2), (2, 3), (4, 4)])
def test_batch_float_equals_per_sequence(d, H):
    m = MultiHead.random(d, H, seed=d + H)
    rng = np.random.default_rng(d * H)
    for N in (1, 3, 6):
        batch = rng.uniform(-2, 2, size=(7, N, d))
        out = m.float(batch)
        assert isinstance(out, np.ndarray) and out.shape == (7,)
        single = np.array([m.float(X) for X in batch])
        assert np.array_equal(out, single)  # a sequence's float value does not depend on its batch
        assert all(isinstance(m.float(X), float) for X in batch)
        heads_sum = sum(h.float(batch) for h in m.heads)
        assert np.allclose(out, heads_sum, rtol=0, atol=1e-12)


@pytest.mark.parametrize("d,H", [(1, 3), (2, 2), (3, 4)])
def test_exact_is_the_sum_of_the_heads(d, H):
    m = MultiHead.random(d, H, seed=7 * d + H)
    for X in rational_inputs(d, 10, seed=H):
        total = ExpRatio.rational(0)
        for h in m.heads:
            total = total + h.exact(X)  # ExpRatio addition over a common denominator
        y = m.exact(X)
        assert isinstance(y, ExpSum)
        assert y == total
        assert y == ExpSum([h.exact(X) for h in reversed(m.heads)])  # the order of heads is irrelevant
        assert ball_overlaps_sum(y, [h.exact(X) for h in m.heads])
    # a small case where the sympy forms can be compared symbolically
    X = [[F(1, 2)] * d, [F(-1)] * d]
    diff = m.sympy(X) - sympy.Add(*[h.sympy(X) for h in m.heads])
    assert sympy.simplify(diff) == 0


def ball_overlaps_sum(y: ExpSum, parts) -> bool:
    s = parts[0].ball(200)
    for p in parts[1:]:
        s += p.ball(200)
    return y.ball(200).overlaps(s) and y.ball(200).rad() < 1e-50


def test_exact_value_by_hand():
    # head 1: scores (0, 1), values (0, 1)  -> e/(1+e);  head 2: equal scores, values (0, 2) -> 1
    m = MultiHead([([[1]], [1]), ([[0]], [2])])
    X = [[0], [1]]
    E = sympy.E
    assert sympy.simplify(m.sympy(X) - (1 + E / (1 + E))) == 0
    e = ExpPoly([(1, 1)])
    expected = ExpRatio(e, ExpPoly([(1, 0), (1, 1)])) + ExpRatio.rational(1)
    assert m.exact(X) == expected
    assert m.exact(X) != expected + ExpRatio.rational(F(1, 10**30))
    # one token: f is the sum of the heads' v·x, a rational
    assert m.exact([[F(3, 7)]]) == ExpRatio.rational(F(9, 7))
    assert m.sympy([[F(3, 7)]]) == sympy.Rational(9, 7)


# -- the normal form of ExpSum -----------------------------------------------------------------------


def test_heads_with_equal_W_merge_into_one_term():
    W = [[1, "1/2"], [-2, "1/3"]]
    m = MultiHead([(W, [1, 2]), (W, ["-1/2", 5])])
    merged = SingleHead(W, ["1/2", 7])
    for X in rational_inputs(2, 12, seed=3):
        y = m.exact(X)
        assert len(y.terms) == 1
        assert y.terms == ExpSum([merged.exact(X)]).terms  # the same normal form, not just the same value
    # heads with different W stay separate (on a sequence where their scores differ)
    m3 = MultiHead([(W, [1, 2]), ([[0, 1], [1, 0]], [1, 1]), (W, [3, 4])])
    X = [[1, 0], [0, 1], [1, 1]]
    assert len(m3.exact(X).terms) == 2


def test_zero_v_heads_are_dropped_from_the_normal_form():
    base = MultiHead.random(2, 2, seed=4)
    padded = MultiHead(list(base.heads) + [([[5, -1], [2, 0]], [0, 0]), ([[1, 1], [1, 1]], [0, 0])])
    for X in rational_inputs(2, 12, seed=4):
        assert padded.exact(X).terms == base.exact(X).terms
    only_zero = MultiHead([([[5, -1], [2, 0]], [0, 0])])
    assert only_zero.exact([[1, 2], [3, 4]]).terms == ()


def test_normal_form_scales_denominators():
    e = ExpPoly([(1, 1)])
    a = ExpRatio(ExpPoly.constant(1), ExpPoly([(1, -1), (1, 0)]))  # 1/(e^-1 + 1) = e/(1 + e)
    b = ExpRatio(e, ExpPoly([(1, 0), (1, 1)]))
    assert ExpSum([a]).terms == ExpSum([b]).terms
    three = ExpRatio(ExpPoly([(3, 0)]), ExpPoly([(3, 0), (3, 1)]))  # 3/(3 + 3e) = 1/(1 + e)
    s = ExpSum([three, b])
    assert len(s.terms) == 1 and s == ExpRatio.rational(1)
    minus_b = ExpRatio(ExpPoly([(-1, 1)]), ExpPoly([(1, 0), (1, 1)]))
    assert ExpSum([a, minus_b]).terms == ()  # a − b = 0 cancels in the normal form
    assert ExpSum([a, minus_b]) == ExpRatio.rational(0)


def test_expsum_equality_falls_back_when_structures_differ():
    den = ExpPoly([(1, 0), (1, 1)])
    a = ExpRatio(ExpPoly([(1, 0), (2, 1)]), den)  # (1 + 2e)/(1 + e)
    b = ExpRatio(ExpPoly([(3, 0), (2, 1)]), den)  # (3 + 2e)/(1 + e)
    s = ExpSum([a, b])
    four = ExpSum([ExpRatio.rational(4)])
    assert s.terms != four.terms  # different normal forms ...
    assert s == four and four == s  # ... equal values, decided exactly
    assert s == ExpRatio.rational(4) and ExpRatio.rational(4) == s
    assert s != ExpRatio.rational(F(4 * 10**40 + 1, 10**40))  # no tolerance
    # two denominators against one
    d1, d2 = ExpPoly([(1, 0), (1, 1)]), ExpPoly([(1, 0), (1, 2)])
    two = ExpSum([ExpRatio(ExpPoly.constant(1), d1), ExpRatio(ExpPoly.constant(1), d2)])
    one = ExpSum([ExpRatio(d1 + d2, d1 * d2)])
    assert len(two.terms) == 2 and len(one.terms) == 1
    assert two == one
    assert two != ExpSum([ExpRatio(d1 + d2 + ExpPoly([(F(1, 10**9), 3)]), d1 * d2)])


def test_multihead_values_with_different_structures_compare_exactly():
    # sigmoid(1) + sigmoid(-1) = 1: two heads with different W, one shared normalised denominator
    m = MultiHead([([[1]], [1]), ([[-1]], [1])])
    y = m.exact([[0], [1]])
    assert y.terms != ExpSum([ExpRatio.rational(1)]).terms
    assert y == ExpRatio.rational(1)
    assert y == MultiHead([([[0]], [2])]).exact([[0], [1]])  # uniform attention: (0 + 2)/2
    assert y != MultiHead([([[1]], [1]), ([[-2]], [1])]).exact([[0], [1]])


# -- JSON ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [
    MultiHead.random(1, 1, seed=0),
    MultiHead.random(3, 4, seed=1),
    MultiHead.random(2, 3, seed=2, grid="float32"),
    MultiHead([], d=4),
    MultiHead([([[F(1, 3), 10**20], [0, -1]], [0, 0]), ([[F(-7, 9), 1], [2, 3]], ["1/1000000007", 0])]),
])
def test_json_round_trip(model):
    data = json.loads(json.dumps(model.to_json()))
    assert data["kind"] == "multi-head" and data["d"] == model.d and len(data["heads"]) == model.H
    assert all(set(h) == {"W", "v"} for h in data["heads"])
    back = model_from_json(data)
    assert isinstance(back, MultiHead)
    assert back == model  # exact, same order of heads
    assert MultiHead.from_json(data) == model
    for X in rational_inputs(model.d, 4, seed=5):
        assert back.exact(X) == model.exact(X)


def test_json_keeps_rationals_exact():
    m = MultiHead([([[F(1, 3)]], [F(-22, 7)])])
    assert m.to_json() == {"kind": "multi-head", "d": 1, "heads": [{"W": [["1/3"]], "v": ["-22/7"]}]}


@pytest.mark.parametrize("data,error,match", [
    ({"kind": "multi-head", "d": 2, "heads": {}}, ShapeError, r"^model: expected a list 'heads'$"),
    ({"kind": "multi-head", "d": 1, "heads": [{"W": [[1]]}]}, ShapeError, r"^heads\[0\]: expected an object with 'W' and 'v' \(and optionally 'c'\)$"),
    ({"kind": "multi-head", "d": 1, "heads": [{"W": [[1]], "v": [1], "b": 0}]}, ShapeError,
     r"^heads\[0\]: field 'b': the output bias is one number of the model \(its field 'b'\), not of a head$"),
    ({"kind": "multi-head", "heads": []}, ShapeError, r"^d: a model with no heads needs d given explicitly$"),
    ({"kind": "multi-head", "d": 2, "heads": [{"W": [[1]], "v": [1]}]}, ShapeError, r"^d: given d=2 but the heads have d=1$"),
    ({"kind": "multi-heads", "d": 1, "heads": []}, InvalidFormat, r"^model: unknown kind 'multi-heads'"),
])
def test_json_errors(data, error, match):
    with pytest.raises(error, match=match):
        model_from_json(data)


def test_from_json_requires_the_multi_head_kind():
    with pytest.raises(ShapeError, match=r"^model: expected a JSON object of kind 'multi-head'$"):
        MultiHead.from_json({"kind": "single-head", "W": [[1]], "v": [1]})


# -- canonical form ------------------------------------------------------------------------------------


def test_canonical_form_merges_and_drops():
    W1, W2, W3 = ((F(1), F(0)), (F(0), F(1))), ((F(0), F(2)), (F(1), F(0))), ((F(3), F(3)), (F(3), F(3)))
    m = MultiHead([
        (W2, [1, 1]),
        (W1, [2, -1]),
        (W3, [0, 0]),  # zero v: dropped
        (W1, [F(1, 2), 4]),  # merges with the other W1 head
        (W2, [-1, -1]),  # cancels W2 entirely: dropped
    ])
    c = canonical_form(m)
    assert isinstance(c, MultiHead)
    assert c == MultiHead([(W1, [F(5, 2), 3])], d=2)
    assert c.d == 2
    assert m.H == 5  # the input is not modified


def test_canonical_form_ordering_rule():
    Ws = [
        [[-1, 5], [0, 0]],
        [["-1/2", 0], [9, 9]],
        [[0, -3], [1, 1]],
        [[0, -3], [1, 2]],  # ties on the first row: the second row decides
        [[0, 1], [-5, 0]],
        [[1, 0], [0, 0]],
    ]
    vs = [[1, 0], [0, 1], [1, 1], [2, 0], [0, -1], [3, 3]]
    expected = MultiHead(list(zip(Ws, vs)))
    rng = random.Random(0)
    for _ in range(5):
        order = list(range(len(Ws)))
        rng.shuffle(order)
        shuffled = MultiHead([(Ws[i], vs[i]) for i in order])
        c = canonical_form(shuffled)
        assert c == expected
        assert [h.W for h in c.heads] == sorted(h.W for h in c.heads)
        keys = [(h.W, h.v) for h in c.heads]
        assert keys == sorted(keys)


def test_model_whose_heads_all_cancel_has_no_canonical_heads():
    W, U = [[1, 2], [3, 4]], [[0, 1], [-1, 0]]
    m = MultiHead([(W, [1, -2]), (U, [0, 0]), (W, [-1, 2]), (U, [5, 1]), (U, [-5, -1])])
    c = canonical_form(m)
    assert c == MultiHead([], d=2)
    assert (c.H, c.d) == (0, 2)
    for X in rational_inputs(2, 8, seed=6):
        assert m.exact(X) == ExpRatio.rational(0)
        assert m.exact(X).terms == ()
    assert canonical_form(MultiHead([], d=3)) == MultiHead([], d=3)


def _check_canonical(c: MultiHead):
    Ws = [h.W for h in c.heads]
    assert len(set(Ws)) == len(Ws)  # pairwise distinct W
    assert all(any(h.v) for h in c.heads)  # nonzero v
    assert [(h.W, h.v) for h in c.heads] == sorted((h.W, h.v) for h in c.heads)


@settings(max_examples=40)
@given(
    d=st.integers(1, 3),
    H=st.integers(0, 4),
    seed=st.integers(0, 2**31 - 1),
    zero_heads=st.integers(0, 2),
)
def test_canonical_form_is_idempotent_and_keeps_the_map(d, H, seed, zero_heads):
    m = MultiHead.random(d, H, seed=seed)
    for k in range(zero_heads):
        m = add_zero_head(m, seed=seed + k)
    c = canonical_form(m)
    _check_canonical(c)
    assert canonical_form(c) == c
    assert c.H <= m.H and c.d == m.d
    for X in rational_inputs(d, 4, seed=seed):
        assert c.exact(X) == m.exact(X)
        assert c.exact(X).terms == m.exact(X).terms  # the normal form sees the same groups


@settings(max_examples=60)
@given(
    d=st.integers(1, 3),
    H=st.integers(2, 4),
    model_seed=st.integers(0, 2**31 - 1),
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(KINDS),
)
def test_canonical_form_is_invariant_under_every_construction(d, H, model_seed, seed, kind):
    m = MultiHead.random(d, H, seed=model_seed)
    b = construct(m, kind, seed=seed)
    assert b != m
    assert canonical_form(b) == canonical_form(m)
    assert canonical_form(construct(b, kind, seed=seed + 1)) == canonical_form(m)


@settings(max_examples=30)
@given(d=st.integers(1, 3), H=st.integers(1, 3), seed=st.integers(0, 2**31 - 1))
def test_canonical_form_separates_changed_models(d, H, seed):
    m = MultiHead.random(d, H, seed=seed)
    h = m.heads[0]
    v = list(h.v)
    v[0] += 1
    changed = MultiHead([SingleHead(h.W, v)] + list(m.heads[1:]))
    assert canonical_form(changed) != canonical_form(m)


# -- oracles -----------------------------------------------------------------------------------------


def test_exact_oracle_on_a_multihead_model():
    m = MultiHead([([[1]], [1]), ([[0]], [2])])
    oracle = ExactOracle(m)
    assert oracle.d == 1 and oracle.exact and oracle.count == 0
    a = oracle.query([[0], [1]])
    assert isinstance(a, ExactAnswer)
    assert oracle.count == 1 and oracle.max_length == 2
    assert sympy.simplify(a.sympy() - (1 + sympy.E / (1 + sympy.E))) == 0
    assert abs(float(a) - (1 + 1 / (1 + np.exp(-1)))) <= 1e-15
    assert float(a.ball(300).rad()) < 1e-80
    one_token = oracle.query([[F(3, 7)]])
    assert one_token.sympy() == sympy.Rational(9, 7)  # exactly the rational Σ_h v_h·x
    answers = oracle.query_batch(rational_inputs(1, 5, seed=1))
    assert oracle.count == 7 and len(oracle.transcript) == 7
    for q, ans, X in zip(oracle.transcript[2:], answers, rational_inputs(1, 5, seed=1)):
        assert q.answer is ans
        assert sympy.simplify(ans.sympy() - m.sympy(X)) == 0
        assert ans.ball(128).overlaps(m.ball(X))
    assert oracle.max_length == 5


def test_exact_oracle_on_a_multihead_model_counts_and_budgets():
    m = MultiHead.random(3, 3, seed=2)
    oracle = ExactOracle(m, budget=4)
    Xs = rational_inputs(3, 4, seed=2)
    for k, X in enumerate(Xs, 1):
        y = oracle.query(X)
        assert oracle.count == k
        assert y.ball(200).overlaps(m.ball(X, prec=200))
        assert abs(float(y) - m.float(floats(X))) <= 1e-12
    with pytest.raises(QueryBudgetExceeded, match=r"needs 1 more queries, but the oracle's budget allows 0"):
        oracle.query(Xs[0])
    assert oracle.count == 4
    zero = ExactOracle(MultiHead([], d=2))
    assert zero.query([[1, 2]]).ball(64).is_zero() and zero.count == 1
