"""Tests for exact.expfield: exp-polynomials and their ratios, with exact equality."""

import itertools
import json
import math
from fractions import Fraction

import mpmath
import pytest
import sympy
from flint import arb, ctx, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

from exact.errors import InvalidArgument, InvalidFormat, InvalidNumber
from exact.expfield import ExpPoly, ExpRatio, ExpSum, exp_form_from_json
from exact.numbers import ball_interval

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True)


def E(*terms):
    """ExpPoly from (coefficient, exponent) pairs."""
    return ExpPoly(terms)


def as_dict(p: ExpPoly) -> dict:
    return {Fraction(int(q.p), int(q.q)): Fraction(int(c.p), int(c.q)) for q, c in p.terms}


def mp_value(p_terms, dps=50):
    """Independent mpmath value of Σ c·e^q from Fraction pairs."""
    with mpmath.workdps(dps):
        return mpmath.fsum(mpmath.mpf(c.numerator) / c.denominator * mpmath.exp(mpmath.mpf(q.numerator) / q.denominator) for c, q in p_terms)


def contains_within(ball: arb, value_mpf, slack: Fraction) -> bool:
    """Whether the mpmath value lies in the ball widened by ``slack`` (exact rational comparison)."""
    lo, hi = ball_interval(ball)
    sign, man, exp, _ = value_mpf._mpf_ if value_mpf != 0 else (0, 0, 0, 0)
    v = Fraction(int(man)) * Fraction(2) ** int(exp)
    v = -v if sign else v
    return lo - slack <= v <= hi + slack


small_q = st.fractions(min_value=-5, max_value=5, max_denominator=12)
terms_st = st.lists(st.tuples(small_q, small_q), max_size=5)


# -- ExpPoly normal form -------------------------------------------------------------------


def test_merging_and_zero_dropping():
    p = E((1, "1/2"), (2, 0), (-1, "1/2"))
    assert p == E((2, 0))
    assert p.terms == ((fmpq(0), fmpq(2)),)
    assert repr(p) == "ExpPoly([(2, 0)])"
    assert E((1, 1), (2, 1), (Fraction(1, 2), 1)).terms == ((fmpq(1), fmpq(7, 2)),)
    assert E((0, 3)).is_zero()
    assert E((1, 2), (-1, 2)).is_zero()
    assert E().is_zero() and E() == E((0, 0))
    assert not E((1, 0)).is_zero()


def test_terms_sorted_by_exponent_and_inputs_taken_exactly():
    p = E((1, 3), (2, "-1/2"), (3, 0))
    assert [q for q, _ in p.terms] == [fmpq(-1, 2), fmpq(0), fmpq(3)]
    assert E((1, "0.5")) == E((1, Fraction(1, 2))) == E((1, 0.5)) == E(("2/2", "1/2"))
    assert E((1, "0.1")) != E((1, 0.1))  # the float is its binary value, not 1/10
    assert p.max_exponent() == 3 and E().max_exponent() is None


def test_constructor_rejects_bad_numbers():
    with pytest.raises(InvalidNumber, match=r"expected a finite real number, got nan"):
        E((float("nan"), 0))
    with pytest.raises(InvalidNumber, match=r"got \"__import__\('os'\)\""):
        E((1, "__import__('os')"))


# -- arithmetic ---------------------------------------------------------------------------


def dict_add(a, b):
    out = dict(a)
    for q, c in b.items():
        out[q] = out.get(q, 0) + c
    return {q: c for q, c in out.items() if c}


def dict_mul(a, b):
    out = {}
    for q1, c1 in a.items():
        for q2, c2 in b.items():
            out[q1 + q2] = out.get(q1 + q2, 0) + c1 * c2
    return {q: c for q, c in out.items() if c}


@SETTINGS
@given(terms_st, terms_st, small_q)
def test_arithmetic_matches_independent_dict_model(t1, t2, s):
    a, b = ExpPoly(t1), ExpPoly(t2)
    da, db = as_dict(a), as_dict(b)
    assert as_dict(a + b) == dict_add(da, db)
    assert as_dict(a - b) == dict_add(da, {q: -c for q, c in db.items()})
    assert as_dict(a * b) == dict_mul(da, db)
    assert as_dict(a * s) == {q: c * s for q, c in da.items() if c * s}
    assert as_dict(s * a) == as_dict(a * s)
    assert as_dict(-a) == {q: -c for q, c in da.items()}
    assert (a - a).is_zero()
    assert a + b == b + a and a * b == b * a


@SETTINGS
@given(terms_st, terms_st, terms_st)
def test_ring_laws(t1, t2, t3):
    a, b, c = ExpPoly(t1), ExpPoly(t2), ExpPoly(t3)
    assert a * (b + c) == a * b + a * c
    assert (a * b) * c == a * (b * c)
    assert a * ExpPoly.constant(1) == a
    assert hash(a + b) == hash(b + a)


def test_products_of_exponentials():
    assert E((1, 1)) * E((1, -1)) == ExpPoly.constant(1)
    assert E((2, "1/3")) * E((3, "1/6")) == E((6, "1/2"))
    assert (E((1, 1)) + E((1, 0))) * (E((1, 1)) - E((1, 0))) == E((1, 2), (-1, 0))


