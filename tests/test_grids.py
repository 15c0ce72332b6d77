"""Tests for exact.grids: parsing, IEEE rounding, identification of grid points in balls."""

import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exact.errors import ExactAttentionError, OracleInconsistent, PrecisionInsufficient
from exact.grids import (
    BFLOAT16,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    DyadicGrid,
    FloatGrid,
    Grid,
    RationalGrid,
    certifiable_grids,
    parse_grid,
    require_identified,
)

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True)


def test_error_classes_are_builtins():
    assert issubclass(OracleInconsistent, ValueError)
    assert issubclass(PrecisionInsufficient, ArithmeticError)
    assert issubclass(OracleInconsistent, ExactAttentionError)
    assert issubclass(PrecisionInsufficient, ExactAttentionError)


# -- parse_grid ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("rational:1000", RationalGrid(1000)),
        ("rational:1", RationalGrid(1)),
        ("dyadic:0", DyadicGrid(0)),
        ("dyadic:52", DyadicGrid(52)),
        ("  Rational:7 ", RationalGrid(7)),
        ("DYADIC:3", DyadicGrid(3)),
    ],
)
def test_parse_grid_parametrised_forms(spec, expected):
    g = parse_grid(spec)
    assert g == expected
    assert isinstance(g, Grid)
    assert g.name == spec.strip().lower()
    assert str(g) == g.name


@pytest.mark.parametrize(
    "spec, grid",
    [("float16", FLOAT16), ("bfloat16", BFLOAT16), ("float32", FLOAT32), ("float64", FLOAT64), (" Float32 ", FLOAT32)],
)
def test_parse_grid_float_forms(spec, grid):
    assert parse_grid(spec) is grid


def test_float_grid_constants():
    assert (FLOAT16.precision, FLOAT16.emin, FLOAT16.emax) == (11, -14, 15)
    assert (BFLOAT16.precision, BFLOAT16.emin, BFLOAT16.emax) == (8, -126, 127)
    assert (FLOAT32.precision, FLOAT32.emin, FLOAT32.emax) == (24, -126, 127)
    assert (FLOAT64.precision, FLOAT64.emin, FLOAT64.emax) == (53, -1022, 1023)
    assert FLOAT16.max_value == 65504
    assert FLOAT32.max_value == Fraction(float(np.finfo(np.float32).max))
    assert FLOAT64.max_value == Fraction(float(np.finfo(np.float64).max))
    assert BFLOAT16.max_value == Fraction(2**128 - 2**120)


def test_parse_grid_passes_through_grids_and_none():
    g = RationalGrid(5)
    assert parse_grid(g) is g
    assert parse_grid(None) is None


@pytest.mark.parametrize(
    "spec",
    ["rational:x", "rational:", "rational", "dyadic:-1", "dyadic:1.5", "float8", "", "float", "rational:1:2", "int32"],
)
def test_parse_grid_rejects(spec):
    msg = (
        r"^grid: expected 'rational:Q', 'dyadic:k', 'float16', 'bfloat16', 'float32' or 'float64', got "
        + repr(spec).replace("[", r"\[").replace(".", r"\.")
        + "$"
    )
    with pytest.raises(ValueError, match=msg):
        parse_grid(spec)


def test_parse_grid_rejects_zero_denominator_bound():
    with pytest.raises(ValueError, match=r"^rational grid: expected a denominator bound Q >= 1, got 0$"):
        parse_grid("rational:0")


def test_parse_grid_rejects_non_strings():
    with pytest.raises(ValueError, match=r"^grid: expected a string or Grid, got int$"):
        parse_grid(5)


def test_parse_grid_rejects_superscript_digit_with_grid_message():
    with pytest.raises(ValueError, match=r"^grid: expected "):
        parse_grid("rational:²")


