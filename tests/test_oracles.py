"""Tests for exact.oracles: counting, budgets, transcripts, answers, callable and float oracles.

Certificates (exact.certify) are tested in test_certificates.py.
"""

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
from flint import arb, ctx

from exact.certify import answer_equals
from exact.errors import (
    CertificateInvalid,
    ExactAttentionError,
    InvalidArgument,
    InvalidNumber,
    MissingDependency,
    OracleInconsistent,
    PrecisionInsufficient,
    QueryBudgetExceeded,
    ShapeError,
    SolverFailed,
)
from exact.expfield import ExpRatio
from exact.learn import learn_single_head
from exact.models import SingleHead
from exact.numbers import ball_interval
from exact.oracles import CallableOracle, ExactAnswer, ExactOracle, FloatOracle, Query, answer_ball
from exact.sequences import Sequence


def test_error_classes_are_builtins():
    assert issubclass(QueryBudgetExceeded, RuntimeError)
    assert issubclass(CertificateInvalid, ValueError)
    assert issubclass(OracleInconsistent, ValueError)
    assert issubclass(InvalidArgument, ValueError)
    assert issubclass(MissingDependency, ImportError)
    assert issubclass(SolverFailed, ArithmeticError)
    for cls in (
        QueryBudgetExceeded, CertificateInvalid, OracleInconsistent, ShapeError, InvalidNumber, InvalidArgument,
        MissingDependency, SolverFailed,
    ):
        assert issubclass(cls, ExactAttentionError)


@pytest.fixture
def head():
    return SingleHead.random(3, seed=7)


# -- counting, transcripts, budgets ---------------------------------------------------------


def test_counts_are_per_instance(head):
    a, b = ExactOracle(head), ExactOracle(head)
    assert (a.count, b.count, a.max_length, a.transcript) == (0, 0, 0, ())
    a.query([[1, 0, 0]])
    a.query_batch([[[0, 1, 0], [1, 1, 1]], [[0, 0, 1]]])
    b.query([[1, 2, 3], [0, 0, 1], [1, 0, 0], [0, 1, 0]])
    assert (a.count, b.count) == (3, 1)
    assert (a.max_length, b.max_length) == (2, 4)
    assert a.remaining is None


def test_transcript_contents(head):
    o = ExactOracle(head)
    X1, X2 = [[1, "1/2", 0]], [[0, 1, 0], [2, 0, "-1/3"]]
    y1 = o.query(X1)
    y2 = o.query(Sequence.from_rows(X2))
    t = o.transcript
    assert isinstance(t, tuple) and len(t) == 2
    assert all(isinstance(q, Query) for q in t)
    assert t[0].X == Sequence.from_rows(X1) and t[1].X == Sequence.from_rows(X2)
    assert t[0].answer is y1 and t[1].answer is y2
    assert answer_equals(y1, head.exact(X1)) and answer_equals(y2, head.exact(X2))
    t_list = list(o.transcript)
    t_list.clear()  # the transcript returned is a copy
    assert len(o.transcript) == 2


def test_budget(head):
    o = ExactOracle(head, budget=3)
    assert o.remaining == 3
    o.query_batch([[[1, 0, 0]], [[0, 1, 0]]])
    assert (o.count, o.remaining) == (2, 1)
    msg = r"^this batch needs 2 more queries, but the oracle's budget allows 1 \(budget=3, used=2\)$"
    with pytest.raises(QueryBudgetExceeded, match=msg) as info:
        o.query_batch([[[0, 0, 1]], [[1, 1, 1]]])
    assert isinstance(info.value, RuntimeError)
    # the refused batch is not counted and not recorded
    assert (o.count, len(o.transcript), o.max_length) == (2, 2, 1)
    o.query([[0, 0, 1], [1, 1, 1]])
    assert (o.count, o.remaining, o.max_length) == (3, 0, 2)
    with pytest.raises(QueryBudgetExceeded, match=r"^this batch needs 1 more queries, but the oracle's budget allows 0 \(budget=3, used=3\)$"):
        o.query([[1, 0, 0]])
    assert o.count == 3


