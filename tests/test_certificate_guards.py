"""Certificates refuse what they cannot vouch for: malformed files, unknown kinds and learners,
models without parameters, float answers whose recorded error is out of range; and they say
precisely what a holding check covers."""

import dataclasses
import json
from fractions import Fraction

import pytest

from exact import CallableOracle, ExactOracle, FloatOracle, SingleHead, learn_single_head, registry
from exact.certify import (
    Certificate,
    CheckReport,
    certificate_from_json,
    certificate_to_json,
    check_transcript,
    failed_entries,
    transcript_from_json,
)
from exact.errors import InvalidFormat
from exact.io import model_from_json
from exact.oracles import Query
from exact.progress import reporting
from exact.sequences import Sequence


@pytest.fixture(scope="module")
def exact_run():
    return learn_single_head(ExactOracle(SingleHead([[1, "1/2"], [0, -1]], [2, 1])))


@pytest.fixture(scope="module")
def float_run():
    truth = SingleHead.random(3, seed=5, grid="float32", bound=4)
    return truth, learn_single_head(FloatOracle(truth), grid="float32")


def load(data):
    return certificate_from_json(data, model_from_json=model_from_json)


# -- the report itself ---------------------------------------------------------------------------


def test_reports_are_frozen(exact_run):
    report = exact_run.certificate.check()
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.holds = False  # type: ignore[misc]
    assert isinstance(report, CheckReport) and bool(report) is True


def test_unknown_certificate_kind_fails(exact_run):
    report = dataclasses.replace(exact_run.certificate, kind="maybe").check()
    assert not report.holds and report.reason == "unknown certificate kind 'maybe'"


def test_the_span_of_check_lengths_is_reported():
    truth = SingleHead([[1, "1/2"], [0, -1]], [2, 1])
    three = learn_single_head(ExactOracle(truth), checks=3).certificate
    assert "checked by 3 random queries of lengths 3–4" in three.check().message
    one = learn_single_head(ExactOracle(truth), checks=1).certificate
    assert "checked by 1 random query of length 3; assuming it is independent of the check seed" in one.check().message


def test_forged_checks_of_equal_tokens_do_not_make_a_wrong_model_hold():
    """Sequences of equal tokens have the same value under every attention model: as checks they
    would prove nothing, and a certificate must not accept them in place of its seed's queries."""
    from exact import MultiHead

    W, w = [[1, 2], [0, 1]], [1, "1/2"]
    black_box = MultiHead([(W, w), ([[-x for x in r] for r in W], w)])
    r = learn_single_head(ExactOracle(black_box), checks=0)  # (0, 2w): exact only among bias-free single heads
    oracle = ExactOracle(black_box)
    forged = tuple(Query(X, oracle.query(X)) for X in (Sequence.from_rows([[1, 2]] * 3), Sequence.from_rows([[3, 1]] * 4)))
    cert = dataclasses.replace(r.certificate, checks=forged, check_seed=0, assumptions=())
    assert all(q.answer._exp_form() == r.model.exact(q.X) for q in forged)  # they do agree ...
    assert not cert.check().holds  # ... but they are not the seed's random queries
    data = certificate_to_json(cert)
    assert not load(data).check().holds


def test_replay_reports_progress_for_large_transcripts():
    h = SingleHead([[1]], [2])
    oracle = ExactOracle(h)
    transcript = [Query(X, a) for X, a in zip([Sequence.basis(1, 0)] * 4100, oracle.query_batch([[[1]]] * 4100))]
    seen = []
    with reporting(lambda phase, done, total: seen.append((phase, done, total))):
        assert failed_entries(h, transcript) == []
    assert seen == [("replay", 4096, 4100)]


# -- approximate answers: the precision of the consistency check ---------------------------------