def test_grid_constructors_validate():
    with pytest.raises(ValueError, match=r"^rational grid: expected a denominator bound Q >= 1, got -3$"):
        RationalGrid(-3)
    with pytest.raises(ValueError, match=r"^rational grid: expected a denominator bound Q >= 1, got 2\.0$"):
        RationalGrid(2.0)
    with pytest.raises(ValueError, match=r"^dyadic grid: expected bits >= 0, got -1$"):
        DyadicGrid(-1)


# -- rounding against numpy ------------------------------------------------------------


def _float64_samples(seed, n, lo_exp, hi_exp):
    """Seeded float64 values over a wide exponent range, plus exact ties and edge cases."""
    rng = np.random.default_rng(seed)
    xs = rng.normal(size=n) * np.exp2(rng.integers(lo_exp, hi_exp, size=n).astype(float))
    return [float(x) for x in xs]


def _ties(dtype, n, seed):
    """Values exactly half-way between two adjacent points of ``dtype`` (representable in float64)."""
    rng = np.random.default_rng(seed)
    out = []
    for x in rng.normal(size=n).astype(dtype):
        nxt = np.nextafter(x, dtype(np.inf))
        out.append((float(x) + float(nxt)) / 2)  # exact in float64
    return out


@pytest.mark.parametrize(
    "grid, dtype, lo_exp, hi_exp, seed",
    [
        (FLOAT16, np.float16, -30, 18, 1),  # float16 subnormals start below 2^-14, overflow at 65520
        (FLOAT32, np.float32, -155, 131, 2),  # float32 subnormals below 2^-126, overflow near 2^128
    ],
)
def test_float_grid_rounding_agrees_with_numpy(grid, dtype, lo_exp, hi_exp, seed):
    xs = _float64_samples(seed, 1500, lo_exp, hi_exp)
    xs += _ties(dtype, 200, seed)
    info = np.finfo(dtype)
    big, tiny = float(info.max), float(info.smallest_subnormal)
    xs += [0.0, -0.0, big, -big, tiny, -tiny, tiny / 2, tiny * 0.5000001, tiny * 1.5]
    ulp_max = big - float(np.nextafter(info.max, dtype(0)))
    xs += [big + ulp_max / 2, big + ulp_max / 2 * (1 - 2**-40), -(big + ulp_max / 2)]
    subnormal_seen = overflow_seen = tie_seen = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for x in xs:
            y = dtype(x)  # numpy's correctly rounded cast from float64
            expected = None if np.isinf(y) else Fraction(float(y))
            assert grid.round(Fraction(x)) == expected, x
            subnormal_seen += expected is not None and 0 < abs(expected) < 2.0**grid.emin
            overflow_seen += expected is None
    tie_seen = sum(1 for x in xs[1500:1700] if grid.round(Fraction(x)) != Fraction(x))
    assert subnormal_seen > 10 and overflow_seen > 10 and tie_seen == 200


def test_float64_grid_rounding_agrees_with_python_floats():
    rng = np.random.default_rng(3)
    for _ in range(500):
        q = Fraction(int(rng.integers(-(10**18), 10**18)), int(rng.integers(1, 10**18)))
        q *= Fraction(2) ** int(rng.integers(-1100, 1000))
        try:
            expected = Fraction(float(q))  # float(Fraction) is correctly rounded
        except OverflowError:
            expected = None
        assert FLOAT64.round(q) == expected
    for x in _float64_samples(4, 300, -1074, 1000):
        assert FLOAT64.round(Fraction(x)) == Fraction(x)
        assert FLOAT64.contains(Fraction(x))
    assert FLOAT64.round(Fraction(2) ** 1024) is None
    assert FLOAT64.round(Fraction(1, 2**1075)) == 0  # half the smallest subnormal: ties to even (zero)
    assert FLOAT64.round(Fraction(3, 2**1076)) == Fraction(1, 2**1074)


