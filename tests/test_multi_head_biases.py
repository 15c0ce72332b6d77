"""Sums of heads with biases (a score bias c_h per head, one output bias b), learned exactly with
both [KKG26] plans: one more group of final tokens, 4H(d² + d) − 2H + 1 queries (paper)."""

import json
from fractions import Fraction

import pytest

from exact import ExactOracle, FloatOracle, MultiHead, SingleHead, learn_multi_head
from exact.canonical import canonical_form
from exact.certify import certificate_from_json
from exact.io import certificate_to_json, model_from_json
from exact.cli import main
from exact.expfield import ExpSum
from exact.errors import InvalidArgument, OracleInconsistent, ShapeError
from exact.learn.multi_head import fast_query_count, lower_bound, paper_query_count

STRUCTURES = {
    "generic": {},
    "duplicate (W, c)": {"duplicate_w": True},
    "one W, two c": {"shared_w": True},
    "zero v": {"zero_v": True},
    "shared v": {"shared_v": True},
    "duplicate, shared and zero": {"duplicate_w": True, "shared_v": True, "zero_v": True},
}
SWEEP = [(d, H) for d in range(1, 6) for H in range(1, 5)]


def _model(d, H, seed, flags):
    if H < 2:
        flags = {k: v for k, v in flags.items() if k == "zero_v"}
    return MultiHead.random(d, H, seed=seed, biases=True, **flags)


def _learn(model, H, *, method="paper", mode=None, seed=0, **kw):
    oracle = ExactOracle(model)
    result = learn_multi_head(oracle, heads=H, biases=True, method=method, mode=mode, seed=seed, **kw)
    assert oracle.count == result.queries + result.verification_queries  # the oracle's own counter
    return result


def _check(model, H, *, method="paper", mode=None, seed=0):
    result = _learn(model, H, method=method, mode=mode, seed=seed)
    truth = canonical_form(model)
    assert result.exact and result.model == truth  # Fractions, compared with ==
    assert result.model.b == model.b and result.model.biased == truth.biased
    assert result.details["canonical_heads"] == truth.H and result.details["biases"]
    assert result.max_length == 2 * H + 1 and result.report.holds
    if result.details["redraws"] == 0:
        if method == "paper":
            assert result.queries == paper_query_count(model.d, H, True) == 4 * H * (model.d**2 + model.d) - 2 * H + 1
        elif result.details["fallback_groups"] == 0:
            assert result.queries == fast_query_count(model.d, H, True)
    return result


def test_the_counts():
    assert [paper_query_count(d, 2, True) for d in (1, 2, 3)] == [13, 45, 93]
    assert paper_query_count(8, 4, True) - paper_query_count(8, 4) == 4 * 4 * 8  # one more group: 2d blocks of 2H
    assert fast_query_count(2, 2, True) == 5 + 4 + 3 + 3 * 2 * 2
    assert lower_bound(3, 2, True) == 2 * (9 + 6) + 1
    for d, H in SWEEP:
        assert fast_query_count(d, H, True) <= paper_query_count(d, H, True)


@pytest.mark.parametrize("d,H", SWEEP)
def test_exact_over_d_up_to_5_and_H_up_to_4(d, H):
    """Each (d, H) with one of the non-identifiable structures in turn, both plans."""
    name = list(STRUCTURES)[(d + H) % len(STRUCTURES)]
    model = _model(d, H, 100 * d + H, STRUCTURES[name])
    _check(model, H, seed=d)
    _check(model, H, method="fast", seed=d)


@pytest.mark.parametrize("name", list(STRUCTURES))
def test_every_structure_at_d_3_with_3_heads(name):
    model = _model(3, 3, 7, STRUCTURES[name])
    paper = _check(model, 3, seed=2)
    fast = _check(model, 3, method="fast", seed=2)
    assert fast.model == paper.model
    if name == "one W, two c":  # same W, different c: two canonical heads
        assert paper.model.H == 3 and len({h.W for h in paper.model.heads}) == 2
    if name == "duplicate (W, c)":
        assert paper.model.H == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", list(STRUCTURES))
@pytest.mark.parametrize("d,H", SWEEP)
def test_the_whole_sweep(d, H, name):
    model = _model(d, H, 1000 + 10 * d + H, STRUCTURES[name])
    for method in ("paper", "fast"):
        _check(model, H, method=method, seed=H)


