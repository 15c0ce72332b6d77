"""One-layer Transformers with biases, with and without a residual, learned exactly by inverting the FFN
(exact.learn.transformer_biased): canonical forms compared with ``==``, counts asserted, the
wrong-class cases refused, the certificate re-derived."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle
from exact.errors import InvalidArgument, NotIdentifiable, OracleInconsistent, ShapeError
from exact.learn import learn_transformer, learn_transformer_biased
from exact.learn.ffn import ffn_query_bound
from exact.learn.transformer_biased import attention_query_count
from exact.transformer import Transformer

CASES = [(4, 4, s) for s in range(5)] + [(8, 8, s) for s in range(3)] + [(16, 16, 0)]


def _independent_K(T: Transformer):
    """``(I + V)⁻¹V`` with sympy, apart from the library's flint path."""
    import sympy

    V = sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in r] for r in T.V])
    K = (sympy.eye(T.d) + V).inv() * V
    return tuple(tuple(Fraction(int(K[i, j].p), int(K[i, j].q)) for j in range(T.d)) for i in range(T.d))


def _check(T: Transformer, m: int, seed: int, residual: bool):
    oracle = ExactOracle(T)
    r = learn_transformer_biased(oracle, m=m, seed=seed, residual=residual)
    assert r.exact and r.model.canonical() == T.canonical()
    assert r.model.W == T.W and r.details.c == T.c
    if residual:
        assert r.details.K == _independent_K(T)
    d, det = T.d, r.details
    # the counts: the FFN's within its stated bound; the attention's d(d + 1) (twice with the residual, plus the
    # pairs asked again, two queries each)
    assert det.ffn_queries <= ffn_query_bound(d, m)
    assert det.attention_queries == attention_query_count(d, residual) + (2 * det.rescaled if residual else 0)
    assert r.queries == det.ffn_queries + det.attention_queries
    assert oracle.count == r.queries + r.verification_queries
    # the learned block as a function: exact on fresh sequences, and in float64 as an independent evaluator
    rng = np.random.default_rng(seed + 99)
    for n in (2, 3, 5):
        X = [[Fraction(int(x), 3) for x in row] for row in rng.integers(-6, 7, size=(n, d))]
        assert r.model.exact(X) == T.exact(X)
        assert abs(r.model.float(np.array(X, dtype=float)) - T.float(np.array(X, dtype=float))) < 1e-9 * (
            1 + abs(T.float(np.array(X, dtype=float))))
    return r


@pytest.mark.parametrize("d, m, seed", CASES)
def test_blocks_with_biases_are_learned_exactly(d, m, seed):
    r = _check(Transformer.random(d, m, seed=seed, biases=True), m, seed, residual=False)
    assert not any("residual probe pair" in a for a in r.assumptions)


@pytest.mark.parametrize("d, m, seed", CASES)
def test_blocks_with_a_residual_are_learned_exactly(d, m, seed):
    r = _check(Transformer.random(d, m, seed=seed, biases=True, residual=True), m, seed, residual=True)
    assert any("residual probe pair" in a for a in r.assumptions)


def test_a_bias_free_block_is_the_special_case():
    T = Transformer.random(4, 4, seed=3)
    r = _check(T, 4, 1, residual=False)
    assert r.model.canonical() == learn_transformer(ExactOracle(T), m=4, seed=1).model.canonical()


def test_the_class_is_stated_and_a_block_of_the_other_kind_is_refused():
    res = Transformer.random(4, 4, seed=3, biases=True, residual=True)
    plain = Transformer.random(4, 4, seed=3, biases=True)
    with pytest.raises(OracleInconsistent, match="learned with residual=True"):
        learn_transformer_biased(ExactOracle(res), m=4, seed=1)
    with pytest.raises(OracleInconsistent, match="K = I: the block has no residual"):
        learn_transformer_biased(ExactOracle(plain), m=4, seed=1, residual=True)
    with pytest.raises(OracleInconsistent, match="learn_transformer_biased"):
        learn_transformer(ExactOracle(plain), m=4, seed=1)


def test_what_cannot_be_identified_is_named():
    T = Transformer.random(4, 4, seed=3, biases=True)
    flat = Transformer(T.W, T.A, [0, 0, 0, 0], c=T.c, a=T.a, b=T.b)
    with pytest.raises(NotIdentifiable, match="constant"):
        learn_transformer_biased(ExactOracle(flat), m=4, seed=1)
    R = Transformer.random(4, 4, seed=3, biases=True, residual=True)
    singular = Transformer(R.W, R.A, R.w, c=R.c, V=[[-1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]],
                           residual=True)
    with pytest.raises(NotIdentifiable, match="I \\+ V is singular"):
        singular.canonical()
    with pytest.raises(NotIdentifiable, match="spanning gradients"):
        learn_transformer_biased(ExactOracle(singular), m=4, seed=1, residual=True)


def test_without_verification_queries_the_class_is_stated():
    for residual in (False, True):
        T = Transformer.random(3, 3, seed=5, biases=True, residual=residual)
        r = learn_transformer_biased(ExactOracle(T), m=3, seed=1, residual=residual, checks=0)
        kind = "and a residual" if residual else "without a residual"
        assert f"among one-layer Transformers with biases {kind}" in r.assumptions


def test_bad_options_are_refused():
    T = Transformer.random(2, 2, seed=0, biases=True)
    with pytest.raises(InvalidArgument, match="residual: expected True or False"):
        learn_transformer_biased(ExactOracle(T), residual="yes")
    with pytest.raises(InvalidArgument, match="residual"):
        Transformer.random(2, 2, seed=0, residual=True)


