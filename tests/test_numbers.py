"""Tests for exact.numbers: exact parsing, formatting, ball endpoints, simplest rationals."""

import decimal
import numbers
import os
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy
from flint import arb, ctx, fmpq, fmpz
from hypothesis import given, settings
from hypothesis import strategies as st

from exact.errors import ExactAttentionError, InvalidNumber
from exact.numbers import (
    MAX_DECIMAL_EXPONENT,
    MAX_DIGITS,
    approx,
    ball_interval,
    floor_log2,
    format_rational,
    parse_rational,
    simplest_between,
    simplest_in_ball,
    to_fmpq,
    to_fraction,
)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True)


def mpf_exact(x) -> Fraction:
    """The exact value of an mpmath mpf, read off its raw (sign, man, exp, bc) tuple."""
    sign, man, exp, _ = x._mpf_
    value = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -value if sign else value


# -- accepted inputs -------------------------------------------------------------------


def test_invalid_number_is_a_value_error():
    assert issubclass(InvalidNumber, ValueError)
    assert issubclass(InvalidNumber, ExactAttentionError)


@pytest.mark.parametrize(
    "x, expected",
    [
        (0, Fraction(0)),
        (-7, Fraction(-7)),
        (10**50 + 1, Fraction(10**50 + 1)),
        ("-3", Fraction(-3)),
        ("2/6", Fraction(1, 3)),
        (" -4/6 ", Fraction(-2, 3)),
        ("0.1", Fraction(1, 10)),
        ("1e-3", Fraction(1, 1000)),
        ("-1.25E2", Fraction(-125)),
        ("0.000000000000000000000000000001", Fraction(1, 10**30)),
        (Fraction(5, 7), Fraction(5, 7)),
        (decimal.Decimal("0.1"), Fraction(1, 10)),
    ],
)
def test_to_fraction_exact_values(x, expected):
    got = to_fraction(x)
    assert isinstance(got, Fraction)
    assert got == expected


def test_decimal_string_is_not_the_float():
    assert to_fraction("0.1") == Fraction(1, 10)
    assert to_fraction("0.1") != to_fraction(0.1)


def test_float_is_its_exact_dyadic_value():
    assert to_fraction(0.1) == Fraction(3602879701896397, 36028797018963968)
    assert to_fraction(0.1) != Fraction(1, 10)
    assert to_fraction(-0.5) == Fraction(-1, 2)
    assert to_fraction(2.0**-1074) == Fraction(1, 2**1074)  # smallest subnormal
    assert to_fraction(1.7976931348623157e308) == Fraction(2**1024 - 2**971)
    assert to_fraction(-0.0) == 0


def test_numpy_scalars():
    assert to_fraction(np.float16(0.1)) == Fraction(819, 8192)  # 1638·2^-14
    assert to_fraction(np.float32(0.1)) == Fraction(13421773, 2**27)
    assert to_fraction(np.float32(-1.5)) == Fraction(-3, 2)
    assert to_fraction(np.float64(0.1)) == Fraction(0.1)
    assert to_fraction(np.int64(-(2**62))) == Fraction(-(2**62))
    assert to_fraction(np.uint64(2**64 - 1)) == Fraction(2**64 - 1)
    assert to_fraction(np.int8(-3)) == -3


def test_numpy_float32_matches_bit_pattern():
    rng = np.random.default_rng(0)
    for x in rng.normal(size=50).astype(np.float32):
        bits = int(x.view(np.uint32))
        sign = -1 if bits >> 31 else 1
        e = (bits >> 23) & 0xFF
        m = bits & 0x7FFFFF
        assert 0 < e < 255
        expected = sign * Fraction(m | (1 << 23)) * Fraction(2) ** (e - 127 - 23)
        assert to_fraction(x) == expected


def test_mpmath_positive_mpf_exact_binary_value():
    with mpmath.workdps(50):
        x = mpmath.mpf(1) / 3
    got = to_fraction(x)
    assert got == mpf_exact(x)
    assert got != Fraction(1, 3)
    assert abs(got - Fraction(1, 3)) < Fraction(1, 10**49)
    assert to_fraction(mpmath.mpf("0.1")) == Fraction(0.1)
    assert to_fraction(mpmath.mpf(0)) == 0
    assert to_fraction(mpmath.ldexp(3, -2000)) == Fraction(3, 2**2000)


