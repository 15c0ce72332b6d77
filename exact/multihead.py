"""Multi-head attention with exact parameters [BSHK26, KKG26].

    f(X) = Σ_{h=1}^{H} softmax(X W_h x_N)ᵀ (X v_h)

:class:`MultiHead` is an ordered tuple of :class:`~exact.models.SingleHead` heads.  Its
parameters are not identifiable: heads with equal ``W`` can share their ``v`` in any
way, heads with ``v = 0`` can be added or dropped, and heads can be permuted
(Proposition 7.1 of [BSHK26]).  :func:`exact.canonical.canonical_form` picks one
representative; two parameterisations define the same map iff their canonical
forms are equal ([KKG26]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .errors import InvalidArgument, ShapeError
from .jsonfields import check_fields, check_kind, describe_json
from .expfield import ExpSum
from .grids import parse_grid
from .models import SingleHead, evaluate_float
from .sequences import as_sequence

__all__ = ["MultiHead"]


@dataclass(frozen=True)
class MultiHead:
    """``H >= 0`` softmax heads on tokens of dimension ``d``, summed.

    Parameters
    ----------
    heads : sequence of SingleHead or (W, v) pairs
        The heads, in order (order matters for equality as parameters, not for the map).
    d : int, optional
        Token dimension; required only when there are no heads.

    Examples
    --------
    >>> m = MultiHead([([[1, 0], [0, 1]], [1, 0]), ([[0, 1], [1, 0]], [0, "1/2"])])
    >>> m.H, m.d
    (2, 2)
    >>> round(m.float([[1, 0], [0, 1]]), 12)
    0.403412132055
    """

    heads: Any  # given as any sequence of heads; stored as a tuple of SingleHead
    d: Any = None  # an int after construction (needed as input only when there are no heads)
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
            if heads[-1].biased:
                raise InvalidArgument(f"heads[{i}]: a head with biases (c or b nonzero); a sum of heads with biases "
                                      "is not a model kind yet: learn a single head with biases "
                                      "(learn_single_head_biased)")
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
        object.__setattr__(self, "heads", tuple(heads))
        object.__setattr__(self, "d", d)

    def parameters(self) -> tuple:
        """Every parameter as one flat tuple of Fractions, head by head."""
        return tuple(x for h in self.heads for x in h.parameters())

    @property
    def H(self) -> int:
        """The number of heads."""
        return len(self.heads)

    def exact(self, X) -> ExpSum:
        """The exact value ``f(X)`` as a sum of exp-ratios (heads with equal scores merge)."""
        X = as_sequence(X, d=self.d)  # validated even when there are no heads
        return ExpSum([h.exact(X) for h in self.heads])

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
        if not self.heads:
            return 0.0 if X.ndim == 2 else np.zeros(X.shape[0])
        total = np.zeros(X.shape[0]) if X.ndim == 3 else 0.0
        for h in self.heads:
            W, v = h.to_numpy()
            total = total + evaluate_float(W, v, X)
        return total

    @classmethod
    def random(
        cls, d: int, H: int, *, seed=None, grid="rational:7", bound=2, v_zeros: int = 0,
        duplicate_w: bool = False, zero_v: bool = False, shared_v: bool = False,
    ) -> "MultiHead":
        """``H`` independent random heads (see :meth:`SingleHead.random`), seeded.

        Three options build the instances whose parameters are not identifiable
        (Proposition 7.1) and that a canonical learner must still get right:

        * ``duplicate_w``: head 2 takes head 1's ``W`` (they merge in the canonical form);
        * ``shared_v``: the last head takes head 1's ``v`` (a different ``W``: both stay);
        * ``zero_v``: the last head gets ``v = 0`` (it is dropped), applied after ``shared_v``.

        >>> MultiHead.random(2, 3, seed=0) == MultiHead.random(2, 3, seed=0)
        True
        >>> m = MultiHead.random(2, 3, seed=0, duplicate_w=True, zero_v=True)
        >>> m.heads[1].W == m.heads[0].W, any(m.heads[2].v)
        (True, False)
        """
        if not isinstance(H, int) or H < 0:
            raise InvalidArgument(f"H: expected a non-negative number of heads, got {H!r}")
        if seed is not None and not (isinstance(seed, int) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        if (duplicate_w or shared_v) and H < 2:
            raise InvalidArgument(f"duplicate_w/shared_v: need at least 2 heads, got H={H}")
        if zero_v and H < 1:
            raise InvalidArgument("zero_v: needs at least 1 head, got H=0")
        parse_grid(grid)
        rng = np.random.default_rng(seed)
        seeds = rng.integers(0, 2**31, size=H)
        heads = [SingleHead.random(d, seed=int(s), grid=grid, bound=bound, v_zeros=v_zeros) for s in seeds]
        if duplicate_w:
            heads[1] = SingleHead(heads[0].W, heads[1].v)
        if shared_v:
            heads[-1] = SingleHead(heads[-1].W, heads[0].v)
        if zero_v:
            heads[-1] = SingleHead(heads[-1].W, [0] * d)
        return cls(heads, d=d)

    def canonical(self) -> "MultiHead":
        """The form results are compared in: :func:`~exact.canonical.canonical_form` (equal ``W``
        merged with their ``v`` summed, zero ``v`` dropped, sorted), which determines the map.

        >>> from exact.models import SingleHead
        >>> h = SingleHead([[1]], [2])
        >>> MultiHead([h, h]).canonical() == MultiHead([SingleHead([[1]], [4])])
        True
        """
        groups: dict = {}
        for h in self.heads:
            if h.W in groups:
                groups[h.W] = tuple(a + b for a, b in zip(groups[h.W], h.v))
            else:
                groups[h.W] = h.v
        heads = [SingleHead(W, v) for W, v in groups.items() if any(v)]
        heads.sort(key=lambda h: (h.W, h.v))
        return MultiHead(heads, d=self.d)

    def float_heads(self) -> list:
        """The heads' ``(W, v)`` in float64 (one zero head for ``H = 0``): what
        :class:`~exact.oracles.FloatOracle` evaluates."""
        return [h.to_numpy() for h in self.heads] or [(np.zeros((self.d, self.d)), np.zeros(self.d))]

    def to_json(self) -> dict:
        """``{"kind": "multi-head", "d": d, "heads": [{"W": ..., "v": ...}, ...]}``."""
        return {
            "kind": "multi-head",
            "d": self.d,
            "heads": [{"W": h.to_json()["W"], "v": h.to_json()["v"]} for h in self.heads],
        }

    @classmethod
    def from_json(cls, data) -> "MultiHead":
        """Build a model from ``{"kind": "multi-head", "d": d, "heads": [{"W": ..., "v": ...}, ...]}``.

        ``kind`` and ``heads`` are required, ``d`` is optional (needed when there are no
        heads); any other field is an error.  Each head has exactly the fields ``W`` and ``v``.

        >>> MultiHead.from_json({"kind": "multi-head", "heads": [], "d": 2, "H": 0})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: unknown field(s) ['H']; allowed fields: ['d', 'heads', 'kind']
        """

        if not isinstance(data, dict) or check_kind(data, where="model", error=ShapeError) != "multi-head":
            raise ShapeError("model: expected a JSON object of kind 'multi-head'")
        check_fields(data, where="model", required=("kind", "heads"), optional=("d",), error=ShapeError)
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
            if not isinstance(h, dict) or set(h) != {"W", "v"}:
                raise ShapeError(f"heads[{i}]: expected an object with 'W' and 'v'")
            if not isinstance(h["W"], list):
                raise ShapeError(f"heads[{i}]: W: expected a matrix (a list of rows), got {describe_json(h['W'])}")
            if not isinstance(h["v"], list):
                raise ShapeError(f"heads[{i}]: v: expected a vector (a list of numbers), got {describe_json(h['v'])}")
            try:
                parsed.append(SingleHead(h["W"], h["v"]))
            except ShapeError as e:
                raise ShapeError(f"heads[{i}]: {e}") from None
            except ValueError as e:  # InvalidNumber and the like: keep the class, name the head
                raise type(e)(f"heads[{i}]: {e}") from None
        return cls(parsed, d=d)