def test_consistent_replay_with_zero_and_tiny_declared_errors():
    from exact.numbers import ball_interval

    truth = SingleHead([[1, "1/3"], [0, 2]], ["1/2", 1])
    X = Sequence.from_rows([[0, 1], [0, 1]])  # equal scores: the answer is the rational vᵀx = 1
    oracle = CallableOracle(lambda x: Fraction(1), d=2, accuracy=0)  # exact, from a callable: error 0
    q = Query(X, oracle.query(X))
    report = check_transcript(truth, [q])
    assert report.holds and report.kind == "consistent"
    assert not check_transcript(SingleHead([[1, "1/3"], [0, 2]], ["1/2", 2]), [q]).holds
    # an irrational value known to 1e-200: the check must resolve at that precision, not at 256 bits
    Y = Sequence.from_rows([[1, 1], [0, 1]])
    lo, hi = ball_interval(truth.ball(Y, prec=1000))
    tight = CallableOracle(lambda x: (lo + hi) / 2, d=2, accuracy="1e-200")
    q2 = Query(Y, tight.query(Y))
    assert failed_entries(truth, [q2], accuracy=Fraction(1, 10**200)) == []
    other = SingleHead([[1, Fraction(1, 3) + Fraction(1, 10**150)], [0, 2]], ["1/2", 1])
    assert failed_entries(other, [q2], accuracy=Fraction(1, 10**200)) == [0]


# -- what a learner's registry entry allows --------------------------------------------------------


def test_a_model_without_parameters_cannot_be_checked_against_a_grid(exact_run):
    @dataclasses.dataclass(frozen=True)
    class Opaque:
        kind: str = "single-head"

    cert = dataclasses.replace(exact_run.certificate, model=Opaque(), grid="float32")
    assert cert.check().reason == "a Opaque states no parameters to check against grid float32"


def test_a_learner_without_a_probe_set_check_gives_no_certificate(exact_run):
    spec = registry.get("single-head")
    registry.register(dataclasses.replace(spec, name="unchecked-head", check_certificate=None))
    try:
        cert = dataclasses.replace(exact_run.certificate, learner="unchecked-head")
        assert "states no way to check its probe set" in cert.check().reason
        approximate = dataclasses.replace(exact_run.certificate, learner="low-rank-cs")
        assert "gives approximate results, which carry no certificate" in approximate.check().reason
    finally:
        registry.unregister("unchecked-head")


# -- strict files -----------------------------------------------------------------------------------


def test_float_answers_in_files_are_checked(float_run):
    _, r = float_run
    data = certificate_to_json(r.certificate)
    assert load(json.loads(json.dumps(data))).check().holds  # the honest file loads and holds
    entry = data["transcript"][0]["answer"]
    for bad, words in (
        ({**entry, "error": "-1/2"}, "error must be a float64 number >= 0"),
        ({**entry, "error": "1/3"}, "error must be a float64 number >= 0"),
        ({**entry, "error": str(2**1001)}, "error must be a float64 number >= 0"),
        ({**entry, "value": "1/3"}, "value must be a float64 number"),
        ({**entry, "value": str(2**1001)}, "value must be a float64 number"),
        ({"value": "1", "error": "0", "extra": "1"}, "expected {'exact': ...}"),
    ):
        broken = json.loads(json.dumps(data))
        broken["transcript"][0]["answer"] = bad
        with pytest.raises(InvalidFormat, match=words):
            load(broken)
    zero = json.loads(json.dumps(data))
    zero["transcript"][0]["answer"] = {**entry, "error": "0"}
    assert load(zero).transcript[0].answer.error == 0.0  # error 0 is allowed (an exact float answer)
    big = json.loads(json.dumps(data))
    big["transcript"][0]["answer"] = {**entry, "value": str(2**999), "error": "2"}
    assert float(load(big).transcript[0].answer) == 2.0**999


