"""Regression tests: no wrong result is ever labelled exact.

Each test reproduces a way in which an earlier version returned a wrong model with
``exact=True`` and a holding certificate, and checks it no longer can.
"""

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from exact import CallableOracle, ExactOracle, FloatOracle, MultiHead, SingleHead, learn_low_rank, learn_single_head
from exact.certify import Certificate, certificate_from_json, certificate_to_json
from exact.errors import ExactAttentionError, InvalidNumber, OracleInconsistent
from exact.io import model_from_json
from exact.numbers import to_fraction
from exact.oracles import FloatAnswer, Query
from exact.sequences import Sequence


# -- A1: answers wider than float64 are taken at their exact value ----------------------


def test_longdouble_is_converted_exactly_not_through_float64():
    x = np.longdouble(1) / 3
    p, q = x.as_integer_ratio()
    assert to_fraction(x) == Fraction(p, q)
    if np.finfo(np.longdouble).nmant > 52:  # a genuinely wider type on this platform
        assert to_fraction(x) != Fraction(float(x))


def test_zero_dimensional_array_is_a_scalar():
    assert to_fraction(np.array(2.5)) == Fraction(5, 2)
    assert to_fraction(np.array(np.longdouble(1) / 3)) == to_fraction(np.longdouble(1) / 3)
    with pytest.raises(InvalidNumber, match="expected a scalar, got an array of shape"):
        to_fraction(np.array([1.0]))
    with pytest.raises(InvalidNumber, match="expected a finite real number"):
        to_fraction(np.longdouble("nan"))


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="longdouble is float64 here")
def test_longdouble_callable_on_a_fine_dyadic_grid_is_never_wrong():
    """accuracy 1e-18, grid dyadic:55: an answer rounded to float64 used to give wrong exact heads."""
    outcomes = {"exact": 0, "refused": 0}
    for seed in range(40):
        truth = SingleHead.random(1, seed=seed, grid="dyadic:55", bound=1)

        def fn(X, truth=truth):
            y = truth.ball([[to_fraction(float(r[0]))] for r in X], prec=300)
            return np.longdouble(y.mid().str(40, radius=False))

        try:
            result = learn_single_head(CallableOracle(fn, d=1, accuracy="1e-18"), grid="dyadic:55")
        except ExactAttentionError:
            outcomes["refused"] += 1
            continue
        assert result.model == truth, f"seed {seed}: a wrong head was labelled exact"
        outcomes["exact"] += 1
    assert outcomes["exact"] >= 10  # the test exercises the exact path, not only refusals


# -- A2: a rank bound below the truth is detected, not returned as exact ------------------


def _rank2(d=6, seed=3):
    truth = SingleHead.random(d, seed=seed, rank=2)
    assert truth.rank == 2
    return truth


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rank_bound_below_the_truth_raises_by_default(seed):
    truth = _rank2(seed=seed)
    oracle = ExactOracle(truth)
    with pytest.raises(OracleInconsistent, match=r"^not a single head of rank <= 1: .*among heads of rank <= 1"):
        learn_low_rank(oracle, rank=1)
    # the learner's own queries plus the verification queries were all counted
    assert oracle.count == 2 * 1 * 6 - 1 + 6 + 2


def test_rank_bound_below_the_truth_without_checks_says_what_it_assumes():
    truth = _rank2()
    r = learn_low_rank(ExactOracle(truth), rank=1, checks=0)
    assert r.model != truth  # the learner alone cannot see the violation...
    assert r.exact and r.assumptions == ("among bias-free single heads", "among heads of rank <= 1", "for a sketch generic for W (its seed independent of W)")  # ...so it says so
    assert r.claim == "exact among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W)"
    assert r.certificate.assumptions == r.assumptions
    report = r.certificate.check()
    assert report.holds and "assuming it is among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W)" in report.message
    # dropping the stated assumption from the certificate makes it fail
    import dataclasses

    bare = dataclasses.replace(r.certificate, assumptions=())
    assert not bare.check().holds and "does not state the assumptions" in bare.check().message


