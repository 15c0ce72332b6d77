"""Exact scalars: parsing, formatting, and reading intervals off ``arb`` balls.

Every number that enters the library as a parameter or a token entry is turned into
a :class:`fractions.Fraction` by :func:`to_fraction`.  Floats are taken as their
*exact* binary value, decimal strings as the decimal they spell (``"0.1"`` is 1/10),
and nothing is ever evaluated as code.

The second half of the module turns a rigorous ball into an exact interval and finds
the simplest rational inside it, the step by which certified mode turns answers into
candidate rationals.
"""

from __future__ import annotations

import decimal
import math
import re
import numbers
from fractions import Fraction

from flint import arb, fmpq, fmpz

from .errors import InvalidArgument, InvalidNumber

__all__ = [
    "to_fraction",
    "to_fmpq",
    "format_rational",
    "parse_rational",
    "ball_interval",
    "simplest_between",
    "simplest_in_ball",
    "floor_log2",
    "approx",
    "coprime_fraction",
    "exact_rational",
]


def to_fraction(x, *, name: str = "value") -> Fraction:
    """Return the exact rational value of ``x``.

    Parameters
    ----------
    x : int, Fraction, str, float, numpy scalar, mpmath ``mpf``, sympy ``Rational``/``Float`` or flint ``fmpq``
        Strings may be integers (``"-3"``), ratios (``"2/7"``) or decimals
        (``"0.1"``, ``"1e-3"``); they are parsed, never evaluated.
        Floats are taken as their exact binary value.
    name : str, keyword-only
        How to name the value in error messages.

    Returns
    -------
    Fraction

    Raises
    ------
    InvalidNumber
        For NaN, infinities, booleans, complex numbers, unparsable text and any
        other type.

    Examples
    --------
    >>> to_fraction("0.1"), to_fraction("2/6"), to_fraction(0.5)
    (Fraction(1, 10), Fraction(1, 3), Fraction(1, 2))
    >>> to_fraction(0.1) == Fraction(3602879701896397, 36028797018963968)
    True
    >>> to_fraction(float("nan"), name="W[0][1]")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidNumber: W[0][1]: expected a finite real number, got nan
    """
    if isinstance(x, bool):
        raise InvalidNumber(f"{name}: expected a finite real number, got the boolean {x!r}")
    if isinstance(x, Fraction):
        return x
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, fmpq):
        return Fraction(int(x.p), int(x.q))
    if isinstance(x, fmpz):
        return Fraction(int(x))
    if isinstance(x, str):
        return parse_rational(x, name=name)
    if isinstance(x, float):
        return _from_float(x, name)
    if isinstance(x, decimal.Decimal):
        if not x.is_finite():
            raise InvalidNumber(f"{name}: expected a finite real number, got {x}")
        if abs(int(x.as_tuple().exponent)) > MAX_DECIMAL_EXPONENT:
            raise InvalidNumber(f"{name}: the decimal exponent of {x} exceeds ±{MAX_DECIMAL_EXPONENT}")
        return Fraction(x)
    module = type(x).__module__.split(".")[0]
    if module == "numpy":
        shape = getattr(x, "shape", None)
        if shape == () and hasattr(x, "ndim") and type(x).__name__ == "ndarray":
            return to_fraction(x[()], name=name)  # a 0-d array: its one element
        if shape not in ((), None):
            raise InvalidNumber(f"{name}: expected a scalar, got an array of shape {x.shape}")
        if isinstance(x, numbers.Integral):
            return Fraction(int(x))
        if isinstance(x, numbers.Real):
            # Every width, longdouble included, at its exact binary value: never via float64.
            return _from_ratio(x, name)
    if module == "mpmath" and hasattr(x, "_mpf_"):
        return _from_mpf(x, name)
    if module == "sympy":
        return _from_sympy(x, name)
    if module == "torch" and hasattr(x, "item") and getattr(x, "numel", lambda: 0)() == 1:
        return to_fraction(x.item(), name=name)
    if isinstance(x, numbers.Real) and hasattr(x, "as_integer_ratio"):
        return _from_ratio(x, name)  # any other real type that states its exact value (gmpy2, ...)
    raise InvalidNumber(
        f"{name}: expected a finite real number (int, Fraction, 'p/q' string, float, ...), "
        f"got {type(x).__name__} {_short_repr(x)}"
    )


