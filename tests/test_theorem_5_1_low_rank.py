"""Theorem 5.1 setting, low-rank heads: the exact sketch learner and the compressed-sensing learner.

The sketch learner recovers ``W`` (rank ``r``) and ``v`` exactly with ``2rd − r² + d``
queries when ``r`` is given, and ``2rd − r² + 2d − r`` (``d² + d`` at ``r = d``) when it
finds ``r`` itself; 2 verification queries (lengths 3 and 4) follow and are counted
apart.  It runs in the exact arithmetics only (the ``exact_arithmetic`` fixture of
conftest.py; float mode is refused, see ``test_float_mode_and_approximate_oracles_are_refused``).
The compressed-sensing learner is approximate: ``d + ceil(C·2rd)`` queries and a
convex solve, no verification queries.  The command line's ``learn low-rank`` is tested in test_cli.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from fractions import Fraction

import numpy as np
import pytest

from conftest import EXACT_ARITHMETICS
from exact.checks import FRESH_SEED
from exact import (
    CallableOracle,
    ExactOracle,
    FloatOracle,
    NotIdentifiable,
    OracleInconsistent,
    PrecisionInsufficient,
    QueryBudgetExceeded,
    ShapeError,
    SingleHead,
    learn_low_rank,
    learn_low_rank_cs,
    low_rank_query_count,
    registry,
)
from exact.canonical import canonical_factors
from exact.certify import check_transcript
from exact.errors import InvalidArgument, MissingDependency
from exact.learn import cs_measurements
from exact.learn.low_rank_cs import DEFAULT_C
from public_only import PublicOnly

CHECKS = 2  # the learner's default number of verification queries

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


def _assert_counts(result, oracle, want: int) -> None:
    """The learner's own ``want`` queries, then exactly 2 verification queries of lengths 3 and 4."""
    assert result.queries == want
    assert result.verification_queries == CHECKS
    assert oracle.count == result.queries + result.verification_queries == result.total_queries
    assert [q.X.length for q in oracle.transcript[want:]] == [3, 4]
    assert result.details["checks"]["queries"] == CHECKS and result.details["checks"]["lengths"] == (3, 4)


def _learn_exact(model: SingleHead, rank, mode: str = "certified", **kw):
    """Learn, and assert exact recovery, the exact count and a holding certificate."""
    kw.setdefault("seed", 0)  # reproducible sketches (the library's default is a fresh seed)
    oracle = ExactOracle(model)
    result = learn_low_rank(oracle, rank=rank, mode=mode, **kw)
    d, r = model.d, model.rank
    assert result.model == model  # Fractions compared with ==
    assert result.W == model.W and result.v == model.v
    assert result.exact is True and result.error_estimate == 0.0
    assert result.mode == mode and result.learner == "low-rank"
    assert result.assumptions == () and result.claim == "exact"
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
    _assert_counts(result, oracle, want)
    cert = result.certificate
    assert len(cert.transcript) == want and len(cert.checks) == CHECKS
    assert cert.transcript + cert.checks == oracle.transcript
    assert cert.learner == "low-rank" and cert.assumptions == (FRESH_SEED,)  # what a reader of the checks must assume
    assert cert.conditions == ({"sketch_seed": kw["seed"], "sketch_scale_bits": 24} | ({} if rank is None else {"rank": rank}))
    report = cert.check()
    assert report.holds and report.kind == "exact" and report.checked == want + CHECKS
    assert result.report == report  # the learner's own replay is the certificate's check
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


def test_the_fixture_covers_every_exact_mode_of_the_sketch_learner():
    """The exact modes are tested here with the fixture; float mode in tests/test_low_rank_float.py."""
    assert registry.get("low-rank").modes == EXACT_ARITHMETICS + ("float",)


# -- exact recovery, rank given ----------------------------------------------------------


@pytest.mark.parametrize("d,r", SWEEP)
def test_exact_recovery(d, r, exact_arithmetic):
    model = SingleHead.random(d, seed=100 * d + r + (exact_arithmetic == "symbolic"), rank=r)
    assert model.rank == r
    result, _ = _learn_exact(model, r, exact_arithmetic)
    assert result.details["sketch_columns"] == r
    assert result.queries == 2 * r * d - r * r + d
    if exact_arithmetic == "symbolic":
        assert result.precision == 0


@pytest.mark.parametrize("d", [1, 3, 6])
def test_full_rank_costs_d_squared_plus_d(d, exact_arithmetic):
    model = _head_of_rank(d, d, seed=d)
    for rank in (d, None):
        result, _ = _learn_exact(model, rank, exact_arithmetic)
        assert result.queries == d * d + d