def _bfloat16_from_float32_bits(x32: np.float32):
    """Independent bfloat16 rounding: round-to-nearest-even on the top 16 bits of the float32 pattern."""
    u = int(np.array(x32, dtype=np.float32).view(np.uint32))
    lsb = (u >> 16) & 1
    u = (u + 0x7FFF + lsb) & 0xFFFF0000
    y = np.array(u, dtype=np.uint32).view(np.float32)
    return None if np.isinf(y) else Fraction(float(y))


def test_bfloat16_rounding_agrees_with_bit_level_rounding():
    rng = np.random.default_rng(5)
    # float32 values first (so the bit-level reference does no double rounding): random bit patterns
    # cover every exponent, including subnormals, plus Gaussians and exact ties.
    bits = rng.integers(0, 2**32, size=1500, dtype=np.uint64).astype(np.uint32)
    xs = [x for x in bits.view(np.float32) if np.isfinite(x)]
    xs += list(rng.normal(size=300).astype(np.float32))
    tie_bits = (rng.integers(0, 2**31, size=200, dtype=np.uint64).astype(np.uint32) & 0x7FFF0000) | 0x8000
    xs += [x for x in tie_bits.view(np.float32) if np.isfinite(x)]
    xs += [np.float32(np.finfo(np.float32).max), np.float32(np.finfo(np.float32).smallest_subnormal)]
    subnormals = ties = overflows = 0
    for x in xs:
        expected = _bfloat16_from_float32_bits(x)
        assert BFLOAT16.round(Fraction(float(x))) == expected, x
        subnormals += 0 < abs(float(x)) < 2.0**-126
        overflows += expected is None
        ties += (int(np.array(x).view(np.uint32)) & 0xFFFF) == 0x8000
    assert subnormals > 0 and ties > 100 and overflows > 0


def test_bfloat16_points():
    assert BFLOAT16.contains(Fraction(1 + Fraction(1, 128)))
    assert not BFLOAT16.contains(Fraction(1 + Fraction(1, 256)))
    assert BFLOAT16.round(Fraction(1) + Fraction(1, 256)) == 1  # tie to even
    assert BFLOAT16.round(Fraction(1) + Fraction(3, 256)) == Fraction(1) + Fraction(2, 128)


def test_float_grid_ulp():
    assert FLOAT32.ulp(Fraction(1)) == Fraction(1, 2**23)
    assert FLOAT32.ulp(Fraction(3, 4)) == Fraction(1, 2**24)
    assert FLOAT32.ulp(Fraction(0)) == Fraction(1, 2**149)
    assert FLOAT16.ulp(Fraction(1, 10**9)) == Fraction(1, 2**24)
    assert FLOAT16.ulp(Fraction(-1000)) == Fraction(1, 2)


def test_dyadic_and_rational_round():
    g = DyadicGrid(3)
    assert g.round(Fraction(1, 3)) == Fraction(3, 8)
    assert g.round(Fraction(1, 16)) == 0  # tie to even
    assert g.round(Fraction(3, 16)) == Fraction(2, 8)
    assert RationalGrid(10).round(Fraction(333, 1000)) == Fraction(1, 3)
    assert RationalGrid(10).contains(Fraction(-7, 9))
    assert not RationalGrid(10).contains(Fraction(1, 11))


# -- identify ------------------------------------------------------------------------


def test_identify_float32_tight_ball():
    rng = np.random.default_rng(6)
    for x32 in rng.normal(size=100).astype(np.float32) * np.float32(1000):
        x = Fraction(float(x32))
        u = FLOAT32.ulp(x)
        assert FLOAT32.identify(x - u / 8, x + u / 8) == x
        assert FLOAT32.identify(x, x) == x
        assert FLOAT32.identify(x - u / 3, x + u / 5) == x
        assert FLOAT32.identify(x - 2 * u, x + 2 * u) is None  # wide: holds several points


