"""The learner driver (:mod:`exact.learn.driver`): the garbage collector, the budget with its
verification queries, the timing of the phases, the verification messages, and the float
result's tolerance on a verification query."""

import dataclasses
import gc
import math
from fractions import Fraction

import pytest

from exact import ExactOracle, FloatOracle, MultiHead, SingleHead, learn_single_head
from exact import registry
from exact.errors import CertificateInvalid, InvalidArgument, OracleInconsistent, QueryBudgetExceeded
from exact.learn import driver

FAST = registry.get("multi-head-fast")  # a learner without float mode
from exact.learn.single_head import SPEC
from exact.oracles import Query
from exact.sequences import Sequence


def test_a_run_restores_the_garbage_collector_as_it_found_it():
    truth = SingleHead([[1, 2], [0, -1]], [1, 3])
    assert gc.isenabled()
    learn_single_head(ExactOracle(truth))
    assert gc.isenabled()
    gc.disable()
    try:
        learn_single_head(ExactOracle(truth))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_require_counts_the_verification_queries_too():
    truth = SingleHead([[1, 2], [0, -1]], [1, 3])
    run = driver.Run(SPEC, ExactOracle(truth, budget=10), checks=2)
    run.require(8, "step")  # 8 + 2 checks = the whole budget
    with pytest.raises(QueryBudgetExceeded, match=r"9 queries \+ 2 checks\) needs 11 more queries"):
        run.require(9, "step")  # 9 + 2 > 10, though 9 alone would fit


@pytest.mark.parametrize("kw, message", [
    ({"checks": -1}, r"^checks: expected a non-negative integer, got -1$"),
    ({"checks": True}, r"^checks: expected a non-negative integer, got True$"),
    ({"checks": 1.0}, r"^checks: expected a non-negative integer, got 1.0$"),
    ({"check_seed": -1}, r"^check_seed: expected a non-negative integer, got -1$"),
])
def test_checks_and_check_seed_are_validated_before_any_query(kw, message):
    oracle = ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3]))
    with pytest.raises(InvalidArgument, match=message):
        driver.Run(SPEC, oracle, queries=6, **kw)
    assert oracle.count == 0
    assert driver.Run(SPEC, oracle, queries=6, checks=0, check_seed=0).checks == 0  # 0 is allowed for both


def test_the_budget_for_the_learner_and_its_checks_is_checked_before_the_first_query():
    oracle = ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3]), budget=7)  # 6 queries + 2 checks = 8
    with pytest.raises(QueryBudgetExceeded, match=r"\(d=2: 6 queries \+ 2 checks\) needs 8 more queries"):
        driver.Run(SPEC, oracle, queries=6)
    assert oracle.count == 0


def test_a_default_mode_outside_the_learner_is_refused_with_a_hint():
    oracle = FloatOracle(SingleHead([[1, 2], [0, -1]], [1, 3]))  # default: float, which the fast plan lacks
    with pytest.raises(InvalidArgument, match=r"not in 'float' \(the default for this oracle\); pass mode= explicitly$"):
        driver.Run(FAST, oracle, queries=8)
    assert oracle.count == 0


class _Clock:
    """A perf_counter that advances by one second per reading."""

    def __init__(self):
        self.now = 0

    def perf_counter(self):
        self.now += 1
        return self.now


def test_phase_seconds_are_nonnegative_and_add_up_to_the_total(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(driver, "time", clock)
    r = learn_single_head(ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3])))
    s = r.seconds
    assert s["total"] == clock.now - 1  # from the run's first reading of the clock to its last
    for phase in ("query", "check", "certify"):
        assert 1 <= s[phase] <= s["total"], (phase, s)
    assert s["solve"] >= 0
    assert s["solve"] + s["query"] + s["check"] + s["certify"] == s["total"]


class _SlowOracle(ExactOracle):
    """An exact oracle that takes 1000 (fake) seconds per batch."""

    def __init__(self, model, clock):
        super().__init__(model)
        self.clock = clock

    def query_batch(self, Xs):
        self.clock.now += 1000
        return super().query_batch(Xs)


def test_time_inside_the_oracle_is_query_time_for_verification_queries_too(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(driver, "time", clock)
    r = learn_single_head(_SlowOracle(SingleHead([[1, 2], [0, -1]], [1, 3]), clock))
    s = r.seconds
    assert s["query"] >= 3000  # v, the d² probes, the verification queries: three batches
    assert s["check"] < 1000 and s["solve"] < 1000 and s["certify"] < 1000


def test_a_reused_oracle_counts_and_certifies_only_this_run():
    truth = SingleHead([[1, 2], [0, -1]], [1, 3])
    oracle = ExactOracle(truth)
    learn_single_head(oracle)
    r = learn_single_head(oracle)
    assert r.queries == 6 and r.total_queries == 8 and oracle.count == 16
    assert len(r.certificate.transcript) == 6 and r.certificate.check().holds


def test_an_exact_result_states_a_zero_error():
    r = learn_single_head(ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3])))
    assert r.exact and r.error_estimate == 0