@pytest.mark.parametrize("d", [1, 4, 7])
def test_zero_W_costs_d_queries(d, exact_arithmetic):
    model = SingleHead.random(d, seed=9, rank=0)
    assert all(x == 0 for row in model.W for x in row) and any(model.v)
    result, oracle = _learn_exact(model, 0, exact_arithmetic)
    assert result.queries == d and oracle.count == d + CHECKS
    assert result.details["factors"] == {"K": [], "Q": []}
    assert result.details["sketch_columns"] == 0 and result.details["rows"] == ()
    # rank found: one sketch column shows that W = 0
    result, oracle = _learn_exact(model, None, exact_arithmetic)
    assert result.queries == 2 * d and oracle.count == 2 * d + CHECKS
    assert result.details["sketch_columns"] == 1


def test_d_equals_one(exact_arithmetic):
    model = SingleHead([["-7/3"]], ["1/2"])
    for rank in (1, None):
        result, _ = _learn_exact(model, rank, exact_arithmetic)
        assert result.queries == 2
        assert result.details["factors"] == {"K": [["-7/3"]], "Q": [["1"]]}
    zero = SingleHead([[0]], [5])
    assert _learn_exact(zero, 0, exact_arithmetic)[0].queries == 1
    assert _learn_exact(zero, None, exact_arithmetic)[0].queries == 2


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


@pytest.mark.parametrize("name", list(_singular_leading_block_heads()))
def test_singular_leading_block(name, exact_arithmetic):
    model = _singular_leading_block_heads()[name]
    r = 3 if name.startswith("rank 3") else 2
    assert model.rank == r
    lead = [[model.W[i][j] for j in range(r)] for i in range(r)]
    assert SingleHead(lead, [1] * r).rank < r  # the leading block really is singular
    _learn_exact(model, r, exact_arithmetic)
    _learn_exact(model, None, exact_arithmetic)


@pytest.mark.parametrize("d,r,zeros", [(4, 1, 3), (8, 2, 4), (8, 2, 7), (6, 3, 2)])
def test_v_with_zero_entries(d, r, zeros, exact_arithmetic):
    model = SingleHead.random(d, seed=7, rank=r, v_zeros=zeros)
    assert sum(x == 0 for x in model.v) == zeros and model.rank == r
    result, _ = _learn_exact(model, r, exact_arithmetic)
    assert model.v[result.details["pivot"]] != 0
    _learn_exact(model, None, exact_arithmetic)


@pytest.mark.parametrize("d,r", [(4, 1), (8, 2), (16, 4)])
def test_float32_grid_factors(d, r, exact_arithmetic):
    model = SingleHead.random(d, seed=d + r, rank=r, grid="float32")
    assert model.rank == r
    assert all(x.denominator & (x.denominator - 1) == 0 for row in model.W for x in row)  # dyadic entries
    _learn_exact(model, r, exact_arithmetic)
    _learn_exact(model, None, exact_arithmetic)


def test_large_entries(exact_arithmetic):
    big = SingleHead([[10**6, 0], [0, 0]], ["1/3", 2])  # a logit of order 10^6
    for rank in (1, None):
        result, _ = _learn_exact(big, rank, exact_arithmetic)
        if exact_arithmetic == "certified":  # sketch logits of order 10^6·|b_0|, b_0 up to 1/16: ~10^4 bits
            assert result.precision >= 2**15
    model = SingleHead.random(5, seed=1, rank=2, bound=100)
    assert max(abs(x) for row in model.W for x in row) > 5000
    _learn_exact(model, 2, exact_arithmetic)


# -- rank found (rank=None) ----------------------------------------------------------------


@pytest.mark.parametrize("d,r", SWEEP)
def test_rank_found(d, r, exact_arithmetic):
    model = SingleHead.random(d, seed=100 * d + r + (exact_arithmetic == "symbolic"), rank=r)
    result, _ = _learn_exact(model, None, exact_arithmetic)
    assert result.details["rank"] == r and result.details["rank_known"] is False
    assert result.details["sketch_columns"] == r + 1
    assert result.queries == 2 * r * d - r * r + 2 * d - r