def test_a_public_sketch_seed_cannot_be_targeted_when_checks_are_on():
    """A rank-2 W built so that the public seed's sketch sees rank 1 passes the learner alone, not the checks."""
    from exact.learn.low_rank import _sketch

    d, seed = 5, 1234
    rng = np.random.default_rng(seed)
    b1, b2 = _sketch(rng, d), _sketch(rng, d)  # the first two sketch columns the learner will draw
    # W = x yᵀ + p qᵀ with q ⊥ b1, b2: on span{b1, b2} W acts like the rank-1 x yᵀ, so the
    # second column adds nothing and the rank search stops at 1
    y = [Fraction(1)] * d
    q = [b1[1] * b2[2] - b1[2] * b2[1], b1[2] * b2[0] - b1[0] * b2[2], b1[0] * b2[1] - b1[1] * b2[0], 0, 0]
    q = [Fraction(t) for t in q]
    x, p = [Fraction(i + 1) for i in range(d)], [Fraction((-1) ** i) for i in range(d)]
    W = [[x[i] * y[j] + p[i] * q[j] for j in range(d)] for i in range(d)]
    truth = SingleHead(W, [1, 2, 3, 4, 5])
    assert truth.rank == 2
    wrong = learn_low_rank(ExactOracle(truth), seed=seed, checks=0)  # rank found: 1, wrongly
    assert wrong.details["rank"] == 1 and wrong.model != truth and wrong.assumptions
    with pytest.raises(OracleInconsistent, match="not a single head"):
        learn_low_rank(ExactOracle(truth), seed=seed)


# -- A3: a black box outside the model class -------------------------------------------------


def _mirror(d=3, seed=0):
    h = SingleHead.random(d, seed=seed)
    neg = SingleHead([[-x for x in row] for row in h.W], h.v)
    return MultiHead([h, neg]), SingleHead([[0] * d] * d, [2 * x for x in h.v])


@pytest.mark.parametrize("mode", ["certified", "symbolic", "float"])
def test_a_multihead_that_matches_a_single_head_up_to_length_2_is_refused(mode):
    multi, fake = _mirror()
    X2 = [[1, "1/2", -2], ["1/3", 0, 1]]
    assert multi.exact(X2) == fake.exact(X2)  # indistinguishable at N <= 2 ...
    X3 = X2 + [[2, 1, "-1/5"]]
    assert not multi.exact(X3) == fake.exact(X3)  # ... but not at N = 3
    oracle = ExactOracle(multi)
    with pytest.raises(OracleInconsistent, match=r"^not a single head"):
        learn_single_head(oracle, mode=mode)
    assert oracle.count == 3 * 3 + 3 + 2


def test_without_checks_the_result_says_among_single_heads():
    multi, fake = _mirror()
    r = learn_single_head(ExactOracle(multi), checks=0)
    assert r.model == fake and r.exact  # exact *among bias-free single heads*, and labelled so
    assert r.assumptions == ("among bias-free single heads",) and r.claim == "exact among bias-free single heads"
    assert r.verification_queries == 0 and r.certificate.assumptions == ("among bias-free single heads",)


def test_checks_are_counted_apart_and_use_fresh_randomness():
    truth = SingleHead.random(4, seed=9)
    o1, o2 = ExactOracle(truth), ExactOracle(truth)
    r1, r2 = learn_single_head(o1), learn_single_head(o2)
    assert r1.queries == r2.queries == 20 and r1.verification_queries == 2
    assert o1.count == r1.total_queries == 22
    assert [q.X.length for q in r1.certificate.checks] == [3, 4]
    assert r1.details["checks"]["seed"] != r2.details["checks"]["seed"]
    assert [q.X for q in r1.certificate.checks] != [q.X for q in r2.certificate.checks]
    r3 = learn_single_head(ExactOracle(truth), check_seed=r1.details["checks"]["seed"])
    assert [q.X for q in r3.certificate.checks] == [q.X for q in r1.certificate.checks]


