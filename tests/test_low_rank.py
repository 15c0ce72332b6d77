"""Low-rank heads (Theorem 5.1 setting): the exact sketch learner and the compressed-sensing learner.

The sketch learner recovers ``W`` (rank ``r``) and ``v`` exactly with ``2rd − r² + d``
queries when ``r`` is given, and ``2rd − r² + 2d − r`` (``d² + d`` at ``r = d``) when it
finds ``r`` itself.  The compressed-sensing learner is approximate: ``d + ceil(C·2rd)``
queries and a convex solve.
"""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from exact import (
    CallableOracle,
    ExactOracle,
    FloatOracle,
    NotIdentifiable,
    PrecisionInsufficient,
    QueryBudgetExceeded,
    ShapeError,
    SingleHead,
    learn_low_rank,
    learn_low_rank_cs,
    low_rank_query_count,
)
from exact.canonical import canonical_factors
from exact.certify import check_transcript
from exact.cli import main
from exact.learn import cs_measurements
from exact.learn.low_rank_cs import DEFAULT_C
from public_only import PublicOnly

EXACT_MODES = ("certified", "symbolic")

#: (d, r) for d ∈ {4, 8, 16, 32} and r ∈ {1, 2, d/4}, without repeats.
SWEEP = sorted({(d, r) for d in (4, 8, 16, 32) for r in (1, 2, d // 4)})


# -- helpers ---------------------------------------------------------------------------


def _formula(d: int, r: int) -> int:
    """The known-rank count by hand: d (for v) + d·r (column sketch) + r·(d − r) (row sketch)."""
    return d + d * r + r * (d - r)


def _formula_unknown(d: int, r: int) -> int:
    """The found-rank count by hand: one more sketch column, whose r row products are known."""
    if r == d:
        return d + d * d
    return d + d * (r + 1) + r * (d - r - 1)


def _parse(rows) -> tuple:
    return tuple(tuple(Fraction(x) for x in row) for row in rows)


def _kt_q(K, Q, d: int) -> tuple:
    r = len(K)
    return tuple(
        tuple(sum((K[k][i] * Q[k][j] for k in range(r)), Fraction(0)) for j in range(d)) for i in range(d)
    )


def _assert_rref(Q, d: int) -> list[int]:
    """Assert ``Q`` (no zero rows) is in reduced row echelon form; return its pivot columns."""
    pivots = []
    for i, row in enumerate(Q):
        nonzero = [j for j, x in enumerate(row) if x != 0]
        assert nonzero, f"row {i} of Q is zero"
        p = nonzero[0]
        assert row[p] == 1
        pivots.append(p)
    assert pivots == sorted(set(pivots))  # strictly increasing
    for i, p in enumerate(pivots):
        assert all(Q[k][p] == 0 for k in range(len(Q)) if k != i)  # zeros above and below
    return pivots


def _assert_factors(result, model: SingleHead) -> tuple:
    """``details["factors"]`` parse to Fractions, multiply back to W exactly, and are canonical."""
    d = model.d
    K = _parse(result.details["factors"]["K"])
    Q = _parse(result.details["factors"]["Q"])
    r = model.rank
    assert len(K) == len(Q) == r
    assert all(len(row) == d for row in K + Q)
    assert all(isinstance(x, Fraction) for row in K + Q for x in row)
    assert _kt_q(K, Q, d) == model.W
    pivots = _assert_rref(Q, d)
    assert K == tuple(tuple(model.W[i][p] for i in range(d)) for p in pivots)  # Kᵀ = W[:, pivots]
    assert (K, Q) == canonical_factors(model.W)
    return K, Q


def _learn_exact(model: SingleHead, rank, mode: str = "certified", **kw):
    """Learn, and assert exact recovery, the exact count and a holding certificate."""
    kw.setdefault("seed", 0)  # reproducible sketches (the library's default is a fresh seed)
    oracle = ExactOracle(model)
    result = learn_low_rank(oracle, rank=rank, mode=mode, **kw)
    d, r = model.d, model.rank
    assert result.model == model  # Fractions compared with ==
    assert result.W == model.W and result.v == model.v
    assert result.exact is True and result.error_estimate == 0.0
    assert result.mode == mode
    assert result.details["rank"] == r
    assert result.details["rank_known"] is (rank is not None)
    if rank is None:
        want = low_rank_query_count(d, r, rank_known=False)
        assert want == _formula_unknown(d, r) == 2 * r * d - r * r + 2 * d - r
    elif rank == r:
        want = low_rank_query_count(d, r)
        assert want == _formula(d, r) == 2 * r * d - r * r + d
    else:  # a larger bound than the truth: the row sketch only has the true rank's rows
        assert rank > r
        want = d + d * rank + r * (d - rank)
    assert result.queries == oracle.count == want
    assert len(result.certificate.transcript) == want
    report = result.certificate.check()
    assert report.holds and report.kind == "exact" and report.checked == want
    assert result.max_length == (2 if (rank is None or rank > 0) else 1)
    _assert_factors(result, model)
    return result, oracle


def _head_of_rank(d: int, r: int, seed: int, **kw) -> SingleHead:
    """``SingleHead.random(d, rank=r)`` for the first seed from ``seed`` on whose W has rank exactly r
    (small rational grids can draw a zero factor, e.g. W = 0 at d = 1)."""
    for s in range(seed, seed + 50):
        model = SingleHead.random(d, seed=s, rank=r, **kw)
        if model.rank == r:
            return model
    raise AssertionError(f"no head of rank {r} for seeds {seed}..{seed + 49}")


def _rel_error(result, model: SingleHead) -> float:
    W, _ = model.to_numpy()
    Wh, _ = result.model.to_numpy()
    return float(np.linalg.norm(Wh - W) / np.linalg.norm(W))


# -- exact recovery, rank given ----------------------------------------------------------


@pytest.mark.parametrize("d,r", SWEEP)
def test_exact_recovery_certified(d, r):
    model = SingleHead.random(d, seed=100 * d + r, rank=r)
    assert model.rank == r
    result, _ = _learn_exact(model, r, "certified")
    assert result.details["sketch_columns"] == r
    assert result.queries == 2 * r * d - r * r + d


@pytest.mark.parametrize("d,r", [(d, r) for d, r in SWEEP if d <= 8])
def test_exact_recovery_symbolic(d, r):
    model = SingleHead.random(d, seed=100 * d + r + 1, rank=r)
    assert model.rank == r
    result, _ = _learn_exact(model, r, "symbolic")
    assert result.precision == 0


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d", [1, 3, 6])
def test_full_rank_costs_d_squared_plus_d(d, mode):
    model = _head_of_rank(d, d, seed=d)
    for rank in (d, None):
        result, _ = _learn_exact(model, rank, mode)
        assert result.queries == d * d + d


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d", [1, 4, 7])
def test_zero_W_costs_d_queries(d, mode):
    model = SingleHead.random(d, seed=9, rank=0)
    assert all(x == 0 for row in model.W for x in row) and any(model.v)
    result, oracle = _learn_exact(model, 0, mode)
    assert result.queries == oracle.count == d
    assert result.details["factors"] == {"K": [], "Q": []}
    assert result.details["sketch_columns"] == 0 and result.details["rows"] == ()
    # rank found: one sketch column shows that W = 0
    result, oracle = _learn_exact(model, None, mode)
    assert result.queries == oracle.count == 2 * d
    assert result.details["sketch_columns"] == 1


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_d_equals_one(mode):
    model = SingleHead([["-7/3"]], ["1/2"])
    for rank in (1, None):
        result, _ = _learn_exact(model, rank, mode)
        assert result.queries == 2
        assert result.details["factors"] == {"K": [["-7/3"]], "Q": [["1"]]}
    zero = SingleHead([[0]], [5])
    assert _learn_exact(zero, 0, mode)[0].queries == 1
    assert _learn_exact(zero, None, mode)[0].queries == 2


def _singular_leading_block_heads():
    """Heads whose leading r×r block of W is singular (or zero), from explicit factors."""
    v = [1, 2, 3, 4, 5]
    return {
        # W[:2, :2] = 0 (the first two columns of K are zero): the first two rows of W vanish
        "zero leading rows": SingleHead.from_factors(
            [[0, 0, 1, 2, 1], [0, 0, 3, 1, -1]], [[1, 2, 0, 1, 1], [0, 1, 1, 1, 2]], v
        ),
        # W[:, :2] = 0: the first two columns of W vanish
        "zero leading columns": SingleHead.from_factors(
            [[1, 2, 0, 1, 1], [0, 1, 1, 1, 2]], [[0, 0, 1, 2, 1], [0, 0, 3, 1, -1]], v
        ),
        # W[:2, :2] = 0 but no row or column of W is zero
        "zero leading block only": SingleHead.from_factors(
            [[1, 1, 1, 2, 1], [0, 0, 3, 1, -1]], [[0, 0, 1, 1, 1], [1, 2, 1, -1, 2]], v, scale="3/7"
        ),
        # W[:2, :2] nonzero but singular (rank 1)
        "singular leading block": SingleHead.from_factors(
            [[1, 2, 0, 1, 1], [0, 0, 1, 1, 2]], [[1, 1, 0, 2, 1], [0, 0, 1, 1, -1]], v
        ),
        # rank 3, W[:3, :3] = 0
        "rank 3, zero leading 3×3 block": SingleHead.from_factors(
            [[0, 0, 0, 1, 2, 1], [0, 0, 0, 3, 1, -1], [0, 0, 0, 1, 1, 1]],
            [[1, 2, 0, 1, 1, 0], [0, 1, 1, 1, 2, 0], [1, 0, 0, 0, 0, 1]],
            [1, -1, 2, 0, 3, 1],
        ),
    }


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("name", list(_singular_leading_block_heads()))
def test_singular_leading_block(name, mode):
    model = _singular_leading_block_heads()[name]
    r = 3 if name.startswith("rank 3") else 2
    assert model.rank == r
    lead = [[model.W[i][j] for j in range(r)] for i in range(r)]
    assert SingleHead(lead, [1] * r).rank < r  # the leading block really is singular
    _learn_exact(model, r, mode)
    _learn_exact(model, None, mode)


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d,r,zeros", [(4, 1, 3), (8, 2, 4), (8, 2, 7), (6, 3, 2)])
def test_v_with_zero_entries(d, r, zeros, mode):
    model = SingleHead.random(d, seed=7, rank=r, v_zeros=zeros)
    assert sum(x == 0 for x in model.v) == zeros and model.rank == r
    result, _ = _learn_exact(model, r, mode)
    assert model.v[result.details["pivot"]] != 0
    _learn_exact(model, None, mode)


@pytest.mark.parametrize("d,r", [(4, 1), (8, 2), (16, 4)])
def test_float32_grid_factors(d, r):
    model = SingleHead.random(d, seed=d + r, rank=r, grid="float32")
    assert model.rank == r
    assert all(x.denominator & (x.denominator - 1) == 0 for row in model.W for x in row)  # dyadic entries
    _learn_exact(model, r, "certified")
    _learn_exact(model, None, "certified")


@pytest.mark.parametrize("mode", EXACT_MODES)
def test_large_entries(mode):
    big = SingleHead([[10**6, 0], [0, 0]], ["1/3", 2])  # a logit of order 10^6
    for rank in (1, None):
        result, _ = _learn_exact(big, rank, mode)
        if mode == "certified":
            assert result.precision >= 2**20
    model = SingleHead.random(5, seed=1, rank=2, bound=100)
    assert max(abs(x) for row in model.W for x in row) > 5000
    _learn_exact(model, 2, mode)


# -- rank found (rank=None) ----------------------------------------------------------------


@pytest.mark.parametrize("d,r", SWEEP)
def test_rank_found_certified(d, r):
    model = SingleHead.random(d, seed=100 * d + r, rank=r)
    result, _ = _learn_exact(model, None, "certified")
    assert result.details["rank"] == r and result.details["rank_known"] is False
    assert result.details["sketch_columns"] == r + 1
    assert result.queries == 2 * r * d - r * r + 2 * d - r


@pytest.mark.parametrize("d,r", [(d, r) for d, r in SWEEP if d <= 8])
def test_rank_found_symbolic(d, r):
    model = SingleHead.random(d, seed=100 * d + r + 1, rank=r)
    result, _ = _learn_exact(model, None, "symbolic")
    assert result.details["rank"] == r and result.details["rank_known"] is False


def test_query_count_formula_table():
    for d in range(0, 13):
        for r in range(0, d + 1):
            known = low_rank_query_count(d, r)
            unknown = low_rank_query_count(d, r, rank_known=False)
            assert known == low_rank_query_count(d, r, rank_known=True) == 2 * r * d - r * r + d == _formula(d, r)
            assert unknown == 2 * r * d - r * r + 2 * d - r == _formula_unknown(d, r)
            assert unknown - known == d - r
            assert low_rank_query_count(d, r) <= d * d + d  # never more than the full-rank learner
        assert low_rank_query_count(d, d) == low_rank_query_count(d, d, rank_known=False) == d * d + d
    assert (low_rank_query_count(64, 4), low_rank_query_count(64, 4, rank_known=False)) == (560, 620)


@pytest.mark.parametrize("d,r", [(3, -1), (3, 4), (0, 1)])
def test_query_count_formula_rejects_bad_rank(d, r):
    with pytest.raises(ValueError, match=rf"rank: expected 0 <= r <= d = {d}, got {r}"):
        low_rank_query_count(d, r)


def test_counted_queries_match_the_formula_for_every_rank():
    """Every 0 <= r <= d <= 7, rank given and found: the oracle's count is the formula."""
    for d in range(1, 8):
        for r in range(d + 1):
            model = _head_of_rank(d, r, seed=1000 + 10 * d + r)
            for rank in (r, None):
                oracle = ExactOracle(model)
                result = learn_low_rank(oracle, rank=rank, seed=d)
                assert result.model == model
                assert result.details["rank"] == r
                want = low_rank_query_count(d, r, rank_known=rank is not None)
                assert result.queries == oracle.count == want, (d, r, rank)


# -- canonical factors ------------------------------------------------------------------------


@pytest.mark.parametrize("d,r", [(5, 2), (8, 3)])
def test_factors_do_not_depend_on_the_seed_or_the_sketch(d, r):
    model = SingleHead.random(d, seed=31, rank=r)
    results, sent = [], []
    for seed, rank in ((0, r), (1, r), (2, None), (3, d)):
        oracle = ExactOracle(model)
        results.append(learn_low_rank(oracle, rank=rank, seed=seed))
        sent.append(tuple(q.X for q in oracle.transcript))
        assert results[-1].model == model
    assert len(set(sent)) == len(sent)  # four different sets of queries ...
    factors = [json.dumps(res.details["factors"]) for res in results]
    assert len(set(factors)) == 1  # ... and one set of factors
    K, Q = _assert_factors(results[0], model)
    assert len(Q) == r


def test_factors_of_a_hand_example():
    # W = [[1, 2, 3], [2, 4, 6], [0, 0, 1]] has rank 2; its RREF rows are [1, 2, 0], [0, 0, 1]
    model = SingleHead([[1, 2, 3], [2, 4, 6], [0, 0, 1]], [1, 1, 1])
    result, _ = _learn_exact(model, 2)
    assert result.details["factors"] == {
        "K": [["1", "2", "0"], ["3", "6", "1"]],
        "Q": [["1", "2", "0"], ["0", "0", "1"]],
    }


# -- certificate and honesty ------------------------------------------------------------------


def _tamper_W(model, i, j, delta=Fraction(1, 10**20)):
    W = [list(row) for row in model.W]
    W[i][j] += delta
    return SingleHead(W, model.v)


def test_certificate_holds_and_every_single_entry_tamper_fails():
    model = SingleHead.random(4, seed=12, rank=1, v_zeros=1)
    result, _ = _learn_exact(model, 1)
    cert = result.certificate
    assert cert.kind == "exact"
    assert check_transcript(model, cert.transcript).holds
    for i in range(4):
        for j in range(4):
            report = dataclasses.replace(cert, model=_tamper_W(result.model, i, j)).check()
            # caught by a replayed answer, or by the recorded rank bound (a tamper raises the rank)
            assert not report.holds and report.kind == "exact", (i, j)
            assert report.failed >= 1 or "above the assumed bound" in report.message, (i, j)
    v = list(result.model.v)
    v[2] += Fraction(1, 10**20)
    report = dataclasses.replace(cert, model=SingleHead(result.model.W, v)).check()
    assert not report.holds and report.failed >= 1


def test_certificate_covers_only_this_run_of_a_reused_oracle():
    model = SingleHead.random(6, seed=13, rank=2)
    oracle = ExactOracle(model)
    first = learn_low_rank(oracle, rank=2)
    second = learn_low_rank(oracle, rank=2, seed=1)
    assert first.queries == second.queries == 26 and oracle.count == 52
    assert second.certificate.transcript == oracle.transcript[26:]
    assert first.model == second.model == model
    assert second.certificate.check().holds


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("rank", [2, None])
def test_learner_uses_only_the_public_oracle_interface(mode, rank):
    model = SingleHead.random(6, seed=2, rank=2, v_zeros=1)
    inner = ExactOracle(model)
    result = learn_low_rank(PublicOnly(inner), rank=rank, mode=mode)
    assert result.model == model
    assert result.queries == inner.count == low_rank_query_count(6, 2, rank_known=rank is not None)
    assert result.certificate.check().holds


def test_seeds_change_the_transcript_not_the_model():
    model = SingleHead.random(8, seed=21, rank=2)
    runs = []
    for seed in (0, 1, 2):
        oracle = ExactOracle(model)
        runs.append((learn_low_rank(oracle, rank=2, seed=seed), oracle))
    sent = [[q.X for q in oracle.transcript] for _, oracle in runs]
    assert sent[0][:8] == sent[1][:8] == sent[2][:8]  # the d queries for v
    assert sent[0] != sent[1] and sent[1] != sent[2] and sent[0] != sent[2]
    assert sent[0][8] != sent[1][8]  # already the first sketch query differs
    for result, oracle in runs:
        assert result.model == model and result.queries == oracle.count == 36
    # the same seed gives the same transcript
    again = ExactOracle(model)
    learn_low_rank(again, rank=2, seed=1)
    assert [q.X for q in again.transcript] == sent[1]


# -- a wrong rank bound -------------------------------------------------------------------------


@pytest.mark.parametrize("given", [0, 1, 2])
def test_rank_bound_below_the_truth_returns_a_consistent_wrong_answer(given):
    """The documented limitation: if rank(W) > r, the 2rd − r² + d answers are reproduced by a
    rank-r matrix, so a wrong model is returned and its certificate holds."""
    d, true_rank = 6, 3
    model = SingleHead.random(d, seed=3, rank=true_rank)
    assert model.rank == true_rank
    oracle = ExactOracle(model)
    result = learn_low_rank(oracle, rank=given)
    assert result.model != model and result.model.W != model.W
    assert result.model.v == model.v
    assert result.model.rank == given and result.details["rank"] == given
    assert result.details["rank_known"] is True
    assert result.queries == oracle.count == low_rank_query_count(d, given)
    report = result.certificate.check()
    assert report.holds and report.kind == "exact" and report.checked == result.queries
    # both the truth and the (wrong) answer reproduce every answer: the queries cannot tell
    assert check_transcript(model, result.certificate.transcript).holds
    # the rank-finding learner is not fooled
    found = learn_low_rank(ExactOracle(model))
    assert found.model == model and found.details["rank"] == true_rank


@pytest.mark.parametrize("mode", EXACT_MODES)
@pytest.mark.parametrize("d,true_rank,given", [(6, 1, 3), (6, 2, 5), (8, 0, 3), (8, 3, 4), (5, 2, 5)])
def test_rank_bound_above_the_truth_finds_the_true_rank(d, true_rank, given, mode):
    model = SingleHead.random(d, seed=40 + d + true_rank, rank=true_rank)
    assert model.rank == true_rank
    result, oracle = _learn_exact(model, given, mode)
    assert result.details["rank"] == true_rank and result.details["rank_known"] is True
    assert result.details["sketch_columns"] == given
    assert result.queries == oracle.count == d + d * given + true_rank * (d - given)
    if given < d:
        assert result.queries < low_rank_query_count(d, given)
    else:
        assert result.queries == low_rank_query_count(d, given) == d * d + d


# -- errors -------------------------------------------------------------------------------------


def test_float_mode_and_approximate_oracles_are_refused():
    model = SingleHead.random(4, seed=1, rank=1)
    oracle = ExactOracle(model)
    for rank in (1, None):
        with pytest.raises(ValueError, match="learn_low_rank is exact"):
            learn_low_rank(oracle, rank=rank, mode="float")
    assert oracle.count == 0
    float_oracle = FloatOracle(model)
    callable_oracle = CallableOracle(lambda X: 0.5, d=4, accuracy="1e-12")
    for approx in (float_oracle, callable_oracle):
        for mode in (None, "certified", "float"):
            with pytest.raises(ValueError, match="learn_low_rank is exact.*use learn_low_rank_cs"):
                learn_low_rank(approx, rank=1, mode=mode)
        assert approx.count == 0


def test_unknown_mode_is_refused():
    oracle = ExactOracle(SingleHead.random(3, seed=0, rank=1))
    with pytest.raises(ValueError, match="mode: expected one of 'certified', 'symbolic', 'float', got 'exactish'"):
        learn_low_rank(oracle, rank=1, mode="exactish")
    assert oracle.count == 0


@pytest.mark.parametrize("bad", [-1, 7, 1.5, True, "2"])
def test_rank_out_of_range_is_a_shape_error(bad):
    oracle = ExactOracle(SingleHead.random(6, seed=0, rank=1))
    with pytest.raises(ShapeError, match=r"rank: expected an integer 0 <= r <= d = 6 or None, got "):
        learn_low_rank(oracle, rank=bad)
    with pytest.raises(ShapeError, match="rank: expected"):  # checked before the mode
        learn_low_rank(oracle, rank=bad, mode="float")
    assert oracle.count == 0


@pytest.mark.parametrize("rank", [0, 2, None])
def test_v_zero_is_not_identifiable(rank):
    model = SingleHead.from_factors([[1, 2, 3]], [[1, 1, 1]], [0, 0, 0])
    oracle = ExactOracle(model)
    with pytest.raises(NotIdentifiable, match=r"v = 0: then f\(X\) = 0 for every X"):
        learn_low_rank(oracle, rank=rank)
    assert oracle.count == 3  # only the d queries for v


def test_budget_too_small_is_refused_before_any_query():
    model = SingleHead.random(6, seed=3, rank=2)
    oracle = ExactOracle(model, budget=25)
    with pytest.raises(
        QueryBudgetExceeded,
        match=r"learn_low_rank \(d=6, r=2\) needs 26 more queries, but the oracle's budget allows 25",
    ):
        learn_low_rank(oracle, rank=2)
    assert oracle.count == 0
    exact_budget = ExactOracle(model, budget=26)
    assert learn_low_rank(exact_budget, rank=2).model == model
    assert exact_budget.remaining == 0


def test_budget_with_unknown_rank():
    model = SingleHead.random(6, seed=3, rank=2)
    # fewer than the d queries for v: refused before any query
    oracle = ExactOracle(model, budget=5)
    with pytest.raises(QueryBudgetExceeded, match=r"learn_low_rank \(d=6, r=None\) needs 6 more queries"):
        learn_low_rank(oracle)
    assert oracle.count == 0
    # one short of 2rd − r² + 2d − r = 30: refused before the row sketch, after v and 3 columns
    oracle = ExactOracle(model, budget=29)
    with pytest.raises(QueryBudgetExceeded, match=r"learn_low_rank \(row sketch\) needs 6 more queries, .* allows 5"):
        learn_low_rank(oracle)
    assert oracle.count == 6 + 3 * 6
    exact_budget = ExactOracle(model, budget=30)
    assert learn_low_rank(exact_budget).model == model and exact_budget.remaining == 0


# -- compressed sensing (the paper's learner) ---------------------------------------------------


@pytest.mark.parametrize("d,r", [(8, 1), (8, 2), (12, 2)])
def test_cs_recovers_at_the_default_C(d, r):
    pytest.importorskip("cvxpy")
    assert DEFAULT_C == 3.5  # the measured C95 (benchmarks/results/low_rank_phase.jsonl)
    for seed in range(3):
        model = SingleHead.random(d, seed=700 + 10 * d + seed, rank=r)
        assert model.rank == r
        oracle = ExactOracle(model)
        result = learn_low_rank_cs(oracle, rank=r, seed=seed)
        assert _rel_error(result, model) <= 1e-6
        m = math.ceil(DEFAULT_C * 2 * r * d)
        assert result.queries == oracle.count == d + m == d + cs_measurements(d, r)
        assert result.details["m"] == m and result.details["C"] == m / (2 * r * d)
        assert result.exact is False and result.certificate is None and result.error_estimate is None
        assert result.mode == "cs" and result.max_length == 2
        assert result.model.v == model.v  # v comes from one-token queries, exactly


def test_cs_measurement_count():
    assert cs_measurements(64, 4, 3.0) == 1536
    assert cs_measurements(8, 2) == 112  # ceil(3.5 · 2 · 2 · 8)
    assert cs_measurements(8, 1, 0.25) == 4
    assert cs_measurements(5, 1, 1.05) == 11  # ceil(10.5)


def test_cs_fails_below_the_manifold_dimension():
    """With m = ceil(0.25·2rd) = 8 < 2rd − r² = 28 projections no learner can succeed."""
    pytest.importorskip("cvxpy")
    d, r = 8, 2
    model = SingleHead.random(d, seed=3, rank=r)
    for seed in range(3):
        oracle = ExactOracle(model)
        result = learn_low_rank_cs(oracle, rank=r, C=0.25, seed=seed)
        assert result.details["m"] == 8 < 2 * r * d - r * r
        assert result.queries == oracle.count == d + 8
        assert _rel_error(result, model) > 1e-3


def test_cs_with_a_float_oracle_and_small_probes():
    pytest.importorskip("cvxpy")
    d = 8
    for seed in range(3):
        model = SingleHead.random(d, seed=40 + seed, rank=1)
        oracle = FloatOracle(model)
        result = learn_low_rank_cs(oracle, rank=1, seed=seed, probe_scale=1 / math.sqrt(d))
        assert _rel_error(result, model) <= 1e-6
        assert result.queries == oracle.count == d + cs_measurements(d, 1)
        assert result.exact is False and result.certificate is None


def test_cs_float_oracle_saturates_at_unit_probes():
    """Why probe_scale exists: unit Gaussian probes push this head's logits out of float64's reach."""
    pytest.importorskip("cvxpy")
    model = SingleHead.random(8, seed=40, rank=1)
    with pytest.raises(PrecisionInsufficient, match="saturated"):
        learn_low_rank_cs(FloatOracle(model), rank=1, seed=0)


def test_cs_explicit_m_overrides_C():
    pytest.importorskip("cvxpy")
    model = SingleHead.random(6, seed=4, rank=1)
    oracle = ExactOracle(model)
    result = learn_low_rank_cs(oracle, rank=1, m=40, C=100.0, seed=2)
    assert result.queries == oracle.count == 46
    assert result.details["m"] == 40 and result.details["C"] == 40 / 12
    assert _rel_error(result, model) <= 1e-6


@pytest.mark.parametrize("kw,error,match", [
    (dict(rank=0), ShapeError, r"rank: expected an integer 1 <= r <= d = 8, got 0"),
    (dict(rank=9), ShapeError, r"rank: expected an integer 1 <= r <= d = 8, got 9"),
    (dict(rank=1.5), ShapeError, r"rank: expected an integer 1 <= r <= d = 8, got 1.5"),
    (dict(rank=2, m=0), ValueError, r"m: expected a positive number of projections, got 0"),
    (dict(rank=2, m=-3), ValueError, r"m: expected a positive number of projections, got -3"),
    (dict(rank=2, m=2.5), ValueError, r"m: expected a positive number of projections, got 2.5"),
])
def test_cs_bad_arguments(kw, error, match):
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=2))
    with pytest.raises(error, match=match):
        learn_low_rank_cs(oracle, **kw)
    assert oracle.count == 0


@pytest.mark.parametrize("kw", [dict(rank=True), dict(rank=2, m=True)])
def test_cs_refuses_booleans_like_the_sketch_learner(kw):
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=2), budget=0)  # never reaches the solver
    with pytest.raises(ShapeError if kw.get("m") is None else ValueError, match="expected"):
        learn_low_rank_cs(oracle, **kw)
    assert oracle.count == 0