def test_query_count_formula_table():
    for d in range(0, 13):
        for r in range(0, d + 1):
            known = low_rank_query_count(d, r)
            unknown = low_rank_query_count(d, r, rank_known=False)
            assert known == low_rank_query_count(d, r, rank_known=True) == 2 * r * d - r * r + d == _formula(d, r)
            assert unknown == 2 * r * d - r * r + 2 * d - r == _formula_unknown(d, r)
            assert unknown - known == d - r
            assert low_rank_query_count(d, r) <= d * d + d  # never more than the full-rank learner
            assert registry.get("low-rank").query_count(d, rank=r) == known
        assert low_rank_query_count(d, d) == low_rank_query_count(d, d, rank_known=False) == d * d + d
    assert (low_rank_query_count(64, 4), low_rank_query_count(64, 4, rank_known=False)) == (560, 620)


@pytest.mark.parametrize("d,r", [(3, -1), (3, 4), (0, 1)])
def test_query_count_formula_rejects_bad_rank(d, r):
    with pytest.raises(InvalidArgument, match=rf"^rank: expected 0 <= r <= d = {d}, got {r}$"):
        low_rank_query_count(d, r)


def test_counted_queries_match_the_formula_for_every_rank(exact_arithmetic):
    """Every 0 <= r <= d <= 7 (symbolic: d <= 4), rank given and found: the oracle's count is the
    formula plus the 2 verification queries."""
    for d in range(1, 8 if exact_arithmetic == "certified" else 5):
        for r in range(d + 1):
            model = _head_of_rank(d, r, seed=1000 + 10 * d + r)
            for rank in (r, None):
                oracle = ExactOracle(model)
                result = learn_low_rank(oracle, rank=rank, seed=d, mode=exact_arithmetic)
                assert result.model == model
                assert result.details["rank"] == r
                want = low_rank_query_count(d, r, rank_known=rank is not None)
                assert result.queries == want, (d, r, rank)
                assert result.verification_queries == CHECKS
                assert oracle.count == result.queries + result.verification_queries, (d, r, rank)


# -- canonical factors ------------------------------------------------------------------------


@pytest.mark.parametrize("d,r", [(5, 2), (8, 3)])
def test_factors_do_not_depend_on_the_seed_or_the_sketch(d, r):
    model = SingleHead.random(d, seed=31, rank=r)
    results, sent = [], []
    for seed, rank in ((0, r), (1, r), (2, None), (3, d)):
        results.append(learn_low_rank(ExactOracle(model), rank=rank, seed=seed))
        sent.append(tuple(q.X for q in results[-1].certificate.transcript))  # the learner's own queries
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
    assert check_transcript(model, cert.transcript + cert.checks).holds
    for i in range(4):
        for j in range(4):
            report = dataclasses.replace(cert, model=_tamper_W(result.model, i, j)).check()
            # caught by the recorded rank bound (a tamper raises the rank), or by a replayed answer
            assert not report.holds and report.kind == "exact", (i, j)
            assert report.message == (
                "certificate FAILS: the model has rank 2, above the assumed bound r = 1"
            ) or report.failed >= 1, (i, j)
    v = list(result.model.v)
    v[2] += Fraction(1, 10**20)
    report = dataclasses.replace(cert, model=SingleHead(result.model.W, v)).check()
    assert not report.holds and report.failed >= 1


def test_certificate_records_and_enforces_the_rank_bound():
    model = SingleHead.random(4, seed=5, rank=1)
    r = learn_low_rank(ExactOracle(model), rank=1, seed=0)
    assert r.certificate.conditions == {"rank": 1, "sketch_seed": 0, "sketch_scale_bits": 24}
    assert r.certificate.learner == "low-rank"
    higher = SingleHead([[x + (1 if i == j else 0) for j, x in enumerate(row)] for i, row in enumerate(model.W)], model.v)
    report = dataclasses.replace(r.certificate, model=higher).check()
    assert not report.holds and report.reason == f"the model has rank {higher.rank}, above the assumed bound r = 1"
    found = learn_low_rank(ExactOracle(model), seed=0)
    assert found.certificate.conditions == {"sketch_seed": 0, "sketch_scale_bits": 24}  # no bound was assumed
    assert found.certificate.check().message.endswith(
        "which identifies the model among bias-free single heads (rank found by exact rank tests), "
        "for a sketch generic for W (its seed independent of W); "
        "the model class checked by 2 random queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))"
    )


