"""The exact learner of ReLU networks with biases (learn_ffn_biased): one line, gradient jumps and
offsets; exact function forms at the acceptance shapes, with the queries counted."""

import dataclasses
from fractions import Fraction as F

import pytest

from exact import ExactOracle
from exact.cli import main
from exact.errors import OracleInconsistent
from exact.ffn import ReLUFFN
from exact.learn import learn_ffn, learn_ffn_biased
from exact.learn.ffn_affine import HIDDEN_AFFINE, affine_query_count

SHAPES = [(4, 4), (8, 8), (16, 16), (8, 16)]


@pytest.mark.parametrize("d,m", SHAPES)
def test_exact_function_form_at_about_one_query_per_parameter(d, m):
    for seed in range(5):
        net = ReLUFFN.random(d, m, seed=seed, biases=True)
        oracle = ExactOracle(net)
        r = learn_ffn_biased(oracle, m=m, seed=seed)
        assert r.exact and r.details["function_form"] == net.function_form()  # Fractions, ==
        assert r.model.function_form() == net.function_form()
        assert oracle.count == r.queries + r.verification_queries
        # parameters m(d + 2) + 1; the check line of "all m units seen" costs about 6m of the count
        assert r.queries <= affine_query_count(d, m) + 4 * m + 8
        assert r.details["units_seen"] and r.details["proved_hyperplanes"] == m
        assert HIDDEN_AFFINE not in r.assumptions and f"among networks with at most {m} hidden units" in r.assumptions
        assert r.details["identifiable"] and r.model.unit_form() == net.unit_form()
        report = r.certificate.check()
        assert report.holds and HIDDEN_AFFINE not in r.certificate.assumptions


@pytest.mark.slow
@pytest.mark.parametrize("d,m", [(32, 32), (64, 64)])
def test_the_larger_shapes(d, m):
    for seed in range(5):
        net = ReLUFFN.random(d, m, seed=seed, biases=True)
        r = learn_ffn_biased(ExactOracle(net), m=m, seed=seed)
        assert r.exact and r.details["function_form"] == net.function_form()
        assert r.queries <= 2 * (m * (d + 2) + 1)


STRUCTURED = {
    "parallel hyperplanes": ReLUFFN([[1, 1], [1, 1], [0, 1]], [1, 2, -1], [0, 1, F(1, 2)], 3),
    "a constant unit": ReLUFFN([[1, 2], [0, 0]], [1, 3], [1, 2], -1),
    "an antipodal pair (affine)": ReLUFFN([[1, 0], [-1, 0], [0, 1]], [2, -2, 1], [1, -1, 0], 0),
    "bias-free": ReLUFFN([[1, 2], [0, 1]], [1, -1]),
    "d = 1": ReLUFFN([[1], [-2], [3]], [1, 1, -1], [1, 1, -1], 2),
    "affine only": ReLUFFN([[0, 0]], [1], [1], 2),
    "m > d": ReLUFFN.random(2, 5, seed=3, biases=True),
}


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_networks(name):
    net = STRUCTURED[name]
    for m in (net.m, None):
        r = learn_ffn_biased(ExactOracle(net), m=m, seed=1)
        assert r.exact and r.details["function_form"] == net.function_form() and r.certificate.check().holds


def test_the_certificate_refuses_another_network():
    net = ReLUFFN.random(3, 3, seed=1, biases=True)
    r = learn_ffn_biased(ExactOracle(net), m=3, seed=1)
    for bad in (ReLUFFN(net.A, net.w, net.a, net.b + F(1, 10**30)),
                ReLUFFN(net.A, net.w, (net.a[0] + 1,) + net.a[1:], net.b)):
        assert not dataclasses.replace(r.certificate, model=bad).check().holds
    report = dataclasses.replace(r.certificate, conditions={"retries": 3, "m": 3}).check()
    assert not report.holds and "seed" in report.message


def test_not_a_relu_network_is_refused():
    from exact.expfield import ExpRatio
    from exact.sequences import as_sequence

    class Square:  # a smooth black box with exact rational answers
        d = 2

        def exact(self, X):
            x = [F(t) for t in as_sequence(X, d=2).dense()[0]]
            return ExpRatio.rational(x[0] * x[0] + x[1])

    smooth = ExactOracle(Square())
    with pytest.raises(OracleInconsistent):
        learn_ffn_biased(smooth, m=3, seed=0, retries=1)


def test_the_bias_free_learner_and_this_one_agree_on_a_bias_free_network():
    net = ReLUFFN.random(4, 3, seed=2)
    assert learn_ffn(ExactOracle(net), m=3, seed=0).details["function_form"] == \
        learn_ffn_biased(ExactOracle(net), m=3, seed=0).details["function_form"] == net.function_form()