def test_budget_zero_and_invalid(head):
    o = ExactOracle(head, budget=0)
    with pytest.raises(QueryBudgetExceeded):
        o.query([[1, 0, 0]])
    with pytest.raises(InvalidArgument, match=r"^budget: expected a non-negative integer or None, got -1$"):
        ExactOracle(head, budget=-1)
    with pytest.raises(InvalidArgument, match=r"^budget: expected a non-negative integer or None, got 2\.5$"):
        ExactOracle(head, budget=2.5)


def test_require(head):
    o = ExactOracle(head, budget=5)
    o.require(5)
    o.query([[1, 0, 0]])
    o.require(4, what="the learner")
    with pytest.raises(QueryBudgetExceeded, match=r"^the learner needs 5 more queries, but the oracle's budget allows 4 \(budget=5, used=1\)$"):
        o.require(5, what="the learner")
    assert o.count == 1
    ExactOracle(head).require(10**9)  # unlimited


def test_learner_checks_budget_before_querying(head):
    o = ExactOracle(head, budget=13)  # the learner's d² + d = 12 queries fit, its 2 checks do not
    with pytest.raises(
        QueryBudgetExceeded,
        match=r"^single-head \(d=3: 12 queries \+ 2 checks\) needs 14 more queries, but the oracle's budget allows 13 "
        r"\(budget=13, used=0\)$",
    ):
        learn_single_head(o)
    assert o.count == 0


# -- input validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, error, msg",
    [
        ([[1, 2]], ShapeError, r"^X: expected every token to have d=3 entries, token 0 has 2$"),
        ([[1, 2, 3], [1, 2]], ShapeError, r"^X: expected every token to have d=3 entries, token 1 has 2$"),
        ([], ShapeError, r"^X: expected at least one token \(N >= 1\), got none$"),
        ([[1, 2, float("nan")]], InvalidNumber, r"^X\[0\]\[2\]: expected a finite real number, got nan$"),
        ([[1, 2, 3], [0, float("inf"), 0]], InvalidNumber, r"^X\[1\]\[1\]: expected a finite real number, got inf$"),
        ([[1, 2, "x"]], InvalidNumber, r"^X\[0\]\[2\]: expected an integer, 'p/q' or decimal string, got 'x'$"),
        (Sequence.basis(2, 0), ShapeError, r"^X: expected tokens of dimension d=3, got d=2$"),
    ],
)
@pytest.mark.parametrize("kind", ["exact", "callable", "float"])
def test_query_validation(head, X, error, msg, kind):
    if kind == "exact":
        o = ExactOracle(head)
    elif kind == "callable":
        o = CallableOracle(lambda X: 0.0, d=3, accuracy=0)
    else:
        o = FloatOracle(head)
    with pytest.raises(error, match=msg):
        o.query(X)
    with pytest.raises(error, match=msg):
        o.query_batch([[[1, 0, 0]], X])
    assert o.count == 0 and o.transcript == ()


def test_oracle_constructor_validation(head):
    with pytest.raises(ShapeError, match=r"^d: expected an integer d >= 1, got 0$"):
        CallableOracle(lambda X: 0, d=0, accuracy=0)
    with pytest.raises(ShapeError, match=r"^d: expected an integer d >= 1, got True$"):
        CallableOracle(lambda X: 0, d=True, accuracy=0)
    with pytest.raises(InvalidNumber, match=r"^accuracy: expected a non-negative bound, got -1$"):
        CallableOracle(lambda X: 0, d=1, accuracy=-1)
    with pytest.raises(InvalidNumber, match=r"^accuracy: expected a finite real number, got nan$"):
        CallableOracle(lambda X: 0, d=1, accuracy=float("nan"))
    with pytest.raises(InvalidArgument, match=r"^fn: expected a callable X -> number, got int$"):
        CallableOracle(3, d=1, accuracy=0)
    with pytest.raises(InvalidArgument, match=r"^inputs: expected 'numpy' or 'fractions', got 'torch'$"):
        CallableOracle(lambda X: 0, d=1, accuracy=0, inputs="torch")
    with pytest.raises(ShapeError, match=r"^model: expected W of shape \(d, d\) and v of shape \(d,\), got \(2, 3\) and \(2,\)$"):
        FloatOracle((np.zeros((2, 3)), np.zeros(2)))
    with pytest.raises(InvalidNumber, match=r"^model: W and v must be finite$"):
        FloatOracle((np.eye(2), np.array([1.0, np.nan])))


# -- exact answers ------------------------------------------------------------------------------