def test_equality_is_exact():
    assert E((1, 1)) != E((Fraction(1) + Fraction(1, 10**30), 1))
    assert E((1, 1)) != E((1, Fraction(1) + Fraction(1, 10**30)))
    assert E((1, 0), (1, 1)) != E((1, 0))
    assert E((1, 1)) != "e"


def test_shifted():
    p = E((2, 3), (4, 5))
    assert p.shifted(fmpq(3), fmpq(2)) == E((1, 0), (2, 2))


def test_sympy_form():
    p = E((2, "1/3"), (-1, 0))
    assert sympy.simplify(p.sympy() - (2 * sympy.exp(sympy.Rational(1, 3)) - 1)) == 0


# -- ExpRatio equality -------------------------------------------------------------------


def test_ratio_equal_across_representations():
    a = ExpRatio(E((1, 1), (1, 2)), E((1, 1)))
    b = ExpRatio(E((1, 0), (1, 1)), ExpPoly.constant(1))
    assert a == b
    assert ExpRatio(E((1, 3)), E((2, 3))) == ExpRatio.rational("1/2")
    assert ExpRatio.rational(Fraction(3, 4)) == ExpRatio(E((3, 0)), E((4, 0)))


@SETTINGS
@given(terms_st, terms_st, terms_st)
def test_ratio_unchanged_when_num_and_den_scaled_by_same_poly(tn, td, tm):
    num, den, m = ExpPoly(tn), ExpPoly(td), ExpPoly(tm)
    if den.is_zero() or m.is_zero():
        return
    r = ExpRatio(num, den)
    assert ExpRatio(num * m, den * m) == r
    assert r == ExpRatio(num * m, den * m)
    assert ExpRatio(num * Fraction(-3, 7), den * Fraction(-3, 7)) == r


def test_ratio_scaled_by_specific_poly():
    num, den = E((2, "1/3"), (-5, 2)), E((1, 0), (1, "1/3"))
    m = E((3, 0), (-1, "1/2"), (2, -7))
    assert ExpRatio(num * m, den * m) == ExpRatio(num, den)


def test_ratio_inequality_by_tiny_amount():
    tiny = Fraction(1, 10**30)
    num, den = E((2, "1/3"), (-5, 2)), E((1, 0), (1, "1/3"))
    r = ExpRatio(num, den)
    assert r != ExpRatio(E((2 + tiny, "1/3"), (-5, 2)), den)
    assert r != ExpRatio(num, E((1, 0), (1 + tiny, "1/3")))
    assert r != ExpRatio(num, E((1, 0), (1, Fraction(1, 3) + tiny)))
    assert ExpRatio.rational(1) != ExpRatio.rational(1 + tiny)
    # equal values with one representation scaled: not fooled into equality by normalisation
    m = E((1, 0), (1, 1))
    assert ExpRatio(num * m, den * m) != ExpRatio(num * m + E((tiny, 5)), den * m)


def test_ratio_zero_denominator_and_hash():
    with pytest.raises(InvalidArgument, match=r"^den: an exp-ratio needs a nonzero denominator, got the zero exp-polynomial$") as info:
        ExpRatio(E((1, 0)), E())
    assert isinstance(info.value, ValueError)
    with pytest.raises(TypeError):
        hash(ExpRatio.rational(1))


def test_normalized_keeps_value():
    r = ExpRatio(E((2, 5), (1, 7)), E((-4, 5), (3, 6)))
    n = r.normalized()
    assert n == r
    assert n.den.terms[0] == (fmpq(0), fmpq(1))


# -- balls ---------------------------------------------------------------------------------


@SETTINGS
@given(st.lists(st.tuples(small_q, small_q), min_size=1, max_size=4), st.lists(st.tuples(small_q, small_q), min_size=1, max_size=4))
def test_ratio_ball_contains_independent_mpmath_value(tn, td):
    num, den = ExpPoly(tn), ExpPoly(td)
    if den.is_zero():
        return
    with mpmath.workdps(50):
        dval = mp_value([(Fraction(int(c.p), int(c.q)), Fraction(int(q.p), int(q.q))) for q, c in den.terms])
        if abs(dval) < mpmath.mpf(10) ** -20:  # near-cancelling denominator: value ill-conditioned at 50 digits
            return
        nval = mp_value([(Fraction(int(c.p), int(c.q)), Fraction(int(q.p), int(q.q))) for q, c in num.terms])
        value = nval / dval
        slack = Fraction(1, 10**25) * (1 + abs(Fraction(str(mpmath.nstr(value, 20)))))
    b = ExpRatio(num, den).ball(200)
    assert b.is_finite()
    assert contains_within(b, value, slack)
    pb = num.ball(200)
    assert contains_within(pb, nval, Fraction(1, 10**25) * (1 + abs(Fraction(mpmath.nstr(nval, 20)))))


def test_ball_at_fixed_instance_is_tight_and_contains_value():
    num, den = E((2, "1/3"), (Fraction(-5, 7), -2)), E((1, "1/3"), (1, "1/2"))
    with mpmath.workdps(50):
        value = (2 * mpmath.exp(mpmath.mpf(1) / 3) - mpmath.mpf(5) / 7 * mpmath.exp(-2)) / (
            mpmath.exp(mpmath.mpf(1) / 3) + mpmath.exp(mpmath.mpf(1) / 2)
        )
    b = ExpRatio(num, den).ball(300)
    lo, hi = ball_interval(b)
    assert hi - lo < Fraction(1, 2**280)
    assert contains_within(b, value, Fraction(1, 10**48))
    assert not contains_within(b, value + mpmath.mpf(10) ** -45, Fraction(1, 10**48))


