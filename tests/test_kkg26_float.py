"""Float mode of the [KKG26] learner: every result is refused or within its stated error estimate.

The measured error is computed here, from the true model's canonical form, never from the
learner's own numbers: the learned heads are matched one to one with the canonical true heads
(the best of all matchings) and the largest entry error of W and v is taken.  A result with
another number of heads than the truth's canonical form (heads merged or missing) has an
infinite error: it must be refused.
"""

import itertools
import random
from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, MultiHead, learn_multi_head
from exact.canonical import canonical_form
from exact.errors import PrecisionInsufficient
from exact.learn.multi_head import FLOAT_RESOLUTION, Probes
from exact.learn.multi_head_float import fit_block_float
from exact.learn.kkg_block import block_sequences
from exact.oracles import FloatOracle

F = Fraction

#: The issue's instance: d = 1, three heads with W = 3/4, −3/8, 5/8 (v = 1 each), probe seed 5.
REPRODUCER = MultiHead([([["3/4"]], [1]), ([["-3/8"]], [1]), ([["5/8"]], [1])], d=1)


def matched_error(learned: MultiHead, truth: MultiHead) -> float:
    """The largest entry error of W and v over the best one-to-one matching of the learned heads
    with the canonical true heads; infinite when the numbers of heads differ."""
    T = [h.to_numpy() for h in canonical_form(truth).heads]
    L = [h.to_numpy() for h in learned.heads]
    if len(T) != len(L):
        return float("inf")
    return min(
        (max((max(float(np.max(np.abs(T[t][0] - L[p[t]][0]))), float(np.max(np.abs(T[t][1] - L[p[t]][1]))))
              for t in range(len(T))), default=0.0)
         for p in itertools.permutations(range(len(L)))),
        default=0.0,
    )


def test_the_error_measure_on_known_pairs():
    truth = MultiHead([([[1]], [2]), ([[F(9, 8)]], [3])], d=1)
    assert matched_error(MultiHead([([[F(9, 8)]], [3]), ([[1]], [F(5, 2)])], d=1), truth) == 0.5  # order is free
    assert matched_error(MultiHead([([[F(9, 8)]], [3]), ([[F(5, 4)]], [2])], d=1), truth) == 0.25
    assert matched_error(MultiHead([([[1]], [5])], d=1), truth) == float("inf")  # merged: never within an estimate
    # a list that is not canonical is not the canonical form, though it has the same map
    assert matched_error(MultiHead([([[1]], [2]), ([[0]], [0]), ([[F(9, 8)]], [3])], d=1), truth) == float("inf")