def _short_repr(x) -> str:
    try:
        text = repr(x)
    except ValueError:  # an int beyond Python's 4300-digit str limit
        return f"<{type(x).__name__}, too large to print>"
    return text if len(text) <= 60 else text[:57] + "..."


def _from_ratio(x, name: str) -> Fraction:
    """The exact value of a real that offers ``as_integer_ratio`` (numpy floats of any width, ...)."""
    try:
        p, q = x.as_integer_ratio()
    except (OverflowError, ValueError):  # inf, nan
        raise InvalidNumber(f"{name}: expected a finite real number, got {str(x)[:60]}") from None
    except Exception as exc:  # a foreign type whose method misbehaves
        raise InvalidNumber(f"{name}: {type(x).__name__}.as_integer_ratio() failed: {exc}"[:300]) from None
    given = (p, q)
    if all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in given):
        try:
            p, q = int(p), int(q)  # what they are as integers (a foreign Integral may convert oddly)
        except Exception:
            p = None
        if type(p) is int and type(q) is int and q > 0:
            return Fraction(p, q)
    raise InvalidNumber(
        f"{name}: {type(x).__name__}.as_integer_ratio() returned {_short_repr(given)}, "
        "not a pair of integers with a positive denominator"
    )


def _from_float(x: float, name: str) -> Fraction:
    if not math.isfinite(x):
        raise InvalidNumber(f"{name}: expected a finite real number, got {x}")
    return Fraction(x)


def _from_mpf(x, name: str) -> Fraction:
    import mpmath

    if mpmath.isnan(x) or mpmath.isinf(x):
        raise InvalidNumber(f"{name}: expected a finite real number, got {x}")
    return _from_mpf_tuple(x._mpf_)  # an mpc has no _mpf_: to_fraction refuses it with the other types


def _from_mpf_tuple(t) -> Fraction:
    """The exact value of mpmath's raw ``(sign, mantissa, exponent, bits)`` tuple.

    >>> _from_mpf_tuple((1, 3, -2, 2)), _from_mpf_tuple((0, 5, 0, 3)), _from_mpf_tuple((0, 3, 2, 2))
    (Fraction(-3, 4), Fraction(5, 1), Fraction(12, 1))
    """
    sign, man, exp, _ = t
    return _dyadic((-man if sign else man, exp))


def _from_sympy(x, name: str) -> Fraction:
    if getattr(x, "is_Rational", False):
        return Fraction(int(x.p), int(x.q))
    if getattr(x, "is_Float", False):
        if not x.is_finite:
            raise InvalidNumber(f"{name}: expected a finite real number, got {x}")
        return _from_mpf_tuple(x._mpf_)  # the Float's own binary value, at its own precision
    raise InvalidNumber(
        f"{name}: expected a sympy Rational or Float, got the expression {x} "
        "(symbolic expressions are not numbers)"
    )


#: Decimal strings with a larger exponent are refused: ``Fraction("1e999999999")``
#: would build a billion-digit integer and hang.  ``"p/q"`` strings have no such limit.
MAX_DECIMAL_EXPONENT = 10_000

#: The most digits :func:`parse_rational` accepts in a numerator, a denominator or a
#: decimal mantissa (integer and fraction digits together).  Longer numbers are refused
#: with a message that counts their digits but never echoes them (Python's own
#: ``int(str)`` limit is 4300 digits, and quadratic beyond it).
MAX_DIGITS = 4000

# The whole grammar of a number string, ASCII only (``[0-9]``, never ``\d``, which also
# matches "١٢" and "１２"): optional sign, then ``p``, ``p/q`` or a decimal with optional
# fraction and exponent; surrounding ASCII whitespace.  Every repetition is followed by
# a character it cannot match, so a failing match backtracks in linear time.
_WS = "[ \t\n\r\f\v]*"
_NUMBER = re.compile(
    rf"""{_WS}
    (?P<sign>[-+]?)
    (?:
        (?P<int>[0-9]+)
        (?: /(?P<den>[0-9]+)
          | (?:\.(?P<frac>[0-9]*))? (?:[eE](?P<exp>[-+]?[0-9]+))?
        )
      | \.(?P<frac_only>[0-9]+) (?:[eE](?P<exp2>[-+]?[0-9]+))?
    )
    {_WS}""",
    re.VERBOSE,
)


