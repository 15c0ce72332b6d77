"""Theorem 4.1: exact recovery of a single head with exactly d² + d queries."""

from __future__ import annotations

import inspect
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    single_head_query_count,
)
from exact.learn import ProbePlan
from exact.oracles import ExactAnswer
from exact.sequences import Sequence
from public_only import PublicOnly

EXACT_MODES = ("certified", "symbolic")


def _check_exact(model: SingleHead, mode: str, **kw):
    oracle = ExactOracle(model)
    r = learn_single_head(oracle, mode=mode, **kw)
    d = model.d
    assert r.model == model  # exact: Fractions compared with ==
    assert r.W == model.W and r.v == model.v
    assert r.queries == oracle.count == d * d + d == single_head_query_count(d)
    lengths = [q.X.length for q in oracle.transcript]
    assert lengths.count(1) == d and lengths.count(2) == d * d
    assert r.max_length == 2
    assert r.exact and r.error_estimate == 0.0
    report = r.certificate.check()
    assert report.holds and report.kind == "exact" and report.checked == d * d + d
    return r


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d", [1, 2, 3, 5, 8])
def test_random_rational_heads(d, mode):
    for seed in range(2):
        _check_exact(SingleHead.random(d, seed=seed), mode)


@pytest.mark.parametrize("d", [9, 12, 16])
def test_random_rational_heads_certified_larger(d):
    _check_exact(SingleHead.random(d, seed=d), "certified")


@pytest.mark.slow
@pytest.mark.parametrize("d", range(9, 17))
def test_random_rational_heads_symbolic_larger(d):
    _check_exact(SingleHead.random(d, seed=d), "symbolic")


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d,zeros", [(2, 1), (4, 2), (6, 5)])
def test_v_with_zero_entries(d, zeros, mode):
    model = SingleHead.random(d, seed=7, v_zeros=zeros)
    assert sum(x == 0 for x in model.v) == zeros
    r = _check_exact(model, mode)
    assert any(r.details["shifts"])  # the pivot trick was needed


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("rank", [0, 1, 2])
def test_singular_W(rank, mode):
    _check_exact(SingleHead.random(5, seed=11, rank=rank), mode)


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_huge_entries(mode):
    _check_exact(SingleHead.random(3, seed=30, bound=10**4), mode)


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_entries_up_to_a_million(mode):
    model = SingleHead([[10**6, -999_999], ["-1000000/7", 3]], ["1/3", -2])
    r = _check_exact(model, mode)
    if mode == "certified":
        assert r.precision >= 2**20  # a logit of 10^6 needs about 1.44e6 bits


@pytest.mark.parametrize("grid", ["float32", "bfloat16", "float16"])
def test_float_grid_heads_bit_for_bit(grid):
    model = SingleHead.random(6, seed=3, grid=grid)
    # without a grid: simplest rationals, confirmed exactly
    _check_exact(model, "certified")
    # with the grid declared: identification on the grid
    r = _check_exact(model, "certified", grid=grid)
    assert r.grid == grid
    if grid == "float32":
        W = np.array([[float(x) for x in row] for row in r.W], dtype=np.float32)
        assert all(Fraction(float(W[i, j])) == r.W[i][j] for i in range(6) for j in range(6))


def test_native_weights_head():
    rng = np.random.default_rng(0)
    d, r, dv = 4, 4, 3
    WQ, WK = rng.integers(-3, 4, (r, d)), rng.integers(-3, 4, (r, d))
    WV, WO, w = rng.integers(-2, 3, (dv, d)), rng.integers(-2, 3, (d, dv)), rng.integers(-2, 3, d)
    model = SingleHead.from_native(WQ, WK, WV, WO, w)
    assert any(model.v)  # this seed gives a learnable head
    _check_exact(model, "certified")


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    st.integers(1, 3).flatmap(
        lambda d: st.tuples(
            st.lists(st.lists(st.fractions(-20, 20, max_denominator=50), min_size=d, max_size=d), min_size=d, max_size=d),
            st.lists(st.fractions(-5, 5, max_denominator=20), min_size=d, max_size=d).filter(any),
        )
    )
)
def test_property_any_rational_head_is_recovered_exactly(params):
    W, v = params
    _check_exact(SingleHead(W, v), "certified")


@given(st.lists(st.fractions(-10, 10, max_denominator=9), min_size=1, max_size=8).filter(any))
@settings(max_examples=100, deadline=None, derandomize=True)
def test_probe_plan_keeps_every_probe_well_conditioned(v):
    plan = ProbePlan.choose(v)
    p = plan.pivot
    for k in range(len(v)):
        assert abs(v[k] + plan.shifts[k] * v[p]) >= abs(v[p]) / 2 > 0
    assert plan.shifts[p] == 0


# -- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["certified", "symbolic", "float"])
def test_v_zero_is_not_identifiable(mode):
    model = SingleHead([[1, 2], [3, 4]], [0, 0])
    oracle = ExactOracle(model) if mode != "float" else FloatOracle(model)
    with pytest.raises(NotIdentifiable, match="cannot be identified"):
        learn_single_head(oracle, mode=mode)
    assert oracle.count == 2  # only the d queries for v were spent
    with pytest.raises(ValueError):  # NotIdentifiable is a ValueError too
        learn_single_head(ExactOracle(model))


def test_budget_is_checked_before_any_query():
    oracle = ExactOracle(SingleHead.random(3, seed=0), budget=11)
    with pytest.raises(QueryBudgetExceeded, match=r"needs 12 more queries, but the oracle's budget allows 11"):
        learn_single_head(oracle)
    assert oracle.count == 0
    assert learn_single_head(ExactOracle(SingleHead.random(3, seed=0), budget=12)).queries == 12