def instances(n: int, seed: int) -> list:
    """``n`` seeded small instances: d = 1..3, H = 2..4, heads random, on a grid of eighths, or close
    (one base W plus steps of 1/4 down to 1/64), each with its probe seed."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        d, H = rng.randint(1, 3), rng.randint(2, 4)
        kind = rng.choice(("random", "grid", "close"))
        if kind == "random":
            model = MultiHead.random(d, H, seed=rng.randrange(10**6))
        else:
            base = [[F(rng.randint(-8, 8), 8) for _ in range(d)] for _ in range(d)]
            heads = []
            for _ in range(H):
                if kind == "grid":
                    W = [[F(rng.randint(-8, 8), 8) for _ in range(d)] for _ in range(d)]
                else:
                    step = F(1, 2 ** rng.randint(2, 6))
                    W = [[x + step * rng.randint(-3, 3) for x in row] for row in base]
                v = [F(rng.choice((-4, -3, -2, -1, 1, 2, 3, 4)), rng.choice((1, 2, 4))) for _ in range(d)]
                heads.append((W, v))
            model = MultiHead(heads, d=d)
        out.append((model, H, rng.randrange(1000)))
    return out


def sweep(cases) -> dict:
    """Learn every case in float mode from a float oracle and from an exact one: count refusals,
    acceptances, and the worst ratio of measured error to stated estimate."""
    figures = {"instances": 0, "refused": 0, "accepted": 0, "worst_ratio": 0.0, "violations": []}
    for model, H, seed in cases:
        for oracle in (FloatOracle(model), ExactOracle(model)):
            figures["instances"] += 1
            try:
                result = learn_multi_head(oracle, heads=H, mode="float", seed=seed)
            except PrecisionInsufficient:
                figures["refused"] += 1
                continue
            figures["accepted"] += 1
            error = matched_error(result.model, model)  # infinite for heads merged or missing
            ratio = error / result.error_estimate
            figures["worst_ratio"] = max(figures["worst_ratio"], ratio)
            if not error <= result.error_estimate:
                figures["violations"].append((model, H, seed, type(oracle).__name__, error, result.error_estimate))
    return figures


def test_the_reproducer_is_refused():
    """Three heads whose scores lie within 0.011 of each other in the one block d = 1 has: the
    answers fit two heads, whose estimate (1.5e-4) was about 470 times below their error."""
    for oracle in (FloatOracle(REPRODUCER), ExactOracle(REPRODUCER)):
        with pytest.raises(PrecisionInsufficient, match="fewer heads than the bound"):
            learn_multi_head(oracle, heads=3, mode="float", seed=5)


def test_the_reproducers_answers_fit_two_heads_and_three():
    """Why the refusal is needed: the block's float answers are reproduced within their errors by a
    two-head fit and by the three true heads, which differ by far more than that fit's estimate."""
    probes = Probes.draw(1, random.Random(5))
    q, w = probes.q[0], probes.w[0]
    u = (q[0] + w[0],)
    oracle = FloatOracle(REPRODUCER)
    answers = oracle.query_batch(block_sequences(u, q, range(7)))
    ys = np.array([float(a) for a in answers])
    errs = np.array([oracle.error_bound(a) for a in answers], dtype=float) + np.abs(ys) * np.finfo(float).eps
    two = fit_block_float(range(7), ys, errs, 2)  # at most two heads: accepted, with its estimate
    ks = np.arange(7.0)
    fitted = two.A - sum(c / (1 + ks * np.exp(s)) for s, c in zip(two.s, two.c))
    wq = float(w[0] * q[0])
    s_true = [wq * float(h.W[0][0]) for h in REPRODUCER.heads]
    c_true = [float(w[0] * h.v[0]) for h in REPRODUCER.heads]
    true = float(q[0] + w[0]) * 3 - sum(c / (1 + ks * np.exp(s)) for s, c in zip(s_true, c_true))
    tol = 8 * float(np.max(errs)) + 64 * np.finfo(float).eps * float(np.max(np.abs(ys)))
    assert np.max(np.abs(fitted - ys)) <= tol and np.max(np.abs(true - ys)) <= tol
    # the merged head sits between two true scores, farther from each than 500 times its estimate
    merged = max(two.s)
    assert min(abs(merged - s) for s in s_true) > 500 * max(two.s_err)


def test_float_sweep_holds_its_estimate_or_refuses():
    """30 seeded instances, each from a float and an exact oracle: refused, or within the estimate."""
    figures = sweep(instances(30, seed=0))
    assert figures["instances"] == 60 and figures["accepted"] >= 15, figures
    assert figures["violations"] == [] and figures["worst_ratio"] <= 1, figures


def test_a_float_result_states_the_head_bound_it_rests_on():
    """Float answers cannot refute a bound below the true number of heads: with heads=2 the three
    close heads of the reproducer come back as two, so the bound is stated, never checked away."""
    result = learn_multi_head(FloatOracle(REPRODUCER), heads=2, mode="float", seed=5)
    assert result.model.H == 2 and result.verification_queries > 0
    assert "among sums of at most 2 softmax heads without biases" in result.assumptions and FLOAT_RESOLUTION in result.assumptions
    assert matched_error(result.model, REPRODUCER) == float("inf")  # wrong, and the stated bound is why


@pytest.mark.slow
def test_float_sweep_holds_its_estimate_or_refuses_at_scale():
    figures = sweep(instances(300, seed=1))
    assert figures["instances"] == 600 and figures["accepted"] >= 150, figures
    assert figures["violations"] == [] and figures["worst_ratio"] <= 1, figures