# -- A4: certificates state what they check, and check it ------------------------------------


def test_hand_made_low_rank_certificate_of_repeated_basis_queries_fails():
    for truth in (SingleHead([[1, 0], [0, 0]], [1, 1]), SingleHead([[2, 1], [0, 0]], [1, 1])):
        oracle = ExactOracle(truth)
        transcript = tuple(Query(X, a) for X, a in zip([Sequence.basis(2, 0)] * 5, oracle.query_batch([[[1, 0]]] * 5)))
        for conditions in ({"rank": 1, "sketch_seed": 0}, {"sketch_seed": 7}):
            cert = Certificate(truth, transcript, learner="low-rank", conditions=conditions,
                               assumptions=("among bias-free single heads", "among heads of rank <= 1", "for a sketch generic for W (its seed independent of W)"))
            report = cert.check()
            assert not report.holds
            assert "not the low-rank learner's probe set" in report.message


def test_certificate_records_learner_grid_rank_and_seed_and_round_trips():
    truth = SingleHead.random(6, seed=4, rank=2)
    r = learn_low_rank(ExactOracle(truth), rank=2, seed=99)
    cert = r.certificate
    assert (cert.learner, dict(cert.conditions), cert.grid) == ("low-rank", {"sketch_seed": 99, "rank": 2, "sketch_scale_bits": 24}, None)
    back = certificate_from_json(certificate_to_json(cert), model_from_json=model_from_json)
    assert back.check().holds and dict(back.conditions) == dict(cert.conditions)
    # another seed names another probe set: the transcript no longer matches
    other = dataclasses.replace(cert, conditions={"sketch_seed": 100, "rank": 2, "sketch_scale_bits": 24})
    assert "not the low-rank learner's probe set" in other.check().message


@pytest.mark.parametrize("conditions", [{"max_rank": 2}, {"rank": "2"}, {"foo": 1}, {"rank": True}, {"sketch_seed": -1}])
def test_malformed_conditions_are_refused(conditions):
    r = learn_low_rank(ExactOracle(SingleHead.random(4, seed=1, rank=1)), rank=1)
    bad = dataclasses.replace(r.certificate, conditions=conditions)
    assert not bad.check().holds and "conditions" in bad.check().message
    data = certificate_to_json(r.certificate) | {"conditions": conditions}
    with pytest.raises(ValueError, match="conditions"):
        certificate_from_json(data, model_from_json=model_from_json)


def test_learner_and_conditions_on_a_multihead_are_refused():
    r = learn_single_head(ExactOracle(SingleHead([[1]], [1])))
    cert = dataclasses.replace(r.certificate, model=MultiHead([SingleHead([[1]], [1])]))
    assert "learns single-head models" in cert.check().message
    cert = dataclasses.replace(r.certificate, learner=None, conditions={"rank": 1})
    assert "conditions are stated without a learner" in cert.check().message


def _float32_grid_run():
    truth = SingleHead.random(3, seed=5, grid="float32", bound=4)
    return truth, learn_single_head(FloatOracle(truth), grid="float32")


def test_consistent_certificate_says_consistent_and_checks_the_grid():
    truth, r = _float32_grid_run()
    assert r.model == truth and r.certificate.kind == "consistent" and r.certificate.grid == "float32"
    msg = r.certificate.check().message
    assert "consistent with all 14 answers" in msg and "every parameter on grid float32" in msg
    assert "identifies" not in msg
    # a model off the recorded grid fails, even though it may be consistent with every answer
    W = [list(row) for row in truth.W]
    W[0][0] += Fraction(1, 2**60)
    off = dataclasses.replace(r.certificate, model=SingleHead(W, truth.v))
    assert "not on the stated grid float32" in off.check().message