def test_zero_entries_of_c_and_v_a_zero_b_and_a_bias_free_model():
    heads = [SingleHead([[1, 0], [0, 2]], [1, 0], c=[0, "1/2"]), SingleHead([[0, 1], [1, 0]], [0, -1], c=[0, 0])]
    _check(MultiHead(heads), 2, seed=3)  # b = 0, one head without c: still the class with biases
    _check(MultiHead(heads, b="-7/3"), 2, seed=3)
    free = MultiHead.random(3, 2, seed=4)  # c = 0 and b = 0: the bias-free model is in the class
    r = _check(free, 2, seed=3)
    assert not r.model.biased and r.model == canonical_form(free)


def test_symbolic_mode():
    model = _model(2, 2, 5, {"shared_w": True})
    _check(model, 2, mode="symbolic", seed=1)
    _check(model, 2, mode="symbolic", method="fast", seed=1)


def test_max_heads_above_the_truth_finds_the_canonical_heads():
    model = _model(3, 2, 9, {"duplicate_w": True})
    oracle = ExactOracle(model)
    r = learn_multi_head(oracle, max_heads=3, biases=True, seed=0)
    assert r.model == canonical_form(model) and r.model.H == 1
    assert r.queries == paper_query_count(3, 3, True) and oracle.count == r.queries + r.verification_queries


def test_too_few_heads_is_refused():
    with pytest.raises(OracleInconsistent, match="more than 1 canonical heads"):
        learn_multi_head(ExactOracle(_model(2, 3, 1, {})), heads=1, biases=True, seed=0)


def test_the_bias_free_learner_names_the_biases_it_meets():
    model = _model(3, 2, 2, {})
    only_b = MultiHead([SingleHead(h.W, h.v) for h in model.heads], b=model.b)
    only_c = MultiHead(model.heads)
    with pytest.raises(OracleInconsistent, match=r"output bias b = .*learn it with biases=True"):
        learn_multi_head(ExactOracle(only_b), heads=2, seed=0)
    with pytest.raises(OracleInconsistent, match="score biases c_h break the cross links: learn with biases=True"):
        learn_multi_head(ExactOracle(only_c), heads=2, seed=0)


def test_bad_flags_are_refused_before_any_query():
    model = _model(2, 2, 3, {})
    oracle = ExactOracle(model)
    with pytest.raises(InvalidArgument, match="biases: expected True or False"):
        learn_multi_head(oracle, heads=2, biases=1)
    assert oracle.count == 0


def test_float_mode_learns_heads_with_biases_within_its_estimate():
    from exact.canonical import float_error

    model = _model(2, 2, 3, {})
    result = learn_multi_head(FloatOracle(model), heads=2, biases=True, seed=0)
    assert result.mode == "float" and result.model.biased
    assert result.model.H == model.canonical().H and float_error(result.model, model) <= result.error_estimate
    assert "among sums of at most 2 softmax heads with biases" in result.assumptions


# -- the certificate --------------------------------------------------------------------------------


def _cert_json(result):
    return json.loads(json.dumps(certificate_to_json(result.certificate)))


def _check_json(data):
    return certificate_from_json(data, model_from_json=model_from_json).check()


def test_the_certificate_records_the_class_and_is_re_derived():
    model = _model(2, 2, 11, {})
    r = _check(model, 2, seed=4)
    data = _cert_json(r)
    assert data["conditions"] == {"heads": 2, "probe_seed": 4, "biases": True}
    report = _check_json(data)
    assert report.holds and "softmax heads with biases" in report.message

    # without the condition the bias-free plan does not identify a model with biases
    dropped = dict(data, conditions={"heads": 2, "probe_seed": 4})
    report = _check_json(dropped)
    assert not report.holds and "which the bias-free plan does not identify" in report.message

    # a different c_1 is refused (the model no longer reproduces the transcript)
    bad = json.loads(json.dumps(data))
    bad["model"]["heads"][0]["c"][0] = str(Fraction(bad["model"]["heads"][0]["c"][0]) + 1)
    assert not _check_json(bad).holds
    bad = json.loads(json.dumps(data))
    bad["model"]["b"] = str(Fraction(bad["model"]["b"]) + Fraction(1, 3))
    assert not _check_json(bad).holds


