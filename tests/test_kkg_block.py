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

