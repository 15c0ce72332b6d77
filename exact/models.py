"""Attention models with exact rational parameters.

:class:`SingleHead` is the single softmax-attention regressor of [BSHK26]:

    s_i = x_iᵀ W x_N,   α = softmax(s),   f(X) = Σ_i α_i (vᵀ x_i),

optionally with the two biases a torch head adds (``docs/biases.md``):

    s_i = x_iᵀ (W x_N + c),   f(X) = b + Σ_i α_i (vᵀ x_i).

It is evaluated three ways: exactly (an :class:`~exact.expfield.ExpRatio`, with a
sympy form), as a rigorous ``arb`` ball at any precision, and in float64 with numpy,
vectorised over many sequences.

References
----------
[BSHK26] Bhattamishra, Shah, Hahn, Kanade, *Provably Learning Attention with Queries*,
arXiv 2601.16873 (ICML 2026), Sec. 2.
"""

from __future__ import annotations

import functools
import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
from flint import fmpq

from .errors import InvalidArgument, InvalidNumber, ShapeError
from .linalg import QMatrix, chain_column, outer_sum, product_int_size, sparse_rows, sparse_rows_times
from .jsonfields import check_fields, check_kind, describe_json
from .expfield import ExpRatio
from .floateval import evaluate_float
from .grids import DyadicGrid, FloatGrid, Grid, RationalGrid, parse_grid
from .numbers import approx, floor_log2, format_rational, to_fmpq, to_fraction
from .sequences import Sequence, as_sequence

__all__ = ["SingleHead", "as_matrix", "as_vector", "evaluate_float"]

_ZERO = fmpq(0)
_FZERO = Fraction(0)


def as_matrix(M, *, name: str, rows: int | None = None, cols: int | None = None) -> tuple:
    """Validate and convert a matrix to a tuple of tuples of Fractions."""
    if isinstance(M, np.ndarray) and M.ndim != 2:
        raise ShapeError(f"{name}: expected a 2-d matrix, got an array of shape {M.shape}")
    if isinstance(M, dict):
        raise ShapeError(f"{name}: expected a matrix (a list of rows), got an object")
    if isinstance(M, (str, bytes)):
        raise ShapeError(f"{name}: expected a matrix (a list of rows of numbers), got a string")
    try:
        given = list(M)
    except TypeError:
        raise ShapeError(f"{name}: expected a matrix (list of rows), got {type(M).__name__}") from None
    out = []
    for i, r in enumerate(given):
        if isinstance(r, (str, bytes)):
            raise ShapeError(f"{name}: expected a matrix (a list of rows of numbers), got a string where a row belongs")
        if isinstance(r, dict):
            raise ShapeError(f"{name}[{i}]: expected a row (a list of numbers), got an object")
        try:
            out.append(list(r))
        except TypeError:
            what = "a number" if isinstance(r, (int, float, Fraction)) else type(r).__name__
            raise ShapeError(f"{name}[{i}]: expected a row (a list of numbers), got {what}") from None
    if rows is not None and len(out) != rows:
        raise ShapeError(f"{name}: expected {rows} rows, got {len(out)}")
    if not out:
        raise ShapeError(f"{name}: expected at least one row, got none")
    width = len(out[0]) if cols is None else cols
    for i, r in enumerate(out):
        if len(r) != width:
            raise ShapeError(f"{name}: expected every row to have {width} entries, row {i} has {len(r)}")
    return tuple(tuple(to_fraction(x, name=f"{name}[{i}][{j}]") for j, x in enumerate(r)) for i, r in enumerate(out))


def as_vector(x, *, name: str, size: int | None = None) -> tuple:
    """Validate and convert a vector to a tuple of Fractions."""
    if isinstance(x, np.ndarray) and x.ndim != 1:
        raise ShapeError(f"{name}: expected a vector, got an array of shape {x.shape}")
    if isinstance(x, dict):
        raise ShapeError(f"{name}: expected a vector (a list of numbers), got an object")
    if isinstance(x, (str, bytes)):
        text = repr(x)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise ShapeError(f"{name}: expected a vector (a list of numbers), got the string {text}")
    try:
        out = list(x)
    except TypeError:
        raise ShapeError(f"{name}: expected a vector, got {type(x).__name__}") from None
    if size is not None and len(out) != size:
        raise ShapeError(f"{name}: expected length {size}, got {len(out)}")
    return tuple(to_fraction(q, name=f"{name}[{i}]") for i, q in enumerate(out))


class _FactorRows:
    """The rows of ``W = F_1·…·F_k`` as lists of ``fmpq``, each computed (in flint, left to right) when
    first read and kept: a factored head's sparse probes read a few rows of ``W``, never all d².  The
    rows of one matrix (``k = 1``) are all read out at once from the :data:`EAGER_ROWS`-th on (one
    C-level pass is faster than row by row when many are wanted)."""

    __slots__ = ("factors", "rows")

    #: A single matrix's rows read one by one before the rest are read out at once.
    EAGER_ROWS = 32

    def __init__(self, factors: tuple):
        self.factors: tuple = factors
        self.rows: dict = {}

    def __getitem__(self, a: int) -> list:
        row = self.rows.get(a)
        if row is None:
            first = self.factors[0]
            if len(self.factors) == 1 and len(self.rows) >= self.EAGER_ROWS:
                flat, n = first.entries(), first.shape[1]
                self.rows = {i: flat[i * n : (i + 1) * n] for i in range(first.shape[0])}
                return self.rows[a]
            M = first.submatrix([a], range(first.shape[1]))
            for F in self.factors[1:]:
                M = M @ F
            row = self.rows[a] = M.entries()
        return row

    def __len__(self) -> int:
        return self.factors[0].shape[0]


def _factored_size(A: QMatrix, B: QMatrix) -> tuple[int, int] | None:
    """``(max |W_int|, D_W)`` of ``W = A·B`` from one float64 product of the factors' integer forms, or
    ``None`` when that product could round (see :meth:`SingleHead._w_size`)."""
    Ai, Da = A.int_form()
    Bi, Db = B.int_form()
    a = max((abs(x) for row in Ai for x in row), default=0)
    b = max((abs(x) for row in Bi for x in row), default=0)
    if not a or not b:
        return 0, 1
    if A.shape[1] * a * b >= 2**53:
        return None
    P = np.asarray(Ai, dtype=np.float64) @ np.asarray(Bi, dtype=np.float64)  # every partial sum < 2^53: exact
    P = np.abs(P).astype(np.int64)
    top = int(P.max())
    if not top:
        return 0, 1
    G = math.gcd(int(np.gcd.reduce(P[P != 0])), Da * Db)
    return top // G, Da * Db // G


def _rowwise_size(factors: tuple, block: int = 128) -> tuple[int, int]:
    """``(max |W_int|, D_W)`` of ``W = F_1·…·F_k`` a block of rows at a time: ``L = F_1·…·F_{k−1}``
    (d×r) once, then each block of ``L``'s rows times ``F_k`` exactly in flint, its least common
    denominator and largest entry; ``D_W`` is the lcm of the blocks', and ``max |W_int| = max |W_ij|·D_W``.
    O(d·r·d) work like forming W, but O(block·d) memory."""
    L = factors[0]
    for F in factors[1:-1]:
        L = L @ F
    last = factors[-1] if len(factors) > 1 else None
    D, top = 1, Fraction(0)
    for a in range(0, L.shape[0], block):
        M = L.submatrix(range(a, min(a + block, L.shape[0])), range(L.shape[1]))
        M = M @ last if last is not None else M
        den = M.denominator()
        D = D * den // math.gcd(D, den)
        top = max(top, M.max_abs())
    return int(top * D), D


