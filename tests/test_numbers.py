"""Tests for exact.numbers: exact parsing, formatting, ball endpoints, simplest rationals."""

import decimal
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
    ball_interval,
    format_rational,
    parse_rational,
    simplest_between,
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
