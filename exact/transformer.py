"""The one-layer Transformer ``T(X) = wᵀReLU(A·h(X))``, ``h(X) = Σ_i softmax(X W x_N)_i x_i``.

A single softmax head (the value map merged into ``A``) followed by a bias-free ReLU
FFN.  Its exact value is an exp-ratio: each unit's pre-activation
``(A h)_k = Σ_i e^{s_i}(A x_i)_k / Σ_i e^{s_i}`` has the sign of the exp-polynomial in its
numerator, which is decided exactly (it is zero only when its merged coefficients all
vanish, by Lindemann–Weierstrass, and otherwise a ball of enough precision shows its
sign), so ``T(X) = Σ_{k active} w_k·(A h)_k`` is exact.

Two facts the learner rests on:

* one-token inputs see the FFN alone: ``T([x]) = wᵀReLU(Ax)`` (the softmax weight is 1);
* scores are even in ``X`` and values odd, so ``h(−X) = −h(X)`` and, as
  ``ReLU(z) − ReLU(−z) = z``, ``T(X) − T(−X) = (Aᵀw)ᵀh(X)``: a single head with the same
  ``W`` and the value vector ``v_eff = Aᵀw``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from flint import arb, fmpq

from .errors import InvalidArgument, ShapeError
from .expfield import ExpPoly, ExpRatio
from .ffn import FunctionForm, ReLUFFN
from .jsonfields import check_fields, check_kind, describe_json
from .models import SingleHead, as_matrix
from .numbers import format_rational
from .sequences import Sequence, as_sequence

__all__ = ["Transformer", "TransformerForm", "exp_sign"]


def exp_sign(p: ExpPoly) -> int:
    """The sign of an exp-polynomial ``Σ c_k e^{q_k}``, decided exactly.

    >>> from flint import fmpq
    >>> exp_sign(ExpPoly([(1, 0), (-1, "-1/1000000")])), exp_sign(ExpPoly([]))   # 1 − e^(−10⁻⁶) > 0
    (1, 0)
    """
    if p.is_zero():
        return 0
    top = p.max_exponent()
    prec = 64
    while True:  # nonzero (Lindemann–Weierstrass), so some precision shows the sign
        b = p.ball(prec, shift=top)
        if b > 0:
            return 1
        if b < 0:
            return -1
        prec *= 2


@dataclass(frozen=True)
class TransformerForm:
    """A one-layer Transformer's canonical form: ``W`` and its FFN's function-level form."""

    W: tuple
    function_form: FunctionForm

    def to_json(self) -> dict:
        return {"W": [[format_rational(x) for x in row] for row in self.W], "function_form": self.function_form.to_json()}


@dataclass(frozen=True)
class Transformer:
    """A one-layer Transformer with exact parameters: ``W`` (d×d), ``A`` (m×d), ``w`` (m).

    Examples
    --------
    >>> T = Transformer([[1, 0], [0, -1]], [[1, 1], [2, -1]], [1, "-1/2"])
    >>> T.d, T.m, T.v_eff
    (2, 2, (Fraction(0, 1), Fraction(3, 2)))
    >>> T.exact([[3, 1]]) == ExpRatio.rational(T.ffn.value([3, 1]))
    True
    >>> X = [[1, 2], [0, 1]]
    >>> float(T.ball(X).mid() - T.ball([[-1, -2], [0, -1]]).mid()) == float(T.odd_head.ball(X).mid())
    True
    """

    W: Any
    A: Any
    w: Any
    _head: Any = field(init=False, repr=False, compare=False)  # (W, 0) as a SingleHead, for the scores
    _ffn: Any = field(init=False, repr=False, compare=False)  # the FFN (A, w)
    kind: ClassVar[str] = "transformer"

    def __post_init__(self):
        head = SingleHead(self.W, [0] * len(as_matrix(self.W, name="W")))
        ffn = ReLUFFN(self.A, self.w)
        if ffn.d != head.d:
            raise ShapeError(f"A: expected {head.d} columns (the token dimension of W), got {ffn.d}")
        object.__setattr__(self, "W", head.W)
        object.__setattr__(self, "A", ffn.A)
        object.__setattr__(self, "w", ffn.w)
        object.__setattr__(self, "_head", head)
        object.__setattr__(self, "_ffn", ffn)

    @property
    def d(self) -> int:
        return len(self.W)

    @property
    def m(self) -> int:
        return len(self.w)

    @property
    def ffn(self) -> ReLUFFN:
        """The FFN ``x ↦ wᵀReLU(Ax)`` (what one-token inputs see)."""
        return self._ffn

    @property
    def v_eff(self) -> tuple:
        """``Aᵀw``: the value vector of the odd part ``T(X) − T(−X)``."""
        return tuple(sum((a[i] * wk for a, wk in zip(self.A, self.w)), Fraction(0)) for i in range(self.d))

    @property
    def odd_head(self) -> SingleHead:
        """The single head ``(W, Aᵀw)`` that ``X ↦ T(X) − T(−X)`` is."""
        return SingleHead(self.W, self.v_eff)

    def parameters(self) -> tuple:
        return tuple(x for r in self.W for x in r) + self._ffn.parameters()

    def exact(self, X) -> ExpRatio:
        """The exact value ``T(X)`` as an exp-ratio."""
        seq = X if isinstance(X, Sequence) and X.d == self.d else as_sequence(X, d=self.d)
        if seq.length == 1:  # the softmax weight is 1: the FFN of the token
            return ExpRatio._of_fmpq(self._ffn._value_fq(self._ffn._token(seq)))
        scores, _ = self._head.scores(seq)
        ffn = self._ffn
        pre = []  # (A x_i) for every token
        for row in seq._fmpq_rows:
            x = [fmpq(0)] * self.d
            for j, q in row:
                x[j] = q
            pre.append(ffn._Aq.matvec(x))
        coeffs = [fmpq(0)] * len(scores)
        for k, wk in enumerate(ffn._wq):
            if not wk:
                continue
            unit = ExpPoly._raw([(s, z[k]) for s, z in zip(scores, pre)])
            if exp_sign(unit) > 0:
                for i, z in enumerate(pre):
                    coeffs[i] += wk * z[k]
        num = ExpPoly._raw([(s, c) for s, c in zip(scores, coeffs)])
        den = ExpPoly._raw([(s, fmpq(1)) for s in scores])
        return ExpRatio(num, den)

    def ball(self, X, *, prec: int = 128) -> arb:
        return self.exact(X).ball(prec)

    def float(self, X):
        """``T`` in float64, for ``(N, d)`` or ``(n, N, d)`` inputs."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim not in (2, 3) or X.shape[-1] != self.d:
            raise ShapeError(f"X: expected shape (N, {self.d}) or (n, N, {self.d}), got {X.shape}")
        single = X.ndim == 2
        Xb = X[None] if single else X
        W = np.array([[float(x) for x in r] for r in self.W])
        A = np.array([[float(x) for x in r] for r in self.A])
        w = np.array([float(x) for x in self.w])
        s = np.einsum("nid,de,ne->ni", Xb, W, Xb[:, -1, :])
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        h = np.einsum("ni,nid->nd", p, Xb)
        out = np.maximum(h @ A.T, 0.0) @ w
        return float(out[0]) if single else out

    @classmethod
    def random(cls, d: int, m: int, *, seed=None, grid: str = "rational:7", bound=2) -> "Transformer":
        """A random Transformer with entries on ``grid`` (small rationals by default).

        >>> Transformer.random(3, 4, seed=2) == Transformer.random(3, 4, seed=2)
        True
        """
        if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        rng = np.random.default_rng(seed)
        s1, s2 = (int(x) for x in rng.integers(0, 2**31, size=2))
        head = SingleHead.random(d, seed=s1, grid=grid, bound=bound)
        ffn = ReLUFFN.random(d, m, seed=s2, grid=grid, bound=bound)
        return cls(head.W, ffn.A, ffn.w)

    def canonical(self) -> "TransformerForm":
        """The form results are compared in: ``W`` (identifiable as it is) and the FFN's
        function-level form.

        >>> T = Transformer.random(2, 2, seed=0)
        >>> T.canonical() == TransformerForm(T.W, T.ffn.function_form())
        True
        """
        return TransformerForm(self.W, self.ffn.function_form())

    def to_json(self) -> dict:
        """``{"kind": "transformer", "d": d, "m": m, "W": [[...]], "A": [[...]], "w": [...]}``."""
        return {
            "kind": "transformer",
            "d": self.d,
            "m": self.m,
            "W": [[format_rational(x) for x in r] for r in self.W],
            "A": [[format_rational(x) for x in r] for r in self.A],
            "w": [format_rational(x) for x in self.w],
        }

    @classmethod
    def from_json(cls, data) -> "Transformer":
        """Build from ``{"kind": "transformer", "W": ..., "A": ..., "w": ...}`` (``d``, ``m`` optional, checked).

        >>> Transformer.from_json({"kind": "transformer", "W": [[1]], "A": [[1]], "w": [1], "d": 2})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: field 'd' is 2, but the model has 1
        """
        if not isinstance(data, dict) or check_kind(data, where="model", error=ShapeError) != "transformer":
            raise ShapeError("model: expected a JSON object of kind 'transformer'")
        check_fields(data, where="model", required=("kind", "W", "A", "w"), optional=("d", "m"), error=ShapeError)
        for key in ("W", "A", "w"):
            if not isinstance(data[key], list):
                raise ShapeError(f"model: field {key!r}: expected a list, got {describe_json(data[key])}")
        model = cls(data["W"], data["A"], data["w"])
        for key, value in (("d", model.d), ("m", model.m)):
            given = data.get(key)
            if given is not None and given != value:
                shown = given if isinstance(given, int) else describe_json(given)
                raise ShapeError(f"model: field {key!r} is {shown}, but the model has {value}")
        return model