def test_exact_answer_refinement_is_not_a_query(head):
    o = ExactOracle(head)
    X = [[1, 2, 3], [0, 1, 1]]
    y = o.query(X)
    assert isinstance(y, ExactAnswer) and o.exact
    b64 = y.ball(64)
    b4096 = y.ball(4096)
    b256 = y.ball(256)
    assert o.count == 1 and len(o.transcript) == 1
    assert b64.contains(b4096) and b64.overlaps(b256)
    with ctx.workprec(4096):
        assert b4096.rad() < arb(2) ** -4000
    assert b64.rad() > b4096.rad()
    lo, hi = ball_interval(b4096)
    with mpmath.workdps(60):
        ref = float(mp_single_head(head, Sequence.from_rows(X).dense()))
    assert abs(float(lo) - ref) <= 1e-15 * abs(ref)
    assert float(y) == float(b64.mid())
    assert o.count == 1


def test_exact_answer_sympy_form_is_not_a_query(head):
    o = ExactOracle(head)
    y = o.query([[1, 0, 0], [0, 1, 0]])
    expr = y.sympy()
    assert abs(float(expr.evalf(30)) - float(y)) < 1e-14
    y.ball(1000)
    assert o.count == 1


def test_answer_equals(head):
    y = ExactOracle(head).query([[1, 0, 0], [0, 1, 0]])
    assert answer_equals(y, head.exact([[1, 0, 0], [0, 1, 0]]))
    assert not answer_equals(y, head.exact([[1, 0, 0], [0, 0, 1]]))
    with pytest.raises(InvalidArgument, match=r"^answer_equals needs an exact answer, got float$"):
        answer_equals(0.5, ExpRatio.rational(1))


def test_answer_ball():
    b = answer_ball(Fraction(1, 3), 128, Fraction(1, 10**20))
    lo, hi = ball_interval(b)
    assert lo <= Fraction(1, 3) - Fraction(1, 10**20) and hi >= Fraction(1, 3) + Fraction(1, 10**20)
    assert hi - lo < Fraction(3, 10**20)
    lo, hi = ball_interval(answer_ball(Fraction(1, 4), 64))
    assert lo == hi == Fraction(1, 4)


# -- callable oracles -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, expected",
    [
        (0.1, Fraction(3602879701896397, 36028797018963968)),
        (Fraction(-7, 3), Fraction(-7, 3)),
        (5, Fraction(5)),
        (np.float32(0.1), Fraction(13421773, 2**27)),
        (sympy.Rational(2, 9), Fraction(2, 9)),
        (sympy.Float(0.375), Fraction(3, 8)),
        (mpmath.mpf(1) / 3, Fraction(6004799503160661, 18014398509481984)),
        (-mpmath.mpf(1) / 3, Fraction(-6004799503160661, 18014398509481984)),
        (sympy.Float(-0.375), Fraction(-3, 8)),
    ],
)
def test_callable_answers_converted_exactly(answer, expected):
    o = CallableOracle(lambda X: answer, d=2, accuracy="1e-15")
    y = o.query([[1, 2]])
    assert isinstance(y, Fraction) and y == expected
    assert o.transcript[0].answer == expected
    assert o.error_bound(y) == Fraction(1, 10**15)


def test_callable_negative_mpf_answer():
    o = CallableOracle(lambda X: mpmath.mpf(-0.25), d=1, accuracy=0)
    assert o.query([[1]]) == Fraction(-1, 4)


def test_callable_receives_numpy_or_fractions():
    seen = []
    o = CallableOracle(lambda X: seen.append(X) or 0, d=2, accuracy=0)
    o.query([[1, "1/2"], [3, 4]])
    assert isinstance(seen[0], np.ndarray) and seen[0].dtype == np.float64
    assert seen[0].tolist() == [[1.0, 0.5], [3.0, 4.0]]
    o = CallableOracle(lambda X: seen.append(X) or 0, d=2, accuracy=0, inputs="fractions")
    o.query([[1, "1/3"]])
    assert seen[1] == [[Fraction(1), Fraction(1, 3)]]
    assert o.transcript[0].X == Sequence.from_rows([[1, "1/3"]])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), np.float64("-inf"), mpmath.mpf("nan"), None, "abc", 1j, True])