def test_an_exact_answer_with_a_field_beside_its_form_is_refused(exact_run):
    """An answer object is exactly one of three shapes: an exact form with anything beside it is not
    read as the exact form (the extra field could say something the check would then ignore)."""
    data = certificate_to_json(exact_run.certificate)
    entry = data["transcript"][0]["answer"]
    assert set(entry) == {"exact"}
    for extra in ({"value": "1"}, {"error": "0"}, {"note": "x"}):
        broken = json.loads(json.dumps(data))
        broken["transcript"][0]["answer"] = {**entry, **extra}
        with pytest.raises(InvalidFormat, match="expected {'exact': ...}"):
            load(broken)


def test_numbers_in_files_may_be_json_integers_but_not_booleans(exact_run):
    data = certificate_to_json(exact_run.certificate)
    assert load({**data, "accuracy": 0, "rtol": 0}).check().holds
    with pytest.raises(InvalidFormat, match="accuracy: expected a number string, got bool"):
        load({**data, "accuracy": False})


@pytest.mark.parametrize(
    "change, words",
    [
        ({"transcript": 3}, r"transcript: expected a list of \{'X': ..., 'answer': ...\} entries, got int"),
        ({"certificate_kind": "maybe"}, "expected certificate_kind 'exact' or 'consistent', got 'maybe'"),
        ({"learner": 7}, "learner must be a string or null, got 7"),
        ({"learner": "no-such"}, "unknown learner 'no-such'"),
        ({"grid": 32}, "expected grid as a string, got 32"),
        ({"grid": "float8"}, "grid"),
        ({"accuracy": "-1"}, "accuracy and rtol must be >= 0"),
        ({"rtol": "-1/2"}, "accuracy and rtol must be >= 0"),
        ({"assumptions": [1]}, "expected assumptions as a list of strings"),
        ({"conditions": []}, "expected conditions as an object"),
        ({"kind": "result"}, "expected kind 'certificate'"),
    ],
)
def test_malformed_certificate_files(exact_run, change, words):
    data = certificate_to_json(exact_run.certificate) | change
    with pytest.raises((InvalidFormat, ValueError), match=words):
        load(data)


def test_long_malformed_entries_are_not_echoed_whole():
    with pytest.raises(InvalidFormat) as info:
        transcript_from_json([{"X": {"d": 1, "rows": [{"0": "1"}]}, "answer": {"what": "x" * 500}}])
    assert len(str(info.value)) < 200 and "..." in str(info.value)
    with pytest.raises(InvalidFormat) as info:
        transcript_from_json([{"X": 1}])
    assert "{'X': 1}" in str(info.value)  # short entries are shown whole


def test_a_certificate_built_by_hand_holds_only_for_what_it_claims(exact_run):
    cert = exact_run.certificate
    bare = Certificate(cert.model, cert.transcript)  # replay only: no learner, no claim of identification
    report = bare.check()
    assert report.holds and "replay only" in report.message


# -- declared accuracies: absolute, relative, and their defaults ----------------------------------

from exact import MultiHead  # noqa: E402
from exact.certify import answer_equals_logistic, make_certificate  # noqa: E402
from exact.errors import InvalidArgument  # noqa: E402


def _approximate_transcript(model, offset, rows_list):
    """Answers f(X) + offset(f(X)), as an approximate oracle (a callable) would give them."""
    from exact.numbers import ball_interval

    out = []
    for rows in rows_list:
        X = Sequence.from_rows(rows)
        lo, hi = ball_interval(model.ball(X, prec=300))
        y = (lo + hi) / 2
        out.append(Query(X, y + offset(y)))
    return out


ROWS = [[[4, 0], [0, 1]], [[3, 1], [1, 2]], [[5, -1], [2, 0], [0, 3]]]


def test_default_accuracy_is_zero():
    truth = SingleHead([[1, "1/2"], [0, -1]], [3, 2])
    off = _approximate_transcript(truth, lambda y: Fraction(1, 4), ROWS)  # every answer off by 1/4
    assert failed_entries(truth, off) == [0, 1, 2]  # no tolerance unless one is declared
    assert not Certificate(truth, tuple(off), kind="consistent").check().holds
    assert not make_certificate(truth, off).check().holds
    assert make_certificate(truth, off, accuracy=Fraction(1, 2)).check().holds


