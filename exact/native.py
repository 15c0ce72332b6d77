"""Real models as black boxes: a torch ``nn.MultiheadAttention`` head with a readout vector.

The black box is ``f(X) = wᵀ·MHA(x_N; X, X)``: one attention head (``num_heads=1``,
``bias=False``) whose query is the last token and whose keys and values are all tokens,
read out by ``w``.  Its identifiable parameters are those of a single head
(:meth:`~exact.models.SingleHead.from_native`)::

    W = W_Kᵀ W_Q / √d,   v = W_Vᵀ W_Oᵀ w.

:class:`TorchOracle` answers value queries by running the module (it needs the
``torch`` extra: ``pip install 'exact-attention[torch]'``).  What it guarantees depends
on the module's precision:

* **float64**: each answer is declared within ``γ·M(X)``, a standard rounding bound for
  the chain of products, sums and the softmax (``γ = (4d + 16)·2⁻⁵³``, ``M(X)`` the same
  computation on absolute values); float mode and the noisy learners use it.
* **float32**: the same bound with ``2⁻²⁴``: the answers form a rounding oracle, and the
  noisy learners certify their bound from it.
* **bit-exact**: a float64 module whose merged ``W`` and ``v`` lie on a declared grid
  (say float32) is learned exactly in certified mode with that grid.

The bound is *derived* (its constant covers every rounding step of the computation
above with room to spare); it is the oracle's declaration, and the tests check it
against exact evaluation of the same weights.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .errors import InvalidArgument, MissingDependency, OracleInconsistent, ShapeError
from .models import SingleHead
from .oracles import BaseOracle, FloatAnswer
from .sequences import Sequence

__all__ = ["TorchOracle", "native_head"]


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingDependency("TorchOracle needs torch: pip install 'exact-attention[torch]'") from None
    return torch


def _weights(mha, readout):
    """``(W_Q, W_K, W_V, W_O, w)`` as float64 numpy arrays, after checking the module's shape."""
    torch = _torch()
    if not isinstance(mha, torch.nn.MultiheadAttention):
        raise InvalidArgument(f"mha: expected a torch.nn.MultiheadAttention, got {type(mha).__name__}")
    if mha.num_heads != 1:
        raise InvalidArgument(f"mha: expected num_heads=1 (a single head), got {mha.num_heads}")
    if mha.in_proj_bias is not None or mha.out_proj.bias is not None or mha.bias_k is not None:
        raise InvalidArgument("mha: expected bias=False (and no bias_k/bias_v): biases are outside the model f")
    if not mha._qkv_same_embed_dim:
        raise InvalidArgument("mha: expected kdim = vdim = embed_dim")
    d = mha.embed_dim
    P = mha.in_proj_weight.detach().to(torch.float64).cpu().numpy()
    Wq, Wk, Wv = P[:d], P[d : 2 * d], P[2 * d :]
    Wo = mha.out_proj.weight.detach().to(torch.float64).cpu().numpy()
    w = readout.detach().to(torch.float64).cpu().numpy() if hasattr(readout, "detach") else np.asarray(readout, float)
    if w.shape != (d,):
        raise ShapeError(f"readout: expected a vector of length d = {d}, got shape {w.shape}")
    if not all(np.isfinite(a).all() for a in (Wq, Wk, Wv, Wo, w)):
        raise InvalidArgument("mha: the weights must be finite")
    return Wq, Wk, Wv, Wo, w


def native_head(mha, readout) -> SingleHead:
    """The single head ``(W, v)`` a torch module computes, exactly from its (float) weights.

    The score scale is the float64 value of ``1/√d`` torch multiplies by; for a float32
    module the scores are scaled in float32, so ``W`` is exact only up to that rounding.
    """
    Wq, Wk, Wv, Wo, w = _weights(mha, readout)
    d = Wq.shape[0]
    return SingleHead.from_native(Wq.tolist(), Wk.tolist(), Wv.tolist(), Wo.tolist(), w.tolist(),
                                  scale=Fraction(1 / math.sqrt(d)))