@pytest.mark.parametrize("conditions,reason", [
    ({"max_rank": 1, "sketch_seed": 0},
     "conditions: 'max_rank' is not a condition of learner 'low-rank' (allowed: biases, rank, sketch_scale_bits, sketch_seed)"),
    ({"foo": 1}, "conditions: 'foo' is not a condition of learner 'low-rank' (allowed: biases, rank, sketch_scale_bits, sketch_seed)"),
    ({"rank": -1, "sketch_seed": 0}, "conditions: rank=-1 is not a valid value for learner 'low-rank'"),
    ({"rank": 1, "sketch_seed": "0"}, "conditions: sketch_seed='0' is not a valid value for learner 'low-rank'"),
    ({"rank": 1}, "a low-rank certificate must record its sketch seed (conditions sketch_seed)"),
    ({"rank": 5, "sketch_seed": 0}, "the rank bound r = 5 exceeds d = 4"),
    ({"rank": 1, "sketch_seed": 0, "sketch_scale_bits": 16},
     "conditions: sketch_scale_bits=16 is not a valid value for learner 'low-rank'"),
    ({"rank": 1, "sketch_seed": 0, "sketch_scale_bits": True},
     "conditions: sketch_scale_bits=True is not a valid value for learner 'low-rank'"),
    ({"rank": 1, "sketch_seed": 1, "sketch_scale_bits": 24}, "the transcript is not the low-rank learner's probe set for "
     "this model, rank bound and sketch seed, so it need not identify the model"),
    ({"sketch_seed": 0, "sketch_scale_bits": 24}, "the transcript is not the low-rank learner's probe set for this "
     "model, rank bound and sketch seed, so it need not identify the model"),
    # no scale recorded: a certificate made before the sketch was scaled, whose probes are another set
    ({"rank": 1, "sketch_seed": 0}, "the transcript is not the low-rank learner's probe set for this model, rank "
     "bound and sketch seed, so it need not identify the model"),
])
def test_certificate_conditions_are_validated(conditions, reason):
    model = SingleHead.random(4, seed=5, rank=1)
    cert = learn_low_rank(ExactOracle(model), rank=1, seed=0).certificate
    report = dataclasses.replace(cert, conditions=conditions).check()
    assert not report.holds and report.reason == reason
    assert report.message == f"certificate FAILS: {reason}"


def test_certificate_covers_only_this_run_of_a_reused_oracle():
    model = SingleHead.random(6, seed=13, rank=2)
    oracle = ExactOracle(model)
    first = learn_low_rank(oracle, rank=2)
    second = learn_low_rank(oracle, rank=2, seed=1)
    assert first.queries == second.queries == 26
    assert first.verification_queries == second.verification_queries == CHECKS
    assert oracle.count == 2 * (26 + CHECKS)
    assert second.certificate.transcript == oracle.transcript[28:54]
    assert second.certificate.checks == oracle.transcript[54:]
    assert first.model == second.model == model
    assert second.certificate.check().holds


@pytest.mark.parametrize("rank", [2, None])
def test_learner_uses_only_the_public_oracle_interface(rank, exact_arithmetic):
    model = SingleHead.random(6, seed=2, rank=2, v_zeros=1)
    inner = ExactOracle(model)
    result = learn_low_rank(PublicOnly(inner), rank=rank, mode=exact_arithmetic)
    assert result.model == model
    _assert_counts(result, inner, low_rank_query_count(6, 2, rank_known=rank is not None))
    assert result.certificate.check().holds


def test_seeds_change_the_transcript_not_the_model():
    model = SingleHead.random(8, seed=21, rank=2)
    runs = []
    for seed in (0, 1, 2):
        oracle = ExactOracle(model)
        runs.append((learn_low_rank(oracle, rank=2, seed=seed), oracle))
    sent = [[q.X for q in oracle.transcript[:36]] for _, oracle in runs]  # the learner's own queries
    assert sent[0][:8] == sent[1][:8] == sent[2][:8]  # the d queries for v
    assert sent[0] != sent[1] and sent[1] != sent[2] and sent[0] != sent[2]
    assert sent[0][8] != sent[1][8]  # already the first sketch query differs
    for result, oracle in runs:
        assert result.model == model
        _assert_counts(result, oracle, 36)
    # the same seed gives the same transcript
    again = ExactOracle(model)
    learn_low_rank(again, rank=2, seed=1)
    assert [q.X for q in again.transcript[:36]] == sent[1]


def test_default_seed_is_fresh_and_recorded():
    model = SingleHead.random(6, seed=3, rank=2)
    a = learn_low_rank(ExactOracle(model), rank=2)
    b = learn_low_rank(ExactOracle(model), rank=2)
    assert a.model == b.model == model
    assert a.details["seed"] != b.details["seed"]  # 63-bit seeds: equal with probability 2^-63
    assert a.certificate.conditions["sketch_seed"] == a.details["seed"]
    again = learn_low_rank(ExactOracle(model), rank=2, seed=a.details["seed"])
    assert [q.X for q in again.certificate.transcript] == [q.X for q in a.certificate.transcript]


