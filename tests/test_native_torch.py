"""Real torch models: nn.MultiheadAttention heads learned within their stated guarantees."""

import json
from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from exact import learn_noisy_frame, learn_single_head  # noqa: E402
from exact.errors import InvalidArgument, ShapeError  # noqa: E402
from exact.native import TorchOracle, native_head, native_model  # noqa: E402
from exact.numbers import ball_interval  # noqa: E402
from exact.sequences import Sequence  # noqa: E402


def _module(d, dtype, seed=0):
    torch.manual_seed(seed)
    return torch.nn.MultiheadAttention(d, 1, bias=False, dtype=dtype), torch.randn(d, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_every_answer_is_within_its_declared_rounding_bound(dtype):
    mha, w = _module(9, dtype)
    truth = native_head(mha, w)
    o = TorchOracle(mha, w)
    rng = np.random.default_rng(1)
    seqs = [Sequence.from_rows(rng.standard_normal((n, 9)).tolist()) for n in (1, 2, 3, 5) for _ in range(5)]
    for X, y in zip(seqs, o.query_batch(seqs)):
        lo, hi = ball_interval(truth.exact(X).ball(200))
        gap = max(lo - y.__float__(), y.__float__() - hi, 0)
        assert gap <= y.error
    assert o.count == len(seqs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_batch_of_biased_multi_head_answers_is_within_its_declared_bounds(dtype):
    """The bounds of a whole batch come from one array pass: each must still cover its answer, for
    several heads with nonzero biases and queries of mixed lengths in one batch."""
    torch.manual_seed(2)
    mha = torch.nn.MultiheadAttention(8, 4, bias=True, batch_first=True, dtype=dtype).eval()
    with torch.no_grad():
        for p in (mha.in_proj_bias, mha.out_proj.bias):
            p.copy_(0.3 * torch.randn(p.shape, dtype=dtype))
    w = np.random.default_rng(2).standard_normal(8)
    truth = native_model(mha, w)
    o = TorchOracle(mha, w)
    rng = np.random.default_rng(3)
    seqs = [Sequence.from_rows((4 * rng.standard_normal((n, 8))).tolist()) for _ in range(6) for n in (1, 2, 4)]
    answers = o.query_batch(seqs)
    for X, y in zip(seqs, answers):
        lo, hi = ball_interval(truth.exact(X).ball(200))
        assert max(lo - float(y), float(y) - hi, 0) <= y.error
    # the batch's bounds are each query's own (up to the summation order of an array pass)
    for a, X in zip(answers, seqs):
        assert abs(float(a.error) - o._bound(X.to_numpy())) <= 1e-12 * float(a.error)


def test_a_float64_module_at_d_64_is_learned_within_the_float_mode_bound():
    mha, w = _module(64, torch.float64)
    W = np.array(native_head(mha, w).to_numpy()[0])
    r = learn_single_head(TorchOracle(mha, w), mode="float", checks=0, w_bound=1)
    assert r.queries == 64 * 64 + 64
    assert np.abs(np.array(r.model.to_numpy()[0]) - W).max() <= r.error_estimate


def test_a_float32_module_at_d_32_is_learned_with_a_certified_bound_that_holds():
    mha, w = _module(32, torch.float32, seed=3)
    truth = native_head(mha, w)
    W, v = (np.array(x, dtype=float) for x in truth.to_numpy())
    r = learn_noisy_frame(TorchOracle(mha, w), w_bound=2 * float(np.linalg.norm(W)), token_norm=1)
    Wh, vh = (np.array(x, dtype=float) for x in r.model.to_numpy())
    assert np.linalg.norm(Wh - W) <= r.error_bound.W_frobenius < 1
    assert np.abs(Wh - W).max() <= r.error_bound.W_max and np.linalg.norm(vh - v) <= r.error_bound.v_norm


def test_a_float64_module_with_parameters_on_a_grid_is_recovered_bit_for_bit():
    """Integer weights and d = 4 (scale 1/2): the merged W and v lie on the grid dyadic:10
    (multiples of 2^-10), and the module computes in float64, far finer than that grid.
    (float32 itself is no grid for entries that may be 0: its spacing near 0 is 2^-149.)"""
    d = 4
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, dtype=torch.float64)
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.randint(-2, 3, (3 * d, d), generator=g).to(torch.float64))
        mha.out_proj.weight.copy_(torch.randint(-2, 3, (d, d), generator=g).to(torch.float64))
    w = torch.tensor([1.0, -1.0, 0.5, 2.0], dtype=torch.float64)
    truth = native_head(mha, w)
    r = learn_single_head(TorchOracle(mha, w), grid="dyadic:10", checks=0)
    assert r.exact and r.model == truth