def parse_rational(text: str, *, name: str = "value") -> Fraction:
    """Parse ``"p"``, ``"p/q"`` or a decimal string exactly, without evaluating it.

    The grammar is strict ASCII: an optional sign, then ``p``, ``p/q`` or a decimal
    with optional fraction and exponent (``"-3"``, ``"2/7"``, ``"0.1"``, ``"1e-3"``,
    ``"-1.5E+2"``, ``".5"``, ``"1."``), surrounded by optional ASCII whitespace.
    Nothing else: no ``inf``/``nan``, ``0x10``, ``1_000``, ``2**10``, non-ASCII digits.
    Numerators, denominators and decimal mantissas may have at most
    :data:`MAX_DIGITS` digits, decimal exponents at most ±:data:`MAX_DECIMAL_EXPONENT`.

    Parameters
    ----------
    text : str
        The number.
    name : str, keyword-only
        How to name the value in error messages (a field such as ``"W[0][1]"``).

    Raises
    ------
    InvalidNumber
        For anything outside the grammar, a zero denominator, or a number beyond the
        limits.  The message names ``name``; it quotes at most 60 characters of the text
        and never the digits of an over-long number.

    Examples
    --------
    >>> parse_rational(" -4/6 "), parse_rational("1.25e2"), parse_rational("0.1")
    (Fraction(-2, 3), Fraction(125, 1), Fraction(1, 10))
    >>> parse_rational("__import__('os')")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidNumber: value: expected an integer, 'p/q' or decimal string, got "__import__('os')"
    >>> parse_rational("7" * 5000, name="W[0][0]")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidNumber: W[0][0]: the number has 5000 digits, more than the limit of 4000 (MAX_DIGITS); its digits are not shown
    """
    if not isinstance(text, str):
        raise InvalidNumber(f"{name}: expected a string, got {type(text).__name__}")
    m = _NUMBER.fullmatch(text)
    if m is None:
        hint = ""
        if not text.isascii():
            hint = " (only ASCII digits and signs are accepted)"
        elif "_" in text and _NUMBER.fullmatch(text.replace("_", "")):
            hint = " (digit separators '_' are not accepted)"
        raise InvalidNumber(f"{name}: expected an integer, 'p/q' or decimal string, got {_short_repr(text)}{hint}")
    sign = -1 if m["sign"] == "-" else 1
    if m["den"] is not None:
        _check_digits(m["int"], "numerator", name)
        _check_digits(m["den"], "denominator", name)
        den = int(m["den"])
        if den == 0:
            raise InvalidNumber(f"{name}: expected a nonzero denominator, got {_short_repr(text.strip())}")
        return Fraction(sign * int(m["int"]), den)
    whole = m["int"] or ""
    frac = m["frac"] if m["int"] is not None else m["frac_only"]
    frac = frac or ""
    exp = m["exp"] if m["int"] is not None else m["exp2"]
    _check_digits(whole + frac, "number" if not frac and exp is None else "mantissa", name)
    e = 0
    if exp is not None:
        digits = exp.lstrip("+-").lstrip("0")
        if len(digits) > len(str(MAX_DECIMAL_EXPONENT)) or int(digits or "0") > MAX_DECIMAL_EXPONENT:
            raise InvalidNumber(
                f"{name}: the decimal exponent exceeds ±{MAX_DECIMAL_EXPONENT} (MAX_DECIMAL_EXPONENT); "
                "write such a number as 'p/q'"
            )
        e = int(exp)
    e -= len(frac)
    mantissa = sign * int(whole + frac)
    return Fraction(mantissa * 10 ** max(e, 0), 10 ** max(-e, 0))


def _check_digits(digits: str, what: str, name: str) -> None:
    """Refuse more than :data:`MAX_DIGITS` digits, counting them without echoing them."""
    if len(digits) > MAX_DIGITS:
        the = "the number" if what == "number" else f"the {what}"
        raise InvalidNumber(
            f"{name}: {the} has {len(digits)} digits, more than the limit of {MAX_DIGITS} (MAX_DIGITS); "
            "its digits are not shown"
        )


def format_rational(q: Fraction) -> str:
    """Format a rational as ``"p"`` or ``"p/q"``, the library's JSON form.

    >>> format_rational(Fraction(-3, 4)), format_rational(Fraction(5))
    ('-3/4', '5')
    """
    try:
        p, d = str(q.numerator), str(q.denominator)
    except ValueError:  # beyond Python's int-to-str digit limit (sys.set_int_max_str_digits); flint has none
        p, d = str(fmpz(q.numerator)), str(fmpz(q.denominator))
    return p if d == "1" else f"{p}/{d}"


