"""Inputs chosen to break the library: each gets a clear error from the hierarchy, never a
traceback from deep inside, an endless run, or a misleading message."""

from __future__ import annotations

import dataclasses
import numbers
from fractions import Fraction

import pytest

from exact import (
    CallableOracle,
    ExactAnswer,
    ExactOracle,
    InvalidArgument,
    InvalidNumber,
    OracleInconsistent,
    PrecisionInsufficient,
    SingleHead,
    learn_low_rank,
    learn_single_head,
)
from exact.grids import MAX_GRID_BITS, DyadicGrid, RationalGrid, parse_grid
from exact.numbers import approx, format_rational, to_fraction
from exact.oracles import Query
from exact.sequences import Sequence

HEAD = SingleHead([[Fraction(1, 2), Fraction(1)], [Fraction(0), Fraction(2)]], [Fraction(1), Fraction(-1)])


def test_a_logit_beyond_the_height_cap_is_named_as_one_of_two_causes():
    # W = 10^-1300 has a numerator/denominator far beyond 2^4096: the certified mode cannot
    # tell it from a non-head, and must say so rather than blame the oracle.
    head = SingleHead([[Fraction(1, 10**1300)]], [Fraction(1)])
    with pytest.raises(PrecisionInsufficient) as info:
        learn_single_head(ExactOracle(head), mode="certified")
    msg = str(info.value)
    assert "a larger logit, or a black box outside the learner's class" in msg
    assert "mode='symbolic' decides which" in msg


@pytest.mark.parametrize(
    "q, text",
    [
        (Fraction(10**5000 - 1), "1e+5000"),
        (-Fraction(10**5000 - 1), "-1e+5000"),
        (Fraction(99999995, 10**5007), "1e-4999"),
        (Fraction(12345, 10**5000), "1.2345e-4996"),
    ],
)
def test_approx_never_prints_a_mantissa_of_ten(q, text):
    assert approx(q) == text


def test_a_callable_answering_text_is_inconsistent_not_parsed():
    oracle = CallableOracle(lambda X: "1/2", d=2, accuracy=0)
    with pytest.raises(OracleInconsistent, match=r"answered '1/2' to query #1 .*expected a number, got text \(str\)"):
        learn_single_head(oracle)


def test_a_huge_text_answer_is_not_echoed():
    oracle = CallableOracle(lambda X: "7" * 10_000, d=1, accuracy=0)
    with pytest.raises(OracleInconsistent) as info:
        oracle.query([[1]])
    assert len(str(info.value)) < 300


class _NumbersInExactClothing(ExactOracle):
    """Declares exact=True but answers plain numbers."""

    def query_batch(self, Xs):
        return [Fraction(1, 3) for _ in super().query_batch(Xs)]


class _ShortBatches(ExactOracle):
    def query_batch(self, Xs):
        return super().query_batch(Xs)[:-1]


@pytest.mark.parametrize("mode", ["certified", "symbolic"])
def test_an_exact_oracle_must_answer_exact_answers(mode):
    with pytest.raises(OracleInconsistent, match=r"declares exact=True but answered a Fraction, not an ExactAnswer"):
        learn_single_head(_NumbersInExactClothing(HEAD), mode=mode)


def test_an_oracle_must_answer_every_query_of_a_batch():
    with pytest.raises(OracleInconsistent, match=r"returned \d+ answers to a batch of \d+ queries"):
        learn_single_head(_ShortBatches(HEAD))


class _Ratio:
    def __init__(self, pair):
        self.pair = pair

    def as_integer_ratio(self):
        if isinstance(self.pair, Exception):
            raise self.pair
        return self.pair


numbers.Real.register(_Ratio)


@pytest.mark.parametrize(
    "pair, message",
    [
        ((1, 0), r"returned \(1, 0\), not a pair of integers with a positive denominator"),
        ((1, -2), r"returned \(1, -2\), not a pair"),
        ((0.5, 1), r"returned \(0.5, 1\), not a pair"),
        ((True, 1), r"returned \(True, 1\), not a pair"),
        (RuntimeError("boom"), r"_Ratio.as_integer_ratio\(\) failed: boom"),
    ],
)
def test_a_foreign_real_with_a_broken_ratio_is_refused(pair, message):
    with pytest.raises(InvalidNumber, match=message):
        to_fraction(_Ratio(pair), name="answer")