def test_mpmath_negative_mpf_keeps_its_sign():
    assert to_fraction(mpmath.mpf(-1.5)) == Fraction(-3, 2)
    with mpmath.workdps(40):
        x = -mpmath.mpf(2) / 7
    assert to_fraction(x) == mpf_exact(x) < 0
    assert abs(to_fraction(x) + Fraction(2, 7)) < Fraction(1, 10**39)


def test_sympy_numbers():
    assert to_fraction(sympy.Rational(-7, 6)) == Fraction(-7, 6)
    assert to_fraction(sympy.Integer(12)) == 12
    assert to_fraction(sympy.Float(0.1)) == Fraction(0.1)
    assert to_fraction(sympy.Float("0.75", 30)) == Fraction(3, 4)


def raw_mpf_exact(mpf_tuple) -> Fraction:
    sign, man, exp, _ = mpf_tuple
    value = Fraction(int(man)) * Fraction(2) ** int(exp)
    return -value if sign else value


def test_sympy_high_precision_float_is_exact():
    f = sympy.Float("0.1", 30)  # ~100 significant bits
    assert to_fraction(f) == raw_mpf_exact(f._mpf_)
    assert abs(to_fraction(f) - Fraction(1, 10)) < Fraction(1, 10**29)


def test_sympy_negative_float_keeps_its_sign():
    assert to_fraction(sympy.Float("-1.5")) == Fraction(-3, 2)


def test_flint_numbers():
    assert to_fraction(fmpq(-7, 6)) == Fraction(-7, 6)
    assert to_fraction(fmpz(10**30)) == Fraction(10**30)
    assert to_fmpq(Fraction(-7, 6)) == fmpq(-7, 6)


# -- rejected inputs -------------------------------------------------------------------


class _Thing:
    pass


@pytest.mark.parametrize(
    "x, detail",
    [
        (float("nan"), "got nan"),
        (float("inf"), "got inf"),
        (float("-inf"), "got -inf"),
        (np.float64("nan"), "got nan"),
        (np.float32("inf"), "got inf"),
        (np.float16("-inf"), "got -inf"),
        (mpmath.mpf("nan"), "got nan"),
        (mpmath.mpf("inf"), "got \\+?inf"),
        (mpmath.mpf("-inf"), "got -inf"),
        (decimal.Decimal("NaN"), "got NaN"),
        (decimal.Decimal("sNaN"), "got sNaN"),
        (decimal.Decimal("-Infinity"), "got -Infinity"),
        (True, "boolean True"),
        (False, "boolean False"),
        (np.bool_(True), "got bool"),
        (1 + 2j, "got complex"),
        (np.complex128(1), "got complex128"),
        (mpmath.mpc(1, 2), "got mpc"),
        (None, "got NoneType None"),
        (_Thing(), "got _Thing"),
        ([1], "got list"),
        (np.array([1.0, 2.0]), "expected a scalar, got an array of shape \\(2,\\)"),
        (sympy.sqrt(2), "symbolic expressions are not numbers"),
        (sympy.nan, "symbolic expressions are not numbers"),
        (sympy.oo, "symbolic expressions are not numbers"),
        ("nan", "expected an integer, 'p/q' or decimal string, got 'nan'"),
        ("inf", "got 'inf'"),
        ("1/0", "got '1/0'"),
        ("", "got ''"),
        ("0x10", "got '0x10'"),
        ("1/2/3", "got '1/2/3'"),
        ("2**10", "got '2\\*\\*10'"),
    ],
)
def test_to_fraction_rejects(x, detail):
    with pytest.raises(InvalidNumber, match=r"^W\[0\]\[1\]: .*" + detail) as info:
        to_fraction(x, name="W[0][1]")
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "globals().__setitem__('PWNED', 1)",
        "exec('import os')",
        "1 if __import__('os') else 0",
        "lambda: 0",
    ],
)
def test_code_is_never_evaluated(text, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "system", lambda *a: calls.append(a) or 0)
    with pytest.raises(InvalidNumber, match=r"^v\[3\]: expected an integer, 'p/q' or decimal string, got ") as info:
        to_fraction(text, name="v[3]")
    assert isinstance(info.value, ValueError)
    assert text in str(info.value)
    assert calls == []
    assert "PWNED" not in globals()


