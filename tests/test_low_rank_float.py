"""The exact sketch learner's plan on float answers (learn_low_rank(..., mode="float"))."""

import numpy as np
import pytest

from exact import formulas
from exact.errors import ExactAttentionError, InvalidArgument, OracleInconsistent
from exact.learn import learn_low_rank
from exact.models import SingleHead
from exact.oracles import ExactOracle, FloatOracle


def _head(d: int, r: int, seed: int = 0) -> SingleHead:
    rng = np.random.default_rng(seed)
    K, Q = rng.standard_normal((r, d)) / np.sqrt(d), rng.standard_normal((r, d)) / np.sqrt(d)
    return SingleHead(((K.T @ Q) / np.sqrt(max(r, 1))).tolist(), rng.standard_normal(d).tolist())


def _rel(result, truth) -> float:
    W, Wt = np.array(result.model.to_numpy()[0]), np.array(truth.to_numpy()[0])
    return float(np.linalg.norm(W - Wt) / np.linalg.norm(Wt))


@pytest.mark.parametrize("d, r", [(8, 1), (16, 2), (32, 4), (64, 8)])
def test_the_rank_given_plan_recovers_w_to_1e9_relative_with_2rd_minus_r2_plus_d_queries(d, r):
    truth = _head(d, r, seed=d)
    oracle = FloatOracle(truth)
    res = learn_low_rank(oracle, rank=r, mode="float", seed=1)
    assert not res.exact and res.mode == "float" and res.details.rank == r and res.details.rescaled == 0
    assert res.queries == formulas.LOW_RANK(d=d, r=r) == oracle.count - res.verification_queries
    err = np.abs(np.array(res.model.to_numpy()[0]) - np.array(truth.to_numpy()[0])).max()
    assert _rel(res, truth) <= 1e-9 and err <= res.error_estimate


@pytest.mark.parametrize("d, r", [(16, 2), (32, 3)])
def test_without_the_rank_it_is_found_from_the_singular_values_with_the_gap(d, r):
    truth = _head(d, r, seed=3)
    oracle = FloatOracle(truth)
    res = learn_low_rank(oracle, mode="float", seed=2)
    assert res.details.rank == r and not res.details.rank_known and res.details.gap > 1e6
    assert res.queries == formulas.LOW_RANK_FOUND(d=d, r=r)
    assert _rel(res, truth) <= 1e-9
    assert any(label == "rank" and "found" in text for label, text in res.details.rows(res))


def test_an_approximate_oracle_defaults_to_float_mode_and_exact_modes_refuse_it():
    truth = _head(8, 2)
    assert learn_low_rank(FloatOracle(truth), rank=2, seed=0).mode == "float"
    with pytest.raises(InvalidArgument, match="approximate oracle is learned in mode='float'"):
        learn_low_rank(FloatOracle(truth), rank=2, mode="certified")
    assert learn_low_rank(ExactOracle(SingleHead.random(4, seed=1, rank=1)), rank=1).exact


def test_a_rank_bound_below_the_truth_is_never_returned_quietly():
    truth = _head(12, 4, seed=5)
    with pytest.raises(OracleInconsistent, match="not a single head of rank <= 2"):
        learn_low_rank(FloatOracle(truth), rank=2, mode="float", seed=0)
    unchecked = learn_low_rank(FloatOracle(truth), rank=2, mode="float", seed=0, checks=0)
    assert "among heads of rank <= 2" in unchecked.assumptions  # without checks, the bound is what it rests on


def test_a_real_torch_head_of_low_rank_is_learned():
    torch = pytest.importorskip("torch")
    from exact.native import TorchOracle, native_model

    d, r = 32, 4
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, dtype=torch.float64).eval()
    with torch.no_grad():  # query and key maps of rank r: W = W_KᵀW_Q/√d has rank <= r
        mha.in_proj_weight[r:d].zero_()
        mha.in_proj_weight[d + r:2 * d].zero_()
    w = torch.randn(d, dtype=torch.float64)
    truth = native_model(mha, w)
    assert truth.rank == r
    res = learn_low_rank(TorchOracle(mha, w), rank=r, mode="float", seed=4)
    assert res.queries == formulas.LOW_RANK(d=d, r=r) and _rel(res, truth) <= 1e-9
    try:
        found = learn_low_rank(TorchOracle(mha, w), mode="float", seed=4)
    except ExactAttentionError as e:  # pragma: no cover - reported if it happens
        pytest.fail(f"rank not found: {e}")
    assert found.details.rank == r