class TorchOracle(BaseOracle):
    """Value queries answered by a torch ``nn.MultiheadAttention`` head and a readout vector.

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        ``num_heads=1``, ``bias=False``; its dtype (float32 or float64) is the model's.
    readout : tensor or array of length d
    budget : int, optional

    Each answer is a :class:`~exact.oracles.FloatAnswer` whose ``.error`` is the derived
    rounding bound of the module's computation on that query (see the module docstring).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mha = torch.nn.MultiheadAttention(2, 1, bias=False, dtype=torch.float64)
    >>> o = TorchOracle(mha, torch.tensor([1.0, -1.0], dtype=torch.float64))
    >>> y = o.query([[1, 0], [0, 1]])
    >>> truth = native_head(mha, torch.tensor([1.0, -1.0]))
    >>> abs(float(y) - float(truth.float(np.array([[1.0, 0.0], [0.0, 1.0]])))) <= y.error
    True
    """

    def __init__(self, mha, readout, *, budget: int | None = None):
        torch = _torch()
        Wq, Wk, Wv, Wo, w = _weights(mha, readout)
        super().__init__(mha.embed_dim, budget=budget)
        self._mha = mha
        self.dtype = mha.in_proj_weight.dtype
        if self.dtype not in (torch.float32, torch.float64):
            raise InvalidArgument(f"mha: expected a float32 or float64 module, got {self.dtype}")
        self._readout = torch.as_tensor(w, dtype=self.dtype)
        self._abs = (np.abs(Wq), np.abs(Wk), np.abs(Wv), np.abs(Wo), np.abs(w))
        unit = 2.0**-53 if self.dtype == torch.float64 else 2.0**-24
        self._gamma = (4 * self.d + 16) * unit

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        """One batched module call per sequence length (the module sees each query on its own)."""
        torch = _torch()
        out: list = [None] * len(seqs)
        by_len: dict[int, list[int]] = {}
        for i, s in enumerate(seqs):
            by_len.setdefault(s.length, []).append(i)
        for idx in by_len.values():
            Xs = [seqs[i].to_numpy() for i in idx]
            x = torch.as_tensor(np.stack(Xs, axis=1), dtype=self.dtype)  # (N, batch, d)
            with torch.no_grad():
                o, _ = self._mha(x[-1:], x, x, need_weights=False)
                ys = (o[0] * self._readout).sum(dim=-1).to(torch.float64).cpu().numpy()
            for i, X, y in zip(idx, Xs, ys.tolist()):
                if not math.isfinite(y):
                    raise OracleInconsistent(f"the torch module answered {y} to query #{self._count + i + 1}")
                out[i] = FloatAnswer(y, self._bound(X))
        return out

    def _answer(self, seq: Sequence):
        return self._answer_batch([seq])[0]

    def _bound(self, X: np.ndarray) -> float:
        """``γ·M(X)``: the computation's rounding bound, from the same chain on absolute values.

        Scores ``s_i = (W_K x_i)·(W_Q x_N)/√d`` err by at most ``γ·S`` with ``S`` their
        absolute-value counterpart; a score error ``δ`` moves the softmax average of the
        values by at most ``δ·(max − min of the values)``; the values ``wᵀW_O W_V x_i`` err
        by at most ``γ·V`` with ``V`` their absolute counterpart; the weighted sum adds
        ``γ·V`` again.  The result is multiplied by ``1 + 2γ`` and rounded up.
        """
        aq, ak, av, ao, aw = self._abs
        Ax = np.abs(X)
        S = (Ax @ ak.T) @ (aq @ Ax[-1]) / math.sqrt(self.d)
        vals_abs = Ax @ (av.T @ (ao.T @ aw))
        spread = 2 * float(vals_abs.max())
        bound = self._gamma * (float(S.max()) * spread + 2 * float(vals_abs.max()) + 1e-300)
        return math.nextafter(bound * (1 + 2 * self._gamma), math.inf)
