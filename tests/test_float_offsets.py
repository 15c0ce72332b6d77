"""Each hyperplane's offset read a second time where the plane crosses its normal near the origin
(exact.learn.float_offsets): the second reading lies within its own estimate of the truth, replaces
the first only where its estimate is smaller, contradicts a wrong first reading, and a segment that
shows a kink the rows do not hold leaves the first reading."""

from __future__ import annotations

import numpy as np
import pytest

from exact.errors import PrecisionInsufficient
from exact.ffn import ReLUFFN
from exact.learn import learn_ffn
from exact.learn.float_offsets import refine_offsets
from exact.oracles import FloatOracle


def _asker(net: ReLUFFN):
    """Float64 answers of ``net`` with a declared error of 2^-50 relative (above float64's own)."""
    A = np.array([[float(x) for x in r] for r in net.A])
    a = np.array([float(x) for x in net.a])
    w = np.array([float(x) for x in net.w])
    calls = []

    def ask(X):
        X = np.asarray(X, dtype=np.float64)
        calls.append(len(X))
        y = np.maximum(X @ A.T + a, 0.0) @ w + float(net.b)
        return y, 2.0**-50 * (1.0 + np.abs(np.maximum(X @ A.T + a, 0.0)) @ np.abs(w))

    return ask, calls


def _rows(net: ReLUFFN) -> np.ndarray:
    """The true rows (normal, offset) with each normal's largest entry 1, in float64."""
    A = np.array([[float(x) for x in r] for r in net.A])
    a = np.array([float(x) for x in net.a])
    big = A[np.arange(len(A)), np.argmax(np.abs(A), axis=1)]
    return np.hstack([A, a[:, None]]) / big[:, None]


def _kinks(net: ReLUFFN) -> tuple[np.ndarray, np.ndarray]:
    """The kinks κ = w·|largest entry|/2 of those rows (w·ReLU(z) = (w/2)(z + |z|)), with a tiny error."""
    A = np.array([[float(x) for x in r] for r in net.A])
    w = np.array([float(x) for x in net.w])
    k = w * np.abs(A).max(axis=1) / 2
    return k, np.abs(k) * 1e-12


def test_a_far_offset_is_read_again_near_the_origin_within_its_estimate():
    # a plane 40 away from the origin along the search line's stand-in: its first reading's offset error
    # is the normal's error times 40; the second reading's is far smaller, and both hold the truth
    net = ReLUFFN([[1, "1/3", "-1/5"], ["-1/2", 1, "1/7"], ["1/4", "-1/3", 1]], [1, "-3/2", 2], ["1/10", -2, "1/3"], 1)
    true = _rows(net)
    ask, calls = _asker(net)
    Ne = np.full_like(true, 1e-9)
    Ne[:, -1] = 4e-8  # first readings: normals to 1e-9, offsets to 40× that
    first = true.copy()
    first[:, -1] += 3e-8  # offsets off by less than their stated error
    N, E, refined = refine_offsets(ask, first, Ne, *_kinks(net))
    assert refined == 3 and sum(calls) == 9 * 3
    assert (np.abs(N[:, -1] - true[:, -1]) <= E[:, -1]).all()
    assert (E[:, -1] < 1e-8).all() and (np.abs(N[:, -1] - true[:, -1]) < 1e-13).all()
    assert (N[:, :-1] == first[:, :-1]).all() and (E[:, :-1] == Ne[:, :-1]).all()  # normals untouched


def test_a_better_first_reading_is_kept():
    net = ReLUFFN([[1, "1/3"], ["-1/2", 1]], [1, 2], ["1/10", -1], 0)
    true = _rows(net)
    ask, _ = _asker(net)
    Ne = np.full_like(true, 1e-30)  # a first reading stated better than any second one can be
    N, E, refined = refine_offsets(ask, true, Ne, *_kinks(net))
    assert refined == 0 and (N == true).all() and (E == Ne).all()


def test_a_first_reading_outside_its_estimate_is_contradicted():
    net = ReLUFFN([[1, "1/3"], ["-1/2", 1]], [1, 2], ["1/10", -1], 0)
    wrong = _rows(net)
    wrong[1, -1] += 1e-6
    ask, _ = _asker(net)
    with pytest.raises(PrecisionInsufficient, match="offset read at two crossings"):
        refine_offsets(ask, wrong, np.full_like(wrong, 1e-9), *_kinks(net))


def test_a_kink_the_rows_do_not_hold_leaves_the_first_reading():
    # the second unit's plane x₁ + x₂ = 1/2 crosses the first plane's normal line (the x₁ axis) at 1/2,
    # inside the segment the rows (which omit it) leave: two kinks say nothing of o₁, which keeps its
    # first reading (finding units the line missed is the off-line checks' job)
    net = ReLUFFN([[1, 0], [1, 1]], [1, 1], [0, "-1/2"], 0)
    rows = _rows(net)[:1]
    ask, calls = _asker(net)
    N, E, refined = refine_offsets(ask, rows, np.full_like(rows, 1e-9), *(x[:1] for x in _kinks(net)))
    assert refined == 0 and (N == rows).all() and sum(calls) > 0


def test_planes_through_the_origin_are_read_beside_it():
    # bias-free: every plane holds the origin, so the foot leaves no room; a point beside it does
    net = ReLUFFN([[1, "1/3", 0], ["-1/2", 1, "1/5"], [0, "1/4", 1]], [1, -1, 2], [0, 0, 0], 0)
    true = _rows(net)
    ask, _ = _asker(net)
    Ne = np.full_like(true, 1e-12)
    N, E, refined = refine_offsets(ask, true, Ne * 1e4, *_kinks(net))
    assert refined == 3 and (np.abs(N[:, -1]) <= E[:, -1]).all() and (E[:, -1] < 1e-8).all()


def test_the_learner_reads_offsets_twice_and_says_so():
    net = ReLUFFN.random(8, 6, seed=3, biases=True)
    r = learn_ffn(FloatOracle(net), m=6, mode="float", seed=0, check_seed=0)
    assert 0 < r.details.offsets_refined <= 6
    assert any(k == "offsets" for k, _ in r.details.rows(r))
