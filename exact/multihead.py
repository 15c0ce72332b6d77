"""Multi-head attention with exact parameters [BSHK26, KKG26].

    f(X) = b + Σ_{h=1}^{H} softmax(X (W_h x_N + c_h))ᵀ (X v_h)

The paper's model has no biases (``c_h = 0``, ``b = 0``); torch's heads have a score bias
``c_h`` each and one output bias ``b`` for the sum (``docs/biases.md``).

:class:`MultiHead` is an ordered tuple of :class:`~exact.models.SingleHead` heads.  Its
parameters are not identifiable: heads with equal ``W`` can share their ``v`` in any
way, heads with ``v = 0`` can be added or dropped, and heads can be permuted
(Proposition 7.1 of [BSHK26]); with biases the same holds of heads with equal
``(W, c)``.  :func:`exact.canonical.canonical_form` picks one representative; two
parameterisations define the same map iff their canonical forms are equal ([KKG26]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .errors import InvalidArgument, ShapeError
from .numbers import format_rational, to_fraction
from .jsonfields import check_fields, check_kind, describe_json
from .expfield import ExpSum
from .grids import parse_grid
from .models import SingleHead, evaluate_float

_FZERO = to_fraction(0)
from .sequences import as_sequence

__all__ = ["MultiHead"]


@dataclass(frozen=True)
class MultiHead:
    """``H >= 0`` softmax heads on tokens of dimension ``d``, summed, plus an output bias ``b``.

    Parameters
    ----------
    heads : sequence of SingleHead or (W, v) pairs
        The heads, in order (order matters for equality as parameters, not for the map).  A
        head may have a score bias ``c``; a head's output bias ``b`` is moved into the
        model's (the heads are stored with ``b = 0``), since only their sum is a parameter.
    d : int, optional
        Token dimension; required only when there are no heads.
    b : number, optional
        The output bias of the sum (default 0), plus the heads' own.

    Examples
    --------
    >>> m = MultiHead([([[1, 0], [0, 1]], [1, 0]), ([[0, 1], [1, 0]], [0, "1/2"])])
    >>> m.H, m.d
    (2, 2)
    >>> round(m.float([[1, 0], [0, 1]]), 12)
    0.403412132055
    >>> MultiHead([SingleHead([[1]], [2], c=[1], b=3)], b=1).b
    Fraction(4, 1)
    """

    heads: Any  # given as any sequence of heads; stored as a tuple of SingleHead
    d: Any = None  # an int after construction (needed as input only when there are no heads)
    b: Any = 0  # stored as a Fraction: the given b plus the heads' own
    kind: ClassVar[str] = "multi-head"

    def __post_init__(self):
        try:
            items = list(self.heads)
        except TypeError:
            raise ShapeError(f"heads: expected a list of heads, got {type(self.heads).__name__}") from None
        heads = []
        for i, h in enumerate(items):
            if isinstance(h, SingleHead):
                heads.append(h)
            elif isinstance(h, (tuple, list)) and len(h) == 2:
                heads.append(SingleHead(h[0], h[1]))
            else:
                raise ShapeError(f"heads[{i}]: expected a SingleHead or a (W, v) pair, got {type(h).__name__}")
        dims = {h.d for h in heads}
        if len(dims) > 1:
            raise ShapeError(f"heads: expected every head to have the same d, got {sorted(dims)}")
        d = dims.pop() if dims else self.d
        if d is None:
            raise ShapeError("d: a model with no heads needs d given explicitly")
        if self.d is not None and self.d != d:
            raise ShapeError(f"d: given d={self.d} but the heads have d={d}")
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ShapeError(f"d: expected an integer d >= 1, got {d!r}")
        b = to_fraction(self.b, name="b") + sum((h.b for h in heads), _FZERO)
        heads = [SingleHead(h.W, h.v, h.c) if h.b else h for h in heads]
        object.__setattr__(self, "heads", tuple(heads))
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "b", b)

    def __repr__(self) -> str:
        bias = f", b={self.b!r}" if self.b else ""
        return f"{type(self).__name__}(heads={self.heads!r}, d={self.d!r}{bias})"

    @property
    def biased(self) -> bool:
        """Whether some ``c_h`` or ``b`` is nonzero (else the model is the paper's)."""
        return self.b != 0 or any(h.biased for h in self.heads)

    def parameters(self) -> tuple:
        """Every parameter as one flat tuple of Fractions, head by head (each head's ``c`` after its
        ``W`` and ``v`` when the model has biases), then ``b`` when it has biases."""
        if not self.biased:
            return tuple(x for h in self.heads for x in h.parameters())
        return tuple(x for h in self.heads for x in tuple(y for row in h.W for y in row) + h.v + h.c) + (self.b,)

    @property
    def H(self) -> int:
        """The number of heads."""
        return len(self.heads)

    def exact(self, X) -> ExpSum:
        """The exact value ``f(X)`` as a sum of exp-ratios (heads with equal scores merge)."""
        from .expfield import ExpRatio

        X = as_sequence(X, d=self.d)  # validated even when there are no heads
        return ExpSum([h.exact(X) for h in self.heads] + ([ExpRatio.rational(self.b)] if self.b else []))

    def ball(self, X, *, prec: int = 128):
        """A rigorous ``arb`` ball for ``f(X)`` at ``prec`` bits."""
        return self.exact(X).ball(prec)

    def sympy(self, X):
        """The exact sympy expression of ``f(X)``."""
        return self.exact(X).sympy()

    def float(self, X):
        """``f`` in float64, for ``(N, d)`` or ``(n, N, d)`` inputs."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim not in (2, 3) or X.shape[-1] != self.d:
            raise ShapeError(f"X: expected shape (N, {self.d}) or (n, N, {self.d}), got {X.shape}")
        b = float(self.b)
        if not self.heads:
            return b if X.ndim == 2 else np.full(X.shape[0], b)
        total = np.zeros(X.shape[0]) if X.ndim == 3 else 0.0
        for h in self.heads:
            W, v = h.to_numpy()
            total = total + (evaluate_float(W, v, X, c=h.biases_numpy()[0]) if h.biased else evaluate_float(W, v, X))
        return total + b if self.b else total

    @classmethod
    def random(
        cls, d: int, H: int, *, seed=None, grid="rational:7", bound=2, v_zeros: int = 0,
        duplicate_w: bool = False, zero_v: bool = False, shared_v: bool = False, biases: bool = False,
        shared_w: bool = False,
    ) -> "MultiHead":
        """``H`` independent random heads (see :meth:`SingleHead.random`), seeded.

        Three options build the instances whose parameters are not identifiable
        (Proposition 7.1) and that a canonical learner must still get right:

        * ``duplicate_w``: head 2 takes head 1's ``W`` (they merge in the canonical form);
        * ``shared_v``: the last head takes head 1's ``v`` (a different ``W``: both stay);
        * ``zero_v``: the last head gets ``v = 0`` (it is dropped), applied after ``shared_v``.

        ``biases`` also draws a score bias ``c_h`` per head and the output bias ``b`` (after the
        bias-free draws, so ``W_h`` and ``v_h`` are those of the same seed without biases);
        ``duplicate_w`` then copies ``(W, c)``, and ``shared_w`` gives head 2 head 1's ``W`` with
        its own ``c`` (they do not merge).

        >>> MultiHead.random(2, 3, seed=0) == MultiHead.random(2, 3, seed=0)
        True
        >>> m = MultiHead.random(2, 2, seed=0, biases=True, shared_w=True)
        >>> m.biased, m.heads[0].W == m.heads[1].W, m.canonical().H
        (True, True, 2)
        >>> m = MultiHead.random(2, 3, seed=0, duplicate_w=True, zero_v=True)
        >>> m.heads[1].W == m.heads[0].W, any(m.heads[2].v)
        (True, False)
        """
        if not isinstance(H, int) or H < 0:
            raise InvalidArgument(f"H: expected a non-negative number of heads, got {H!r}")
        if seed is not None and not (isinstance(seed, int) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        if (duplicate_w or shared_v or shared_w) and H < 2:
            raise InvalidArgument(f"duplicate_w/shared_v/shared_w: need at least 2 heads, got H={H}")
        if shared_w and not biases:
            raise InvalidArgument("shared_w: heads with one W and different c need biases=True (without biases "
                                  "they are duplicate_w)")
        if shared_w and duplicate_w:
            raise InvalidArgument("shared_w/duplicate_w: give at most one (head 2 takes head 1's W, with its own c or "
                                  "with head 1's)")
        if zero_v and H < 1:
            raise InvalidArgument("zero_v: needs at least 1 head, got H=0")
        parse_grid(grid)
        rng = np.random.default_rng(seed)
        seeds = rng.integers(0, 2**31, size=H)
        heads = [SingleHead.random(d, seed=int(s), grid=grid, bound=bound, v_zeros=v_zeros, biases=biases)
                 for s in seeds]
        b = heads[0].b if heads else _FZERO  # one output bias for the sum
        heads = [SingleHead(h.W, h.v, h.c) for h in heads]
        if biases and not heads:
            b = SingleHead.random(d, seed=int(rng.integers(0, 2**31)), grid=grid, bound=bound, biases=True).b
        if duplicate_w:
            heads[1] = SingleHead(heads[0].W, heads[1].v, heads[0].c)
        if shared_w:
            heads[1] = SingleHead(heads[0].W, heads[1].v, heads[1].c)
        if shared_v:
            heads[-1] = SingleHead(heads[-1].W, heads[0].v, heads[-1].c)
        if zero_v:
            heads[-1] = SingleHead(heads[-1].W, [0] * d, heads[-1].c)
        return cls(heads, d=d, b=b)

    def canonical(self) -> "MultiHead":
        """The form results are compared in: :func:`~exact.canonical.canonical_form` (equal ``(W, c)``
        merged with their ``v`` summed, zero ``v`` dropped, sorted; ``b`` kept), which determines
        the map.

        >>> from exact.models import SingleHead
        >>> h = SingleHead([[1]], [2])
        >>> MultiHead([h, h]).canonical() == MultiHead([SingleHead([[1]], [4])])
        True
        """
        groups: dict = {}
        for h in self.heads:
            key = (h.W, h.c)
            if key in groups:
                groups[key] = tuple(a + b for a, b in zip(groups[key], h.v))
            else:
                groups[key] = h.v
        heads = [SingleHead(W, v, c) for (W, c), v in groups.items() if any(v)]
        heads.sort(key=lambda h: (h.W, h.c, h.v))
        return MultiHead(heads, d=self.d, b=self.b)

    def float_heads(self) -> list:
        """The heads' ``(W, v)`` in float64 (one zero head for ``H = 0``), or ``(W, v, c, b)`` for a
        model with biases (``b`` on the first head): what :class:`~exact.oracles.FloatOracle`
        evaluates."""
        zero = (np.zeros((self.d, self.d)), np.zeros(self.d))
        if not self.biased:
            return [h.to_numpy() for h in self.heads] or [zero]
        out = [h.to_numpy() + (h.biases_numpy()[0], 0.0) for h in self.heads] or [zero + (np.zeros(self.d), 0.0)]
        out[0] = out[0][:3] + (float(self.b),)
        return out

    def to_json(self) -> dict:
        """``{"kind": "multi-head", "d": d, "heads": [{"W": ..., "v": ...}, ...]}``; with biases, each
        head also has ``"c"`` and the model ``"b"``.

        >>> MultiHead([SingleHead([[1]], [2], c=[3])], b="1/2").to_json()
        {'kind': 'multi-head', 'd': 1, 'heads': [{'W': [['1']], 'v': ['2'], 'c': ['3']}], 'b': '1/2'}
        """
        biased = self.biased
        heads = []
        for h in self.heads:
            one = h.to_json()
            heads.append({"W": one["W"], "v": one["v"], **({"c": [format_rational(x) for x in h.c]} if biased else {})})
        out = {"kind": "multi-head", "d": self.d, "heads": heads}
        if biased:
            out["b"] = format_rational(self.b)
        return out

    @classmethod
    def from_json(cls, data) -> "MultiHead":
        """Build a model from ``{"kind": "multi-head", "d": d, "heads": [{"W": ..., "v": ...}, ...]}``.

        ``kind`` and ``heads`` are required, ``d`` (needed when there are no heads) and the
        output bias ``b`` (a number) are optional; any other field is an error.  Each head has
        the fields ``W`` and ``v``, and optionally its score bias ``c`` (a vector).

        >>> MultiHead.from_json({"kind": "multi-head", "heads": [], "d": 2, "H": 0})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: unknown field(s) ['H']; allowed fields: ['b', 'd', 'heads', 'kind']
        """

        if not isinstance(data, dict) or check_kind(data, where="model", error=ShapeError) != "multi-head":
            raise ShapeError("model: expected a JSON object of kind 'multi-head'")
        check_fields(data, where="model", required=("kind", "heads"), optional=("d", "b"), error=ShapeError)
        b = data.get("b", 0)
        if isinstance(b, (list, tuple, dict, bool)) or b is None:
            raise ShapeError(f"model: field 'b': expected a number, got {describe_json(b)}")
        d = data.get("d")
        if d is not None and (not isinstance(d, int) or isinstance(d, bool)):
            raise ShapeError(f"model: field 'd': expected an integer, got {describe_json(d)}")
        if d is not None and d.bit_length() > 62:
            raise ShapeError(f"model: field 'd': expected an integer below 2^62, got one with {len(str(abs(d)))} digits")
        heads = data["heads"]
        if not isinstance(heads, list):
            raise ShapeError("model: expected a list 'heads'")
        parsed = []
        for i, h in enumerate(heads):
            if isinstance(h, dict) and "b" in h:
                raise ShapeError(f"heads[{i}]: field 'b': the output bias is one number of the model (its field "
                                 "'b'), not of a head")
            if not isinstance(h, dict) or not {"W", "v"} <= set(h) <= {"W", "v", "c"}:
                raise ShapeError(f"heads[{i}]: expected an object with 'W' and 'v' (and optionally 'c')")
            if not isinstance(h["W"], list):
                raise ShapeError(f"heads[{i}]: W: expected a matrix (a list of rows), got {describe_json(h['W'])}")
            if not isinstance(h["v"], list):
                raise ShapeError(f"heads[{i}]: v: expected a vector (a list of numbers), got {describe_json(h['v'])}")
            if "c" in h and not isinstance(h["c"], list):
                raise ShapeError(f"heads[{i}]: c: expected a vector (a list of numbers), got {describe_json(h['c'])}")
            try:
                parsed.append(SingleHead(h["W"], h["v"], h.get("c")))
            except ShapeError as e:
                raise ShapeError(f"heads[{i}]: {e}") from None
            except ValueError as e:  # InvalidNumber and the like: keep the class, name the head
                raise type(e)(f"heads[{i}]: {e}") from None
        try:
            return cls(parsed, d=d, b=b)
        except ValueError as e:
            if "b:" in str(e) and not isinstance(e, ShapeError):
                raise type(e)(f"model: {e}") from None
            raise
