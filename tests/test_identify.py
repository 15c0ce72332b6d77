"""The identify kernel and the certified arithmetic's candidates: guesses are tried first but
never trusted, every number is confirmed exactly, and refinement follows a failed candidate."""

from fractions import Fraction

import numpy as np
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
    logits += [Fraction(12345, 2**20), Fraction(-3, 2**18), Fraction(5, 128)]  # dyadic: float grids
    tall = [Fraction(1, 3 * 2**40 + 1), Fraction(10**9 + 7, 2**20 * 3 * 5 * 7)]
    every = logits + tall
    meas = [Measurement(Fraction(1, 2), Fraction(3)) for _ in every]
    answers = [_logistic_answer(Fraction(1, 2), Fraction(3), x) for x in every]
    guesses = cert_mod._float_guesses(answers, meas)
    for x, g in zip(logits, guesses):
        assert g == fmpq(x.numerator, x.denominator), x
    assert guesses[len(logits):] == [None, None]  # too tall for a float64 estimate: left to the balls
    assert cert_mod._float_guesses(answers[:63], meas[:63]) == [None] * 63  # too few to be worth it
    assert cert_mod._float_guesses(answers[:64], meas[:64]) == guesses[:64]  # 64 are enough


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


# -- the certified arithmetic's own contracts: height cap, starting precisions, scales, floats --------


def _one_logit(ell: Fraction, base=Fraction(1, 2), slope=Fraction(3), scale=Fraction(1)):
    return [_logistic_answer(base, slope, ell)], [Measurement(base, slope, scale)]


def test_logits_are_searched_up_to_4096_bits_of_height_and_no_further():
    arith = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])))
    found = Fraction(2**1900 + 1, 2**1900 + 3)  # about 3800 bits of height
    answers, meas = _one_logit(found)
    assert arith.combine(answers, meas, [[(1, 0)]], ["x"]) == [found]
    answers, meas = _one_logit(Fraction(2**2100 + 1, 2**2100 + 3))  # about 4200 bits
    with pytest.raises(PrecisionInsufficient, match=r"^measurement #0 \(needed for x\): no rational logit below 2\*\*4096 reproduces the answer"):
        arith.combine(answers, meas, [[(1, 0)]], ["x"])


def test_the_documented_default_precisions_hold_at_every_entry_point():
    import inspect

    from exact import learn_low_rank
    from exact.arith import get_arithmetic
    from exact.learn.driver import Run

    for fn in (CertifiedArithmetic.__init__, get_arithmetic, Run.__init__, learn_single_head, learn_low_rank):
        params = inspect.signature(fn).parameters
        assert (params["prec"].default, params["max_prec"].default) == (64, 1 << 23), fn  # docs/exactness.md
    arith = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])))
    assert (arith.prec0, arith.precision, arith.max_prec) == (64, 64, 1 << 23)


def test_an_exact_out_of_range_weight_is_inconsistent_not_imprecise():
    # the answer equals base (α = 0 exactly) or base + slope (α = 1 exactly): no finite logit
    arith = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])), max_prec=256)
    for y in (Fraction(1, 2), Fraction(7, 2)):
        q = fmpq(y.numerator, y.denominator)
        answer = ExactAnswer((fmpq(0), q, fmpq(0), q))  # (y·e^0 + y·e^0)/(e^0 + e^0) = y
        with pytest.raises(OracleInconsistent, match=r"softmax weight .* outside \(0, 1\)"):
            arith.combine([answer], [Measurement(Fraction(1, 2), Fraction(3))], [[(1, 0)]], ["x"])
    answer = ExactAnswer((fmpq(0), fmpq(9, 2), fmpq(0), fmpq(9, 2)))  # α = (9/2 − 1/2)/3 = 4/3, shown to 5 digits
    with pytest.raises(OracleInconsistent, match=r"^measurement #0 \(needed for x\): the answer implies a softmax weight \[1\.3333 \+/- 3\.34e-5\] outside"):
        arith.combine([answer], [Measurement(Fraction(1, 2), Fraction(3))], [[(1, 0)]], ["x"])


def test_scaled_measurements_divide_the_logit_with_and_without_a_grid():
    ell = Fraction(-5, 4)
    answers, meas = _one_logit(ell, scale=Fraction(2))
    exact = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])))
    assert exact.combine(answers, meas, [[(1, 0)]], ["x"]) == [ell / 2]  # confirmed answer by answer
    assert exact.combine(answers, meas, [[(3, 0)]], ["x"]) == [3 * ell / 2]
    on_grid = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])), grid="rational:8")
    assert on_grid.combine(answers, meas, [[(1, 0)]], ["x"]) == [ell / 2]


def test_balls_double_from_prec_and_never_exceed_max_prec(monkeypatch):
    seen = []
    original = CertifiedArithmetic.logit_ball

    def spy(self, answer, base, slope, prec, what, want=None):
        seen.append(prec)
        return original(self, answer, base, slope, prec, what, want)

    monkeypatch.setattr(CertifiedArithmetic, "logit_ball", spy)
    truth = SingleHead([[50, Fraction(1, 3)], [Fraction(2**70 + 1, 2**70 - 1), -1]], [1, 2])  # large and tall logits
    r = learn_single_head(ExactOracle(truth), checks=0)
    assert r.model == truth and r.exact
    assert seen and all(p in (64, 128, 256, 512) for p in seen) and r.precision == max(seen) > 128
    seen.clear()
    small = SingleHead([[1, Fraction(1, 3)], [0, -1]], [1, 2])
    assert learn_single_head(ExactOracle(small), max_prec=64, checks=0).model == small
    assert seen and max(seen) == 64  # no ball beyond max_prec, not even the first one


