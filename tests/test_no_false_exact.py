"""Regression tests: no wrong result is ever labelled exact.

Each test reproduces a way in which an earlier version returned a wrong model with
``exact=True`` and a holding certificate, and checks it no longer can.
"""

from fractions import Fraction

import numpy as np
import pytest

from exact import CallableOracle, SingleHead, learn_single_head
from exact.errors import ExactAttentionError, InvalidNumber
from exact.numbers import to_fraction


# -- A1: answers wider than float64 are taken at their exact value ----------------------


def test_longdouble_is_converted_exactly_not_through_float64():
    x = np.longdouble(1) / 3
    p, q = x.as_integer_ratio()
    assert to_fraction(x) == Fraction(p, q)
    if np.finfo(np.longdouble).nmant > 52:  # a genuinely wider type on this platform
        assert to_fraction(x) != Fraction(float(x))


def test_zero_dimensional_array_is_a_scalar():
    assert to_fraction(np.array(2.5)) == Fraction(5, 2)
    assert to_fraction(np.array(np.longdouble(1) / 3)) == to_fraction(np.longdouble(1) / 3)
    with pytest.raises(InvalidNumber, match="expected a scalar, got an array of shape"):
        to_fraction(np.array([1.0]))
    with pytest.raises(InvalidNumber, match="expected a finite real number"):
        to_fraction(np.longdouble("nan"))


@pytest.mark.skipif(np.finfo(np.longdouble).nmant <= 52, reason="longdouble is float64 here")
def test_longdouble_callable_on_a_fine_dyadic_grid_is_never_wrong():
    """accuracy 1e-18, grid dyadic:55: an answer rounded to float64 used to give wrong exact heads."""
    outcomes = {"exact": 0, "refused": 0}
    for seed in range(40):
        truth = SingleHead.random(1, seed=seed, grid="dyadic:55", bound=1)

        def fn(X, truth=truth):
            y = truth.ball([[to_fraction(float(r[0]))] for r in X], prec=300)
            return np.longdouble(y.mid().str(40, radius=False))

        try:
            result = learn_single_head(CallableOracle(fn, d=1, accuracy="1e-18"), grid="dyadic:55")
        except ExactAttentionError:
            outcomes["refused"] += 1
            continue
        assert result.model == truth, f"seed {seed}: a wrong head was labelled exact"
        outcomes["exact"] += 1
    assert outcomes["exact"] >= 10  # the test exercises the exact path, not only refusals