def test_callable_bad_answer_is_inconsistent(bad):
    o = CallableOracle(lambda X: bad, d=1, accuracy=0)
    with pytest.raises(OracleInconsistent, match=r"^the oracle answered .* to query #1 \(length 2\): answer: ") as info:
        o.query([[1], [2]])
    assert isinstance(info.value, ValueError)
    assert o.count == 0 and o.transcript == ()


def test_callable_bad_answer_message_names_the_right_query():
    answers = iter([1.0, 2.0, float("nan")])
    o = CallableOracle(lambda X: next(answers), d=1, accuracy=0)
    with pytest.raises(OracleInconsistent, match=r"to query #3 "):
        o.query_batch([[[1]], [[2]], [[3]]])


def test_callable_numpy_inputs_record_the_rounded_sequence():
    sent = []
    o = CallableOracle(lambda X: sent.append(X.copy()) or float(X[0, 0]), d=1, accuracy=0)
    y = o.query([[Fraction(1, 3)]])
    third = Fraction(1 / 3)  # the float64 nearest 1/3
    assert third != Fraction(1, 3)
    assert o.transcript[0].X == Sequence.from_rows([[third]])
    assert o.transcript[0].X.rows == (((0, third),),)
    assert y == third and sent[0][0, 0] == 1 / 3
    # dyadic inputs are sent exactly and recorded as given
    X = Sequence.from_rows([["3/8", "-5/4"]])
    o2 = CallableOracle(lambda X: 0.0, d=2, accuracy=0)
    o2.query(X)
    assert o2.transcript[0].X == X
    # "fractions" inputs are never rounded
    o3 = CallableOracle(lambda X: 0.0, d=1, accuracy=0, inputs="fractions")
    o3.query([["1/3"]])
    assert o3.transcript[0].X == Sequence.from_rows([["1/3"]])


def test_callable_numpy_inputs_out_of_float_range_is_a_clear_error():
    o = CallableOracle(lambda X: 0.0, d=1, accuracy=0)
    with pytest.raises(ExactAttentionError, match=r"X\[0\]\[0\]"):
        o.query([[10**400]])


def test_error_bound_with_rtol():
    o = CallableOracle(lambda X: -2.0, d=1, accuracy="1/100", rtol="1/10")
    y = o.query([[1]])
    assert o.error_bound(y) == Fraction(1, 100) + Fraction(2, 10)
    assert ExactOracle(SingleHead([[1]], [1])).error_bound(ExactOracle(SingleHead([[1]], [1])).query([[1]])) == 0


# -- float oracles -------------------------------------------------------------------------------


def test_float_oracle_batch_close_to_single_and_exact(head):
    rng = np.random.default_rng(8)
    Xs = [rng.normal(size=(int(rng.integers(1, 5)), 3)) for _ in range(30)]
    o = FloatOracle(head)
    batch = o.query_batch(Xs)
    single = [FloatOracle(head).query(X) for X in Xs]
    assert o.count == 30 and len(o.transcript) == 30
    assert [q.X for q in o.transcript] == [Sequence.from_rows(X) for X in Xs]
    for b, s, X in zip(batch, single, Xs):
        exact = float(head.exact(X).ball(128).mid())
        bound = 2.0**-48 * abs(exact) + 1e-300
        assert abs(b - s) <= 2 * bound
        assert abs(b - exact) <= bound and abs(s - exact) <= bound


def test_float_oracle_batch_equals_single_queries():
    h = SingleHead.random(3, seed=1)
    Xs = list(np.random.default_rng(0).normal(size=(20, 4, 3)))
    o = FloatOracle(h)
    assert o.query_batch(Xs) == [o.query(X) for X in Xs]


def test_float_oracle_from_arrays():
    o = FloatOracle((np.eye(2), np.ones(2)))
    assert o.query([[1, 0], [0, 1]]) == 1.0
    assert o.d == 2 and o.rtol == 0 and o.accuracy == 0
    y = o.query([[1, 0], [0, 1]])
    assert 0 < y.error < 1e-13 and o.error_bound(y) == Fraction(y.error)  # its own rounding bound


