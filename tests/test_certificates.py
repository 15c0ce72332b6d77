"""Tests for exact.certify: replaying a transcript and its verification queries, and what a holding check means.

A certificate names its learner (a registry name), whose spec re-derives the probe set
from the certified model; it states its grid, its verification queries (replayed like
the transcript) or else the assumptions the claim rests on.
"""

import dataclasses
from fractions import Fraction

import pytest

from exact.checks import FRESH_SEED
from exact.certify import (
    CONSISTENT,
    EXACT,
    Certificate,
    CheckReport,
    certificate_from_json,
    certificate_to_json,
    check_transcript,
)
from exact.errors import CertificateInvalid, OracleInconsistent
from exact.io import model_from_json
from exact.learn import learn_single_head
from exact.models import SingleHead
from exact.oracles import CallableOracle, ExactOracle, FloatAnswer, FloatOracle, Query
from test_oracles import mp_single_head

SCOPE = (
    "the single-head learner's probe set, which identifies the model among bias-free single heads; "
    "the model class checked by 2 random queries of lengths 3–4; "
    "assuming it is independent of the check seed (drawn afresh by the learner)"
)


def _mpf_to_fraction(x) -> Fraction:
    sign, man, exp, _ = x._mpf_
    if not man:
        return Fraction(0)
    value = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -value if sign else value


def _tampered(model, i=1, j=2, delta=Fraction(1, 10**20)):
    W = [list(r) for r in model.W]
    W[i][j] += delta
    return SingleHead(W, model.v)


def _reason(cert, **changes) -> str:
    report = dataclasses.replace(cert, **changes).check()
    assert not report.holds and report.failed == 0 and report.message == f"certificate FAILS: {report.reason}"
    return report.reason


@pytest.fixture(scope="module")
def learned():
    truth = SingleHead.random(3, seed=5)
    oracle = ExactOracle(truth)
    result = learn_single_head(oracle)
    return truth, oracle, result


# -- exact certificates --------------------------------------------------------------------------


def test_exact_certificate_holds(learned):
    truth, oracle, result = learned
    assert result.model == truth
    assert result.queries == 12 and result.verification_queries == 2 and oracle.count == 14
    cert = result.certificate
    assert isinstance(cert, Certificate) and cert.kind == EXACT
    assert len(cert.transcript) == 12 and cert.transcript == oracle.transcript[:12]
    assert len(cert.checks) == 2 and cert.checks == oracle.transcript[12:]
    assert (cert.learner, cert.conditions, cert.grid, cert.assumptions) == ("single-head", {}, None, (FRESH_SEED,))
    report = cert.check()
    assert isinstance(report, CheckReport)
    assert report.holds and bool(report)
    assert (report.kind, report.checked, report.failures, report.failed) == ("exact", 14, (), 0)
    assert report.message == f"certificate holds: the model's values are exactly equal to all 14 answers ({SCOPE})"
    assert report.raise_for_failure() is report
    assert result.report == report
    assert repr(cert) == "Certificate(kind='exact', learner='single-head', queries=12)"


def test_tampered_certificate_fails(learned):
    _, _, result = learned
    bad = dataclasses.replace(result.certificate, model=_tampered(result.model))
    report = bad.check()
    assert not report.holds and not bool(report)
    assert report.kind == "exact" and report.checked == 14
    assert report.failed >= 1 and len(report.failures) == report.failed
    assert all(0 <= i < 14 for i in report.failures)
    shown = ", ".join(f"#{i}" for i in report.failures)
    expected = f"certificate FAILS: {report.failed} of 14 answers are not reproduced by the model (first: {shown})"
    assert report.message == expected
    with pytest.raises(CertificateInvalid, match=r"^certificate FAILS: \d+ of 14 answers are not reproduced") as info:
        report.raise_for_failure()
    assert isinstance(info.value, ValueError)


def test_every_single_entry_tamper_is_detected(learned):
    _, _, result = learned
    for i in range(3):
        for j in range(3):
            assert not dataclasses.replace(result.certificate, model=_tampered(result.model, i, j)).check().holds
    v = list(result.model.v)
    v[0] += Fraction(1, 10**20)
    assert not dataclasses.replace(result.certificate, model=SingleHead(result.model.W, v)).check().holds