@pytest.mark.parametrize("big", [10**6, -(10**6)])
def test_huge_exponents_give_finite_balls(big):
    # (e^big + e^-big) / e^big = 1 + e^(-2 big)
    b = ExpRatio(E((1, big), (1, -big)), E((1, big))).ball(128)
    assert b.is_finite()
    lo, hi = ball_interval(b)
    if big > 0:  # value in (1, 1 + 2^-1000)
        assert hi >= 1 and lo <= 1 + Fraction(1, 2**1000) and hi - lo < Fraction(1, 2**100)
    else:  # value 1 + e^(2·10^6): its log is 2·10^6 up to e^(-2·10^6)
        with ctx.workprec(128):
            assert b.log().overlaps(arb(2 * 10**6))
            assert b.log().rad() < arb(2) ** -80
    # 3e^big alone
    b2 = ExpRatio(E((3, big)), ExpPoly.constant(1)).ball(128)
    assert b2.is_finite()
    with ctx.workprec(128):
        assert (b2 / 3).log().overlaps(arb(big))
    # e^big / (1 + e^big): a softmax weight, 1 or 0 up to e^(-10^6)
    b3 = ExpRatio(E((1, big)), E((1, 0), (1, big))).ball(128)
    assert b3.is_finite()
    lo, hi = ball_interval(b3)
    expected = 1 if big > 0 else 0
    assert abs(lo - expected) < Fraction(1, 2**100) and abs(hi - expected) < Fraction(1, 2**100)


def test_huge_negative_exponent_value_is_contained():
    r = ExpRatio(E((1, -(10**6))), ExpPoly.constant(1))
    b = r.ball(64)
    assert b.is_finite()
    with mpmath.workdps(30):
        value = mpmath.exp(-(10**6))
    assert value > 0
    assert contains_within(b, value, Fraction(0))


# -- JSON ------------------------------------------------------------------------------------


@SETTINGS
@given(terms_st, terms_st)
def test_json_round_trip(tn, td):
    num, den = ExpPoly(tn), ExpPoly(td)
    assert ExpPoly.from_json(json.loads(json.dumps(num.to_json()))) == num
    if den.is_zero():
        return
    r = ExpRatio(num, den)
    back = ExpRatio.from_json(json.loads(json.dumps(r.to_json())))
    assert back == r
    assert back.num == r.num and back.den == r.den


def test_json_form():
    assert E((Fraction(-1, 2), 3), (2, "1/7")).to_json() == [["2", "1/7"], ["-1/2", "3"]]
    assert ExpRatio.rational("3/4").to_json() == {"num": [["3/4", "0"]], "den": [["1", "0"]]}


@pytest.mark.parametrize(
    "data",
    [{"a": 1}, "1", 1, None, [["1"]], [["1", "2", "3"]], [("1", "2")], ["1"]],
)
def test_exppoly_from_json_rejects_malformed_structure(data):
    with pytest.raises(ValueError, match=r"^exp-polynomial: expected a list of \[coefficient, exponent\] pairs, got "):
        ExpPoly.from_json(data)


@pytest.mark.parametrize(
    "pair, detail",
    [
        (["x", "0"], "got 'x'"),
        (["1", "__import__('os')"], "got \"__import__\\('os'\\)\""),
        ([True, "0"], "the boolean True"),
        (["1", None], "got NoneType None"),
        (["1/0", "0"], "got '1/0'"),
    ],
)
def test_exppoly_from_json_rejects_bad_numbers(pair, detail):
    with pytest.raises(InvalidNumber, match=detail):
        ExpPoly.from_json([pair])


@pytest.mark.parametrize(
    "data",
    [{"num": []}, {"den": []}, {"num": [], "den": [], "extra": 1}, [[], []], "x", None],
)
def test_expratio_from_json_rejects_malformed_structure(data):
    with pytest.raises(ValueError, match=r"^exp-ratio: expected \{'num': \.\.\., 'den': \.\.\.\}, got "):
        ExpRatio.from_json(data)


def test_expratio_from_json_rejects_bad_inner_data():
    with pytest.raises(ValueError, match=r"^exp-polynomial: expected a list"):
        ExpRatio.from_json({"num": "1", "den": [["1", "0"]]})
    with pytest.raises(InvalidNumber):
        ExpRatio.from_json({"num": [["1", "0"]], "den": [["nan", "0"]]})


def test_expratio_from_json_rejects_zero_denominator_as_value_error():
    with pytest.raises(ValueError):
        ExpRatio.from_json({"num": [["1", "0"]], "den": [["1", "0"], ["-1", "0"]]})


# -- gaps found by mutation testing (python tests/mutation.py exact/expfield.py) -------------


def _frac(x: fmpq) -> Fraction:
    return Fraction(int(x.p), int(x.q))