def test_a_bias_free_certificate_never_certifies_a_model_with_biases():
    free = MultiHead.random(2, 2, seed=3)
    r = learn_multi_head(ExactOracle(free), heads=2, seed=1)
    data = _cert_json(r)
    data["model"]["b"] = "0"
    assert _check_json(data).holds  # b = 0 written out: still bias-free
    data["model"]["b"] = "1/2"
    report = _check_json(data)
    assert not report.holds and "has biases" in report.message


# -- the model ----------------------------------------------------------------------------------------


def test_json_round_trip_and_canonical_merging():
    model = _model(3, 3, 8, {"duplicate_w": True})
    assert model.heads[0].c == model.heads[1].c and model.b != 0
    back = MultiHead.from_json(json.loads(json.dumps(model.to_json())))
    assert back == model
    canon = canonical_form(model)
    assert canon.H == 2 and canon.b == model.b
    merged = [h for h in canon.heads if h.W == model.heads[0].W]
    assert merged[0].v == tuple(a + b for a, b in zip(model.heads[0].v, model.heads[1].v))
    X = [[1, 0, 2], [0, "1/2", -1], [3, 1, 0]]
    assert canon.exact(X) == model.exact(X)
    with pytest.raises(ShapeError, match="the output bias is one number of the model"):
        MultiHead.from_json({"kind": "multi-head", "heads": [{"W": [[1]], "v": [1], "b": 1}]})
    with pytest.raises(ShapeError, match="field 'b': expected a number"):
        MultiHead.from_json({"kind": "multi-head", "heads": [{"W": [[1]], "v": [1]}], "b": [1]})


def test_a_head_s_output_bias_moves_to_the_model_and_one_b_is_exact():
    h1, h2 = SingleHead([[1]], [2], c=[1], b=3), SingleHead([[0]], [1], b="1/2")
    m = MultiHead([h1, h2])
    assert m.b == Fraction(7, 2) and all(h.b == 0 for h in m.heads)
    X = [[1], [2]]
    assert m.exact(X) == ExpSum([h1.exact(X), h2.exact(X)])  # decided exactly
    assert m.exact(X) != ExpSum([h1.exact(X)])
    assert float(m.float(X)) == pytest.approx(float(h1.float(X)) + float(h2.float(X)), abs=1e-12)
    assert float(FloatOracle(m).query(X)) == pytest.approx(float(m.float(X)), abs=1e-12)
    assert MultiHead([], d=2, b=1).exact([[0, 0]]) == SingleHead([[0, 0], [0, 0]], [0, 0], b=1).exact([[0, 0]])


def test_the_families_of_proposition_7_1_refuse_biases():
    from exact.counterexample import counterexample
    from proofs.multihead import prove_equivalent

    model = _model(2, 2, 1, {})
    with pytest.raises(InvalidArgument, match="bias-free heads"):
        counterexample(model)
    with pytest.raises(ValueError, match="its biases would be ignored"):
        prove_equivalent(model, model)


# -- the command line -----------------------------------------------------------------------------------


