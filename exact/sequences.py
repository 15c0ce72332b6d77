"""Exact token sequences, the inputs of every query.

A :class:`Sequence` holds ``N >= 1`` tokens of dimension ``d`` with exact rational
entries, stored sparsely (most learner probes are basis vectors).  The last token is
the query token.  Anything array-like is validated and converted by
:meth:`Sequence.from_rows`; learners build probes directly with
:meth:`Sequence.sparse` and :meth:`Sequence.basis`.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from flint import fmpq

from .errors import InvalidNumber, ShapeError
from .jsonfields import check_fields, describe_json, short_repr
from .numbers import format_rational, to_fraction

__all__ = ["Sequence", "as_sequence", "int_row", "forms_agree", "offset_agrees", "kept_rows", "kept_rows_of"]

Row = tuple  # tuple[tuple[int, Fraction], ...]: sorted (index, nonzero value) pairs


@dataclass(frozen=True, slots=True, eq=False)
class Sequence:
    """``N`` tokens in ``Q^d``; ``rows[i]`` lists the nonzero ``(index, value)`` pairs of token i.

    Examples
    --------
    >>> X = Sequence.from_rows([[1, "1/2"], [0, 3]])
    >>> X.length, X.d, X.dense()[0]
    (2, 2, [Fraction(1, 1), Fraction(1, 2)])
    >>> Sequence.sparse(3, [{0: 1, 2: 1}, {2: 1}]) == Sequence.from_rows([[1, 0, 1], [0, 0, 1]])
    True
    """

    d: int
    rows: tuple
    # The fields below are derived forms: computed on demand, or set by the trusted constructors
    # (``_exact``, ``_floats``, ``_shifted``, ``_offset_pair(s)``), never taken from ``__init__``.
    # The rows with flint ``fmpq`` values, for fast exact evaluation: computed once, on
    # demand, or handed over by a learner that already has them.
    _fq: tuple | None = field(default=None, compare=False, repr=False, hash=False)
    # Per token, ``(D, dense, pairs)`` with token = integers / D: ``dense`` a list of d
    # integers for a dense token (more than d/4 nonzeros), else ``pairs`` of
    # ``(index, integer)``.  Exact evaluation of dense tokens runs on these.
    _ints: tuple | None = field(default=None, compare=False, repr=False, hash=False)
    # Per token, ``None`` or ``(i, deltas)``: a dense token equal to token ``i`` plus
    # ``deltas``, ``(index, integer)`` pairs over the same ``D`` (a probe ``b + u_k``
    # next to ``b``).  Set only by learners that built the integer rows that way; exact
    # evaluation then updates token i's products instead of recomputing d of them.
    _near: tuple | None = field(default=None, compare=False, repr=False, hash=False)
    # ``(base, j, step)``: this one-token sequence is the one-token ``base`` plus ``step`` on
    # coordinate ``j``, and its rows and integer form are built only when asked for (a
    # learner's coordinate probes: d of them per point, each d entries long, kept compact).
    _shift: tuple | None = field(default=None, compare=False, repr=False, hash=False)
    # The tokens as a float64 ``(N, d)`` array, for a sequence a float learner built from one: its
    # rows (the exact binary rationals of those floats) are built only when asked for.
    _f64: np.ndarray | None = field(default=None, compare=False, repr=False, hash=False)
    # ``(base, deltas, deltas_fq)``: this is the two-token ``[b + Δ; b]`` for the one-token ``base = [b]``
    # and the sparse ``Δ`` (sorted ``(index, Fraction)`` pairs; ``deltas_fq`` the same with ``fmpq``
    # values, or None), kept as that: a sketch probe of a dense ``b``
    # costs a reference and a few entries, and its rows are built (and dropped) only when asked for.
    _offset: tuple | None = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self):
        if not isinstance(self.d, int) or isinstance(self.d, bool) or self.d < 1:
            raise ShapeError(f"sequence: expected a token dimension d >= 1, got {self.d!r}")
        try:
            rows = tuple(tuple(r) for r in self.rows)
        except TypeError:
            raise ShapeError("sequence: expected rows as tuples of (index, value) pairs") from None
        if len(rows) < 1:
            raise ShapeError("sequence: expected at least one token (N >= 1), got none")
        for i, r in enumerate(rows):
            last = -1
            for pair in r:
                if not (isinstance(pair, tuple) and len(pair) == 2):
                    raise ShapeError(f"sequence: token {i}: expected (index, value) pairs, got {pair!r}")
                j, q = pair
                if not (isinstance(j, int) and last < j < self.d):
                    raise ShapeError(f"sequence: token {i}: indices must increase within 0..{self.d - 1}, got {j!r}")
                if not isinstance(q, Fraction) or q == 0:
                    raise ShapeError(f"sequence: token {i}: values must be nonzero Fractions, got {q!r}")
                last = j
        object.__setattr__(self, "rows", rows)
        # The other forms are the trusted constructors' to set (they bypass this check): a sequence
        # made here, or by dataclasses.replace, is its d and rows, whatever else was passed.
        for name in _DERIVED:
            object.__setattr__(self, name, None)

    @classmethod
    def from_rows(cls, rows, *, d: int | None = None, name: str = "X") -> "Sequence":
        """Validate and convert an ``N × d`` array-like of real numbers.

        Raises
        ------
        ShapeError
            If the rows are not all of length ``d``, or there are none.
        InvalidNumber
            If an entry is NaN, infinite or not a number.
        """
        if isinstance(rows, Sequence):
            if d is not None and rows.d != d:
                raise ShapeError(f"{name}: expected tokens of dimension d={d}, got d={rows.d}")
            return rows
        if isinstance(rows, np.ndarray):
            if rows.ndim != 2:
                raise ShapeError(f"{name}: expected an N×d array, got shape {rows.shape}")
            if rows.dtype.kind in "fiu" and rows.size:
                return cls._from_numeric(rows, d=d, name=name)
            rows = list(rows)
        try:
            if isinstance(rows, (str, bytes)) or any(isinstance(r, (str, bytes)) for r in rows):
                raise ShapeError(f"{name}: expected an N×d array of numbers, got a string where a token belongs")
            rows = [list(r) for r in rows]
        except TypeError:
            raise ShapeError(f"{name}: expected a list of tokens (an N×d array), got {type(rows).__name__}") from None
        if not rows:
            raise ShapeError(f"{name}: expected at least one token (N >= 1), got none")
        width = len(rows[0]) if d is None else d
        out = []
        for i, r in enumerate(rows):
            if len(r) != width:
                raise ShapeError(f"{name}: expected every token to have d={width} entries, token {i} has {len(r)}")
            pairs = []
            for j, x in enumerate(r):
                q = to_fraction(x, name=f"{name}[{i}][{j}]")
                if q:
                    pairs.append((j, q))
            out.append(tuple(pairs))
        return cls(width, tuple(out))

    @classmethod
    def _from_numeric(cls, a: np.ndarray, *, d: int | None, name: str) -> "Sequence":
        """Fast path for int/float arrays: one finiteness check, exact conversion per entry."""
        if d is not None and a.shape[1] != d:
            raise ShapeError(f"{name}: expected every token to have d={d} entries, got {a.shape[1]}")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            i, j = map(int, np.argwhere(~np.isfinite(a))[0])
            raise InvalidNumber(f"{name}[{i}][{j}]: expected a finite real number, got {a[i, j]}")
        values = a.astype(np.float64) if a.dtype.kind == "f" else a  # float16/32 embed exactly
        rows = []
        for row in values:
            nz = np.flatnonzero(row)
            rows.append(tuple(zip(nz.tolist(), map(Fraction, row[nz].tolist()))))
        return cls(a.shape[1], tuple(rows))

    @classmethod
    def sparse(cls, d: int, rows) -> "Sequence":
        """Build from ``{index: value}`` mappings (one per token), values exact.

        Values must already be exact (int or Fraction); this is the fast path used by
        learners.
        """
        out = []
        for r in rows:
            pairs = []
            for j in sorted(r):
                if not 0 <= j < d:
                    raise ShapeError(f"sequence: index {j} out of range for d={d}")
                q = r[j] if isinstance(r[j], Fraction) else to_fraction(r[j])
                if q:
                    pairs.append((j, q))
            out.append(tuple(pairs))
        return cls(d, tuple(out))

    @classmethod
    def basis(cls, d: int, i: int) -> "Sequence":
        """The one-token sequence ``[e_i]``."""
        return cls.sparse(d, [{i: 1}])

    @classmethod
    def _exact(
        cls, d: int, rows: tuple, fq: tuple | None = None, ints: tuple | None = None, near: tuple | None = None
    ) -> "Sequence":
        """Trusted constructor for learners: ``rows`` are sorted ``(index, Fraction)`` pairs, nonzero;
        ``fq`` and ``ints``, if given, the same rows with ``fmpq`` values and in integer form;
        ``near`` (with ``ints``) the tokens that are another token plus a few integer deltas."""
        seq = cls.__new__(cls)
        object.__setattr__(seq, "d", d)
        object.__setattr__(seq, "rows", rows)
        object.__setattr__(seq, "_fq", fq)
        object.__setattr__(seq, "_ints", ints)
        object.__setattr__(seq, "_near", near)
        object.__setattr__(seq, "_shift", None)
        object.__setattr__(seq, "_f64", None)
        object.__setattr__(seq, "_offset", None)
        return seq

    @classmethod
    def _floats(cls, X: np.ndarray) -> "Sequence":
        """Trusted constructor for float learners: the finite float64 ``(N, d)`` array ``X``, kept
        as that (its rows, the floats' exact binary rationals, are built when asked for).

        >>> s = Sequence._floats(np.array([[0.5, 0.0, -2.0]]))
        >>> s.length, s.to_numpy().tolist(), s == Sequence.from_rows([["1/2", 0, -2]])
        (1, [[0.5, 0.0, -2.0]], True)
        """
        X = np.asarray(X, dtype=np.float64) + 0.0  # a copy, with -0.0 as 0.0 (the rows cannot tell them apart)
        if not np.isfinite(X).all():
            raise InvalidNumber("sequence: a float64 token entry is not finite")
        seq = cls.__new__(cls)
        object.__setattr__(seq, "d", int(X.shape[1]))
        _ROWS.__set__(seq, None)
        object.__setattr__(seq, "_fq", None)
        object.__setattr__(seq, "_ints", None)
        object.__setattr__(seq, "_near", None)
        object.__setattr__(seq, "_shift", None)
        object.__setattr__(seq, "_f64", X)
        object.__setattr__(seq, "_offset", None)
        return seq

    @classmethod
    def _shifted(cls, base: "Sequence", j: int, step: Fraction) -> "Sequence":
        """Trusted constructor for learners: the one-token ``base`` plus ``step·e_j``, kept as that
        (its rows and integer form are built when asked for, and not kept)."""
        seq = cls._lazy(base.d)
        object.__setattr__(seq, "_shift", (base, j, step))
        return seq

    @classmethod
    def _lazy(cls, d: int) -> "Sequence":
        """A sequence of dimension ``d`` whose rows and every other form are still to be set or built."""
        seq = cls.__new__(cls)
        _D.__set__(seq, d)  # the slots' own setters: a learner builds many thousands of these
        for slot in _EMPTY:
            slot.__set__(seq, None)
        return seq

    @classmethod
    def _offset_pair(cls, base: "Sequence", deltas: tuple, deltas_fq: tuple | None = None) -> "Sequence":
        """Trusted constructor for learners: ``[b + Δ; b]`` for the one-token ``base = [b]`` and the sparse
        ``Δ`` (sorted ``(index, nonzero Fraction)`` pairs), kept as that: its rows, ``fmpq`` rows and
        integer form are built when asked for and not kept (a d = 4096 sketch probe stays a few entries).
        Exact evaluation reads ``Δ`` and ``b``'s own products (``SingleHead._pair``); ``deltas_fq``, if given,
        is ``Δ`` with ``fmpq`` values (shared by the probes of one offset).

        >>> b = Sequence.sparse(3, [{0: 1, 2: Fraction(1, 2)}])
        >>> X = Sequence._offset_pair(b, ((1, Fraction(2)), (2, Fraction(-1, 2))))
        >>> X.length, X.dense(), X == Sequence.from_rows([[1, 2, 0], [1, 0, "1/2"]])
        (2, [[Fraction(1, 1), Fraction(2, 1), Fraction(0, 1)], [Fraction(1, 1), Fraction(0, 1), Fraction(1, 2)]], True)
        """
        seq = cls._lazy(base.d)
        _EMPTY[-1].__set__(seq, (base, deltas, deltas_fq))  # the _offset slot
        return seq

    @classmethod
    def _offset_pairs(cls, bases: list, offsets: list, *, offsets_outer: bool = False) -> list:
        """``[Sequence._offset_pair(b, Δ, Δ_fq) for b in bases for Δ, Δ_fq in offsets]`` (the one-token
        ``bases`` outer; with ``offsets_outer``, the offsets outer), each slot filled for all of them in
        one C-level pass (a learner builds ``d²``).

        >>> b = Sequence.sparse(3, [{0: 1}])
        >>> xs = Sequence._offset_pairs([b], [(((1, Fraction(2)),), None), (((0, Fraction(-1)),), None)])
        >>> [x.dense()[0] for x in xs] == [[1, 2, 0], [0, 0, 0]], xs[1].length, xs[1]._offset[0] is b
        (True, 2, True)
        >>> c = Sequence.sparse(3, [{2: 1}])
        >>> ys = Sequence._offset_pairs([b, c], [(((1, Fraction(2)),), None)] * 2, offsets_outer=True)
        >>> [y._offset[0] is z for y, z in zip(ys, [b, c, b, c])]
        [True, True, True, True]
        """
        if not bases:
            return []
        d, n, m = bases[0].d, len(bases) * len(offsets), len(offsets)
        if any(b.d != d for b in bases):
            raise ShapeError("offset probes: every base must have the same dimension d")
        out = list(map(object.__new__, itertools.repeat(cls, n)))
        deque(map(_D.__set__, out, itertools.repeat(d)), maxlen=0)
        for slot in _EMPTY[:-1]:
            deque(map(slot.__set__, out, itertools.repeat(None)), maxlen=0)
        deltas, fqs = [o[0] for o in offsets], [o[1] for o in offsets]
        if offsets_outer:
            k = len(bases)
            parts = zip(itertools.cycle(bases), itertools.chain.from_iterable(itertools.repeat(x, k) for x in deltas),
                        itertools.chain.from_iterable(itertools.repeat(x, k) for x in fqs))
        else:
            parts = zip(itertools.chain.from_iterable(itertools.repeat(b, m) for b in bases),
                        itertools.cycle(deltas), itertools.cycle(fqs))
        deque(map(_EMPTY[-1].__set__, out, parts), maxlen=0)  # the _offset slot
        return out

    @property
    def _int_rows(self) -> tuple:
        """The tokens in integer form (see the ``_ints`` slot), computed once (built afresh each
        time for a shifted probe, which stays compact)."""
        if self._offset is not None:  # an offset pair is its base and offset: nothing else it carries is read
            base = self._offset[0]
            return (int_row(self.rows[0], self.d), base._int_rows[0])
        ints = self._ints
        if ints is None:
            if self._shift is not None:
                return (_shifted_ints(self._shift, self.d),)
            ints = tuple(int_row(r, self.d) for r in self.rows)
            object.__setattr__(self, "_ints", ints)
        return ints

    def __eq__(self, other) -> bool:
        if self is other:
            return True
        if not isinstance(other, Sequence):
            return NotImplemented
        if self.d != other.d or self.length != other.length:
            return False
        if ((self._ints is None or other._ints is None) and self._fq is not None and other._fq is not None
                and self._offset is None and other._offset is None):
            return self._fq == other._fq  # flint rationals, compared in C
        return self._int_rows == other._int_rows  # a canonical integer form, compared in C

    def __hash__(self) -> int:
        return hash((self.d, self.rows))

    @property
    def _fmpq_rows(self) -> tuple:
        """The rows with ``fmpq`` values, for fast exact evaluation (computed once)."""
        if self._offset is not None:  # built afresh each time from the offset: the probe stays compact
            return tuple(tuple([(j, fmpq(q.numerator, q.denominator)) for j, q in r]) for r in self.rows)
        fq = self._fq
        if fq is None:
            fq = tuple(tuple([(j, fmpq(q.numerator, q.denominator)) for j, q in r]) for r in self.rows)
            object.__setattr__(self, "_fq", fq)
        return fq

    @property
    def length(self) -> int:
        """The number of tokens ``N``."""
        if self._shift is not None:
            return 1
        if self._offset is not None:
            return 2
        return len(self.rows) if self._f64 is None else int(self._f64.shape[0])

    def dense(self) -> list:
        """The tokens as an ``N × d`` list of lists of Fractions."""
        out = []
        for r in self.rows:
            row = [Fraction(0)] * self.d
            for j, q in r:
                row[j] = q
            out.append(row)
        return out

    def to_numpy(self, dtype=np.float64) -> np.ndarray:
        """The tokens as an ``N × d`` float array (rounded to ``dtype``)."""
        if self._f64 is not None and np.dtype(dtype) == np.float64:
            return self._f64.copy()
        if self._offset is not None and self._offset[0]._f64 is not None and np.dtype(dtype) == np.float64:
            return self._offset_numpy()
        a = np.zeros((self.length, self.d), dtype=dtype)
        if np.dtype(dtype) == np.float64:
            for i, r in enumerate(self.rows):
                for j, q in r:
                    try:
                        a[i, j] = q.numerator / q.denominator  # int/int division is correctly rounded
                    except OverflowError:
                        raise InvalidNumber(f"X[{i}][{j}]: the value does not fit float64") from None
            return a
        from .grids import FLOAT16, FLOAT32

        grid = {np.dtype(np.float32): FLOAT32, np.dtype(np.float16): FLOAT16}.get(np.dtype(dtype))
        for i, r in enumerate(self.rows):
            for j, q in r:
                g = grid.round(q) if grid is not None else q  # round once, exactly: no double rounding
                if g is None:
                    raise InvalidNumber(f"X[{i}][{j}]: the value does not fit {np.dtype(dtype).name}")
                a[i, j] = float(g)
        return a

    def _offset_numpy(self) -> np.ndarray:
        """``[b + Δ; b]`` as float64 for an offset pair whose base is a float64 token: the base copied,
        and each entry ``Δ`` touches rounded from its exact value (as :meth:`to_numpy` rounds any entry)."""
        assert self._offset is not None and self._offset[0]._f64 is not None  # the caller checked
        base, _, _ = self._offset
        b = base._f64[0]
        a = np.stack([b, b])
        for j, q in self._offset_entries():
            try:
                a[0, j] = q.numerator / q.denominator + 0.0  # int/int division is correctly rounded; no -0.0
            except OverflowError:
                raise InvalidNumber(f"X[0][{j}]: the value does not fit float64") from None
        return a

    def _offset_entries(self) -> list:
        """The exact entries ``b_j + Δ_j`` of the first token where ``Δ`` touches it (a float64 base)."""
        assert self._offset is not None and self._offset[0]._f64 is not None  # the caller checked
        base, deltas, _ = self._offset
        b = base._f64[0]
        sums: dict = {}
        for j, x in deltas:
            sums[j] = sums.get(j, Fraction(float(b[j]))) + x
        return list(sums.items())

    def _float64_exact(self) -> bool | None:
        """Whether every entry is a float64 value, when that is cheap to tell (``None`` when it is not):
        a float64-backed sequence is; an offset pair of a float64 base is when the entries its ``Δ``
        touches are."""
        if self._f64 is not None:
            return True
        if self._offset is not None and self._offset[0]._f64 is not None:
            return all(is_float64(q) for _, q in self._offset_entries())
        return None

    def __neg__(self) -> "Sequence":
        return Sequence(self.d, tuple(tuple((j, -q) for j, q in r) for r in self.rows))

    def to_json(self) -> dict:
        """Sparse JSON: ``{"d": d, "rows": [{"index": "p/q", ...}, ...]}``."""
        return {"d": self.d, "rows": [{str(j): format_rational(q) for j, q in r} for r in self.rows]}

    @classmethod
    def from_json(cls, data) -> "Sequence":
        """Read :meth:`to_json` output ``{"d": d, "rows": [{"index": "p/q", ...}, ...]}``, or a list of rows.

        The object has exactly the fields ``d`` and ``rows``; indices are decimal
        integers in ASCII without leading zeros; values are read exactly.

        >>> Sequence.from_json({"d": 2, "rows": [{"1": "1/2"}]}).dense()
        [[Fraction(0, 1), Fraction(1, 2)]]
        >>> Sequence.from_json({"d": 2, "rows": [{"1": "1/2"}], "N": 1})
        Traceback (most recent call last):
        ...
        exact.errors.ShapeError: sequence: unknown field(s) ['N']; allowed fields: ['d', 'rows']
        """
        if not isinstance(data, dict):
            return cls.from_rows(data)

        check_fields(data, where="sequence", required=("d", "rows"), error=ShapeError)
        d, given = data["d"], data["rows"]
        if not isinstance(d, int) or isinstance(d, bool):
            raise ShapeError(f"sequence: expected an integer d, got {short_repr(d)}")
        if d.bit_length() > 62:
            raise ShapeError(f"sequence: expected an integer d below 2^62, got one with {len(str(abs(d)))} digits")
        if not isinstance(given, list):
            raise ShapeError(f"sequence: expected 'rows' as a list of {{index: value}} objects, got {describe_json(given)}")
        rows = []
        for r in given:
            if not isinstance(r, dict) or not all(
                isinstance(k, str) and k.isascii() and k.isdigit() and (k == "0" or k[0] != "0") for k in r
            ):
                raise ShapeError(f"sequence: expected rows as {{index: value}} objects, got {short_repr(r)}")
            for k in r:
                if len(k) > 18:
                    raise ShapeError(f"sequence: index with {len(k)} digits out of range for d={d}")
            rows.append({int(k): to_fraction(v, name=f"X[{k}]") for k, v in r.items()})
        return cls.sparse(d, rows)


_ROWS = Sequence.__dict__["rows"]  # the slot that holds the rows
#: The forms a sequence may carry besides its rows, set only by the trusted constructors.
_DERIVED = ("_fq", "_ints", "_near", "_shift", "_f64", "_offset")
_D = Sequence.__dict__["d"]
#: The slots a sequence still to be filled in starts with empty.
_EMPTY = tuple(Sequence.__dict__[name] for name in ("rows", "_fq", "_ints", "_near", "_shift", "_f64", "_offset"))
#: An offset pair's rows are kept once built when its base token has at most this many entries.
_KEPT_OFFSET_ROWS = 16


def _rows(self) -> tuple:
    """The rows, built on first use for a shifted probe (then kept, as for any sequence)."""
    rows = _ROWS.__get__(self, Sequence)
    if rows is None and self._offset is not None:  # built afresh each time unless small (then kept)
        base, deltas, _ = self._offset
        b = base.rows[0]
        token = dict(b)
        for j, x in deltas:
            old = token.get(j)
            value = x if old is None else old + x  # the entries Δ does not share with b are Δ's own objects
            if value:
                token[j] = value
            else:
                token.pop(j, None)
        rows = (tuple(sorted(token.items())), b)
        if len(b) <= _KEPT_OFFSET_ROWS:  # a sparse probe: as compact as its offset form, and read again
            _ROWS.__set__(self, rows)
        return rows
    if rows is None and self._f64 is not None:
        rows = tuple(tuple((int(j), Fraction(float(r[j]))) for j in np.flatnonzero(r)) for r in self._f64)
        _ROWS.__set__(self, rows)
        return rows
    if rows is None:
        base, j, step = self._shift
        token = dict(base.rows[0])
        old = token.get(j)
        value = step if old is None else old + step
        if value:
            token[j] = value
        else:
            token.pop(j, None)
        rows = (tuple(sorted(token.items())),)
        _ROWS.__set__(self, rows)
    return rows


setattr(Sequence, "rows", property(_rows, lambda self, value: _ROWS.__set__(self, value)))


def _shifted_ints(shift: tuple, d: int) -> tuple:
    """The integer form of ``base + step·e_j`` from the base's, over the common denominator."""
    base, j, step = shift
    D, dense, pairs = base._int_rows[0]
    num, den = step.numerator, step.denominator
    common = D * den // math.gcd(D, den)
    scale = common // D
    values = list(dense) if dense is not None else _dense_of(pairs, d)
    values = [x * scale for x in values]
    values[j] += num * (common // den)
    g = math.gcd(common, *values)
    if g > 1:
        common, values = common // g, [x // g for x in values]
    nonzero = sum(1 for x in values if x)
    if 4 * nonzero > d:
        return common, values, None
    return common, None, [(i, x) for i, x in enumerate(values) if x]


def _dense_of(pairs, d: int) -> list:
    out = [0] * d
    for i, x in pairs:
        out[i] = x
    return out


def int_row(row: tuple, d: int) -> tuple:
    """A token's integer form ``(D, dense, pairs)``: values = integers / D, dense when it has
    more than d/4 nonzeros (a list of d integers), else ``(index, integer)`` pairs."""
    dens = [x.denominator for _, x in row]
    D = math.lcm(*dens) if dens else 1
    if 4 * len(row) > d:
        dense = [0] * d
        for j, x in row:
            dense[j] = x.numerator * (D // x.denominator)
        return D, dense, None
    return D, None, [(j, x.numerator * (D // x.denominator)) for j, x in row]


def is_float64(q: Fraction) -> bool:
    """Whether ``q`` is a float64 value (a cheap, sufficient test: 53-bit numerator, power-of-two denominator)."""
    den = q.denominator
    return den & (den - 1) == 0 and den.bit_length() < 1000 and q.numerator.bit_length() <= 53


def as_sequence(X, *, d: int | None = None) -> Sequence:
    """Return ``X`` as a validated :class:`Sequence` of token dimension ``d``."""
    return Sequence.from_rows(X, d=d)


def _well_formed(row, d: int) -> bool:
    """A token's ``(index, value)`` pairs: indices ``int`` strictly increasing within ``0..d−1``, values
    nonzero ``Fraction`` (what the public constructor checks, and the trusted ones take on trust)."""
    if type(row) is not tuple:
        return False
    last = -1
    for pair in row:
        if type(pair) is not tuple or len(pair) != 2:
            return False
        j, q = pair
        if type(j) is not int or not last < j < d or type(q) is not Fraction or not q:
            return False
        last = j
    return True


def _fq_of(row) -> tuple:
    return tuple((j, fmpq(q.numerator, q.denominator)) for j, q in row)


def _same_fq(got, row) -> bool:
    """``got`` is ``row`` with ``fmpq`` values: the same indices (``int``), values of type ``fmpq`` itself."""
    return (type(got) is tuple and len(got) == len(row)
            and all(type(p) is tuple and len(p) == 2 and type(p[0]) is int and type(p[1]) is fmpq for p in got)
            and got == _fq_of(row))


def _same_int_row(got, row: tuple, d: int) -> bool:
    """``got`` is ``int_row(row, d)``, made of Python ``int`` throughout."""
    if type(got) is not tuple or len(got) != 3:
        return False
    D, dense, pairs = got
    if type(D) is not int or (dense is None) == (pairs is None):
        return False
    if dense is not None and (type(dense) is not list or not all(type(x) is int for x in dense)):
        return False
    if pairs is not None and (type(pairs) is not list or not all(
            type(p) is tuple and len(p) == 2 and type(p[0]) is int and type(p[1]) is int for p in pairs)):
        return False
    return got == int_row(row, d)


def offset_agrees(deltas, deltas_fq, d: int) -> bool:
    """Whether an offset's ``Δ`` is well formed in dimension ``d`` and its ``fmpq`` form (if any) is ``Δ``'s.

    >>> offset_agrees(((1, Fraction(2)),), ((1, fmpq(2)),), 3), offset_agrees(((1, Fraction(2)),), ((1, fmpq(3)),), 3)
    (True, False)
    """
    try:
        return _well_formed(deltas, d) and (deltas_fq is None or _same_fq(deltas_fq, deltas))
    except Exception:  # (a malformed form is a form that disagrees)
        return False


def kept_rows(X: Sequence) -> tuple | None:
    """The rows a sequence holds, or ``None`` for a lazy one (an offset pair, a shifted probe, float64
    tokens) whose rows are still to be built.

    >>> b = Sequence.sparse(2, [{0: 1}])
    >>> kept_rows(b) == b.rows, kept_rows(Sequence._offset_pair(b, ((1, Fraction(1)),)))
    (True, None)
    """
    return _GET_ROWS(X, Sequence)


_GET_ROWS = _ROWS.__get__


def kept_rows_of(seqs: list) -> list:
    """:func:`kept_rows` of many sequences, in one C-level pass."""
    return list(map(_GET_ROWS, seqs, itertools.repeat(Sequence)))


#: The forms an offset pair never carries besides its offset: it is its base and offset alone.
_OFFSET_FREE = ("_fq", "_ints", "_near", "_shift", "_f64")


def forms_agree(X: Sequence, seen: dict | None = None) -> bool:
    """Whether every form a trusted constructor set on ``X`` is the form its rows give.

    A sequence's rows are what it *is* (a certificate's JSON keeps only them); the ``fmpq`` rows,
    the integer form, the near-token links, an offset's ``fmpq`` deltas and a lazy sequence's kept
    rows are derived forms that learners hand over to save work, and evaluation reads them.  A form
    that is not the rows' (by value, and made of the exact types the library makes: ``int``,
    ``Fraction``, ``fmpq`` themselves, not subclasses) would have the replay decide another query
    than the one recorded, so a certificate's replay asks this first.  A lazy sequence has one
    source (an offset pair its base and offset and nothing else, a shifted probe its base and step,
    float64 tokens their array), checked in turn.  Anything malformed, or any error while checking,
    counts as disagreeing.  ``seen`` (``id`` → ``(object, verdict)``) shares verdicts on shared
    objects.

    >>> b = Sequence._exact(3, (((0, Fraction(1)),),), (((0, fmpq(1)),),))
    >>> forms_agree(b), forms_agree(Sequence._offset_pair(b, ((1, Fraction(2)),), ((1, fmpq(2)),)))
    (True, True)
    >>> forms_agree(Sequence._offset_pair(b, ((1, Fraction(2)),), ((1, fmpq(3)),)))  # a forged fmpq delta
    False
    >>> forms_agree(Sequence._exact(3, (((0, Fraction(1)),),), (((0, fmpq(2)),),)))  # forged fmpq rows
    False
    """
    seen = {} if seen is None else seen
    hit = seen.get(id(X))
    if hit is not None and hit[0] is X:
        return hit[1]
    try:
        ok = _agree(X, seen)
    except Exception:  # (a malformed form, or a chain too deep to follow, is a form that disagrees)
        ok = False
    seen[id(X)] = (X, ok)  # holds X: its id stays its own
    return ok


def _derived_rows(X, cached):
    """The rows of a lazy sequence as its source gives them (a kept copy set aside meanwhile)."""
    _ROWS.__set__(X, None)
    try:
        return X.rows
    finally:
        _ROWS.__set__(X, cached)


def _agree(X, seen: dict) -> bool:
    if type(X) is not Sequence or type(X.d) is not int or X.d < 1:
        return False
    d, cached = X.d, _ROWS.__get__(X, Sequence)
    if X._offset is not None:
        parts = X._offset
        if type(parts) is not tuple or len(parts) != 3 or any(getattr(X, name) is not None for name in _OFFSET_FREE):
            return False
        base, deltas, deltas_fq = parts
        if not (type(base) is Sequence and base.d == d and forms_agree(base, seen) and len(base.rows) == 1):
            return False
        key = (id(deltas), id(deltas_fq))
        hit = seen.get(key)
        if hit is None or hit[0] is not deltas or hit[1] is not deltas_fq:
            hit = seen[key] = (deltas, deltas_fq, offset_agrees(deltas, deltas_fq, d))  # (shared by many probes)
        if not hit[2]:
            return False
        return cached is None or (all(_well_formed(r, d) for r in cached) and cached == _derived_rows(X, cached))
    if X._shift is not None:
        parts = X._shift
        if type(parts) is not tuple or len(parts) != 3 or X._f64 is not None or X._ints is not None or X._near is not None:
            return False
        base, j, step = parts
        if not (type(base) is Sequence and base.d == d and forms_agree(base, seen) and len(base.rows) == 1
                and type(j) is int and 0 <= j < d and type(step) is Fraction):
            return False
        if cached is not None and cached != _derived_rows(X, cached):
            return False
        rows = X.rows
    elif X._f64 is not None:
        if type(X._f64) is not np.ndarray or X._f64.dtype != np.float64 or X._f64.ndim != 2 or X._f64.shape[1] != d:
            return False
        if cached is not None and cached != _derived_rows(X, cached):
            return False
        rows = X.rows
    else:
        rows = cached
    if type(rows) is not tuple or not rows or not all(_well_formed(r, d) for r in rows):
        return False
    if X._fq is not None and (type(X._fq) is not tuple or len(X._fq) != len(rows)
                              or not all(_same_fq(g, r) for g, r in zip(X._fq, rows))):
        return False
    if X._ints is not None and (type(X._ints) is not tuple or len(X._ints) != len(rows)
                                or not all(_same_int_row(g, r, d) for g, r in zip(X._ints, rows))):
        return False
    if X._near is not None:
        near, ints = X._near, [int_row(r, d) for r in rows]
        if type(near) is not tuple or len(near) != len(rows):
            return False
        for t, link in enumerate(near):
            if link is None:
                continue
            if type(link) is not tuple or len(link) != 2 or type(link[0]) is not int or not 0 <= link[0] < len(rows):
                return False
            i, deltas = link
            if type(deltas) is not tuple or not all(
                    type(p) is tuple and len(p) == 2 and type(p[0]) is int and 0 <= p[0] < d and type(p[1]) is int
                    for p in deltas):
                return False
            if ints[i][0] != ints[t][0]:
                continue  # (the evaluation uses a link only over the same denominator)
            got = _dense_of_int(ints[i], d)
            for j, x in deltas:
                got[j] += x
            if got != _dense_of_int(ints[t], d):
                return False
    return True


def _dense_of_int(row: tuple, d: int) -> list:
    _, dense, pairs = row
    return list(dense) if dense is not None else _dense_of(pairs, d)