# -- a wrong rank bound -------------------------------------------------------------------------


def _rank_3_head():
    model = SingleHead.random(6, seed=3, rank=3)
    assert model.rank == 3
    return model


@pytest.mark.parametrize("given", [0, 1, 2])
def test_rank_bound_below_the_truth_is_caught_by_the_verification_queries(given, exact_arithmetic):
    """If rank(W) > r, the learner's 2rd − r² + d answers are reproduced by a rank-r matrix; the
    verification queries (fresh randomness) expose it."""
    model = _rank_3_head()
    oracle = ExactOracle(model)
    with pytest.raises(
        OracleInconsistent,
        match=rf"^not a single head of rank <= {given}: the learned model does not reproduce exactly [12] of 2 "
        r"random verification queries \(first of length [34]\); the learner's result holds only among bias-free single "
        rf"heads; among heads of rank <= {given}; for a sketch generic for W \(its seed independent of W\)$",
    ):
        learn_low_rank(oracle, rank=given, mode=exact_arithmetic)
    assert oracle.count == low_rank_query_count(6, given) + CHECKS


G = "for a sketch generic for W (its seed independent of W)"


@pytest.mark.parametrize("given", [0, 1, 2])
def test_rank_bound_below_the_truth_without_checks_returns_a_wrong_answer_under_a_stated_assumption(given, exact_arithmetic):
    """With checks=0 the learner's own queries cannot tell: a wrong model is returned, and the result
    and its certificate say that it holds only among heads of rank <= r (which the truth is not)."""
    d = 6
    model = _rank_3_head()
    oracle = ExactOracle(model)
    result = learn_low_rank(oracle, rank=given, mode=exact_arithmetic, checks=0)
    assert result.model != model and result.model.W != model.W
    assert result.model.v == model.v
    assert result.model.rank == given and result.details["rank"] == given
    assert result.details["rank_known"] is True
    assert result.queries == oracle.count == low_rank_query_count(d, given) and result.verification_queries == 0
    assumptions = ("among bias-free single heads", f"among heads of rank <= {given}", "for a sketch generic for W (its seed independent of W)")
    assert result.assumptions == assumptions
    assert result.exact and result.claim == f"exact among bias-free single heads, among heads of rank <= {given}, for a sketch generic for W (its seed independent of W)"
    cert = result.certificate
    assert cert.assumptions == assumptions and cert.checks == ()
    report = cert.check()
    assert report.holds and report.kind == "exact" and report.checked == result.queries
    assert report.message.endswith(
        f"(the low-rank learner's probe set, which identifies the model among bias-free single heads of rank <= {given}, {G}; "
        f"assuming it is among bias-free single heads, among heads of rank <= {given}, for a sketch generic for W (its seed independent of W))"
    )
    # a certificate without checks must state the assumptions its claim rests on
    silent = dataclasses.replace(cert, assumptions=("among bias-free single heads",))
    assert silent.check().reason == (
        "the certificate holds no verification query, yet does not state the assumptions its claim then rests on: "
        f"among heads of rank <= {given}; {G}"
    )
    # both the truth and the (wrong) answer reproduce every answer: the learner's queries cannot tell
    assert check_transcript(model, cert.transcript).holds
    # the rank-finding learner is not fooled
    found = learn_low_rank(ExactOracle(model), mode=exact_arithmetic)
    assert found.model == model and found.details["rank"] == 3


@pytest.mark.parametrize("d,true_rank,given", [(6, 1, 3), (6, 2, 5), (8, 0, 3), (8, 3, 4), (5, 2, 5)])
def test_rank_bound_above_the_truth_finds_the_true_rank(d, true_rank, given, exact_arithmetic):
    model = SingleHead.random(d, seed=40 + d + true_rank, rank=true_rank)
    assert model.rank == true_rank
    result, oracle = _learn_exact(model, given, exact_arithmetic)
    assert result.details["rank"] == true_rank and result.details["rank_known"] is True
    assert result.details["sketch_columns"] == given
    assert result.queries == d + d * given + true_rank * (d - given)
    if given < d:
        assert result.queries < low_rank_query_count(d, given)
    else:
        assert result.queries == low_rank_query_count(d, given) == d * d + d