def test_identify_not_on_grid():
    tiny = Fraction(1, 10**30)
    for grid in (FLOAT16, BFLOAT16, FLOAT32, FLOAT64, DyadicGrid(20), RationalGrid(1000)):
        x = Fraction(1, 1009) if isinstance(grid, RationalGrid) else Fraction(1, 10)
        with pytest.raises(OracleInconsistent, match=r"^W\[1\]\[2\]: the ball \[.*\] holds no point of grid ") as info:
            grid.identify(x - tiny, x + tiny, what="W[1][2]")
        assert "the value is not on the declared grid" in str(info.value)
        assert grid.name in str(info.value)
        assert isinstance(info.value, ValueError)


def test_identify_outside_float_range():
    with pytest.raises(OracleInconsistent, match=r"^value: the ball \[1e\+06, 1e\+06\] lies outside the range of grid float16$"):
        FLOAT16.identify(Fraction(10**6), Fraction(10**6) + Fraction(1, 10**9))
    with pytest.raises(OracleInconsistent, match=r"lies outside the range of grid float32$"):
        FLOAT32.identify(-Fraction(2) ** 129, -Fraction(2) ** 128 - 1)
    # straddling the range boundary is merely inconclusive
    assert FLOAT16.identify(Fraction(65000), Fraction(10**6)) is None


@st.composite
def rational_and_ball(draw, width_factor):
    Q = draw(st.integers(min_value=1, max_value=300))
    q = draw(st.integers(min_value=1, max_value=Q))
    p = draw(st.integers(min_value=-5 * q, max_value=5 * q))
    shrink = Fraction(draw(st.integers(min_value=1, max_value=10**9)), 10**15)
    width = width_factor / (Q * Q) - shrink / (Q * Q)  # just below width_factor/Q²
    t = Fraction(draw(st.integers(min_value=0, max_value=1000)), 1000)
    lo = Fraction(p, q) - t * width
    return Q, Fraction(p, q), lo, lo + width, t


@SETTINGS
@given(rational_and_ball(Fraction(1)))
def test_rational_grid_identifies_centred_ball_just_below_one_over_q_squared(case):
    Q, x, lo, hi, _ = case
    w = hi - lo
    assert w < Fraction(1, Q * Q)
    # recentre on x: the ball [x - w/2, x + w/2] with w just below 1/Q²
    assert RationalGrid(Q).identify(x - w / 2, x + w / 2) == x
    # any placement: the answer is x or inconclusive, never another point and never an error
    assert RationalGrid(Q).identify(lo, hi) in (x, None)
    assert lo <= x <= hi


@SETTINGS
@given(rational_and_ball(Fraction(1, 2)))
def test_rational_grid_identifies_any_ball_below_half_one_over_q_squared(case):
    Q, x, lo, hi, _ = case
    assert RationalGrid(Q).identify(lo, hi) == x


def test_rational_grid_two_points_is_inconclusive():
    g = RationalGrid(100)
    # 1/100 and 1/99 are 1/9900 apart: a ball holding both cannot identify either
    assert g.identify(Fraction(1, 100), Fraction(1, 99)) is None
    assert g.identify(Fraction(0), Fraction(1, 2)) is None
    assert g.identify(Fraction(33, 100), Fraction(1, 3)) is None
    assert RationalGrid(10).identify(Fraction(332, 1000), Fraction(334, 1000)) == Fraction(1, 3)


def test_dyadic_identify():
    g = DyadicGrid(10)
    x = Fraction(-517, 1024)
    assert g.identify(x - Fraction(1, 4096), x + Fraction(1, 4096)) == x
    assert g.identify(x - Fraction(1, 512), x + Fraction(1, 512)) is None


# -- certifiable_grids and require_identified --------------------------------------------


def test_certifiable_grids_text():
    assert certifiable_grids(Fraction(1, 10**6), Fraction(1, 2)) == (
        "rational:Q for Q <= 707, dyadic:k for k <= 18, float16, bfloat16"
    )
    assert certifiable_grids(Fraction(1, 10**12), Fraction(1, 2)) == (
        "rational:Q for Q <= 707106, dyadic:k for k <= 38, float16, bfloat16, float32"
    )
    assert certifiable_grids(Fraction(0), Fraction(1, 2)) == "any grid"
    assert certifiable_grids(Fraction(10), Fraction(1, 2)) == "none"
    assert certifiable_grids(Fraction(1, 10**20), Fraction(1)).endswith("float16, bfloat16, float32, float64")


