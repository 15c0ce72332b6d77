"""The identify kernel and the certified arithmetic's candidates: guesses are tried first but
never trusted, every number is confirmed exactly, and refinement follows a failed candidate."""

from fractions import Fraction

import pytest
from flint import arb, ctx, fmpq

from exact import ExactOracle, SingleHead, learn_single_head
from exact.arith import Measurement
from exact.arith import certified as cert_mod
from exact.errors import InvalidArgument, OracleInconsistent
from exact.grids import parse_grid
from exact.identify import identify
from exact.oracles import ExactAnswer


class Known:
    """The number x, known to `prec` bits (its ball is exact enough to hold x)."""

    def __init__(self, x: Fraction, prec: int = 8):
        self.x, self.prec, self.refined = x, prec, 0
        self.what = f"x={x}"

    def ball(self):
        with ctx.workprec(self.prec):
            return arb(fmpq(self.x.numerator, self.x.denominator))

    def refine(self):
        self.prec *= 2
        self.refined += 1


def confirm_equal(truth):
    return lambda values, fresh: [i for i in fresh if values[i] != fmpq(truth[i].numerator, truth[i].denominator)]


def test_candidates_are_confirmed_and_refined_until_exact():
    truth = [Fraction(1, 3), Fraction(-22, 7), Fraction(355, 113), Fraction(0)]
    qs = [Known(x) for x in truth]
    assert identify(qs, confirm=confirm_equal(truth)) == [fmpq(1, 3), fmpq(-22, 7), fmpq(355, 113), fmpq(0)]
    assert qs[2].refined >= 1 and qs[3].refined == 0  # 355/113 needs more than 8 bits; 0 does not


def test_a_wrong_guess_costs_no_precision_and_a_right_one_skips_the_ball():
    truth = [Fraction(1, 3), Fraction(5, 2)]
    qs = [Known(x, prec=512) for x in truth]
    out = identify(qs, confirm=confirm_equal(truth), guesses=[fmpq(2, 5), fmpq(5, 2)])
    assert out == [fmpq(1, 3), fmpq(5, 2)]
    assert qs[0].refined == 0 and qs[1].refined == 0  # the wrong guess sent #0 to its ball, unrefined


def test_without_a_grid_a_confirmation_is_required():
    with pytest.raises(InvalidArgument, match="candidates must be confirmed exactly"):
        identify([Known(Fraction(1))])


def test_on_a_grid_the_unique_point_is_returned_and_guesses_are_ignored():
    qs = [Known(Fraction(1, 2), prec=64)]
    assert identify(qs, grid=parse_grid("float32"), guesses=[fmpq(7)]) == [fmpq(1, 2)]
    with pytest.raises(OracleInconsistent, match="less accurate than its declared accuracy"):
        identify([Known(Fraction(1, 3), prec=200)], grid=parse_grid("float32"), approximate=True)
    with pytest.raises(OracleInconsistent, match="the value is not on the declared grid$"):
        identify([Known(Fraction(1, 3), prec=200)], grid=parse_grid("float32"))


def _logistic_answer(base: Fraction, slope: Fraction, ell: Fraction) -> ExactAnswer:
    """base + slope·σ(ℓ) = (base·e^0 + (base + slope)·e^ℓ)/(e^0 + e^ℓ), as an oracle would answer it."""
    q = lambda x: fmpq(x.numerator, x.denominator)  # noqa: E731
    return ExactAnswer((q(ell), q(base + slope), fmpq(0), q(base)))


def test_float_guesses_find_small_and_dyadic_logits_and_nothing_else():
    logits = [Fraction(p, q) for q in (1, 2, 3, 7, 64) for p in range(-20, 21, 3)]
    logits += [Fraction(12345, 2**20), Fraction(-3, 2**18)]  # dyadic: float grids
    tall = [Fraction(1, 3 * 2**40 + 1), Fraction(10**9 + 7, 2**20 * 3 * 5 * 7)]
    every = logits + tall
    meas = [Measurement(Fraction(1, 2), Fraction(3)) for _ in every]
    answers = [_logistic_answer(Fraction(1, 2), Fraction(3), x) for x in every]
    guesses = cert_mod._float_guesses(answers, meas)
    for x, g in zip(logits, guesses):
        assert g == fmpq(x.numerator, x.denominator), x
    assert guesses[len(logits):] == [None, None]  # too tall for a float64 estimate: left to the balls
    assert cert_mod._float_guesses(answers[:63], meas[:63]) == [None] * 63  # too few to be worth it


def test_float_guesses_refuse_saturated_and_inconsistent_answers():
    meas = [Measurement(Fraction(0), Fraction(1))] * 70
    sat = [_logistic_answer(Fraction(0), Fraction(1), Fraction(800))] * 70  # σ(800) is 1 in float64
    assert cert_mod._float_guesses(sat, meas) == [None] * 70
    wrong_side = [_logistic_answer(Fraction(0), Fraction(-1), Fraction(1))] * 70  # α < 0 for these measurements
    assert cert_mod._float_guesses(wrong_side, [Measurement(Fraction(0), Fraction(1))] * 70) == [None] * 70