def test_cli(tmp_path, capsys):
    path, cert = tmp_path / "f.json", tmp_path / "c.json"
    assert main(["random", "ffn", "--d", "3", "--m", "3", "--seed", "2", "--biases", "--out", str(path)]) == 0
    capsys.readouterr()
    assert main(["learn", "ffn", "--model", str(path), "--biases", "--m", "3", "--certificate", str(cert)]) == 0
    out = capsys.readouterr().out
    assert "learner     ffn-biased" in out and "exact       yes" in out and "ℓ₀ = " in out
    assert main(["certify", str(cert)]) == 0


# -- found by an adversarial review -------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 2, 3])
def test_two_parallel_hyperplanes_close_together_far_out_are_both_found(d):
    """Two kinks inside one acceptance window passed as one (wrong only between the hyperplanes);
    each breakpoint is now checked at t* itself and its window searched again, and the windows keep
    their width in u when the line is scanned wider."""
    for gap in (1, F(1, 4), F(1, 2**40)):
        net = ReLUFFN([[1] + [0] * (d - 1)] * 2, [1, 1], [2**31, 2**31 + gap], 0)
        for seed in range(3):
            r = learn_ffn_biased(ExactOracle(net), m=2, seed=seed)
            assert r.details["function_form"] == net.function_form(), (gap, seed)
            x = [F(-2**31) - gap / 2] + [F(0)] * (d - 1)
            assert r.model.value(x) == net.value(x)


def test_a_loose_m_is_an_upper_bound_not_a_trap():
    for seed in range(4):
        net = ReLUFFN.random(2, 2, seed=seed, biases=True)
        for m in (2, 3, 5):
            r = learn_ffn_biased(ExactOracle(net), m=m, seed=seed)
            assert r.details["function_form"] == net.function_form()
            # fewer hyperplanes than m: nothing proves every unit seen, and the result says so
            assert r.details["units_seen"] == (m == 2) and (HIDDEN_AFFINE in r.assumptions) == (m != 2)


# -- all m units seen, with biases (docs/ffn.md) -------------------------------------------------------


def test_a_unit_beyond_every_window_is_excluded_only_by_the_stated_bound():
    # d = 1: the search line sees the kinks at 1/10 and 1/2 in its first window and stops; the third, at
    # 2^30, lies beyond it and beyond the check line's window (scaled to the learned planes). With m = 2
    # (false: 3 units) the learned function has 2 hyperplanes, both proved: the result may be wrong, and
    # then only with the false bound "at most 2 hidden units" stated; with m = 3 the window widens to it
    net = ReLUFFN([[1], [1], [1]], [1, -2, 3], [F(-1, 10), F(-1, 2), -(2**30)], 0)
    for seed in range(3):
        r = learn_ffn_biased(ExactOracle(net), m=2, seed=seed)
        assert r.details["function_form"] != net.function_form()
        assert r.details["units_seen"] and "among networks with at most 2 hidden units" in r.assumptions
        r = learn_ffn_biased(ExactOracle(net), m=3, seed=seed)
        assert r.details["function_form"] == net.function_form() and r.details["units_seen"]


def test_hidden_structure_keeps_the_assumption():
    # an antipodal pair is affine (it hides from every line), and it makes the 4-unit network look like
    # 2 hyperplanes: with m = 4 the learned function has 2 hyperplanes, so nothing drops the assumption
    net = ReLUFFN([[1, 0], [0, 1], [1, 1], [-1, -1]], [1, 2, 3, -3], [F(1, 3), -1, F(1, 2), F(-1, 2)], 1)
    r = learn_ffn_biased(ExactOracle(net), m=4, seed=0)
    assert r.details["function_form"] == net.function_form()
    assert not r.details["units_seen"] and not r.details["identifiable"] and HIDDEN_AFFINE in r.assumptions
    assert "found 2 hyperplanes for m = 4" in r.details["sighting"]


def test_the_sighting_is_re_derived_by_the_certificate_never_read():
    net = ReLUFFN.random(3, 3, seed=4, biases=True)
    r = learn_ffn_biased(ExactOracle(net), m=3, seed=2)
    assert r.details["units_seen"] and r.certificate.check().holds
    # a certificate cannot claim it: "units_seen" is not a condition
    bad = dataclasses.replace(r.certificate, conditions={**r.certificate.conditions, "units_seen": True})
    assert not bad.check().holds
    # without m, the re-run draws no check line: its transcript is not this one, and the assumption returns
    no_m = dataclasses.replace(r.certificate, conditions={"seed": 2, "retries": 3})
    assert not no_m.check().holds
    # a result that did not see every unit cannot drop the assumption in its file
    loose = learn_ffn_biased(ExactOracle(net), m=5, seed=2)
    assert not loose.details["units_seen"] and loose.certificate.check().holds
    stripped = dataclasses.replace(loose.certificate,
                                   assumptions=tuple(a for a in loose.certificate.assumptions if a != HIDDEN_AFFINE))
    assert not stripped.check().holds


def test_m_below_the_units_is_refused_naming_m():
    net = ReLUFFN.random(3, 4, seed=2, biases=True)
    with pytest.raises(OracleInconsistent, match="m = 3 is below its number of units"):
        learn_ffn_biased(ExactOracle(net), m=3, seed=0)
