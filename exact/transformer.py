"""The one-layer Transformer ``T(X) = wᵀReLU(A·h(X))``, ``h(X) = Σ_i softmax(X W x_N)_i x_i``.

A single softmax head (the value map merged into ``A``) followed by a bias-free ReLU
FFN.  As torch builds it, the block also has biases and may have a residual
(``docs/transformer.md``, "Biases and a residual"):

    s_i = x_iᵀ(W x_N + c),   h(X) = Σ_i softmax(s)_i (V x_i + μ),
    T(X) = wᵀReLU(A·h(X) + a) + b            or, with the residual,
    T(X) = wᵀReLU(A·(x_N + h(X)) + a) + b.

Its canonical form is ``(W, c)``, the one-token function ``g₁(x) = T([x])`` (an FFN with
biases) and, with the residual, ``K = (I + V)⁻¹V``: then ``T(X) = g₁(x_N + K(h̄ − x_N))``
with ``h̄ = Σ_i softmax(s)_i x_i`` (without it ``T(X) = g₁(h̄)``, the case ``K = I``).  Its exact value is an exp-ratio: each unit's pre-activation
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

from .errors import InvalidArgument, NotIdentifiable, ShapeError
from .expfield import ExpPoly, ExpRatio
from .ffn import FunctionForm, ReLUFFN
from .jsonfields import check_fields, check_kind, describe_json
from .linalg import QMatrix
from .models import SingleHead, as_matrix, as_vector
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
    """A one-layer Transformer's canonical form: ``W``, the one-token function's form, and, for a
    block with biases, the score bias ``c`` (``None`` when zero) and, with a residual, ``K``."""

    W: tuple
    function_form: FunctionForm
    c: tuple | None = None
    K: tuple | None = None

    def to_json(self) -> dict:
        out = {"W": [[format_rational(x) for x in row] for row in self.W], "function_form": self.function_form.to_json()}
        if self.c is not None:
            out["c"] = [format_rational(x) for x in self.c]
        if self.K is not None:
            out["K"] = [[format_rational(x) for x in row] for row in self.K]
        return out


@dataclass(frozen=True)
class Transformer:
    """A one-layer Transformer with exact parameters: ``W`` (d×d), ``A`` (m×d), ``w`` (m), and
    optionally the biases and value map of a torch block (keyword-only).

    Parameters
    ----------
    W, A, w :
        The score matrix, the FFN's first layer and its read-out.
    c : vector, optional
        The score bias, ``s_i = x_iᵀ(W x_N + c)`` (a torch head's query bias; default 0).
    V, mu : optional
        The value map and its bias, ``h(X) = Σ_i α_i (V x_i + μ)`` (default ``I`` and 0).
    a, b : optional
        The FFN's hidden biases and output bias (default 0).
    residual : bool
        ``T(X) = wᵀReLU(A(x_N + h(X)) + a) + b`` (default ``False``).

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
    >>> R = Transformer([[1, 0], [0, -1]], [[1, 1], [2, -1]], [1, "-1/2"], c=[1, 0], a=[0, 1], b=2, residual=True)
    >>> R.biased, R.exact([[3, 1]]) == ExpRatio.rational(R.ffn.value([3, 1]))  # one token: g₁(x) = T([x])
    (True, True)
    >>> [[str(x) for x in r] for r in R.ffn.A], [str(x) for x in R.ffn.a]  # A(I + V) with V = I, and Aμ + a
    ([['2', '2'], ['4', '-2']], ['0', '1'])
    """

    W: Any
    A: Any
    w: Any
    c: Any = None  # stored as a tuple (zeros when not given)
    V: Any = None  # stored as a tuple of rows (the identity when not given)
    mu: Any = None  # stored as a tuple (zeros when not given)
    a: Any = None  # the FFN's hidden biases, stored as a tuple (zeros when not given)
    b: Any = 0
    residual: bool = False
    _head: Any = field(init=False, repr=False, compare=False)  # (W, 0, c) as a SingleHead, for the scores
    _ffn: Any = field(init=False, repr=False, compare=False)  # the FFN (A, w, a, b)
    _tok: Any = field(init=False, repr=False, compare=False)  # (A V, A μ + a) as flint, for the token images
    kind: ClassVar[str] = "transformer"

    def __post_init__(self):
        d = len(as_matrix(self.W, name="W"))
        c = (Fraction(0),) * d if self.c is None else as_vector(self.c, name="c", size=d)
        head = SingleHead(self.W, [0] * d, c=c)
        ffn = ReLUFFN(self.A, self.w, a=self.a, b=self.b)
        if ffn.d != head.d:
            raise ShapeError(f"A: expected {head.d} columns (the token dimension of W), got {ffn.d}")
        V = tuple(tuple(Fraction(int(i == j)) for j in range(d)) for i in range(d)) if self.V is None else \
            as_matrix(self.V, name="V")
        if len(V) != d or any(len(r) != d for r in V):
            raise ShapeError(f"V: expected a {d}×{d} value map, got {len(V)}×{len(V[0]) if V else 0}")
        mu = (Fraction(0),) * d if self.mu is None else as_vector(self.mu, name="mu", size=d)
        if not isinstance(self.residual, bool):
            raise ShapeError(f"residual: expected true or false, got {self.residual!r}")
        for name, value in (("W", head.W), ("A", ffn.A), ("w", ffn.w), ("c", c), ("V", V), ("mu", mu), ("a", ffn.a),
                            ("b", ffn.b), ("_head", head), ("_ffn", ffn)):
            object.__setattr__(self, name, value)
        AV = [[sum((r[k] * V[k][j] for k in range(d)), Fraction(0)) for j in range(d)] for r in ffn.A]
        a_eff = [sum((x * y for x, y in zip(r, mu)), Fraction(0)) + ai for r, ai in zip(ffn.A, ffn.a)]
        object.__setattr__(self, "_tok", (QMatrix.from_rows(AV), [fmpq(x.numerator, x.denominator) for x in a_eff],
                                          AV, a_eff))

    @property
    def d(self) -> int:
        return len(self.W)

    @property
    def m(self) -> int:
        return len(self.w)

    @property
    def biased(self) -> bool:
        """Whether the block leaves the bias-free class ``wᵀReLU(A·Σα_i x_i)``: a bias, a value map
        other than ``I``, or a residual."""
        identity = all(x == (i == j) for i, r in enumerate(self.V) for j, x in enumerate(r))
        return self.residual or not identity or any(self.c) or any(self.mu) or self._ffn.biased

    @property
    def ffn(self) -> ReLUFFN:
        """The one-token function ``g₁(x) = T([x])`` as a network: ``wᵀReLU(A'x + a') + b`` with
        ``A' = AV`` (``A(I + V)`` with the residual) and ``a' = Aμ + a``; ``(A, w)`` when bias-free."""
        if not self.biased:
            return self._ffn
        _, _, AV, a_eff = self._tok
        A1 = [[x + (r0[j] if self.residual else 0) for j, x in enumerate(r)] for r, r0 in zip(AV, self.A)]
        return ReLUFFN(A1, self.w, a=a_eff, b=self.b)

    @property
    def K(self) -> tuple | None:
        """``(I + V)⁻¹V`` with the residual (``None`` without it), or :class:`NotIdentifiable` when
        ``I + V`` is singular (then one-token queries see ``g`` only on a subspace)."""
        if not self.residual:
            return None
        d = self.d
        IV = QMatrix.from_rows([[x + (i == j) for j, x in enumerate(r)] for i, r in enumerate(self.V)])
        if IV.rank() < d:
            raise NotIdentifiable("residual block: I + V is singular, so one-token queries T([x]) = g((I + V)x + μ) "
                                  "see the FFN only on a subspace")
        return (IV.inv() @ QMatrix.from_rows(self.V)).rows()

    @property
    def v_eff(self) -> tuple:
        """``Aᵀw``: the value vector of the odd part ``T(X) − T(−X)`` (bias-free blocks)."""
        _, _, AV, _ = self._tok
        return tuple(sum((a[i] * wk for a, wk in zip(AV, self.w)), Fraction(0)) for i in range(self.d))

    @property
    def odd_head(self) -> SingleHead:
        """The single head ``(W, Aᵀw)`` that ``X ↦ T(X) − T(−X)`` is (bias-free blocks)."""
        if self.biased:
            raise InvalidArgument("odd_head: a block with biases or a residual has no odd part that is a single head")
        return SingleHead(self.W, self.v_eff)

    def parameters(self) -> tuple:
        core = tuple(x for r in self.W for x in r) + self._ffn.parameters()
        if not self.biased:
            return core
        return core + tuple(self.c) + tuple(x for r in self.V for x in r) + tuple(self.mu)

    def _images(self, seq: Sequence) -> list:
        """Every token's pre-activation ``A(Vx_i + μ) + a`` (plus ``A x_N`` with the residual), as fmpq."""
        AVq, aq, _, _ = self._tok
        d = self.d
        zs = []
        for row in seq._fmpq_rows:
            x = [fmpq(0)] * d
            for j, q in row:
                x[j] = q
            zs.append([z + ai for z, ai in zip(AVq.matvec(x), aq)])
        if self.residual:
            x = [fmpq(0)] * d
            for j, q in seq._fmpq_rows[-1]:
                x[j] = q
            r = self._ffn._Aq.matvec(x)
            zs = [[z + y for z, y in zip(zi, r)] for zi in zs]
        return zs

    def exact(self, X) -> ExpRatio:
        """The exact value ``T(X)`` as an exp-ratio."""
        seq = X if isinstance(X, Sequence) and X.d == self.d else as_sequence(X, d=self.d)
        ffn = self._ffn
        pre = self._images(seq)
        bq = fmpq(ffn.b.numerator, ffn.b.denominator)
        if seq.length == 1:  # the softmax weight is 1: the FFN of the token's image
            return ExpRatio._of_fmpq(sum((wk * z for wk, z in zip(ffn._wq, pre[0]) if z > 0), bq))
        scores, _ = self._head.scores(seq)
        coeffs = [bq] * len(scores)
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

        def f(M):
            return np.array([[float(x) for x in r] for r in M]) if M and isinstance(M[0], tuple) else \
                np.array([float(x) for x in M])

        W, A, w, c, V, mu, a = (f(M) for M in (self.W, self.A, self.w, self.c, self.V, self.mu, self.a))
        s = np.einsum("nid,de,ne->ni", Xb, W, Xb[:, -1, :]) + Xb @ c
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        h = np.einsum("ni,nid->nd", p, Xb) @ V.T + mu
        if self.residual:
            h = h + Xb[:, -1, :]
        out = np.maximum(h @ A.T + a, 0.0) @ w + float(self.b)
        return float(out[0]) if single else out

    @classmethod
    def random(cls, d: int, m: int, *, seed=None, grid: str = "rational:7", bound=2, biases: bool = False,
               residual: bool = False) -> "Transformer":
        """A random Transformer with entries on ``grid`` (small rationals by default); ``biases``
        also draws ``c``, ``V``, ``μ``, ``a`` and ``b`` (after the rest, so ``W``, ``A``, ``w`` are
        those drawn without), and ``residual`` adds the residual (with ``biases``).

        >>> Transformer.random(3, 4, seed=2) == Transformer.random(3, 4, seed=2)
        True
        >>> R = Transformer.random(3, 4, seed=2, biases=True, residual=True)
        >>> R.residual, R.W == Transformer.random(3, 4, seed=2).W
        (True, True)
        """
        if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        if residual and not biases:
            raise InvalidArgument("residual: a random block with a residual is drawn with biases (pass biases=True)")
        rng = np.random.default_rng(seed)
        s1, s2, s3 = (int(x) for x in rng.integers(0, 2**31, size=3))
        head = SingleHead.random(d, seed=s1, grid=grid, bound=bound)
        ffn = ReLUFFN.random(d, m, seed=s2, grid=grid, bound=bound, biases=biases)
        if not biases:
            return cls(head.W, ffn.A, ffn.w)
        extra = SingleHead.random(d, seed=s3, grid=grid, bound=bound, biases=True)  # c, and V from its W
        mu = ReLUFFN.random(d, 1, seed=s3, grid=grid, bound=bound).A[0]
        return cls(head.W, ffn.A, ffn.w, c=extra.c, V=extra.W, mu=mu, a=ffn.a, b=ffn.b, residual=residual)

    def canonical(self) -> "TransformerForm":
        """The form results are compared in: ``W`` (identifiable as it is), the one-token
        function's form, and for a block with biases ``c`` and (with the residual) ``K``.

        >>> T = Transformer.random(2, 2, seed=0)
        >>> T.canonical() == TransformerForm(T.W, T.ffn.function_form())
        True
        """
        if not self.biased:
            return TransformerForm(self.W, self.ffn.function_form())
        return TransformerForm(self.W, self.ffn.function_form(), tuple(self.c) if any(self.c) else None, self.K)

    def to_json(self) -> dict:
        """``{"kind": "transformer", "d": d, "m": m, "W": [[...]], "A": [[...]], "w": [...]}``, with
        ``"c"``, ``"V"``, ``"mu"``, ``"a"``, ``"b"`` and ``"residual"`` for a block with biases."""
        out = {
            "kind": "transformer",
            "d": self.d,
            "m": self.m,
            "W": [[format_rational(x) for x in r] for r in self.W],
            "A": [[format_rational(x) for x in r] for r in self.A],
            "w": [format_rational(x) for x in self.w],
        }
        if self.biased:
            out.update({"c": [format_rational(x) for x in self.c], "V": [[format_rational(x) for x in r] for r in self.V],
                        "mu": [format_rational(x) for x in self.mu], "a": [format_rational(x) for x in self.a],
                        "b": format_rational(self.b), "residual": self.residual})
        return out

    @classmethod
    def from_json(cls, data) -> "Transformer":
        """Build from ``{"kind": "transformer", "W": ..., "A": ..., "w": ...}`` (``d``, ``m`` optional, checked;
        ``c``, ``V``, ``mu``, ``a``, ``b``, ``residual`` optional).

        >>> Transformer.from_json({"kind": "transformer", "W": [[1]], "A": [[1]], "w": [1], "d": 2})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: field 'd' is 2, but the model has 1
        >>> Transformer.from_json({"kind": "transformer", "W": [[1]], "A": [[1]], "w": [1], "residual": 1})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: field 'residual': expected true or false, got a number
        """
        if not isinstance(data, dict) or check_kind(data, where="model", error=ShapeError) != "transformer":
            raise ShapeError("model: expected a JSON object of kind 'transformer'")
        check_fields(data, where="model", required=("kind", "W", "A", "w"),
                     optional=("d", "m", "c", "V", "mu", "a", "b", "residual"), error=ShapeError)
        for key in ("W", "A", "w", "c", "V", "mu", "a"):
            if key in data and not isinstance(data[key], list):
                raise ShapeError(f"model: field {key!r}: expected a list, got {describe_json(data[key])}")
        residual = data.get("residual", False)
        if not isinstance(residual, bool):
            raise ShapeError(f"model: field 'residual': expected true or false, got {describe_json(residual)}")
        model = cls(data["W"], data["A"], data["w"], c=data.get("c"), V=data.get("V"), mu=data.get("mu"),
                    a=data.get("a"), b=data.get("b", 0), residual=residual)
        for key, value in (("d", model.d), ("m", model.m)):
            given = data.get(key)
            if given is not None and given != value:
                shown = given if isinstance(given, int) else describe_json(given)
                raise ShapeError(f"model: field {key!r} is {shown}, but the model has {value}")
        return model