def test_swapped_answer_certificate_fails(learned):
    _, _, result = learned
    cert = result.certificate
    entries = list(cert.transcript)
    entries[5] = Query(entries[5].X, entries[6].answer)
    report = dataclasses.replace(cert, transcript=tuple(entries)).check()
    assert not report.holds
    assert report.failures == (5,) and report.failed == 1
    with pytest.raises(CertificateInvalid, match=r"^certificate FAILS: 1 of 14 answers are not reproduced by the model \(first: #5\)$"):
        report.raise_for_failure()


def test_verification_queries_are_replayed_like_the_transcript(learned):
    _, _, result = learned
    cert = result.certificate
    checks = list(cert.checks)
    checks[1] = Query(checks[1].X, checks[0].answer)  # an answer of the other check
    report = dataclasses.replace(cert, checks=tuple(checks)).check()
    assert not report.holds and report.failures == (13,) and report.failed == 1  # numbered after the transcript
    assert report.message == "certificate FAILS: 1 of 14 answers are not reproduced by the model (first: #13)"


def test_failures_listed_at_most_ten():
    truth = SingleHead.random(4, seed=9)
    cert = learn_single_head(ExactOracle(truth)).certificate
    other = SingleHead([[x + 1 for x in r] for r in truth.W], [x + 1 for x in truth.v])
    report = dataclasses.replace(cert, model=other, learner=None, checks=(), check_seed=None).check()  # replay only
    assert report.checked == 20 and report.failed == 20 and report.failures == tuple(range(10))
    assert _reason(cert, model=other) == (
        "the transcript is not the Theorem 4.1 probe set for this model's v, so it need not identify it"
    )


def test_certificate_kind_mismatch_fails(learned):
    _, _, result = learned
    report = dataclasses.replace(result.certificate, kind=CONSISTENT).check()
    assert not report.holds and report.kind == CONSISTENT
    assert report.message == "certificate FAILS: the answers are of kind 'exact' but the certificate claims 'consistent'"


def test_check_transcript_directly(learned):
    truth, oracle, _ = learned
    assert check_transcript(truth, oracle.transcript).holds
    assert not check_transcript(_tampered(truth), oracle.transcript).holds


def test_empty_transcript_proves_nothing(learned):
    _, _, result = learned
    report = dataclasses.replace(result.certificate, transcript=()).check()
    assert not report.holds and report.message == "certificate FAILS: the transcript is empty, so it proves nothing"


# -- what a holding check means: learner, conditions, checks, assumptions, grid -------------------


def test_single_head_certificate_needs_the_identifying_probe_set():
    truth = SingleHead.random(3, seed=4)
    cert = learn_single_head(ExactOracle(truth)).certificate
    assert cert.learner == "single-head" and cert.check().holds
    short = dataclasses.replace(cert, transcript=cert.transcript[:-1])  # every answer still reproduced
    assert check_transcript(truth, short.transcript).holds
    assert _reason(short) == "the transcript is not the Theorem 4.1 probe set for this model's v, so it need not identify it"


def test_certificate_scope_and_identification_conditions(learned):
    truth, _, result = learned
    cert = result.certificate
    replay_only = dataclasses.replace(cert, learner=None)
    assert replay_only.check().message.endswith(
        "(replay only: the transcript is not checked to identify the model; "
        "the model class checked by 2 random queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))"
    )
    assert _reason(cert, model=SingleHead(truth.W, [0] * truth.d)) == (
        "v = 0, so no query depends on W: the transcript cannot identify it"
    )
    assert _reason(cert, learner="low-rank", conditions={"max_rank": truth.d}) == (
        "conditions: 'max_rank' is not a condition of learner 'low-rank' (allowed: biases, rank, sketch_scale_bits, sketch_seed)"
    )
    assert _reason(cert, learner="low-rank") == "a low-rank certificate must record its sketch seed (conditions sketch_seed)"
    assert _reason(cert, learner="low-rank", conditions={"sketch_seed": 0}) == (
        "the transcript is not the low-rank learner's probe set for this model, rank bound and sketch seed, "
        "so it need not identify the model"
    )
    assert _reason(cert, conditions={"foo": 1}) == "conditions: 'foo' is not a condition of learner 'single-head' (allowed: w_scale)"
    assert _reason(cert, learner=None, conditions={"rank": 1}) == "conditions are stated without a learner to interpret them"
    assert _reason(cert, learner="low-rank-cs") == "learner 'low-rank-cs' gives approximate results, which carry no certificate"
    from exact import registry

    names = ", ".join(sorted(spec.name for spec in registry.learners()))
    assert "low-rank, low-rank-cs" in names and "single-head" in names
    assert _reason(cert, learner="single_head") == (  # the old label is not a registry name
        f"learner: unknown learner 'single_head'; registered: {names}"
    )


