"""Inputs chosen to break the library: each gets a clear error from the hierarchy, never a
traceback from deep inside, an endless run, or a misleading message."""

from __future__ import annotations

import numbers
from fractions import Fraction

import pytest

from exact import (
    CallableOracle,
    ExactOracle,
    InvalidArgument,
    InvalidNumber,
    OracleInconsistent,
    PrecisionInsufficient,
    SingleHead,
    learn_single_head,
)
from exact.grids import MAX_GRID_BITS, DyadicGrid, RationalGrid, parse_grid
from exact.numbers import approx, format_rational, to_fraction

HEAD = SingleHead([[Fraction(1, 2), Fraction(1)], [Fraction(0), Fraction(2)]], [Fraction(1), Fraction(-1)])


def test_a_logit_beyond_the_height_cap_is_named_as_one_of_two_causes():
    # W = 10^-1300 has a numerator/denominator far beyond 2^4096: the certified mode cannot
    # tell it from a non-head, and must say so rather than blame the oracle.
    head = SingleHead([[Fraction(1, 10**1300)]], [Fraction(1)])
    with pytest.raises(PrecisionInsufficient) as info:
        learn_single_head(ExactOracle(head), mode="certified")
    msg = str(info.value)
    assert "either a logit has a larger height" in msg
    assert "or the oracle does not behave like a single softmax head" in msg
    assert "mode='symbolic' decides which" in msg


@pytest.mark.parametrize(
    "q, text",
    [
        (Fraction(10**5000 - 1), "1e+5000"),
        (-Fraction(10**5000 - 1), "-1e+5000"),
        (Fraction(99999995, 10**5007), "1e-4999"),
        (Fraction(12345, 10**5000), "1.2345e-4996"),
    ],
)
def test_approx_never_prints_a_mantissa_of_ten(q, text):
    assert approx(q) == text


def test_a_callable_answering_text_is_inconsistent_not_parsed():
    oracle = CallableOracle(lambda X: "1/2", d=2, accuracy=0)
    with pytest.raises(OracleInconsistent, match=r"answered '1/2' to query #1 .*expected a number, got text \(str\)"):
        learn_single_head(oracle)


def test_a_huge_text_answer_is_not_echoed():
    oracle = CallableOracle(lambda X: "7" * 10_000, d=1, accuracy=0)
    with pytest.raises(OracleInconsistent) as info:
        oracle.query([[1]])
    assert len(str(info.value)) < 300


class _NumbersInExactClothing(ExactOracle):
    """Declares exact=True but answers plain numbers."""

    def query_batch(self, Xs):
        return [Fraction(1, 3) for _ in super().query_batch(Xs)]


class _ShortBatches(ExactOracle):
    def query_batch(self, Xs):
        return super().query_batch(Xs)[:-1]


@pytest.mark.parametrize("mode", ["certified", "symbolic"])
def test_an_exact_oracle_must_answer_exact_answers(mode):
    with pytest.raises(OracleInconsistent, match=r"declares exact=True but answered a Fraction, not an ExactAnswer"):
        learn_single_head(_NumbersInExactClothing(HEAD), mode=mode)


def test_an_oracle_must_answer_every_query_of_a_batch():
    with pytest.raises(OracleInconsistent, match=r"returned \d+ answers to a batch of \d+ queries"):
        learn_single_head(_ShortBatches(HEAD))


class _Ratio:
    def __init__(self, pair):
        self.pair = pair

    def as_integer_ratio(self):
        if isinstance(self.pair, Exception):
            raise self.pair
        return self.pair


numbers.Real.register(_Ratio)


@pytest.mark.parametrize(
    "pair, message",
    [
        ((1, 0), r"returned \(1, 0\), not a pair of integers with a positive denominator"),
        ((1, -2), r"returned \(1, -2\), not a pair"),
        ((0.5, 1), r"returned \(0.5, 1\), not a pair"),
        ((True, 1), r"returned \(True, 1\), not a pair"),
        (RuntimeError("boom"), r"_Ratio.as_integer_ratio\(\) failed: boom"),
    ],
)
def test_a_foreign_real_with_a_broken_ratio_is_refused(pair, message):
    with pytest.raises(InvalidNumber, match=message):
        to_fraction(_Ratio(pair), name="answer")


def test_a_foreign_real_with_a_good_ratio_is_taken_exactly():
    assert to_fraction(_Ratio((-3, 4))) == Fraction(-3, 4)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("dyadic:99999999999", r"dyadic grid: 99999999999 bits is more than the limit of 8192 \(MAX_GRID_BITS\)"),
        ("rational:" + "9" * 5000, r"^grid: the number in rational:… has 5000 digits; the limit is 2\*\*8192$"),
        ("rational:" + "9" * 2500, r"^rational grid: the denominator bound has 8305 bits, more than the limit of 8192"),
    ],
)
def test_grids_beyond_the_limit_are_refused_at_once(spec, message):
    with pytest.raises(InvalidArgument, match=message):
        parse_grid(spec)


def test_the_finest_grids_within_the_limit_are_accepted():
    assert parse_grid(f"dyadic:{MAX_GRID_BITS}") == DyadicGrid(MAX_GRID_BITS)
    q = 2**MAX_GRID_BITS - 1
    assert RationalGrid(q).max_den == q
    assert parse_grid("rational:" + "9" * 2000) == RationalGrid(int("9" * 2000))
    with pytest.raises(InvalidArgument):
        RationalGrid(2**MAX_GRID_BITS)
    with pytest.raises(InvalidArgument):
        DyadicGrid(MAX_GRID_BITS + 1)


def test_numbers_of_any_size_are_formatted():
    # str(int) stops at 4300 digits; the JSON form must not.
    q = Fraction(10**5000, 3)
    text = format_rational(q)
    num, den = text.split("/")
    assert len(num) == 5001 and num == "1" + "0" * 5000 and den == "3"
    assert format_rational(Fraction(-(10**6000))) == "-1" + "0" * 6000