def test_certifiable_grids_are_really_certifiable():
    """A centred ball of the stated width identifies points of every grid the text names."""
    width = Fraction(1, 10**6)
    assert certifiable_grids(width, Fraction(1, 2)).startswith("rational:Q for Q <= 707,")
    for x in (Fraction(1, 707), Fraction(706, 707), Fraction(3, 701)):
        assert RationalGrid(707).identify(x - width / 2, x + width / 2) == x
    assert DyadicGrid(19).identify(Fraction(1, 2) - width / 2, Fraction(1, 2) + width / 2) == Fraction(1, 2)
    x = Fraction(float(np.float16(0.5)))
    assert FLOAT16.identify(x - width / 2, x + width / 2) == x


def test_require_identified():
    assert require_identified(RationalGrid(10), Fraction(332, 1000), Fraction(334, 1000), what="v[0]") == Fraction(1, 3)
    with pytest.raises(PrecisionInsufficient) as info:
        half = Fraction(1, 2 * 10**6)
        require_identified(RationalGrid(10**6), Fraction(1, 2) - half, Fraction(1, 2) + half, what="v[0]")
    msg = str(info.value)
    assert msg.startswith("v[0]: the oracle's answers pin it only to ±5e-07 around 0.5, ")
    assert "too wide to single out a point of grid rational:1000000" in msg
    assert msg.endswith(
        "grids certifiable at this accuracy: rational:Q for Q <= 707, dyadic:k for k <= 18, float16, bfloat16"
    )
    assert isinstance(info.value, ArithmeticError)
    with pytest.raises(OracleInconsistent, match="not on the declared grid"):
        require_identified(FLOAT32, Fraction(1, 10), Fraction(1, 10), what="v[0]")


def test_float_grid_is_frozen():
    with pytest.raises(AttributeError):
        FLOAT32.precision = 10
    assert FloatGrid("float32", 24, -126, 127) == FLOAT32


# -- gaps found by mutation testing (python tests/mutation.py exact/grids.py) ----------------


def test_base_grid_round_is_abstract():
    with pytest.raises(NotImplementedError):
        Grid().round(Fraction(1))


@pytest.mark.parametrize("grid", [RationalGrid(7), DyadicGrid(3), FLOAT16])
def test_grids_are_frozen_and_hashable(grid):
    field = {RationalGrid: "max_den", DyadicGrid: "bits", FloatGrid: "precision"}[type(grid)]
    with pytest.raises(AttributeError):
        setattr(grid, field, 1)
    assert parse_grid(grid.name) == grid
    assert hash(parse_grid(grid.name)) == hash(grid)
    assert len({grid, parse_grid(grid.name)}) == 1


@pytest.mark.parametrize("grid", [FLOAT16, BFLOAT16, FLOAT32, FLOAT64])
def test_float_grid_round_one_and_small_integers(grid):
    # 0 is special-cased in round(); 1 must not be (an earlier audit's gap)
    assert grid.round(Fraction(1)) == 1
    assert grid.round(Fraction(-1)) == -1
    assert grid.round(Fraction(0)) == 0
    assert grid.round(Fraction(2)) == 2
    assert grid.contains(Fraction(1)) and grid.contains(Fraction(0))
    assert grid.identify(Fraction(1), Fraction(1)) == 1


class _FixedPointGrid(Grid):
    """Multiples of 1/8 in [-1/4, 1/4]: a grid whose range ends well below 1."""

    name = "fixed:[-1/4,1/4]"

    def round(self, x):
        g = Fraction(round(x * 8), 8)
        return None if abs(g) > Fraction(1, 4) else g


