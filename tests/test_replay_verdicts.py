"""The replay's verdicts on the learners' offset probes, and answer floats read in one pass.

A replay decides whether a model reproduces every recorded answer; for the offset probes
``[b + Δ; b]`` it decides on the compact two-token form.  These tests hold its verdicts to an
independent decision (each answer against the model's exp-ratio, on the sequence rebuilt from its
rows), for wrong models that differ from the truth in one entry of W, v or the biases.
"""

from fractions import Fraction

import numpy as np
import pytest

from exact import ExactOracle, SingleHead, learn_single_head
from exact.certify import failed_entries
from exact.learn.single_head import ProbePlan
from exact.oracles import answer_equals, answer_floats
from exact.sequences import Sequence


def _rebuilt(X: Sequence) -> Sequence:
    """The sequence from its rows alone (no offset form): the independent side of a verdict."""
    return Sequence.from_rows(X.dense())


@pytest.mark.parametrize("seed", range(3))
def test_replay_flags_exactly_the_entries_a_wrong_model_misses(seed):
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
            expected = [i for i, q in enumerate(entries) if not answer_equals(q.answer, wrong.exact(_rebuilt(q.X)))]
            assert expected  # the change is seen by some probe
            assert failed_entries(wrong, entries) == expected


def test_replay_of_a_biased_head():
    truth = SingleHead.random(4, seed=5, biases=True)
    oracle = ExactOracle(truth)
    plan = ProbePlan.choose(list(truth.v))
    seqs = plan.sequences()
    answers = oracle.query_batch(seqs)
    entries = oracle.transcript
    assert all(a is q.answer for a, q in zip(answers, entries))
    assert failed_entries(truth, entries) == []
    off = SingleHead(truth.W, truth.v, c=[x + 1 for x in truth.c], b=truth.b)
    expected = [i for i, q in enumerate(entries) if not answer_equals(q.answer, off.exact(_rebuilt(q.X)))]
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