@dataclass(frozen=True)
class SingleHead:
    """A single softmax-attention head with exact parameters ``W`` (d×d) and ``v`` (d), and
    optionally the biases ``c`` (d) and ``b`` (a number).

    Parameters
    ----------
    W : d×d array-like of exact numbers
        The merged query–key matrix (any 1/√r factor folded in).
    v : length-d array-like
        The merged value/readout vector.
    c : length-d array-like, optional
        The score bias: ``s_i = x_iᵀ(W x_N + c)`` (default 0).  A torch head's query bias
        gives ``c = W_Kᵀ b_q / √r``; its key bias cancels in the softmax.
    b : number, optional
        The output bias: ``f(X) = b + Σ_i α_i vᵀx_i`` (default 0); ``wᵀ(W_O b_v + b_o)``
        for a torch head.  With ``c = 0`` and ``b = 0`` the head is the paper's.

    Entries may be ints, Fractions, ``"p/q"`` or decimal strings, or floats (taken
    at their exact binary value); they are stored as Fractions.

    Examples
    --------
    >>> h = SingleHead([[0, 1], [1, 0]], [1, "1/2"])
    >>> h.d
    2
    >>> h.exact([[1, 0], [0, 1]]) == h.exact([[1, 0], [0, 1]])
    True
    >>> round(h.float([[1, 0], [0, 1]]), 12)
    0.865529289315
    >>> SingleHead([[1, 2]], [1])
    Traceback (most recent call last):
    ...
    exact.errors.ShapeError: W: expected a square d×d matrix, got 1×2
    """

    W: Any  # given as any d×d array-like; stored as a tuple of tuples of Fractions
    v: Any  # given as any length-d array-like; stored as a tuple of Fractions
    c: Any = None  # given as None or any length-d array-like; stored as a tuple of Fractions
    b: Any = 0  # stored as a Fraction
    kind: ClassVar[str] = "single-head"  # the JSON kind, and the model class a learner names

    def __post_init__(self):
        if not _len(self.W):
            raise ShapeError("W: expected a d×d matrix with d >= 1, got an empty one")
        W = as_matrix(self.W, name="W")
        d = len(W)
        if len(W[0]) != d:
            raise ShapeError(f"W: expected a square d×d matrix, got {d}×{len(W[0])}")
        v = as_vector(self.v, name="v", size=d)
        object.__setattr__(self, "W", W)
        object.__setattr__(self, "v", v)
        object.__setattr__(self, "c", (_FZERO,) * d if self.c is None else as_vector(self.c, name="c", size=d))
        object.__setattr__(self, "b", to_fraction(self.b, name="b"))

    # -- basic views ---------------------------------------------------------------

    @property
    def d(self) -> int:
        """The token dimension."""
        return len(self.v)

    @cached_property
    def biased(self) -> bool:
        """Whether ``c`` or ``b`` is nonzero (a head outside the paper's bias-free class)."""
        return self.b != 0 or any(self.c)

    @classmethod
    def _from_qmatrix(cls, W: QMatrix, v: tuple, c: tuple | None = None, b: Fraction = _FZERO) -> "SingleHead":
        """Trusted constructor for learners: ``W`` an exact :class:`QMatrix`, ``v`` (and ``c``) tuples
        of Fractions, ``b`` a Fraction; skips re-validation and keeps the flint matrix for rank and
        evaluation."""
        obj = cls.__new__(cls)
        object.__setattr__(obj, "v", tuple(v))
        object.__setattr__(obj, "c", (_FZERO,) * len(v) if c is None else tuple(c))
        object.__setattr__(obj, "b", b)
        obj.__dict__["_Wmat"] = W  # W's Fractions are made on first use (see __getattr__)
        return obj

    @classmethod
    def _from_factors(cls, factors: tuple, v: tuple, c: tuple | None = None, b: Fraction = _FZERO) -> "SingleHead":
        """Trusted constructor: exact factors ``(F_1, …, F_k)`` with ``W = F_1·…·F_k`` (d×r, then r×r, …,
        then r×d): ``W x`` is evaluated right to left, a row of ``W`` left to right."""
        obj = cls.__new__(cls)
        object.__setattr__(obj, "v", tuple(v))
        object.__setattr__(obj, "c", (_FZERO,) * len(v) if c is None else tuple(c))
        object.__setattr__(obj, "b", b)
        obj.__dict__["_factors"] = tuple(factors)
        return obj

    def __reduce__(self):
        # Rebuilt from its parameters: the cached flint matrices cannot be pickled.
        return (type(self), (self.W, self.v, self.c, self.b))

    def __repr__(self) -> str:
        try:
            biases = f", c={self.c!r}, b={self.b!r}" if self.biased else ""
            return f"{type(self).__name__}(W={self.W!r}, v={self.v!r}{biases})"
        except ValueError:  # an entry beyond Python's 4300-digit int str limit
            return f"{type(self).__name__}(d={self.d}, entries too large to print; see to_json())"

    def __getattr__(self, name: str):
        # Only reached when normal lookup fails: ``W`` of a learned head is converted from
        # its exact flint matrix on first access (d² Fractions, a large share of a learn's
        # time at d >= 256, and not needed to replay or verify the result).
        if name == "W" and ("_Wmat" in self.__dict__ or "_factors" in self.__dict__):
            W = self._Wmat.rows()
            object.__setattr__(self, "W", W)
            return W
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def magnitude_bits(self) -> int:
        """An integer ``e`` with every ``|W_ij|, |v_i| < 2^e`` (from integer sizes: cheap at any d)."""
        top, Dw = self._w_size()
        vint, Dv = self._v_int
        top_v = max(map(abs, vint), default=0)
        bits = max(top.bit_length() - Dw.bit_length(), top_v.bit_length() - Dv.bit_length()) + 1
        if self.biased:
            bits = max([bits] + [x.numerator.bit_length() - x.denominator.bit_length() + 2
                                 for x in self.c + (self.b,) if x])
        return bits

    def parameters(self) -> tuple:
        """Every identifiable parameter as one flat tuple of Fractions: ``W`` row by row, then ``v``,
        then (for a head with biases) ``c`` and ``b``: ``d² + d`` numbers, or ``d² + 2d + 1``."""
        core = tuple(x for row in self.W for x in row) + self.v
        return core + self.c + (self.b,) if self.biased else core

    def grid_parameters(self, w_scale=None) -> tuple:
        """The parameters a declared grid holds: :meth:`parameters`, with ``W`` and ``c`` divided by
        ``w_scale`` when one is declared (``W = w_scale·M``, ``M`` on the grid; for a torch head with
        ``w_scale = 1/√r``, ``M = W_KᵀW_Q`` and ``c/w_scale = W_Kᵀb_q``).

        >>> SingleHead([["1/2"]], [3]).grid_parameters(Fraction(1, 2))
        (Fraction(1, 1), Fraction(3, 1))
        """
        if w_scale is None:
            return self.parameters()
        s = Fraction(w_scale)
        core = tuple(x / s for row in self.W for x in row) + self.v
        return core + tuple(x / s for x in self.c) + (self.b,) if self.biased else core

    @cached_property
    def _Wq(self) -> Any:  # a list of rows, or rows made when first read
        if "_Wmat" in self.__dict__:  # a learner handed over the flint matrix: its rows, each read when first asked
            return _FactorRows((self.__dict__["_Wmat"],))  # (sparse probes read a few rows; d² reads cost as one pass)
        if "_factors" in self.__dict__:  # rows of A·B, each made when first read
            return _FactorRows(self.__dict__["_factors"])
        return [[to_fmpq(x) for x in r] for r in self.W]

    @cached_property
    def _Wmat(self) -> QMatrix:
        if "_factors" in self.__dict__:
            return functools.reduce(operator.matmul, self.__dict__["_factors"])
        return QMatrix(self.d, self.d, [x for r in self._Wq for x in r])

    @cached_property
    def _vq(self) -> list:
        return [to_fmpq(x) for x in self.v]

    @cached_property
    def _cq(self) -> list:
        return [to_fmpq(x) for x in self.c]

    def _times(self, M: QMatrix) -> QMatrix:
        """``W @ M`` exactly (through the factors ``A (B M)`` for a head kept as factors)."""
        factors = self.__dict__.get("_factors")
        if factors is not None and ("_Wmat" not in self.__dict__
                                    or sum(F.shape[0] * F.shape[1] for F in factors) < self.d * self.d):
            for F in reversed(factors):  # (a rank-r head: about 2d·r per column of M, against d² through W)
                M = F @ M
            return M
        return self._Wmat @ M

    @cached_property
    def rank(self) -> int:
        """The exact rank of ``W`` (the head dimension it needs)."""
        if "_factors" in self.__dict__ and "_Wmat" not in self.__dict__:
            F = self.__dict__["_factors"]
            r = F[0].shape[1]
            # the first of full column rank, the last of full row rank, any between r×r and invertible:
            # rank(W) = r, without forming it
            if (len(F[0].independent()[1]) == r and len(F[-1].T.independent()[1]) == r
                    and all(M.shape == (r, r) and M.det() != 0 for M in F[1:-1])):
                return r
        return self._Wmat.rank()

    def to_numpy(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W, v)`` as float64 arrays (rounded); the biases are :meth:`biases_numpy`.

        Raises
        ------
        InvalidNumber
            If an entry is beyond float64's range.
        """
        try:
            return (np.array([[float(x) for x in r] for r in self.W]), np.array([float(x) for x in self.v]))
        except OverflowError:
            raise InvalidNumber("model: an entry of W or v is beyond float64's range (about 1.8e308)") from None

    @cached_property
    def _float_view(self) -> tuple[np.ndarray, np.ndarray]:
        """``(W, v)`` in float64 for float-mode evaluation (computed once): :meth:`to_numpy`, except that a
        head kept as its factors gives the float64 product of its factors' roundings (within a few
        units in the last place times r of ``W``; its ``d²`` exact entries are never formed).  Float
        checks read this; anything that must match another float64 computation bit for bit reads
        :meth:`to_numpy`."""
        factors = self.__dict__.get("_factors")
        if factors is None or "_Wmat" in self.__dict__ or "W" in self.__dict__:
            return self.to_numpy()
        try:
            mats = [np.array([[float(x) for x in row] for row in F.rows()]) for F in factors]
        except OverflowError:
            raise InvalidNumber("model: a factor of W has an entry beyond float64's range") from None
        W = mats[-1]
        for F in reversed(mats[:-1]):
            W = F @ W
        return W, np.array([float(x) for x in self.v])

    def float_magnitude_bits(self) -> int:
        """An integer ``e`` with every ``|W_ij|, |v_i| < 2^e`` up to float64 rounding, from
        :attr:`_float_view` (cheap for a head kept as factors, where :meth:`magnitude_bits` is exact
        and costs a pass over W's exact rows).

        >>> SingleHead([[3, 0], [0, "1/8"]], [1, -5]).float_magnitude_bits()
        3
        """
        W, v = self._float_view
        top = max(float(np.abs(W).max(initial=0.0)), float(np.abs(v).max(initial=0.0)))
        if self.biased:
            c, b = self.biases_numpy()
            top = max(top, float(np.abs(c).max(initial=0.0)), abs(b))
        return math.frexp(top * (1 + 2**-40))[1] if top else 0

    def biases_numpy(self) -> tuple[np.ndarray, float]:
        """``(c, b)`` in float64 (rounded).

        >>> c, b = SingleHead([[1]], [2], c=["1/2"], b=-1).biases_numpy()
        >>> c.tolist(), b
        ([0.5], -1.0)
        """
        try:
            return np.array([float(x) for x in self.c]), float(self.b)
        except OverflowError:
            raise InvalidNumber("model: an entry of c or b is beyond float64's range (about 1.8e308)") from None

    # -- exact evaluation ----------------------------------------------------------

    def scores(self, X) -> tuple[list, list]:
        """Exact scores ``s_i = x_iᵀ(W x_N + c)`` and token values ``b + vᵀ x_i`` (as ``fmpq``).

        ``b`` enters every token's value, so ``f = Σ α_i (b + vᵀx_i) = b + Σ α_i vᵀx_i``.
        """
        seq = X if type(X) is Sequence and X.d == self.d else as_sequence(X, d=self.d)
        s, c = self._bias_free_scores(seq)
        if self.biased:
            cq, bq = self._cq, to_fmpq(self.b)
            s = [si + sum((x * cq[a] for a, x in r), _ZERO) for si, r in zip(s, seq._fmpq_rows)]
            c = [ci + bq for ci in c]
        return s, c

    def _bias_free_scores(self, seq: Sequence) -> tuple[list, list]:
        rows = seq._fmpq_rows
        last = rows[-1]
        vq = self._vq
        zero = fmpq(0)
        s, c = [], []
        if len(rows) == 1 and "_factors" in self.__dict__:  # one token has weight 1 whatever its score:
            ci = zero                                      # a factored head reads no row of W for it
            for a, x in last:
                ci += x * vq[a]
            return [zero], [ci]
        if len(last) == 1:  # a basis-like query token y·e_b: W x_N is y times column b
            Wq = self._Wq
            b, y = last[0]
            for r in rows:
                si = ci = zero
                for a, x in r:
                    ci += x * vq[a]
                    si += x * Wq[a][b]
                s.append(si * y)
                c.append(ci)
        elif len(last) <= 4:  # sparse query token: W x_N touches len(last) columns
            Wq = self._Wq
            for r in rows:
                si = ci = zero
                for a, x in r:
                    row = Wq[a]
                    ci += x * vq[a]
                    for b, y in last:
                        si += x * row[b] * y
                s.append(si)
                c.append(ci)
        else:  # a dense query token: integer arithmetic over common denominators
            return self._dense_scores(seq)
        return s, c

    # Dense tokens make rational sums whose denominators grow term by term; over a common
    # denominator the sums are sums of Python integers, several times faster.  Each
    # token's integer form and each query token's W x_N are remembered (by identity, then
    # by value), so probes that share a token pay for it once.

    @cached_property
    def _int_form(self) -> tuple:
        """``(W_int, D_W, v_int, D_v)`` with ``W = W_int / D_W`` and ``v = v_int / D_v``."""
        Wint, Dw = self._Wmat.int_form()
        Dv = math.lcm(*(x.denominator for x in self.v))
        vint = [x.numerator * (Dv // x.denominator) for x in self.v]
        return Wint, Dw, vint, Dv

    def _w_size(self) -> tuple[int, int]:
        """``(max |W_int|, D_W)`` for ``W = W_int / D_W`` over the least common denominator of its entries.

        A head kept as factors ``W = A·B`` gets the same two numbers without forming ``W``'s
        fractions: with ``A = A_int/D_A``, ``B = B_int/D_B`` and ``P = A_int·B_int`` (exact in float64
        when ``r·max|A_int|·max|B_int| < 2^53``, one BLAS product), ``W = P/(D_A D_B)``, so
        ``D_W = D_A D_B / G`` and ``max |W_int| = max |P| / G`` with ``G = gcd(D_A D_B, all P_ij)``.
        """
        factors = self.__dict__.get("_factors")
        if factors is not None and "_Wmat" not in self.__dict__:
            got = _factored_size(*factors) if len(factors) == 2 else None
            return got if got is not None else _rowwise_size(factors)
        if "_int_form" not in self.__dict__ and "_Wmat" in self.__dict__:  # from the flint matrix, in C, once
            size = self.__dict__.get("_int_size")
            if size is None:  # (W formed from factors: its largest entry is found through their float product)
                W = self.__dict__["_Wmat"]
                size = product_int_size(W, factors) if factors is not None else W.int_size()
                self.__dict__["_int_size"] = size
            return size
        Wint, Dw = self._int_form[:2]
        top = max((max(row, default=0) for row in Wint), default=0)
        low = min((min(row, default=0) for row in Wint), default=0)
        return max(top, -low), Dw

    @cached_property
    def _v_int(self) -> tuple:
        """``(v_int, D_v)`` with ``v = v_int / D_v``."""
        Dv = math.lcm(*(x.denominator for x in self.v))
        return [x.numerator * (Dv // x.denominator) for x in self.v], Dv

    def _dense_scores(self, seq) -> tuple[list, list]:
        vint, Dv = self._v_int
        ints = seq._int_rows
        last = ints[-1]
        w, Dn = self._column(last)
        dots = self.__dict__.setdefault("_dots", {})
        near = seq._near
        nums: dict = {}  # token index -> (sn, cn), for the tokens that others are near
        if near is not None:
            for t in near:
                if t is not None:
                    nums[t[0]] = None
        s: list = [None] * len(ints)
        c: list = [None] * len(ints)
        # Tokens that others are near first, so that their numerators are known.
        order = sorted(range(len(ints)), key=lambda i: i not in nums)
        for i in order:
            row = ints[i]
            D, dense, pairs = row
            hit = dots.get(id(row))
            if hit is not None and hit[0] is row and hit[1] is last:  # a token shared by many probes
                s[i], c[i], sn, cn = hit[2:]
            else:
                link = near[i] if near is not None else None
                if link is not None and nums.get(link[0]) is not None and ints[link[0]][0] == D:
                    sn, cn = nums[link[0]]
                    for j, x in link[1]:  # token = token link[0] + deltas, over the same D
                        sn += x * w[j]
                        cn += x * vint[j]
                elif dense is not None:
                    sn, cn = sum(map(operator.mul, dense, w)), sum(map(operator.mul, dense, vint))
                else:
                    sn, cn = sum([x * w[a] for a, x in pairs]), sum([x * vint[a] for a, x in pairs])
                s[i], c[i] = fmpq(sn, D * Dn), fmpq(cn, D * Dv)
                if row is last:  # the query token recurs in every probe of its column
                    if len(dots) >= 64:
                        dots.pop(next(iter(dots)))
                    dots[id(row)] = (row, last, s[i], c[i], sn, cn)  # holds both, so their ids stay theirs
            if i in nums:
                nums[i] = (sn, cn)
        return s, c

    def _column(self, last: tuple) -> tuple:
        """``(w, D')`` with ``W x_N = w / D'`` (``w`` integers) for a query token in integer form.

        Remembered by identity first (probes of one sketch column share their token),
        then by value; either way the product is computed once per token.  A head that carries
        exact factors ``W = A·Z`` (``_factors``, set by the low-rank learner on the model it
        built from them) computes ``A (Z x)`` in flint, in O(d·r) instead of O(d²).
        """
        cache = self.__dict__.setdefault("_columns", {})
        hit = cache.get(id(last))
        if hit is not None and hit[0] is last:
            return hit[1]
        D, dense, pairs = last
        key = (D, tuple(dense) if dense is not None else tuple(pairs))
        by_value = self.__dict__.setdefault("_columns_by_value", {})
        w = by_value.get(key)
        if w is None:
            factors = self.__dict__.get("_factors")
            if factors is not None:
                x = [0] * self.d
                if dense is not None:
                    x = dense
                else:
                    for b, y in pairs:
                        x[b] = y
                num, den = chain_column(factors, x)
                w = (num, den * D)
            elif "_int_form" not in self.__dict__ and "_Wmat" in self.__dict__:
                # a head handed over as a flint matrix: one product in C, no integer rows of W
                x = list(dense) if dense is not None else [0] * self.d
                if dense is None:
                    for b, y in pairs:
                        x[b] = y
                num, den = chain_column((self._Wmat,), x)
                w = (num, den * D)
            else:
                Wint, Dw = self._int_form[:2]
                if dense is not None:
                    col = [sum(map(operator.mul, row, dense)) for row in Wint]
                else:
                    col = [sum([row[b] * y for b, y in pairs]) for row in Wint]
                w = (col, Dw * D)
            if len(by_value) >= 64:
                by_value.pop(next(iter(by_value)))
            by_value[key] = w
        if len(cache) >= 64:
            cache.pop(next(iter(cache)))
        cache[id(last)] = (last, w)  # holds `last`, so its id stays its own while cached
        return w

    def _pair(self, X):
        """``(s_1, c_1, s_2, c_2)`` for a query ``[a; y·e_b]`` (the logit primitive's), or ``[b + Δ; b]``
        kept as an offset (``Sequence._offset_pair``), else ``None``."""
        if type(X) is Sequence and X._offset is not None and X.d == self.d:
            return self._pair_offset(*X._offset)
        if type(X) is not Sequence or X.d != self.d or len(X.rows) != 2 or len(X.rows[1]) != 1:
            return None
        if self.biased:
            s, c = self.scores(X)
            return s[0], c[0], s[1], c[1]
        if "_factors" in self.__dict__:
            return self._pair_factored(X)
        r0, ((b, y),) = X._fq or X._fmpq_rows
        Wq, vq = self._Wq, self._vq
        if len(r0) == 1:
            ((a, x),) = r0
            s0, c0 = x * Wq[a][b], x * vq[a]
        else:
            s0 = c0 = _ZERO
            for a, x in r0:
                s0 += x * Wq[a][b]
                c0 += x * vq[a]
        if y == 1:
            return s0, c0, Wq[b][b], vq[b]
        return s0 * y, c0, Wq[b][b] * y * y, vq[b] * y

    def _pair_offset(self, base: Sequence, deltas: tuple, deltas_fq: tuple | None = None) -> tuple:
        """``(Δᵀ(W b + c), b + vᵀ(b + Δ), 0, b + vᵀb)`` for ``[b + Δ; b]``: the first score less the query
        token's, which the softmax does not see.  ``W b`` is the remembered column of ``b``'s integer
        form (:meth:`_column`, by identity: every sketch probe of ``b`` shares it), so a probe costs
        ``O(|Δ|)``."""
        fq = base._fq
        dq = deltas_fq if deltas_fq is not None else tuple((j, to_fmpq(x)) for j, x in deltas)
        if fq is not None and len(fq[0]) == 1:  # [Δ + y·e_b; y·e_b]: W's column b, read from its rows at Δ
            ((b, y),) = fq[0]
            Wq, vq = self._Wq, self._vq
            s = c0 = _ZERO
            for j, q in dq:
                s += q * Wq[j][b]
                c0 += q * vq[j]
            c1 = vq[b] * y
            return self._offset_biases(s * y, c0 + c1, c1, dq)
        last = base._int_rows[0]
        w, Dn = self._column(last)
        memo = self.__dict__.setdefault("_values", {})
        hit = memo.get(id(last))
        if hit is None or hit[0] is not last:
            vint, Dv = self._v_int
            D, dense, pairs = last
            cn = sum(map(operator.mul, dense, vint)) if dense is not None else sum(x * vint[a] for a, x in pairs)
            if len(memo) >= 64:
                memo.pop(next(iter(memo)))
            hit = memo[id(last)] = (last, fmpq(cn, D * Dv))
        c1 = hit[1]
        vq = self._vq
        s = c0 = _ZERO
        for j, q in dq:
            s += q * fmpq(w[j], Dn)
            c0 += q * vq[j]
        return self._offset_biases(s, c0 + c1, c1, dq)

    def _offset_grid(self, bases: tuple | list, deltas: list) -> tuple | None:
        """The pairs ``(s, c₀, 0, c₁)`` of the probes ``[b_i + Δ_r; b_i]``, as :meth:`_pair_offset` gives
        each, for one-token bases ``[b_i]`` and offsets ``Δ_r`` (``(index, fmpq)`` pairs): two
        :class:`QMatrix` ``S, C₀`` with entry ``(i, r)`` that probe's ``s = Δ_rᵀ W b_i`` and
        ``c₀ = vᵀ(b_i + Δ_r)``, and the list of the ``c₁ = vᵀb_i`` of each base (the same for all of its
        probes).  For bases ``y_i·e_{j_i}`` the scores are the columns ``j_i`` of one flint product ``Δ·W``;
        for denser bases (the low-rank learner's sketch columns) or a head kept as factors, ``Δ·(W B)``
        with ``B`` the bases as columns.  ``None`` for a head with biases, or a base of another form
        (:meth:`_pair_offset` decides those one by one).

        >>> h = SingleHead([[1, 2], [3, "1/2"]], [1, -1])
        >>> b = [Sequence._exact(2, (((j, Fraction(y)),),), (((j, fmpq(y)),),)) for j, y in ((0, 1), (1, 3))]
        >>> deltas = [((0, fmpq(1)),), ((0, fmpq(2)), (1, fmpq(-1)))]
        >>> S, C0, c1 = h._offset_grid(b, deltas)
        >>> got = list(zip(S.entries(), C0.entries(), [fmpq(0)] * 4, [c for c in c1 for _ in deltas]))
        >>> got == [h._pair_offset(x, (), t) for x in b for t in deltas]
        True
        """
        if self.biased:
            return None
        d = self.d
        tokens = []
        for b in bases:
            fq = b._fq if type(b) is Sequence and b.d == d and b._offset is None and b._shift is None else None
            if fq is None or len(fq) != 1 or not fq[0]:
                return None
            for j, y in fq[0]:
                if type(j) is not int or not 0 <= j < d or type(y) is not fmpq:
                    return None
            tokens.append(fq[0])
        for row in deltas:
            for j, q in row:
                if type(j) is not int or not 0 <= j < d or type(q) is not fmpq:
                    return None
        vq = self._vq
        factors = self.__dict__.get("_factors")
        if all(len(t) == 1 for t in tokens):  # y_i·e_{j_i}: the columns j_i of Δ·W, scaled
            cols, ys = [t[0][0] for t in tokens], [t[0][1] for t in tokens]
            if factors is not None:  # Δ·W through the factors (a few rows), then its columns j_i
                R = sparse_rows(deltas, d)
                for F in factors:
                    R = R @ F
                S = R.submatrix(range(len(deltas)), cols).T
            else:
                S = sparse_rows_times(deltas, self._Wmat, cols)
            if any(y != 1 for y in ys):
                S = S.scale_rows(ys)
        else:  # the bases as the columns of B: Δ·(W B), with W B through the factors of a factored head
            B = QMatrix(d, len(tokens))
            for i, t in enumerate(tokens):
                for j, y in t:
                    B.set(j, i, y)
            S = sparse_rows_times(deltas, self._times(B), range(len(tokens)))
        cv = []
        for row in deltas:
            c = _ZERO
            for j, q in row:
                c += q * vq[j]
            cv.append(c)
        c1 = []
        for t in tokens:
            c = _ZERO
            for j, y in t:
                c += vq[j] * y
            c1.append(c)
        return S, outer_sum(c1, cv), c1

    def _offset_biases(self, s, c0, c1, dq) -> tuple:
        """The pair ``(s, c0, 0, c1)`` of an offset probe, with a head's biases: ``Δᵀc`` on the score
        difference and ``b`` on both values."""
        if self.biased:
            cq, bq = self._cq, to_fmpq(self.b)
            for j, q in dq:
                s += q * cq[j]
            c0, c1 = c0 + bq, c1 + bq
        return s, c0, _ZERO, c1

    def _pair_factored(self, X) -> tuple:
        """``(s_1 − s_2, c_1, 0, c_2)`` for ``[a; y·e_b]``: the scores less the query token's, which
        the softmax does not see.  ``s_1 − s_2 = y·(a − y·e_b)ᵀ W e_b`` reads only the rows of ``W`` where
        ``a − y·e_b`` is nonzero (``u_k`` for a probe ``[e_b + u_k; e_b]``), never ``W_bb``."""
        r0, ((b, y),) = X._fq or X._fmpq_rows
        Wq, vq = self._Wq, self._vq
        diff = {a: x for a, x in r0}
        diff[b] = diff.get(b, _ZERO) - y
        s = _ZERO
        for a, x in diff.items():
            if x != 0:
                s += x * Wq[a][b]
        c0 = _ZERO
        for a, x in r0:
            c0 += x * vq[a]
        return s * y, c0, _ZERO, vq[b] * y

    def exact(self, X) -> ExpRatio:
        """The exact value ``f(X)`` as an exp-ratio ``Σ c_i e^{s_i} / Σ e^{s_i}``."""
        if (type(X) is Sequence and X.d == self.d and X._offset is None and X._f64 is None and len(X.rows) == 1
                and not self.biased and "_Wq" not in self.__dict__ and "_Wmat" in self.__dict__
                and len(X.rows[0]) <= 4):
            # one sparse token of a head handed over as a flint matrix: the few entries of W it reads
            # (the d one-token queries that read v need no d² list of W's rows)
            (row,) = X._fmpq_rows
            Wm, vq = self._Wmat, self._vq
            s0 = c0 = _ZERO
            for a, x in row:
                c0 += x * vq[a]
                for b, y in row:
                    s0 += x * Wm.entry(a, b) * y
            return ExpRatio.softmax((s0,), (c0,))
        if type(X) is Sequence and X._offset is not None and X.d == self.d:
            s0, c0, s1, c1 = self._pair_offset(*X._offset)
            return ExpRatio.softmax((s0, s1), (c0, c1))
        if (type(X) is Sequence and X.d == self.d and len(X.rows) == 2 and len(X.rows[1]) == 1 and not self.biased
                and "_factors" in self.__dict__):
            s0, c0, s1, c1 = self._pair_factored(X)
            return ExpRatio.softmax((s0, s1), (c0, c1))
        if type(X) is Sequence and X.d == self.d and len(X.rows) == 2 and len(X.rows[1]) == 1 and not self.biased:
            # the logit primitive's queries [a; y·e_b]: scores and values inline
            r0, ((b, y),) = X._fq or X._fmpq_rows
            Wq, vq = self._Wq, self._vq
            if len(r0) == 1:
                ((a, x),) = r0
                s0, c0 = x * Wq[a][b], x * vq[a]
            else:
                s0 = c0 = _ZERO
                for a, x in r0:
                    s0 += x * Wq[a][b]
                    c0 += x * vq[a]
            if y == 1:
                return ExpRatio.softmax((s0, Wq[b][b]), (c0, vq[b]))
            return ExpRatio.softmax((s0 * y, Wq[b][b] * y * y), (c0, vq[b] * y))
        s, c = self.scores(X)
        return ExpRatio.softmax(s, c)

    def ball(self, X, *, prec: int = 128):
        """A rigorous ``arb`` ball for ``f(X)`` at ``prec`` bits."""
        return self.exact(X).ball(prec)

    def sympy(self, X):
        """The exact sympy expression of ``f(X)``."""
        return self.exact(X).sympy()

    # -- float evaluation ----------------------------------------------------------

    def float(self, X) -> float | np.ndarray:
        """``f`` in float64: ``X`` of shape ``(N, d)`` gives a float, ``(n, N, d)`` an array."""
        W, v = self.to_numpy()
        if self.biased:
            c, b = self.biases_numpy()
            return evaluate_float(W, v, X, c=c, b=b)
        return evaluate_float(W, v, X)

    # -- constructors --------------------------------------------------------------

    @classmethod
    def random(
        cls,
        d: int,
        *,
        seed=None,
        grid: str | Grid = "rational:7",
        bound=2,
        v_zeros: int = 0,
        rank: int | None = None,
        biases: bool = False,
    ) -> "SingleHead":
        """A random head with entries on ``grid``.

        Parameters
        ----------
        d : int
            Token dimension.
        seed : int or None
            Seed of the numpy generator; the same seed gives the same head.
        grid : str or Grid
            ``"rational:Q"``: entries ``p/q`` with ``1 <= q <= Q`` and ``|p/q| <= bound``;
            a float grid (``"float32"``, ``"bfloat16"``, ``"float16"``, ``"float64"``):
            Gaussian entries of scale ``bound/2`` rounded to the grid.
        bound : number
            Magnitude of the entries.
        v_zeros : int
            How many entries of ``v`` to set to zero (at random positions, at most d-1).
        rank : int or None
            Make ``W = A B`` with ``A`` d×rank and ``B`` rank×d, so ``rank(W) <= rank``.
            On a rational or dyadic grid the factors are on the grid (then W's entries
            in general are not); on a float grid the factors are small integers times
            a power of two, chosen so that **W itself is on the grid** (every entry of
            ``A B`` is an integer below ``2^precision`` times one power of two).
        biases : bool
            Also draw the biases ``c`` and ``b`` on the grid (drawn after ``W`` and ``v``, so the
            same seed gives the same ``W`` and ``v`` either way).

        Examples
        --------
        >>> SingleHead.random(2, seed=0) == SingleHead.random(2, seed=0)
        True
        >>> h = SingleHead.random(2, seed=0, biases=True)
        >>> h.biased, (h.W, h.v) == (SingleHead.random(2, seed=0).W, SingleHead.random(2, seed=0).v)
        (True, True)
        """
        if seed is not None and not (isinstance(seed, int) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        g = parse_grid(grid)
        if g is None:
            raise InvalidArgument("grid: SingleHead.random needs a grid to draw entries from, e.g. 'rational:7' or 'float32'")
        rng = np.random.default_rng(seed)
        if not isinstance(d, int) or d < 1:
            raise ShapeError(f"d: expected an integer d >= 1, got {d!r}")
        if not 0 <= v_zeros < d:
            raise InvalidArgument(f"v_zeros: expected 0 <= v_zeros <= d-1 = {d - 1}, got {v_zeros}")
        b = to_fraction(bound, name="bound")
        if b <= 0:
            raise InvalidArgument(f"bound: expected a positive magnitude for the entries, got {b}")
        draw = _sampler(g, rng, b)
        if rank is None:
            W = [[draw() for _ in range(d)] for _ in range(d)]
        else:
            if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= d:
                raise InvalidArgument(f"rank: expected an integer 0 <= rank <= d = {d}, got {rank!r}")
            if isinstance(g, FloatGrid):
                W = _low_rank_on_float_grid(g, rng, d, rank, b)
            else:
                A = [[draw() for _ in range(rank)] for _ in range(d)]
                B = [[draw() for _ in range(d)] for _ in range(rank)]
                # kept as its factors: W's d² entries are formed only when asked for (in flint; the
                # Fraction products took 77 s at d = 1024, rank 32)
                W = (QMatrix.from_rows(A), QMatrix.from_rows(B)) if rank else QMatrix.zeros(d, d)  # type: ignore[assignment]
        v = [draw() for _ in range(d)]
        for _ in range(1000):  # redraw zeros: only v_zeros entries may be zero
            if all(v):
                break
            v = [x if x else draw() for x in v]
        else:
            raise InvalidArgument(
                f"bound: entries of size {approx(b, 3)} round to 0 on grid {g.name} almost always; "
                "use a larger bound or a finer grid"
            )
        for i in rng.choice(d, size=v_zeros, replace=False):
            v[int(i)] = Fraction(0)
        c, bias = ([draw() for _ in range(d)], draw()) if biases else (None, _FZERO)
        if isinstance(W, tuple):  # trusted: the factors' entries are on the grid
            return cls._from_factors(W, tuple(v), None if c is None else tuple(c), bias)
        if isinstance(W, QMatrix):
            return cls._from_qmatrix(W, tuple(v), None if c is None else tuple(c), bias)
        return cls(W, v, c, bias) if biases else cls(W, v)

    @classmethod
    def gaussian(cls, d: int, *, seed=None, w_frobenius=2, v_norm=None) -> "SingleHead":
        """A Gaussian head scaled to ``‖W‖_F <= w_frobenius`` (the noisy learners' instances).

        ``W`` has i.i.d. standard normal entries, scaled (in float64, then rounded down in
        magnitude by one part in 2^40) so that ``‖W‖_F`` is just below ``w_frobenius``;
        ``v`` is standard normal, scaled to ``‖v‖₂ = v_norm`` when given.  Entries are
        the exact binary values of float64 numbers.

        >>> h = SingleHead.gaussian(4, seed=1)
        >>> W, v = h.to_numpy()
        >>> 2 - 1e-9 < float(np.linalg.norm(W)) <= 2
        True
        """
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ShapeError(f"d: expected an integer d >= 1, got {d!r}")
        if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        wf = float(to_fraction(w_frobenius, name="w_frobenius"))
        if not wf > 0 or not np.isfinite(wf):
            raise InvalidArgument(f"w_frobenius: expected a positive bound, got {w_frobenius!r}")
        rng = np.random.default_rng(seed)
        G = rng.standard_normal((d, d))
        W = G * (wf * (1 - 2.0**-40) / np.linalg.norm(G))
        v = rng.standard_normal(d)
        if v_norm is not None:
            vn = float(to_fraction(v_norm, name="v_norm"))
            if not vn > 0:
                raise InvalidArgument(f"v_norm: expected a positive norm, got {v_norm!r}")
            v = v * (vn / np.linalg.norm(v))
        return cls(W.tolist(), v.tolist())

    @classmethod
    def from_factors(cls, K, Q, v, *, scale=1) -> "SingleHead":
        """The head with ``W = scale · Kᵀ Q`` (``K, Q`` of shape ``r × d``), so ``rank(W) <= r``.

        Examples
        --------
        >>> h = SingleHead.from_factors([[1, 0, 2]], [[0, 1, 1]], [1, 1, 1])
        >>> h.rank, h.W[2]
        (1, (Fraction(0, 1), Fraction(2, 1), Fraction(2, 1)))
        >>> h == SingleHead([[0, 1, 1], [0, 0, 0], [0, 2, 2]], [1, 1, 1])
        True
        """
        Qm = as_matrix(Q, name="Q")
        r, d = len(Qm), len(Qm[0])
        Km = as_matrix(K, name="K", rows=r, cols=d)
        c = to_fraction(scale, name="scale")
        v = as_vector(v, name="v", size=d)
        # kept as its factors A = scale·Kᵀ (d×r) and B = Q: W's d² entries are formed only when asked for,
        # and evaluation reads W x as A(B x) or a few rows of W (a rank-128 head at d = 4096 is megabytes)
        A = QMatrix.from_rows([[c * Km[k][i] for k in range(r)] for i in range(d)])
        return cls._from_factors((A, QMatrix.from_rows(Qm)), v)

    @classmethod
    def from_native(cls, W_Q, W_K, W_V, W_O, w, *, scale=None, b_q=None, b_k=None, b_v=None,
                    b_o=None) -> "SingleHead":
        """Merge native attention weights (and biases) into ``(W, v)`` (and ``c``, ``b``).

        With queries ``q = W_Q x_N``, keys ``k_i = W_K x_i``, values ``W_V x_i``, the
        output map ``W_O`` and a readout ``w``:

            W = scale · W_Kᵀ W_Q,   scale = 1/√r by default,
            v = W_Vᵀ W_Oᵀ w.

        With the biases of ``q = W_Q x_N + b_q``, ``k_i = W_K x_i + b_k``, values
        ``W_V x_i + b_v`` and the output ``W_O(·) + b_o`` (``docs/biases.md``):

            c = scale · W_Kᵀ b_q,   b = wᵀ(W_O b_v + b_o),

        and ``b_k`` cancels in the softmax (it is checked for shape and otherwise unused).
        Only ``W``, ``v``, ``c`` and ``b`` are identifiable.  The default scale ``1/√r`` is
        exact only when ``r`` is a perfect square; otherwise pass ``scale`` explicitly (for
        a float model, the float it actually multiplies by).

        Parameters
        ----------
        W_Q, W_K : r×d
        W_V : d_v×d
        W_O : d×d_v
        w : length d
        b_q, b_k : length r, optional
        b_v : length d_v, optional
        b_o : length d, optional

        Examples
        --------
        >>> h = SingleHead.from_native([[1, 0]], [[0, 2]], [[1, 1]], [[1], [0]], [3, 0])
        >>> h.W, h.v
        (((Fraction(0, 1), Fraction(0, 1)), (Fraction(2, 1), Fraction(0, 1))), (Fraction(3, 1), Fraction(3, 1)))
        """
        Q = as_matrix(W_Q, name="W_Q")
        d = len(Q[0])
        r = len(Q)
        K = as_matrix(W_K, name="W_K", rows=r, cols=d)
        V = as_matrix(W_V, name="W_V", cols=d)
        dv = len(V)
        O = as_matrix(W_O, name="W_O", rows=d, cols=dv)
        wv = as_vector(w, name="w", size=d)
        if scale is None:
            root = math.isqrt(r)
            if root * root != r:
                raise InvalidNumber(
                    f"scale: 1/sqrt(r) is irrational for head dimension r={r}; pass scale= explicitly "
                    "(for a float model, the float it multiplies the scores by)"
                )
            scale = Fraction(1, root)
        c = to_fraction(scale, name="scale")
        W = [[c * sum((K[k][i] * Q[k][j] for k in range(r)), Fraction(0)) for j in range(d)] for i in range(d)]
        Ow = [sum((O[i][a] * wv[i] for i in range(d)), Fraction(0)) for a in range(dv)]
        v = [sum((V[a][i] * Ow[a] for a in range(dv)), Fraction(0)) for i in range(d)]
        if b_q is None and b_k is None and b_v is None and b_o is None:
            return cls(W, v)
        bq = as_vector(b_q, name="b_q", size=r) if b_q is not None else (Fraction(0),) * r
        if b_k is not None:
            as_vector(b_k, name="b_k", size=r)  # cancels in the softmax
        bv = as_vector(b_v, name="b_v", size=dv) if b_v is not None else (Fraction(0),) * dv
        bo = as_vector(b_o, name="b_o", size=d) if b_o is not None else (Fraction(0),) * d
        cvec = [c * sum((K[k][i] * bq[k] for k in range(r)), Fraction(0)) for i in range(d)]
        bias = sum((Ow[a] * bv[a] for a in range(dv)), Fraction(0)) + sum((wv[i] * bo[i] for i in range(d)), Fraction(0))
        return cls(W, v, cvec, bias)

    # -- I/O -------------------------------------------------------------------------

    def canonical(self) -> "SingleHead":
        """The form results are compared in: ``W`` and ``v`` are identifiable as they are (itself).

        >>> SingleHead([[1]], [2]).canonical() == SingleHead([[1]], [2])
        True
        """
        return self

    def float_heads(self) -> list:
        """``[(W, v)]`` in float64, or ``[(W, v, c, b)]`` for a head with biases: what
        :class:`~exact.oracles.FloatOracle` evaluates."""
        return [self.to_numpy() + self.biases_numpy()] if self.biased else [self.to_numpy()]

    def to_json(self) -> dict:
        """``{"kind": "single-head", "d": d, "W": [["p/q", ...], ...], "v": [...]}``, with ``"c"`` and
        ``"b"`` for a head with biases.

        >>> SingleHead([[1]], [2], b="1/3").to_json()
        {'kind': 'single-head', 'd': 1, 'W': [['1']], 'v': ['2'], 'c': ['0'], 'b': '1/3'}
        """
        out = {
            "kind": "single-head",
            "d": self.d,
            "W": [[format_rational(x) for x in r] for r in self.W],
            "v": [format_rational(x) for x in self.v],
        }
        if self.biased:
            out["c"] = [format_rational(x) for x in self.c]
            out["b"] = format_rational(self.b)
        return out

    @classmethod
    def from_json(cls, data) -> "SingleHead":
        """Build a head from ``{"kind": "single-head", "d": d, "W": [[...], ...], "v": [...]}``.

        ``kind`` (default ``"single-head"``), ``d`` and the biases ``c`` (a vector) and ``b``
        (a number) are optional; any other field is an error.  Entries are ``"p/q"`` or decimal strings, or JSON numbers, all taken
        exactly (:func:`exact.io.load_json` reads ``0.1`` as 1/10).

        >>> SingleHead.from_json({"W": [["1/2"]], "v": ["3"]}) == SingleHead([["1/2"]], [3])
        True
        >>> SingleHead.from_json({"W": [["1/2"]], "v": ["3"], "V": ["3"]})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: model: unknown field(s) ['V']; allowed fields: ['W', 'b', 'c', 'd', 'kind', 'v']
        >>> SingleHead.from_json({"W": {"a": 1}, "v": ["3"]})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: W: expected a matrix (a list of rows), got an object
        """

        if not isinstance(data, dict):
            raise ShapeError(f"model: expected a JSON object of kind 'single-head', got {_describe(data)}")
        if check_kind(data, where="model", default="single-head", error=ShapeError) != "single-head":
            raise ShapeError(f"model: expected a JSON object of kind 'single-head', got {_describe(data)}")
        check_fields(data, where="model", required=("W", "v"), optional=("kind", "d", "c", "b"), error=ShapeError)
        d = data.get("d")
        if "d" in data and (not isinstance(d, int) or isinstance(d, bool)):
            raise ShapeError(f"model: field 'd': expected an integer, got {describe_json(d)}")
        if isinstance(d, int) and d.bit_length() > 62:
            raise ShapeError(f"model: field 'd': expected an integer below 2^62, got one with {len(str(abs(d)))} digits")
        W, v = data["W"], data["v"]
        if not isinstance(W, (list, tuple)):
            raise ShapeError(f"W: expected a matrix (a list of rows), got {describe_json(W)}")
        if not isinstance(v, (list, tuple)):
            raise ShapeError(f"v: expected a vector (a list of numbers), got {describe_json(v)}")
        c, b = data.get("c"), data.get("b", 0)
        if c is not None and not isinstance(c, (list, tuple)):
            raise ShapeError(f"c: expected a vector (a list of numbers), got {describe_json(c)}")
        if isinstance(b, (list, tuple, dict, bool)) or b is None:
            raise ShapeError(f"b: expected a number, got {describe_json(b)}")
        h = cls(W, v, c, b)
        if "d" in data and d != h.d:
            raise ShapeError(f"model: field d={d!r} does not match len(v)={h.d}")
        return h


def _rows_of(M) -> list:
    try:
        return list(M)
    except TypeError:
        return []


def _len(x) -> int:
    try:
        return len(x)
    except TypeError:
        raise ShapeError(f"W: expected a matrix (list of rows), got {type(x).__name__}") from None


def _describe(data) -> str:
    if isinstance(data, dict):
        kind = repr(data.get("kind"))
        return f"kind {kind if len(kind) <= 60 else kind[:57] + '...'}"
    return type(data).__name__


def _size(x: Fraction) -> str:
    """A short decimal rendering of a possibly huge rational, for messages."""
    return f"{approx(x, 3)}" if abs(x) < 10**300 else f"about 2^{floor_log2(abs(x))}"


def _low_rank_on_float_grid(g: FloatGrid, rng: np.random.Generator, d: int, rank: int, bound: Fraction) -> list:
    """``W = A B`` of rank <= ``rank`` whose entries are all points of the float grid ``g``.

    ``A`` and ``B`` hold integers below ``2^m`` in magnitude with ``rank·4^m <= 2^precision``,
    so every entry of ``A B`` is an integer the grid's significand can hold; one power of
    two then scales the largest possible entry to about ``bound``.
    """
    m = (g.precision - max(rank - 1, 0).bit_length()) // 2
    if m < 1:
        raise InvalidArgument(
            f"rank: grid {g.name} has {g.precision} significand bits, too few for a rank-{rank} W = A·B on the grid"
        )
    top = (1 << m) - 1
    A = rng.integers(-top, top + 1, size=(d, rank)).tolist()
    B = rng.integers(-top, top + 1, size=(rank, d)).tolist()
    scale = Fraction(2) ** (floor_log2(bound) - floor_log2(Fraction(max(rank, 1) * top * top)) if top else 0)
    W = [[sum(A[i][k] * B[k][j] for k in range(rank)) * scale for j in range(d)] for i in range(d)]
    if any(not g.contains(x) for row in W for x in row):
        raise InvalidArgument(f"bound: {_size(bound)} puts a rank-{rank} W outside the range of grid {g.name}")
    return W


def _sampler(g: Grid, rng: np.random.Generator, bound: Fraction):
    if isinstance(g, RationalGrid):
        if bound * g.max_den >= 2**62:
            raise InvalidArgument(f"bound: {_size(bound)} is too large to sample on grid {g.name}")

        def draw():
            q = int(rng.integers(1, g.max_den + 1))
            top = int(bound * q)
            return Fraction(int(rng.integers(-top, top + 1)), q)

        return draw
    if isinstance(g, FloatGrid):
        if bound / 2 * 6 > g.max_value:  # six standard deviations must fit the grid
            raise InvalidArgument(f"bound: entries of size {_size(bound)} overflow grid {g.name}; use a smaller bound")

        def draw():
            x = g.round(Fraction(float(rng.normal())) * bound / 2)
            return x if x is not None else Fraction(0)

        return draw
    if not isinstance(g, DyadicGrid):  # pragma: no cover - every grid kind is handled above
        raise InvalidArgument(f"grid: cannot sample on {g.name}")
    scale = 1 << g.bits
    if bound * scale >= 2**62:
        raise InvalidArgument(f"bound: {_size(bound)} is too large to sample on grid {g.name}")

    def draw_dyadic():
        return Fraction(int(rng.integers(-int(bound * scale), int(bound * scale) + 1)), scale)

    return draw_dyadic
