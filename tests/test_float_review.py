"""Float mode and the torch adapters against the ways a review broke them: a float result never
comes back with an error above its estimate, and bad input gets a clear error."""

from fractions import Fraction

import numpy as np
import pytest

from exact.errors import InvalidNumber, OracleInconsistent, PrecisionInsufficient, ShapeError
from exact.learn import learn_low_rank, learn_single_head, learn_single_head_biased
from exact.models import SingleHead
from exact.numbers import ball_interval
from exact.oracles import CallableOracle, ExactOracle, FloatOracle
from exact.sequences import Sequence


def _err(result, truth) -> float:
    return max(abs(float(x) - float(y)) for x, y in zip(result.model.parameters(), truth.parameters()))


@pytest.mark.parametrize("learn", [learn_single_head, learn_single_head_biased])
def test_a_saturated_probe_hidden_by_the_noise_is_never_read_as_a_logit(learn):
    """W = 10⁶ saturates every probe; answers off by 1.2% of v, in the direction that makes the
    weight read 0.95, once hid it (W came back as 12 with an estimate of 4)."""
    truth = SingleHead([[10**6]], [1])
    acc = 0.012

    def fn(X):
        y = float(truth.float(np.asarray(X, float)))
        return y + acc if len(X) == 1 else (y - acc if len(X) == 2 else y)

    try:
        r = learn(CallableOracle(fn, d=1, accuracy=acc), mode="float")
    except PrecisionInsufficient:
        return  # refused: the answers are too coarse for the signal at every scale
    assert _err(r, truth) <= r.error_estimate


def test_an_answer_beyond_float64_is_refused_cleanly():
    with pytest.raises(OracleInconsistent, match="beyond float64's range"):
        learn_single_head(ExactOracle(SingleHead([[10**400]], [1])), mode="float")
    with pytest.raises(OracleInconsistent, match="beyond float64's range"):
        learn_single_head(CallableOracle(lambda X: 1.0 if len(X) == 1 else 10**400, d=2, accuracy=1e-9), mode="float")


def test_low_rank_float_with_a_rank_above_the_truth_reports_the_smaller_one():
    for W, rank in (([[0]], 1), ([[0, 0], [0, 0]], 2), (np.diag([1.0, 0, 0]).tolist(), 3),
                    (np.diag([1.0, 0, 0, 0]).tolist(), 2)):
        truth = SingleHead(W, [1] * len(W))
        r = learn_low_rank(FloatOracle(truth), rank=rank, mode="float", seed=0)
        assert r.details.rank <= rank and _err(r, truth) <= r.error_estimate


def test_low_rank_float_rank_zero_keeps_the_errors_of_v():
    truth = SingleHead([[0] * 3] * 3, [1, -1, 1])
    o = CallableOracle(lambda X: float(truth.float(np.asarray(X, float))) + 0.9e-6, d=3, accuracy=1e-6)
    r = learn_low_rank(o, rank=0, mode="float", seed=0)
    assert 8e-7 < _err(r, truth) <= r.error_estimate


def test_low_rank_float_always_states_the_rank_it_rests_on():
    rng = np.random.default_rng(0)
    K, Q = rng.standard_normal((2, 12)) / 4, rng.standard_normal((2, 12)) / 4
    truth = SingleHead((K.T @ Q).tolist(), rng.standard_normal(12).tolist())
    assert learn_low_rank(FloatOracle(truth), rank=2, mode="float", seed=0).assumptions == ("among heads of rank <= 2",)
    found = learn_low_rank(FloatOracle(truth), mode="float", seed=0)
    (stated,) = found.assumptions
    assert stated.startswith("rank(W) = 2, found at a singular-value gap") and "can hide" in stated


torch = pytest.importorskip("torch")
from exact.native import TorchOracle, causal_prefix_answers, native_model  # noqa: E402


