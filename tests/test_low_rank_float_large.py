"""Low-rank float mode at large d: probes as float64 offset pairs, results kept as factors, a real torch head."""

from fractions import Fraction

import numpy as np
import pytest

from exact import formulas
from exact.checks import check_sequences
from exact.learn import learn_low_rank
from exact.learn import low_rank_float
from exact.models import SingleHead
from exact.oracles import CallableOracle, FloatOracle
from exact.sequences import Sequence


def _head(d: int, r: int, seed: int = 0) -> SingleHead:
    rng = np.random.default_rng(seed)
    K, Q = rng.standard_normal((r, d)) / np.sqrt(d), rng.standard_normal((r, d)) / np.sqrt(d)
    return SingleHead(((K.T @ Q) / np.sqrt(r)).tolist(), rng.standard_normal(d).tolist())


def test_a_float_offset_pair_is_sent_as_it_is_and_recorded_as_what_was_sent():
    base = Sequence._floats(np.array([[0.5, 0.25, -0.125]]))
    seen = []

    def fn(X):
        seen.append(X.copy())
        return float(X[-1].sum())

    oracle = CallableOracle(fn, d=3, accuracy="1e-15")
    exact_pair = Sequence._offset_pair(base, ((0, Fraction(1, 2)), (2, Fraction(-1, 4))))
    assert exact_pair._float64_exact() is True
    oracle.query(exact_pair)
    assert seen[-1].tolist() == [[1.0, 0.25, -0.375], [0.5, 0.25, -0.125]]
    assert oracle.transcript[-1].X is exact_pair  # float64 already: sent and kept as it is
    assert exact_pair.to_numpy().tolist() == [[float(x) for x in row] for row in exact_pair.dense()]
    rounded = Sequence._offset_pair(base, ((1, Fraction(1, 3)),))  # 1/4 + 1/3 is not a float64: rounded once
    assert rounded._float64_exact() is False
    oracle.query(rounded)
    assert seen[-1][0, 1] == float(Fraction(7, 12)) and oracle.transcript[-1].X != rounded
    assert oracle.transcript[-1].X == Sequence.from_rows(seen[-1])  # the record is what the function saw


def test_check_sequences_take_a_given_magnitude_in_place_of_the_exact_one():
    head = SingleHead([[64, 0], [0, 1]], [1, 1])
    assert head.magnitude_bits() == head.float_magnitude_bits() == 7
    same = check_sequences(head, 2, 5) == check_sequences(head, 2, 5, magnitude=7)
    assert same and check_sequences(head, 2, 5, magnitude=0) != check_sequences(head, 2, 5)


@pytest.mark.parametrize("biases", [False, True])
def test_beyond_the_dense_size_the_float_result_is_kept_as_factors_within_its_estimate(monkeypatch, biases):
    d, r = 24, 3
    truth = _head(d, r, seed=4)
    if biases:
        rng = np.random.default_rng(9)
        truth = SingleHead(truth.W, truth.v, c=(rng.standard_normal(d) / 4).tolist(), b=0.75)
    dense = learn_low_rank(FloatOracle(truth), rank=r, mode="float", seed=3, biases=biases)
    monkeypatch.setattr(low_rank_float, "DENSE_ENTRIES", 0)
    oracle = FloatOracle(truth)
    res = learn_low_rank(oracle, rank=r, mode="float", seed=3, biases=biases)
    m = res.model
    assert "_factors" in m.__dict__ and "W" not in m.__dict__  # the float checks ran on the float view
    assert res.queries == formulas.LOW_RANK(d=d, r=r) + (d + 1 if biases else 0)
    assert res.verification_queries == 2 and oracle.count == res.queries + 2
    W, Wt, Wd = (np.array(x.to_numpy()[0]) for x in (m, truth, dense.model))
    assert np.abs(W - Wt).max() <= res.error_estimate
    assert np.abs(W - Wd).max() <= 1e-12  # the same plan: the factors' product is the dense estimate
    assert np.abs(m._float_view[0] - W).max() <= 1e-14 * np.abs(W).max()
    if biases:
        assert abs(float(m.b) - 0.75) <= res.error_estimate
        c, ct = (np.array([float(x) for x in h.c]) for h in (m, truth))
        assert np.abs(c - ct).max() <= res.error_estimate


def test_a_real_torch_head_of_separate_projections_through_a_batched_callable():
    torch = pytest.importorskip("torch")
    d, r = 48, 4
    torch.manual_seed(3)
    q, k, v = (torch.nn.Linear(d, r, bias=False, dtype=torch.float64).eval() for _ in range(3))
    w = torch.randn(r, dtype=torch.float64)

    def answer(X):
        x = torch.from_numpy(X)
        with torch.no_grad():
            a = torch.nn.functional.scaled_dot_product_attention(q(x[:, -1:]), k(x), v(x))
            return (a[:, 0] @ w).numpy()

    Wt = (k.weight.T @ q.weight).detach().numpy() / np.sqrt(r)  # independent of the learner
    vt = (v.weight.T @ w).detach().numpy()
    oracle = CallableOracle(answer, d=d, accuracy="1e-13", batched=True)
    res = learn_low_rank(oracle, rank=r, seed=2)
    W, vl = res.model.to_numpy()
    assert res.mode == "float" and res.queries == formulas.LOW_RANK(d=d, r=r)
    assert max(np.abs(W - Wt).max(), np.abs(vl - vt).max()) <= res.error_estimate
    assert np.linalg.norm(W - Wt) <= 1e-8 * np.linalg.norm(Wt)
    assert "among heads of rank <= 4" in res.assumptions


def test_float_tokens_are_sent_as_their_rows_say_for_signed_zeros_repeated_offsets_and_non_finite_entries():
    """Review regressions: -0.0 is sent as 0.0 (the recorded rows cannot tell them apart); an offset
    touching an entry twice adds both; a float32 base is taken as float64; NaN is refused."""
    from exact.errors import InvalidNumber

    got = []
    oracle = CallableOracle(lambda X: got.append(X.copy()) or float(np.signbit(X).sum()), d=2, accuracy=0)
    base = Sequence._floats(np.array([[-0.0, 1.0]]))
    assert oracle.query(Sequence._offset_pair(base, ((1, Fraction(1)),))) == 0
    twice = Sequence._offset_pair(Sequence._floats(np.array([[1.0, 2.0]], dtype=np.float32)),
                                  ((0, Fraction(1)), (0, Fraction(1))))
    oracle.query(twice)
    assert got[-1].dtype == np.float64 and got[-1].tolist() == [[3.0, 2.0], [1.0, 2.0]]
    assert oracle.transcript[-1].X == Sequence.from_rows(got[-1])
    tiny = Sequence._offset_pair(Sequence._floats(np.array([[0.0, 1.0]])), ((0, Fraction(-1, 2**1100)),))
    oracle.query(tiny)  # underflows to zero: rounded once, sent as 0.0
    assert not np.signbit(got[-1]).any() and oracle.transcript[-1].X == Sequence.from_rows(got[-1])
    with pytest.raises(InvalidNumber, match="not finite"):
        Sequence._floats(np.array([[np.nan, 1.0]]))


def test_a_one_factor_chain_has_its_own_size():
    from exact.linalg import QMatrix

    F = QMatrix.from_rows([[2, 0], [0, 3]])
    h = SingleHead._from_factors((F,), [Fraction(1), Fraction(1)])
    assert h._w_size() == SingleHead([[2, 0], [0, 3]], [1, 1])._w_size() == (3, 1)