def test_cs_budget_checked_before_any_query():
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=1), budget=63)
    with pytest.raises(QueryBudgetExceeded, match=r"learn_low_rank_cs \(d \+ m = 8 \+ 56\) needs 64 more queries"):
        learn_low_rank_cs(oracle, rank=1)
    assert oracle.count == 0


# -- command line -----------------------------------------------------------------------------


def _run(capsys, *argv):
    rc = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.fixture
def model_file(tmp_path, capsys):
    rc, out, err = _run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 1)
    assert rc == 0 and err == ""
    path = tmp_path / "model.json"
    path.write_text(out)
    return path, SingleHead.from_json(json.loads(out))


def test_cli_random_low_rank(capsys):
    rc, out, err = _run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 1)
    assert rc == 0 and err == ""
    model = SingleHead.from_json(json.loads(out))
    assert model.d == 6 and model.rank == 2
    assert model == SingleHead.random(6, seed=1, rank=2)
    rc, out2, _ = _run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 2)
    assert rc == 0 and SingleHead.from_json(json.loads(out2)) != model


def test_cli_random_low_rank_rejects_a_rank_above_d(capsys):
    rc, out, err = _run(capsys, "random", "low-rank", "--d", 3, "--rank", 4)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: rank: expected 0 <= rank <= d = 3, got 4\n"