@pytest.mark.parametrize("dtype, n", [(torch.float32, 10_000), (torch.float64, 3_000)])
def test_the_rounding_bound_grows_with_the_sequence_length(dtype, n):
    """Many equal tokens: the exact value is one token's, and torch's sums over N tokens round N times."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(2, 1, bias=False, batch_first=True, dtype=dtype).eval()
    w = torch.tensor([1.0, 1.0], dtype=torch.float64)
    x = np.float32([0.3, -0.7]).astype(float)
    y = TorchOracle(mha, w).query(np.tile(x, (n, 1)))
    lo, hi = ball_interval(native_model(mha, w).exact(Sequence.from_rows([x.tolist()])).ball(100))
    assert max(Fraction(float(y)) - lo, hi - Fraction(float(y))) <= Fraction(y.error)


def test_the_rounding_bound_covers_underflow():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(4, 1, bias=False, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.mul_(1e-22)
        mha.out_proj.weight.mul_(1e-22)
    w = torch.randn(4, dtype=torch.float64)
    X = Sequence.from_rows(np.random.default_rng(0).standard_normal((3, 4)).tolist())
    y = TorchOracle(mha, w).query(X)
    lo, hi = ball_interval(native_model(mha, w).exact(X).ball(200))
    assert max(Fraction(float(y)) - lo, hi - Fraction(float(y))) <= Fraction(y.error)


def test_one_token_answers_carry_no_softmax_term():
    """A float32 module with weights ~1000: the one-token answers' bounds once swamped v ('v = 0')."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(4, 1, bias=False, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.mul_(1000)
        mha.out_proj.weight.mul_(1000)
    w = torch.randn(4, dtype=torch.float64)
    truth = native_model(mha, w)
    r = learn_single_head(TorchOracle(mha, w), mode="float")
    assert max(abs(float(a) - float(b)) for a, b in zip(r.model.v, truth.v)) <= r.error_estimate


def test_bad_input_to_the_torch_helpers_gets_a_clear_error():
    mha = torch.nn.MultiheadAttention(4, 1, dtype=torch.float64).eval()
    w = torch.ones(4, dtype=torch.float64)
    with pytest.raises(ShapeError, match="readout: expected a vector of 4 numbers"):
        TorchOracle(mha, "abcd")
    with pytest.raises(ShapeError, match=r"X: expected an \(N, 4\) array of numbers"):
        causal_prefix_answers(mha, w, [[1, 2], [3]])
    with pytest.raises(InvalidNumber, match="finite"):
        causal_prefix_answers(mha, w, [[1, 2, 3, float("nan")]])
    with pytest.raises(OracleInconsistent, match="returned dict answers"):
        CallableOracle(lambda X: {0: 1.0}, d=2, accuracy=0, batched=True).query([[1, 0]])


def test_the_command_line_refuses_a_module_of_another_kind(tmp_path, monkeypatch, capsys):
    from test_cli import run

    (tmp_path / "twoheads.py").write_text(
        "import torch\n"
        "def make():\n"
        "    return torch.nn.MultiheadAttention(4, 2).eval(), torch.ones(4)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    rc, _, err = run(capsys, "learn", "single-head", "--torch", "twoheads:make", "--quiet")
    assert rc == 2 and "learner 'single-head' learns single-head models, and this module is a multi-head" in err


def test_with_measured_bounds_a_two_head_float32_module_is_not_taken_for_one_head():
    """From the derived float32 bound the estimate is about 1e-3 and two verification queries can
    miss a second head; measured bounds narrow the estimate, and the checks catch it."""
    from exact.learn import learn_single_head

    for seed in range(3):
        torch.manual_seed(seed)
        mha = torch.nn.MultiheadAttention(4, 2, bias=False).eval()
        w = torch.randn(4, dtype=torch.float64)
        with pytest.raises(OracleInconsistent, match="not a single head"):
            learn_single_head(TorchOracle(mha, w, bound="measured"), mode="float", check_seed=seed)
