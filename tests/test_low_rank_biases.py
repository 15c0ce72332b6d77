"""The exact sketch learner on heads with biases: 2rd − r² + 2d + 1 queries (2rd − r² + 3d − r + 1
with the rank found), ``==`` in the exact modes, with a certificate that re-derives the probe set."""

import dataclasses
from fractions import Fraction

import pytest

from exact import ExactOracle, SingleHead
from exact.cli import main
from exact.errors import NotIdentifiable, OracleInconsistent, PrecisionInsufficient
from exact.learn import learn_low_rank
from exact.verify import formulas

CASES = [(d, r) for d in (1, 2, 3, 5, 8) for r in sorted({0, 1, d // 2, d})]


def _with_zeros(h: SingleHead, zeros: int) -> SingleHead:
    return SingleHead(h.W, h.v, (Fraction(0),) * zeros + h.c[zeros:], h.b)


@pytest.mark.parametrize("mode", ["certified", "symbolic"])
@pytest.mark.parametrize("d,r", CASES)
def test_exact_at_the_count(d, r, mode):
    truth = _with_zeros(SingleHead.random(d, seed=10 * d + r, rank=r, biases=True, v_zeros=min(1, d - 1)), d // 3)
    for given in (r, None):
        oracle = ExactOracle(truth)
        res = learn_low_rank(oracle, rank=given, seed=3, mode=mode, biases=True)
        want = (formulas.LOW_RANK(d=d, r=r) if given is not None else formulas.LOW_RANK_FOUND(d=d, r=r)) + d + 1
        assert res.exact and res.model == truth  # Fractions, compared with ==
        assert res.queries == want == oracle.count - res.verification_queries
        assert res.certificate.conditions["biases"] is True and res.certificate.check().holds
        assert res.details["rank"] == truth.rank


def test_a_bias_free_head_is_in_the_class_and_b_alone_or_c_alone_too():
    free = SingleHead.random(5, seed=2, rank=2)
    assert learn_low_rank(ExactOracle(free), rank=2, biases=True, seed=0).model == free
    h = SingleHead.random(5, seed=2, rank=2, biases=True)
    for t in (SingleHead(h.W, h.v, None, h.b), SingleHead(h.W, h.v, h.c, 0)):
        assert learn_low_rank(ExactOracle(t), rank=2, biases=True, seed=0).model == t


def test_the_certificate_refuses_a_tampered_head_or_a_dropped_class():
    truth = SingleHead.random(4, seed=5, rank=2, biases=True)
    res = learn_low_rank(ExactOracle(truth), rank=2, biases=True, seed=1)
    cert = res.certificate
    m = res.model
    for bad in (SingleHead(m.W, m.v, (m.c[0] + Fraction(1, 10**30),) + m.c[1:], m.b),
                SingleHead(m.W, m.v, m.c, m.b + Fraction(1, 10**30))):
        assert not dataclasses.replace(cert, model=bad).check().holds
    dropped = {k: v for k, v in cert.conditions.items() if k != "biases"}
    report = dataclasses.replace(cert, conditions=dropped).check()
    assert not report.holds and "records the condition biases=true" in report.message
    assert "among single heads with biases of rank <= 2" in cert.check().message


def test_the_bias_free_plan_on_a_head_with_biases_is_caught_and_v_zero_refused():
    truth = SingleHead.random(4, seed=5, rank=2, biases=True)
    # a softmax weight outside (0, 1), or one inside that no rational logit of any sane height reproduces:
    # either way the error names an output bias, and nothing is returned
    with pytest.raises((OracleInconsistent, PrecisionInsufficient), match="output bias"):
        learn_low_rank(ExactOracle(truth), rank=2, seed=1)
    zero = SingleHead([[1, 0], [0, 0]], [0, 0], [1, 1], 3)
    oracle = ExactOracle(zero)
    with pytest.raises(NotIdentifiable, match="v = 0"):
        learn_low_rank(oracle, rank=1, biases=True, seed=0)
    assert oracle.count == 3  # b and v, then nothing more can be learned
    res = learn_low_rank(ExactOracle(truth), rank=2, biases=True, seed=1, checks=0)
    assert res.assumptions[0] == "among single heads with biases"


def test_cli_takes_biases_from_the_file(tmp_path, capsys):
    path = tmp_path / "h.json"
    assert main(["random", "single-head", "--d", "5", "--rank", "2", "--biases", "--seed", "1", "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["learn", "low-rank", "--model", str(path), "--rank", "2", "--seed", "0"]) == 0
    out, _ = capsys.readouterr()
    assert "--biases: from" in out and "exact       yes" in out and "2rd − r² + d + d + 1 = 27" in out


def test_a_certificate_whose_sketch_misses_part_of_w_is_refused():
    """Found by an adversarial review: below the rank bound, a W + a·qᵀ with W's sketch blind to it
    (qᵀB = 0) answers every probe alike; the check now requires rank(U W B) = rank(W)."""
    import numpy as np

    from exact.learn.low_rank import _sketch

    b1 = _sketch(np.random.default_rng(7), 2)  # the seed's first sketch column
    for c, b in ((["1/2", -1], 3), (None, 0)):
        truth = SingleHead([[0, 0], [0, 0]], [1, 2], c=c, b=b)
        res = learn_low_rank(ExactOracle(truth), rank=1, biases=c is not None, seed=7, checks=0)
        assert res.model == truth and res.certificate.check().holds
        blind = SingleHead([[-b1[1], b1[0]], [0, 0]], [1, 2], c=c, b=b)  # rank 1, W b1 = 0
        report = dataclasses.replace(res.certificate, model=blind).check()
        assert not report.holds and "sees rank 0 of the model's W, whose rank is 1" in report.message
