"""One-hidden-layer ReLU networks ``g(x) = wᵀReLU(Ax)`` (and, with biases, ``wᵀReLU(Ax + a) + b``)
and their canonical forms.

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

**Biases.**  ``g(x) = wᵀReLU(Ax + a) + b`` is the bias-free network
``g̃(y) = wᵀReLU([A | a]·y) + b·y_{d+1}`` of ``y = (x, 1) ∈ ℚ^{d+1}``, so both forms carry over in
homogeneous coordinates (``affine=True``): the hyperplanes are ``(n_k, o_k)`` (``n_kᵀx + o_k = 0``,
scaled so that the first nonzero entry of ``n_k`` is 1), the linear part is ``(L, ℓ₀)`` with the
constant ``ℓ₀``.  Two differences: a unit whose ``a_j``-row is zero is the constant
``w_j·ReLU(α_j)``, which joins ``ℓ₀`` (on ``y_{d+1} = 1`` its "hyperplane" is nowhere); and the
unit form's residual has ``b`` as its last entry (the part along ``e_{d+1}`` no unit explains).
The symmetries that remain are those of the bias-free case in ``d + 1`` dimensions: permutation,
positive scaling ``(a_j, α_j, w_j) → (c·a_j, c·α_j, w_j/c)``, merging units on one oriented
hyperplane, an antipodal pair ``w·ReLU(z) − w·ReLU(−z) = w·z`` being affine, and constant units
trading with ``b``.  A form whose hyperplanes all pass through 0 and whose constant is 0 is
given in the bias-free form, so a network with zero biases and its bias-free twin compare equal.

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
from .numbers import format_rational, to_fmpq, to_fraction
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
    affine: bool = False  # homogeneous coordinates (x, 1): normals (n, o), linear (L, ℓ₀)

    @property
    def d(self) -> int:
        return len(self.linear) - (1 if self.affine else 0)

    def value(self, x) -> Fraction:
        """``g(x)`` exactly."""
        x = tuple(Fraction(t) for t in x) + ((Fraction(1),) if self.affine else ())
        return _dot(self.linear, x) + sum((k * abs(_dot(n, x)) for n, k in zip(self.normals, self.kinks)), Fraction(0))

    def to_json(self) -> dict:
        out = {
            "normals": [[format_rational(x) for x in n] for n in self.normals],
            "kinks": [format_rational(x) for x in self.kinks],
            "linear": [format_rational(x) for x in self.linear],
        }
        if self.affine:
            out["affine"] = True
        return out

    @classmethod
    def build_affine(cls, d: int, terms, linear) -> "FunctionForm":
        """From ``((n, o), κ)`` pairs and ``(L, ℓ₀)`` (length ``d + 1``), in homogeneous coordinates:
        a term with ``n = 0`` is the constant ``κ|o|`` and joins ``ℓ₀``; the rest as :meth:`build`.
        Without offsets and constant the result is the bias-free form.

        >>> f = FunctionForm.build_affine(1, [((2, -2), 1), ((0, 3), 1)], [0, 0])
        >>> f.affine, f.normals, f.kinks, f.linear
        (True, ((Fraction(1, 1), Fraction(-1, 1)),), (Fraction(2, 1),), (Fraction(0, 1), Fraction(3, 1)))
        """
        lin = [Fraction(x) for x in linear]
        if len(lin) != d + 1:
            raise ShapeError(f"linear: expected length {d + 1}, got {len(lin)}")
        kept = []
        for n, k in terms:
            n = tuple(Fraction(x) for x in n)
            if any(n[:d]):
                kept.append((n, k))
            else:
                lin[d] += Fraction(k) * abs(n[d])
        form = cls.build(d + 1, kept, lin)
        if not lin[d] and all(not n[d] for n in form.normals):
            return cls.build(d, [(n[:d], k) for n, k in zip(form.normals, form.kinks)], lin[:d])
        return cls(form.normals, form.kinks, form.linear, True)

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
    affine: bool = False  # homogeneous coordinates: units (a_j, α_j), residual (L, b)

    @classmethod
    def build_affine(cls, d: int, units, residual) -> "UnitForm":
        """Units ``((a_j, α_j), w_j)`` and the residual ``(L, b)`` in homogeneous coordinates: a unit
        with ``a_j = 0`` is the constant ``w_j·ReLU(α_j)`` and joins ``b``; without offsets and ``b``
        the result is the bias-free form."""
        res = [Fraction(x) for x in residual]
        kept = []
        for a, w in units:
            a = tuple(Fraction(x) for x in a)
            if any(a[:d]):
                kept.append((a, w))
            else:
                res[d] += Fraction(w) * max(a[d], Fraction(0))
        form = cls.build(d + 1, kept, res)
        if not res[d] and all(not a[d] for a, _ in form.units):
            return cls.build(d, [(a[:d], w) for a, w in form.units], res[:d])
        return cls(form.units, form.residual, True)

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
        """The units as a network (the residual linear part, if any, as an antipodal pair; with
        biases, the residual's last entry as ``b``)."""
        if self.affine:
            d = len(self.residual) - 1
            L, b = list(self.residual[:d]), self.residual[d]
            A = [list(a[:d]) for a, _ in self.units]
            alpha = [a[d] for a, _ in self.units]
            w = [x for _, x in self.units]
            if any(L):
                A += [L, [-x for x in L]]
                alpha += [Fraction(0), Fraction(0)]
                w += [Fraction(1), Fraction(-1)]
            return ReLUFFN(A or [[0] * d], w or [0], alpha or [0], b)
        A = [list(a) for a, _ in self.units]
        w = [x for _, x in self.units]
        if any(self.residual):
            A += [list(self.residual), [-x for x in self.residual]]
            w += [Fraction(1), Fraction(-1)]
        d = len(self.residual)
        return ReLUFFN(A or [[0] * d], w or [0])

    def to_json(self) -> dict:
        out = {
            "A": [[format_rational(x) for x in a] for a, _ in self.units],
            "w": [format_rational(w) for _, w in self.units],
            "residual": [format_rational(x) for x in self.residual],
        }
        if self.affine:
            out["affine"] = True
        return out


def _readout(W: list, Z: list) -> int:
    """``Σ_j W_j·max(Z_j, 0)`` over integers."""
    total = 0
    for wj, z in zip(W, Z):
        if z > 0 and wj:
            total += wj * z
    return total


@dataclass(frozen=True)
class ReLUFFN:
    """A one-hidden-layer ReLU network ``g(x) = wᵀReLU(Ax)`` with exact parameters, optionally with
    biases: ``g(x) = wᵀReLU(Ax + a) + b``.

    Parameters
    ----------
    A : m×d array-like of exact numbers
    w : length-m array-like
    a : length-m array-like, optional
        The hidden biases (default 0).
    b : number, optional
        The output bias (default 0).  With ``a = 0`` and ``b = 0`` the network is bias-free.

    Examples
    --------
    >>> net = ReLUFFN([[1, -1], [0, 2]], [3, "1/2"])
    >>> net.d, net.m, net.value([2, 1])
    (2, 2, Fraction(4, 1))
    >>> float(net.ball([[2, 1]], prec=64).mid())
    4.0
    >>> ReLUFFN([[1, -1], [0, 2]], [3, "1/2"], a=[-1, 0], b=2).value([2, 1])  # 3·ReLU(0) + ReLU(2)/2 + 2
    Fraction(3, 1)
    """

    A: Any
    w: Any
    _Aq: Any = field(init=False, repr=False, compare=False)  # A as a flint matrix, for evaluation
    _wq: Any = field(init=False, repr=False, compare=False)  # w as fmpq
    a: Any = None  # stored as a tuple of Fractions (zeros when not given)
    b: Any = 0  # stored as a Fraction
    kind: ClassVar[str] = "ffn"
    #: Queries are one-token sequences ``[x]`` (verification queries too).
    query_length: ClassVar[int] = 1

    def __post_init__(self):
        A = as_matrix(self.A, name="A")
        w = as_vector(self.w, name="w", size=len(A))
        a = (Fraction(0),) * len(A) if self.a is None else as_vector(self.a, name="a", size=len(A))
        object.__setattr__(self, "A", A)
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", to_fraction(self.b, name="b"))
        object.__setattr__(self, "_Aq", QMatrix.from_rows(A))  # evaluation in C (flint)
        object.__setattr__(self, "_wq", [to_fmpq(x) for x in w])

    def __repr__(self) -> str:
        biases = f", a={self.a!r}, b={self.b!r}" if self.biased else ""
        return f"{type(self).__name__}(A={self.A!r}, w={self.w!r}{biases})"

    @property
    def biased(self) -> bool:
        """Whether some hidden bias or the output bias is nonzero."""
        return bool(self.b) or any(self.a)

    def _value_fq(self, x) -> fmpq:
        """``wᵀReLU(Ax + a) + b`` for ``x`` a list of ``fmpq`` (or exact numbers)."""
        z = self._Aq.matvec(x)
        total = fmpq(0)
        if self.biased:
            z = [zj + to_fmpq(aj) for zj, aj in zip(z, self.a)]
            total = to_fmpq(self.b)
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
        core = tuple(x for r in self.A for x in r) + tuple(self.w)
        return core + tuple(self.a) + (self.b,) if self.biased else core

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
        Ai, W, c, cols_A, _ = self._int_form()
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
                out[k] = self._finish(W, Z, c, D)
        for bid, ks in shifted.items():
            Zb, Db = base_Z[bid]
            for k in ks:
                _, j, step = seqs[k]._shift
                num, den = step.numerator, step.denominator
                common = Db * den // math.gcd(Db, den)
                scale, add = common // Db, num * (common // den)
                col = cols_A[j]
                Z = [scale * zb + add * a for zb, a in zip(Zb, col)]
                out[k] = self._finish(W, Z, c, common)
        return out

    def _finish(self, W, Z, c: int, D: int) -> fmpq:
        """``g`` from the integer pre-activations ``Z`` of a token with denominator ``D`` (the
        hidden biases not yet added): ``(Σ_j W_j·ReLU(Z_j + α_j·D)) / (c·D) + b``."""
        if not self.biased:
            return fmpq(_readout(W, Z), c * D)
        alpha = self._int_form()[4]
        return fmpq(_readout(W, [z + al * D for z, al in zip(Z, alpha)]), c * D) + to_fmpq(self.b)

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
            rs = [math.lcm(*(x.denominator for x in row), aj.denominator) for row, aj in zip(self.A, self.a)]
            rows = [[int(x * r) for x in row] for row, r in zip(self.A, rs)]
            ws = [w / r for w, r in zip(self.w, rs)]
            c = math.lcm(*(x.denominator for x in ws))
            cols = [[row[j] for row in rows] for j in range(self.d)]
            alpha = [int(aj * r) for aj, r in zip(self.a, rs)]  # the hidden biases over the rows' denominators
            cached = (ZMatrix(rows), [int(x * c) for x in ws], c, cols, alpha)
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
        a = np.array([float(x) for x in self.a])
        out = np.maximum(X[..., 0, :] @ A.T + a, 0.0) @ w + float(self.b)
        return float(out) if X.ndim == 2 else out

    def float_with_bound(self, X) -> tuple:
        """``g`` in float64 for ``(n, d)`` inputs, with a rigorous bound on each value's rounding error.

        With ``γ_k = k·u/(1 − k·u)`` (``u = 2⁻⁵³``): ``z = Ax + a`` errs by at most
        ``γ_{d+1}(|A||x| + |a|)`` entrywise, ReLU is 1-Lipschitz, and ``wᵀr + b`` adds
        ``γ_{m+1}(|w|ᵀ|r| + |b|)``; the bound is ``|w|ᵀ e_z`` plus that, widened by one ulp.

        >>> net = ReLUFFN([[1, -1]], [3], a=[1], b="1/3")
        >>> y, e = net.float_with_bound(np.array([[2.0, 0.5]]))
        >>> abs(float(y[0]) - float(net.value([2, "1/2"]))) <= float(e[0]), float(e[0]) < 1e-14
        (True, True)
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ShapeError(f"X: expected shape (n, {self.d}), got {X.shape}")
        A = np.array([[float(x) for x in r] for r in self.A])
        w = np.array([float(x) for x in self.w])
        a = np.array([float(x) for x in self.a])
        u = 2.0**-53

        def gamma(k: int) -> float:
            return k * u / (1 - k * u)

        z = X @ A.T + a
        r = np.maximum(z, 0.0)
        y = r @ w + float(self.b)
        ez = gamma(self.d + 1) * (np.abs(X) @ np.abs(A).T + np.abs(a))
        e = ez @ np.abs(w) + gamma(self.m + 1) * (r @ np.abs(w) + abs(float(self.b)))
        return y, e * (1 + 4 * u) + np.abs(y) * u

    def function_form(self) -> FunctionForm:
        """The identifiable function-level form ``Lᵀx + Σ κ_k|n_kᵀx|`` (with biases, in homogeneous
        coordinates: ``(L, ℓ₀)ᵀ(x, 1) + Σ κ_k|n_kᵀx + o_k|``)."""
        d = self.d
        if self.biased:
            terms, L = [], [Fraction(0)] * d + [self.b]
            for row, aj, w in zip(self.A, self.a, self.w):
                if not w:
                    continue
                full = tuple(row) + (aj,)
                terms.append((full, w / 2))
                L = [x + w * y / 2 for x, y in zip(L, full)]
            return FunctionForm.build_affine(d, terms, L)
        terms, L = [], [Fraction(0)] * d
        for a, w in zip(self.A, self.w):
            if not w or not any(a):
                continue
            terms.append((a, w / 2))
            L = [x + w * y / 2 for x, y in zip(L, a)]
        return FunctionForm.build(d, terms, L)

    def unit_form(self) -> UnitForm:
        """``(A, w)`` up to permutation and positive scaling (see :class:`UnitForm`); with biases in
        homogeneous coordinates, ``b`` the residual's last entry."""
        if self.biased:
            return UnitForm.build_affine(self.d, [(tuple(r) + (aj,), w) for r, aj, w in zip(self.A, self.a, self.w)],
                                         (Fraction(0),) * self.d + (self.b,))
        return UnitForm.build(self.d, zip(self.A, self.w))

    @classmethod
    def random(cls, d: int, m: int, *, seed=None, grid: str = "rational:7", bound=2, biases: bool = False) -> "ReLUFFN":
        """A random network with entries on ``grid`` (default small rationals ``p/q``, ``q <= 7``),
        every row of ``A`` and every ``w_j`` nonzero; ``biases`` also draws ``a`` and ``b`` (after
        ``A`` and ``w``, so those are the same as without).

        >>> ReLUFFN.random(3, 4, seed=1) == ReLUFFN.random(3, 4, seed=1)
        True
        >>> net = ReLUFFN.random(3, 4, seed=1, biases=True)
        >>> net.biased, net.A == ReLUFFN.random(3, 4, seed=1).A
        (True, True)
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
        w = [nonzero() for _ in range(m)]
        if biases:
            return cls(A, w, [draw() for _ in range(m)], draw())
        return cls(A, w)

    def canonical(self) -> FunctionForm:
        """The form results are compared in: the function-level form, which determines the map
        (the unit level is compared only where a result claims it identified)."""
        return self.function_form()

    def to_json(self) -> dict:
        """``{"kind": "ffn", "d": d, "m": m, "A": [[...], ...], "w": [...]}``, with ``"a"`` and ``"b"``
        for a network with biases."""
        out = {
            "kind": "ffn",
            "d": self.d,
            "m": self.m,
            "A": [[format_rational(x) for x in r] for r in self.A],
            "w": [format_rational(x) for x in self.w],
        }
        if self.biased:
            out["a"] = [format_rational(x) for x in self.a]
            out["b"] = format_rational(self.b)
        return out

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
        check_fields(data, where="model", required=("kind", "A", "w"), optional=("d", "m", "a", "b"), error=ShapeError)
        for key in ("A", "w") + (("a",) if "a" in data else ()):
            if not isinstance(data[key], list):
                raise ShapeError(f"model: field {key!r}: expected a list, got {describe_json(data[key])}")
        b = data.get("b", 0)
        if isinstance(b, (list, dict, bool)) or b is None:
            raise ShapeError(f"model: field 'b': expected a number, got {describe_json(b)}")
        net = cls(data["A"], data["w"], data.get("a"), b)
        for key, value, what in (("d", net.d, "columns"), ("m", net.m, "rows")):
            given = data.get(key)
            if given is not None and given != value:
                raise ShapeError(f"model: field {key!r} is {describe_json(given) if not isinstance(given, int) else given}, "
                                 f"but A has {value} {what}")
        return net
