"""Real models as black boxes: a torch ``nn.MultiheadAttention`` with a readout vector.

The black box is ``f(X) = wᵀ·MHA(x_N; X, X)``: self-attention whose query is the last token
and whose keys and values are all tokens, read out by ``w``.  Every self-attention module in
eval mode is accepted: any ``num_heads``, ``bias`` on or off, ``batch_first`` either way.
Its identifiable parameters (:func:`native_model`) are, for one head of dimension ``r``,

    W = W_KᵀW_Q/√r,   c = W_Kᵀb_q/√r,   v = W_VᵀW_Oᵀw,   b = wᵀ(W_O b_v + b_o)

(``docs/biases.md``; ``b_k`` cancels), and for ``H`` bias-free heads one ``(W_h, v_h)`` per head
(a :class:`~exact.multihead.MultiHead`).

:class:`TorchOracle` answers value queries by running the module (it needs the ``torch``
extra: ``pip install 'exact-attention[torch]'``).  What it guarantees depends on the
module's precision:

* **float64**: each answer is declared within ``γ·M(X)``, a standard rounding bound for
  the chain of products, sums and the softmax (``γ = (4d + 16)·2⁻⁵³``, ``M(X)`` the same
  computation on absolute values); float mode and the noisy learners use it.
* **float32**: the same bound with ``2⁻²⁴``: the answers form a rounding oracle, and the
  noisy learners certify their bound from it.  Half-precision modules are refused: their
  narrow exponent range lets the learners' small probe tokens underflow, which a relative
  bound does not cover.

The readout is applied in float64 to the module's output, exactly as given.
* **bit-exact**: a float64 module whose merged parameters lie on a declared grid (say
  float32) is learned exactly in certified mode with that grid.

The bound is *derived* (its constant covers every rounding step of the computation
above with room to spare); it is the oracle's declaration, and the tests check it
against exact evaluation of the same weights.

Refused, each with the cause named: another module class, ``kdim``/``vdim`` other than
``embed_dim``, a sink token (``add_zero_attn`` or ``add_bias_kv``: one more key that no head
of the model has), and training mode with ``dropout > 0`` (random answers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .errors import InvalidArgument, InvalidNumber, MissingDependency, OracleInconsistent, ShapeError
from .models import SingleHead
from .numbers import ball_interval
from .oracles import BaseOracle, FloatAnswer
from .sequences import Sequence

__all__ = ["TorchOracle", "native_head", "native_model", "torch_black_box", "causal_prefix_answers", "learn_module",
           "ModuleResult"]


def _torch():
    try:
        import torch
    except ImportError:
        raise MissingDependency("TorchOracle needs torch: pip install 'exact-attention[torch]'") from None
    return torch


@dataclass(frozen=True)
class _Weights:
    """A module's weights in float64, split by head: ``Wq[h]`` is head ``h``'s ``r×d`` query map."""

    d: int
    H: int
    r: int
    Wq: list
    Wk: list
    Wv: list
    Wo: list  # head h's d×r block of the output map
    w: np.ndarray
    bq: list  # per head, length r (zeros without bias)
    bk: list
    bv: list
    bo: np.ndarray
    biased: bool


def check_module(mha) -> None:
    """Refuse, naming the cause, a module that is not self-attention as the model defines it."""
    torch = _torch()
    if isinstance(mha, torch.nn.TransformerEncoderLayer):
        from .native_ffn import ENCODER_LAYER

        raise InvalidArgument(ENCODER_LAYER)
    if not isinstance(mha, torch.nn.MultiheadAttention):
        raise InvalidArgument(f"mha: expected a torch.nn.MultiheadAttention, got {type(mha).__name__}; wrap other "
                              "modules' forward pass in a CallableOracle")
    if not mha._qkv_same_embed_dim:
        raise InvalidArgument("mha: expected kdim = vdim = embed_dim (self-attention); a module with other key or "
                              "value widths is not a head of the model: wrap its forward pass in a CallableOracle")
    if mha.add_zero_attn or mha.bias_k is not None or mha.bias_v is not None:
        what = "add_zero_attn" if mha.add_zero_attn else "add_bias_kv"
        raise InvalidArgument(f"mha: {what} adds a sink token (one more key with no token of its own), which no "
                              "head of the model has; build the module without it, or wrap it in a CallableOracle")
    if mha.training and mha.dropout > 0:
        raise InvalidArgument(f"mha: the module is in training mode with dropout = {mha.dropout}, so its answers are "
                              "random; call mha.eval() first")


def _weights(mha, readout) -> _Weights:
    check_module(mha)
    torch = _torch()
    d, H = mha.embed_dim, mha.num_heads
    r = d // H

    def arr(t):
        return t.detach().to(torch.float64).cpu().numpy()

    P = arr(mha.in_proj_weight)
    Wo = arr(mha.out_proj.weight)
    try:
        w = arr(readout) if hasattr(readout, "detach") else np.asarray(readout, dtype=float)
    except (TypeError, ValueError):
        raise ShapeError(f"readout: expected a vector of {d} numbers, got {type(readout).__name__}") from None
    if w.shape != (d,):
        raise ShapeError(f"readout: expected a vector of length d = {d}, got shape {w.shape}")
    biased = mha.in_proj_bias is not None or mha.out_proj.bias is not None
    pb = arr(mha.in_proj_bias) if mha.in_proj_bias is not None else np.zeros(3 * d)
    bo = arr(mha.out_proj.bias) if mha.out_proj.bias is not None else np.zeros(d)
    if not all(np.isfinite(a).all() for a in (P, Wo, w, pb, bo)):
        raise InvalidArgument("mha: the weights and biases must be finite")
    rows = [slice(h * r, (h + 1) * r) for h in range(H)]
    return _Weights(d, H, r, [P[:d][s] for s in rows], [P[d:2 * d][s] for s in rows], [P[2 * d:][s] for s in rows],
                    [Wo[:, s] for s in rows], w, [pb[:d][s] for s in rows], [pb[d:2 * d][s] for s in rows],
                    [pb[2 * d:][s] for s in rows], bo, biased)


def _head(wt: _Weights, h: int, scale: Fraction, with_b: bool) -> SingleHead:
    """Head ``h`` merged exactly from its float weights (the output bias only when ``with_b``)."""
    tl = lambda a: a.tolist()  # noqa: E731
    if not wt.biased:
        return SingleHead.from_native(tl(wt.Wq[h]), tl(wt.Wk[h]), tl(wt.Wv[h]), tl(wt.Wo[h]), tl(wt.w), scale=scale)
    return SingleHead.from_native(tl(wt.Wq[h]), tl(wt.Wk[h]), tl(wt.Wv[h]), tl(wt.Wo[h]), tl(wt.w), scale=scale,
                                  b_q=tl(wt.bq[h]), b_k=tl(wt.bk[h]), b_v=tl(wt.bv[h]),
                                  b_o=tl(wt.bo) if with_b else None)


def native_model(mha, readout=None):
    """The identifiable model a torch module computes, exactly from its (float) weights.

    An ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))`` (no readout) gives its
    :class:`~exact.ffn.ReLUFFN` (:func:`~exact.native_ffn.native_ffn`).

    One head gives a :class:`~exact.models.SingleHead` (with ``c`` and ``b`` when the module has
    biases); several heads give a :class:`~exact.multihead.MultiHead` (with a ``c_h`` per head and
    ``b = wᵀ(Σ_h W_O,h b_v,h + b_o)`` when the module has biases).  The score scale
    is the float64 value of ``1/√r`` that torch multiplies by; for a float32 module the scores are
    scaled in float32, so ``W`` is exact only up to that rounding.

    Raises
    ------
    InvalidArgument
        For every module the oracle refuses.
    """
    if getattr(mha, "_exact_block", False):  # exact.native_block.torch_block: the block maps itself
        if readout is not None:
            raise InvalidArgument("readout: a one-layer block has one output; pass no readout")
        return mha.exact_model()
    if _is_sequential(mha):
        from .native_ffn import native_ffn

        if readout is not None:
            raise InvalidArgument("readout: an nn.Sequential ReLU network has one output; pass no readout")
        return native_ffn(mha)
    if readout is None:
        check_module(mha)  # a module of another class is named first
        raise InvalidArgument("readout: an nn.MultiheadAttention is read out by a vector w of length embed_dim")
    wt = _weights(mha, readout)
    scale = Fraction(1 / math.sqrt(wt.r))
    if wt.H == 1:
        return _head(wt, 0, scale, True)
    from .multihead import MultiHead

    # each head's b is wᵀW_O,h b_v,h; the output projection's bias enters once (head 1's)
    return MultiHead([_head(wt, h, scale, h == 0) for h in range(wt.H)])


def native_head(mha, readout) -> SingleHead:
    """The single head ``(W, v)`` (and ``c``, ``b``) of a module with ``num_heads=1``: :func:`native_model`."""
    if getattr(mha, "num_heads", 1) != 1:
        raise InvalidArgument(f"mha: native_head takes num_heads=1, got {mha.num_heads}; use native_model")
    return native_model(mha, readout)


def _is_sequential(module) -> bool:
    try:
        import torch
    except ImportError:
        return False
    return isinstance(module, torch.nn.Sequential)


class TorchOracle(BaseOracle):
    """Value queries answered by a torch ``nn.MultiheadAttention`` and a readout vector, or by an
    ``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))`` (then ``TorchOracle(seq)``
    is a :class:`~exact.native_ffn.TorchFFNOracle`: one-token queries, derived rounding bounds).

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        Self-attention (``kdim = vdim = embed_dim``), any ``num_heads``, ``bias`` on or off,
        ``batch_first`` either way, no sink token, not dropping out; its dtype (float32 or
        float64) is the model's.
    readout : tensor or array of length d
    bound : {"derived", "measured"}
        What each answer's ``.error`` declares.  ``"derived"`` (default): the a-priori rounding
        bound of the module's computation on that query (see the module docstring), a worst
        case.  ``"measured"``: the answer's distance to the exact value of the model of the
        module's weights (:func:`native_model`, evaluated as an exact ball), rounded up: rigorous
        too, and as tight as a declaration can be; it costs an exact evaluation per query, and
        needs a module :func:`native_model` covers.
    budget : int, optional

    Each answer is a :class:`~exact.oracles.FloatAnswer` carrying that error.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mha = torch.nn.MultiheadAttention(2, 1, dtype=torch.float64, batch_first=True).eval()
    >>> o = TorchOracle(mha, torch.tensor([1.0, -1.0], dtype=torch.float64))
    >>> y = o.query([[1, 0], [0, 1]])
    >>> truth = native_model(mha, torch.tensor([1.0, -1.0]))
    >>> abs(float(y) - float(truth.float(np.array([[1.0, 0.0], [0.0, 1.0]])))) <= y.error
    True
    """

    def __new__(cls, mha, readout=None, **options):
        try:
            import torch

            encoder = isinstance(mha, torch.nn.TransformerEncoderLayer)
        except ImportError:
            encoder = False
        if encoder:
            from .native_ffn import ENCODER_LAYER

            raise InvalidArgument(ENCODER_LAYER)
        if getattr(mha, "_exact_block", False):  # exact.native_block.torch_block: the block builds its oracle
            if readout is not None or set(options) - {"budget"}:
                raise InvalidArgument("TorchOracle(block): a one-layer block takes no readout and no bound= (its "
                                      "answers carry their measured error)")
            return mha.exact_oracle(**options)
        if _is_sequential(mha):
            from .native_ffn import TorchFFNOracle

            if readout is not None or set(options) - {"budget"}:
                raise InvalidArgument("TorchOracle(seq): an nn.Sequential ReLU network takes no readout and no bound= "
                                      "(its answers carry the derived bound)")
            return TorchFFNOracle(mha, **options)
        return super().__new__(cls)

    def __init__(self, mha, readout=None, *, bound: str = "derived", budget: int | None = None):
        if readout is None:
            raise InvalidArgument("readout: an nn.MultiheadAttention is read out by a vector w of length embed_dim")
        torch = _torch()
        wt = _weights(mha, readout)
        if bound not in ("derived", "measured"):
            raise InvalidArgument(f"bound: expected 'derived' or 'measured', got {bound!r}")
        super().__init__(mha.embed_dim, budget=budget)
        self._mha = mha
        self.dtype = mha.in_proj_weight.dtype
        units = {torch.float64: 2.0**-53, torch.float32: 2.0**-24}
        if self.dtype not in units:
            raise InvalidArgument(
                f"mha: expected a float32 or float64 module, got {self.dtype}: the derived rounding bound does not "
                "cover half precision, whose narrow exponent range lets small tokens and products underflow (the "
                "learners' probes are small); cast it with mha.to(torch.float32), or wrap it in a CallableOracle "
                "with the accuracy it really meets")
        self._readout = torch.as_tensor(wt.w, dtype=torch.float64)  # the readout as given, applied in float64
        self._weights = wt
        self._unit = units[self.dtype]
        self._tiny = {torch.float64: 2.0**-1022, torch.float32: 2.0**-126}[self.dtype]  # the smallest normal
        self._gamma = (4 * self.d + 16) * self._unit
        # "measured": each answer's error is its distance to the exact value of the module's weights
        self._truth = native_model(mha, readout) if bound == "measured" else None
        #: The module's output vector for each one-token query asked, by token (the OV circuit's columns).
        self.token_outputs: dict = {}

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        """One batched module call per sequence length (the module sees each query on its own)."""
        torch = _torch()
        out: list = [None] * len(seqs)
        by_len: dict[int, list[int]] = {}
        for i, s in enumerate(seqs):
            by_len.setdefault(s.length, []).append(i)
        first = self.batch_first
        for idx in by_len.values():
            Xs = [seqs[i].to_numpy() for i in idx]
            x = torch.as_tensor(np.stack(Xs, axis=0 if first else 1), dtype=self.dtype)  # (batch, N, d) or (N, batch, d)
            query = x[:, -1:] if first else x[-1:]
            with torch.no_grad():
                o, _ = self._mha(query, x, x, need_weights=False)
                last = (o[:, 0] if first else o[0]).to(torch.float64)
                ys = (last * self._readout).sum(dim=-1).cpu().numpy()
            if Xs[0].shape[0] == 1:  # one-token queries: their whole output vectors are kept (learn_module)
                for i, vec in zip(idx, last.cpu().numpy()):
                    self.token_outputs[tuple(seqs[i].to_numpy()[0].tolist())] = vec
            bounds = self._bounds(np.stack(Xs)).tolist() if self._truth is None else [None] * len(idx)
            for i, y, e in zip(idx, ys.tolist(), bounds):
                if not math.isfinite(y):
                    raise OracleInconsistent(f"the torch module answered {y} to query #{self._count + i + 1}")
                out[i] = FloatAnswer(y, e if self._truth is None else self._measured(seqs[i], y))
        return out

    @property
    def batch_first(self) -> bool:
        return bool(getattr(self._mha, "batch_first", False))

    def _answer(self, seq: Sequence):
        return self._answer_batch([seq])[0]

    def _measured(self, seq: Sequence, y: float) -> float:
        """``|y − f(X)|`` rounded up, with ``f`` the model of the module's weights, evaluated as an exact
        ball: the distance from ``y`` to the farthest point of the ball."""
        truth = self._truth
        assert truth is not None  # only called with bound="measured"
        lo, hi = ball_interval(truth.exact(seq).ball(160))
        gap = max(Fraction(y) - lo, hi - Fraction(y))
        err = float(gap)
        return math.nextafter(err if Fraction(err) >= gap else math.nextafter(err, math.inf), math.inf)

    def _bound(self, X: np.ndarray) -> float:
        """``γ·M(X)`` for one query ``X`` (an ``(N, d)`` array): :meth:`_bounds` of a batch of one."""
        return float(self._bounds(X[None])[0])

    def _bounds(self, Xs: np.ndarray) -> np.ndarray:
        """``γ·M(X)`` for each query of a ``(B, N, d)`` batch: the computation's rounding bound, from
        the same chain on absolute values.

        For each head, scores ``s_i = (W_K x_i + b_k)·(W_Q x_N + b_q)/√r`` err by at most ``γ·S``
        with ``S`` their absolute-value counterpart; a score error ``δ`` moves the softmax average
        of the values by at most ``δ·(max − min of the values)`` (nothing for one token, whose
        weight is exactly 1); the values ``wᵀW_O(W_V x_i + b_v)`` err by at most ``γ·V`` with ``V``
        their absolute counterpart; the weighted sum adds ``γ·V`` again.  ``γ`` grows by ``2N·u``
        for the sums over the ``N`` tokens.  The heads' bounds add up, the output bias adds
        ``γ·|w|ᵀ|b_o|``, an underflow term adds the dtype's smallest normal per operation (times
        the absolute chain), and the result is multiplied by ``1 + 2γ`` and rounded up.
        """
        wt = self._weights
        Ax = np.abs(Xs)
        n = Xs.shape[1]
        aw = np.abs(wt.w)
        total = np.full(Xs.shape[0], 2 * float(aw @ np.abs(wt.bo)))
        floor = np.zeros(Xs.shape[0])  # underflow: each of a head's ~(4d + 2N) operations may lose the tiniest normal
        for h in range(wt.H):
            q = Ax[:, -1] @ np.abs(wt.Wq[h]).T + np.abs(wt.bq[h])
            S = np.einsum("bnr,br->bn", Ax @ np.abs(wt.Wk[h]).T + np.abs(wt.bk[h]), q) / math.sqrt(wt.r)
            ow = np.abs(wt.Wo[h]).T @ aw
            top = ((Ax @ np.abs(wt.Wv[h]).T + np.abs(wt.bv[h])) @ ow).max(axis=1)
            smax = S.max(axis=1)
            # one token: the softmax is exactly 1, so score errors do not reach the answer
            total += (smax * 2 * top if n > 1 else 0.0) + 2 * top
            floor += (1 + float(ow.sum())) * (1 + 2 * top + smax)
        # the sums over the N tokens (softmax denominator and weighted values) add N roundings each
        gamma = self._gamma + 2 * n * self._unit
        bound = gamma * total + (4 * self.d + 2 * n + 16) * self._tiny * floor + 1e-300
        return np.nextafter(bound * (1 + 2 * gamma), np.inf)


def torch_black_box(text: str) -> tuple:
    """``(oracle, truth)`` for ``MODULE:ATTR``: imports ``MODULE`` (running its code), calls ``ATTR()``,
    which returns ``(mha, readout)``, and wraps them (:class:`TorchOracle`); ``truth`` is
    :func:`native_model`.

    This is how ``learn ... --torch MODULE:ATTR`` loads a user's module.
    """
    from .userload import load_callable

    make = load_callable(text, option="--torch")
    try:
        got = make()
    except Exception as e:
        raise InvalidArgument(f"--torch: {text}() failed: {type(e).__name__}: {e}"[:280]) from None
    if not isinstance(got, tuple) or len(got) != 2:
        raise InvalidArgument(f"--torch: {text}() must return (module, readout), got {type(got).__name__}")
    mha, readout = got
    return TorchOracle(mha, readout), native_model(mha, readout)


def causal_prefix_answers(mha, readout, X) -> np.ndarray:
    """``[f(X[:1]), f(X[:2]), …, f(X)]`` from one causal forward pass of the module.

    Causal self-attention over the whole sequence lets position ``i`` attend to tokens
    ``0..i`` with ``x_i`` as its query: its output, read out by ``w``, is exactly the black
    box's answer to the prefix ``X[:i+1]``.  So one pass answers ``N`` prefix queries (each is
    still one query of the model; this function is the batch, not an oracle).

    The mask is built here.  Note that ``scaled_dot_product_attention(q, k, v, is_causal=True)``
    aligns its mask top-left: with a single query row (the oracle's own call) the query sees
    only the first key, a different function (``torch.nn.attention.bias.causal_lower_right``
    is the alignment that gives ``f``); ``nn.MultiheadAttention`` itself needs an explicit
    ``attn_mask`` with ``is_causal``.  Positional encodings, if the model has them, are outside
    the model ``f``: add them to the tokens before asking.

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(1) and None
    >>> mha = torch.nn.MultiheadAttention(3, 1, dtype=torch.float64).eval()
    >>> w = torch.randn(3, dtype=torch.float64)
    >>> X = np.random.default_rng(0).standard_normal((4, 3))
    >>> ys = causal_prefix_answers(mha, w, X)
    >>> o = TorchOracle(mha, w)
    >>> bool(all(abs(y - float(o.query(X[: i + 1]))) <= 1e-12 for i, y in enumerate(ys)))
    True
    """
    torch = _torch()
    wt = _weights(mha, readout)
    dtype = mha.in_proj_weight.dtype
    try:
        Xa = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError):
        raise ShapeError(f"X: expected an (N, {wt.d}) array of numbers, got {type(X).__name__}") from None
    if Xa.ndim != 2 or Xa.shape[1] != wt.d or Xa.shape[0] == 0:
        raise ShapeError(f"X: expected shape (N, {wt.d}) with N >= 1, got {Xa.shape}")
    if not np.isfinite(Xa).all():
        raise InvalidNumber("X: the tokens must be finite numbers")
    n = Xa.shape[0]
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)  # True: not attended
    x = torch.as_tensor(Xa, dtype=dtype)
    x = x[None] if mha.batch_first else x[:, None]
    with torch.no_grad():
        out, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
    rows = (out[0] if mha.batch_first else out[:, 0]).to(torch.float64)
    return (rows * torch.as_tensor(wt.w, dtype=torch.float64)).sum(dim=-1).cpu().numpy()


@dataclass(frozen=True)
class ModuleResult:
    """What :func:`learn_module` learned of a one-head module from its output vectors.

    Attributes
    ----------
    head : LearnResult
        The scalar learn (with the random readout ``readout``): ``W`` and ``c`` are the module's.
    W, c : numpy arrays
        ``W_KᵀW_Q/√d`` and ``W_Kᵀb_q/√d``.
    ov, bias : numpy arrays
        The OV circuit ``W_O W_V`` (d×d) and the output's constant ``W_O b_v + b_o`` (d).
    ov_error : float
        A bound on the entries' errors of ``ov`` and ``bias`` (from the module's rounding bounds).
    queries : int
        Module calls: the scalar learner's ``d² + 2d + 1`` (plus verification); the vectors cost none.
    readout : numpy array
    """

    head: object
    W: np.ndarray
    c: np.ndarray
    ov: np.ndarray
    bias: np.ndarray
    ov_error: float
    queries: int
    readout: np.ndarray


def learn_module(mha, *, seed: int | None = None, **options) -> ModuleResult:
    """Learn a one-head module's ``W``, ``c`` and its whole OV circuit from its output vectors.

    A head's output is a vector; ``f = wᵀ·out`` is one readout of it.  With a random readout
    ``w`` (seeded) the learner of heads with biases finds ``W`` and ``c`` (they do not depend on
    ``w``) from ``d² + 2d + 1`` queries.  Its first ``d + 1`` queries are the one-token ``[0]`` and
    ``[e_i]``, whose output *vectors* are ``W_O b_v + b_o`` and ``W_O W_V e_i + W_O b_v + b_o``: they
    give the OV circuit ``W_O W_V`` and the constant, column by column, at no further query.  So one
    query costs one module call, and the whole learn ``d² + 2d + 1`` of them.

    ``options`` go to :func:`~exact.learn.learn_single_head_biased` (``mode``, ``checks``, ...).

    Examples
    --------
    >>> import torch
    >>> torch.manual_seed(0) and None
    >>> mha = torch.nn.MultiheadAttention(3, 1, dtype=torch.float64).eval()
    >>> m = learn_module(mha, seed=1, mode="float")
    >>> Wo, Wv = mha.out_proj.weight.detach().numpy(), mha.in_proj_weight[6:].detach().numpy()
    >>> bool(np.abs(m.ov - Wo @ Wv).max() <= m.ov_error), m.queries
    (True, 18)
    """
    from .learn import learn_single_head_biased

    check_module(mha)
    if mha.num_heads != 1:
        raise InvalidArgument(f"mha: learn_module takes one head, got num_heads={mha.num_heads}")
    torch = _torch()
    d = mha.embed_dim
    w = np.random.default_rng(seed).standard_normal(d)
    oracle = TorchOracle(mha, torch.as_tensor(w, dtype=torch.float64))
    r = learn_single_head_biased(oracle, **options)
    zero = tuple([0.0] * d)
    cols = [tuple(float(i == j) for i in range(d)) for j in range(d)]
    missing = [t for t in [zero] + cols if t not in oracle.token_outputs]
    if missing:  # pragma: no cover - the learner asks these first
        raise InvalidArgument("learn_module: internal error, a one-token query was not asked")
    bias = oracle.token_outputs[zero]
    ov = np.array([oracle.token_outputs[t] - bias for t in cols]).T
    wt = oracle._weights
    aWo, aWv = np.abs(wt.Wo[0]), np.abs(wt.Wv[0])
    # each coordinate of a one-token output: W_O(W_V x + b_v) + b_o, rounded in the module's dtype
    chain = aWo @ (aWv.sum(axis=1) + np.abs(wt.bv[0])) + np.abs(wt.bo)
    ov_error = float(2 * 2 * oracle._gamma * chain.max()) * (1 + 4 * oracle._gamma) + 1e-300
    W, _ = r.model.to_numpy()
    c, _ = r.model.biases_numpy()
    return ModuleResult(r, W, c, ov, bias, ov_error, oracle.count, w)
