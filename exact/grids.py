"""Grids: declarations of what "exact" means for a recovered number.

A grid is a discrete set of reals with a monotone rounding map.  A ball
``[lo, hi]`` *certifies* a grid point ``g`` when ``round(lo) == round(hi) == g`` and
``lo <= g <= hi``: every grid point inside the ball rounds to itself, and rounding
is monotone, so ``g`` is then the only grid point the ball can hold.

Supported grids (see :func:`parse_grid`):

========================  ==================================================
``rational:Q``            rationals with denominator at most ``Q``
``float16``               IEEE binary16 values
``bfloat16``              bfloat16 values (8 exponent bits, 8 significand bits)
``float32``, ``float64``  IEEE binary32 / binary64 values
``dyadic:k``              multiples of ``2**-k``
========================  ==================================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fractions import Fraction

from flint import fmpz

from .errors import InvalidArgument, InvalidNumber, OracleInconsistent, PrecisionInsufficient
from .numbers import approx, floor_log2, to_fraction

__all__ = [
    "parse_w_scale",
    "Grid",
    "RationalGrid",
    "FloatGrid",
    "DyadicGrid",
    "parse_grid",
    "certifiable_grids",
    "FLOAT16",
    "BFLOAT16",
    "FLOAT32",
    "FLOAT64",
    "require_identified",
]


class Grid:
    """Base class: a discrete set of reals with a monotone rounding map."""

    name: str

    def round(self, x: Fraction) -> Fraction | None:
        """Return the grid point nearest ``x``, or ``None`` outside the grid's range."""
        raise NotImplementedError

    def contains(self, x: Fraction) -> bool:
        """Whether ``x`` is a grid point."""
        return self.round(x) == x

    def identify(self, lo: Fraction, hi: Fraction, *, what: str = "value") -> Fraction | None:
        """Return the unique grid point in ``[lo, hi]``, or ``None`` if the ball is too wide.

        Raises
        ------
        OracleInconsistent
            If the ball provably holds no grid point: the value is not on this grid.

        Examples
        --------
        >>> g = parse_grid("rational:10")
        >>> g.identify(Fraction(332, 1000), Fraction(334, 1000))
        Fraction(1, 3)
        >>> g.identify(Fraction(0), Fraction(1, 2)) is None
        True
        """
        a, b = self.round(lo), self.round(hi)
        if a is not None and a == b:
            if lo <= a <= hi:
                return a
            raise OracleInconsistent(
                f"{what}: the ball [{approx(lo, 17)}, {approx(hi, 17)}] holds no point of "
                f"grid {self.name}; the value is not on the declared grid"
            )
        if a is None and b is None and (lo > 0 or hi < 0) and lo * hi > 0:
            raise OracleInconsistent(
                f"{what}: the ball [{approx(lo, 6)}, {approx(hi, 6)}] lies outside the range of "
                f"grid {self.name}"
            )
        return None

    def __str__(self) -> str:
        return self.name


#: The finest grid accepted: spacing down to ``2**-MAX_GRID_BITS`` (dyadic) and denominators
#: below ``2**MAX_GRID_BITS`` (rational).  Beyond it no certified run could finish.
MAX_GRID_BITS = 1 << 13


@dataclass(frozen=True)
class RationalGrid(Grid):
    """Rationals with denominator at most ``max_den``; distinct points are ≥ 1/Q² apart."""

    max_den: int
    name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.max_den, int) or isinstance(self.max_den, bool) or self.max_den < 1:
            raise InvalidArgument(f"rational grid: expected a denominator bound Q >= 1, got {self.max_den!r}")
        if self.max_den.bit_length() > MAX_GRID_BITS:
            raise InvalidArgument(
                f"rational grid: the denominator bound has {self.max_den.bit_length()} bits, more than "
                f"the limit of {MAX_GRID_BITS} (MAX_GRID_BITS)"
            )
        object.__setattr__(self, "name", f"rational:{fmpz(self.max_den)}")  # str(int) stops at 4300 digits

    def round(self, x: Fraction) -> Fraction:
        return Fraction(x).limit_denominator(self.max_den)


@dataclass(frozen=True)
class DyadicGrid(Grid):
    """Multiples of ``2**-bits``."""

    bits: int
    name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if not isinstance(self.bits, int) or isinstance(self.bits, bool) or self.bits < 0:
            raise InvalidArgument(f"dyadic grid: expected bits >= 0, got {self.bits!r}")
        if self.bits > MAX_GRID_BITS:
            raise InvalidArgument(f"dyadic grid: {self.bits} bits is more than the limit of {MAX_GRID_BITS} (MAX_GRID_BITS)")
        object.__setattr__(self, "name", f"dyadic:{self.bits}")

    def round(self, x: Fraction) -> Fraction:
        scale = 1 << self.bits
        return Fraction(round(x * scale), scale)