def test_parse_rational_rejects_non_strings():
    with pytest.raises(InvalidNumber, match=r"^x: expected a string, got int$"):
        parse_rational(5, name="x")


# -- formatting ------------------------------------------------------------------------


def test_format_rational_forms():
    assert format_rational(Fraction(-3, 4)) == "-3/4"
    assert format_rational(Fraction(5)) == "5"
    assert format_rational(Fraction(0)) == "0"
    assert format_rational(Fraction(-10, 4)) == "-5/2"
    # Beyond Python's 4300-digit int-to-str limit, in either part: still exact, by flint.
    big = 2**20000 + 1
    assert format_rational(Fraction(-big)) == "-" + str(fmpz(big))
    assert format_rational(Fraction(big, 3)) == f"{fmpz(big)}/3"
    assert format_rational(Fraction(-1, big)) == f"-1/{fmpz(big)}"


def test_the_simplest_rational_of_a_point_is_the_point():
    for q in [Fraction(7, 22), Fraction(-355, 113), Fraction(0), Fraction(5), Fraction(1, 2**70 + 1)]:
        assert simplest_between(q, q) == q
        near = Fraction(1, 4 * q.denominator**2 * 10**6)  # well under 1/(2q²): q is still the simplest
        assert simplest_between(q, q + near) == q == simplest_between(q - near, q)


@SETTINGS
@given(st.fractions())
def test_format_parse_round_trip(q):
    text = format_rational(q)
    assert parse_rational(text) == q
    assert to_fraction(text) == q
    assert "." not in text and "e" not in text


@SETTINGS
@given(st.integers(min_value=-(10**40), max_value=10**40), st.integers(min_value=-60, max_value=60))
def test_decimal_strings_are_exact(m, e):
    text = f"{m}e{e}"
    assert to_fraction(text) == Fraction(m) * Fraction(10) ** e


# -- simplest_between --------------------------------------------------------------------


def test_simplest_between_examples():
    assert simplest_between(Fraction(333, 1000), Fraction(334, 1000)) == Fraction(1, 3)
    assert simplest_between(Fraction(7, 2), Fraction(7, 2)) == Fraction(7, 2)
    assert simplest_between(Fraction(-1, 10), Fraction(1, 5)) == 0
    assert simplest_between(Fraction(-334, 1000), Fraction(-333, 1000)) == Fraction(-1, 3)
    assert simplest_between(Fraction(5, 2), Fraction(7, 2)) == 3
    assert simplest_between(Fraction(-7, 2), Fraction(-5, 2)) == -3


def test_simplest_between_empty_interval():
    with pytest.raises(ValueError, match=r"^empty interval \[1, 0\]$"):
        simplest_between(Fraction(1), Fraction(0))


def test_simplest_between_extreme_widths():
    tiny = Fraction(1, 10**400)
    assert simplest_between(Fraction(1, 3) - tiny, Fraction(1, 3) + tiny) == Fraction(1, 3)
    assert simplest_between(Fraction(10**400), Fraction(3 * 10**400)) == 10**400
    assert simplest_between(Fraction(-3 * 10**400), Fraction(10**400)) == 0


@st.composite
def small_rational_in_tight_interval(draw):
    q = draw(st.integers(min_value=1, max_value=2000))
    p = draw(st.integers(min_value=-50 * q, max_value=50 * q))
    # width < 1/(2 q^2), p/q at a random position inside
    u = Fraction(draw(st.integers(min_value=0, max_value=10**6 - 1)), 10**6)
    t = Fraction(draw(st.integers(min_value=0, max_value=10**6)), 10**6)
    width = u / (2 * q * q)
    lo = Fraction(p, q) - t * width
    return Fraction(p, q), lo, lo + width