def test_a_small_singular_value_of_w_is_not_taken_for_noise():
    """Singular values of W spread over 10^4 (all far above float64's noise, some within the
    oracle's loose worst-case bound): the rank is found only at a real gap, never cut short."""
    rng = np.random.default_rng(7)
    d, r = 24, 6
    Qa, _ = np.linalg.qr(rng.standard_normal((d, r)))
    Qb, _ = np.linalg.qr(rng.standard_normal((d, r)))
    W = Qa @ np.diag(np.logspace(0, -4, r)) @ Qb.T
    truth = SingleHead(W.tolist(), rng.standard_normal(d).tolist())
    res = learn_low_rank(FloatOracle(truth), mode="float", seed=3)
    assert res.details.rank == r and res.details.gap > 1e6
    err = np.abs(np.array(res.model.to_numpy()[0]) - W).max()
    assert err <= res.error_estimate and _rel(res, truth) <= 1e-9


@pytest.mark.parametrize("rank_given", [True, False])
def test_a_low_rank_head_with_biases_costs_d_plus_1_more_queries(rank_given):
    d, r = 16, 2
    base = _head(d, r, seed=9)
    rng = np.random.default_rng(9)
    truth = SingleHead(base.W, base.v, (rng.standard_normal(d) * 0.3).tolist(), 0.7)
    oracle = FloatOracle(truth)
    res = learn_low_rank(oracle, rank=r if rank_given else None, mode="float", biases=True, seed=1)
    formula = formulas.LOW_RANK(d=d, r=r) if rank_given else formulas.LOW_RANK_FOUND(d=d, r=r)
    assert res.queries == formula + d + 1 == oracle.count - res.verification_queries
    err = max(abs(float(x) - float(y)) for x, y in zip(res.model.parameters(), truth.parameters()))
    assert res.model.biased and err <= res.error_estimate and err <= 1e-10
    from exact import registry

    assert f"+ d + 1 = {res.queries} with r = {r}" in registry.get("low-rank").count_text(res)
    exact = SingleHead.random(4, seed=1, rank=1, biases=True)  # the exact modes take them too
    assert learn_low_rank(ExactOracle(exact), rank=1, biases=True, seed=0).model == exact


def test_a_torch_head_of_low_rank_with_biases_is_learned():
    torch = pytest.importorskip("torch")
    from exact.native import TorchOracle, native_model

    d, r = 32, 4
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(d, 1, dtype=torch.float64).eval()
    with torch.no_grad():
        mha.in_proj_weight[r:d].zero_()
        mha.in_proj_weight[d + r:2 * d].zero_()
        mha.in_proj_bias.normal_(0, 0.5)
        mha.out_proj.bias.normal_(0, 0.5)
    w = torch.randn(d, dtype=torch.float64)
    truth = native_model(mha, w)
    res = learn_low_rank(TorchOracle(mha, w), rank=r, mode="float", biases=True, seed=0)
    assert res.queries == formulas.LOW_RANK(d=d, r=r) + d + 1
    err = max(abs(float(x) - float(y)) for x, y in zip(res.model.parameters(), truth.parameters()))
    assert err <= res.error_estimate and _rel(res, truth) <= 1e-9


def test_the_command_line_runs_float_mode_and_states_its_count(capsys, tmp_path):
    import json

    from test_cli import run

    d, r = 8, 2
    model = tmp_path / "head.json"
    model.write_text(json.dumps(_head(d, r, seed=1).to_json()))
    rc, out, err = run(capsys, "learn", "low-rank", "--model", model, "--rank", r, "--oracle", "float", "--quiet")
    assert rc == 0, err
    assert f"2rd − r² + d = {formulas.LOW_RANK(d=d, r=r)} with r = {r}" in out and "mode        float" in out