def test_identify_outside_a_small_range_for_any_grid():
    g = _FixedPointGrid()
    assert g.identify(Fraction(1, 8) - Fraction(1, 100), Fraction(1, 8) + Fraction(1, 100)) == Fraction(1, 8)
    # the ball [1/2, 3/4] lies wholly above the range: provably no grid point, whatever its size
    with pytest.raises(OracleInconsistent, match=r"^x: the ball \[0\.5, 0\.75\] lies outside the range of grid fixed:"):
        g.identify(Fraction(1, 2), Fraction(3, 4), what="x")
    with pytest.raises(OracleInconsistent, match=r"^x: the ball \[-0\.75, -0\.5\] lies outside the range of grid fixed:"):
        g.identify(Fraction(-3, 4), Fraction(-1, 2), what="x")
    # straddling the whole range: inconclusive, not an error
    assert g.identify(Fraction(-3, 4), Fraction(3, 4)) is None


def test_certifiable_grids_at_the_coarsest_widths():
    # width 1/4: integers (rational:1 = dyadic:0, spacing 1) are still certifiable
    assert certifiable_grids(Fraction(1, 4), Fraction(1, 2)) == "rational:Q for Q <= 1, dyadic:k for k <= 0"
    assert RationalGrid(1).identify(Fraction(7, 8), Fraction(9, 8)) == 1
    assert DyadicGrid(0).identify(Fraction(7, 8), Fraction(9, 8)) == 1
    # width 1/2: spacing 1 is no longer more than twice the width for dyadic:0, still 1/Q² >= 2·width for Q = 1
    assert certifiable_grids(Fraction(1, 2), Fraction(1, 2)) == "rational:Q for Q <= 1"
    assert certifiable_grids(Fraction(1, 2) + Fraction(1, 10**9), Fraction(1, 2)) == "none"


def test_certifiable_grids_float_boundary_is_strict():
    """A float grid is named only when the width is *below* half its spacing at the value."""
    half_ulp16 = FLOAT16.ulp(Fraction(1)) / 2
    assert half_ulp16 == Fraction(1, 2**11)
    just_below = half_ulp16 * Fraction(15, 16)
    assert certifiable_grids(just_below, Fraction(1)) == "rational:Q for Q <= 33, dyadic:k for k <= 10, float16, bfloat16"
    assert certifiable_grids(half_ulp16, Fraction(1)) == "rational:Q for Q <= 32, dyadic:k for k <= 9, bfloat16"
    assert certifiable_grids(2 * half_ulp16, Fraction(1)) == "rational:Q for Q <= 22, dyadic:k for k <= 8, bfloat16"


def test_messages_quote_values_to_17_and_3_significant_digits():
    tiny = Fraction(1, 10**30)
    with pytest.raises(OracleInconsistent) as info:
        FLOAT32.identify(Fraction(1, 10) - tiny, Fraction(1, 10) + tiny, what="W")
    assert str(info.value) == (
        "W: the ball [0.10000000000000001, 0.10000000000000001] holds no point of grid float32; "
        "the value is not on the declared grid"
    )
    half = Fraction(1, 3 * 10**6)
    with pytest.raises(PrecisionInsufficient) as info:
        require_identified(RationalGrid(10**6), Fraction(1, 3) - half, Fraction(1, 3) + half, what="v[0]")
    assert str(info.value) == (
        "v[0]: the oracle's answers pin it only to ±3.33e-07 around 0.33333333333333331, too wide to single "
        "out a point of grid rational:1000000; grids certifiable at this accuracy: "
        "rational:Q for Q <= 866, dyadic:k for k <= 19, float16, bfloat16"
    )


def test_grid_reprs_show_only_the_parameter():
    assert repr(DyadicGrid(3)) == "DyadicGrid(bits=3)"
    assert repr(RationalGrid(7)) == "RationalGrid(max_den=7)"
