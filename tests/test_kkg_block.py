"""The [KKG26] block: poles and residues of f([u,…,u, q]) in k, identified exactly."""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, MultiHead
from exact.errors import OracleInconsistent, PrecisionInsufficient
from exact.learn.kkg_block import block_sequences, identify_block
from exact.sequences import Sequence


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
    with pytest.raises(OracleInconsistent, match="resolved at 16384 bits"):  # the default largest precision
        identify_block(list(enumerate(answers)), 1)
    # below CONCLUSIVE_PREC a failure says precision may be the cause, never blames the oracle
    for below in (256, 1023):
        with pytest.raises(PrecisionInsufficient, match="raise max_prec"):
            identify_block(list(enumerate(answers)), 1, max_prec=below)


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
        # a wrong value on either side of the truth is refused: equality, not an order
        for delta in (Fraction(1, 10**12), Fraction(-1, 10**12), 1, -1, 100, -100):
            for wrong in (_Candidate(truth.A + delta, truth.heads, k),
                          _Candidate(truth.A, tuple((s, c + delta) for s, c in truth.heads), k)):
                assert not certified_equals(answer, wrong) and not symbolic_equals(answer, wrong)
        # at k = 0 the scores do not matter: f([q]) = A − Σ c
        assert certified_equals(answer, wrong_s) == symbolic_equals(answer, wrong_s) == (k == 0)


def test_block_sequences_are_k_copies_of_u_then_q():
    seqs = block_sequences([1, 0, Fraction(1, 2)], [0, -1, 0], [0, 1, 3])
    assert [s.length for s in seqs] == [1, 2, 4]
    assert seqs[2] == Sequence.from_rows([[1, 0, Fraction(1, 2)]] * 3 + [[0, -1, 0]])
    assert seqs[0] == Sequence.from_rows([[0, -1, 0]])


def test_a_known_block_merges_equal_scores_and_drops_cancelled_values():
    from exact.learn.kkg_block import model_block

    W = [[1, 0], [0, 2]]
    # two heads with one score whose values cancel in this block, and a third head
    model = MultiHead([(W, [1, 1]), (W, [-1, -1]), ([[0, 1], [1, 0]], [2, -1])])
    u, q = [1, 1], [1, 0]  # w = u − q = (0, 1): s = 0, c = 1 and −1 for the first two; s = 1, c = −1 for the third
    fit = model_block(model, u, q)
    assert fit.A == Fraction(2 - 2 + 1) and fit.heads == ((Fraction(1), Fraction(-1)),)
    assert (fit.A, fit.heads) == _expected(model, u, q)
    answers = ExactOracle(model).query_batch(block_sequences(u, q, range(5)))
    got = identify_block(list(enumerate(answers)), 2)
    assert (got.A, got.heads) == (fit.A, fit.heads)


def test_a_block_value_is_the_rational_function_of_k():
    from exact.expfield import ExpRatio, ExpSum
    from exact.learn.kkg_block import block_value, rational_value

    A, heads = Fraction(3), ((Fraction(0), Fraction(1, 2)), (Fraction(1), Fraction(2)))
    assert rational_value(A, heads, 0) == Fraction(1, 2)
    assert block_value(A, heads, 0) == ExpSum([ExpRatio.rational(Fraction(1, 2))])
    assert rational_value(A, heads, 2) is None and rational_value(A, (), 5) == 3
    # e^0 = 1: at k = 2 the first head gives 1/2 / 3; the second 2 / (1 + 2e)
    from flint import arb

    value = block_value(A, heads, 2).ball(128)
    assert value.overlaps(3 - arb(1) / 6 - 2 / (1 + 2 * arb(1).exp()))
    assert not value.overlaps(3 - arb(1) / 6 - 2 / (1 + 2 * arb(1).exp()) + arb(2) ** -30)