def test_a_random_rational_head_is_identified_from_its_guesses_alone(monkeypatch):
    built = []
    original = cert_mod._Logit.__init__

    def counting(self, *a, **k):
        built.append(1)
        original(self, *a, **k)

    monkeypatch.setattr(cert_mod._Logit, "__init__", counting)
    truth = SingleHead.random(12, seed=3)
    r = learn_single_head(ExactOracle(truth))
    assert r.model == truth and r.exact
    assert built == []  # every logit confirmed from its float64 guess: no ball was needed


# -- the certified arithmetic on approximate oracles: precision, grids, messages ------------------

from exact import CallableOracle  # noqa: E402
from exact.arith import CertifiedArithmetic  # noqa: E402
from exact.errors import PrecisionInsufficient  # noqa: E402
from exact.numbers import ball_interval  # noqa: E402


def _callable(truth: SingleHead, accuracy: str, prec: int = 400):
    def fn(X):
        lo, hi = ball_interval(truth.ball([[Fraction(x) for x in row] for row in X], prec=prec))
        return (lo + hi) / 2

    return CallableOracle(fn, d=truth.d, accuracy=accuracy)


def _fine_head() -> SingleHead:  # entries on dyadic:70 that no coarser grid holds
    D = 2**70
    return SingleHead([[Fraction(3 * 2**68 + 1, D), Fraction(-(2**69) + 7, D)], [Fraction(5, D), Fraction(2**68 - 3, D)]],
                      [Fraction(2**69 + 11, D), Fraction(-1)])


def test_precision_is_raised_beyond_64_bits_for_a_fine_grid():
    truth = _fine_head()
    r = learn_single_head(_callable(truth, "1e-40"), grid="dyadic:70")
    assert r.model == truth and r.exact and r.precision > 64


def test_an_oracle_without_error_is_read_exactly_on_a_grid():
    truth = SingleHead([[0, 0], [0, 0]], [1, "1/2"])  # every answer of the probe set is rational
    def fn(X):
        lo, hi = ball_interval(truth.ball([[Fraction(x) for x in row] for row in X], prec=64))
        assert lo == hi  # rational: the ball is a point
        return lo

    oracle = CallableOracle(fn, d=2, accuracy=0)
    r = learn_single_head(oracle, grid="rational:4", checks=0)
    assert r.model == truth and r.exact


def test_a_grid_finer_than_the_accuracy_names_the_ball_and_the_grids_that_would_do():
    with pytest.raises(PrecisionInsufficient) as info:
        learn_single_head(_callable(_fine_head(), "1e-12"), grid="dyadic:70")
    msg = str(info.value)
    assert "cannot certify it on grid dyadic:70 (ball [" in msg and "grids certifiable at this accuracy: " in msg
    assert msg.startswith("W[") or msg.startswith("v[")


def test_precision_bounds_are_validated():
    oracle = ExactOracle(SingleHead([[1]], [1]))
    assert CertifiedArithmetic(oracle, prec=16, max_prec=16).precision == 16
    for bad in ({"prec": 15}, {"prec": True}, {"max_prec": 8}, {"prec": 128, "max_prec": 64}):
        with pytest.raises(InvalidArgument):
            CertifiedArithmetic(oracle, **bad)


def test_an_out_of_range_answer_names_the_measurement_and_the_parameter_it_feeds():
    class Liar(ExactOracle):
        def _answer(self, seq):
            a = super()._answer(seq)
            return ExactOracle(SingleHead([[0, 0], [0, 0]], [9, 9]))._answer(seq) if seq.length == 2 else a

    with pytest.raises(OracleInconsistent, match=r"^measurement #\d+ \(needed for W\[\d\]\[\d\]\): the answer implies"):
        learn_single_head(Liar(SingleHead([[1, 2], [3, 4]], [1, 2])), checks=0)


def test_float_guesses_find_medium_denominators_by_continued_fractions():
    # Denominators beyond the small ones tried first (a rank-r head's entries are sums of
    # products: 350, 9973, ...) are found while q²·tol < 1/4; the tall stay to the balls.
    medium = [Fraction(-107, 350), Fraction(5, 9973), Fraction(123456, 65537), Fraction(-1, 2**20 + 1)]
    tall = [Fraction(1, 3 * 2**40 + 1)]
    filler = [Fraction(p, 3) for p in range(70)]
    every = medium + tall + filler
    meas = [Measurement(Fraction(-1, 4), Fraction(2)) for _ in every]
    answers = [_logistic_answer(Fraction(-1, 4), Fraction(2), x) for x in every]
    guesses = cert_mod._float_guesses(answers, meas)
    assert guesses[: len(medium)] == [fmpq(x.numerator, x.denominator) for x in medium]
    assert guesses[len(medium)] is None