def test_modules_outside_the_model_are_refused_with_the_cause_named():
    with pytest.raises(ShapeError, match="readout: expected a vector of length d = 4"):
        TorchOracle(torch.nn.MultiheadAttention(4, 1, bias=False), torch.ones(3))
    with pytest.raises(InvalidArgument, match="expected a torch.nn.MultiheadAttention.*CallableOracle"):
        TorchOracle(torch.nn.Linear(4, 4), torch.ones(4))


# -- every self-attention module a user holds: biases, several heads, batch_first ---------------


def _mha(d, heads=1, *, bias=True, batch_first=False, dtype=torch.float64, seed=0, **kw):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d, heads, bias=bias, batch_first=batch_first, dtype=dtype, **kw).eval()
    if bias:  # torch initialises the biases to 0: give them values, so that they matter
        with torch.no_grad():
            mha.in_proj_bias.normal_(0, 0.5)
            mha.out_proj.bias.normal_(0, 0.5)
    return mha, torch.randn(d, dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("heads", [1, 3])
def test_every_module_answers_within_its_declared_bound_of_the_native_model(dtype, bias, batch_first, heads):
    mha, w = _mha(6, heads, bias=bias, batch_first=batch_first, dtype=dtype)
    truth = native_model(mha, w)
    assert getattr(truth, "H", 1) == heads and getattr(truth, "biased", False) == bias
    o = TorchOracle(mha, w)
    rng = np.random.default_rng(2)
    seqs = [Sequence.from_rows(rng.standard_normal((n, 6)).tolist()) for n in (1, 2, 3, 5) for _ in range(4)]
    for X, y in zip(seqs, o.query_batch(seqs)):  # one batched call per length: batch_first must not matter
        lo, hi = ball_interval(truth.exact(X).ball(200))
        assert max(lo - y.__float__(), y.__float__() - hi, 0) <= y.error
    assert o.count == len(seqs)
    one = TorchOracle(mha, w).query(seqs[0])  # alone, as in a batch: within the bound of the model
    lo, hi = ball_interval(truth.exact(seqs[0]).ball(200))
    assert max(lo - float(one), float(one) - hi, 0) <= one.error


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("d", [8, 16])
def test_a_float64_module_with_biases_is_learned_within_its_estimate(d, batch_first):
    from exact.learn import learn_single_head_biased

    mha, w = _mha(d, batch_first=batch_first, seed=d)
    truth = native_model(mha, w)
    oracle = TorchOracle(mha, w)
    r = learn_single_head_biased(oracle, mode="float")
    assert r.queries == d * d + 2 * d + 1 and oracle.count == r.queries + r.verification_queries
    err = max(abs(float(x) - float(y)) for x, y in zip(r.model.parameters(), truth.parameters()))
    assert err <= r.error_estimate and err <= 1e-10, (err, r.error_estimate)


def test_a_default_module_is_learned_as_it_comes():
    """``nn.MultiheadAttention(d, 1)`` as torch makes it: bias on (zero-initialised), training
    mode with dropout 0 (deterministic), here batch_first=True."""
    from exact.learn import learn_single_head_biased

    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(16, 1, batch_first=True, dtype=torch.float64)
    w = torch.randn(16, dtype=torch.float64)
    r = learn_single_head_biased(TorchOracle(mha, w), mode="float")
    truth = native_model(mha, w)
    err = max(abs(float(x) - float(y)) for x, y in zip(r.model.parameters(), truth.parameters() + (0,) * 17))
    assert err <= r.error_estimate and err <= 1e-10


def test_a_module_with_biases_on_a_grid_is_recovered_bit_for_bit():
    from exact.learn import learn_single_head_biased

    d = 4
    mha = torch.nn.MultiheadAttention(d, 1, dtype=torch.float64).eval()
    g = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for p in (mha.in_proj_weight, mha.out_proj.weight, mha.in_proj_bias, mha.out_proj.bias):
            p.copy_(torch.randint(-2, 3, p.shape, generator=g).to(torch.float64))
    w = torch.tensor([1.0, -1.0, 0.5, 2.0], dtype=torch.float64)
    truth = native_model(mha, w)
    assert truth.biased
    r = learn_single_head_biased(TorchOracle(mha, w), grid="dyadic:10", checks=0)
    assert r.exact and r.model == truth and r.queries == 25


@pytest.mark.parametrize("kw, cause", [
    ({"add_zero_attn": True}, "add_zero_attn adds a sink token"),
    ({"add_bias_kv": True}, "add_bias_kv adds a sink token"),
    ({"kdim": 3, "vdim": 3}, "expected kdim = vdim = embed_dim"),
])
def test_modules_the_model_does_not_cover_are_refused_with_the_cause(kw, cause):
    mha = torch.nn.MultiheadAttention(4, 1, **kw).eval()
    with pytest.raises(InvalidArgument, match=cause):
        TorchOracle(mha, torch.ones(4))
    with pytest.raises(InvalidArgument, match=cause):
        native_model(mha, torch.ones(4))


def test_dropout_in_training_mode_is_refused_and_eval_mode_accepted():
    mha = torch.nn.MultiheadAttention(4, 1, dropout=0.1)
    with pytest.raises(InvalidArgument, match=r"training mode with dropout = 0.1.*mha.eval\(\)"):
        TorchOracle(mha, torch.ones(4))
    TorchOracle(mha.eval(), torch.ones(4))


def test_several_heads_with_biases_give_one_output_bias_computed_from_the_weights():
    """b = wᵀ(Σ_h W_O,h b_v,h + b_o) and c_h = W_K,hᵀ b_q,h / √r, computed here from the weights in numpy."""
    mha, w = _mha(4, 2)
    truth = native_model(mha, w)
    d, r = 4, 2
    Wi, bi = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    Wo, bo = mha.out_proj.weight.detach().numpy(), mha.out_proj.bias.detach().numpy()
    wn = w.numpy()
    assert truth.H == 2 and truth.biased
    assert abs(float(truth.b) - float(wn @ (Wo @ bi[2 * d:] + bo))) < 1e-12
    for h, head in enumerate(truth.heads):
        s = slice(h * r, (h + 1) * r)
        Wk, bq = Wi[d:2 * d][s], bi[:d][s]
        assert np.abs(np.array([float(x) for x in head.c]) - Wk.T @ bq / np.sqrt(r)).max() < 1e-12
        assert head.b == 0  # the output bias is the model's
    with pytest.raises(InvalidArgument, match="native_head takes num_heads=1"):
        native_head(mha, w)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_modules_are_refused_with_the_way_out(dtype):
    """A float16 module's answers to the noisy learner's probes (tokens near 1e-15) exceed the
    relative rounding bound threefold: the tokens underflow.  So the oracle refuses them."""
    mha = torch.nn.MultiheadAttention(4, 1, dtype=dtype).eval()
    with pytest.raises(InvalidArgument, match=r"expected a float32 or float64 module.*underflow.*mha.to\(torch.float32\)"):
        TorchOracle(mha, torch.ones(4, dtype=dtype))


def test_a_float32_module_with_a_float64_readout_is_read_out_as_given():
    mha, _ = _mha(5, bias=False, dtype=torch.float32, seed=2)
    w = torch.tensor([0.1, -0.3, 1 / 3, 2.0, 1e-9], dtype=torch.float64)  # not float32 numbers
    truth = native_model(mha, w)
    X = Sequence.from_rows([[0.5, -1, 0, 2, 1], [1, 1, -0.25, 0, 3]])
    y = TorchOracle(mha, w).query(X)
    lo, hi = ball_interval(truth.exact(X).ball(200))
    assert max(lo - float(y), float(y) - hi, 0) <= y.error


def test_the_command_line_learns_a_users_module(tmp_path, monkeypatch, capsys):
    from test_cli import run

    (tmp_path / "usermod.py").write_text(
        "import torch\n"
        "def head():\n"
        "    torch.manual_seed(0)\n"
        "    mha = torch.nn.MultiheadAttention(4, 1, batch_first=True, dtype=torch.float64).eval()\n"
        "    with torch.no_grad():\n"
        "        mha.in_proj_bias.normal_(0, 0.5)\n"
        "        mha.out_proj.bias.normal_(0, 0.5)\n"
        "    return mha, torch.randn(4, dtype=torch.float64)\n"
        "def broken():\n"
        "    return 3\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    rc, out, err = run(capsys, "learn", "single-head", "--torch", "usermod:head", "--biases", "--json", "--quiet")
    assert rc == 0, err
    result = json.loads(out)
    assert result["learner"] == "single-head-biased" and result["queries"] == 25
    assert result["measured_error"]["b"] <= 1e-12 and result["within_bound"] is True
    rc, _, err = run(capsys, "learn", "single-head", "--torch", "usermod:head", "--quiet")
    assert rc != 0 and "an output bias" in err
    rc, _, err = run(capsys, "learn", "single-head", "--torch", "usermod:broken", "--quiet")
    assert rc == 2 and "must return (module, readout)" in err
    rc, _, err = run(capsys, "learn", "single-head", "--torch", "usermod:head", "--model", "x.json", "--quiet")
    assert rc == 2 and "--model: does not apply with --torch" in err


def test_a_batched_function_answers_as_the_module_does_with_one_call_per_length():
    from exact.oracles import CallableOracle

    mha, w = _mha(8, batch_first=True, seed=3)
    calls = []

    def fn(X):  # (n, N, d) -> n answers
        calls.append(X.shape)
        with torch.no_grad():
            x = torch.as_tensor(X, dtype=torch.float64)
            out, _ = mha(x[:, -1:], x, x, need_weights=False)
        return (out[:, 0] * w).sum(dim=-1)

    oracle = CallableOracle(fn, d=8, accuracy="1e-12", batched=True)
    rng = np.random.default_rng(0)
    seqs = [rng.standard_normal((n, 8)) for n in (1, 2, 2, 3, 1)]
    ys = oracle.query_batch(seqs)
    assert oracle.count == 5 and sorted(calls) == [(1, 3, 8), (2, 1, 8), (2, 2, 8)]
    truth = native_model(mha, w)
    for X, y in zip(seqs, ys):
        assert abs(float(y) - truth.float(X)) < 1e-12
    from exact.learn import learn_single_head_biased

    r = learn_single_head_biased(CallableOracle(fn, d=8, accuracy="1e-13", batched=True), mode="float")
    err = max(abs(float(x) - float(y)) for x, y in zip(r.model.parameters(), truth.parameters()))
    assert err <= r.error_estimate and r.queries == 81


def test_a_batched_function_must_return_one_answer_per_sequence():
    from exact.errors import OracleInconsistent
    from exact.oracles import CallableOracle

    oracle = CallableOracle(lambda X: [0.5], d=2, accuracy=0, batched=True)
    with pytest.raises(OracleInconsistent, match="returned 1 answers for a batch of 2"):
        oracle.query_batch([[[1, 0]], [[0, 1]]])
    with pytest.raises(InvalidArgument, match="batched function takes numpy inputs"):
        CallableOracle(lambda X: 0, d=2, accuracy=0, inputs="fractions", batched=True)


@pytest.mark.parametrize("batch_first", [True, False])
def test_one_causal_pass_answers_every_prefix(batch_first):
    from exact.native import causal_prefix_answers

    mha, w = _mha(5, batch_first=batch_first, seed=4)
    truth = native_model(mha, w)
    X = np.random.default_rng(1).standard_normal((6, 5))
    ys = causal_prefix_answers(mha, w, X)
    assert len(ys) == 6
    for i, y in enumerate(ys):
        lo, hi = ball_interval(truth.exact(Sequence.from_rows(X[: i + 1].tolist())).ball(200))
        assert float(lo) - 1e-12 <= y <= float(hi) + 1e-12


def test_torch_top_left_causal_mask_is_another_function():
    """The alignment the docs warn about: with one query row, is_causal=True attends to the first key only."""
    import torch.nn.functional as F
    from torch.nn.attention.bias import causal_lower_right

    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, n, 4, dtype=torch.float64, generator=g) for n in (1, 3, 3))
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert torch.equal(top_left[0, 0, 0], v[0, 0, 0])
    assert torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(1, 3)),
                          F.scaled_dot_product_attention(q, k, v))