def test_known_rational_values_at_any_k_are_fitted_and_a_wrong_one_refused():
    """A head of score 0 gives rational values at every k: they are confirmed as rationals."""
    A, c = Fraction(5, 3), Fraction(-7, 2)
    values = [(k, A - c / (1 + k)) for k in range(3)]
    fit = identify_block(values, 1)
    assert (fit.A, fit.heads, fit.prec) == (A, ((Fraction(0), c),), 64)
    assert identify_block(values, 1, prec=256).prec == 256  # the precision that identified it
    wrong = values[:2] + [(2, values[2][1] + Fraction(1, 7))]
    with pytest.raises((OracleInconsistent, PrecisionInsufficient)):
        identify_block(wrong, 1, max_prec=1024)
    with pytest.raises(ValueError, match="at least 2 at distinct k"):
        identify_block(values[:1], 1, A=A)


def test_poles_that_no_softmax_head_has_are_refused():
    """Softmax heads give poles at k = −e^{−s} < 0: a positive or a complex pole refutes the block."""
    positive = [(k, 1 / (1 - Fraction(k, 10))) for k in range(3)]  # pole at k = 10
    complex_ = [(k, Fraction(1, 1 + k * k)) for k in range(5)]  # poles at ±i
    for samples, H in ((positive, 1), (complex_, 2)):
        with pytest.raises(OracleInconsistent, match="no sum of at most"):
            identify_block(samples, H, max_prec=1024)
        with pytest.raises(PrecisionInsufficient, match="raise max_prec"):  # below 1024 bits: never conclusive
            identify_block(samples, H, max_prec=512)


def test_a_visible_miss_of_a_known_value_refutes_the_block_and_a_hidden_one_asks_for_precision():
    """A wrong known value (the value at k = 0, or the limit A) missed by far more than the working
    precision proves the block inconsistent; a miss below every precision tried is what an unresolved
    pole looks like, so it is reported as a precision failure, never blamed on the oracle."""
    from exact.learn.kkg_block import model_block

    model = MultiHead.random(3, 3, seed=4)
    u, q = [Fraction(1, 3), -1, 2], [Fraction(-1, 2), 1, Fraction(1, 5)]
    truth = model_block(model, u, q)
    y0 = truth.A - sum((c for _, c in truth.heads), Fraction(0))
    H = 3
    for visible, error in ((Fraction(1, 7), OracleInconsistent), (Fraction(1, 2**2000), PrecisionInsufficient)):
        with pytest.raises(error):
            identify_block([(0, y0 + visible)] + _block(model, u, q, range(1, 2 * H)), H, A=truth.A, max_prec=1024)
        with pytest.raises(error):
            identify_block(_block(model, u, q, range(1, 2 * H + 1)), H, A=truth.A + visible, max_prec=1024)


def test_a_known_value_is_refuted_only_by_a_miss_above_half_the_working_precision():
    """Fitted on answers alone (the known value last), the candidate is the truth; a known value it
    misses by more than 2^-(prec/2) at the largest precision refutes the block, a smaller miss is
    reported as a precision failure."""
    from exact.learn.kkg_block import model_block

    model = MultiHead.random(3, 3, seed=4)
    u, q = [Fraction(1, 3), -1, 2], [Fraction(-1, 2), 1, Fraction(1, 5)]
    truth = model_block(model, u, q)
    y0 = truth.A - sum((c for _, c in truth.heads), Fraction(0))
    answers = _block(model, u, q, range(1, 8))
    assert identify_block(answers + [(0, y0)], 3).heads == truth.heads
    for bits, error in ((450, OracleInconsistent), (600, PrecisionInsufficient)):  # 1024 bits: 2^-512
        with pytest.raises(error):
            identify_block(answers + [(0, y0 + Fraction(1, 2**bits))], 3, max_prec=1024)


def test_a_fit_records_the_precision_that_identified_it():
    from exact.learn.kkg_block import model_block

    model = MultiHead.random(2, 2, seed=4)
    u, q = [1, -1], [2, 1]
    assert model_block(model, u, q).prec == 0  # computed exactly from the model: no working precision
    samples = list(enumerate(ExactOracle(model).query_batch(block_sequences(u, q, range(5)))))
    fit = identify_block(samples, 2, prec=64)
    assert (fit.A, fit.heads) == (model_block(model, u, q).A, model_block(model, u, q).heads)
    assert fit.prec >= 64 and fit.prec % 64 == 0 and (fit.prec // 64) & (fit.prec // 64 - 1) == 0  # 64·2^j