def test_json_carries_the_biases_and_the_residual():
    R = Transformer.random(3, 2, seed=4, biases=True, residual=True)
    data = json.loads(json.dumps(R.to_json()))
    assert data["residual"] is True and len(data["V"]) == 3 and len(data["mu"]) == 3 and len(data["a"]) == 2
    assert Transformer.from_json(data) == R
    plain = Transformer.random(3, 2, seed=4)
    assert set(plain.to_json()) == {"kind", "d", "m", "W", "A", "w"}  # bias-free files are unchanged
    with pytest.raises(ShapeError, match="'residual': expected true or false"):
        Transformer.from_json({**data, "residual": "true"})
    with pytest.raises(ShapeError, match="V: expected a 3×3 value map"):
        Transformer.from_json({**data, "V": [[1, 0], [0, 1]]})


def test_the_model_evaluates_as_torch_defines_the_block():
    """Exact values against a direct float64 evaluation written out from the definition."""
    R = Transformer.random(3, 4, seed=8, biases=True, residual=True)
    f = {k: np.array([[float(x) for x in r] for r in getattr(R, k)]) for k in ("W", "A", "V")}
    c, mu, a, w = (np.array([float(x) for x in getattr(R, k)]) for k in ("c", "mu", "a", "w"))
    X = np.array([[1, -2, 0.5], [0, 1, 1], [2, 0.25, -1]])
    s = X @ (f["W"] @ X[-1] + c)
    alpha = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
    h = alpha @ (X @ f["V"].T + mu)
    want = w @ np.maximum(f["A"] @ (X[-1] + h) + a, 0) + float(R.b)
    assert abs(float(R.ball(X.tolist()).mid()) - want) < 1e-9 * (1 + abs(want))


def test_the_certificate_is_rederived_and_tampering_fails():
    R = Transformer.random(3, 3, seed=2, biases=True, residual=True)
    r = learn_transformer_biased(ExactOracle(R), m=3, seed=1, residual=True)
    assert r.certificate.check().holds
    other = Transformer(R.W, R.A, R.w, c=[x + 1 for x in R.c], V=R.V, mu=R.mu, a=R.a, b=R.b, residual=True)
    assert not dataclasses.replace(r.certificate, model=other).check().holds
    plain = Transformer(R.W, R.A, R.w, c=R.c, V=R.V, mu=R.mu, a=R.a, b=R.b)
    assert not dataclasses.replace(r.certificate, model=plain).check().holds
    flipped = dataclasses.replace(r.certificate, conditions={**r.certificate.conditions, "residual": False})
    assert not flipped.check().holds
    unseeded = {k: v for k, v in r.certificate.conditions.items() if k != "seed"}
    assert not dataclasses.replace(r.certificate, conditions=unseeded).check().holds


def test_the_command_line_learns_and_certifies(tmp_path):
    model = tmp_path / "block.json"
    cert = tmp_path / "cert.json"
    run = [sys.executable, "-m", "exact"]
    out = subprocess.run(run + ["random", "transformer", "--d", "3", "--m", "3", "--seed", "2", "--biases",
                                "--residual"], capture_output=True, text=True, check=True).stdout
    model.write_text(out)
    learned = subprocess.run(run + ["learn", "transformer", "--biases", "--residual", "--model", str(model), "--m", "3",
                                    "--seed", "1", "--certificate", str(cert)], capture_output=True, text=True)
    assert learned.returncode == 0, learned.stderr
    assert "exact       yes" in learned.stdout and "K = (I + V)⁻¹V =" in learned.stdout
    checked = subprocess.run(run + ["certify", str(cert)], capture_output=True, text=True)
    assert checked.returncode == 0 and "certificate holds" in checked.stdout


def test_a_pair_of_logit_zero_across_a_kink_is_asked_again_closer_in():
    """σ(0) = 1/2 makes T₊ − T₋ rational even when a pair crosses a kink of g₁; K then disagrees at the
    extra point, and every pair is asked again closer in (a genuine residual block, not refused)."""
    T = Transformer.from_json({"kind": "transformer", "W": [["-1", "-2"], ["2", "-1"]],
                               "A": [["3/2", "-1/2"], ["-1/2", "-4/3"], ["-2", "5/7"], ["0", "11/7"], ["-2", "-1"]],
                               "w": ["11/7", "2", "-1", "1/6", "2"], "c": ["-1", "-2"],
                               "V": [["0", "-3/8"], ["-1", "-7/8"]], "mu": ["2/5", "1/3"],
                               "a": ["2", "2", "-1", "2", "2/7"], "b": "-3/4", "residual": True})
    r = _check(T, 5, 144, residual=True)
    assert r.details.rescaled == 6  # all six pairs, once


def test_the_ffn_parts_sighting_carries_over_and_certify_re_derives_it():
    from dataclasses import replace

    from exact.learn.ffn_affine import HIDDEN_AFFINE

    for residual in (False, True):
        T = Transformer.random(3, 3, seed=5, biases=True, residual=residual)
        r = learn_transformer_biased(ExactOracle(T), m=3, seed=1, residual=residual)
        assert r.model.canonical() == T.canonical()
        assert r.details["units_seen"] and HIDDEN_AFFINE not in r.assumptions
        assert r.certificate.check().holds
        # without m no check line runs: the assumption is stated, and a file cannot drop it
        loose = learn_transformer_biased(ExactOracle(T), seed=1, residual=residual)
        assert not loose.details["units_seen"] and HIDDEN_AFFINE in loose.assumptions
        stripped = replace(loose.certificate,
                           assumptions=tuple(a for a in loose.certificate.assumptions if a != HIDDEN_AFFINE))
        assert not stripped.check().holds