def test_a_foreign_real_with_a_good_ratio_is_taken_exactly():
    assert to_fraction(_Ratio((-3, 4))) == Fraction(-3, 4)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("dyadic:99999999999", r"dyadic grid: 99999999999 bits is more than the limit of 8192 \(MAX_GRID_BITS\)"),
        ("rational:" + "9" * 5000, r"^grid: the number in rational:… has 5000 digits; the limit is 2\*\*8192$"),
        ("rational:" + "9" * 2500, r"^rational grid: the denominator bound has 8305 bits, more than the limit of 8192"),
    ],
)
def test_grids_beyond_the_limit_are_refused_at_once(spec, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_grid(spec)


def test_the_finest_grids_within_the_limit_are_accepted():
    assert parse_grid(f"dyadic:{MAX_GRID_BITS}") == DyadicGrid(MAX_GRID_BITS)
    q = 2**MAX_GRID_BITS - 1
    assert RationalGrid(q).max_den == q
    assert parse_grid("rational:" + "9" * 2000) == RationalGrid(int("9" * 2000))
    with pytest.raises(InvalidArgument):
        RationalGrid(2**MAX_GRID_BITS)
    with pytest.raises(InvalidArgument):
        DyadicGrid(MAX_GRID_BITS + 1)


def test_numbers_of_any_size_are_formatted():
    # str(int) stops at 4300 digits; the JSON form must not.
    q = Fraction(10**5000, 3)
    text = format_rational(q)
    num, den = text.split("/")
    assert len(num) == 5001 and num == "1" + "0" * 5000 and den == "3"
    assert format_rational(Fraction(-(10**6000))) == "-1" + "0" * 6000


# -- answers that decide their own equality ------------------------------------------------


class _AlwaysEqual:
    """Honest values, lying comparisons: what an oracle could wrap to pass any confirmation."""

    def __init__(self, form):
        self.form = form

    def ball(self, prec):
        return self.form.ball(prec)

    def approx(self):
        return self.form.approx()

    def equals_logistic(self, *a):
        return True

    def equals_softmax2(self, *a):
        return True

    def __eq__(self, other):
        return True

    __hash__ = None


def test_an_exact_answer_holds_only_the_librarys_own_forms():
    from flint import fmpq

    from exact.expfield import ExpPoly, ExpRatio

    good = HEAD.exact([[1, 2], [3, 4]])
    ExactAnswer(good)  # an ExpRatio of the model's
    ExactAnswer((fmpq(1), fmpq(2), fmpq(0), fmpq(-1)))  # the compact two-token form
    bad_poly = ExpPoly.__new__(ExpPoly)
    bad_poly._terms = ((fmpq(1), fmpq(0)),)  # a zero coefficient: not in normal form
    unsorted = ExpPoly.__new__(ExpPoly)
    unsorted._terms = ((fmpq(2), fmpq(1)), (fmpq(1), fmpq(1)))
    for form in (
        _AlwaysEqual(good),
        (Fraction(1), Fraction(2), Fraction(0), Fraction(-1)),
        (fmpq(1), fmpq(2), fmpq(0)),
        ExpRatio(bad_poly, ExpPoly.constant(1)),
        ExpRatio(unsorted, ExpPoly.constant(1)),
        Fraction(1, 2),
    ):
        with pytest.raises(InvalidArgument, match=r"^ExactAnswer: expected an ExpRatio, an ExpSum or a tuple"):
            ExactAnswer(form)


class _LyingAnswer(ExactAnswer):
    """A subclass with honest values whose certificate-side forms compare equal to anything."""

    def _pair(self):
        return None

    def _exp_form(self):
        return _AlwaysEqual(super()._exp_form())


class _SubclassOracle(ExactOracle):
    def __init__(self, model):
        super().__init__(model)
        self.model = model

    def _answer(self, seq):
        return _LyingAnswer(self.model.exact(seq))


NEAR = SingleHead([[Fraction(1, 3) + Fraction(1, 2**70), 2], [-1, Fraction(1, 2)]], [1, Fraction(-2, 5)])


@pytest.mark.parametrize("learn", [learn_single_head, learn_low_rank])
def test_answers_of_a_subclass_are_refused_by_the_learners(learn):
    # before: W[0][0] = 1/3 + 2^-70 came back as 1/3, exact, with a holding certificate
    with pytest.raises(OracleInconsistent, match=r"answered a _LyingAnswer, not an ExactAnswer"):
        learn(_SubclassOracle(NEAR))


def test_answers_of_a_subclass_fail_a_certificate():
    r = learn_single_head(ExactOracle(NEAR))
    wrong = SingleHead([[Fraction(1, 3), 2], [-1, Fraction(1, 2)]], NEAR.v)
    forged = tuple(Query(q.X, _LyingAnswer(NEAR.exact(q.X))) for q in r.certificate.transcript)
    report = dataclasses.replace(r.certificate, model=wrong, transcript=forged).check()
    assert not report.holds  # such answers are never taken as exact, nor trusted to compare themselves
    assert dataclasses.replace(r.certificate, model=wrong).check().failed >= 1


# -- transcripts that differ from the answers --------------------------------------------------

OTHER = SingleHead([[Fraction(1, 4), 2], [-1, Fraction(1, 2)]], [1, Fraction(-2, 5)])


class _ReportsOther(ExactOracle):
    """Answers from its model; reports another head's answers in ``transcript``."""

    @property
    def transcript(self):
        return tuple(Query(q.X, ExactAnswer(OTHER.exact(q.X))) for q in super().transcript)


class _ProtocolOracle:
    """The Oracle protocol only (not a BaseOracle), with the same lying transcript."""

    exact, accuracy, rtol = True, 0, 0

    def __init__(self, model):
        self.inner, self.d = ExactOracle(model), model.d

    @property
    def count(self):
        return self.inner.count

    @property
    def transcript(self):
        return tuple(Query(q.X, ExactAnswer(OTHER.exact(q.X))) for q in self.inner.transcript)

    def require(self, n, *, what=""):
        pass

    def error_bound(self, answer):
        return Fraction(0)

    def query_batch(self, Xs):
        return self.inner.query_batch(Xs)


@pytest.mark.parametrize("checks", [0, 2])
def test_the_learner_certifies_the_answers_it_received_not_a_reported_transcript(checks):
    truth = SingleHead([[Fraction(1, 3), 2], [-1, Fraction(1, 2)]], [1, Fraction(-2, 5)])
    r = learn_single_head(_ReportsOther(truth), checks=checks)
    assert r.exact and r.model == truth and r.certificate.check().holds
    with pytest.raises(OracleInconsistent, match=r"transcript does not record the \d+ answers it just returned"):
        learn_single_head(_ProtocolOracle(truth), checks=checks)


class _BatchReturns(ExactOracle):
    def __init__(self, model, how):
        super().__init__(model)
        self.how = how

    def query_batch(self, Xs):
        answers = super().query_batch(Xs)
        return iter(answers) if self.how == "iterator" else None


def test_query_batch_may_return_any_iterable_but_not_none():
    assert learn_single_head(_BatchReturns(HEAD, "iterator")).model == HEAD
    with pytest.raises(OracleInconsistent, match=r"query_batch returned NoneType, not a list of answers"):
        learn_single_head(_BatchReturns(HEAD, "none"))


# -- verification queries: their seed is an assumption a certificate must state -------------


def test_a_certificate_with_checks_must_state_the_seed_assumption():
    from exact.checks import CHOSEN_SEED, FRESH_SEED

    r = learn_single_head(ExactOracle(HEAD))
    assert r.assumptions == () and r.certificate.assumptions == (FRESH_SEED,)
    bare = dataclasses.replace(r.certificate, assumptions=())
    report = bare.check()
    assert not report.holds
    assert report.reason.startswith("the certificate's verification queries prove something only if their seed")
    chosen = learn_single_head(ExactOracle(HEAD), check_seed=14)
    assert chosen.assumptions == (CHOSEN_SEED,) == chosen.certificate.assumptions
    assert chosen.certificate.check().holds
    replay_only = dataclasses.replace(r.certificate, learner=None, assumptions=())
    assert not replay_only.check().holds  # checks are verified without a learner too


@pytest.mark.parametrize(
    "change, message",
    [
        ({"check_seed": -1}, r"^check_seed: expected None or an integer >= 0, got -1$"),
        ({"check_seed": "5"}, r"^check_seed: expected None or an integer >= 0, got '5'$"),
        ({"check_seed": 5.0}, r"^check_seed: expected None or an integer >= 0, got 5.0$"),
        ({"checks": None}, r"^checks: expected a sequence of Query entries, got NoneType$"),
        ({"checks": (1, 2)}, r"^checks: expected Query\(X: Sequence, answer\) entries, got 1$"),
        ({"accuracy": "x"}, r"^accuracy: expected an integer, 'p/q' or decimal string, got 'x'$"),
        ({"rtol": -1}, r"^rtol: expected a nonnegative number, got -1$"),
        ({"assumptions": "among bias-free single heads"}, r"^assumptions: expected a tuple of strings"),
        ({"learner": 3}, r"^learner: expected None or a string, got 3$"),
        ({"conditions": [1]}, r"^conditions: expected a mapping, got list$"),
    ],
)
def test_certificate_fields_are_validated_however_it_is_built(change, message):
    cert = learn_single_head(ExactOracle(HEAD)).certificate
    with pytest.raises((InvalidArgument, InvalidNumber), match=message):
        dataclasses.replace(cert, **change)


# -- numbers at the edges ---------------------------------------------------------------------


def test_values_beyond_float64_are_learned_exactly():
    d = 4
    W = [[Fraction(i * d + j + 1, 3) for j in range(d)] for i in range(d)]
    v = [Fraction(1)] * d
    v[0] = Fraction(10**400)
    head = SingleHead(W, v)
    r = learn_single_head(ExactOracle(head))
    assert r.exact and r.model == head


class _BadInt(int):
    def __int__(self):
        return 0

    def __index__(self):
        return 0


def test_a_ratio_whose_integers_convert_to_zero_is_refused():
    with pytest.raises(InvalidNumber, match=r"not a pair of integers with a positive denominator"):
        to_fraction(_Ratio((1, _BadInt(2))))


def test_heads_with_huge_entries_print_and_learned_heads_pickle():
    import copy
    import pickle

    assert repr(SingleHead([[10**5000]], [1])) == "SingleHead(d=1, entries too large to print; see to_json())"
    learned = learn_single_head(ExactOracle(HEAD)).model
    assert learned.rank == 2  # caches a flint matrix
    for twin in (pickle.loads(pickle.dumps(learned)), copy.deepcopy(learned), copy.copy(learned)):
        assert twin == HEAD and twin.rank == 2


def test_text_inside_a_0d_array_is_refused():
    import numpy as np

    for y in (np.array("1/3"), np.array("1/3", dtype=object)):
        oracle = CallableOracle(lambda X, y=y: y, d=1, accuracy=0)
        with pytest.raises(OracleInconsistent, match=r"expected a number, got text"):
            oracle.query([[1]])
    assert CallableOracle(lambda X: np.array(0.5), d=1, accuracy=0).query([[1]]) == Fraction(1, 2)


# -- oracles with a malformed interface --------------------------------------------------------


class _Duck(_ProtocolOracle):
    """The Oracle protocol with one part of its interface broken."""

    def __init__(self, model, broken):
        super().__init__(model)
        self.broken = broken

    @property
    def transcript(self):
        t = self.inner.transcript
        if self.broken == "answers":
            return tuple(q.answer for q in t)
        if self.broken == "none":
            return None
        return t

    @property
    def accuracy(self):
        return {"accuracy-none": None, "accuracy-nan": float("nan"), "accuracy-negative": -1}.get(self.broken, 0)


@pytest.mark.parametrize(
    "broken, error, message",
    [
        ("answers", OracleInconsistent, r"transcript does not record the \d+ answers it just returned"),
        ("none", OracleInconsistent, r"^the oracle's transcript is NoneType, not a sequence of Query entries$"),
        ("accuracy-none", InvalidArgument, r"^the oracle's accuracy: expected a finite real number"),
        ("accuracy-nan", InvalidArgument, r"^the oracle's accuracy: expected a finite real number, got nan$"),
        ("accuracy-negative", InvalidArgument, r"^the oracle's accuracy: expected a nonnegative number, got -1$"),
    ],
)
def test_a_duck_typed_oracle_with_a_broken_interface_gets_a_clear_error(broken, error, message):
    with pytest.raises(error, match=message):
        learn_single_head(_Duck(HEAD, broken))


class _CountsNothing(ExactOracle):
    @property
    def count(self):
        return 0


class _RecordsAnotherX(ExactOracle):
    def query_batch(self, Xs):
        answers = super().query_batch(Xs)
        last = self._transcript[-1]
        self._transcript[-1] = Query(Sequence.from_rows([[7] * self.d]), last.answer)
        return answers


def test_the_oracles_count_and_recorded_sequences_must_match_what_was_asked():
    with pytest.raises(OracleInconsistent, match=r"^the oracle counts 0 queries for this run, but answered 6$"):
        learn_single_head(_CountsNothing(HEAD))
    with pytest.raises(OracleInconsistent, match=r"records another sequence than query #\d+ of the batch asked"):
        learn_single_head(_RecordsAnotherX(HEAD))


def test_check_transcript_refuses_a_malformed_accuracy():
    from exact import check_transcript

    oracle = ExactOracle(HEAD)
    oracle.query([[1, 2]])
    for bad in (None, "abc", float("nan")):
        with pytest.raises(InvalidNumber, match=r"^accuracy: "):
            check_transcript(HEAD, oracle.transcript, accuracy=bad)