def test_float_oracle_error_bound_covers_cancellation_near_zero():
    from exact.oracles import FloatAnswer

    m = SingleHead([[1, 1], [Fraction(1, 2**60), 1]], [1, -2])
    o = FloatOracle(m)
    X = [[1, 1], [1, 0]]
    y = o.query(X)
    assert isinstance(y, FloatAnswer)
    truth = m.ball(X, prec=256)
    err = o.error_bound(y)
    from flint import arb, fmpq

    diff = truth - arb(fmpq(Fraction(float(y)).numerator, Fraction(float(y)).denominator))
    assert abs(diff) <= arb(fmpq(err.numerator, err.denominator))  # the declared bound holds
    with pytest.raises(PrecisionInsufficient, match="cannot certify it on grid float32"):
        learn_single_head(FloatOracle(m), grid="float32")  # 2^-60 vs 0: not silently guessed


# -- an independent reference ------------------------------------------------------------------


def mp_single_head(head, X, dps=60):
    """Independent mpmath evaluation of ``head`` on the rows ``X`` (exact rationals)."""
    with mpmath.workdps(dps):
        W = [[mpmath.mpf(x.numerator) / x.denominator for x in r] for r in head.W]
        v = [mpmath.mpf(x.numerator) / x.denominator for x in head.v]
        Xm = [[mpmath.mpf(Fraction(x).numerator) / Fraction(x).denominator for x in row] for row in X]
        d = len(v)
        xN = Xm[-1]
        Wx = [mpmath.fsum(W[a][b] * xN[b] for b in range(d)) for a in range(d)]
        s = [mpmath.fsum(x[a] * Wx[a] for a in range(d)) for x in Xm]
        m = max(s)
        e = [mpmath.exp(si - m) for si in s]
        u = [mpmath.fsum(v[a] * x[a] for a in range(d)) for x in Xm]
        return mpmath.fsum(ei * ui for ei, ui in zip(e, u)) / mpmath.fsum(e)


def test_a_failing_answer_still_counts_the_queries_before_it():
    calls = []

    def fn(X):
        calls.append(1)
        return float("nan") if len(calls) == 3 else 0.5

    o = CallableOracle(fn, d=1, accuracy="1e-9")
    with pytest.raises(OracleInconsistent, match=r"query #3"):
        o.query_batch([[[1]], [[2]], [[3]], [[4]]])
    assert o.count == 2 and len(o.transcript) == 2 and len(calls) == 3


def test_sequence_constructor_validates():
    with pytest.raises(ShapeError, match="indices must increase within 0..1"):
        Sequence(2, (((5, Fraction(1)),),))
    with pytest.raises(ShapeError, match="values must be nonzero Fractions"):
        Sequence(2, (((0, "1"),),))
    with pytest.raises(ShapeError, match="values must be nonzero Fractions"):
        Sequence(2, (((0, Fraction(0)),),))
    assert Sequence(2, (((1, Fraction(3)),),)) == Sequence.from_rows([[0, 3]])


def test_float_answers_and_bounds_do_not_depend_on_the_batch():
    """A certificate recomputes a float answer's bound from one sequence: it must equal the oracle's."""
    import numpy as np

    from exact.floateval import evaluate_sequences
    from exact.learn.single_head import ProbePlan
    from exact.sequences import Sequence

    h = SingleHead.random(20, seed=3, grid="float32")
    W, v = h.to_numpy()
    rng = np.random.default_rng(0)
    dense = [Sequence.from_rows(rng.integers(-4, 5, size=(2, 20)) / 4) for _ in range(3)]
    seqs = ProbePlan.choose(h.v).sequences()[:50] + dense
    ys, errs = evaluate_sequences(W, v, seqs)
    for i, s in enumerate(seqs):
        y1, e1 = evaluate_sequences(W, v, [s])
        assert (y1[0], e1[0]) == (ys[i], errs[i])
    assert (errs > 0).all() and (errs < 1e-9).all()


def test_a_rational_answer_of_a_sum_of_heads_is_its_value_not_its_reciprocal():
    from exact import MultiHead
    from exact.oracles import answer_difference

    box = ExactOracle(MultiHead([([[1]], [2]), ([[0]], [3])]))
    one, two = box.query([[1]]), box.query([[1], [2]])
    assert one.rational() == Fraction(5)  # one token: Σ v_h x = 5 (an exp-sum over two heads)
    assert two.rational() is None
    assert answer_difference(two, one).rational() is None and answer_difference(two, two).rational() == 0
    assert answer_difference(one, box.query([[2]])).rational() == Fraction(-5)