def test_equality_with_other_types_is_not_implemented():
    p, r = E((1, 1)), ExpRatio.rational(1)
    assert p.__eq__(1) is NotImplemented and r.__eq__(1) is NotImplemented
    assert ExpSum([r]).__eq__(1) is NotImplemented
    assert (p == "e") is False and (r == "1") is False and (ExpSum([r]) == 1) is False


def test_exppoly_ball_with_shift():
    # e^{-5} · (3e^5 + 2e^1) = 3 + 2e^{-4}
    p = E((3, 5), (2, 1))
    with mpmath.workdps(80):
        shifted = 3 + 2 * mpmath.exp(-4)
        unshifted = 3 * mpmath.exp(5) + 2 * mpmath.exp(1)
    b = p.ball(200, shift=5)
    lo, hi = ball_interval(b)
    assert hi - lo < Fraction(1, 2**190)
    assert contains_within(b, shifted, Fraction(1, 10**70))
    assert contains_within(p.ball(200), unshifted, Fraction(1, 10**70))
    assert not contains_within(b, unshifted, Fraction(1, 10**70))


def _softmax_reference(scores, values):
    """Σ c_i e^{s_i} / Σ e^{s_i}, built term by term through the public ExpPoly constructor."""
    return ExpPoly([(c, s) for s, c in zip(scores, values)]), ExpPoly([(1, s) for s in scores])


@pytest.mark.parametrize(
    "scores, values",
    [
        ([3], [5]),
        ([0], [1]),
        (["-2/3"], [0]),
        ([1, 2], [3, 4]),
        ([2, 1], [3, 4]),  # unsorted: the fast path must order the terms
        ([1, 1], [3, 4]),  # tie: one term with coefficient 2 in the denominator
        ([1, 1], [3, -3]),  # tie that cancels the numerator
        ([0, 5], [0, 7]),  # a zero value is dropped from the numerator, never its score
        ([0, 5], [7, 0]),
        ([2, 0, 2, -1], [1, 3, 1, 0]),  # general path: ties merged, zero values dropped
        ([0, 0, 0], [1, 1, -2]),
        ([4, "1/2", -3, "1/2", 0], [2, 2, 1, -2, 5]),
        ([1, 0, 1, 0, 0], [5, 1, 4, 2, 3]),  # a second tie after a larger first group has merged
    ],
)
def test_softmax_is_the_normalised_ratio(scores, values):
    s = [fmpq(*map(int, str(x).split("/"))) for x in scores]
    c = [fmpq(int(v)) for v in values]
    r = ExpRatio.softmax(s, c)
    num, den = _softmax_reference(s, c)
    assert r.num == num and r.den == den  # normal form: sorted, merged, zero coefficients dropped
    assert r.num.terms == num.terms and r.den.terms == den.terms
    assert r == ExpRatio(num, den)
    if len(set(scores)) == 1:  # equal scores: the plain average
        assert r == ExpRatio.rational(Fraction(sum(values), len(values)))


def test_softmax_of_no_tokens_has_no_value():
    with pytest.raises(InvalidArgument, match=r"^den: "):
        ExpRatio.softmax([], [])


def test_normalized_scales_the_lowest_denominator_term_to_one():
    for den in (E((2, 0), (1, 1)), E((1, 3), (5, 4)), E((-1, 0)), E((1, 1), (2, 2))):
        r = ExpRatio(E((1, 0), (7, "1/2")), den)
        n = r.normalized()
        assert n.den.terms[0] == (fmpq(0), fmpq(1))
        assert n == r
    already = ExpRatio(E((4, 2)), E((1, 0), (3, 1)))
    assert already.normalized().den.terms == already.den.terms
    assert already.normalized().num.terms == already.num.terms


def test_ratio_equality_with_equal_normal_denominators_but_different_numerators():
    # the raw denominators differ, the normalised ones agree: the numerators still decide
    r1 = ExpRatio(E((1, 0)), E((1, 0), (1, 1)))
    r2 = ExpRatio(E((2, 0)), E((2, 0), (2, 1)))
    r3 = ExpRatio(E((3, 0)), E((2, 0), (2, 1)))
    assert r1 == r2 and r2 == r1
    assert r1 != r3 and r3 != r1
    assert not (r1 == r3)


def test_ratio_sympy_and_repr():
    r = ExpRatio(E((2, "1/3")), E((1, 0), (1, 1)))
    assert r.sympy() == 2 * sympy.exp(sympy.Rational(1, 3)) / (1 + sympy.E)
    assert repr(r) == "ExpRatio(ExpPoly([(2, 1/3)]), ExpPoly([(1, 0), (1, 1)]))"
    assert repr(ExpRatio.rational("-3/4")) == "ExpRatio(ExpPoly([(-3/4, 0)]), ExpPoly([(1, 0)]))"


