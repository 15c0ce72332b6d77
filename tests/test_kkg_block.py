"""The [KKG26] block: poles and residues of f([u,…,u, q]) in k, identified exactly."""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, MultiHead
from exact.errors import OracleInconsistent, PrecisionInsufficient
from exact.learn.kkg_block import block_sequences, identify_block


def _expected(model, u, q):
    """``A`` and the canonical ``(s, c)`` pairs of the block, from the parameters."""
    uq = [Fraction(a) - Fraction(b) for a, b in zip(u, q)]
    merged = {}
    for h in model.heads:
        Wq = [sum((h.W[i][j] * Fraction(q[j]) for j in range(model.d)), Fraction(0)) for i in range(model.d)]
        s = sum((a * b for a, b in zip(uq, Wq)), Fraction(0))
        c = sum((a * b for a, b in zip(uq, h.v)), Fraction(0))
        merged[s] = merged.get(s, Fraction(0)) + c
    A = sum((Fraction(x) * v for h in model.heads for x, v in zip(u, h.v)), Fraction(0))
    return A, tuple(sorted((s, c) for s, c in merged.items() if c))


@pytest.mark.parametrize("d, H", [(1, 2), (2, 2), (3, 3), (4, 4), (5, 3)])
def test_random_blocks_are_identified_exactly(d, H):
    rng = np.random.default_rng(d * 10 + H)
    for seed in range(3):
        model = MultiHead.random(d, H, seed=seed)
        u = [int(x) for x in rng.integers(-2, 3, size=d)]
        q = [int(x) for x in rng.integers(-2, 3, size=d)]
        oracle = ExactOracle(model)
        fit = identify_block(list(enumerate(oracle.query_batch(block_sequences(u, q, range(2 * H + 1))))), H)
        assert (fit.A, fit.heads) == _expected(model, u, q)
        assert oracle.count == 2 * H + 1 and oracle.max_length == 2 * H + 1


def test_equal_scores_merge_zero_values_vanish_and_an_upper_bound_on_h_suffices():
    W = [[1, 0], [0, 2]]
    model = MultiHead([(W, [1, 0]), (W, [0, 3]), ([[0, 1], [1, 0]], [0, 0])])  # same W twice; a zero v
    u, q = [1, 2], [1, -1]
    for H in (2, 3, 4):
        fit = identify_block(list(enumerate(ExactOracle(model).query_batch(block_sequences(u, q, range(2 * H + 1))))), H)
        assert (fit.A, fit.heads) == _expected(model, u, q) and len(fit.heads) == 1


def test_more_heads_than_the_bound_is_refused_not_misfit():
    model = MultiHead.random(3, 3, seed=1)
    u, q = [1, 0, -1], [0, 1, 1]
    answers = ExactOracle(model).query_batch(block_sequences(u, q, range(3)))
    with pytest.raises(OracleInconsistent, match="more than 1 canonical heads"):
        identify_block(list(enumerate(answers)), 1, max_prec=1024)
    # below CONCLUSIVE_PREC a failure says precision may be the cause, never blames the oracle
    with pytest.raises(PrecisionInsufficient, match="raise max_prec"):
        identify_block(list(enumerate(answers)), 1, max_prec=256)


def test_unconverged_poles_are_a_precision_failure_not_an_inconsistent_oracle():
    model = MultiHead([([[3000, 0], [0, 1]], [1, 2]), ([[1, 1], [0, 1]], [1, -1])])  # scores near −2600
    u, q = [1, 0], [Fraction(-7, 8), Fraction(1, 3)]
    answers = ExactOracle(model).query_batch(block_sequences(u, q, range(5)))
    with pytest.raises(PrecisionInsufficient, match="not resolved"):
        identify_block(list(enumerate(answers)), 2, max_prec=8192)



def _block(model, u, q, ks):
    return list(zip(ks, ExactOracle(model).query_batch(block_sequences(u, q, ks))))


def test_a_known_limit_and_a_known_value_at_zero_replace_queries():
    from exact.learn.kkg_block import model_block

    model = MultiHead.random(3, 3, seed=4)
    u, q = [Fraction(1, 3), -1, 2], [Fraction(-1, 2), 1, Fraction(1, 5)]
    truth = model_block(model, u, q)
    y0 = truth.A - sum((c for _, c in truth.heads), Fraction(0))
    H = 3
    full = identify_block(_block(model, u, q, range(2 * H + 1)), H)
    with_A = identify_block(_block(model, u, q, range(1, 2 * H + 1)), H, A=truth.A)  # 2H samples + A
    both = identify_block([(0, y0)] + _block(model, u, q, range(1, 2 * H)), H, A=truth.A)  # 2H − 1 + A + y0
    assert (full.A, full.heads) == (with_A.A, with_A.heads) == (both.A, both.heads) == (truth.A, truth.heads)
    # a wrong known value is never fitted
    for kwargs, samples in (
        ({"A": truth.A + Fraction(1, 10**9)}, _block(model, u, q, range(1, 2 * H + 1))),
        ({"A": truth.A}, [(0, y0 + Fraction(1, 10**9))] + _block(model, u, q, range(1, 2 * H))),
    ):
        with pytest.raises((OracleInconsistent, PrecisionInsufficient)):
            identify_block(samples, H, max_prec=2048, **kwargs)


def test_too_few_samples_are_refused():
    model = MultiHead.random(2, 2, seed=0)
    with pytest.raises(ValueError, match="at least 5"):
        identify_block(_block(model, [1, 0], [0, 1], range(4)), 2)
    with pytest.raises(ValueError, match="distinct"):
        identify_block(_block(model, [1, 0], [0, 1], [0, 1, 1, 2, 3]), 2)


def test_symbolic_and_certified_confirmation_agree():
    from exact.learn.kkg_block import _Candidate, certified_equals, model_block, symbolic_equals

    model = MultiHead.random(2, 3, seed=1, duplicate_w=True)
    u, q = [Fraction(3, 4), -1], [Fraction(1, 2), Fraction(2, 3)]
    truth = model_block(model, u, q)
    for k, answer in _block(model, u, q, range(5)):
        right = _Candidate(truth.A, truth.heads, k)
        wrong_c = _Candidate(truth.A, tuple((s, c + Fraction(1, 10**12)) for s, c in truth.heads), k)
        wrong_s = _Candidate(truth.A, tuple((s + Fraction(1, 10**12), c) for s, c in truth.heads), k)
        assert certified_equals(answer, right) and symbolic_equals(answer, right)
        assert not certified_equals(answer, wrong_c) and not symbolic_equals(answer, wrong_c)
        # at k = 0 the scores do not matter: f([q]) = A − Σ c
        assert certified_equals(answer, wrong_s) == symbolic_equals(answer, wrong_s) == (k == 0)
