"""Exact linear algebra over ℚ: the one module that touches flint matrices.

:class:`QMatrix` wraps python-flint's ``fmpq_mat`` (dense rational matrices in C)
behind the few operations the library needs: products, differences, inverses,
rank, reduced row echelon form and pivot columns, submatrices.  Keeping every
flint matrix call here means the rest of the library depends on a small, stable
interface, in the spirit of sympy's ``DomainMatrix``.

Entries go in as anything :func:`exact.numbers.to_fraction` accepts (or flint
``fmpq``) and come out as :class:`fractions.Fraction` (:meth:`QMatrix.rows`) or as
``fmpq`` (:meth:`QMatrix.entry`, for hot loops).

Examples
--------
>>> A = QMatrix.from_rows([[2, 1], [1, 1]])
>>> (A @ A.inv()) == QMatrix.identity(2)
True
>>> A.rank(), QMatrix.from_rows([[1, 2], [2, 4]]).pivot_columns()
(2, [0])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction

from flint import arb_mat, fmpq, fmpq_mat, fmpz_mat, nmod_mat

from .errors import ShapeError
from .numbers import coprime_fraction, to_fmpq, to_fraction

__all__ = [
    "QMatrix", "ZMatrix", "lll_rows", "ball_solve", "chain_column", "sparse_rows_times",
    "outer_sum", "mismatches", "less_pivot_rows", "product_int_size", "sparse_rows"]


def _q(x) -> fmpq:
    return x if isinstance(x, fmpq) else to_fmpq(x if isinstance(x, Fraction) else to_fraction(x))


class QMatrix:
    """A dense matrix over ℚ (immutable by convention; :meth:`set` is for builders only).

    Parameters
    ----------
    nrows, ncols : int
    entries : iterable, optional
        Row-major entries (``nrows * ncols`` of them); zeros when omitted.
    """

    __slots__ = ("_m",)

    def __init__(self, nrows: int, ncols: int, entries: Iterable | None = None):
        if entries is None:
            self._m = fmpq_mat(nrows, ncols)
        else:
            flat = list(entries)
            if not set(map(type, flat)) <= {fmpq}:  # flint rationals go in as they are
                flat = [_q(x) for x in flat]
            if len(flat) != nrows * ncols:
                raise ShapeError(f"matrix: expected {nrows * ncols} entries for {nrows}×{ncols}, got {len(flat)}")
            self._m = fmpq_mat(nrows, ncols, flat)

    @classmethod
    def _wrap(cls, m: fmpq_mat) -> "QMatrix":
        obj = cls.__new__(cls)
        obj._m = m
        return obj

    # -- construction --------------------------------------------------------------

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence]) -> "QMatrix":
        """From a list of rows (an empty list gives the 0×0 matrix)."""
        rows = [list(r) for r in rows]
        ncols = len(rows[0]) if rows else 0
        if any(len(r) != ncols for r in rows):
            raise ShapeError("matrix: every row must have the same length")
        return cls(len(rows), ncols, [x for r in rows for x in r])

    @classmethod
    def from_columns(cls, cols: Sequence[Sequence], *, nrows: int | None = None) -> "QMatrix":
        """From a list of columns; ``nrows`` is needed only when there are no columns."""
        cols = [list(c) for c in cols]
        n = len(cols[0]) if cols else (nrows or 0)
        return cls(n, len(cols), [c[i] for i in range(n) for c in cols])

    @classmethod
    def zeros(cls, nrows: int, ncols: int) -> "QMatrix":
        return cls(nrows, ncols)

    @classmethod
    def identity(cls, n: int) -> "QMatrix":
        m = fmpq_mat(n, n)
        for i in range(n):
            m[i, i] = 1
        return cls._wrap(m)

    # -- access ----------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        return self._m.nrows(), self._m.ncols()

    def entry(self, i: int, j: int) -> fmpq:
        """The entry ``(i, j)`` as flint ``fmpq``."""
        return self._m[i, j]

    def set(self, i: int, j: int, x) -> None:
        """Set an entry in place (for code that builds a matrix before using it)."""
        self._m[i, j] = _q(x)

    def rows(self) -> tuple[tuple[Fraction, ...], ...]:
        """The entries as a tuple of rows of Fractions."""
        n, m = self.shape
        flat = [coprime_fraction(int(x.p), int(x.q)) for x in self._m.entries()]
        return tuple(tuple(flat[i * m : (i + 1) * m]) for i in range(n))

    def entries(self) -> list:
        """The entries, row by row, as flint ``fmpq``."""
        return self._m.entries()

    def int_form(self) -> tuple[list[list[int]], int]:
        """``(N, D)`` with ``self = N / D``: integer rows over the least common denominator."""
        num, den = self._m.numer_denom()
        return [[int(x) for x in row] for row in num.tolist()], int(den)

    def int_size(self) -> tuple[int, int]:
        """``(max |N_ij|, D)`` for ``self = N / D`` over the least common denominator (no integer rows made).

        >>> QMatrix.from_rows([["1/2", -3], [0, "1/4"]]).int_size()
        (12, 4)
        """
        num, den = self._m.numer_denom()
        return int(max(map(abs, num.entries()), default=0)), int(den)

    def column(self, j: int) -> list[fmpq]:
        return [self._m[i, j] for i in range(self._m.nrows())]

    def submatrix(self, rows: Iterable[int], cols: Iterable[int]) -> "QMatrix":
        """The submatrix on the given row and column indices (in the given order)."""
        rows, cols = list(rows), list(cols)
        m = self._m
        return QMatrix._wrap(fmpq_mat(len(rows), len(cols), [m[i, j] for i in rows for j in cols]))

    # -- algebra ---------------------------------------------------------------------

    def scale_rows(self, factors: Sequence) -> "QMatrix":
        """``diag(factors) @ self``: row ``i`` times ``factors[i]``.

        >>> QMatrix.from_rows([[1, 2], [3, 4]]).scale_rows([2, "1/3"]).rows()[1]
        (Fraction(1, 1), Fraction(4, 3))
        """
        n = self.shape[0]
        if len(factors) != n:
            raise ShapeError(f"scale_rows: expected {n} factors, got {len(factors)}")
        D = fmpq_mat(n, n)
        for i, x in enumerate(factors):
            D[i, i] = _q(x)
        return QMatrix._wrap(D * self._m)

    def __matmul__(self, other: "QMatrix") -> "QMatrix":
        if self.shape[1] != other.shape[0]:
            raise ShapeError(f"matrix product: {self.shape} @ {other.shape} do not match")
        return QMatrix._wrap(self._m * other._m)

    def __sub__(self, other: "QMatrix") -> "QMatrix":
        return QMatrix._wrap(self._m - other._m)

    def __add__(self, other: "QMatrix") -> "QMatrix":
        return QMatrix._wrap(self._m + other._m)

    def __eq__(self, other) -> bool:
        if not isinstance(other, QMatrix):
            return NotImplemented
        return self.shape == other.shape and self._m == other._m

    __hash__ = None  # type: ignore[assignment]

    @property
    def T(self) -> "QMatrix":
        """The transpose."""
        return QMatrix._wrap(self._m.transpose())

    def matvec(self, x: Sequence) -> list:
        """``self @ x`` for a vector given as a list (entries ``fmpq``), as a list of ``fmpq``."""
        col = fmpq_mat(len(x), 1, [_q(t) for t in x])
        out = self._m * col
        return [out[i, 0] for i in range(out.nrows())]

    def denominator(self) -> int:
        """The least common denominator of the entries (1 for an empty matrix).

        >>> QMatrix.from_rows([["1/2", "-3/4"], [0, 5]]).denominator()
        4
        """
        return int(self._m.numer_denom()[1])

    def max_abs(self) -> Fraction:
        """The largest absolute value of an entry (0 for an empty matrix).

        >>> QMatrix.from_rows([["1/2", "-3/4"], [0, 5]]).max_abs(), QMatrix(0, 0).max_abs()
        (Fraction(5, 1), Fraction(0, 1))
        """
        num, den = self._m.numer_denom()
        entries = num.entries()  # compared as flint integers, in C
        top = max(max(entries), -min(entries)) if entries else 0
        return Fraction(int(top), int(den))

    def det(self) -> fmpq:
        """The exact determinant of a square matrix."""
        return self._m.det()

    def inv(self) -> "QMatrix":
        """The exact inverse (``ZeroDivisionError`` if singular)."""
        return QMatrix._wrap(self._m.inv())

    def rank(self) -> int:
        """The exact rank (0 for an empty matrix)."""
        if 0 in self.shape:
            return 0
        return self._m.rank()

    def rref(self) -> tuple["QMatrix", int]:
        """The reduced row echelon form and the rank."""
        R, rank = self._m.rref()
        return QMatrix._wrap(R), rank

    def pivot_columns(self) -> list[int]:
        """The pivot columns of the reduced row echelon form (a maximal set of independent columns).

        >>> QMatrix.from_rows([[0, 1, 2], [0, 2, 4]]).pivot_columns()
        [1]
        """
        if 0 in self.shape:
            return []
        R, rank = self._m.rref()
        return [next(j for j in range(R.ncols()) if R[i, j] != 0) for i in range(rank)]

    def independent(self) -> tuple[list[int], list[int]]:
        """``(rows, cols)``: a nonsingular square submatrix of the largest size, so ``len(cols)`` is the
        exact rank; the first independent columns modulo the prime, then the first independent rows
        among those columns.  These are the pivots an exact row echelon form gives unless the prime
        divides one of its minors (then a later, still independent, choice: the minor is proved
        nonsingular and of the largest size either way).

        The search runs modulo the prime :data:`PRIME` (an exact rref of a tall matrix of high-height
        rationals costs seconds at d = 1024), and the answer is then **proved** over ℚ: the minor on
        ``(rows, cols)`` is invertible (so the rank is at least its size), and every other column is the
        combination of ``cols`` that the minor's rows determine (so it is at most that).  A prime that
        divides a denominator, or a reduction that loses rank, fails the proof, and the exact row
        echelon form answers instead.

        >>> QMatrix.from_rows([[0, 1, 2], [0, 2, 4], [1, 0, 1]]).independent()
        ([0, 2], [0, 1])
        """
        n, m = self.shape
        if not n or not m:
            return [], []
        got = self._independent_mod_p()
        if got is not None:
            return got
        cols = self.pivot_columns()
        rows = self.submatrix(range(n), cols).T.pivot_columns()
        return rows, cols

    def _independent_mod_p(self) -> tuple[list[int], list[int]] | None:
        n, m = self.shape
        num, den = self._m.numer_denom()  # self = num/den: modulo the prime, num times a unit
        if not int(den) % PRIME:
            return None
        M = nmod_mat(num, PRIME)
        cols = _pivots(M)
        Mt = M.transpose()
        sub = nmod_mat(len(cols), n, [Mt[j, i] for j in cols for i in range(n)], PRIME)
        rows = _pivots(sub)
        minor = self.submatrix(rows, cols)
        if len(rows) != len(cols) or (cols and minor.det() == 0):
            return None
        others = [j for j in range(m) if j not in cols]
        if others:  # every other column is in the span of cols, exactly
            if not cols:
                if not num.is_zero():
                    return None
                return rows, cols
            X = minor.inv() @ self.submatrix(rows, others)
            if self.submatrix(range(n), cols) @ X != self.submatrix(range(n), others):
                return None
        return rows, cols

    def __repr__(self) -> str:
        return f"QMatrix({[[str(x) for x in r] for r in self.rows()]})"


def chain_column(factors: Sequence, x: Sequence) -> tuple[list[int], int]:
    """``F_1 @ (F_2 @ (… @ x))`` for :class:`QMatrix` factors and an integer vector ``x``, as
    ``(integers, D)``: the product is ``integers / D`` (right to left: every step a matrix times a
    column).

    >>> A, Z = QMatrix.from_rows([[1], ["1/2"]]), QMatrix.from_rows([["1/3", 1]])
    >>> chain_column((A, Z), [3, 2])      # A Z x = (3, 3/2)
    ([6, 3], 2)
    """
    col = fmpq_mat(fmpz_mat(len(x), 1, [int(t) for t in x]))
    for F in reversed(factors):
        col = F._m * col
    num, den = col.numer_denom()
    return [int(t) for t in num.entries()], int(den)


#: The most entries :func:`product_int_size` compares exactly before it reads out the whole product.
MAX_CANDIDATES = 4096


def product_int_size(W: QMatrix, factors: Sequence[QMatrix]) -> tuple[int, int]:
    """``W.int_size()`` for ``W`` equal to the product of ``factors`` (trusted: the caller formed ``W``
    from them), without reading all of ``W``'s entries out of flint.

    The factors are small (a rank-r head's d×r and r×d), so their float64 product ``P`` and a bound
    ``E`` on ``|P − W|`` entrywise are cheap.  For ``k <= 4`` factors of entries below ``2^200`` and inner
    sizes at most ``n``: each entry's conversion is within a relative ``2^-53``, and each product of
    inner size ``n`` within ``γ_n·|X|·|Y|`` (``γ_n = n·2^-53/(1 − n·2^-53)``), so ``|P − W| <=
    (k + (k − 1)·n)·2^-53·(1 + 2^-40)·|F₁|·…·|F_k|`` before underflow, which adds less than
    ``n^4·2^(-1022 + 600)`` per entry; ``E = (4k + 16)·n·2^-53·|F₁|·…·|F_k| + 2^-300`` covers both with room
    to spare.  The largest ``|W_ij|`` is at least ``lo = max(|P_ij| − E_ij)``, so it is among the entries
    with ``|P_ij| + E_ij >= lo``; those are compared exactly.  More factors, larger entries, or more
    than :data:`MAX_CANDIDATES` candidates: the whole matrix is read out instead.

    >>> A, B = QMatrix.from_rows([["1/2", 3], [1, "-1/3"]]), QMatrix.from_rows([[1, 2, "1/7"], [-4, 0, 5]])
    >>> product_int_size(A @ B, (A, B)) == (A @ B).int_size() == (633, 42)
    True
    """
    import numpy as np

    if not factors or factors[0].shape[0] != W.shape[0] or factors[-1].shape[1] != W.shape[1]:
        raise ShapeError(f"product_int_size: factors of shapes {[F.shape for F in factors]} do not make {W.shape}")
    if len(factors) > 4:
        return W.int_size()
    try:
        mats = [np.array([float(x) for x in F.entries()], dtype=np.float64).reshape(F.shape) for F in factors]
    except OverflowError:
        return W.int_size()
    if any(np.abs(F).max(initial=0.0) >= 2.0**200 for F in mats):
        return W.int_size()
    P, B = mats[0], np.abs(mats[0])
    for F in mats[1:]:
        P, B = P @ F, B @ np.abs(F)
    width = max((F.shape[1] for F in factors[:-1]), default=1)
    E = (4 * len(factors) + 16) * width * 2.0**-53 * B + 2.0**-300
    A = np.abs(P)
    lo = float((A - E).max(initial=0.0))
    cand = np.argwhere(A + E >= lo)
    if len(cand) > MAX_CANDIDATES:
        return W.int_size()
    m = W._m
    top = max((abs(m[int(i), int(j)]) for i, j in cand), default=fmpq(0))
    den = m.numer_denom()[1] if W.shape[0] * W.shape[1] else 1
    return int(top * den), int(den)


def sparse_rows(rows: Sequence[Sequence[tuple[int, fmpq]]], ncols: int) -> QMatrix:
    """The matrix whose row ``r`` has the ``(index, fmpq)`` pairs of ``rows[r]`` (a repeated index adds up).

    >>> sparse_rows([((0, fmpq(1)), (2, fmpq(3)), (0, fmpq(1)))], 3).rows()
    ((Fraction(2, 1), Fraction(0, 1), Fraction(3, 1)),)
    """
    R = fmpq_mat(len(rows), ncols)
    for r, row in enumerate(rows):
        for j, q in row:
            if not 0 <= j < ncols:
                raise ShapeError(f"sparse row {r}: index {j} out of range for {ncols} rows")
            R[r, j] += q
    return QMatrix._wrap(R)


def sparse_rows_times(rows: Sequence[Sequence[tuple[int, fmpq]]], W: QMatrix, cols: Sequence[int]) -> QMatrix:
    """``(R·W[:, cols])ᵀ``: entry ``(i, r)`` is ``(R·W)[r, cols[i]]``, where ``R`` is given by its sparse
    rows of ``(index, fmpq)`` pairs (a repeated index adds up).  One flint product.

    >>> W = QMatrix.from_rows([[1, 2], [3, "1/2"]])
    >>> R = [((0, fmpq(1)),), ((0, fmpq(1)), (1, fmpq(-2)))]     # e_0 and e_0 − 2e_1
    >>> sparse_rows_times(R, W, [1, 0, 1]).rows()
    ((Fraction(2, 1), Fraction(1, 1)), (Fraction(1, 1), Fraction(-5, 1)), (Fraction(2, 1), Fraction(1, 1)))
    """
    d, m = W.shape
    R = sparse_rows(rows, d)._m
    cols = list(cols)
    if any(not 0 <= c < m for c in cols):
        raise ShapeError(f"sparse_rows_times: a column index is out of range for {m} columns")
    if cols == list(range(m)):
        M = W._m
    else:
        M = fmpq_mat(d, len(cols), [W._m[i, c] for i in range(d) for c in cols])
    return QMatrix._wrap((R * M).transpose())


def less_pivot_rows(columns: Sequence[fmpq], d: int, shifts: Sequence[int], pivot: int) -> QMatrix:
    """``T − σ ⊗ T[pivot]`` (row ``k`` is ``T[k] − σ_k·T[pivot]``), where ``T`` is the ``d × d`` matrix
    whose column ``j`` is ``columns[j·d : (j+1)·d]``: built in C.

    >>> t = [fmpq(x) for x in (1, 2, 3, 4)]        # T = [[1, 3], [2, 4]]
    >>> less_pivot_rows(t, 2, [0, 1], 0).rows()   # row 1: T[1] − T[0]
    ((Fraction(1, 1), Fraction(3, 1)), (Fraction(1, 1), Fraction(1, 1)))
    """
    if len(columns) != d * d or len(shifts) != d or not 0 <= pivot < d:
        raise ShapeError(f"less_pivot_rows: expected {d * d} values, {d} shifts and a pivot below {d}")
    T = fmpq_mat(d, d, list(columns)).transpose()
    row = fmpq_mat(1, d, [T[pivot, j] for j in range(d)])
    return QMatrix._wrap(T - fmpq_mat(d, 1, list(shifts)) * row)


def outer_sum(col: Sequence[fmpq], row: Sequence[fmpq]) -> QMatrix:
    """The matrix ``M[i, j] = col[i] + row[j]``, built in C.

    >>> outer_sum([fmpq(1), fmpq(2)], [fmpq(0), fmpq(1, 2), fmpq(-1)]).rows()[1]
    (Fraction(2, 1), Fraction(5, 2), Fraction(1, 1))
    """
    a, b = len(col), len(row)
    return QMatrix._wrap(fmpq_mat(a, 1, list(col)) * fmpq_mat(1, b, [1] * b)
                         + fmpq_mat(a, 1, [1] * a) * fmpq_mat(1, b, list(row)))


def mismatches(M: QMatrix, values: Sequence[fmpq], minus: Sequence[fmpq] | None = None) -> list[int]:
    """The row-major indices where ``values`` (less ``minus``, entry by entry) differ from ``M``'s
    entries; the comparison is one flint matrix equality when nothing differs.

    >>> M = QMatrix.from_rows([[1, 2], [3, 4]])
    >>> mismatches(M, [fmpq(1), fmpq(2), fmpq(3), fmpq(4)]), mismatches(M, [fmpq(2), fmpq(3), fmpq(3), fmpq(5)], [fmpq(1), fmpq(0), fmpq(0), fmpq(1)])
    ([], [1])
    """
    r, c = M.shape
    if len(values) != r * c or (minus is not None and len(minus) != r * c):
        raise ShapeError(f"mismatches: expected {r * c} values for a {r}×{c} matrix")
    G = fmpq_mat(r, c, list(values))
    if minus is not None:
        G -= fmpq_mat(r, c, list(minus))
    if G == M._m:
        return []
    return [i for i, x in enumerate((G - M._m).entries()) if x != 0]


#: The prime of :meth:`QMatrix.independent`'s search (the largest below 2^62).
PRIME = 4611686018427387847


def _pivots(M) -> list[int]:
    """The pivot columns of an ``nmod_mat``'s reduced row echelon form."""
    R, rank = M.rref()
    out, j = [], 0
    for i in range(rank):
        while int(R[i, j]) == 0:
            j += 1
        out.append(j)
        j += 1
    return out


class ZMatrix:
    """A dense integer matrix (flint ``fmpz_mat``), for integer-form products in hot loops.

    >>> ZMatrix([[1, 2], [3, 4]]).times_columns([[1, 0], [0, 1], [1, 1]])
    [[1, 2, 3], [3, 4, 7]]
    """

    __slots__ = ("_m", "ncols")

    def __init__(self, rows: Sequence[Sequence[int]]):
        rows = [list(r) for r in rows]
        self.ncols = len(rows[0]) if rows else 0
        self._m = fmpz_mat(len(rows), self.ncols, [int(x) for r in rows for x in r])

    def times_columns(self, cols: Sequence[Sequence[int]]) -> list[list]:
        """``self @ [c_1 … c_n]`` for integer columns, as rows (one per row of ``self``)."""
        n, d = len(cols), self.ncols
        X = fmpz_mat(d, n, [cols[k][i] for i in range(d) for k in range(n)])
        return (self._m * X).tolist()


def lll_rows(rows: Sequence[Sequence[int]]) -> list[list[int]]:
    """The LLL-reduced basis (flint, δ = 0.99) of the integer lattice spanned by ``rows``.

    >>> lll_rows([[1, 0, 0, 13], [0, 1, 0, 7], [0, 0, 1, 20]])[0]
    [-1, -1, 1, 0]
    """
    rows = [list(r) for r in rows]
    M = fmpz_mat(len(rows), len(rows[0]), [int(x) for r in rows for x in r])
    return [[int(x) for x in r] for r in M.lll().tolist()]


def ball_solve(rows: Sequence[Sequence], rhs: Sequence) -> list:
    """The solution of ``rows · x = rhs`` over ``arb`` balls (flint ``arb_mat.solve``, at the
    current working precision); raises ``ZeroDivisionError`` or ``ValueError`` when the
    system is not certified nonsingular.

    >>> from flint import arb
    >>> [x.mid() for x in ball_solve([[arb(2), arb(0)], [arb(0), arb(4)]], [arb(1), arb(1)])]
    [0.500000000000000, 0.250000000000000]
    """
    x = arb_mat([list(r) for r in rows]).solve(arb_mat([[b] for b in rhs]))
    return [x[i, 0] for i in range(x.nrows())]