def test_cli_random_learn_and_certify(tmp_path, capsys):
    path = tmp_path / "m.json"
    assert main(["random", "multi-head", "--d", "2", "--heads", "2", "--biases", "--shared-w", "--seed", "3",
                 "--out", str(path)]) == 0
    capsys.readouterr()
    model = MultiHead.from_json(json.loads(path.read_text()))
    assert model.biased and model.heads[0].W == model.heads[1].W
    cert = tmp_path / "c.json"
    rc = main(["learn", "multi-head", "--model", str(path), "--seed", "1", "--json", "--certificate", str(cert)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    data = json.loads(out)
    assert data["claim"] == "exact" and data["queries"] == paper_query_count(2, 2, True)
    assert MultiHead.from_json(data["model"]) == canonical_form(model)
    assert main(["certify", str(cert)]) == 0
    capsys.readouterr()
    rc = main(["learn", "multi-head", "--model", str(path), "--seed", "1", "--method", "fast"])
    out, err = capsys.readouterr()
    assert rc == 0 and "--biases: from" in out and "--heads 2: from" in out
    assert "b = " in out and "c = [" in out and "equal (W, c) merged" in out and "exact       yes" in out


# -- found by an adversarial review -------------------------------------------------------------------


def test_one_w_and_v_with_evenly_spaced_c_is_learned():
    """At the mean final token, c_1 + c_3 = 2c_2 made heads 1 and 3 both match head 2 for every draw;
    the cross links' random affine weight λ separates them."""
    for d, model in ((1, MultiHead([SingleHead([[1]], [1], [c]) for c in (-1, 0, 1)])),
                     (2, MultiHead([SingleHead([[1, 2], [0, 1]], [1, -1], [c, 2 * c]) for c in (-1, 1, 3)]))):
        for method in ("paper", "fast"):
            for seed in range(3):
                r = _check(model, 3, method=method, seed=seed)
                assert r.details["redraws"] == 0 and r.model.H == 3


def _crafted(seed: int) -> MultiHead:
    """Two heads built against the probes of ``seed``: v_2 ⊥ w_1, w_2, and the heads' difference
    along w_1 × w_3, so that the plan's blocks cannot tell the second head from a change of the first."""
    import random

    from exact.learn.multi_head import Probes

    def cross(a, b):
        return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]

    w1, w2, w3 = Probes.draw(3, random.Random(seed), biases=True).w
    n, v2 = cross(w1, w3), cross(w1, w2)
    W1 = [[1, 2, 0], [-1, Fraction(1, 2), 1], [0, 1, -2]]
    c1 = [Fraction(1, 3), -1, 2]
    W2 = [[W1[i][j] - n[i] * [1, -2, 3][j] for j in range(3)] for i in range(3)]
    c2 = [c1[i] - n[i] / 2 for i in range(3)]
    return MultiHead([SingleHead(W1, [1, 2, -1], c1), SingleHead(W2, v2, c2)], b=Fraction(5, 7)).canonical()


def test_a_model_built_against_the_seed_is_caught_and_its_certificate_refused():
    truth = _crafted(11)
    with pytest.raises(OracleInconsistent, match="verification queries"):
        learn_multi_head(ExactOracle(truth), heads=2, biases=True, seed=11)
    wrong = learn_multi_head(ExactOracle(truth), heads=2, biases=True, seed=11, checks=0)
    assert wrong.model != truth and "for probes generic for the model (their seed independent of it)" in wrong.assumptions
    # the truth on the same transcript: its own answers decode to another model, so it is not identified
    import dataclasses

    report = dataclasses.replace(wrong.certificate, model=truth).check()
    assert not report.holds and "its own answers decode to another model" in report.message
    assert _learn(truth, 2, seed=12).model == truth  # a seed independent of the model


def test_score_biases_the_bias_free_plan_cannot_see_are_caught_by_the_checks():
    """The fast plan has no cross links, and d = 1 has one group: W_h + c_h·1ᵀQ⁻¹ replays every probe."""
    three = MultiHead(MultiHead.random(3, 2, seed=0, biases=True).heads, d=3)  # c_h != 0, b = 0
    one = MultiHead([SingleHead([[1]], [2], [3]), SingleHead([[-1]], [1], ["1/2"])])
    for model, method in ((three, "fast"), (one, "paper"), (one, "fast")):
        with pytest.raises(OracleInconsistent, match="without biases .for heads with biases, learn with biases=True"):
            learn_multi_head(ExactOracle(model), heads=2, method=method, seed=1)
        stated = learn_multi_head(ExactOracle(model), heads=2, method=method, seed=1, checks=0)
        assert stated.model != canonical_form(model)
        assert "among sums of at most 2 softmax heads without biases" in stated.assumptions
        assert _learn(model, 2, method=method, seed=1).model == canonical_form(model)


def test_float_answers_with_an_output_bias_are_refused_without_biases():

    from exact.errors import OracleInconsistent

    biased = MultiHead(list(MultiHead.random(2, 2, seed=3).heads), b="1/4")  # bias-free heads, b = 1/4
    for checks in (8, 0):  # without verification queries too: b is read off f([q₀]) − q₀ᵀΣv_h
        with pytest.raises(OracleInconsistent, match=r"an output bias b ≈ 0.25 .*learn with biases=True"):
            learn_multi_head(FloatOracle(biased), heads=2, seed=0, checks=checks)