@dataclass(frozen=True)
class FloatGrid(Grid):
    """Binary floating-point values with ``precision`` significand bits (implicit bit included).

    ``emin`` is the exponent of the smallest normal number and ``emax`` that of the
    largest finite one; subnormals are included.  Rounding is to nearest, ties to even.
    """

    name: str
    precision: int
    emin: int
    emax: int

    @property
    def max_value(self) -> Fraction:
        return (2 - Fraction(1, 2 ** (self.precision - 1))) * Fraction(2) ** self.emax

    def ulp(self, x: Fraction) -> Fraction:
        """Spacing of the grid at ``x`` (the distance to the next point away from zero)."""
        e = self.emin if x == 0 else max(self.emin, floor_log2(abs(x)))
        return Fraction(2) ** (e - self.precision + 1)

    def round(self, x: Fraction) -> Fraction | None:
        if x == 0:
            return Fraction(0)
        u = self.ulp(x)
        g = Fraction(round(x / u)) * u  # round() on Fraction: ties to even
        if abs(g) > self.max_value:
            return None
        return g


FLOAT16 = FloatGrid("float16", 11, -14, 15)
BFLOAT16 = FloatGrid("bfloat16", 8, -126, 127)
FLOAT32 = FloatGrid("float32", 24, -126, 127)
FLOAT64 = FloatGrid("float64", 53, -1022, 1023)
_FLOATS = {g.name: g for g in (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)}


def parse_w_scale(value) -> Fraction:
    """The factor ``s`` of a grid for ``W/s``: an exact positive number, or ``"1/sqrt(r)"``, the float64
    value of ``1/√r`` (the factor a float64 attention module multiplies its scores by).

    >>> parse_w_scale("1/sqrt(16)"), parse_w_scale("1/4")
    (Fraction(1, 4), Fraction(1, 4))
    >>> parse_w_scale("1/sqrt(32)") == Fraction(1 / math.sqrt(32))
    True
    >>> parse_w_scale("-1")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidArgument: w_scale: expected a positive number or '1/sqrt(r)', got '-1'
    """
    if isinstance(value, str):
        m = re.fullmatch(r"\s*1\s*/\s*sqrt\(\s*([1-9][0-9]{0,8})\s*\)\s*", value)
        if m:
            return Fraction(1 / math.sqrt(int(m.group(1))))
    try:
        s = to_fraction(value, name="w_scale")
    except InvalidNumber:
        s = None
    if s is None or s <= 0:
        raise InvalidArgument(f"w_scale: expected a positive number or '1/sqrt(r)', got {value!r}")
    return s


def parse_grid(spec: str | Grid | None) -> Grid | None:
    """Parse a grid specification.

    Parameters
    ----------
    spec : str, Grid or None
        ``"rational:Q"``, ``"dyadic:k"``, ``"float16"``, ``"bfloat16"``, ``"float32"``,
        ``"float64"``; a :class:`Grid` is returned as is, and ``None`` means no grid.

    Examples
    --------
    >>> parse_grid("rational:1000")
    RationalGrid(max_den=1000)
    >>> parse_grid("float32").name
    'float32'
    >>> parse_grid("rational:x")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidArgument: grid: expected 'rational:Q', 'dyadic:k', 'float16', 'bfloat16', 'float32' or 'float64', got 'rational:x'
    """
    if spec is None or isinstance(spec, Grid):
        return spec
    if not isinstance(spec, str):
        raise InvalidArgument(f"grid: expected a string or Grid, got {type(spec).__name__}")
    text = spec.strip().lower()
    if text in _FLOATS:
        return _FLOATS[text]
    kind, _, arg = text.partition(":")
    if kind in ("rational", "dyadic") and arg.isascii() and arg.isdigit():
        if len(arg) > 3000:  # beyond MAX_GRID_BITS whatever the digits; not parsed, not echoed
            raise InvalidArgument(f"grid: the number in {kind}:… has {len(arg)} digits; the limit is 2**{MAX_GRID_BITS}")
        value = int(fmpz(arg))  # fmpz parses any length (int() stops at 4300 digits)
        return RationalGrid(value) if kind == "rational" else DyadicGrid(value)
    raise InvalidArgument(
        "grid: expected 'rational:Q', 'dyadic:k', 'float16', 'bfloat16', 'float32' or "
        f"'float64', got {spec!r}"
    )


def certifiable_grids(width: Fraction, value: Fraction) -> str:
    """Describe which grids a ball of this width around ``value`` can certify.

    Used in :class:`PrecisionInsufficient` messages.

    >>> certifiable_grids(Fraction(1, 10**6), Fraction(1, 2))
    'rational:Q for Q <= 707, dyadic:k for k <= 18, float16, bfloat16'
    """
    if width <= 0:
        return "any grid"
    parts = []
    q = math.isqrt(int(1 / (2 * width)))
    if q >= 1:
        parts.append(f"rational:Q for Q <= {q}")
    k = -floor_log2(width) - 2  # spacing 2^-k at least 4x the width
    if k >= 0:
        parts.append(f"dyadic:k for k <= {k}")
    parts += [g.name for g in _FLOATS.values() if g.ulp(value) / 2 > width]
    return ", ".join(parts) if parts else "none"


def require_identified(grid: Grid, lo: Fraction, hi: Fraction, *, what: str) -> Fraction:
    """Identify on ``grid`` or raise :class:`PrecisionInsufficient` naming certifiable grids."""
    g = grid.identify(lo, hi, what=what)
    if g is None:
        mid = (lo + hi) / 2
        raise PrecisionInsufficient(
            f"{what}: the oracle's answers pin it only to ±{approx((hi - lo) / 2, 3)} around "
            f"{approx(mid, 17)}, too wide to single out a point of grid {grid.name}; "
            f"grids certifiable at this accuracy: {certifiable_grids(hi - lo, mid)}"
        )
    return g