def test_a_fixed_public_seed_can_be_targeted_which_is_why_the_default_is_fresh():
    # W = x yᵀ with y orthogonal to seed 0's first sketch column: W B = 0 for that sketch.
    from exact.learn.low_rank import _sketch

    b1 = _sketch(np.random.default_rng(0), 4)
    y = [b1[1], -b1[0], Fraction(0), Fraction(0)]
    W = [[Fraction(xi) * yj for yj in y] for xi in (1, 2, 3, 4)]
    truth = SingleHead(W, [1, 1, 1, 1])
    assert truth.rank == 1
    # the targeted sketch sees W B = 0; the verification queries (fresh randomness) expose the rank-0 answer
    oracle = ExactOracle(truth)
    with pytest.raises(OracleInconsistent, match=r"holds only among bias-free single heads; among heads of rank <= 1; for a sketch"):
        learn_low_rank(oracle, rank=1, seed=0)
    assert oracle.count == 4 + 4 * 1 + CHECKS  # v, one sketch column of rank 0 (no row sketch), the checks
    # without them the wrong answer is returned, labelled with the assumptions it rests on
    # (both hold for this truth: the failure is the sketch's genericity, which a public seed lets W target)
    targeted = learn_low_rank(ExactOracle(truth), rank=1, seed=0, checks=0)
    assert targeted.model != truth and targeted.details["rank"] == 0
    assert targeted.assumptions == ("among bias-free single heads", "among heads of rank <= 1", "for a sketch generic for W (its seed independent of W)")
    assert targeted.certificate.assumptions == targeted.assumptions
    assert targeted.certificate.check().message.endswith("assuming it is among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W))")
    fresh = learn_low_rank(ExactOracle(truth), rank=1)
    assert fresh.model == truth and fresh.verification_queries == CHECKS


# -- errors -------------------------------------------------------------------------------------


def test_an_approximate_oracle_is_refused_in_the_exact_modes_before_any_query():
    """Float mode runs the same plan (tests/test_low_rank_float.py); the exact modes need exact answers."""
    model = SingleHead.random(4, seed=1, rank=1)
    float_oracle = FloatOracle(model)
    callable_oracle = CallableOracle(lambda X: 0.5, d=4, accuracy="1e-12")
    for approx in (float_oracle, callable_oracle):
        for mode in ("certified", "symbolic"):
            with pytest.raises(InvalidArgument, match="^learn_low_rank: an approximate oracle is learned in mode='float'"):
                learn_low_rank(approx, rank=1, mode=mode)
        assert approx.count == 0


@pytest.mark.parametrize("kw,match", [
    (dict(rank=1, mode="exactish"), r"^mode: learner 'low-rank' runs in 'certified', 'symbolic', 'float', got 'exactish'$"),
    (dict(rank=1, seed=-1), r"^seed: expected a non-negative integer or None, got -1$"),
    (dict(rank=1, seed=True), r"^seed: expected a non-negative integer or None, got True$"),
    (dict(rank=1, checks=-1), r"^checks: expected a non-negative integer, got -1$"),
    (dict(rank=1, check_seed=1.5), r"^check_seed: expected a non-negative integer, got 1.5$"),
])
def test_bad_arguments_are_refused_before_any_query(kw, match):
    oracle = ExactOracle(SingleHead.random(3, seed=0, rank=1))
    with pytest.raises(InvalidArgument, match=match):
        learn_low_rank(oracle, **kw)
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
def test_v_zero_is_not_identifiable(rank, exact_arithmetic):
    model = SingleHead.from_factors([[1, 2, 3]], [[1, 1, 1]], [0, 0, 0])
    oracle = ExactOracle(model)
    with pytest.raises(NotIdentifiable, match=r"v = 0: then f\(X\) = 0 for every X"):
        learn_low_rank(oracle, rank=rank, mode=exact_arithmetic)
    assert oracle.count == 3  # only the d queries for v (no verification query)


def test_budget_too_small_is_refused_before_any_query():
    model = SingleHead.random(6, seed=3, rank=2)
    for budget in (25, 27):
        oracle = ExactOracle(model, budget=budget)
        with pytest.raises(
            QueryBudgetExceeded,
            match=rf"^low-rank \(d=6: 26 queries \+ 2 checks\) needs 28 more queries, but the oracle's budget "
            rf"allows {budget} \(budget={budget}, used=0\)$",
        ):
            learn_low_rank(oracle, rank=2)
        assert oracle.count == 0
    exact_budget = ExactOracle(model, budget=28)
    assert learn_low_rank(exact_budget, rank=2).model == model
    assert exact_budget.remaining == 0
    unchecked = ExactOracle(model, budget=26)  # without checks the learner's own 2rd − r² + d fit
    assert learn_low_rank(unchecked, rank=2, checks=0).queries == 26 and unchecked.remaining == 0


