"""Real ReLU networks as black boxes: ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))``.

The module computes ``g(x) = wᵀReLU(Ax + a) + b`` (``bias=False`` on either layer drops ``a`` or
``b``).  :func:`native_ffn` is that network exactly from the module's float weights (each float is
the binary rational it is); :class:`TorchFFNOracle` answers one-token value queries ``[x]`` by
running the module, each answer declared within a derived rounding bound: with ``u`` the unit
roundoff of the module's dtype and ``γ_k = k·u/(1 − k·u)``,

    |error| <= |w|ᵀ(γ_{d+1}(|A||x| + |a|) + u|A||x|) + γ_{m+1}(|w|ᵀ|r| + |b|),

the first layer's dot products (and, for float32, the rounding of the float64 query to the
module's dtype), ReLU 1-Lipschitz, then the readout's dot product; ``r`` is the hidden layer the
module computed.  A layer normalisation, another activation or a deeper stack is refused with the
cause named: the learners' class is one hidden ReLU layer.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .errors import InvalidArgument, MissingDependency, OracleInconsistent, ShapeError
from .ffn import ReLUFFN
from .oracles import BaseOracle, FloatAnswer
from .sequences import Sequence

__all__ = ["TorchFFNOracle", "native_ffn", "check_sequential", "ENCODER_LAYER"]

#: Why a TransformerEncoderLayer is refused, and what is supported instead.
ENCODER_LAYER = (
    "nn.TransformerEncoderLayer is not supported: its LayerNorm divides by the tokens' standard deviation, so the "
    "block is neither piecewise linear nor homogeneous, and no learner here covers it. Supported: "
    "nn.MultiheadAttention with a readout vector (TorchOracle(mha, readout)), nn.Sequential(nn.Linear(d, m), "
    "nn.ReLU(), nn.Linear(m, 1)) (TorchOracle(seq)), and a one-layer block of the two, with or without a "
    "residual (exact.native_block.torch_block(mha, seq, residual=...))")


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingDependency("TorchOracle needs torch: pip install 'exact-attention[torch]'") from None
    return torch


def check_sequential(module) -> tuple:
    """``(first Linear, second Linear)`` of a ``Linear, ReLU, Linear`` stack with one output, or
    :class:`~exact.errors.InvalidArgument` naming what differs."""
    torch = _torch()
    nn = torch.nn
    if isinstance(module, nn.TransformerEncoderLayer):
        raise InvalidArgument(ENCODER_LAYER)
    if not isinstance(module, nn.Sequential):
        raise InvalidArgument(f"module: expected nn.Sequential(nn.Linear, nn.ReLU, nn.Linear), got "
                              f"{type(module).__name__}")
    layers = list(module)
    kinds = [type(x).__name__ for x in layers]
    if len(layers) != 3 or not (isinstance(layers[0], nn.Linear) and isinstance(layers[1], nn.ReLU)
                                and isinstance(layers[2], nn.Linear)):
        raise InvalidArgument(f"module: expected nn.Sequential(nn.Linear, nn.ReLU, nn.Linear) (one hidden ReLU layer), "
                              f"got nn.Sequential({', '.join(kinds)})")
    first, last = layers[0], layers[2]
    if last.out_features != 1 or last.in_features != first.out_features:
        raise ShapeError(f"module: expected Linear({first.in_features}, m), ReLU, Linear(m, 1); got Linear("
                         f"{first.in_features}, {first.out_features}), Linear({last.in_features}, {last.out_features})")
    if first.weight.dtype != last.weight.dtype or first.weight.dtype not in (torch.float64, torch.float32):
        raise InvalidArgument(f"module: expected a float64 or float32 module (both layers alike), got "
                              f"{first.weight.dtype} and {last.weight.dtype}")
    return first, last


def _arrays(module) -> tuple:
    first, last = check_sequential(module)
    torch = _torch()

    def arr(t):
        return t.detach().to(torch.float64).cpu().numpy()

    A = arr(first.weight)
    a = arr(first.bias) if first.bias is not None else np.zeros(A.shape[0])
    w = arr(last.weight)[0]
    b = float(arr(last.bias)[0]) if last.bias is not None else 0.0
    if not all(np.isfinite(x).all() for x in (A, a, w)) or not np.isfinite(b):
        raise InvalidArgument("module: the weights and biases must be finite")
    return A, a, w, b


def native_ffn(module) -> ReLUFFN:
    """The network the module computes, exactly from its weights.

    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> seq = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU(), torch.nn.Linear(2, 1)).double()
    >>> net = native_ffn(seq)
    >>> x = torch.tensor([[0.5, -1.0, 2.0]], dtype=torch.float64)
    >>> abs(float(net.value([0.5, -1, 2])) - float(seq(x).detach())) < 1e-15
    True
    """
    A, a, w, b = _arrays(module)
    biased = bool(a.any()) or b != 0
    exact = lambda v: [Fraction(float(x)) for x in v]  # noqa: E731
    if not biased:
        return ReLUFFN([exact(r) for r in A], exact(w))
    return ReLUFFN([exact(r) for r in A], exact(w), a=exact(a), b=Fraction(b))


class TorchFFNOracle(BaseOracle):
    """One-token value queries answered by a torch ``Linear, ReLU, Linear`` stack (``TorchOracle(seq)``
    builds one), each answer a :class:`~exact.oracles.FloatAnswer` with the derived bound of the module
    docstring."""

    def __init__(self, module, *, budget: int | None = None):
        torch = _torch()
        A, a, w, b = _arrays(module)
        if module.training:
            module.eval()  # no dropout in the stack: eval changes nothing, but states the intent
        super().__init__(A.shape[1], budget=budget)
        self._module = module
        self.dtype = module[0].weight.dtype
        self._u = 2.0**-53 if self.dtype == torch.float64 else 2.0**-24
        self._absA, self._absa, self._absw, self._absb = np.abs(A), np.abs(a), np.abs(w), abs(b)
        self._A, self._a = A, a
        self.m = A.shape[0]

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        torch = _torch()
        if any(s.length != 1 for s in seqs):
            raise ShapeError("X: a ReLU network is queried on one-token sequences [x]")
        X = np.stack([s.to_numpy()[0] for s in seqs])
        x = torch.as_tensor(X, dtype=self.dtype)
        with torch.no_grad():
            hidden = torch.relu(self._module[0](x))
            y = self._module[2](hidden)[:, 0].to(torch.float64).cpu().numpy()
            r = hidden.to(torch.float64).cpu().numpy()
        u = self._u
        d, m = self.d, self.m

        def gamma(k: int) -> float:
            return k * u / (1 - k * u)

        ax = np.abs(X) @ self._absA.T
        ez = gamma(d + 1) * (ax + self._absa) + (u * ax if self.dtype != torch.float64 else 0.0)
        e = ez @ self._absw + gamma(m + 1) * (np.abs(r) @ self._absw + self._absb)
        e = e * (1 + 4 * u) + np.abs(y) * 2.0**-53
        if not (np.isfinite(y).all() and np.isfinite(e).all()):
            raise OracleInconsistent("the torch module answered a non-finite value (overflow?)")
        return [FloatAnswer(float(v), float(err)) for v, err in zip(y, e)]

    def _answer(self, seq: Sequence):
        return self._answer_batch([seq])[0]