def to_fmpq(q: Fraction) -> fmpq:
    """Convert a Fraction to flint's ``fmpq`` (the fast internal rational)."""
    return fmpq(q.numerator, q.denominator)


def exact_rational(x, *, name: str = "x") -> fmpq:
    """An exact rational argument (``int``, ``Fraction`` or ``fmpq``) as a plain ``fmpq``; anything else is
    refused (a float's exact value is rarely what was meant: pass ``Fraction(x)`` for that).

    >>> exact_rational(Fraction(1, 3)), exact_rational(2)
    (1/3, 2)
    """
    if isinstance(x, bool) or not isinstance(x, (int, Fraction, fmpq)):
        raise InvalidArgument(f"logistic equality: {name} must be an exact rational (int, Fraction or fmpq), "
                              f"got {type(x).__name__}")
    if isinstance(x, fmpq):
        return x if type(x) is fmpq else fmpq(x.p, x.q)  # (a subclass's own arithmetic is never used)
    return fmpq(x.numerator, x.denominator) if isinstance(x, Fraction) else fmpq(int(x))


def floor_log2(x: Fraction) -> int:
    """``floor(log2(x))`` for a positive rational, exactly (no float over/underflow).

    >>> floor_log2(Fraction(1, 3)), floor_log2(Fraction(8)), floor_log2(Fraction(1, 2**5000))
    (-2, 3, -5000)
    """
    return _floor_log2_ratio(x.numerator, x.denominator)


def _floor_log2_ratio(n: int, d: int) -> int:
    """``floor(log2(n/d))`` for positive integers."""
    e = n.bit_length() - d.bit_length()
    # now 2^(e-1) < n/d < 2^(e+1): compare n/d with 2^e, i.e. n·2^-e with d, on integers
    return e - (n << max(-e, 0) < d << max(e, 0))


def _dyadic(man_exp) -> Fraction:
    """``man·2^exp`` exactly, from a ``(mantissa, exponent)`` pair of integers (Python or flint).

    >>> _dyadic((3, -2)), _dyadic((-5, 0)), _dyadic((3, 2))
    (Fraction(3, 4), Fraction(-5, 1), Fraction(12, 1))
    """
    man, exp = int(man_exp[0]), int(man_exp[1])
    return Fraction(man << max(exp, 0), 1 << max(-exp, 0))


def ball_interval(ball: arb) -> tuple[Fraction, Fraction]:
    """Return the exact endpoints ``(lo, hi)`` of a finite ``arb`` ball.

    Raises
    ------
    InvalidNumber
        If the ball is not finite.

    Examples
    --------
    >>> ball_interval(arb(3))
    (Fraction(3, 1), Fraction(3, 1))
    >>> lo, hi = ball_interval(arb(1) / 3)
    >>> lo < Fraction(1, 3) < hi and hi - lo < Fraction(1, 2**50)
    True
    """
    if not ball.is_finite():
        raise InvalidNumber(f"expected a finite ball, got {ball}")
    mid = _dyadic(ball.mid().man_exp())
    rad = _dyadic(ball.rad().man_exp())
    return mid - rad, mid + rad


def simplest_in_ball(ball: arb) -> fmpq:
    """The simplest rational in a finite ball (widened as in :func:`simplest_between`), as ``fmpq``.

    Works on the ball's integer mantissas directly: the hot path of certified mode.

    >>> simplest_in_ball(arb(fmpq(1, 3)))
    1/3
    """
    if not ball.is_finite():
        raise InvalidNumber(f"expected a finite ball, got {ball}")
    m_, e_ = ball.mid().man_exp()
    r_, f_ = ball.rad().man_exp()
    m, e, r, f = int(m_), int(e_), int(r_), int(f_)
    k = max(0, -e, -f)
    mid, rad = m << (e + k), r << (f + k)
    den = 1 << k
    p, q = _simplest_ints(mid - rad, den, mid + rad, den)
    return fmpq(p, q)