def test_relative_accuracy_scales_with_the_answer():
    truth = SingleHead([[1, "1/2"], [0, -1]], [30, 20])  # answers of size 20..90
    rtol = Fraction(1, 10**6)
    near = _approximate_transcript(truth, lambda y: y * rtol / 2, ROWS)  # within rtol·|y|, beyond 1e-6 absolute
    assert all(abs(q.answer) > 10 for q in near)
    assert failed_entries(truth, near, rtol=rtol) == []
    assert failed_entries(truth, near, accuracy=Fraction(1, 10**7)) == [0, 1, 2]
    cert = make_certificate(truth, near, rtol=rtol)
    assert cert.kind == "consistent" and cert.rtol == rtol and cert.accuracy == 0
    report = cert.check()
    assert report.holds and "±0 + 1e-06·|answer|" in report.message
    far = _approximate_transcript(truth, lambda y: y * rtol * 2, ROWS)
    assert not make_certificate(truth, far, rtol=rtol).check().holds


def test_an_exact_certificate_records_no_accuracy():
    r = learn_single_head(ExactOracle(SingleHead([[1]], [1])))
    cert = make_certificate(r.model, r.certificate.transcript, accuracy=Fraction(1), rtol=Fraction(1))
    assert cert.kind == "exact" and (cert.accuracy, cert.rtol) == (0, 0)


def test_the_accuracy_is_stated_to_three_digits():
    truth = SingleHead([[1, "1/2"], [0, -1]], [3, 2])
    near = _approximate_transcript(truth, lambda y: Fraction(1, 10), ROWS)
    assert "declared accuracy ±0.333 (" in make_certificate(truth, near, accuracy=Fraction(1, 3)).check().message


def test_replay_of_a_model_without_the_two_token_fast_path():
    m = MultiHead([([[1, 0], [0, 1]], [1, 0]), ([[0, 1], [1, 0]], [0, "1/2"])])
    oracle = ExactOracle(m)
    X = Sequence.from_rows([[1, 0], [0, 1]])
    q = Query(X, oracle.query(X))
    assert check_transcript(m, [q]).holds
    assert not check_transcript(MultiHead([([[1, 0], [0, 1]], [1, 0])]), [q]).holds


def test_logistic_equality_is_decided_on_both_coefficients():
    h = SingleHead([[2, 0], [0, 0]], [3, 1])
    oracle = ExactOracle(h)
    X = Sequence.from_rows([[1, 0], [0, 1]])  # scores 0 (both): f = (3 + 1)/2 ... use a distinct pair
    Y = Sequence.from_rows([[1, 0], [1, 0]])
    a = oracle.query(Sequence.from_rows([[2, 0], [1, 0]]))  # scores 4, 2; values 6, 3: 3 + 3·σ(2)
    from flint import fmpq

    assert answer_equals_logistic(a, fmpq(3), fmpq(3), fmpq(2))
    assert not answer_equals_logistic(a, fmpq(3), fmpq(4), fmpq(2))  # base right, slope wrong
    assert not answer_equals_logistic(a, fmpq(2), fmpq(3), fmpq(2))  # slope right, base wrong
    assert answer_equals_logistic(a, fmpq(6), fmpq(-3), fmpq(-2))  # the same value written the other way
    with pytest.raises(InvalidArgument, match="needs an exact answer"):
        answer_equals_logistic(Fraction(1), fmpq(0), fmpq(1), fmpq(0))
    del X, Y


def test_a_float_answer_of_size_two_to_the_thousand_is_accepted(float_run):
    _, r = float_run
    data = certificate_to_json(r.certificate)
    entry = json.loads(json.dumps(data))
    entry["transcript"][0]["answer"] = {"value": str(2**1000), "error": "0"}
    assert float(load(entry).transcript[0].answer) == 2.0**1000