def test_budget_with_unknown_rank():
    model = SingleHead.random(6, seed=3, rank=2)
    # fewer than the d queries for v plus the checks: refused before any query
    oracle = ExactOracle(model, budget=7)
    with pytest.raises(QueryBudgetExceeded, match=r"^low-rank \(d=6: 6 queries \+ 2 checks\) needs 8 more queries"):
        learn_low_rank(oracle)
    assert oracle.count == 0
    # one short of 2rd − r² + 2d − r = 30 plus 2 checks: refused before the row sketch, after v and 3 columns
    oracle = ExactOracle(model, budget=31)
    with pytest.raises(
        QueryBudgetExceeded,
        match=r"^low-rank \(row sketch: 6 queries \+ 2 checks\) needs 8 more queries, .* allows 7 \(budget=31, used=24\)$",
    ):
        learn_low_rank(oracle)
    assert oracle.count == 6 + 3 * 6
    exact_budget = ExactOracle(model, budget=32)
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
        assert result.mode == "cs" and result.max_length == 2 and result.learner == "low-rank-cs"
        assert result.verification_queries == 0 and result.total_queries == oracle.count  # no verification queries
        assert result.assumptions == () and result.claim == "approximate"
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
        assert result.queries == oracle.count == d + cs_measurements(d, 1) and result.verification_queries == 0
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
    (dict(rank=2, m=0), InvalidArgument, r"m: expected a positive number of projections, got 0"),
    (dict(rank=2, m=-3), InvalidArgument, r"m: expected a positive number of projections, got -3"),
    (dict(rank=2, m=2.5), InvalidArgument, r"m: expected a positive number of projections, got 2.5"),
    (dict(rank=2, C=0), InvalidArgument, r"^C: expected a positive finite constant, got 0$"),
    (dict(rank=2, C=float("inf")), InvalidArgument, r"^C: expected a positive finite constant, got inf$"),
    (dict(rank=2, seed=-1), InvalidArgument, r"^seed: expected a non-negative integer, got -1$"),
    (dict(rank=2, probe_scale=0), InvalidArgument, r"^probe_scale: expected a positive finite scale, got 0$"),
])
def test_cs_bad_arguments(kw, error, match):
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=2))
    with pytest.raises(error, match=match):
        learn_low_rank_cs(oracle, **kw)
    assert oracle.count == 0


@pytest.mark.parametrize("kw", [dict(rank=True), dict(rank=2, m=True)])
def test_cs_refuses_booleans_like_the_sketch_learner(kw):
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=2), budget=0)  # never reaches the solver
    with pytest.raises(ShapeError if kw.get("m") is None else InvalidArgument, match="expected"):
        learn_low_rank_cs(oracle, **kw)
    assert oracle.count == 0


def test_cs_budget_checked_before_any_query():
    pytest.importorskip("cvxpy")  # without it the learner refuses first, also before any query (below)
    oracle = ExactOracle(SingleHead.random(8, seed=0, rank=1), budget=63)
    with pytest.raises(
        QueryBudgetExceeded,
        match=r"^low-rank-cs \(d=8: 64 queries \+ 0 checks\) needs 64 more queries, but the oracle's budget allows 63",
    ):
        learn_low_rank_cs(oracle, rank=1)  # d + m = 8 + ceil(3.5·2·1·8) = 64
    assert oracle.count == 0



def _without_cvxpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # `import cvxpy` now raises ImportError


def test_cs_without_cvxpy_raises_missing_dependency(monkeypatch):
    _without_cvxpy(monkeypatch)
    oracle = ExactOracle(SingleHead.random(4, seed=0, rank=1))
    with pytest.raises(MissingDependency, match=r"^learn_low_rank_cs needs cvxpy: pip install 'exact-attention\[cs\]'$"):
        learn_low_rank_cs(oracle, rank=1, seed=0)


def test_cs_without_cvxpy_is_refused_before_any_query(monkeypatch):
    _without_cvxpy(monkeypatch)
    oracle = ExactOracle(SingleHead.random(4, seed=0, rank=1))
    with pytest.raises(MissingDependency):
        learn_low_rank_cs(oracle, rank=1, seed=0)
    assert oracle.count == 0


# -- the sketch: its entries, its reproducibility from a seed, a degenerate draw ----------------