def test_without_verification_queries_the_assumptions_must_be_stated(learned):
    _, _, result = learned
    cert = result.certificate
    assert _reason(cert, checks=()) == (
        "the certificate holds no verification query, yet does not state the assumptions its claim then rests on: "
        "among bias-free single heads"
    )
    stated = dataclasses.replace(cert, checks=(), assumptions=("among bias-free single heads",))
    report = stated.check()
    assert report.holds and report.checked == 12
    assert report.message == (
        "certificate holds: the model's values are exactly equal to all 12 answers (the single-head learner's probe "
        "set, which identifies the model among bias-free single heads; assuming it is among bias-free single heads)"
    )


def test_verification_queries_must_be_the_ones_their_seed_gives(learned):
    _, _, result = learned
    cert = result.certificate
    forged = (
        "the verification queries are not the ones the recorded check seed gives for this model, "
        "so they need not be random"
    )
    assert _reason(cert, checks=cert.transcript[-2:]) == forged  # probes posing as checks
    assert _reason(cert, check_seed=cert.check_seed + 1) == forged  # another seed
    assert _reason(cert, check_seed=None) == "the certificate holds verification queries but not the seed they were drawn from"


@pytest.mark.parametrize("grid,holds", [("rational:7", True), ("rational:2", False), ("float32", False)])
def test_every_parameter_must_lie_on_the_stated_grid(learned, grid, holds):
    truth, _, result = learned
    assert max(x.denominator for x in truth.parameters()) == 7  # drawn on rational:7
    report = dataclasses.replace(result.certificate, grid=grid).check()
    assert report.holds is holds
    if holds:
        assert report.message.endswith(f"every parameter on grid {grid}; the model class checked by 2 random queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))")
    else:
        assert report.reason.startswith("parameter #") and report.reason.endswith(f" of the model is not on the stated grid {grid}")


def test_grid_mode_on_an_exact_oracle_refuses_an_off_grid_truth():
    truth = SingleHead([[Fraction(1, 3) + Fraction(1, 10**30), 0], [0, 1]], [1, 1])
    with pytest.raises(OracleInconsistent, match="the true parameters are not on that grid"):
        learn_single_head(ExactOracle(truth), grid="rational:10")


def test_json_round_trip_keeps_checks_grid_and_assumptions(learned):
    _, _, result = learned
    for cert in (result.certificate, dataclasses.replace(result.certificate, checks=(), assumptions=("among bias-free single heads",))):
        data = certificate_to_json(cert)
        assert data["learner"] == "single-head" and len(data["checks"]) == len(cert.checks)
        back = certificate_from_json(data, model_from_json=model_from_json)
        assert (back.model, back.learner, back.conditions, back.grid, back.assumptions) == (
            cert.model, cert.learner, cert.conditions, cert.grid, cert.assumptions
        )
        assert [q.X for q in back.transcript + back.checks] == [q.X for q in cert.transcript + cert.checks]
        assert back.check() == cert.check() and back.check().holds


@pytest.mark.parametrize("change,match", [
    (dict(conditions={"max_rank": 2}), r"^certificate: conditions: 'max_rank' is not a condition of learner 'single-head'"),
    (dict(learner="single_head"), r"^certificate: learner: unknown learner 'single_head'; registered: "),
    (dict(grid="float31"), r"^grid: expected 'rational:Q', "),
    (dict(assumptions="among bias-free single heads"), r"^certificate: expected assumptions as a list of strings$"),
])
def test_json_refuses_what_the_registry_does_not_know(learned, change, match):
    _, _, result = learned
    data = certificate_to_json(result.certificate) | change
    with pytest.raises(ValueError, match=match):
        certificate_from_json(data, model_from_json=model_from_json)


