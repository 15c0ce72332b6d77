"""Denominator hints in certified arithmetic (``combine(denominators=)``): a hint is only a guess.

Whatever the hints (right, a multiple of the truth, wrong, huge, absent), the identified logits are
the exact ones, exactly as without hints; a right hint takes the place of the simplest rational in
the ball, and a wrong one costs no precision."""

import random
from fractions import Fraction

import pytest

from exact.arith import Measurement
from exact.arith.certified import CertifiedArithmetic, _Logit
from exact.errors import InvalidArgument
from exact.models import SingleHead
from exact.oracles import ExactOracle


def _sketch_logits(d=12, seed=0, den_bits=24):
    """Answers to [b + e_k; b] of a random head, with their measurements and exact logits e_kᵀ W b."""
    rng = random.Random(seed)
    head = SingleHead.random(d, seed=seed)
    oracle = ExactOracle(head)
    cols = [[Fraction(rng.randint(-2**20, 2**20), 2**den_bits) for _ in range(d)] for _ in range(3)]
    queries, meas, truth = [], [], []
    for b in cols:
        vb = sum((x * y for x, y in zip(head.v, b)), Fraction(0))
        Wb = [sum((w * y for w, y in zip(row, b)), Fraction(0)) for row in head.W]
        for k in range(d):
            first = list(b)
            first[k] += 1
            queries.append([first, b])
            meas.append(Measurement(vb, head.v[k]))
            truth.append(Wb[k])  # (b + e_k)ᵀ W b − bᵀ W b
    return oracle, oracle.query_batch(queries), meas, truth


def _combine(oracle, answers, meas, denominators=None):
    arith = CertifiedArithmetic(oracle)
    combos = [[(1, i)] for i in range(len(meas))]
    return arith.combine(answers, meas, combos, None, denominators=denominators), arith


def test_hints_right_multiple_wrong_huge_or_absent_all_give_the_exact_logits():
    oracle, answers, meas, truth = _sketch_logits()
    plain, _ = _combine(oracle, answers, meas)
    assert plain == truth
    rng = random.Random(1)
    dens = [x.denominator for x in truth]
    kinds = {
        "right": dens,
        "multiple": [q * rng.choice([3, 5, 2**7, 720720]) for q in dens],
        "wrong": [q * 3 + 1 for q in dens],
        "huge": [q * 2**400 for q in dens],
        "mixed": [rng.choice([q, q + 1, None, 0, q * 11]) for q in dens],
    }
    for name, hints in kinds.items():
        got, _ = _combine(oracle, answers, meas, hints)
        assert got == truth, name


def test_right_hints_are_taken_in_one_round(monkeypatch):
    oracle, answers, meas, truth = _sketch_logits(d=6)
    taken, refined = [], []
    candidate, refine = _Logit.candidate, _Logit.refine

    def spy_candidate(self, ball):
        out = candidate(self, ball)
        taken.append(self.hinted)
        return out

    def spy_refine(self):
        refined.append(self.prec)
        refine(self)

    monkeypatch.setattr(_Logit, "candidate", spy_candidate)
    monkeypatch.setattr(_Logit, "refine", spy_refine)
    got, _ = _combine(oracle, answers, meas, [x.denominator for x in truth])
    assert got == truth and all(taken) and not refined  # every logit from its hint, in one round


def test_a_hint_that_offers_a_wrong_multiple_is_rejected_at_no_precision():
    # the ball of radius 2^-20 around 1/3 holds exactly one multiple of 1/400000 (and 2·rad·D < 1):
    # 133333/400000, which is not 1/3; rejected, the logit keeps its precision and the same ball then
    # offers its simplest rational
    from flint import arb, fmpq

    logit = _Logit(CertifiedArithmetic(ExactOracle(SingleHead([[0]], [1]))), None, "x", fmpq(0), fmpq(1))
    logit.hint, logit.prec = 400000, 96
    ball = arb(fmpq(1, 3), 2.0**-20)
    assert logit.candidate(ball) == fmpq(133333, 400000) and logit.hinted and logit.hint == 0
    logit.refine()
    assert logit.prec == 96 and not logit.hinted
    assert logit.candidate(ball) == fmpq(1, 3)
    logit.hint = 2**20  # too wide for this hint (2·rad·D = 2): it is kept for a narrower ball
    assert logit.candidate(ball) == fmpq(1, 3) and logit.hint == 2**20 and not logit.hinted
    logit.hint = 7  # no multiple of 1/7 in the ball: the simplest rational, and the hint is spent
    assert logit.candidate(ball) == fmpq(1, 3) and logit.hint == 0 and not logit.hinted


def test_denominators_must_match_the_measurements():
    oracle, answers, meas, truth = _sketch_logits(d=4)
    with pytest.raises(InvalidArgument, match=r"^combine: 3 denominators for 12 measurements$"):
        _combine(oracle, answers, meas, [1, 2, 3])


def test_symbolic_and_float_arithmetics_take_and_ignore_hints():
    from exact.arith.floating import FloatArithmetic
    from exact.arith.symbolic import SymbolicArithmetic

    oracle, answers, meas, truth = _sketch_logits(d=3)
    combos = [[(1, i)] for i in range(len(meas))]
    hints = [x.denominator * 3 + 1 for x in truth]
    assert SymbolicArithmetic(oracle).combine(answers, meas, combos, None, denominators=hints) == truth
    got = FloatArithmetic(oracle).combine(answers, meas, combos, None, denominators=hints)
    assert max(abs(g - float(t)) for g, t in zip(got, truth)) < 1e-9