@SETTINGS
@given(small_rational_in_tight_interval())
def test_simplest_between_recovers_rational_from_tight_interval(case):
    x, lo, hi = case
    assert lo <= x <= hi
    assert simplest_between(lo, hi) == x


@SETTINGS
@given(st.fractions(), st.fractions(min_value=0, max_value=10))
def test_simplest_between_result_within_widened_interval(lo, width):
    hi = lo + width
    r = simplest_between(lo, hi)
    if width == 0:
        assert r == lo
    else:
        assert lo - width / 16 < r < hi + width / 16


@SETTINGS
@given(st.fractions(), st.fractions(min_value=0, max_value=10))
def test_simplest_between_no_simpler_rational_in_interval(lo, width):
    hi = lo + width
    r = simplest_between(lo, hi)
    # the answer is the simplest rational of a superset of [lo, hi]: no rational with a smaller
    # denominator can lie in [lo, hi]
    for s in range(1, min(r.denominator, 300)):
        # the integers p with lo <= p/s <= hi are ceil(lo*s) .. floor(hi*s)
        first = -((-lo.numerator * s) // lo.denominator)
        assert Fraction(first, s) > hi


@SETTINGS
@given(st.fractions(max_value=0), st.fractions(min_value=0))
def test_simplest_between_straddling_zero_is_zero(lo, hi):
    assert simplest_between(lo, hi) == 0


@SETTINGS
@given(st.fractions(min_value=0), st.fractions(min_value=0, max_value=5))
def test_simplest_between_is_odd(lo, width):
    hi = lo + width
    assert simplest_between(-hi, -lo) == -simplest_between(lo, hi)


# -- ball_interval ---------------------------------------------------------------------


@pytest.mark.parametrize("prec", [30, 64, 200, 1000])
def test_ball_interval_contains_one_third(prec):
    with ctx.workprec(prec):
        b = arb(1) / 3
    lo, hi = ball_interval(b)
    assert lo < Fraction(1, 3) < hi
    assert hi - lo < Fraction(1, 2 ** (prec - 4))


@pytest.mark.parametrize("prec", [53, 128, 512])
def test_ball_interval_contains_pi_and_e(prec):
    with ctx.workprec(prec):
        balls = {"pi": arb.pi(), "e": arb(1).exp(), "-sqrt2": -arb(2).sqrt()}
    with ctx.workprec(prec + 200):
        fine = {"pi": arb.pi(), "e": arb(1).exp(), "-sqrt2": -arb(2).sqrt()}
        for key, b in balls.items():
            lo, hi = ball_interval(b)
            assert arb(to_fmpq(lo)) < fine[key] < arb(to_fmpq(hi)), key


def test_ball_interval_exact_endpoints():
    assert ball_interval(arb(3)) == (Fraction(3), Fraction(3))
    assert ball_interval(arb(0)) == (Fraction(0), Fraction(0))
    assert ball_interval(arb(-1.5)) == (Fraction(-3, 2), Fraction(-3, 2))
    lo, hi = ball_interval(arb(fmpq(3, 2), fmpq(1, 4)))
    assert (lo + hi) / 2 == Fraction(3, 2)  # the midpoint is exact
    assert lo <= Fraction(5, 4) and hi >= Fraction(7, 4)  # the radius is rounded up, never down
    assert hi - lo - Fraction(1, 2) < Fraction(1, 2**28)
    b = arb(-(2.0**-300), 2.0**-310)
    lo, hi = ball_interval(b)
    with ctx.workprec(4000):  # exact at this precision: the endpoints are short dyadics
        assert arb(to_fmpq(lo)) == b.mid() - b.rad()
        assert arb(to_fmpq(hi)) == b.mid() + b.rad()
    assert lo < Fraction(-1, 2**300) < hi and hi - lo >= Fraction(2, 2**310)


def test_ball_interval_rejects_non_finite():
    with pytest.raises(InvalidNumber, match=r"^expected a finite ball, got "):
        ball_interval(arb("nan"))
    with pytest.raises(InvalidNumber, match=r"^expected a finite ball"):
        ball_interval(arb(0, "inf"))


# -- gaps found by mutation testing (python tests/mutation.py exact/numbers.py) --------------


def test_limits_are_as_documented():
    assert MAX_DECIMAL_EXPONENT == 10_000 and MAX_DIGITS == 4000


def test_decimal_exponent_limit_is_inclusive():
    assert to_fraction(decimal.Decimal("1e10000")) == 10**10000
    assert to_fraction(decimal.Decimal("-3e-10000")) == Fraction(-3, 10**10000)
    for text in ("1e10001", "1e-10001"):
        with pytest.raises(InvalidNumber, match=r"^W: the decimal exponent of 1E[-+]10001 exceeds ±10000$"):
            to_fraction(decimal.Decimal(text), name="W")


def test_decimal_string_exponent_limit_is_inclusive():
    assert parse_rational("1e10000") == 10**10000
    assert parse_rational("1e-10000") == Fraction(1, 10**10000)
    assert parse_rational("2E+00010000") == 2 * 10**10000  # leading zeros of the exponent do not count
    assert parse_rational("5e0") == 5 and parse_rational("5.0e0") == 5 and parse_rational("50e-1") == 5
    msg = r"^W: the decimal exponent exceeds ±10000 \(MAX_DECIMAL_EXPONENT\); write such a number as 'p/q'$"
    for text in ("1e10001", "1e-10001", "1e+000010001", "1e" + "9" * 30):
        with pytest.raises(InvalidNumber, match=msg):
            parse_rational(text, name="W")


def test_digit_limit_is_inclusive_and_names_the_part():
    assert parse_rational("7" * MAX_DIGITS) == int("7" * MAX_DIGITS)
    assert parse_rational("1/" + "3" * MAX_DIGITS) == Fraction(1, int("3" * MAX_DIGITS))
    cases = [
        ("7" * 4001, "the number"),
        ("-" + "7" * 4001 + "/3", "the numerator"),
        ("3/" + "7" * 4001, "the denominator"),
        ("7" * 4000 + ".5", "the mantissa"),
        ("7" * 4001 + "e1", "the mantissa"),
    ]
    for text, what in cases:
        with pytest.raises(InvalidNumber, match=rf"^W: {what} has 4001 digits, more than the limit of 4000 \(MAX_DIGITS\); its digits are not shown$"):
            parse_rational(text, name="W")


def test_parse_rational_hints():
    with pytest.raises(InvalidNumber, match=r"^W: expected an integer, 'p/q' or decimal string, got '1_000' \(digit separators '_' are not accepted\)$"):
        parse_rational("1_000", name="W")
    with pytest.raises(InvalidNumber, match=r", got 'x_1'$"):  # an underscore in what is not a number anyway
        parse_rational("x_1", name="W")


def test_zero_dimensional_numpy_arrays_are_their_element():
    assert to_fraction(np.array(0.1)) == Fraction(0.1)
    assert to_fraction(np.array(-3, dtype=np.int64)) == -3
    assert to_fraction(np.array(np.float32(0.1))) == Fraction(13421773, 2**27)


class _TorchScalar:
    """A stand-in for a one-element ``torch.Tensor`` (torch is an optional dependency)."""

    __module__ = "torch"

    def __init__(self, value, numel=1):
        self._value, self._numel = value, numel

    def item(self):
        return self._value

    def numel(self):
        return self._numel


def test_torch_like_tensors():
    assert to_fraction(_TorchScalar(0.1)) == Fraction(0.1)
    assert to_fraction(_TorchScalar(-7)) == -7
    with pytest.raises(InvalidNumber, match=r"^W: expected a finite real number \(int, Fraction, 'p/q' string, float, \.\.\.\), got _TorchScalar "):
        to_fraction(_TorchScalar(0.5, numel=2), name="W")
    with pytest.raises(InvalidNumber, match=r"^W: expected a finite real number, got nan$"):
        to_fraction(_TorchScalar(float("nan")), name="W")


class _ForeignReal:
    """A real type from another library that states its exact value (as gmpy2's mpq and mpfr do)."""

    def __init__(self, ratio, text="x"):
        self._ratio, self._text = ratio, text

    def as_integer_ratio(self):
        if self._ratio is None:
            raise OverflowError("cannot convert infinity to integer ratio")
        return self._ratio

    def __str__(self):
        return self._text


numbers.Real.register(_ForeignReal)


class _RatioButNotReal:
    """Offers ``as_integer_ratio`` without being a real number type: not taken."""

    def as_integer_ratio(self):
        return (1, 2)


def test_foreign_real_types():
    assert to_fraction(_ForeignReal((-3, 4))) == Fraction(-3, 4)
    assert to_fraction(_ForeignReal((2**80, 3))) == Fraction(2**80, 3)
    text = "inf" + "0123456789" * 10
    with pytest.raises(InvalidNumber, match=rf"^W: expected a finite real number, got {text[:60]}$"):
        to_fraction(_ForeignReal(None, text), name="W")
    with pytest.raises(InvalidNumber, match=r"^W: expected a finite real number \(int, .*got _RatioButNotReal "):
        to_fraction(_RatioButNotReal(), name="W")
    for bad in [(1.5, 2), (1, 2.0), (True, 1), (1, True), (1, 0), (3, -4)]:  # each part an int, q > 0
        with pytest.raises(InvalidNumber, match=r"^W: _ForeignReal.as_integer_ratio\(\) returned .*, not a pair of integers"):
            to_fraction(_ForeignReal(bad), name="W")


class _Repr:
    def __init__(self, text):
        self._text = text

    def __repr__(self):
        return self._text


def test_rejected_values_are_quoted_up_to_60_characters():
    head = "W: expected a finite real number (int, Fraction, 'p/q' string, float, ...), got _Repr "
    for n in (59, 60):
        with pytest.raises(InvalidNumber) as info:
            to_fraction(_Repr("r" * n), name="W")
        assert str(info.value) == head + "r" * n
    with pytest.raises(InvalidNumber) as info:
        to_fraction(_Repr("0123456789" * 6 + "X"), name="W")
    assert str(info.value) == head + ("0123456789" * 6)[:57] + "..."


def test_binary_values_with_positive_exponents():
    assert to_fraction(mpmath.mpf(6)) == 6  # mpmath stores 3·2^1
    assert to_fraction(mpmath.mpf(2) ** 100) == 2**100
    assert to_fraction(-mpmath.mpf(3) * mpmath.mpf(2) ** 70) == -3 * 2**70
    assert to_fraction(sympy.Float(2**70)) == 2**70
    assert to_fraction(sympy.Float(-12)) == -12
    assert ball_interval(arb(6)) == (6, 6)
    assert ball_interval(arb(2**100)) == (2**100, 2**100)
    lo, hi = ball_interval(arb(0, 2**70))  # the radius is rounded up to a 30-bit magnitude
    assert lo == -hi and hi.denominator == 1 and 2**70 <= hi < 2**70 + 2**42


def test_sympy_non_numbers_are_refused_as_invalid_numbers():
    for x in (sympy.Matrix([[1]]), sympy.Symbol("x"), sympy.zoo):
        with pytest.raises(InvalidNumber, match=r"^W: expected a sympy Rational or Float, got the expression .*symbolic expressions are not numbers"):
            to_fraction(x, name="W")


def test_floor_log2_examples():
    assert floor_log2(Fraction(5, 3)) == 0  # n and d differ by one bit, n/d < 2: the audit's gap
    assert floor_log2(Fraction(3, 5)) == -1
    assert floor_log2(Fraction(7, 3)) == 1
    assert floor_log2(Fraction(2)) == 1 and floor_log2(Fraction(1)) == 0 and floor_log2(Fraction(1, 2)) == -1
    assert floor_log2(Fraction(2**100 - 1)) == 99 and floor_log2(Fraction(2**100)) == 100
    assert floor_log2(Fraction(1, 2**100 - 1)) == -100 and floor_log2(Fraction(1, 2**100)) == -100
    assert floor_log2(Fraction(2**100 + 1, 2**100)) == 0 and floor_log2(Fraction(2**100 - 1, 2**100)) == -1


@SETTINGS
@given(st.integers(min_value=1, max_value=2**200), st.integers(min_value=1, max_value=2**200))
def test_floor_log2_brackets_the_value(n, d):
    k = floor_log2(Fraction(n, d))
    assert Fraction(2) ** k <= Fraction(n, d) < Fraction(2) ** (k + 1)


def test_simplest_between_of_a_point_is_the_point():
    for x in (Fraction(13, 97), Fraction(-13, 97), Fraction(1, 7), Fraction(10**30 + 1, 10**30), Fraction(0)):
        assert simplest_between(x, x) == x


@SETTINGS
@given(st.fractions())
def test_simplest_between_of_any_point_is_the_point(x):
    assert simplest_between(x, x) == x


def test_simplest_between_widens_to_the_dyadic_grid():
    # width 20: the endpoints are rounded outward to integers (the grid 2^-s <= width/16), so
    # [3/5, 103/5] is searched as [0, 21], which holds 0 -- a candidate just outside [lo, hi]
    assert simplest_between(Fraction(3, 5), Fraction(103, 5)) == 0
    assert simplest_between(Fraction(-103, 5), Fraction(-3, 5)) == 0
    # width 1/5: grid 1/128, [0.6, 0.8] is searched as [76/128, 103/128], which holds 3/5 exactly
    assert simplest_between(Fraction(3, 5), Fraction(4, 5)) == Fraction(2, 3)


def test_simplest_in_ball_agrees_with_simplest_between():
    balls = [
        arb(0.375),  # exact: radius 0, positive-exponent arithmetic on the midpoint only
        arb(fmpq(1, 2), fmpq(1, 2**100)),  # radius far below the midpoint's exponent
        arb(fmpq(1, 3)),
        arb(-(2**40)),
        arb(fmpq(-22, 7), fmpq(1, 1000)),
        arb(0, 2**70),
        arb(fmpq(1, 3), 1),  # radius above the midpoint's exponent: [-2/3, 4/3] holds 0
    ]
    with ctx.workprec(200):
        balls.append(arb(1) / 7)
    for b in balls:
        expected = simplest_between(*ball_interval(b))
        got = simplest_in_ball(b)
        assert Fraction(int(got.p), int(got.q)) == expected, b
    assert simplest_in_ball(arb(0.375)) == fmpq(3, 8)
    assert simplest_in_ball(arb(fmpq(1, 2), fmpq(1, 2**100))) == fmpq(1, 2)
    assert simplest_in_ball(arb(fmpq(1, 3), 1)) == 0


def test_simplest_in_ball_rejects_non_finite():
    for b in (arb("nan"), arb(0, "inf")):
        with pytest.raises(InvalidNumber, match=r"^expected a finite ball, got "):
            simplest_in_ball(b)


def test_approx_small_and_ordinary_values():
    assert approx(0) == "0" and approx(Fraction(0)) == "0"
    assert approx(1) == "1" and approx(Fraction(-1)) == "-1"
    assert approx(Fraction(1, 3)) == "0.333333" and approx(Fraction(2, 3), 3) == "0.667"
    assert approx("1/3") == "0.333333" and approx(fmpq(-1, 8)) == "-0.125"


def test_approx_beyond_float_range():
    assert approx(Fraction(10**400)) == "1e+400"
    assert approx(Fraction(-(10**400))) == "-1e+400"
    assert approx(Fraction(1, 10**400)) == "1e-400"
    assert approx(Fraction(1, 3 * 10**400)) == "3.33333e-401"  # the estimate of log10 starts too high
    assert approx(Fraction(10**400, 3)) == "3.33333e+399"  # ... and here too low
    assert approx(Fraction(2) ** 100000) == "9.99002e+30102"
    assert approx(Fraction(1, 2**100000)) == "1.001e-30103"