def test_an_approximate_finish_makes_no_certificate_and_no_verification_query():
    truth = SingleHead([[1, 2], [0, -1]], [1, 3])
    oracle = ExactOracle(truth)
    with driver.Run(SPEC, oracle) as run:  # certified arithmetic, 2 checks by default
        r = run.finish(truth, approximate=True)
    assert oracle.count == 0 and r.verification_queries == 0 and r.queries == 0 and r.max_length == 0
    assert not r.exact and r.certificate is None and r.error_estimate is None


def test_a_result_failing_its_own_learner_check_is_an_internal_error_not_a_result(monkeypatch):
    refusing = dataclasses.replace(SPEC, check_certificate=lambda model, transcript, conditions: "refused")
    monkeypatch.setitem(registry._REGISTRY, SPEC.name, refusing)
    with pytest.raises(CertificateInvalid, match=r"^single-head: internal error, .*refused"):
        learn_single_head(ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3])))


class _ForgingTranscript(ExactOracle):
    """Answers truthfully, but records another model's answer to the last query of a batch."""

    def query_batch(self, Xs):
        answers = super().query_batch(Xs)
        if len(answers) > 2:
            last = self._transcript[-1]
            self._transcript[-1] = Query(last.X, ExactOracle(SingleHead([[0, 0], [0, 0]], [5, 5])).query(last.X))
        return answers


def test_a_transcript_that_is_not_what_the_oracle_answered_is_refused():
    with pytest.raises(OracleInconsistent, match=r"transcript"):
        learn_single_head(_ForgingTranscript(SingleHead([[1, 2], [0, -1]], [1, 3])), mode="symbolic")


def _dyadic_mirror():
    """A two-head model that agrees with a single head on every input of length <= 2."""
    h = SingleHead([[1, "1/2", 0], [-2, 0, "1/4"], [0, 1, -1]], [1, "-1/2", 2])
    neg = SingleHead([[-x for x in row] for row in h.W], h.v)
    return MultiHead([h, neg])


def test_one_failed_verification_query_is_reported():
    with pytest.raises(OracleInconsistent, match=r"^not a single head: .* exactly 1 of 1 random verification"):
        learn_single_head(ExactOracle(_dyadic_mirror()), checks=1)


def test_a_failed_check_after_an_unreplayed_grid_identification_says_so():
    with pytest.raises(OracleInconsistent, match=r"identified on grid float32 without a replay, and may be off it$"):
        learn_single_head(ExactOracle(_dyadic_mirror()), grid="float32", certify=False)
    with pytest.raises(OracleInconsistent, match=r"holds only among bias-free single heads$"):
        learn_single_head(ExactOracle(_dyadic_mirror()), grid="float32")


# -- the float result's tolerance on a verification query ------------------------------------


class _Accuracy:
    def __init__(self, error):
        self.error = Fraction(error)

    def error_bound(self, answer):
        return self.error


_MODEL = SingleHead([[1, -1], [2, "1/2"]], [1, 3])
_X = [[1, 0.5], [-0.25, 1], [0.5, 0.25]]  # row 1-norms 1.5, 1.25, 0.75 (column sums differ)


def _tolerance(eps: float, error: float, y: float) -> float:
    """4·(expm1(2δ)·spread/2 + ε·max‖x‖₁) + error + 1e-12·(1 + |y|), δ = ε·max‖x‖₁·‖x_N‖₁."""
    norms = [1.5, 1.25, 0.75]
    c = [sum(x * float(v) for x, v in zip(row, _MODEL.v)) for row in _X]
    delta = eps * max(norms) * norms[-1]
    bound = math.expm1(2 * delta) * (max(c) - min(c)) / 2 + eps * max(norms)
    return 4 * bound + error + 1e-12 * (1 + abs(y))


@pytest.mark.parametrize("eps, error", [(1e-3, 1e-3), (1e-4, 0.0), (0.0, 1e-6)])
def test_a_float_result_reproduces_an_answer_within_four_times_its_error_bound(eps, error):
    f = _MODEL.float(_X)
    X = Sequence.from_rows(_X)
    tol = _tolerance(eps, error, f)
    for inside in (0.0, 0.98 * tol, -0.98 * tol):
        assert driver._within_float_bound(_MODEL, Query(X, f + inside), _Accuracy(error), eps), inside
    for outside in (1.02 * tol, -1.02 * tol):
        assert not driver._within_float_bound(_MODEL, Query(X, f + outside), _Accuracy(error), eps), outside


def test_an_exact_float_result_allows_only_rounding_relative_to_the_answer():
    model = SingleHead([[0, 0], [0, 0]], [8, 8])  # W = 0: f is the mean of the x_i·v
    f = model.float(_X)
    X = Sequence.from_rows(_X)
    assert driver._within_float_bound(model, Query(X, f), _Accuracy(0), 0.0)
    slack = 1e-12 * (1 + f)
    assert driver._within_float_bound(model, Query(X, f + 0.9 * slack), _Accuracy(0), 0.0)
    assert not driver._within_float_bound(model, Query(X, f + 1.1 * slack), _Accuracy(0), 0.0)



def test_an_explicit_mode_outside_the_learner_is_refused_by_name():
    oracle = ExactOracle(SingleHead([[1, 2], [0, -1]], [1, 3]))
    with pytest.raises(InvalidArgument, match=r"^mode: learner 'multi-head-fast' runs in 'certified', 'symbolic', got 'float'$"):
        driver.Run(FAST, oracle, mode="float", queries=8)
    assert oracle.count == 0