def test_cli_learn_low_rank_json(model_file, capsys):
    path, model = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--rank", 2, "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert data["queries"] == 26 == low_rank_query_count(6, 2)
    assert data["exact"] is True and data["mode"] == "certified" and data["certificate_kind"] == "exact"
    assert SingleHead.from_json(data["model"]) == model
    assert data["details"]["rank"] == 2 and data["details"]["rank_known"] is True
    K, Q = canonical_factors(model.W)
    assert _parse(data["details"]["factors"]["K"]) == K and _parse(data["details"]["factors"]["Q"]) == Q


def test_cli_learn_low_rank_text_finds_the_rank(model_file, capsys):
    path, model = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "queries     30 (2rd − r² + 2d − r = 30 with the found r = 2), longest sequence 2" in lines
    assert any(line.startswith("rank        2 (found by exact rank tests; sketch seed ") for line in lines)
    assert "exact       yes: equal to the model" in lines
    assert any(line.startswith("certificate certificate holds") for line in lines)
    rc, out, _ = _run(capsys, "learn", "low-rank", "--model", path, "--rank", 2)
    assert rc == 0
    assert any(line.startswith("rank        2 (within the given bound; sketch seed ") for line in out.splitlines())
    assert "queries     26 (2rd − r² + d = 26), longest sequence 2" in out.splitlines()
    rc, out, _ = _run(capsys, "learn", "low-rank", "--model", path, "--json")
    data = json.loads(out)
    assert data["queries"] == 30 and data["details"]["rank"] == 2 and data["details"]["rank_known"] is False
    assert SingleHead.from_json(data["model"]) == model


