"""Grids for √r·W: a torch head whose W_KᵀW_Q lies on a grid is recovered bit for bit, also when √r
is irrational (learn ... grid=G, w_scale="1/sqrt(r)")."""

import dataclasses
from fractions import Fraction
import math

import pytest

from exact.errors import InvalidArgument
from exact.grids import parse_w_scale
from exact.learn import learn_single_head, learn_single_head_biased
from exact.models import SingleHead
from exact.oracles import ExactOracle, FloatOracle

torch = pytest.importorskip("torch")
from exact.native import TorchOracle, native_model  # noqa: E402


def _module(d: int, *, bias: bool, seed: int = 5):
    """A float64 module with weights (and biases) in multiples of 1/8."""
    mha = torch.nn.MultiheadAttention(d, 1, bias=bias, dtype=torch.float64).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in [mha.in_proj_weight, mha.out_proj.weight] + ([mha.in_proj_bias, mha.out_proj.bias] if bias else []):
            p.copy_(torch.randint(-8, 9, p.shape, generator=g).to(torch.float64) / 8)
    return mha, torch.randint(-8, 9, (d,), generator=g).to(torch.float64) / 8


@pytest.mark.parametrize("d", [8, 32, 48])
def test_a_module_with_k_over_8_weights_is_recovered_bit_for_bit_whatever_sqrt_r(d):
    mha, w = _module(d, bias=False)
    truth = native_model(mha, w)
    if math.isqrt(d) ** 2 != d:  # √d irrational: W itself is on no small grid
        with pytest.raises(Exception):
            learn_single_head(TorchOracle(mha, w), grid="dyadic:10", checks=0)
    r = learn_single_head(TorchOracle(mha, w), grid="dyadic:10", w_scale=f"1/sqrt({d})", checks=0)
    assert r.exact and r.model == truth and r.queries == d * d + d
    assert r.certificate.conditions["w_scale"] == str(parse_w_scale(f"1/sqrt({d})"))
    assert r.certificate.check().holds


def test_a_module_with_biases_too():
    d = 32
    mha, w = _module(d, bias=True)
    truth = native_model(mha, w)
    r = learn_single_head_biased(TorchOracle(mha, w), grid="dyadic:10", w_scale="1/sqrt(32)", checks=0)
    assert r.exact and r.model == truth and r.queries == d * d + 2 * d + 1 and r.certificate.check().holds


def test_the_certificate_checks_w_on_the_scaled_grid_and_refuses_a_wrong_scale():
    truth = SingleHead([["1/4", "-3/8"], [0, "5/8"]], [1, "-1/2"])
    s = Fraction(1, 3)
    scaled = SingleHead([[s * x for x in row] for row in truth.W], truth.v)
    r = learn_single_head(FloatOracle(scaled), grid="dyadic:6", w_scale="1/3", checks=0)
    assert r.model == scaled and r.certificate.check().holds
    wrong = dataclasses.replace(r.certificate, conditions={"w_scale": "1/5"})
    report = wrong.check()
    assert not report.holds and "not on the stated grid dyadic:6 (W/1/5)" in report.message


def test_w_scale_needs_a_grid_and_a_positive_value():
    with pytest.raises(InvalidArgument, match="applies with grid="):
        learn_single_head(ExactOracle(SingleHead([[1]], [1])), w_scale="1/2")
    for bad in ("0", "-1", "abc", "1/sqrt(0)"):
        with pytest.raises(InvalidArgument, match="w_scale: expected a positive number"):
            parse_w_scale(bad)


def test_the_command_line_takes_w_scale(capsys, tmp_path):
    import json

    from test_cli import run

    s = parse_w_scale("1/sqrt(2)")
    head = SingleHead([[s * Fraction(1, 4), -s], [0, s * Fraction(3, 8)]], [1, "1/2"])
    model = tmp_path / "head.json"
    model.write_text(json.dumps(head.to_json()))
    rc, out, err = run(capsys, "learn", "single-head", "--model", model, "--oracle", "float", "--grid", "dyadic:6",
                       "--w-scale", "1/sqrt(2)", "--quiet", "--checks", 0)
    assert rc == 0, err
    assert "yes: equal to the model" in out


def test_the_certificate_says_what_its_grid_holds():
    truth = SingleHead([["1/12", "-1/8"], [0, "5/24"]], [1, "-1/2"])
    r = learn_single_head(FloatOracle(truth), grid="dyadic:6", w_scale="1/3", checks=0)
    assert "every parameter on grid dyadic:6, W and c divided by 1/3" in r.certificate.check().scope