def test_bad_mode_and_grid_arguments():
    oracle = ExactOracle(SingleHead.random(2, seed=0))
    with pytest.raises(ValueError, match="mode: expected one of"):
        learn_single_head(oracle, mode="exactish")
    with pytest.raises(ValueError, match="only mode='certified' identifies on a grid"):
        learn_single_head(oracle, mode="symbolic", grid="float32")
    with pytest.raises(ValueError, match="grid: expected"):
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
    ("certified", PrecisionInsufficient, "does not behave like a single softmax head"),
    ("symbolic", OracleInconsistent, "not a single exponential"),
])
def test_lying_oracle_answer_of_another_query(mode, error, match):
    model = SingleHead.random(3, seed=1)
    liar = _Substituting(model, 6, Sequence.sparse(3, [{0: 1, 1: 1}, {1: 1}]))
    with pytest.raises(error, match=match):
        learn_single_head(liar, mode=mode)


def test_symbolic_needs_an_exact_oracle():
    with pytest.raises(ValueError, match="mode='symbolic' needs an exact oracle"):
        learn_single_head(FloatOracle(SingleHead.random(2, seed=0)), mode="symbolic")


# -- honesty: the learner reads the oracle only through its public interface ---------


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_learner_uses_only_the_public_oracle_interface(mode):
    model = SingleHead.random(4, seed=2, v_zeros=1)
    r = learn_single_head(PublicOnly(ExactOracle(model)), mode=mode)
    assert r.model == model


def test_only_certify_reads_the_exp_polynomial_form(monkeypatch):
    callers = []
    original = ExactAnswer._exp_form

    def spy(self):
        callers.append(inspect.stack()[1].frame.f_globals["__name__"])
        return original(self)

    monkeypatch.setattr(ExactAnswer, "_exp_form", spy)
    from exact import learn_low_rank, learn_low_rank_cs

    for mode in EXACT_MODES:
        learn_single_head(ExactOracle(SingleHead.random(3, seed=4)), mode=mode)
        learn_low_rank(ExactOracle(SingleHead.random(4, seed=4, rank=1)), rank=1, mode=mode, seed=0)
    try:
        import cvxpy  # noqa: F401
    except ImportError:
        pass
    else:
        learn_low_rank_cs(ExactOracle(SingleHead.random(4, seed=4, rank=1)), rank=1, seed=0)
    assert callers and set(callers) == {"exact.certify"}


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
    assert r.model == model
    assert r.queries == d * d + d
    report = r.certificate.check()
    assert report.holds and report.kind == "consistent"


def test_callable_oracle_needs_a_grid_for_exactness():
    oracle = CallableOracle(lambda X: 0.5, d=2, accuracy="1e-12")
    with pytest.raises(ValueError, match="needs a declared grid"):
        learn_single_head(oracle, mode="certified")


def test_callable_oracle_too_coarse_for_the_grid_says_which_grid_would_do():
    model = SingleHead.random(2, seed=5)
    W, v = model.to_numpy()
    oracle = CallableOracle(lambda X: float(FloatOracle((W, v)).query(X)), d=2, accuracy="1e-6")
    with pytest.raises(PrecisionInsufficient, match="grids certifiable at this accuracy: rational:Q for Q <= "):
        learn_single_head(oracle, grid="rational:100000")


def test_float_oracle_on_a_float32_grid_is_exact():
    model = SingleHead.random(4, seed=8, grid="float32", bound=4)
    r = learn_single_head(FloatOracle(model), grid="float32", w_bound=8)
    assert r.model == model and r.exact and r.grid == "float32"
    assert r.certificate.check().holds


# -- float mode --------------------------------------------------------------------------


def _max_error(r, model) -> float:
    got = [x for row in r.W for x in row] + list(r.v)
    want = [x for row in model.W for x in row] + list(model.v)
    return max(abs(float(a - b)) for a, b in zip(got, want))


@pytest.mark.parametrize("d", [1, 2, 4, 8, 16])
def test_float_mode_error_within_1e9_and_the_estimate(d):
    model = SingleHead.random(d, seed=d, bound=10)
    oracle = FloatOracle(model)
    r = learn_single_head(oracle, mode="float")
    err = _max_error(r, model)
    assert err <= 1e-9
    assert err <= r.error_estimate  # the reported estimate is not optimistic here
    assert r.queries == d * d + d and not r.exact and r.certificate is None


def test_float_mode_survives_W_around_1e3():
    model = SingleHead.random(5, seed=2, bound=2000)
    assert max(abs(x) for row in model.W for x in row) > 500
    r = learn_single_head(FloatOracle(model), mode="float")
    assert np.isfinite([float(x) for row in r.W for x in row]).all()
    assert _max_error(r, model) <= 1e-6


def test_float_mode_with_too_small_w_bound_refuses():
    model = SingleHead([[800, 0], [0, -900]], [1, 1])
    with pytest.raises(PrecisionInsufficient, match="saturated"):
        learn_single_head(FloatOracle(model), mode="float", w_bound=1)


def test_precision_state_is_left_unchanged():
    import flint

    before = (flint.ctx.prec, mpmath.mp.prec)
    learn_single_head(ExactOracle(SingleHead([[10**4, 1], [2, 3]], [1, "1/3"])))  # escalates precision
    learn_single_head(CallableOracle(_mpmath_head(((Fraction(1),),), (Fraction(2),)), d=1, accuracy="1e-100"), grid="rational:10")
    assert (flint.ctx.prec, mpmath.mp.prec) == before