@pytest.mark.parametrize(
    "x, prec",
    [
        (Fraction(-61, 3), 20),  # working precision below the 32-bit floor
        (Fraction(-61, 3), 200),
        (Fraction(-50), 100),
        (Fraction(-601, 3), 1000),
        (-17 - Fraction(1, 2**1100), 200),  # a huge denominator is not a huge exponent
        (Fraction(-(10**6)) - Fraction(1, 3), 64),
    ],
)
def test_ball_of_a_small_exponential_is_accurate_to_2_to_the_minus_prec(x, prec):
    """``e^x`` for ``x < -16`` is computed at reduced precision, still to ``2^-prec`` absolutely."""
    b = ExpRatio(E((1, x)), ExpPoly.constant(1)).ball(prec)
    lo, hi = ball_interval(b)
    assert (hi - lo) / 2 <= Fraction(1, 2**prec)
    with mpmath.workdps(prec // 3 + 60):
        value = mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)
    assert contains_within(b, value, Fraction(1, 10 ** (prec // 3 + 50)))


# -- ExpSum ----------------------------------------------------------------------------------


def _sum_parts():
    a = ExpRatio(E((1, 0), (2, 1)), E((1, 0), (1, 1)))  # (1 + 2e) / (1 + e)
    b = ExpRatio(E((5, "1/2")), E((1, 0), (1, 2)))  # 5e^{1/2} / (1 + e^2)
    c = ExpRatio(E((2, 3)), E((2, 2), (2, 3)))  # e / (1 + e), scaled by 2e^2
    return a, b, c


def _mp_sum_value(dps=60):
    with mpmath.workdps(dps):
        e = mpmath.e
        return (1 + 2 * e) / (1 + e) + 5 * mpmath.sqrt(e) / (1 + e**2) + e / (1 + e)


def test_expsum_normal_form_merges_and_orders_by_denominator():
    a, b, c = _sum_parts()
    s = ExpSum([a, b, c])
    assert len(s.terms) == 2  # a and c share the normalised denominator 1 + e
    assert ExpSum([c, b, a]).terms == s.terms == ExpSum([b, a, c]).terms
    assert [[(_frac(q), _frac(k)) for q, k in d.terms] for d, _ in s.terms] == [[(0, 1), (1, 1)], [(0, 1), (2, 1)]]
    # equal numerators, different denominators: the order is still the denominators'
    x = ExpRatio(E((1, 0)), E((1, 0), (1, 2)))
    y = ExpRatio(E((1, 0)), E((1, 0), (1, 1)))
    assert ExpSum([x, y]).terms == ExpSum([y, x]).terms
    assert [d for d, _ in ExpSum([x, y]).terms] == [y.den, x.den]
    assert ExpSum([a, ExpRatio(-a.num, a.den)]).terms == ()


def test_expsum_equality_decides_both_ways():
    a, b, c = _sum_parts()
    s = ExpSum([a, b, c])
    assert s == ExpSum([a, b, c])  # identical normal forms
    assert s == ExpSum([c, b, a]) and s == ExpSum([ExpSum([a]), ExpSum([b, c])])
    assert s == s.as_ratio() and s.as_ratio() == s  # ExpSum against ExpRatio, both sides
    assert ExpSum([a, b]) != ExpSum([a, c]) and ExpSum([a]) != ExpSum([b])
    assert not (ExpSum([a]) == ExpSum([b]))
    assert ExpSum([a]) != b and b != ExpSum([a])
    tiny = Fraction(1, 10**30)
    assert s != ExpSum([a, b, c, ExpRatio.rational(tiny)])
    assert (ExpSum([a]) == ExpSum([a])) is True


def test_expsum_as_ratio_ball_and_sympy():
    a, b, c = _sum_parts()
    s = ExpSum([a, b, c])
    assert s.as_ratio() == a + b + c
    assert ExpSum().as_ratio() == ExpRatio.rational(0)
    value = _mp_sum_value()
    ball = s.ball(200)
    lo, hi = ball_interval(ball)
    assert hi - lo < Fraction(1, 2**180)
    assert contains_within(ball, value, Fraction(1, 10**55))
    assert ExpSum().ball(64) == 0
    e = sympy.E
    expected = (1 + 2 * e) / (1 + e) + e / (1 + e) + 5 * sympy.exp(sympy.Rational(1, 2)) / (1 + e**2)
    assert sympy.simplify(s.sympy() - expected) == 0
    assert abs(float(s.sympy()) - float(value)) < 1e-12


def test_expsum_json_and_repr():
    a, b, c = _sum_parts()
    s = ExpSum([b, a, c])
    assert s.to_json() == {
        "sum": [
            {"num": [["1", "0"], ["3", "1"]], "den": [["1", "0"], ["1", "1"]]},  # a + c = (1 + 3e)/(1 + e)
            {"num": [["5", "1/2"]], "den": [["1", "0"], ["1", "2"]]},
        ]
    }
    back = ExpSum.from_json(json.loads(json.dumps(s.to_json())))
    assert isinstance(back, ExpSum) and back.terms == s.terms and back == s
    assert repr(s) == (
        "ExpSum([ExpRatio(ExpPoly([(1, 0), (3, 1)]), ExpPoly([(1, 0), (1, 1)])), "
        "ExpRatio(ExpPoly([(5, 1/2)]), ExpPoly([(1, 0), (1, 2)]))])"
    )


@pytest.mark.parametrize(
    "data", [[], {"sum": 1}, {"sum": "x"}, {"sum": [], "extra": 1}, {"terms": []}, None, "sum"],
)
def test_expsum_from_json_rejects_malformed_structure(data):
    with pytest.raises(InvalidFormat, match=r"^exp-sum: expected \{'sum': \[ratios\]\}, got "):
        ExpSum.from_json(data)


def test_exp_form_from_json_dispatches_on_the_sum_key():
    a, b, c = _sum_parts()
    s = ExpSum([a, b])
    got = exp_form_from_json(json.loads(json.dumps(s.to_json())))
    assert type(got) is ExpSum and got.terms == s.terms
    got = exp_form_from_json(json.loads(json.dumps(a.to_json())))
    assert type(got) is ExpRatio and got.num == a.num and got.den == a.den
    with pytest.raises(InvalidFormat, match=r"^exp-ratio: "):
        exp_form_from_json([1, 2])


def test_expratio_from_json_zero_denominator_is_a_format_error():
    with pytest.raises(InvalidFormat, match=r"^exp-ratio: the denominator is zero$"):
        ExpRatio.from_json({"num": [["1", "0"]], "den": [["1", "0"], ["-1", "0"]]})
    with pytest.raises(InvalidFormat, match=r"^exp-ratio: the denominator is zero$"):
        ExpRatio.from_json({"num": [], "den": []})


# -- exact fast paths used by certificates: they must agree with general exact equality ----------

_S = [fmpq(-1), fmpq(0), fmpq(1, 2), fmpq(2)]  # scores
_C = [fmpq(-2), fmpq(0), fmpq(1)]  # values


def _softmax2_reference(s0, c0, s1, c1) -> ExpRatio:
    """(c0 e^{s0} + c1 e^{s1}) / (e^{s0} + e^{s1}) through the public constructors only."""
    return ExpRatio(ExpPoly([(c0, s0), (c1, s1)]), ExpPoly([(1, s0), (1, s1)]))


def _representations(r: ExpRatio) -> list:
    """The value of ``r`` as built, scaled by 3 and times e^{1/2}; and other values close in form:
    an extra numerator term, a denominator with one coefficient 2 or 3, a third denominator term."""
    half = E((1, "1/2"))
    same = [r, ExpRatio(r.num * Fraction(3), r.den * Fraction(3)), ExpRatio(r.num * half, r.den * half)]
    other = [ExpRatio(r.num + E((1, 5)), r.den), ExpRatio(r.num, r.den + E((1, 5)))]
    for x in same[::2]:  # as built and shifted (the shift puts an exponent 1 in some denominators)
        (q0, _), (q1, _) = (x.den.terms * 2)[:2]  # one-term denominators: q0 == q1
        other += [ExpRatio(x.num, x.den + E((1, _frac(q0)))), ExpRatio(x.num, x.den + E((2, _frac(q1))))]
    return same + other


def _near(s0, c0, s1, c1):
    """The 4-tuple itself, swapped, both scores shifted, every one-coordinate change, and for equal
    scores every common score."""
    yield s0, c0, s1, c1
    yield s1, c1, s0, c0
    yield s0 + fmpq(1, 2), c0, s1 + fmpq(1, 2), c1  # softmax is shift-invariant: the same value
    for i, step in itertools.product(range(4), (fmpq(1), fmpq(-1, 2))):
        t = [s0, c0, s1, c1]
        t[i] = t[i] + step
        yield tuple(t)
    if s0 == s1:
        for s in _S:
            yield s, c0, s, c1


def _candidates():
    """Two-token softmax values in many representations, and one- and three-token ones."""
    for s0, s1, c0, c1 in itertools.product(_S, _S, _C, _C):
        reps = _representations(ExpRatio.softmax([s0, s1], [c0, c1]))
        if s0 == s1 and c0 == c1:  # the same value from one token, and from three
            reps += [ExpRatio.softmax([s0], [c0]), ExpRatio.softmax([s0] * 3, [c0] * 3), ExpRatio.rational(c0)]
        reps.append(ExpRatio.softmax([s0, s1, fmpq(5)], [c0, c1, fmpq(0)]))
        yield (s0, s1, c0, c1), reps


def test_equals_softmax2_agrees_with_exact_equality():
    seen = {True: 0, False: 0}
    for (s0, s1, c0, c1), reps in _candidates():
        for r in reps:
            for target in _near(s0, c0, s1, c1):
                expected = r == _softmax2_reference(*target)
                assert r.equals_softmax2(*target) is expected, (r, target)
                seen[expected] += 1
    assert seen[True] > 200 and seen[False] > 1000


def test_equals_softmax2_examples():
    r = ExpRatio.softmax([fmpq(1), fmpq(0)], [fmpq(2), fmpq(5)])
    assert r.equals_softmax2(fmpq(0), fmpq(5), fmpq(1), fmpq(2)) is True
    assert r.equals_softmax2(fmpq(1), fmpq(5), fmpq(0), fmpq(2)) is False  # values on the wrong scores
    tie = ExpRatio.softmax([fmpq(1), fmpq(1)], [fmpq(2), fmpq(5)])  # (2 + 5)/2 · e/e
    assert tie.equals_softmax2(fmpq(1), fmpq(3), fmpq(1), fmpq(4)) is True
    assert tie.equals_softmax2(fmpq(1), fmpq(5), fmpq(1), fmpq(-2)) is False
    assert tie.equals_softmax2(fmpq(0), fmpq(3), fmpq(0), fmpq(4)) is True  # equal scores: any common score
    zero = ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(0), fmpq(0)])
    assert zero.equals_softmax2(fmpq(3), fmpq(0), fmpq(-1), fmpq(0)) is True
    assert zero.equals_softmax2(fmpq(0), fmpq(0), fmpq(1), fmpq(1)) is False


def _logistic_reference(base, slope, ell) -> ExpRatio:
    """base + slope·σ(ell) = (base·1 + (base + slope)·e^ell) / (1 + e^ell), public constructors only."""
    return ExpRatio(ExpPoly([(base, 0), (base + slope, ell)]), ExpPoly([(1, 0), (1, ell)]))


def test_equals_logistic_agrees_with_exact_equality():
    seen = {True: 0, False: 0}
    for (s0, s1, c0, c1), reps in _candidates():
        targets = [(c0, c1 - c0, s1 - s0), (c1, c0 - c1, s0 - s1), ((c0 + c1) / 2, fmpq(0), fmpq(0))]
        targets += [(b + db, m + dm, e + de) for b, m, e in targets[:2]
                    for db, dm, de in ((1, 0, 0), (0, 1, 0), (0, 0, fmpq(1, 2)), (0, 0, -2 * e))]
        targets += [(c0, c1 - c0, fmpq(0)), (c0, fmpq(0), fmpq(1)), (c0, fmpq(0), fmpq(-1))]
        for r in reps:
            for base, slope, ell in targets:
                expected = r == _logistic_reference(base, slope, ell)
                assert r.equals_logistic(base, slope, ell) is expected, (r, base, slope, ell)
                seen[expected] += 1
    assert seen[True] > 200 and seen[False] > 1000


def test_equals_logistic_examples():
    r = ExpRatio.softmax([fmpq(3), fmpq(1)], [fmpq(7), fmpq(2)])  # 2 + 5·σ(2) = 7 - 5·σ(-2)
    assert r.equals_logistic(fmpq(2), fmpq(5), fmpq(2)) is True
    assert r.equals_logistic(fmpq(7), fmpq(-5), fmpq(-2)) is True
    assert r.equals_logistic(fmpq(2), fmpq(5), fmpq(-2)) is False
    assert r.equals_logistic(fmpq(2), fmpq(5), fmpq(3)) is False
    assert r.equals_logistic(fmpq(2), fmpq(4), fmpq(2)) is False
    half = ExpRatio.rational(fmpq(7, 2))  # σ(0) = 1/2: 3 + 1·σ(0)
    assert half.equals_logistic(fmpq(3), fmpq(1), fmpq(0)) is True
    assert half.equals_logistic(fmpq(3), fmpq(2), fmpq(0)) is False


def test_approx_is_close_to_the_value():
    cases = [
        (ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(1), fmpq(3)]), lambda e: (1 + 3 * e) / (1 + e)),
        (ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(1), fmpq(0)]), lambda e: 1 / (1 + e)),
        (ExpRatio.softmax([fmpq(0), fmpq(1)], [fmpq(0), fmpq(3)]), lambda e: 3 * e / (1 + e)),
        (ExpRatio.softmax([fmpq(-2), fmpq(1, 3)], [fmpq(5), fmpq(-1)]),
         lambda e: (5 * e**-2 - e ** (mpmath.mpf(1) / 3)) / (e**-2 + e ** (mpmath.mpf(1) / 3))),
        (ExpRatio(E((1, 0), (3, 1), (2, 2)), E((1, 0), (1, 1))), lambda e: (1 + 3 * e + 2 * e**2) / (1 + e)),
        (ExpRatio(E((1, 0), (3, 1)), E((1, 0), (1, 1), (1, 2))), lambda e: (1 + 3 * e) / (1 + e + e**2)),
        (ExpRatio(E((1, 0), (3, 1)), E((2, 0), (2, 1))), lambda e: (1 + 3 * e) / (2 + 2 * e)),
        (ExpRatio.softmax([fmpq(-1000), fmpq(0)], [fmpq(5), fmpq(1)]), lambda e: (5 * e**-1000 + 1) / (e**-1000 + 1)),
        (ExpRatio(E((2, -1), (3, 1)), E((1, 0), (1, 1))), lambda e: (2 / e + 3 * e) / (1 + e)),  # no e^0 term
        (ExpRatio(E((1, 0), (3, 1)), E((2, 0), (1, 1))), lambda e: (1 + 3 * e) / (2 + e)),
        (ExpRatio(E((1, 0), (3, 1)), E((1, 0), (2, 1))), lambda e: (1 + 3 * e) / (1 + 2 * e)),
        (ExpRatio(E((1, 1), (3, 2)), E((3, 1), (1, 2))), lambda e: (e + 3 * e**2) / (3 * e + e**2)),
        (ExpRatio(E((1, 0), (3, 1)), E((1, 0), (3, 1))), lambda e: 1),
    ]
    for r, value in cases:
        with mpmath.workdps(40):
            exact = float(value(mpmath.e))
        got = r.approx()
        assert isinstance(got, float)
        assert abs(got - exact) <= 4 * math.ulp(exact), (r, got, exact)