def test_inflating_recorded_float_errors_does_not_let_a_wrong_model_pass():
    truth, r = _float32_grid_run()
    W = [list(row) for row in truth.W]
    W[1][2] = Fraction(float(np.nextafter(np.float32(W[1][2]), np.float32(np.inf))))  # one float32 ulp away
    wrong = SingleHead(W, truth.v)
    inflated = tuple(Query(q.X, FloatAnswer(float(q.answer), 1.0)) for q in r.certificate.transcript)
    checks = tuple(Query(q.X, FloatAnswer(float(q.answer), 1.0)) for q in r.certificate.checks)
    cert = dataclasses.replace(r.certificate, model=wrong, transcript=inflated, checks=checks)
    assert not cert.check().holds
    # the same through JSON, where the error fields are plain text anyone can edit
    data = certificate_to_json(cert)
    assert all(e["answer"]["error"] == "1" for e in data["transcript"])
    assert not certificate_from_json(data, model_from_json=model_from_json).check().holds
    # while the true model still passes with the inflated fields (they are only capped)
    assert dataclasses.replace(cert, model=truth).check().holds


# -- A5: certify=False with a grid is not labelled exact --------------------------------------


def test_grid_identification_without_replay_is_not_labelled_exact():
    # 1/2 + 2^-100 is not on the float32 grid, but a 64-bit ball around it also holds 1/2
    truth = SingleHead([[Fraction(1, 2) + Fraction(1, 2**100), 0], [0, 1]], [1, 1])
    r = learn_single_head(ExactOracle(truth), grid="float32", certify=False, checks=0)
    assert r.model.W[0][0] == Fraction(1, 2) and r.model != truth
    assert not r.exact and r.claim.startswith("approximate")
    with pytest.raises(OracleInconsistent, match="not on that grid"):
        learn_single_head(ExactOracle(truth), grid="float32")


# -- A6: no traceback from the API --------------------------------------------------------------


@pytest.mark.parametrize("kw", [{}, {"grid": "float32"}, {"grid": "rational:10"}])
def test_huge_callable_answer_is_a_clean_error(kw):
    oracle = CallableOracle(lambda X: Fraction(10**400, 3), d=1, accuracy="1e-9")
    with pytest.raises(ExactAttentionError) as info:
        learn_single_head(oracle, **kw)
    assert "e+399" in str(info.value)


def test_zero_dimensional_array_answers_are_accepted():
    truth = SingleHead([[1, "1/2"], [0, -1]], [2, 1])
    oracle = CallableOracle(lambda X: np.array(truth.float(X)), d=2, accuracy="1e-12")
    r = learn_single_head(oracle, grid="rational:8")
    assert r.model == truth and r.exact


# -- A7: an honest message for a callable computing in too low a precision -----------------------


def test_float32_callable_with_too_small_an_accuracy_is_told_about_the_accuracy():
    truth = SingleHead.random(3, seed=2, grid="float32")
    W32, v32 = (a.astype(np.float32) for a in truth.to_numpy())

    def fn(X):  # a float32 model evaluated in float32: errors ~1e-7, far above the declared 1e-12
        X = np.asarray(X, dtype=np.float32)
        s = X @ W32 @ X[-1]
        e = np.exp(s - s.max())
        return float((e @ (X @ v32)) / e.sum())

    with pytest.raises((OracleInconsistent, ExactAttentionError)) as info:
        learn_single_head(CallableOracle(fn, d=3, accuracy="1e-12"), grid="float32")
    msg = str(info.value)
    assert "accura" in msg and "higher precision" in msg or "declared accuracy" in msg


# -- A8: random low-rank heads on a float grid are on the grid ------------------------------------


@pytest.mark.parametrize("grid", ["float32", "bfloat16", "float16", "float64"])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_random_low_rank_head_on_a_float_grid_is_on_the_grid(grid, rank):
    from exact.grids import parse_grid

    h = SingleHead.random(6, seed=rank, grid=grid, rank=rank)
    g = parse_grid(grid)
    assert h.rank == rank and all(g.contains(x) for x in h.parameters())
    r = learn_single_head(ExactOracle(h), grid=grid)  # hence identified on that grid, and confirmed
    assert r.model == h and r.exact
