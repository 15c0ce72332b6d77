"""Check the library against independently generated reference values (tests/data).

``tests/data/single_head_reference.json`` was produced by ``tests/data/generate_reference.py``
with mpmath at 120 digits, independently of the library; each ``f`` is a decimal string with
110 significant digits.  The comparisons here are exact rational comparisons: a ball's
endpoints are exact dyadics, the reference decimal is an exact rational, and the ball is
widened by a relative 10^-100 to cover the reference's own rounding.
"""

import json
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest

from exact.models import SingleHead
from exact.numbers import ball_interval
from exact.oracles import ExactOracle
from exact.sequences import Sequence

DATA = Path(__file__).parent / "data" / "single_head_reference.json"
REL = Fraction(1, 10**100)
PREC = 400

with open(DATA, encoding="utf-8") as fh:
    REFERENCE = json.load(fh)

INSTANCES = REFERENCE["instances"]
CASES = [(inst, qi) for inst in INSTANCES for qi in range(len(inst["queries"]))]
CASE_IDS = [f"{inst['name']}-q{qi}-{inst['queries'][qi]['type']}" for inst, qi in CASES]


def within(lo: Fraction, hi: Fraction, ref: Fraction) -> bool:
    """Whether ``ref`` lies in ``[lo, hi]`` widened by 10^-100 relative to the ball's magnitude."""
    slack = REL * max(abs(lo), abs(hi))
    return lo - slack <= ref <= hi + slack


def test_reference_file_shape():
    gen = REFERENCE["generator"]
    assert gen["dps"] >= 110 and gen["script"].endswith("generate_reference.py")
    assert len(INSTANCES) == 10
    assert len({inst["name"] for inst in INSTANCES}) == len(INSTANCES)
    kinds = {inst["kind"] for inst in INSTANCES}
    assert {"rational", "v_zeros", "singular", "huge", "float32", "v_zero"} <= kinds
    for inst in INSTANCES:
        d = inst["d"]
        assert len(inst["W"]) == d and all(len(r) == d for r in inst["W"]) and len(inst["v"]) == d
        types = [q["type"] for q in inst["queries"]]
        assert types.count("one_token") == d
        for q in inst["queries"]:
            assert all(len(row) == d for row in q["X"])
            # 110 significant digits, unless the decimal terminates earlier
            digits = q["f"].lstrip("-").replace(".", "").lstrip("0")
            assert len(digits) <= 110


@pytest.fixture(scope="module")
def models():
    return {inst["name"]: SingleHead(inst["W"], inst["v"]) for inst in INSTANCES}


@pytest.mark.parametrize("inst, qi", CASES, ids=CASE_IDS)
def test_model_ball_contains_reference(inst, qi, models):
    q = inst["queries"][qi]
    model = models[inst["name"]]
    ball = model.ball(q["X"], prec=PREC)
    assert ball.is_finite()
    lo, hi = ball_interval(ball)
    ref = Fraction(q["f"])
    assert within(lo, hi, ref), (q["f"][:30], float(lo), float(hi))
    # the ball is tight: at 400 bits it pins at least 100 digits
    assert hi - lo <= REL * max(abs(lo), abs(hi))


@pytest.mark.parametrize("inst, qi", CASES, ids=CASE_IDS)
def test_reference_parsed_with_mpmath_agrees(inst, qi, models):
    q = inst["queries"][qi]
    with mpmath.workdps(120):
        ref = mpmath.mpf(q["f"])
        sign, man, exp, _ = ref._mpf_ if ref != 0 else (0, 0, 0, 0)
    ref_exact = Fraction(int(man)) * Fraction(2) ** int(exp) * (-1 if sign else 1)
    assert abs(ref_exact - Fraction(q["f"])) <= Fraction(1, 10**115) * (1 + abs(Fraction(q["f"])))
    lo, hi = ball_interval(models[inst["name"]].ball(q["X"], prec=PREC))
    assert within(lo, hi, ref_exact)


@pytest.mark.parametrize("inst", INSTANCES, ids=[inst["name"] for inst in INSTANCES])
def test_exact_oracle_answers_match_reference(inst):
    oracle = ExactOracle(SingleHead(inst["W"], inst["v"]))
    queries = inst["queries"]
    answers = oracle.query_batch([q["X"] for q in queries])
    assert oracle.count == len(queries)
    assert oracle.max_length == max(len(q["X"]) for q in queries)
    for q, a in zip(queries, answers):
        lo, hi = ball_interval(a.ball(PREC))
        assert within(lo, hi, Fraction(q["f"])), q["type"]


@pytest.mark.parametrize("inst", INSTANCES, ids=[inst["name"] for inst in INSTANCES])
def test_one_token_queries_are_v_exactly(inst):
    v = [Fraction(x) for x in inst["v"]]
    model = SingleHead(inst["W"], inst["v"])
    seen = 0
    for q in inst["queries"]:
        if q["type"] != "one_token":
            continue
        i = q["i"]
        assert Sequence.from_rows(q["X"]) == Sequence.basis(inst["d"], i)
        ref = Fraction(q["f"])
        den = v[i].denominator
        while den % 2 == 0:
            den //= 2
        while den % 5 == 0:
            den //= 5
        if den == 1:  # v_i has a finite decimal expansion: the reference is exactly v_i
            assert ref == v[i]
        else:
            assert abs(ref - v[i]) <= Fraction(1, 10**105)
        # and the library's exact value is v_i itself, as an exact rational
        lo, hi = ball_interval(model.ball(q["X"], prec=64))
        assert lo == hi == v[i] or lo <= v[i] <= hi
        assert model.float(q["X"]) == float(v[i])
        seen += 1
    assert seen == inst["d"]


def test_v_zero_instance_is_identically_zero(models):
    inst = next(i for i in INSTANCES if i["kind"] == "v_zero")
    for q in inst["queries"]:
        assert Fraction(q["f"]) == 0
        assert models[inst["name"]].exact(q["X"]).num.is_zero()
        assert ball_interval(models[inst["name"]].ball(q["X"], prec=PREC)) == (0, 0)