def test_logistic_equality_reads_the_gap_of_the_two_scores_not_their_sum():
    from flint import fmpq

    h = SingleHead([[2, 0], [0, 0]], [3, 1])
    a = ExactOracle(h).query(Sequence.from_rows([[2, 0], [1, 0]]))  # scores 4, 2; values 6, 3: 3 + 3·σ(2)
    # ell = 6 is the sum of the scores, not their gap: 3 + 3·σ(6) and 6 − 3·σ(6) differ from 3 + 3·σ(2)
    assert not answer_equals_logistic(a, fmpq(3), fmpq(3), fmpq(6))
    assert not answer_equals_logistic(a, fmpq(6), fmpq(-3), fmpq(6))
    assert not answer_equals_logistic(a, fmpq(6), fmpq(-3), fmpq(5))
    assert answer_equals_logistic(a, fmpq(6), fmpq(-3), fmpq(-2))


def test_logistic_equality_at_a_zero_logit_compares_values_not_coefficients():
    from flint import fmpq

    h = SingleHead([[2, 0], [0, 0]], [3, 1])
    a = ExactOracle(h).query(Sequence.from_rows([[1, 0], [1, 0]]))  # equal scores, values 3 and 3: the value 3
    assert answer_equals_logistic(a, fmpq(2), fmpq(2), fmpq(0))  # 2 + 2·σ(0) = 3
    assert answer_equals_logistic(a, fmpq(3), fmpq(0), fmpq(0))
    assert not answer_equals_logistic(a, fmpq(2), fmpq(1), fmpq(0))  # 2 + 1/2


def test_certificates_are_frozen(exact_run):
    cert = exact_run.certificate
    with pytest.raises(dataclasses.FrozenInstanceError):
        cert.model = SingleHead([[0, 0], [0, 0]], [0, 0])  # type: ignore[misc]
    assert cert.check().holds


def test_a_callers_replay_is_not_trusted_for_float_answers_with_recorded_errors():
    truth = SingleHead([[1, "1/2"], [0, -1]], [3, 2])
    oracle = FloatOracle(truth)
    for rows in ROWS:
        oracle.query(rows)
    wrong = SingleHead([[1, "1/2"], [0, -1]], [3, "2.001"])
    cert = make_certificate(wrong, oracle.transcript)
    assert cert.kind == "consistent"
    assert not cert.check().holds
    assert not cert._check([]).holds  # the float answers are replayed again, against recomputed bounds
    assert make_certificate(truth, oracle.transcript)._check([]).holds


def test_the_relative_accuracy_is_stated_to_three_digits():
    truth = SingleHead([[1, "1/2"], [0, -1]], [3, 2])
    near = _approximate_transcript(truth, lambda y: Fraction(1, 10), ROWS)
    message = make_certificate(truth, near, accuracy=Fraction(1, 4), rtol=Fraction(1, 3)).check().message
    assert "declared accuracy ±0.25 + 0.333·|answer| (" in message


@pytest.mark.parametrize("length, shown", [(58, None), (59, 57)])
def test_malformed_values_are_echoed_whole_up_to_sixty_characters(exact_run, length, shown):
    kind = "k" * length  # its repr has length + 2 characters
    text = repr(kind) if shown is None else repr(kind)[:shown] + "..."
    data = certificate_to_json(exact_run.certificate) | {"certificate_kind": kind}
    with pytest.raises(InvalidFormat) as info:
        load(data)
    assert str(info.value) == f"certificate: expected certificate_kind 'exact' or 'consistent', got {text}"


