"""The batched replay of offset probes (``SingleHead._offset_pairs``) and batched answer floats.

A replay decides whether a model reproduces every recorded answer; the batched path computes the
model's side of all offset probes ``[b + Δ; b]`` with two flint matrix products.  These tests hold
it to the per-probe path (``SingleHead._pair``) entry by entry, and hold the replay's verdicts to an
independent one (each answer against the model's exp-ratio, one query at a time).
"""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, SingleHead, learn_single_head
from exact.certify import failed_entries
from exact.learn.single_head import ProbePlan
from exact.oracles import answer_equals, answer_floats
from exact.sequences import Sequence


def _probes(d, rng, n_bases=4, n_deltas=5, dense_bases=True):
    """Offset probes over a few shared bases and shared offsets (some naming an index twice)."""
    bases = []
    for _ in range(n_bases):
        if dense_bases:
            row = {j: Fraction(int(rng.integers(-5, 6)), int(rng.integers(1, 4))) for j in range(d)}
        else:
            row = {int(rng.integers(d)): Fraction(int(rng.integers(1, 4)))}
        bases.append(Sequence.sparse(d, [{j: x for j, x in row.items() if x}]))
    deltas = []
    for _ in range(n_deltas):
        k = int(rng.integers(1, 4))
        deltas.append(tuple((int(rng.integers(d)), Fraction(int(rng.integers(-4, 5)) or 1, int(rng.integers(1, 5))))
                            for _ in range(k)))
    return [Sequence._offset_pair(b, delta) for b in bases for delta in deltas]


