"""Theorem 4.1: exact recovery of a single head with exactly d² + d queries.

Every learner test runs in each arithmetic (the ``arithmetic`` fixture of conftest.py):
in ``certified`` and ``symbolic`` mode the result must be the model, compared with
``==`` on rationals, with a holding exact certificate; in ``float`` mode it must lie
within the learner's own error estimate.  In every mode the learner asks exactly
``d² + d`` queries, followed by 2 verification queries (lengths 3 and 4) that are
counted apart.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ARITHMETICS
from exact.checks import FRESH_SEED
from exact import (
    CallableOracle,
    ExactOracle,
    FloatOracle,
    NotIdentifiable,
    OracleInconsistent,
    PrecisionInsufficient,
    QueryBudgetExceeded,
    SingleHead,
    learn_single_head,
    registry,
    single_head_query_count,
)
from exact.arith import MODES
from exact.errors import InvalidArgument
from exact.learn import ProbePlan
from exact.multihead import MultiHead
from exact.oracles import ExactAnswer
from exact.sequences import Sequence
from public_only import PublicOnly

CHECKS = 2  # the learner's default number of verification queries


# -- helpers ---------------------------------------------------------------------------


def _max_error(r, model) -> float:
    got = [x for row in r.W for x in row] + list(r.v)
    want = [x for row in model.W for x in row] + list(model.v)
    return max(abs(float(a - b)) for a, b in zip(got, want))


def _assert_counts(r, oracle, d: int) -> None:
    """The learner's own d² + d queries (and, in adaptive float mode, one more for each probe asked
    again at a smaller scale), then exactly 2 verification queries of lengths 3 and 4."""
    extra = r.details.rescaled
    assert extra == 0 or r.mode == "float"
    assert r.queries == d * d + d + extra == single_head_query_count(d) + extra
    assert r.verification_queries == CHECKS
    assert oracle.count == r.queries + r.verification_queries == r.total_queries
    lengths = [q.X.length for q in oracle.transcript]
    n = d * d + d + extra
    assert lengths[:n].count(1) == d and lengths[:n].count(2) == d * d + extra
    assert lengths[n:] == [3, 4]
    assert r.max_length == 2  # the learner's own longest query; the checks are longer
    assert r.details["checks"]["queries"] == CHECKS and r.details["checks"]["lengths"] == (3, 4)
    assert isinstance(r.details["checks"]["seed"], int)


def _check(model: SingleHead, mode: str, **kw):
    """Learn ``model`` in ``mode``: exact (and certified) in the exact modes, within the estimate in float mode."""
    d = model.d
    oracle = FloatOracle(model) if mode == "float" else ExactOracle(model)
    r = learn_single_head(oracle, mode=mode, **kw)
    _assert_counts(r, oracle, d)
    assert r.mode == mode and r.learner == "single-head" and r.assumptions == ()
    if mode == "float":
        assert not r.exact and r.certificate is None and r.report is None
        assert _max_error(r, model) <= r.error_estimate
        assert r.claim == f"approximate (error <= {r.error_estimate:.3g})"
        return r
    assert r.model == model  # exact: Fractions compared with ==
    assert r.W == model.W and r.v == model.v
    assert r.exact and r.error_estimate == 0.0
    assert r.claim == "exact" + (f" on grid {r.grid}" if r.grid else "")
    cert = r.certificate
    assert len(cert.transcript) == d * d + d and len(cert.checks) == CHECKS
    assert cert.transcript + cert.checks == oracle.transcript
    assert cert.learner == "single-head" and cert.assumptions == (FRESH_SEED,)  # what a reader of the checks must assume
    report = cert.check()
    assert report.holds and report.kind == "exact" and report.checked == d * d + d + CHECKS
    assert r.report == report  # the learner's own replay is the certificate's check
    return r


# -- the fixture covers every arithmetic the learner runs in ------------------------------


def test_the_arithmetic_fixture_covers_every_mode_of_the_learner():
    assert ARITHMETICS == MODES == registry.get("single-head").modes


# -- exact recovery ----------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_random_rational_heads(d, arithmetic):
    for seed in range(2):
        _check(SingleHead.random(d, seed=seed), arithmetic)


@pytest.mark.parametrize("d", [9, 12, 16])
def test_random_rational_heads_larger(d, arithmetic):
    if arithmetic == "symbolic":
        pytest.skip("symbolic mode at d >= 9 is the slow sweep: test_random_rational_heads_symbolic_larger (-m slow)")
    _check(SingleHead.random(d, seed=d), arithmetic)


@pytest.mark.slow
@pytest.mark.parametrize("d", range(9, 17))
def test_random_rational_heads_symbolic_larger(d):
    _check(SingleHead.random(d, seed=d), "symbolic")


@pytest.mark.parametrize("d,zeros", [(2, 1), (4, 2), (6, 5)])
def test_v_with_zero_entries(d, zeros, arithmetic):
    model = SingleHead.random(d, seed=7, v_zeros=zeros)
    assert sum(x == 0 for x in model.v) == zeros
    r = _check(model, arithmetic)
    assert any(r.details["shifts"])  # the pivot trick was needed


@pytest.mark.parametrize("rank", [0, 1, 2])
def test_singular_W(rank, arithmetic):
    _check(SingleHead.random(5, seed=11, rank=rank), arithmetic)


def test_huge_entries(arithmetic):
    _check(SingleHead.random(3, seed=30, bound=10**4), arithmetic)


def test_entries_up_to_a_million(arithmetic):
    model = SingleHead([[10**6, -999_999], ["-1000000/7", 3]], ["1/3", -2])
    if arithmetic == "float":
        # float64 cannot hold a logit of 10^6 at a fixed small probe scale: refused, never guessed
        with pytest.raises(PrecisionInsufficient, match="saturated"):
            learn_single_head(FloatOracle(model), mode="float", w_bound=1)
        r = _check(model, "float", w_bound=2 * 10**6)  # probes scaled for |W_ij| <= 2e6
        assert r.error_estimate < 1 and r.details.rescaled == 0
        adaptive = _check(model, "float")  # the default: saturated probes asked again, smaller
        assert adaptive.details.rescaled > 0 and adaptive.error_estimate < 1
        return
    r = _check(model, arithmetic)
    if arithmetic == "certified":
        assert r.precision >= 2**20  # a logit of 10^6 needs about 1.44e6 bits


@pytest.mark.parametrize("grid", ["float32", "bfloat16", "float16"])
def test_float_grid_heads_bit_for_bit(grid, arithmetic):
    model = SingleHead.random(6, seed=3, grid=grid)
    # without a grid: simplest rationals, confirmed exactly (or approximate in float mode)
    _check(model, arithmetic)
    if arithmetic != "certified":
        with pytest.raises(InvalidArgument, match=rf"^grid: only mode='certified' identifies on a grid, got mode='{arithmetic}'$"):
            learn_single_head(ExactOracle(model), mode=arithmetic, grid=grid)
        return
    # with the grid declared: identification on the grid, confirmed by the replay
    r = _check(model, "certified", grid=grid)
    assert r.grid == grid and r.certificate.grid == grid
    if grid == "float32":
        W = np.array([[float(x) for x in row] for row in r.W], dtype=np.float32)
        assert all(Fraction(float(W[i, j])) == r.W[i][j] for i in range(6) for j in range(6))


def test_grid_without_replay_is_not_claimed_exact():
    model = SingleHead.random(3, seed=3, grid="float32")
    oracle = ExactOracle(model)
    r = learn_single_head(oracle, grid="float32", certify=False, check_seed=0)
    assert r.model == model  # identified correctly here ...
    assert r.exact is False  # ... but without the replay nothing confirms it, so it is not claimed
    assert r.queries == 12 and r.verification_queries == CHECKS and oracle.count == 14


def test_native_weights_head(arithmetic):
    rng = np.random.default_rng(0)
    d, r, dv = 4, 4, 3
    WQ, WK = rng.integers(-3, 4, (r, d)), rng.integers(-3, 4, (r, d))
    WV, WO, w = rng.integers(-2, 3, (dv, d)), rng.integers(-2, 3, (d, dv)), rng.integers(-2, 3, d)
    model = SingleHead.from_native(WQ, WK, WV, WO, w)
    assert any(model.v)  # this seed gives a learnable head
    _check(model, arithmetic)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])  # the fixture is a constant
@given(
    st.integers(1, 3).flatmap(
        lambda d: st.tuples(
            st.lists(st.lists(st.fractions(-20, 20, max_denominator=50), min_size=d, max_size=d), min_size=d, max_size=d),
            st.lists(st.fractions(-5, 5, max_denominator=20), min_size=d, max_size=d).filter(any),
        )
    )
)
def test_property_any_rational_head_is_recovered_exactly(arithmetic, params):
    W, v = params
    _check(SingleHead(W, v), arithmetic)


@settings(max_examples=100)
@given(st.lists(st.fractions(-10, 10, max_denominator=9), min_size=1, max_size=8).filter(any))
def test_probe_plan_keeps_every_probe_well_conditioned(v):
    plan = ProbePlan.choose(v)
    p = plan.pivot
    for k in range(len(v)):
        assert abs(v[k] + plan.shifts[k] * v[p]) >= abs(v[p]) / 2 > 0
    assert plan.shifts[p] == 0


# -- the model class: verification queries ---------------------------------------------------


def _plus_minus_heads():
    """(W, v) + (−W, v): equal to the single head (0, 2v) on every sequence of length 1 or 2
    (σ(L) + σ(−L) = 1), but not on longer ones."""
    v = ["1/2", -1]
    two = MultiHead([([[1, "-2/3"], [0, 5]], v), ([[-1, "2/3"], [0, -5]], v)])
    return two, SingleHead([[0, 0], [0, 0]], [1, -2])


def test_an_oracle_that_is_not_a_single_head_is_caught_by_the_checks(arithmetic):
    two, impostor = _plus_minus_heads()
    X = Sequence.from_rows([[1, 2], ["1/3", -1]])
    assert two.exact(X) == impostor.exact(X)  # the learner's queries cannot tell them apart
    oracle = ExactOracle(two)
    how = "within the float result's error bound" if arithmetic == "float" else "exactly"
    with pytest.raises(
        OracleInconsistent,
        match=rf"^not a single head: the learned model does not reproduce {how} 2 of 2 random "
        r"verification queries \(first of length 3\); the learner's result holds only among bias-free single heads$",
    ):
        learn_single_head(oracle, mode=arithmetic)
    assert oracle.count == 6 + CHECKS


def test_without_checks_the_result_states_its_assumption(arithmetic):
    two, impostor = _plus_minus_heads()
    oracle = ExactOracle(two)
    r = learn_single_head(oracle, mode=arithmetic, checks=0)
    assert r.queries == oracle.count == 6 and r.verification_queries == 0 and r.total_queries == 6
    assert r.assumptions == ("among bias-free single heads",)
    assert dict(r.details["checks"]) == {"queries": 0, "lengths": (), "seed": None}
    if arithmetic == "float":
        assert not r.exact and r.certificate is None and _max_error(r, impostor) <= r.error_estimate
        return
    assert r.model == impostor  # the single head the d² + d answers identify, among bias-free single heads
    assert r.exact and r.claim == "exact among bias-free single heads"
    cert = r.certificate
    assert cert.assumptions == ("among bias-free single heads",) and cert.checks == ()
    report = cert.check()
    assert report.holds and report.checked == 6
    assert report.message == (
        "certificate holds: the model's values are exactly equal to all 6 answers (the single-head learner's "
        "probe set, which identifies the model among bias-free single heads; assuming it is among bias-free single heads)"
    )


def test_verification_queries_are_reproducible_with_a_seed():
    model = SingleHead.random(3, seed=2)
    runs = []
    for check_seed in (7, 7, 8):
        oracle = ExactOracle(model)
        r = learn_single_head(oracle, check_seed=check_seed)
        assert r.details["checks"]["seed"] == check_seed
        runs.append([q.X for q in r.certificate.checks])
    assert runs[0] == runs[1] != runs[2]
    fresh = [learn_single_head(ExactOracle(model)).details["checks"]["seed"] for _ in range(2)]
    assert fresh[0] != fresh[1]  # 63-bit fresh seeds: equal with probability 2^-63


# -- errors ----------------------------------------------------------------------------


def test_v_zero_is_not_identifiable(arithmetic):
    model = SingleHead([[1, 2], [3, 4]], [0, 0])
    oracle = ExactOracle(model) if arithmetic != "float" else FloatOracle(model)
    with pytest.raises(NotIdentifiable, match="cannot be identified"):
        learn_single_head(oracle, mode=arithmetic)
    assert oracle.count == 2  # only the d queries for v were spent (no verification query)
    with pytest.raises(ValueError):  # NotIdentifiable is a ValueError too
        learn_single_head(ExactOracle(model))


def test_budget_is_checked_before_any_query():
    model = SingleHead.random(3, seed=0)
    for budget in (11, 13):
        oracle = ExactOracle(model, budget=budget)
        with pytest.raises(
            QueryBudgetExceeded,
            match=rf"^single-head \(d=3: 12 queries \+ 2 checks\) needs 14 more queries, but the oracle's budget "
            rf"allows {budget} \(budget={budget}, used=0\)$",
        ):
            learn_single_head(oracle)
        assert oracle.count == 0
    exact_budget = ExactOracle(model, budget=14)
    r = learn_single_head(exact_budget)
    assert r.queries == 12 and r.verification_queries == 2 and exact_budget.remaining == 0
    # without the checks the learner's own d² + d queries fit a budget of d² + d
    unchecked = ExactOracle(model, budget=12)
    assert learn_single_head(unchecked, checks=0).queries == 12 and unchecked.remaining == 0


@pytest.mark.parametrize("kw,match", [
    (dict(mode="exactish"), r"^mode: learner 'single-head' runs in 'certified', 'symbolic', 'float', got 'exactish'$"),
    (dict(mode="symbolic", grid="float32"), r"^grid: only mode='certified' identifies on a grid, got mode='symbolic'$"),
    (dict(mode="float", grid="float32"), r"^grid: only mode='certified' identifies on a grid, got mode='float'$"),
    (dict(checks=-1), r"^checks: expected a non-negative integer, got -1$"),
    (dict(checks=True), r"^checks: expected a non-negative integer, got True$"),
    (dict(checks=1.5), r"^checks: expected a non-negative integer, got 1.5$"),
    (dict(check_seed=-3), r"^check_seed: expected a non-negative integer, got -3$"),
])
def test_bad_arguments_are_refused_before_any_query(kw, match):
    oracle = ExactOracle(SingleHead.random(2, seed=0))
    with pytest.raises(InvalidArgument, match=match):
        learn_single_head(oracle, **kw)
    assert oracle.count == 0


def test_bad_grid_is_refused_before_any_query():
    oracle = ExactOracle(SingleHead.random(2, seed=0))
    with pytest.raises(InvalidArgument, match=r"^grid: expected 'rational:Q', 'dyadic:k', .* got 'float31'$"):
        learn_single_head(oracle, grid="float31")
    assert oracle.count == 0


class _Substituting(ExactOracle):
    """Answers query number ``n`` (1-based) as if it had been asked ``other``."""

    def __init__(self, model, n, other):
        super().__init__(model)
        self._n, self._other, self._seen = n, other, 0

    def _answer(self, seq):
        self._seen += 1
        return super()._answer(self._other if self._seen == self._n else seq)


def test_lying_oracle_out_of_range_answer():
    model = SingleHead.random(3, seed=1)
    liar = _Substituting(model, 6, Sequence.from_rows([[1, 2, 0], [0, "1/3", 1], [1, 0, 1]]))
    with pytest.raises(OracleInconsistent, match=r"outside \(0, 1\)"):
        learn_single_head(liar)


@pytest.mark.parametrize("mode,error,match", [
    ("certified", PrecisionInsufficient, "a black box outside the learner's class"),
    ("symbolic", OracleInconsistent, "not a single exponential"),
])
def test_lying_oracle_answer_of_another_query(mode, error, match):
    model = SingleHead.random(3, seed=1)
    liar = _Substituting(model, 6, Sequence.sparse(3, [{0: 1, 1: 1}, {1: 1}]))
    with pytest.raises(error, match=match):
        learn_single_head(liar, mode=mode)


def test_symbolic_needs_an_exact_oracle():
    with pytest.raises(InvalidArgument, match="mode='symbolic' needs an exact oracle"):
        learn_single_head(FloatOracle(SingleHead.random(2, seed=0)), mode="symbolic")


# -- honesty: the learner reads the oracle only through its public interface ---------


def test_learner_uses_only_the_public_oracle_interface(arithmetic):
    model = SingleHead.random(4, seed=2, v_zeros=1)
    inner = ExactOracle(model) if arithmetic != "float" else FloatOracle(model)
    r = learn_single_head(PublicOnly(inner), mode=arithmetic)
    assert r.queries == 20 and r.verification_queries == CHECKS and inner.count == r.total_queries
    if arithmetic == "float":
        assert _max_error(r, model) <= r.error_estimate
    else:
        assert r.model == model and r.certificate.check().holds


def test_only_the_equality_predicates_and_certify_read_the_exp_polynomial_form(monkeypatch, arithmetic):
    callers = []
    original = ExactAnswer._exp_form

    def spy(self):
        callers.append(inspect.stack()[1].frame.f_globals["__name__"])
        return original(self)

    monkeypatch.setattr(ExactAnswer, "_exp_form", spy)
    from exact import learn_low_rank, learn_low_rank_cs

    learn_single_head(ExactOracle(SingleHead.random(3, seed=4)), mode=arithmetic)
    if arithmetic == "float":  # float mode reads exact answers as floats only
        assert callers == []
        return
    learn_low_rank(ExactOracle(SingleHead.random(4, seed=4, rank=1)), rank=1, mode=arithmetic, seed=0)
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        pass
    else:
        learn_low_rank_cs(ExactOracle(SingleHead.random(4, seed=4, rank=1)), rank=1, seed=0)
    # the predicates beside ExactAnswer (exact.oracles) and the certificate replay, nothing else
    assert callers and set(callers) <= {"exact.oracles", "exact.certify"}


# -- callable oracles: pointing the library at a function written without it ---------


def _mpmath_head(W, v, dps=120):
    """f(X) of a single head, written with mpmath only (no exact-attention code)."""

    def f(X):
        with mpmath.workdps(dps):
            X = [[mpmath.mpf(float(x)) for x in row] for row in X]
            q = X[-1]
            Wq = [mpmath.fsum(mpmath.mpf(W[a][b].numerator) / W[a][b].denominator * q[b] for b in range(len(q))) for a in range(len(q))]
            s = [mpmath.fsum(x[a] * Wq[a] for a in range(len(q))) for x in X]
            m = max(s)
            e = [mpmath.exp(si - m) for si in s]
            vals = [mpmath.fsum(mpmath.mpf(v[a].numerator) / v[a].denominator * x[a] for a in range(len(q))) for x in X]
            return mpmath.fsum(ei * ci for ei, ci in zip(e, vals)) / mpmath.fsum(e)

    return f


@pytest.mark.parametrize("d", [1, 3, 5])
def test_callable_mpmath_oracle_exact_on_a_grid(d):
    model = SingleHead.random(d, seed=d, v_zeros=min(1, d - 1))
    oracle = CallableOracle(_mpmath_head(model.W, model.v), d=d, accuracy="1e-100")
    r = learn_single_head(oracle, grid="rational:1000")
    assert r.model == model and r.exact and r.grid == "rational:1000"
    _assert_counts(r, oracle, d)
    report = r.certificate.check()
    assert report.holds and report.kind == "consistent" and report.checked == d * d + d + CHECKS


def test_callable_oracle_needs_a_grid_for_exactness():
    oracle = CallableOracle(lambda X: 0.5, d=2, accuracy="1e-12")
    with pytest.raises(ValueError, match="needs a declared grid"):
        learn_single_head(oracle, mode="certified")
    assert oracle.count == 0


def test_callable_oracle_too_coarse_for_the_grid_says_which_grid_would_do():
    model = SingleHead.random(2, seed=5)
    W, v = model.to_numpy()
    oracle = CallableOracle(lambda X: float(FloatOracle((W, v)).query(X)), d=2, accuracy="1e-6")
    with pytest.raises(PrecisionInsufficient, match="grids certifiable at this accuracy: rational:Q for Q <= "):
        learn_single_head(oracle, grid="rational:100000")


def test_float_oracle_on_a_float32_grid_is_exact():
    model = SingleHead.random(4, seed=8, grid="float32", bound=4)
    oracle = FloatOracle(model)
    r = learn_single_head(oracle, grid="float32", w_bound=8)
    assert r.model == model and r.exact and r.grid == "float32" and r.claim == "exact on grid float32"
    _assert_counts(r, oracle, 4)
    report = r.certificate.check()
    assert report.holds and report.kind == "consistent" and report.checked == 20 + CHECKS


# -- float mode --------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 4, 8, 16])
def test_float_mode_error_within_1e9_and_the_estimate(d):
    model = SingleHead.random(d, seed=d, bound=10)
    r = _check(model, "float")
    assert _max_error(r, model) <= 1e-9  # the reported estimate is not optimistic here (checked in _check)


def test_float_mode_survives_W_around_1e3():
    model = SingleHead.random(5, seed=2, bound=2000)
    assert max(abs(x) for row in model.W for x in row) > 500
    r = _check(model, "float")
    assert np.isfinite([float(x) for row in r.W for x in row]).all()
    assert _max_error(r, model) <= 1e-6


def test_float_mode_with_too_small_w_bound_refuses():
    model = SingleHead([[800, 0], [0, -900]], [1, 1])
    oracle = FloatOracle(model)
    with pytest.raises(PrecisionInsufficient, match="saturated"):
        learn_single_head(oracle, mode="float", w_bound=1)
    assert oracle.count == 6  # refused on the learner's own answers, before any verification query


def test_precision_state_is_left_unchanged():
    import flint

    before = (flint.ctx.prec, mpmath.mp.prec)
    learn_single_head(ExactOracle(SingleHead([[10**4, 1], [2, 3]], [1, "1/3"])))  # escalates precision
    learn_single_head(CallableOracle(_mpmath_head(((Fraction(1),),), (Fraction(2),)), d=1, accuracy="1e-100"), grid="rational:10")
    assert (flint.ctx.prec, mpmath.mp.prec) == before


# -- the probe plan and the float-mode scale, as documented -----------------------------------


@pytest.mark.parametrize(
    "v, pivot, shifts",
    [
        ([2, 0, -3], 2, (0, 1, 0)),  # v_k = 0: σ_k = +1 whatever the pivot's sign
        ([2, 0, 3], 2, (0, 1, 0)),
        (["1/2", "-1/4", -3], 2, (-1, 1, 0)),  # σ_k = sign(v_k)·sign(v_p), small |v_k| included
        (["-1/2", "1/4", 3], 2, (-1, 1, 0)),
        ([1, 2], 1, (0, 0)),  # |v_k| = |v_p|/2 exactly: no shift
        (["-99/100", 2], 1, (-1, 0)),  # just below half: shifted
        ([1, 0, "5/2"], 2, (1, 1, 0)),  # 2·1 < 5/2
    ],
)
def test_probe_plan_shifts_follow_the_documented_rule(v, pivot, shifts):
    plan = ProbePlan.choose([Fraction(x) for x in v])
    assert (plan.pivot, plan.shifts) == (pivot, shifts)
    assert all(type(s) is int for s in plan.shifts)  # σ_k in {-1, 0, 1}, recorded as integers


def test_parameter_names_are_row_major_and_bounded():
    from exact.learn.single_head import _ParamNames

    names = _ParamNames(2)
    assert len(names) == 4 and list(names) == ["W[0][0]", "W[0][1]", "W[1][0]", "W[1][1]"]
    for bad in (-1, 4):
        with pytest.raises(IndexError):
            names[bad]


@pytest.mark.parametrize(
    "w_bound",
    [Fraction(1, 2**40), Fraction(1, 3), Fraction(1, 2), 1, Fraction(3, 2), 2, Fraction(5, 2), 8, Fraction(17, 2),
     32, 1000, 1024, 2**20 + 1, 2**999],
)
def test_float_scale_is_the_largest_power_of_two_keeping_logits_in_one(w_bound):
    from exact.learn.single_head import _float_scale

    beta = _float_scale(w_bound)
    assert beta.numerator == 1 and beta.denominator & (beta.denominator - 1) == 0  # 2^-e, e >= 0
    assert 2 * beta**2 * w_bound <= 1  # |βe_j·W·γu_k| <= 2β²w_bound <= 1 ...
    assert beta == 1 or 2 * (2 * beta) ** 2 * w_bound > 1  # ... and 2β would not do


def test_float_scale_refuses_bounds_beyond_float64():
    from exact.learn.single_head import _float_scale

    assert _float_scale(2**999) == Fraction(1, 2**500)
    for bad in (2**999 + 1, 0, -1):
        with pytest.raises(InvalidArgument, match="w_bound"):
            _float_scale(bad)


def test_float_mode_measurements_carry_the_errors_of_v():
    # base = β v_j and slope = γ (v_k + σ_k v_p): their error bounds follow v's, term by term.
    from exact.learn.single_head import ProbePlan

    v = [Fraction(2), Fraction(0), Fraction(-3)]
    plan = ProbePlan.choose(v, beta=Fraction(1, 2), gamma=Fraction(1, 4))
    v_err = [1e-10, 2e-10, 4e-10]
    meas = plan.measurements(v, v_err)
    p, d = plan.pivot, plan.d
    for j in range(d):
        for k in range(d):
            m = meas[j * d + k]
            assert m.base_err == 0.5 * v_err[j]
            assert m.slope_err == 0.25 * (v_err[k] + abs(plan.shifts[k]) * v_err[p])
    exact = plan.measurements(v, [0.0, 0.0, 0.0])  # exact modes: no error terms at all
    assert all(m.base_err == 0.0 and m.slope_err == 0.0 for m in exact)


@pytest.mark.parametrize("d", [3, 9])
def test_exact_candidates_are_confirmed_by_the_certificate_replay_not_answer_by_answer(monkeypatch, d):
    """With certification on and no grid, the replay that certifies the result is also what
    confirms each candidate: the per-answer logistic check is never needed."""
    from exact.arith import certified as cert_mod

    def refuse(*args, **kwargs):
        raise AssertionError("a candidate was confirmed answer by answer")

    monkeypatch.setattr(cert_mod, "answer_equals_logistic", refuse)
    truth = SingleHead.random(d, seed=11)
    result = learn_single_head(ExactOracle(truth), check_seed=1)
    assert result.model == truth and result.certificate.check().holds


def test_the_last_probe_set_is_remembered_so_a_certificate_check_compares_the_same_objects():
    plan = ProbePlan.choose([Fraction(2), Fraction(0), Fraction(-3)])
    first = plan.sequences()
    assert all(a is b for a, b in zip(first, plan.sequences()))
    other = ProbePlan.choose([Fraction(1), Fraction(1), Fraction(1)])
    assert other.sequences()[0] is not first[0] and plan.sequences()[0] is not first[0]  # one plan is kept
    assert plan.sequences() == first  # equal, rebuilt


def test_the_command_line_and_the_api_share_the_float_mode_default_w_bound():
    from exact import registry

    option = {o.name: o for o in registry.get("single-head").options}["w_bound"]
    default = inspect.signature(learn_single_head).parameters["w_bound"].default
    assert option.default is None and default is None  # adaptive scales, as the docstring says


def test_a_certificate_for_a_head_with_v_zero_fails_as_non_identifying():
    from exact import registry

    truth = SingleHead([[1, 2], [3, 4]], [1, 1])
    r = learn_single_head(ExactOracle(truth), checks=0)
    check = registry.get("single-head").check_certificate
    assert check(truth, r.certificate.transcript, {}) is None
    assert check(SingleHead([[1, 2], [3, 4]], [0, 0]), r.certificate.transcript, {}) == (
        "v = 0, so no query depends on W: the transcript cannot identify it"
    )
    not_probes = "the transcript is not the Theorem 4.1 probe set for this model's v, so it need not identify it"
    transcript = r.certificate.transcript
    assert check(truth, transcript[:-1], {}) == not_probes  # one probe missing
    assert check(truth, transcript[:2] + transcript[3:] + transcript[2:3], {}) == not_probes  # reordered
    assert check(SingleHead([[1, 2], [3, 4]], [1, 5]), transcript, {}) == not_probes  # another v: other probes


def test_tall_entries_are_refined_through_failed_replays_until_exact(monkeypatch):
    """Entries whose height exceeds what the first balls pin down: the first candidates fail
    the replay that confirms them, and precision rises until every one is exact."""
    from exact.learn import driver

    q = 2**90 + 59
    truth = SingleHead([[Fraction(123456789012345678901234, q), Fraction(-1, q)], [Fraction(5, 7), Fraction(2**89, q)]],
                       [1, "-1/3"])
    replays = []
    original = driver.Run.replay

    def counting(self, model, transcript):
        replays.append(original(self, model, transcript))
        return replays[-1]

    monkeypatch.setattr(driver.Run, "replay", counting)
    r = learn_single_head(ExactOracle(truth), check_seed=0)
    assert r.model == truth and r.precision > 128 and r.certificate.check().holds
    assert replays[0] == [2, 3, 4, 5] and replays[-1] == [] and len(replays) > 2  # transcript indices of the logits
