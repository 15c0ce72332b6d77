"""A one-layer block built from torch modules as a black box: ``nn.MultiheadAttention`` (one head),
then ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))``, with or without a residual.

:func:`torch_block` builds the block as an ``nn.Module``: for tokens ``X`` (last token ``x_N`` the
query), ``h = MHA(x_N; X, X)`` and ``T(X) = ffn(h)``, or ``ffn(x_N + h)`` with the residual.
:func:`native_block` maps its weights, exactly, to the :class:`~exact.transformer.Transformer` it
computes (``docs/ffn.md``, "The one-layer Transformer with biases and a residual"):

    W = W_KᵀW_Q/√r,  c = W_Kᵀb_q/√r,  V = W_O W_V,  μ = W_O b_v + b_o,

and the FFN's ``A``, ``a``, ``w``, ``b`` (``b_k`` cancels in the softmax).  :class:`TorchBlockOracle`
answers value queries by running the block; each answer declares its distance to the exact value of
that model (evaluated as an exact ball, rounded up): rigorous, and as tight as a declaration can be.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .errors import InvalidArgument, OracleInconsistent
from .numbers import ball_interval
from .oracles import BaseOracle, FloatAnswer
from .sequences import Sequence

__all__ = ["torch_block", "native_block", "TorchBlockOracle", "is_block"]


def _torch():
    from .native import _torch as load

    return load()


_BLOCK_CLASS = None


def _block_class():
    """The ``nn.Module`` class of :func:`torch_block` (defined on first use: torch is an extra)."""
    global _BLOCK_CLASS
    if _BLOCK_CLASS is None:
        torch = _torch()

        class TorchBlock(torch.nn.Module):  # type: ignore[name-defined]
            """``ffn(h)`` or ``ffn(x_N + h)`` with ``h = mha(x_N; X, X)``, for ``X`` of shape ``(batch, N, d)``."""

            _exact_block = True  # how TorchOracle and native_model recognise it

            def __init__(self, mha, ffn, residual: bool):
                super().__init__()
                self.mha, self.ffn, self.residual = mha, ffn, residual

            def exact_model(self):
                """:func:`native_block` of this block."""
                return native_block(self)

            def exact_oracle(self, *, budget: int | None = None):
                """A :class:`TorchBlockOracle` of this block."""
                return TorchBlockOracle(self, budget=budget)

            def forward(self, X):
                first = bool(getattr(self.mha, "batch_first", False))
                x = X if first else X.transpose(0, 1)
                q = x[:, -1:] if first else x[-1:]
                h, _ = self.mha(q, x, x, need_weights=False)
                h = h[:, 0] if first else h[0]
                last = X[:, -1]
                return self.ffn(last + h if self.residual else h)[:, 0]

        _BLOCK_CLASS = TorchBlock
    return _BLOCK_CLASS


def torch_block(mha, ffn, *, residual: bool = False):
    """The block ``T(X) = ffn(h)`` (``ffn(x_N + h)`` with ``residual=True``), ``h = mha(x_N; X, X)``.

    ``mha`` is an ``nn.MultiheadAttention`` with one head (biases or not, eval mode) and ``ffn`` an
    ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))``, both of one float dtype.

    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mha = torch.nn.MultiheadAttention(3, 1, batch_first=True, dtype=torch.float64).eval()
    >>> ffn = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1)).double()
    >>> block = torch_block(mha, ffn, residual=True)
    >>> X = [[1, 0, 2], [0, -1, 1]]
    >>> y = float(block(torch.tensor([X], dtype=torch.float64))[0].detach())
    >>> abs(y - float(native_block(block).ball(X).mid())) < 1e-12
    True
    """
    from .native import check_module
    from .native_ffn import check_sequential

    if not isinstance(residual, bool):
        raise InvalidArgument(f"residual: expected True or False, got {residual!r}")
    check_module(mha)
    if mha.num_heads != 1:
        raise InvalidArgument(f"mha: a one-layer block here has one head, got num_heads = {mha.num_heads} (the "
                              "Transformer model's attention is a single softmax head)")
    first, _ = check_sequential(ffn)
    if first.in_features != mha.embed_dim:
        raise InvalidArgument(f"ffn: expected Linear({mha.embed_dim}, m) after the attention's embed_dim "
                              f"{mha.embed_dim}, got Linear({first.in_features}, {first.out_features})")
    if first.weight.dtype != mha.in_proj_weight.dtype:
        raise InvalidArgument(f"ffn: expected the attention's dtype {mha.in_proj_weight.dtype}, got {first.weight.dtype}")
    return _block_class()(mha, ffn, residual)


def is_block(module) -> bool:
    """Whether ``module`` is a block built by :func:`torch_block`."""
    return _BLOCK_CLASS is not None and isinstance(module, _BLOCK_CLASS)


def native_block(block):
    """The :class:`~exact.transformer.Transformer` a :func:`torch_block` block computes, exactly from
    its float weights (the score scale is the float64 ``1/√r`` torch multiplies by)."""
    from .native import _weights
    from .native_ffn import native_ffn
    from .transformer import Transformer

    if not is_block(block):
        raise InvalidArgument(f"block: expected a block built by exact.native_block.torch_block, got "
                              f"{type(block).__name__}")
    d = block.mha.embed_dim
    wt = _weights(block.mha, np.ones(d))
    scale = Fraction(1 / math.sqrt(wt.r))
    q = [[Fraction(float(x)) for x in row] for row in wt.Wq[0]]  # r × d
    k = [[Fraction(float(x)) for x in row] for row in wt.Wk[0]]
    v = [[Fraction(float(x)) for x in row] for row in wt.Wv[0]]  # r × d
    o = [[Fraction(float(x)) for x in row] for row in wt.Wo[0]]  # d × r
    bq = [Fraction(float(x)) for x in wt.bq[0]]
    bv = [Fraction(float(x)) for x in wt.bv[0]]
    bo = [Fraction(float(x)) for x in wt.bo]
    r = len(q)
    W = [[scale * sum((k[t][i] * q[t][j] for t in range(r)), Fraction(0)) for j in range(d)] for i in range(d)]
    c = [scale * sum((k[t][i] * bq[t] for t in range(r)), Fraction(0)) for i in range(d)]
    V = [[sum((o[i][t] * v[t][j] for t in range(r)), Fraction(0)) for j in range(d)] for i in range(d)]
    mu = [sum((o[i][t] * bv[t] for t in range(r)), Fraction(0)) + bo[i] for i in range(d)]
    net = native_ffn(block.ffn)
    return Transformer(W, net.A, net.w, c=c, V=V, mu=mu, a=net.a, b=net.b, residual=block.residual)


class TorchBlockOracle(BaseOracle):
    """Value queries answered by a :func:`torch_block` block (``TorchOracle(block)`` builds one); each
    answer a :class:`~exact.oracles.FloatAnswer` whose error is its distance to the exact value of
    :func:`native_block`, rounded up (an exact evaluation per query)."""

    def __init__(self, block, *, budget: int | None = None):
        self._truth = native_block(block)
        super().__init__(self._truth.d, budget=budget)
        self._block = block
        self.dtype = block.mha.in_proj_weight.dtype

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        torch = _torch()
        out = []
        for s in seqs:
            X = s.to_numpy()
            with torch.no_grad():
                y = float(self._block(torch.as_tensor(X[None], dtype=self.dtype))[0].to(torch.float64))
            if not math.isfinite(y):
                raise OracleInconsistent(f"the torch block answered {y}")
            lo, hi = ball_interval(self._truth.exact(s).ball(160))
            gap = max(Fraction(y) - lo, hi - Fraction(y))  # to the ball's farthest point: rigorous
            err = float(gap)
            out.append(FloatAnswer(y, math.nextafter(err if Fraction(err) >= gap else math.nextafter(err, math.inf),
                                                     math.inf)))
        return out

    def _answer(self, seq: Sequence):
        return self._answer_batch([seq])[0]