def test_float_answers_with_their_own_errors_need_a_single_head_to_bound_them():
    # The recorded rounding errors are capped by a bound recomputed from the model; a model
    # that cannot recompute it (a multi-head one) must not pass on the answers' own word.
    oracle = FloatOracle(SingleHead([[1, "1/2"], [0, -1]], [2, 1]))
    oracle.query([[1, 0], [0, 1]])
    half = SingleHead([[1, "1/2"], [0, -1]], [1, "1/2"])
    two = MultiHead([(half.W, half.v), (half.W, half.v)])  # the same map as the truth
    cert = Certificate(model=two, transcript=oracle.transcript, kind="consistent")
    report = cert.check()
    assert not report.holds
    assert report.reason == "the answers record float rounding errors, which can be checked only for a single-head model"


# -- what a holding check requires beyond the answers ------------------------------------------------


def test_a_certificate_must_state_every_assumption_its_learners_claim_rests_on():
    """With verification queries present, the ReLU learner's claim still rests on its path seed and on
    no hidden units; a certificate that leaves either out fails, whatever else it states."""
    from exact.learn import learn_ffn
    from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED
    from exact.ffn import ReLUFFN

    r = learn_ffn(ExactOracle(ReLUFFN([[1, 0, 2], [0, 1, -1], [1, 1, 1]], [1, -2, 1])), seed=0)
    cert = r.certificate
    assert cert.checks and {HIDDEN_UNITS, PATH_SEED} <= set(cert.assumptions) and cert.check().holds
    for dropped in (HIDDEN_UNITS, PATH_SEED):
        report = dataclasses.replace(cert, assumptions=tuple(a for a in cert.assumptions if a != dropped)).check()
        assert not report.holds
        assert report.message.endswith(f"the certificate does not state the assumptions its claim rests on: {dropped}")


def test_a_sequence_that_equals_everything_cannot_stand_in_for_a_query():
    """A transcript entry must be a real Sequence: a subclass whose == always says yes would make the
    replay of the learner's probe set match, and a certificate hold for a wrong W."""

    class Agreeable(Sequence):
        __slots__ = ()

        def __eq__(self, other):
            return True

        __hash__ = Sequence.__hash__

    truth = SingleHead([[1, "1/2"], [0, -1]], [2, 1])
    wrong = SingleHead([[1, "1/3"], [0, -1]], [2, 1])
    r = learn_single_head(ExactOracle(truth), checks=0)
    # one-token sequences see only v, so truth and wrong give the same answer at e_1 whatever W is
    e1 = Sequence.basis(2, 0)
    ans = ExactOracle(truth).query(e1)
    n = len(r.certificate.transcript)
    forged = tuple(Query(Agreeable(e1.d, e1.rows), ans) for _ in range(n))
    assert all(q.X == x.X for q, x in zip(forged, r.certificate.transcript))  # the probe-set comparison would pass
    with pytest.raises(InvalidArgument, match=r"transcript: expected Query\(X: Sequence, answer\) entries"):
        dataclasses.replace(r.certificate, model=wrong, transcript=forged)
    plain = tuple(Query(e1, ans) for _ in range(n))
    report = dataclasses.replace(r.certificate, model=wrong, transcript=plain).check()
    assert not report.holds and "probe set" in report.message  # as real sequences they are not the probe set


@pytest.mark.parametrize("assumptions", ["among bias-free single heads", ("among bias-free single heads", 3), (None,), [b"bytes"]])
def test_assumptions_must_be_a_tuple_of_strings(exact_run, assumptions):
    """A stated assumption is text a reader checks; anything else is refused when the certificate is built."""
    with pytest.raises(InvalidArgument, match="assumptions: expected a tuple of strings"):
        dataclasses.replace(exact_run.certificate, assumptions=assumptions)
    ok = dataclasses.replace(exact_run.certificate, assumptions=list(exact_run.certificate.assumptions))
    assert ok.assumptions == exact_run.certificate.assumptions and ok.check().holds


def test_every_annotation_of_the_certificate_module_evaluates():
    """Postponed annotations are evaluated only by their readers (typing.get_type_hints, documentation tools)."""
    from hints import assert_annotations_evaluate

    from exact import certify

    assert assert_annotations_evaluate(certify) > 20
