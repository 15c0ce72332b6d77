"""Bias-free one-hidden-layer ReLU networks ``g(x) = wᵀReLU(Ax)`` and their canonical forms.

``g`` is positively homogeneous, and its parameters are not identifiable as given:
units can be permuted and scaled positively (``(a_j, w_j) → (c·a_j, w_j/c)``, ``c > 0``),
units on the same hyperplane with the same orientation merge, and an antipodal pair
``w·ReLU(z) − w·ReLU(−z) = w·z`` is linear.  Writing ``ReLU(z) = (z + |z|)/2``,

    g(x) = Lᵀx + Σ_k κ_k·|n_kᵀx|

with one term per distinct hyperplane.  This **function-level form** (:class:`FunctionForm`)
is identifiable: ``n_k`` scaled so that its first nonzero entry is 1, ``κ_k ≠ 0``, sorted,
and the residual linear part ``L = ½·Σ_j w_j·a_j``.  Two networks define the same map iff
their function-level forms are equal.

The **unit-level form** (:class:`UnitForm`) is ``(A, w)`` up to permutation and positive
scaling: each unit scaled so that the first nonzero entry of ``a_j`` is ±1, units with the
same ``a_j`` merged, units with ``a_j = 0`` or ``w_j = 0`` dropped, sorted.  It is what a
learner can return when the orientation of every hyperplane is determined.

The network is queried as a black box on one-token sequences ``[x]`` (so the library's
oracles, counters and transcripts apply unchanged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from flint import fmpq

from .errors import InvalidArgument, ShapeError
from .expfield import ExpRatio
from .grids import parse_grid
from .jsonfields import check_fields, check_kind, describe_json
from .models import _sampler, as_matrix, as_vector
from .linalg import QMatrix, ZMatrix
from .numbers import format_rational, to_fmpq
from .sequences import Sequence, as_sequence

__all__ = ["ReLUFFN", "FunctionForm", "UnitForm", "normalize_direction", "relu_value"]


def normalize_direction(a) -> tuple[Fraction, tuple]:
    """``(c, n)`` with ``a = c·n`` and the first nonzero entry of ``n`` equal to 1 (``c = 0`` for ``a = 0``).

    >>> normalize_direction([0, Fraction(-2), 4])
    (Fraction(-2, 1), (Fraction(0, 1), Fraction(1, 1), Fraction(-2, 1)))
    """
    a = tuple(Fraction(x) for x in a)
    c = next((x for x in a if x), Fraction(0))
    if not c:
        return Fraction(0), a
    return c, tuple(x / c for x in a)


def _dot(a, x) -> Fraction:
    return sum((p * q for p, q in zip(a, x) if p and q), Fraction(0))


def relu_value(A, w, x) -> Fraction:
    """``wᵀReLU(Ax)`` exactly, for rational ``A``, ``w`` and ``x``."""
    total = Fraction(0)
    for row, wj in zip(A, w):
        z = _dot(row, x)
        if z > 0:
            total += wj * z
    return total


@dataclass(frozen=True)
class FunctionForm:
    """``g(x) = Lᵀx + Σ_k κ_k·|n_kᵀx|``: the identifiable form of a bias-free ReLU network.

    Attributes
    ----------
    normals : tuple of tuples
        Distinct hyperplane normals, first nonzero entry 1, sorted.
    kinks : tuple
        ``κ_k ≠ 0`` for each normal (half the jump of the gradient across the hyperplane).
    linear : tuple
        ``L``, the residual linear part (length ``d``).

    Examples
    --------
    >>> net = ReLUFFN([[1, 0], [-2, 0], [0, 1]], [1, 1, -1])
    >>> f = net.function_form()
    >>> f.normals, f.kinks, f.linear
    (((Fraction(0, 1), Fraction(1, 1)), (Fraction(1, 1), Fraction(0, 1))), (Fraction(-1, 2), Fraction(3, 2)), (Fraction(-1, 2), Fraction(-1, 2)))
    >>> f.value([3, 5]) == net.value([3, 5])
    True
    """

    normals: tuple
    kinks: tuple
    linear: tuple

    @property
    def d(self) -> int:
        return len(self.linear)

    def value(self, x) -> Fraction:
        """``g(x)`` exactly."""
        x = tuple(Fraction(t) for t in x)
        return _dot(self.linear, x) + sum((k * abs(_dot(n, x)) for n, k in zip(self.normals, self.kinks)), Fraction(0))

    def to_json(self) -> dict:
        return {
            "normals": [[format_rational(x) for x in n] for n in self.normals],
            "kinks": [format_rational(x) for x in self.kinks],
            "linear": [format_rational(x) for x in self.linear],
        }

    @classmethod
    def build(cls, d: int, terms, linear) -> "FunctionForm":
        """From ``(normal, κ)`` pairs (any scaling, any order, repeats allowed) and ``L``:
        normals rescaled to a first nonzero entry 1 (``κ`` scaled by ``|c|``), repeats merged,
        zero kinks dropped, sorted."""
        merged: dict = {}
        for n, k in terms:
            c, nn = normalize_direction(n)
            if not c:
                continue
            merged[nn] = merged.get(nn, Fraction(0)) + Fraction(k) * abs(c)
        items = sorted((n, k) for n, k in merged.items() if k)
        lin = tuple(Fraction(x) for x in linear)
        if len(lin) != d:
            raise ShapeError(f"linear: expected length {d}, got {len(lin)}")
        return cls(tuple(n for n, _ in items), tuple(k for _, k in items), lin)


@dataclass(frozen=True)
class UnitForm:
    """``(A, w)`` up to permutation and positive scaling: units ``(a_j, w_j)`` with the first
    nonzero entry of ``a_j`` equal to ±1, merged, nonzero, sorted; plus a residual linear part
    (zero for a network given by its units; a learner reports there what no unit explains).

    >>> ReLUFFN([[2, 4], [1, 2], [-3, 0]], [1, 1, 5]).unit_form().units
    (((Fraction(-1, 1), Fraction(0, 1)), Fraction(15, 1)), ((Fraction(1, 1), Fraction(2, 1)), Fraction(3, 1)))
    """

    units: tuple
    residual: tuple

    @classmethod
    def build(cls, d: int, units, residual=None) -> "UnitForm":
        merged: dict = {}
        for a, w in units:
            c, n = normalize_direction(a)
            if not c or not w:
                continue
            key = tuple(x * (1 if c > 0 else -1) for x in n)  # a/|c|: first nonzero entry ±1
            merged[key] = merged.get(key, Fraction(0)) + Fraction(w) * abs(c)
        items = tuple(sorted((a, w) for a, w in merged.items() if w))
        res = tuple(Fraction(x) for x in residual) if residual is not None else (Fraction(0),) * d
        return cls(items, res)

    def network(self) -> "ReLUFFN":
        """The units as a network (the residual, if any, as an antipodal pair)."""
        A = [list(a) for a, _ in self.units]
        w = [x for _, x in self.units]
        if any(self.residual):
            A += [list(self.residual), [-x for x in self.residual]]
            w += [Fraction(1), Fraction(-1)]
        d = len(self.residual)
        return ReLUFFN(A or [[0] * d], w or [0])

    def to_json(self) -> dict:
        return {
            "A": [[format_rational(x) for x in a] for a, _ in self.units],
            "w": [format_rational(w) for _, w in self.units],
            "residual": [format_rational(x) for x in self.residual],
        }


def _readout(W: list, Z: list) -> int:
    """``Σ_j W_j·max(Z_j, 0)`` over integers."""
    total = 0
    for wj, z in zip(W, Z):
        if z > 0 and wj:
            total += wj * z
    return total


@dataclass(frozen=True)
class ReLUFFN:
    """A bias-free one-hidden-layer ReLU network ``g(x) = wᵀReLU(Ax)`` with exact parameters.

    Parameters
    ----------
    A : m×d array-like of exact numbers
    w : length-m array-like

    Examples
    --------
    >>> net = ReLUFFN([[1, -1], [0, 2]], [3, "1/2"])
    >>> net.d, net.m, net.value([2, 1])
    (2, 2, Fraction(4, 1))
    >>> float(net.ball([[2, 1]], prec=64).mid())
    4.0
    """

    A: Any
    w: Any
    _Aq: Any = field(init=False, repr=False, compare=False)  # A as a flint matrix, for evaluation
    _wq: Any = field(init=False, repr=False, compare=False)  # w as fmpq
    kind: ClassVar[str] = "ffn"
    #: Queries are one-token sequences ``[x]`` (verification queries too).
    query_length: ClassVar[int] = 1

    def __post_init__(self):
        A = as_matrix(self.A, name="A")
        w = as_vector(self.w, name="w", size=len(A))
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "_Aq", QMatrix.from_rows(A))  # evaluation in C (flint)
        object.__setattr__(self, "_wq", [to_fmpq(x) for x in w])

    def _value_fq(self, x) -> fmpq:
        """``wᵀReLU(Ax)`` for ``x`` a list of ``fmpq`` (or exact numbers)."""
        z = self._Aq.matvec(x)
        total = fmpq(0)
        for zj, wj in zip(z, self._wq):
            if zj > 0:
                total += wj * zj
        return total

    @property
    def d(self) -> int:
        return len(self.A[0])

    @property
    def m(self) -> int:
        return len(self.w)

    def parameters(self) -> tuple:
        return tuple(x for r in self.A for x in r) + tuple(self.w)

    def value(self, x) -> Fraction:
        """``g(x)`` exactly for a length-``d`` vector."""
        x = as_vector(x, name="x", size=self.d)
        r = self._value_fq(list(x))
        return Fraction(int(r.p), int(r.q))

    def _token(self, X) -> list:
        seq = X if isinstance(X, Sequence) else as_sequence(X, d=self.d)
        if seq.length != 1:
            raise ShapeError(f"X: a ReLU network is queried on one-token sequences [x], got {seq.length} tokens")
        x = [fmpq(0)] * self.d
        for j, q in seq._fmpq_rows[0]:
            x[j] = q
        return x

    def exact(self, X) -> ExpRatio:
        """``g(x)`` for the one-token sequence ``X = [x]``, as an exact (rational) exp-ratio."""
        return ExpRatio._of_fmpq(self._value_fq(self._token(X)))

    def exact_batch(self, seqs) -> list:
        """:meth:`exact` for many one-token sequences at once (one integer matrix product)."""
        return [ExpRatio._of_fmpq(v) for v in self.rational_batch(seqs)]

    def rational_batch(self, seqs, *, chunk: int = 2048) -> list:
        """``g(x)`` as ``fmpq`` for many one-token sequences: ``A`` and the tokens in integer
        form, ``Z = A_int·X_int`` in flint, then the ReLU and the readout over integers.  A
        probe ``base + step·e_j`` (a shifted sequence) costs one column of ``A``: its ``Z`` is
        the base's, rescaled, plus ``step`` times column ``j``."""
        Ai, W, c, cols_A = self._int_form()
        d = self.d
        seqs = [X if isinstance(X, Sequence) else as_sequence(X, d=d) for X in seqs]
        out: list = [None] * len(seqs)
        plain = []
        shifted: dict = {}
        for k, seq in enumerate(seqs):
            if seq.length != 1:
                raise ShapeError(f"X: a ReLU network is queried on one-token sequences [x], got {seq.length} tokens")
            if seq._shift is not None:
                shifted.setdefault(id(seq._shift[0]), []).append(k)
            else:
                plain.append(k)
        bases = {id(seqs[ks[0]]._shift[0]): seqs[ks[0]]._shift[0] for ks in shifted.values()}
        base_ids = list(bases)
        base_Z = dict(zip(base_ids, self._products([bases[i] for i in base_ids], chunk)))
        for start in range(0, len(plain), chunk):
            part = plain[start:start + chunk]
            for k, (Z, D) in zip(part, self._products([seqs[k] for k in part], chunk)):
                out[k] = fmpq(_readout(W, Z), c * D)
        for bid, ks in shifted.items():
            Zb, Db = base_Z[bid]
            for k in ks:
                _, j, step = seqs[k]._shift
                num, den = step.numerator, step.denominator
                common = Db * den // math.gcd(Db, den)
                scale, add = common // Db, num * (common // den)
                col = cols_A[j]
                Z = [scale * zb + add * a for zb, a in zip(Zb, col)]
                out[k] = fmpq(_readout(W, Z), c * common)
        return out

    def _products(self, seqs, chunk: int) -> list:
        """``(A_int·x_int, D)`` per one-token sequence, ``x = x_int/D``, in chunks (flint)."""
        Ai = self._int_form()[0]
        d = self.d
        out = []
        for start in range(0, len(seqs), chunk):
            part = seqs[start:start + chunk]
            cols, dens = [], []
            for seq in part:
                D, dense, pairs = seq._int_rows[0]
                if dense is None:
                    dense = [0] * d
                    for j, x in pairs:
                        dense[j] = x
                cols.append(dense)
                dens.append(D)
            rows = Ai.times_columns(cols)
            out += [([int(row[k]) for row in rows], D) for k, D in enumerate(dens)]
        return out

    def _int_form(self):
        """``(A_int, W, c, columns)``: ``A_int`` the rows of ``A`` over their own denominators
        ``r_j``, ``W_j/c = w_j/r_j`` (so ``g(x) = Σ_j W_j·ReLU(A_int·x)_j / c``), and the columns
        of ``A_int`` as integer lists; computed once."""
        cached = getattr(self, "_ints", None)
        if cached is None:
            rs = [math.lcm(*(x.denominator for x in row)) for row in self.A]
            rows = [[int(x * r) for x in row] for row, r in zip(self.A, rs)]
            ws = [w / r for w, r in zip(self.w, rs)]
            c = math.lcm(*(x.denominator for x in ws))
            cols = [[row[j] for row in rows] for j in range(self.d)]
            cached = (ZMatrix(rows), [int(x * c) for x in ws], c, cols)
            object.__setattr__(self, "_ints", cached)
        return cached

    def ball(self, X, *, prec: int = 128):
        return self.exact(X).ball(prec)

    def float(self, X):
        """``g`` in float64, for ``(1, d)`` or ``(n, 1, d)`` inputs."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim not in (2, 3) or X.shape[-2:] != (1, self.d):
            raise ShapeError(f"X: expected shape (1, {self.d}) or (n, 1, {self.d}), got {X.shape}")
        A = np.array([[float(x) for x in r] for r in self.A])
        w = np.array([float(x) for x in self.w])
        out = np.maximum(X[..., 0, :] @ A.T, 0.0) @ w
        return float(out) if X.ndim == 2 else out

    def function_form(self) -> FunctionForm:
        """The identifiable function-level form ``Lᵀx + Σ κ_k|n_kᵀx|``."""
        d = self.d
        terms, L = [], [Fraction(0)] * d
        for a, w in zip(self.A, self.w):
            if not w or not any(a):
                continue
            terms.append((a, w / 2))
            L = [x + w * y / 2 for x, y in zip(L, a)]
        return FunctionForm.build(d, terms, L)

    def unit_form(self) -> UnitForm:
        """``(A, w)`` up to permutation and positive scaling (see :class:`UnitForm`)."""
        return UnitForm.build(self.d, zip(self.A, self.w))

    @classmethod
    def random(cls, d: int, m: int, *, seed=None, grid: str = "rational:7", bound=2) -> "ReLUFFN":
        """A random network with entries on ``grid`` (default small rationals ``p/q``, ``q <= 7``),
        every row of ``A`` and every ``w_j`` nonzero.

        >>> ReLUFFN.random(3, 4, seed=1) == ReLUFFN.random(3, 4, seed=1)
        True
        """
        for name, value in (("d", d), ("m", m)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ShapeError(f"{name}: expected an integer >= 1, got {value!r}")
        if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        g = parse_grid(grid)
        if g is None:
            raise InvalidArgument("grid: ReLUFFN.random needs a grid to draw entries from, e.g. 'rational:7'")
        rng = np.random.default_rng(seed)
        draw = _sampler(g, rng, Fraction(bound))

        def nonzero():
            for _ in range(1000):
                x = draw()
                if x:
                    return x
            raise InvalidArgument(f"bound: entries round to 0 on grid {grid}; use a larger bound")

        A = [[draw() for _ in range(d)] for _ in range(m)]
        for row in A:
            if not any(row):
                row[int(rng.integers(d))] = nonzero()
        return cls(A, [nonzero() for _ in range(m)])

    def canonical(self) -> FunctionForm:
        """The form results are compared in: the function-level form, which determines the map
        (the unit level is compared only where a result claims it identified)."""
        return self.function_form()

    def to_json(self) -> dict:
        """``{"kind": "ffn", "d": d, "m": m, "A": [[...], ...], "w": [...]}``."""
        return {
            "kind": "ffn",
            "d": self.d,
            "m": self.m,
            "A": [[format_rational(x) for x in r] for r in self.A],
            "w": [format_rational(x) for x in self.w],
        }

    @classmethod
    def from_json(cls, data) -> "ReLUFFN":
        """Build a network from ``{"kind": "ffn", "A": [[...], ...], "w": [...]}`` (``d``, ``m`` optional, checked).

        >>> ReLUFFN.from_json({"kind": "ffn", "A": [["1/2", 1]], "w": [2], "m": 2})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: field 'm' is 2, but A has 1 rows
        """
        if not isinstance(data, dict) or check_kind(data, where="model", error=ShapeError) != "ffn":
            raise ShapeError("model: expected a JSON object of kind 'ffn'")
        check_fields(data, where="model", required=("kind", "A", "w"), optional=("d", "m"), error=ShapeError)
        for key in ("A", "w"):
            if not isinstance(data[key], list):
                raise ShapeError(f"model: field {key!r}: expected a list, got {describe_json(data[key])}")
        net = cls(data["A"], data["w"])
        for key, value, what in (("d", net.d, "columns"), ("m", net.m, "rows")):
            given = data.get(key)
            if given is not None and given != value:
                raise ShapeError(f"model: field {key!r} is {describe_json(given) if not isinstance(given, int) else given}, "
                                 f"but A has {value} {what}")
        return net