def test_cli_learn_low_rank_cs(model_file, capsys):
    pytest.importorskip("cvxpy")
    path, model = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2, "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert data["mode"] == "cs" and data["exact"] is False and data["error_estimate"] is None
    assert data["queries"] == 6 + cs_measurements(6, 2) == 90
    assert "certificate_kind" not in data
    learned = SingleHead.from_json(data["model"])
    W, _ = model.to_numpy()
    Wh, _ = learned.to_numpy()
    assert float(np.linalg.norm(Wh - W) / np.linalg.norm(W)) <= 1e-6
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2)
    assert rc == 0 and err == ""
    assert "queries     90 (d + m = 6 + 84), longest sequence 2" in out.splitlines()
    assert "relative Frobenius error" in out


def test_cli_learn_low_rank_cs_needs_the_rank(model_file, capsys):
    path, _ = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--method", "cs")
    assert rc == 2 and out == ""
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.endswith("\n")
    assert err == "exact-attention: error: --rank: the compressed-sensing learner needs the rank bound r\n"


def test_cli_learn_low_rank_bad_rank_is_one_line(model_file, capsys):
    path, _ = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--rank", 7)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: rank: expected an integer 0 <= r <= d = 6 or None, got 7\n"


def test_cli_certificate_of_the_sketch_learner(model_file, tmp_path, capsys):
    path, _ = model_file
    cert = tmp_path / "cert.json"
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--rank", 2, "--json", "--certificate", cert)
    assert rc == 0 and err == ""
    rc, out, err = _run(capsys, "certify", cert, "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    assert {k: got[k] for k in ("holds", "kind", "checked", "failed", "failures", "reason")} == {
        "holds": True, "kind": "exact", "checked": 26, "failed": 0, "failures": [], "reason": None
    }
    assert got["message"].endswith("identifies the model among rank <= 2)")