# -- consistent certificates (approximate oracles) --------------------------------------------------


@pytest.fixture(scope="module")
def callable_setup():
    truth = SingleHead.random(3, seed=5, grid="rational:7")
    queried = []

    def fn(X):  # an independent mpmath evaluation at 60 digits; the mpf is taken at its exact value
        queried.append(X)
        return mp_single_head(truth, [[Fraction(float(x)) for x in row] for row in X])

    oracle = CallableOracle(fn, d=3, accuracy=Fraction(1, 10**50))
    result = learn_single_head(oracle, mode="certified", grid="rational:100")
    return truth, oracle, result, queried


def test_callable_certificate_consistent(callable_setup):
    truth, oracle, result, queried = callable_setup
    assert any(x < 0 for x in truth.v)  # negative mpf answers are exercised
    assert all(isinstance(q.answer, Fraction) for q in oracle.transcript)
    assert [q.answer for q in oracle.transcript] == [
        _mpf_to_fraction(mp_single_head(truth, q.X.dense())) for q in oracle.transcript
    ]
    assert result.model == truth
    assert result.grid == "rational:100" and result.mode == "certified" and result.exact
    assert result.queries == 12 and result.verification_queries == 2
    assert oracle.count == result.total_queries == 14 == len(queried)
    cert = result.certificate
    assert cert.kind == "consistent" and cert.grid == "rational:100"
    assert cert.accuracy == Fraction(1, 10**50) and cert.rtol == 0
    report = cert.check()
    assert report.holds and report.kind == "consistent" and report.checked == 14
    assert report.message == (
        "certificate holds: the model's values are consistent with all 14 answers (within the declared accuracy "
        "±1e-50 (plus each float answer's rounding bound); the single-head learner's probe set; every parameter on "
        "grid rational:100; the model class checked by 2 random queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))"
    )


def test_callable_certificate_fails_when_tampered(callable_setup):
    _, _, result, _ = callable_setup
    cert = result.certificate
    # a tamper off the stated grid is caught by the grid condition ...
    assert _reason(cert, model=_tampered(result.model)) == "parameter #5 of the model is not on the stated grid rational:100"
    # ... and one on the grid by the replay
    report = dataclasses.replace(cert, model=_tampered(result.model, delta=Fraction(1))).check()
    assert not report.holds and report.kind == "consistent" and report.failed >= 1 and report.reason is None
    with pytest.raises(CertificateInvalid, match=r"^certificate FAILS: \d+ of 14 answers are not reproduced"):
        report.raise_for_failure()
    # an answer off by more than the declared accuracy also fails
    entries = list(cert.transcript)
    entries[3] = Query(entries[3].X, entries[3].answer + Fraction(1, 10**45))
    report = dataclasses.replace(cert, transcript=tuple(entries)).check()
    assert report.failures == (3,)
    # ... while one within it still holds
    entries[3] = Query(entries[3].X, cert.transcript[3].answer + Fraction(1, 10**52))
    assert dataclasses.replace(cert, transcript=tuple(entries)).check().holds


def test_a_float_answer_cannot_widen_its_own_rounding_bound():
    """A float answer's recorded error is capped by the bound recomputed from the certified model."""
    truth = SingleHead.random(3, seed=5, grid="rational:7")
    result = learn_single_head(FloatOracle(truth), grid="rational:100", w_bound=8)
    assert result.model == truth and result.exact
    cert = result.certificate
    assert cert.kind == CONSISTENT and cert.check().holds
    honest = cert.transcript[7].answer
    assert isinstance(honest, FloatAnswer) and 0 < honest.error < 1e-12
    entries = list(cert.transcript)
    entries[7] = Query(entries[7].X, FloatAnswer(float(honest), 1.0))  # same value, an inflated claim: harmless
    assert dataclasses.replace(cert, transcript=tuple(entries)).check().holds
    entries[7] = Query(entries[7].X, FloatAnswer(float(honest) + 1e-9, 1.0))  # a wrong value hiding behind it
    report = dataclasses.replace(cert, transcript=tuple(entries)).check()
    assert not report.holds and report.failures == (7,)