def test_sketch_entries_are_multiples_of_2_to_the_minus_24_within_a_sixteenth():
    from exact.learn import low_rank

    assert (low_rank.SKETCH_BITS, low_rank.SKETCH_SCALE_BITS) == (20, 24)
    model = SingleHead.random(5, seed=4, rank=2)
    oracle = ExactOracle(model)
    r = learn_low_rank(oracle, rank=2, seed=7, checks=0)
    sketch = [q.X.dense()[1] for q in r.certificate.transcript[5:15]]  # [b + u_k; b]: the column b
    entries = [x for b in sketch for x in b]
    assert all(abs(x) <= Fraction(1, 16) and (x * 2**24).denominator == 1 for x in entries)
    assert any(x.denominator == 2**24 for x in entries)  # generic: the full 20 bits are used
    assert r.certificate.conditions["sketch_scale_bits"] == 24


def test_a_recorded_sketch_seed_rebuilds_the_same_sketch():
    # certificates record the sketch seed (and scale) and rebuild the probes from it: the map from a
    # seed to its sketch is part of the certificate format, not an implementation detail
    from exact.learn import low_rank

    numerators = [735313, 287230, 23355, -482792]
    assert low_rank._sketch(np.random.default_rng(0), 4) == [Fraction(n, 2**24) for n in numerators]
    # the scale of certificates that record none
    assert low_rank._sketch(np.random.default_rng(0), 4, 20) == [
        Fraction(735313, 2**20), Fraction(143615, 2**19), Fraction(23355, 2**20), Fraction(-60349, 2**17)
    ]


def test_a_certificate_that_records_no_scale_is_rebuilt_with_entries_over_2_to_the_20(monkeypatch):
    # a certificate written before the sketch was scaled (entries n/2^20, no sketch_scale_bits) still
    # holds: its probe set is rebuilt at that scale, and at no other
    from exact.learn import low_rank

    model = SingleHead.random(6, seed=2, rank=2)
    monkeypatch.setattr(low_rank, "SKETCH_SCALE_BITS", 20)
    old = learn_low_rank(ExactOracle(model), rank=2, seed=5)
    monkeypatch.undo()
    assert old.model == model and old.certificate.conditions["sketch_scale_bits"] == 20
    b = old.certificate.transcript[6].X.dense()[1]
    assert max(abs(x) for x in b) > Fraction(1, 16) and all((x * 2**20).denominator == 1 for x in b)
    legacy = dict(old.certificate.conditions)
    del legacy["sketch_scale_bits"]
    assert dataclasses.replace(old.certificate, conditions=legacy).check().holds
    assert not dataclasses.replace(old.certificate, conditions=legacy | {"sketch_scale_bits": 24}).check().holds
    new = learn_low_rank(ExactOracle(model), rank=2, seed=5)
    assert new.certificate.check().holds
    assert not dataclasses.replace(new.certificate, conditions=legacy).check().holds


def test_a_degenerate_sketch_is_refused_not_used(monkeypatch):
    from exact.learn import low_rank

    monkeypatch.setattr(low_rank, "_sketch", lambda rng, d, scale_bits: [Fraction(1, 2)] * d)  # every column the same
    oracle = ExactOracle(SingleHead.random(4, seed=5, rank=2))
    with pytest.raises(InvalidArgument, match=r"^learn_low_rank: degenerate sketch for seed=3; retry with another seed$"):
        learn_low_rank(oracle, rank=2, seed=3)


@pytest.mark.parametrize("d, r", [(12, 3), (20, 5)])
def test_beyond_the_dense_size_the_result_is_kept_as_factors(monkeypatch, d, r):
    """Past ``DENSE_ENTRIES`` the learned head is only its factors C·M⁻¹·Z: W is never formed, the
    replay and the certificate hold, and it equals the truth (compared by canonical factors and, to be
    sure, as dense matrices afterwards)."""
    import exact.learn.low_rank as lr
    from exact.canonical import canonical_factors

    monkeypatch.setattr(lr, "DENSE_ENTRIES", 0)
    truth = SingleHead.random(d, seed=d, rank=r)
    oracle = ExactOracle(truth)
    res = learn_low_rank(oracle, rank=r, seed=3, checks=0)
    assert "_Wmat" not in res.model.__dict__ and len(res.model.__dict__["_factors"]) == 3
    assert res.queries == oracle.count == low_rank_query_count(d, r) and res.report.holds
    assert res.certificate.check().holds
    assert canonical_factors(res.model) == canonical_factors(truth) and res.model.v == truth.v
    assert [[Fraction(x) for x in row] for row in res.details["factors"]["Q"]] == [list(q) for q in canonical_factors(truth)[1]]
    assert res.model == truth  # forms both W: the dense comparison agrees