@pytest.mark.parametrize("biases", [False, True])
@pytest.mark.parametrize("dense_bases", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_offset_pairs_equal_the_per_probe_pairs(seed, biases, dense_bases):
    rng = np.random.default_rng(seed)
    head = SingleHead.random(6, seed=seed, biases=biases)
    Xs = _probes(6, rng, dense_bases=dense_bases)
    got = head._offset_pairs(Xs)
    assert got is not None and len(got) == len(Xs)
    assert got == [head._pair(X) for X in Xs]


def test_offset_pairs_leave_other_queries_to_the_per_probe_path():
    head = SingleHead.random(4, seed=1)
    rng = np.random.default_rng(1)
    Xs = _probes(4, rng, n_bases=2, n_deltas=2)
    plain = Sequence.from_rows([[1, 0, 0, 0], [0, 1, 0, 0]])
    other_d = Sequence._offset_pair(Sequence.sparse(5, [{0: Fraction(1)}]), ((1, Fraction(1)),))
    got = head._offset_pairs(Xs + [plain, other_d])
    assert got[-2:] == [None, None]
    assert got[:-2] == [head._pair(X) for X in Xs]


def test_offset_pairs_decline_when_they_would_not_pay():
    head = SingleHead.random(4, seed=2)
    rng = np.random.default_rng(2)
    Xs = _probes(4, rng, n_bases=5, n_deltas=5)
    sparse_choice = [Xs[i * 6] for i in range(5)]  # 5 of the 25 offset × base pairs: fewer than a quarter
    assert head._offset_pairs(sparse_choice) is None
    assert head._offset_pairs([Sequence.from_rows([[1, 2, 3, 4]])]) is None  # no offset probe at all


def test_offset_pairs_decline_for_a_head_kept_as_factors():
    head = SingleHead.random(8, seed=3, rank=2)
    assert "_factors" in head.__dict__
    Xs = _probes(8, np.random.default_rng(3))
    assert head._offset_pairs(Xs) is None


@pytest.mark.parametrize("seed", range(3))
def test_batched_replay_flags_exactly_the_entries_a_wrong_model_misses(seed):
    """Change one entry of W (or v): the replay fails exactly the answers that entry reaches, as an
    independent per-query decision on the exp-ratio forms finds."""
    d = 5
    truth = SingleHead.random(d, seed=seed)
    oracle = ExactOracle(truth)
    result = learn_single_head(oracle, check_seed=0)
    entries = result.certificate.transcript
    assert failed_entries(result.model, entries) == []
    rng = np.random.default_rng(seed)
    for _ in range(3):
        W = [list(r) for r in truth.W]
        k, j = (int(x) for x in rng.integers(d, size=2))
        W[k][j] += Fraction(1, 3)
        for wrong in (SingleHead(W, truth.v), SingleHead(truth.W, [x + (i == j) for i, x in enumerate(truth.v)])):
            expected = [i for i, q in enumerate(entries) if not answer_equals(q.answer, wrong.exact(q.X))]
            assert expected  # the change is seen by some probe
            assert wrong._offset_pairs([q.X for q in entries]) is not None  # the batched path decides
            assert failed_entries(wrong, entries) == expected


def test_batched_replay_of_a_biased_head():
    truth = SingleHead.random(4, seed=5, biases=True)
    oracle = ExactOracle(truth)
    plan = ProbePlan.choose(list(truth.v))
    seqs = plan.sequences()
    answers = oracle.query_batch(seqs)
    entries = oracle.transcript
    assert all(a is q.answer for a, q in zip(answers, entries))
    assert failed_entries(truth, entries) == []
    off = SingleHead(truth.W, truth.v, c=[x + 1 for x in truth.c], b=truth.b)
    expected = [i for i, q in enumerate(entries) if not answer_equals(q.answer, off.exact(q.X))]
    assert expected and failed_entries(off, entries) == expected


def test_answer_floats_match_float_of_each_answer():
    head = SingleHead.random(6, seed=7, bound=40)  # large logits: one side's exponential underflows
    oracle = ExactOracle(head)
    seqs = ProbePlan.choose(list(head.v)).sequences() + [Sequence.from_rows([[1, 0, 2, 0, 0, 1]] * 3)]
    answers = oracle.query_batch(seqs) + [2.5, Fraction(-1, 3)]
    got = answer_floats(answers)
    want = np.array([float(a) for a in answers])
    assert got.shape == want.shape
    assert np.all(np.abs(got - want) <= 4 * np.finfo(float).eps * np.maximum(1.0, np.abs(want)))


@pytest.mark.parametrize("index", [-1, 3])
def test_offset_pairs_refuse_an_index_outside_the_token(index):
    """An offset index outside 0..d-1 would land in another probe's row of the table: the batch is
    left to the per-probe path, which cannot evaluate it."""
    d = 3
    head = SingleHead([[1, 2, 0], [0, 1, 3], [2, 0, 1]], [0, 1, 2])
    base = Sequence.sparse(d, [{0: Fraction(1), 1: Fraction(1)}])
    honest = Sequence._offset_pair(base, ((1, Fraction(1)),))
    forged = Sequence._offset_pair(base, ((index, Fraction(-1, 3)),))
    assert head._offset_pairs([forged, honest]) is None
    assert head._offset_pairs([honest, honest]) == [head._pair(honest)] * 2


@pytest.mark.parametrize("block", [1, 2, 5, 7, 1 << 16])
def test_offset_table_blocks_give_the_whole_table(block):
    """The tables come a block of bases at a time; any block size gives the same entries."""
    from flint import fmpq

    from exact.linalg import QMatrix, offset_table

    rng = np.random.default_rng(block)
    K, d, M = 3, 4, 5
    q = lambda: fmpq(int(rng.integers(-5, 6)), int(rng.integers(1, 4)))  # noqa: E731
    W = QMatrix(d, d, [q() for _ in range(d * d)])
    deltas, bases, v, c = [q() for _ in range(K * d)], [q() for _ in range(d * M)], [q() for _ in range(d)], [q() for _ in range(d)]
    whole = list(offset_table(W, deltas, bases, v, shape=(K, d, M), c=c, bias=fmpq(2), block=1 << 20))
    assert len(whole) == 1
    _, S, C, vb = whole[0]
    got_S, got_C, got_vb = [[None] * M for _ in range(K)], [[None] * M for _ in range(K)], [None] * M
    for m0, Sb, Cb, vbb in offset_table(W, deltas, bases, v, shape=(K, d, M), c=c, bias=fmpq(2), block=block):
        Mb = len(vbb)
        for k in range(K):
            for m in range(Mb):
                got_S[k][m0 + m], got_C[k][m0 + m] = Sb[k * Mb + m], Cb[k * Mb + m]
        got_vb[m0:m0 + Mb] = vbb
    assert [x for row in got_S for x in row] == S and [x for row in got_C for x in row] == C and got_vb == vb
    # and the table is what it says: S[k, m] = Δ_kᵀ(W b_m + c), C[k, m] = vᵀ(Δ_k + b_m) + 2
    Wr = W.entries()
    for k in range(K):
        for m in range(M):
            b = [bases[j * M + m] for j in range(d)]
            Wb = [sum((Wr[i * d + j] * b[j] for j in range(d)), fmpq(0)) + c[i] for i in range(d)]
            assert S[k * M + m] == sum((deltas[k * d + i] * Wb[i] for i in range(d)), fmpq(0))
            assert C[k * M + m] == sum((v[i] * (deltas[k * d + i] + b[i]) for i in range(d)), fmpq(0)) + 2


def test_batched_replay_across_blocks(monkeypatch):
    """A transcript longer than a replay block is batched a block at a time, with the same verdicts."""
    import exact.certify as certify

    d = 5
    truth = SingleHead.random(d, seed=11)
    entries = learn_single_head(ExactOracle(truth), check_seed=0).certificate.transcript
    W = [list(r) for r in truth.W]
    W[2][3] += 1
    wrong = SingleHead(W, truth.v)
    expected = [i for i, q in enumerate(entries) if not answer_equals(q.answer, wrong.exact(q.X))]
    assert expected
    calls = []
    batched = SingleHead._offset_pairs
    monkeypatch.setattr(SingleHead, "_offset_pairs", lambda self, Xs: calls.append(len(Xs)) or batched(self, Xs))
    monkeypatch.setattr(certify, "_REPLAY_BLOCK", 8)
    assert failed_entries(wrong, entries) == expected
    assert failed_entries(truth, entries) == []
    assert calls[: (len(entries) + 7) // 8] == [8] * (len(entries) // 8) + [len(entries) % 8] * (len(entries) % 8 > 0)