def test_approximate_logits_are_accurate_to_60_bits_after_escalation():
    logits = [Fraction(1, 3), Fraction(100), Fraction(-7, 2), Fraction(0)]
    scales = [Fraction(1), Fraction(4), Fraction(1, 2), Fraction(1)]
    answers = [_logistic_answer(Fraction(1, 2), Fraction(3), x) for x in logits]
    meas = [Measurement(Fraction(1, 2), Fraction(3), s) for s in scales]
    arith = CertifiedArithmetic(ExactOracle(SingleHead([[1]], [1])))
    out = arith.approximate_logits(answers, meas)
    assert out == pytest.approx([float(x / s) for x, s in zip(logits, scales)], rel=1e-15, abs=1e-15)
    assert arith.precision > 64  # σ(100) is 1 - 4e-44: not inside (0, 1) at 64 bits


def test_a_large_logit_beyond_the_declared_accuracy_says_the_weight_is_unresolved():
    truth = SingleHead([[60, 0], [0, 1]], [1, 1])  # σ(60) = 1 - 9e-27, inside the accuracy of 1 itself
    with pytest.raises(PrecisionInsufficient, match=r"the softmax weight is not resolved inside \(0, 1\)"):
        learn_single_head(_callable(truth, "1e-20"), grid="float32", checks=0)


def test_a_grid_finer_than_the_accuracy_lists_the_float_grids_that_would_do():
    with pytest.raises(PrecisionInsufficient, match=r"grids certifiable at this accuracy: .*float32"):
        learn_single_head(_callable(_fine_head(), "1e-12"), grid="dyadic:70")


def test_an_oracle_declared_without_error_is_refined_without_limit():
    truth = _fine_head()  # needs more than 64 bits; the callable's answers are exact to 400 bits only,
    # so the replay (rightly) refuses them at accuracy 0: identification alone is tested here
    r = learn_single_head(_callable(truth, 0), grid="dyadic:70", certify=False, checks=0)
    assert r.model == truth and not r.exact and r.precision > 64


class Late(Known):
    """Like Known, but its ball is not resolved below 32 bits."""

    def ball(self):
        return None if self.prec < 32 else super().ball()


def test_an_unresolved_ball_is_refined_until_there_is_a_candidate():
    seen = []

    def confirm(values, fresh):
        seen.extend(values[i] for i in fresh)
        return confirm_equal([Fraction(2, 7)])(values, fresh)

    q = Late(Fraction(2, 7))
    assert identify([q], confirm=confirm) == [fmpq(2, 7)]
    assert q.refined == 2 and None not in seen  # 8 -> 16 -> 32 bits before the first candidate
    q = Late(Fraction(1, 2))
    assert identify([q], grid=parse_grid("float32")) == [fmpq(1, 2)] and q.refined == 2


def test_the_reported_precision_includes_first_balls_taken_at_128_bits():
    # fewer than 64 logits: no float guesses, so every logit's first ball is at 128 bits
    from exact import ExactOracle, SingleHead, learn_single_head

    r = learn_single_head(ExactOracle(SingleHead([[1, Fraction(1, 3)], [0, -1]], [1, 2])))
    assert r.precision == 128


def test_an_off_grid_value_names_both_causes_only_for_an_approximate_oracle():
    """v = 1/3 on grid rational:2: an exact oracle is simply off the grid; an approximate one
    may also be less accurate than it declares, and the message says so."""
    third = lambda X: float(np.asarray(X, dtype=float)[-1, 0]) / 3  # noqa: E731
    with pytest.raises(OracleInconsistent, match=r"^v\[0\]: .*the oracle's answers are less accurate"):
        learn_single_head(CallableOracle(third, d=1, accuracy="1e-12"), grid="rational:2")
    with pytest.raises(OracleInconsistent, match=r"^v\[0\]: .*the value is not on the declared grid$"):
        learn_single_head(ExactOracle(SingleHead([[0]], ["1/3"])), grid="rational:2")


def test_an_uncertifiable_ball_is_shown_to_six_significant_digits():
    third = lambda X: float(np.asarray(X, dtype=float)[-1, 0]) / 3  # noqa: E731
    with pytest.raises(PrecisionInsufficient, match=r"^v\[0\]: .*on grid dyadic:70 \(ball \[0\.333333, 0\.333333\]\); "):
        learn_single_head(CallableOracle(third, d=1, accuracy="1e-12"), grid="dyadic:70")


def test_a_guess_list_of_the_wrong_length_is_refused():
    with pytest.raises(InvalidArgument, match="2 guesses for 1 quantities"):
        identify([Known(Fraction(1, 3))], confirm=lambda values, pending: [], guesses=[fmpq(1), None])