def test_cli_certificate_is_refused_for_compressed_sensing(model_file, tmp_path, capsys):
    pytest.importorskip("cvxpy")
    path, _ = model_file
    cert = tmp_path / "cert.json"
    argv = ("learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2, "--certificate", cert)
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1
    assert err.startswith("exact-attention: error: --certificate: approximate results")
    assert not cert.exists()


def test_cli_rank_bound_below_the_truth_reports_the_difference(model_file, capsys):
    """The documented limitation, as the command line shows it: a wrong model, a holding certificate."""
    path, _ = model_file
    rc, out, err = _run(capsys, "learn", "low-rank", "--model", path, "--rank", 1)
    assert rc == 1 and err == ""
    lines = out.splitlines()
    assert "exact       NO: differs from the model" in lines
    assert any(line.startswith("rank        1 (within the given bound; sketch seed ") for line in lines)
    assert any(line.startswith("certificate certificate holds") for line in lines)


def test_default_seed_is_fresh_and_recorded():
    model = SingleHead.random(6, seed=3, rank=2)
    a = learn_low_rank(ExactOracle(model), rank=2)
    b = learn_low_rank(ExactOracle(model), rank=2)
    assert a.model == b.model == model
    assert a.details["seed"] != b.details["seed"]  # 63-bit seeds: equal with probability 2^-63
    again = learn_low_rank(ExactOracle(model), rank=2, seed=a.details["seed"])
    assert [q.X for q in again.certificate.transcript] == [q.X for q in a.certificate.transcript]


def test_certificate_records_and_enforces_the_rank_bound():
    import dataclasses

    model = SingleHead.random(4, seed=5, rank=1)
    r = learn_low_rank(ExactOracle(model), rank=1, seed=0)
    assert r.certificate.conditions == {"max_rank": 1} and r.certificate.learner == "low_rank"
    higher = SingleHead([[x + (1 if i == j else 0) for j, x in enumerate(row)] for i, row in enumerate(model.W)], model.v)
    bad = dataclasses.replace(r.certificate, model=higher)
    report = bad.check()
    assert not report.holds and "above the assumed bound r = 1" in report.message


def test_a_fixed_public_seed_can_be_targeted_which_is_why_the_default_is_fresh():
    # W = x yᵀ with y orthogonal to seed 0's first sketch column: W B = 0 for that sketch.
    from exact.learn.low_rank import _sketch

    b1 = _sketch(np.random.default_rng(0), 4)
    y = [b1[1], -b1[0], Fraction(0), Fraction(0)]
    W = [[Fraction(xi) * yj for yj in y] for xi in (1, 2, 3, 4)]
    truth = SingleHead(W, [1, 1, 1, 1])
    targeted = learn_low_rank(ExactOracle(truth), rank=1, seed=0)
    assert targeted.model != truth and targeted.details["rank"] == 0  # the documented limitation
    fresh = learn_low_rank(ExactOracle(truth), rank=1)
    assert fresh.model == truth