@pytest.mark.parametrize("prec", [64, 200, 4096, 5000])
def test_ball_of_two_term_denominators(prec):
    # den 3e^{-2} + 2e^{1/2}: the two-term path; num terms at both exponents and at two others
    r = ExpRatio(E((5, -2), (-1, "1/2"), (4, 3), (7, -30)), E((3, -2), (2, "1/2")))
    with mpmath.workdps(prec // 3 + 40):
        e = lambda x: mpmath.exp(mpmath.mpf(x.numerator) / x.denominator)  # noqa: E731
        num = 5 * e(Fraction(-2)) - e(Fraction(1, 2)) + 4 * e(Fraction(3)) + 7 * e(Fraction(-30))
        value = num / (3 * e(Fraction(-2)) + 2 * e(Fraction(1, 2)))
    b = r.ball(prec)
    lo, hi = ball_interval(b)
    assert hi - lo < Fraction(1, 2 ** (prec - 16))
    assert contains_within(b, value, Fraction(1, 10 ** (prec // 3 + 30)))
    # the same value over a three-term denominator goes the general way: the balls overlap
    m = E((1, 0), (1, 1))
    assert ExpRatio(r.num * m, r.den * m).ball(prec).overlaps(b)


def test_normalized_returns_an_already_normal_ratio_itself():
    already = ExpRatio(E((4, 2)), E((1, 0), (3, 1)))
    assert already.normalized() is already  # no copy when the lowest denominator term is 1·e^0
    scaled = ExpRatio(E((4, 2)), E((2, 0), (3, 1)))
    assert scaled.normalized() is not scaled and scaled.normalized() == scaled


def test_softmax2_approx_is_accurate_and_finite_for_a_large_gap_in_either_order():
    from exact.expfield import softmax2_approx

    assert softmax2_approx(fmpq(0), fmpq(1), fmpq(1000), fmpq(5)) == 5.0  # e^-1000 underflows to 0
    assert softmax2_approx(fmpq(1000), fmpq(5), fmpq(0), fmpq(1)) == 5.0
    assert softmax2_approx(fmpq(0), fmpq(1), fmpq(0), fmpq(3)) == 2.0
    # (1 + 3e)/(1 + e), a float approximation: a few ulps
    assert abs(softmax2_approx(fmpq(0), fmpq(1), fmpq(1), fmpq(3)) - (1 + 3 * math.e) / (1 + math.e)) < 1e-15


def test_answer_equals_logistic_agrees_with_exact_equality_on_compact_answers():
    # an exact oracle's two-token answer is held as its compact pair (s1, c1, s2, c2), which
    # answer_equals_logistic reads first: its verdict, including "never equal" for a gap other than ±ell
    # and for equal scores, must be exact equality's
    from exact.models import SingleHead
    from exact.oracles import ExactOracle, answer_equals, answer_equals_logistic

    seen = {True: 0, False: 0}
    for v0, a, p, b in itertools.product(["0", "1", "-1/2"], ["-1", "0", "1/2", "2"], ["1", "2"], ["-2", "0", "1"]):
        box = ExactOracle(SingleHead([[1, 0], [0, 0]], [v0, 1]))  # [[a, b], [p, 0]]: scores a·p, p²
        answer = box.query([[a, b], [p, 0]])  # values v0·a + b and v0·p
        pair = answer._pair()
        assert pair is not None
        s1, c1, s2, c2 = pair
        targets = [(c2, c1 - c2, s1 - s2), (c1, c2 - c1, s2 - s1)]
        targets += [(x + dx, m + dm, e + de) for x, m, e in targets
                    for dx, dm, de in ((1, 0, 0), (0, 1, 0), (0, 0, fmpq(1, 2)), (0, 0, -2 * e), (0, -m, 0))]
        targets += [((c1 + c2) / 2, fmpq(1), fmpq(1)), ((c1 + c2) / 2, fmpq(0), fmpq(1)), (c2, fmpq(0), fmpq(-1))]
        for base, slope, ell in targets:
            if ell == 0:
                continue
            expected = answer_equals(answer, _logistic_reference(base, slope, ell))
            assert answer_equals_logistic(answer, base, slope, ell) is expected, (pair, base, slope, ell)
            seen[expected] += 1
    assert seen[True] > 50 and seen[False] > 300


def test_logistic_equality_takes_exact_rationals_of_any_type():
    # found in review: Fraction arguments compared unequal to the compact form's fmpq, and the
    # "never equal" shortcut then answered False for a true equality
    from exact.models import SingleHead
    from exact.oracles import ExactOracle, answer_equals_logistic

    answer = ExactOracle(SingleHead([[1]], [1])).query([[2], [1]])  # 1 + 1·σ(1), compact form
    for args in ((fmpq(1), fmpq(1), fmpq(1)), (Fraction(1), Fraction(1), Fraction(1)), (1, 1, Fraction(1)),
                 (fmpq(1), fmpq(1), Fraction(1))):
        assert answer_equals_logistic(answer, *args) is True
    r = ExpRatio.softmax([fmpq(3), fmpq(1)], [fmpq(7), fmpq(2)])  # 2 + 5·σ(2)
    assert r.equals_logistic(Fraction(2), 5, Fraction(2)) is True and r.equals_logistic(2, 5, 3) is False
    for bad in (1.0, "1", None, True):
        with pytest.raises(InvalidArgument, match="must be an exact rational"):
            answer_equals_logistic(answer, fmpq(1), fmpq(1), bad)