def simplest_between(lo: Fraction, hi: Fraction) -> Fraction:
    """Return the simplest rational in the closed interval ``[lo, hi]``, widened slightly.

    "Simplest" means smallest denominator, then smallest absolute value.  When a
    ball of width below ``1/(2q**2)`` holds ``p/q``, the answer is ``p/q`` itself, which
    is why certified mode converges to the true rational as precision rises.

    To keep the cost independent of the precision of the endpoints, they are first
    rounded *outward* to a dyadic grid finer than a sixteenth of the width, so the
    search runs on ``[lo - δ, hi + δ]`` with ``δ < (hi - lo)/16``.  The answer is a
    candidate: certified mode always confirms it exactly.

    Examples
    --------
    >>> simplest_between(Fraction(333, 1000), Fraction(334, 1000))
    Fraction(1, 3)
    >>> simplest_between(Fraction(-1, 10), Fraction(1, 5))
    Fraction(0, 1)
    >>> simplest_between(Fraction(7, 2), Fraction(7, 2))
    Fraction(7, 2)
    """
    if lo > hi:
        raise InvalidArgument(f"empty interval [{lo}, {hi}]")
    p, q = _simplest_ints(lo.numerator, lo.denominator, hi.numerator, hi.denominator)
    return Fraction(p, q)


def _simplest_ints(a: int, b: int, c: int, e: int) -> tuple[int, int]:
    """Simplest rational in ``[a/b, c/e]`` (``b, e > 0``), after outward rounding, as ``(p, q)``."""
    if c * b == a * e:  # a point: its own simplest rational
        g = math.gcd(a, b)
        return a // g, b // g
    # positive width: round outward to a dyadic grid 16x finer than it
    shift = max(0, 4 - _floor_log2_ratio(c * b - a * e, b * e))
    a, b = (a << shift) // b, 1 << shift  # floor(lo·2^s) / 2^s
    c, e = -((-c << shift) // e), 1 << shift  # ceil(hi·2^s) / 2^s
    if a <= 0 <= c:
        return 0, 1
    if c < 0:
        p, q = _simplest_positive(-c, e, -a, b)
        return -p, q
    return _simplest_positive(a, b, c, e)


def _simplest_positive(a: int, b: int, c: int, e: int) -> tuple[int, int]:
    """Simplest rational in ``[a/b, c/e]`` with ``0 < a/b <= c/e``, as ``(p, q)``.

    Continued fractions on integer pairs: no gcd is ever taken.
    """
    terms = []
    while True:
        t = -(-a // b)  # ceil(a/b)
        if t * e <= c:
            terms.append(t)
            break
        f = t - 1  # floor(a/b), as a/b is not an integer here
        terms.append(f)
        # [a/b, c/e] - f, inverted: [e/(c - f e), b/(a - f b)]
        a, b, c, e = e, c - f * e, b, a - f * b
    p, q = terms[-1], 1
    for t in reversed(terms[:-1]):
        p, q = t * p + q, p
    return p, q


def approx(x, digits: int = 6) -> str:
    """A short decimal rendering of a rational of any size, for messages (never overflows).

    >>> approx(Fraction(1, 3)), approx(Fraction(10**400, 3)), approx(Fraction(-1, 10**400), 3)
    ('0.333333', '3.33333e+399', '-1e-400')
    >>> approx(Fraction(10**5000 - 1))  # rounds up to the next power of ten
    '1e+5000'
    """
    q = x if isinstance(x, Fraction) else to_fraction(x)
    if q == 0:
        return "0"
    if 2.0**-1000 < abs(q) < 2.0**1000:
        return f"{float(q):.{digits}g}"
    e = floor_log2(abs(q))
    k = int(e * 0.30102999566398120)  # an estimate of floor(log10|q|), corrected below
    while abs(q) >= Fraction(10) ** (k + 1):
        k += 1
    while abs(q) < Fraction(10) ** k:
        k -= 1
    text = f"{float(q / Fraction(10) ** k):.{digits}g}"
    if abs(float(text)) >= 10:  # the mantissa rounded up to 10 (9.9999999 -> 10)
        k += 1
        text = f"{float(q / Fraction(10) ** k):.{digits}g}"
    return f"{text}e{k:+d}"


def _make_coprime():
    probe = getattr(Fraction, "_from_coprime_ints", None)
    if probe is not None:  # Python >= 3.12
        return probe
    kwargs: dict = {"_normalize": False}  # Python 3.10 and 3.11
    try:
        Fraction(2, 4, **kwargs)
    except TypeError:  # pragma: no cover - an interpreter without either shortcut
        return Fraction
    return lambda p, q: Fraction(p, q, **kwargs)


_COPRIME = _make_coprime()


def coprime_fraction(p: int, q: int) -> Fraction:
    """``Fraction(p, q)`` for ``p, q`` already coprime with ``q > 0`` (flint's ``fmpq`` always
    is), without the gcd that normalisation would spend.

    >>> coprime_fraction(-3, 4) == Fraction(-3, 4)
    True
    """
    return _COPRIME(p, q)
