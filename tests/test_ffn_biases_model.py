"""ReLU networks with biases, g(x) = wᵀReLU(Ax + a) + b: the model, its canonical forms in homogeneous
coordinates, JSON, and the bias-free learner's refusal (the biased learner is not built yet)."""

import json
import random
from fractions import Fraction as F

import numpy as np
import pytest

from exact import ExactOracle
from exact.cli import main
from exact.errors import OracleInconsistent, ShapeError
from exact.ffn import FunctionForm, ReLUFFN
from exact.learn import learn_ffn
from exact.sequences import Sequence


def _brute(net, x):
    return sum((w * max(sum((p * q for p, q in zip(row, x)), F(0)) + al, 0)
                for row, w, al in zip(net.A, net.w, net.a)), F(0)) + net.b


@pytest.mark.parametrize("seed", range(10))
def test_every_evaluation_path_is_exact(seed):
    net = ReLUFFN.random(4, 5, seed=seed, biases=True)
    rng = random.Random(seed)
    xs = [[F(rng.randint(-9, 9), rng.randint(1, 5)) for _ in range(4)] for _ in range(6)]
    base = Sequence.from_rows([xs[0]])
    shifted = [Sequence._shifted(base, j, F(rng.randint(-9, 9), rng.randint(1, 7))) for j in range(4)]
    for x, v in zip(xs, net.rational_batch([[x] for x in xs])):
        assert F(int(v.p), int(v.q)) == net.value(x) == _brute(net, x)
    for s, v in zip(shifted, net.rational_batch(shifted)):
        x = [F(t) for t in s.dense()[0]]
        assert F(int(v.p), int(v.q)) == _brute(net, x)
    assert ExactOracle(net).query([xs[1]]).rational() == _brute(net, xs[1])
    assert abs(net.float(np.array([[float(t) for t in xs[2]]])) - float(_brute(net, xs[2]))) < 1e-9
    form, units = net.function_form(), net.unit_form()
    assert form.affine and units.affine
    assert all(form.value(x) == _brute(net, x) for x in xs)
    back = units.network()
    assert all(back.value(x) == _brute(net, x) for x in xs)
    assert back.unit_form() == units and back.function_form() == form


def test_the_symmetries_that_remain():
    n = ReLUFFN([[1, 2], [0, 1]], [1, -1], [1, -2], 3)
    scaled = ReLUFFN([[2, 4], [0, 3]], [F(1, 2), F(-1, 3)], [2, -6], 3)  # (a_j, α_j, w_j) → (c a_j, c α_j, w_j/c)
    permuted = ReLUFFN([[0, 1], [1, 2]], [-1, 1], [-2, 1], 3)
    assert n.function_form() == scaled.function_form() == permuted.function_form()
    assert n.unit_form() == scaled.unit_form() == permuted.unit_form()
    # a constant unit (zero row) trades with b; zero biases are the bias-free network
    const = ReLUFFN([[1, 2], [0, 1], [0, 0]], [1, -1, 4], [1, -2, F(1, 2)], 1)
    assert const.function_form() == n.function_form() and const.unit_form() == n.unit_form()
    free = ReLUFFN([[1, 2], [0, 1]], [1, -1])
    assert ReLUFFN(free.A, free.w, [0, 0], 0).function_form() == free.function_form()
    assert not free.function_form().affine
    # an antipodal pair on an affine hyperplane is affine: the function form sees no kink there
    pair = ReLUFFN([[1, 0], [-1, 0]], [2, -2], [1, -1], 0)
    form = pair.function_form()
    assert form.normals == () and form.linear == (2, 0, 2)
    # parallel hyperplanes with different offsets stay two
    par = ReLUFFN([[1, 1], [1, 1]], [1, 1], [0, 1])
    assert len(par.function_form().normals) == 2


def test_build_affine_folds_constant_terms():
    f = FunctionForm.build_affine(1, [((2, -2), 1), ((0, 3), 1)], [0, 0])
    assert f.normals == ((1, -1),) and f.kinks == (2,) and f.linear == (0, 3)
    with pytest.raises(ShapeError, match="linear: expected length 2"):
        FunctionForm.build_affine(1, [], [0])


def test_json_round_trip_and_errors():
    net = ReLUFFN.random(3, 4, seed=2, biases=True)
    data = json.loads(json.dumps(net.to_json()))
    assert set(data) == {"kind", "d", "m", "A", "w", "a", "b"} and ReLUFFN.from_json(data) == net
    assert "a" not in ReLUFFN.random(3, 4, seed=2).to_json()
    with pytest.raises(ShapeError, match="field 'b': expected a number"):
        ReLUFFN.from_json({**data, "b": True})
    with pytest.raises(ShapeError, match="field 'a': expected a list"):
        ReLUFFN.from_json({**data, "a": "1"})
    with pytest.raises(ShapeError, match="a: expected"):
        ReLUFFN.from_json({**data, "a": ["1"]})
    assert ReLUFFN.random(3, 4, seed=2, biases=True).A == ReLUFFN.random(3, 4, seed=2).A


def test_the_bias_free_learner_refuses_biases_and_its_certificate_never_covers_them():
    import dataclasses

    net = ReLUFFN.random(3, 3, seed=0, biases=True)
    with pytest.raises(OracleInconsistent, match="biases wᵀReLU.Ax . a. . b.*are outside this learner's class"):
        learn_ffn(ExactOracle(net), m=3, seed=0)
    free = ReLUFFN.random(3, 3, seed=0)
    r = learn_ffn(ExactOracle(free), m=3, seed=0)
    assert r.certificate.check().holds
    biased = ReLUFFN(free.A, free.w, [0, 0, 0], 1)  # the same network plus b = 1
    report = dataclasses.replace(r.certificate, model=biased).check()
    assert not report.holds and "has biases" in report.message


def test_cli_random_ffn_with_biases(capsys):
    assert main(["random", "ffn", "--d", "2", "--m", "2", "--seed", "1", "--biases"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert ReLUFFN.from_json(data).biased


def test_a_result_with_biases_writes_its_affine_form_out():
    from exact.learn import learn_ffn_biased

    net = ReLUFFN([[1, 2], [0, -1]], [1, "-1/2"], a=[1, "-2/3"], b=5)
    r = learn_ffn_biased(ExactOracle(net), m=2, seed=0)
    rows = dict((i, row) for i, row in enumerate(r.details.rows(r)))
    text = [value for _, value in rows.values()]
    assert text[0] == "g(x) = Lᵀx + ℓ₀ + Σ κ_k|n_kᵀx + o_k| with 2 hyperplanes"
    form = net.function_form()
    L = ", ".join(str(x) for x in form.linear[:2])
    assert text[1] == f"L = [{L}], ℓ₀ = {form.linear[2]}"
    for n, k in zip(form.normals, form.kinks):
        assert f"κ = {k}, n = [{n[0]}, {n[1]}], o = {n[2]}" in text