def test_measured_bounds_hold_and_make_float32_bounds_say_something_at_d_32():
    """bound="measured": each answer's error is its distance to the exact value of the module's
    weights.  The noisy learners' certified bounds then hold at about 1e-4·‖W‖_F (the derived
    worst-case bound gives 0.7–1·‖W‖_F there)."""
    d = 32
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, dtype=torch.float32).eval()
    w = torch.randn(d)
    truth = native_model(mha, w)
    o = TorchOracle(mha, w, bound="measured")
    rng = np.random.default_rng(5)
    seqs = [Sequence.from_rows(rng.standard_normal((n, d)).tolist()) for n in (1, 2, 3)]
    for X, y in zip(seqs, o.query_batch(seqs)):
        lo, hi = ball_interval(truth.exact(X).ball(300))
        yq = Fraction(float(y))  # exact arithmetic: a float difference would round
        assert max(yq - lo, hi - yq) <= Fraction(y.error) and y.error < TorchOracle(mha, w).query(X).error
    W = np.array(truth.to_numpy()[0])
    r = learn_noisy_frame(TorchOracle(mha, w, bound="measured"), w_bound=1, token_norm=1)
    err = np.linalg.norm(np.array(r.model.to_numpy()[0]) - W)
    assert err <= r.error_bound.W_frobenius < 0.1 * np.linalg.norm(W)
    with pytest.raises(InvalidArgument, match="bound: expected 'derived' or 'measured'"):
        TorchOracle(mha, w, bound="tight")
    two = TorchOracle(*_mha(4, 2), bound="measured")  # several heads with biases: measured against their model
    assert two.query([[1, 0, 0, 0], [0, 1, 0, 0]]).error < 1e-12


