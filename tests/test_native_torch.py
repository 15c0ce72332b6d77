"""Real torch models: nn.MultiheadAttention heads learned within their stated guarantees."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from exact import learn_noisy_frame, learn_single_head  # noqa: E402
from exact.errors import InvalidArgument, ShapeError  # noqa: E402
from exact.native import TorchOracle, native_head  # noqa: E402
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


def test_modules_outside_the_model_are_refused():
    with pytest.raises(InvalidArgument, match="num_heads=1"):
        TorchOracle(torch.nn.MultiheadAttention(4, 2, bias=False), torch.ones(4))
    with pytest.raises(InvalidArgument, match="bias=False"):
        TorchOracle(torch.nn.MultiheadAttention(4, 1), torch.ones(4))
    with pytest.raises(ShapeError, match="readout: expected a vector of length d = 4"):
        TorchOracle(torch.nn.MultiheadAttention(4, 1, bias=False), torch.ones(3))
    with pytest.raises(InvalidArgument, match="expected a torch.nn.MultiheadAttention"):
        TorchOracle(torch.nn.Linear(4, 4), torch.ones(4))