@pytest.mark.parametrize("bias", [True, False])
def test_a_module_s_w_c_and_whole_ov_circuit_come_from_its_output_vectors(bias):
    from exact.native import learn_module

    d = 8
    mha, _ = _mha(d, bias=bias, seed=6)
    m = learn_module(mha, seed=2, mode="float")
    P = mha.in_proj_weight.detach().numpy()
    Wo = mha.out_proj.weight.detach().numpy()
    bv = mha.in_proj_bias.detach().numpy()[2 * d:] if bias else np.zeros(d)
    bo = mha.out_proj.bias.detach().numpy() if bias else np.zeros(d)
    assert np.abs(m.ov - Wo @ P[2 * d:]).max() <= m.ov_error < 1e-12
    assert np.abs(m.bias - (Wo @ bv + bo)).max() <= m.ov_error
    truth = native_model(mha, torch.as_tensor(m.readout))
    W, c = np.array(truth.to_numpy()[0]), truth.biases_numpy()[0]
    est = m.head.error_estimate
    assert np.abs(m.W - W).max() <= est and np.abs(m.c - c).max() <= est
    assert m.queries == d * d + 2 * d + 1 + m.head.verification_queries  # the vectors cost no query
    with pytest.raises(InvalidArgument, match="learn_module takes one head"):
        learn_module(torch.nn.MultiheadAttention(4, 2).eval())
