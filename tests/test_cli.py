"""Tests for the ``exact-attention`` command line (exact.cli).

Most tests call :func:`exact.cli.main` in-process and read stdout/stderr with
``capsys``; two subprocess tests prove that ``python -m exact`` and the
``exact-attention`` console script work.  Errors in the options themselves are
argparse's: ``main`` raises ``SystemExit(2)`` after printing one line, and
:func:`run` reports that exit status like a returned one.
"""

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import sympy

from exact.checks import FRESH_SEED
from exact import __version__
from exact.canonical import canonical_factors
from exact.cli import main
from exact.learn import cs_measurements
from exact.models import SingleHead

PROG = "exact-attention"
ERROR_PREFIX = "exact-attention: error:"


# -- helpers ---------------------------------------------------------------------------


def run(capsys, *argv):
    """Run the command line in-process; return ``(exit status, stdout, stderr)``.

    An option error exits through argparse (``SystemExit(2)``); its status is returned too.
    """
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def assert_option_error(err: str, command: str, option: str) -> str:
    """One line naming the command and the option, and pointing at the command's --help."""
    line = assert_one_line_error(err, prefix=f"{ERROR_PREFIX} {command}: argument {option}: ")
    assert line.endswith(f" (see {PROG} {command} --help)")
    return line


def assert_one_line_error(err: str, prefix: str = ERROR_PREFIX) -> str:
    """stderr is exactly one line starting with ``prefix`` and holds no traceback."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
    assert err.endswith("\n")
    assert lines[0].startswith(prefix), lines[0]
    return lines[0]


def random_model(capsys, *args) -> dict:
    rc, out, err = run(capsys, "random", "single-head", *args)
    assert rc == 0, err
    assert err == ""
    return json.loads(out)


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def fractions_of(model: dict):
    W = [[Fraction(x) for x in row] for row in model["W"]]
    v = [Fraction(x) for x in model["v"]]
    return W, v


def is_float32(x: Fraction) -> bool:
    return Fraction(float(np.float32(float(x)))) == x


def is_bfloat16(x: Fraction) -> bool:
    return is_float32(x) and int(np.float32(float(x)).view(np.uint32)) & 0xFFFF == 0


@pytest.fixture
def model3(tmp_path, capsys):
    """A random d=3 head written to a file: ``(path, JSON dict)``."""
    path = tmp_path / "model.json"
    rc, out, err = run(capsys, "random", "single-head", "--d", 3, "--seed", 5, "--output", path)
    assert rc == 0, err
    return path, json.loads(path.read_text())


# -- random ----------------------------------------------------------------------------


def test_random_prints_valid_model_json(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5)
    assert data["kind"] == "single-head"
    assert data["d"] == 3
    assert len(data["W"]) == 3 and all(len(row) == 3 for row in data["W"])
    assert len(data["v"]) == 3
    assert all(isinstance(x, str) for row in data["W"] for x in row)
    assert all(isinstance(x, str) for x in data["v"])
    # every entry is an exact "p" or "p/q" string, and it loads back as a model
    W, v = fractions_of(data)
    assert all(x.denominator <= 7 and abs(x) <= 2 for x in [*sum(W, []), *v])  # default grid rational:7, bound 2
    assert all(x != 0 for x in v)
    h = SingleHead.from_json(data)
    assert h.to_json() == data


def test_random_is_deterministic_and_depends_on_the_seed(capsys):
    a = run(capsys, "random", "single-head", "--d", 3, "--seed", 5)
    b = run(capsys, "random", "single-head", "--d", 3, "--seed", 5)
    c = run(capsys, "random", "single-head", "--d", 3, "--seed", 6)
    assert a == b
    assert a[0] == c[0] == 0
    assert json.loads(a[1]) != json.loads(c[1])


def test_random_grid_float32(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5, "--grid", "float32")
    W, v = fractions_of(data)
    entries = [*sum(W, []), *v]
    assert all(is_float32(x) for x in entries)
    # genuinely float32, not just a coarse rational grid
    assert any(x.denominator > 2**10 for x in entries)
    assert data != random_model(capsys, "--d", 3, "--seed", 5)


def test_random_grid_bfloat16(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5, "--grid", "bfloat16")
    W, v = fractions_of(data)
    entries = [*sum(W, []), *v]
    assert all(is_bfloat16(x) for x in entries)
    assert data != random_model(capsys, "--d", 3, "--seed", 5, "--grid", "float32")


def test_random_v_zeros(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5, "--v-zeros", 2)
    _, v = fractions_of(data)
    assert sum(x == 0 for x in v) == 2


def test_random_rank(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5, "--rank", 1)
    W, _ = fractions_of(data)
    rank = sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in row] for row in W]).rank()
    assert rank <= 1


def test_random_bound(capsys):
    data = random_model(capsys, "--d", 3, "--seed", 5, "--bound", "1e6")
    W, v = fractions_of(data)
    entries = [*sum(W, []), *v]
    assert all(abs(x) <= 10**6 for x in entries)
    assert max(abs(x) for x in entries) > 1000  # far beyond the default bound 2


def test_random_output_file(tmp_path, capsys):
    out_file = tmp_path / "m.json"
    rc, out, err = run(capsys, "random", "single-head", "--d", 3, "--seed", 5, "--output", out_file)
    assert rc == 0 and out == "" and err == ""
    assert json.loads(out_file.read_text()) == random_model(capsys, "--d", 3, "--seed", 5)


def test_random_bad_grid_says_what_a_grid_is(capsys):
    rc, out, err = run(capsys, "random", "single-head", "--d", 3, "--grid", "nonsense")
    assert rc == 2 and out == ""
    line = assert_option_error(err, "random single-head", "--grid")
    assert line == (
        f"{ERROR_PREFIX} random single-head: argument --grid: expected 'rational:Q', 'dyadic:k', 'float16', "
        f"'bfloat16', 'float32' or 'float64', got 'nonsense' (see {PROG} random single-head --help)"
    )


@pytest.mark.parametrize(
    "args, words",
    [
        (["--d", 0], ["d"]),
        (["--d", 3, "--v-zeros", 3], ["v_zeros"]),
        (["--d", 3, "--rank", 5], ["rank"]),
        (["--d", 3, "--bound", "nan"], ["--bound", "nan"]),
        (["--d", 3, "--bound", "-1"], ["bound"]),
        (["--d", 3, "--grid", "rational:0"], ["rational"]),
    ],
    ids=["d0", "v-zeros-too-many", "rank-too-big", "bound-nan", "bound-negative", "grid-rational0"],
)
def test_random_bad_arguments(capsys, args, words):
    rc, out, err = run(capsys, "random", "single-head", *args)
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    for w in words:
        assert w in line


def test_random_negative_seed_message_names_the_seed(capsys):
    rc, out, err = run(capsys, "random", "single-head", "--d", 3, "--seed", -1)
    assert rc == 2 and out == ""
    line = assert_option_error(err, "random single-head", "--seed")
    assert line.startswith(f"{ERROR_PREFIX} random single-head: argument --seed: expected an integer >= 0, got -1 ")


@pytest.mark.parametrize("args, option", [
    (["--d", 0], "--d"),
    (["--d", 3, "--bound", "nan"], "--bound"),
    (["--d", 3, "--grid", "rational:0"], "--grid"),
    (["--d", "three"], "--d"),
])
def test_random_option_errors_exit_2_through_argparse(capsys, args, option):
    with pytest.raises(SystemExit) as info:
        main(["random", "single-head", *map(str, args)])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_option_error(captured.err, "random single-head", option)


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"{PROG} {__version__}\n"


def test_random_output_to_missing_directory(tmp_path, capsys):
    rc, out, err = run(capsys, "random", "single-head", "--d", 2, "--output", tmp_path / "nope" / "m.json")
    assert rc == 2 and out == ""
    assert_one_line_error(err)


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as e:
        main(["learn", "single-head", "--model", "x.json", "--mode", "bogus"])
    assert e.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([])
    assert e.value.code == 2


# -- learn -----------------------------------------------------------------------------


def test_learn_text_output(model3, capsys):
    path, data = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path)
    assert rc == 0, err
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"learner     single-head, 14 queries of {path}"
    lines = lines[1:]
    assert lines[0] == "mode        certified"
    assert lines[1] == "queries     12 (d² + d = 12), longest sequence 2"
    assert lines[2] == "checks      2 verification queries (lengths 3, 4), reproduced exactly"
    assert lines[3] == "exact       yes: equal to the model"
    assert lines[4] == (
        "certificate certificate holds: the model's values are exactly equal to all 14 answers (the single-head "
        "learner's probe set, which identifies the model among bias-free single heads; the model class checked by 2 random "
        "queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))"
    )
    # the printed W and v are the model's entries
    w_rows = [line.strip() for line in lines[lines.index("W =") + 1 : lines.index("W =") + 4]]
    assert w_rows == ["[" + ", ".join(row) + "]" for row in data["W"]]
    assert lines[-1] == "v = [" + ", ".join(data["v"]) + "]"


def test_learn_without_checks_states_the_assumption(model3, capsys):
    path, _ = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--checks", 0)
    assert rc == 0 and err == ""
    lines = out.splitlines()[1:]
    assert lines[2] == "checks      none (--checks 0): the result holds among bias-free single heads"
    assert lines[3] == "exact       yes: equal to the model (among bias-free single heads)"
    assert lines[4] == (
        "certificate certificate holds: the model's values are exactly equal to all 12 answers (the single-head "
        "learner's probe set, which identifies the model among bias-free single heads; assuming it is among bias-free single heads)"
    )
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--checks", 0, "--json")
    assert rc == 0 and err == ""
    result = json.loads(out)
    assert (result["queries"], result["verification_queries"]) == (12, 0)
    assert result["assumptions"] == ["among bias-free single heads"] and result["claim"] == "exact among bias-free single heads"
    assert result["certificate"]["covers"] == (
        "the single-head learner's probe set, which identifies the model among bias-free single heads; "
        "assuming it is among bias-free single heads"
    )


def test_learn_check_seed_makes_the_checks_reproducible(model3, tmp_path, capsys):
    path, _ = model3
    checks = []
    for k, seed in enumerate((3, 3, 4)):
        cert = tmp_path / f"cert{k}.json"
        assert run(capsys, "learn", "single-head", "--model", path, "--check-seed", seed, "--certificate", cert)[0] == 0
        data = json.loads(cert.read_text())
        assert len(data["checks"]) == 2
        checks.append([c["X"] for c in data["checks"]])
    assert checks[0] == checks[1] != checks[2]


@pytest.mark.parametrize("args, option", [
    (["--checks", -1], "--checks"),
    (["--checks", 101], "--checks"),
    (["--check-seed", -1], "--check-seed"),
    (["--mode", "float", "--w-bound", "lots"], "--w-bound"),
])
def test_learn_option_errors(model3, capsys, args, option):
    path, _ = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, *args)
    assert rc == 2 and out == ""
    assert_option_error(err, "learn single-head", option)


def test_learn_symbolic_mode(model3, capsys):
    path, _ = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--mode", "symbolic")
    assert rc == 0, err
    assert out.splitlines()[1] == "mode        symbolic"
    assert "exact       yes" in out
    assert "queries     12 " in out


def test_learn_float_mode_with_float_oracle(model3, capsys):
    path, data = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--mode", "float", "--oracle", "float")
    assert rc == 0, err
    assert out.splitlines()[1] == "mode        float"
    assert "queries     12 " in out
    assert "checks      2 verification queries (lengths 3, 4), reproduced within the estimate" in out.splitlines()
    assert "exact       " not in out
    assert "error       estimated <=" in out
    lines = out.splitlines()
    start = lines.index("W =") + 1
    got_W = [[float(x) for x in line.strip().strip("[]").split(",")] for line in lines[start : start + 3]]
    got_v = [float(x) for x in lines[-1].split("=", 1)[1].strip().strip("[]").split(",")]
    W, v = fractions_of(data)
    assert np.allclose(got_W, [[float(x) for x in row] for row in W], rtol=0, atol=1e-6)
    assert np.allclose(got_v, [float(x) for x in v], rtol=0, atol=1e-6)


def test_learn_float_mode_json(model3, capsys):
    path, data = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--mode", "float", "--oracle", "float", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["mode"] == "float" and result["exact"] is False
    assert result["queries"] == 12 and result["verification_queries"] == 2
    assert 0 <= result["error_estimate"] < 1e-6
    assert result["claim"] == f"approximate (error <= {result['error_estimate']:.3g})"
    assert "certificate" not in result and "certificate_kind" not in result


def test_learn_json(model3, capsys):
    path, data = model3
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--json")
    assert rc == 0, err
    assert err == ""
    result = json.loads(out)
    d = data["d"]
    assert result["kind"] == "result"
    assert result["queries"] == d * d + d == 12
    assert result["exact"] is True
    assert result["mode"] == "certified"
    assert result["max_length"] == 2
    assert result["model"]["W"] == data["W"]
    assert result["model"]["v"] == data["v"]
    assert result["certificate_kind"] == "exact"
    assert result["learner"] == "single-head" and result["equals_model"] is True
    assert result["verification_queries"] == 2 and result["details"]["checks"]["lengths"] == [3, 4]
    assert result["assumptions"] == [] and result["claim"] == "exact"
    covers = (
        "the single-head learner's probe set, which identifies the model among bias-free single heads; "
        "the model class checked by 2 random queries of lengths 3–4; "
        "assuming it is independent of the check seed (drawn afresh by the learner)"
    )
    assert result["certificate"] == {
        "kind": "exact",
        "holds": True,
        "covers": covers,
        "message": f"certificate holds: the model's values are exactly equal to all 14 answers ({covers})",
    }


@pytest.mark.parametrize("d, seed, grid", [(1, 0, "rational:7"), (2, 3, "float32"), (4, 7, "bfloat16")])
def test_learn_json_round_trip(tmp_path, capsys, d, seed, grid):
    path = tmp_path / "m.json"
    assert run(capsys, "random", "single-head", "--d", d, "--seed", seed, "--grid", grid, "-o", path)[0] == 0
    data = json.loads(path.read_text())
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert result["queries"] == d * d + d and result["verification_queries"] == 2
    assert result["exact"] is True and result["equals_model"] is True
    assert (result["model"]["W"], result["model"]["v"]) == (data["W"], data["v"])


def test_learn_model_from_stdin(model3, capsys, monkeypatch):
    path, data = model3
    monkeypatch.setattr(sys, "stdin", io.StringIO(path.read_text()))
    rc, out, err = run(capsys, "learn", "single-head", "--model", "-", "--json")
    assert rc == 0, err
    result = json.loads(out)
    assert (result["model"]["W"], result["model"]["v"]) == (data["W"], data["v"])


# -- certificates ----------------------------------------------------------------------


def test_certificate_written_checked_and_tamper_detected(model3, tmp_path, capsys):
    path, data = model3
    cert = tmp_path / "cert.json"
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--certificate", cert)
    assert rc == 0, err
    cert_data = json.loads(cert.read_text())
    assert cert_data["kind"] == "certificate"
    assert cert_data["certificate_kind"] == "exact"
    assert cert_data["learner"] == "single-head" and cert_data["conditions"] == {}
    assert len(cert_data["transcript"]) == 12 and len(cert_data["checks"]) == 2
    assert [len(c["X"]["rows"]) for c in cert_data["checks"]] == [3, 4]
    assert cert_data["assumptions"] == [FRESH_SEED] and cert_data["grid"] is None
    assert (cert_data["model"]["W"], cert_data["model"]["v"]) == (data["W"], data["v"])

    rc, out, err = run(capsys, "certify", cert)
    assert rc == 0, err
    assert err == ""
    assert "certificate holds" in out

    rc, out, err = run(capsys, "certify", cert, "--json")
    assert rc == 0
    report = json.loads(out)
    assert report["holds"] is True and report["kind"] == "exact" and report["checked"] == 12 + 2

    # tamper with one entry of W: add 1/1000000, written back as a "p/q" string
    x = Fraction(cert_data["model"]["W"][1][2]) + Fraction(1, 1000000)
    cert_data["model"]["W"][1][2] = f"{x.numerator}/{x.denominator}"
    bad = write_json(tmp_path / "tampered.json", cert_data)
    rc, out, err = run(capsys, "certify", bad)
    assert rc == 1
    assert "FAILS" in out
    assert "Traceback" not in err

    rc, out, err = run(capsys, "certify", bad, "--json")
    assert rc == 1
    report = json.loads(out)
    assert report["holds"] is False and report["failed"] >= 1


def test_certify_tampered_answer(model3, tmp_path, capsys):
    path, _ = model3
    cert = tmp_path / "cert.json"
    assert run(capsys, "learn", "single-head", "--model", path, "--json", "--certificate", cert)[0] == 0
    cert_data = json.loads(cert.read_text())
    # swap two answers: the model no longer reproduces the transcript
    t = cert_data["transcript"]
    t[0]["answer"], t[-1]["answer"] = t[-1]["answer"], t[0]["answer"]
    rc, out, err = run(capsys, "certify", write_json(tmp_path / "swapped.json", cert_data))
    assert rc == 1
    assert "FAILS" in out


@pytest.mark.parametrize(
    "content",
    [
        '{"kind": "single-head", "W": [["1"]], "v": ["1"]}',  # a model, not a certificate
        "not json",
        '{"kind": "certificate", "certificate_kind": "exact", "model": {"W": [["1"]], "v": ["1"]}, "transcript": 3}',
        '{"kind": "certificate", "certificate_kind": "maybe", "model": {"W": [["1"]], "v": ["1"]}, "transcript": []}',
    ],
    ids=["model-file", "not-json", "transcript-not-a-list", "bad-certificate-kind"],
)
def test_certify_bad_files(tmp_path, capsys, content):
    f = tmp_path / "c.json"
    f.write_text(content)
    rc, out, err = run(capsys, "certify", f)
    assert rc == 2 and out == ""
    assert_one_line_error(err)


def test_certify_missing_file(tmp_path, capsys):
    rc, out, err = run(capsys, "certify", tmp_path / "absent.json")
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert "absent.json" in line


def test_certify_does_not_evaluate_model_text(model3, tmp_path, capsys):
    path, _ = model3
    cert = tmp_path / "cert.json"
    assert run(capsys, "learn", "single-head", "--model", path, "--json", "--certificate", cert)[0] == 0
    cert_data = json.loads(cert.read_text())
    marker = tmp_path / "pwned"
    cert_data["model"]["W"][0][0] = f"__import__('os').system('touch {marker}')"
    rc, out, err = run(capsys, "certify", write_json(tmp_path / "evil.json", cert_data))
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert "W[0][0]" in line
    assert not marker.exists()


# -- bad input to learn ----------------------------------------------------------------


def _model(W, v, **extra):
    return {"kind": "single-head", "W": W, "v": v, **extra}


BAD_MODELS = {
    "nan": (_model([["nan", "0"], ["0", "1"]], ["1", "1"]), ["W[0][0]", "nan"]),
    "inf": (_model([["1", "0"], ["0", "-inf"]], ["1", "1"]), ["W[1][1]"]),
    "float-nan-token": ('{"kind": "single-head", "W": [[NaN, 0], [0, 1]], "v": [1, 1]}', ["W[0][0]"]),
    "zero-denominator": (_model([["1/0", "0"], ["0", "1"]], ["1", "1"]), ["W[0][0]"]),
    "boolean": (_model([["1", "0"], ["0", "1"]], [True, "1"]), ["v[0]"]),
    "null": (_model([[None, "0"], ["0", "1"]], ["1", "1"]), ["W[0][0]"]),
    "non-square-W": (_model([["1", "0", "2"], ["0", "1", "3"]], ["1", "1"]), ["W"]),
    "ragged-W": (_model([["1", "0"], ["0"]], ["1", "1"]), ["W"]),
    "v-too-long": (_model([["1", "0"], ["0", "1"]], ["1", "1", "1"]), ["expected"]),
    "v-too-short": (_model([["1", "0"], ["0", "1"]], ["1"]), ["expected"]),
    "empty": (_model([], []), ["W"]),
    "d-mismatch": (_model([["1", "0"], ["0", "1"]], ["1", "1"], d=3), ["d"]),
    "W-not-a-matrix": (_model(5, ["1"]), ["W"]),
    "missing-v": ({"kind": "single-head", "W": [["1"]]}, ["missing", "v"]),
    "unknown-kind": (_model([["1", "0"], ["0", "1"]], ["1", "1"]) | {"kind": "mixture-of-experts"}, ["unknown kind", "mixture-of-experts"]),
    "multi-head-for-single-head": ({"kind": "multi-head", "d": 1, "heads": [{"W": [["1"]], "v": ["1"]}]}, ["single-head"]),
    "json-list": ([["1"]], ["expected a JSON object"]),
}


@pytest.mark.parametrize("name", list(BAD_MODELS))
def test_learn_rejects_bad_models(tmp_path, capsys, name):
    model, words = BAD_MODELS[name]
    f = tmp_path / "bad.json"
    f.write_text(model if isinstance(model, str) else json.dumps(model))
    rc, out, err = run(capsys, "learn", "single-head", "--model", f)
    assert rc == 2
    assert out == ""
    line = assert_one_line_error(err)
    assert "bad.json" in line  # the message names the file
    for w in words:
        assert w in line


def test_learn_missing_file(tmp_path, capsys):
    rc, out, err = run(capsys, "learn", "single-head", "--model", tmp_path / "absent.json")
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert "absent.json" in line
    assert "cannot read" in line


def test_learn_file_that_is_not_json(tmp_path, capsys):
    f = tmp_path / "model.txt"
    f.write_text("W = [[1, 2], [3, 4]]\n")
    rc, out, err = run(capsys, "learn", "single-head", "--model", f)
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert "not valid JSON" in line


def test_learn_directory_instead_of_file(tmp_path, capsys):
    rc, out, err = run(capsys, "learn", "single-head", "--model", tmp_path)
    assert rc == 2 and out == ""
    assert_one_line_error(err)


def test_learn_never_evaluates_model_text(tmp_path, capsys):
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('echo pwned; touch {marker}')"
    f = write_json(tmp_path / "evil.json", _model([[payload, "0"], ["0", "1"]], ["1", "1"]))
    rc, out, err = run(capsys, "learn", "single-head", "--model", f)
    assert rc == 2
    assert out == ""  # in particular, no "pwned" echoed
    line = assert_one_line_error(err)
    assert "W[0][0]" in line
    assert "expected an integer, 'p/q' or decimal string" in line
    assert not marker.exists()


def test_learn_v_zero_is_not_identifiable(tmp_path, capsys):
    f = write_json(tmp_path / "zero.json", _model([["1", "2"], ["3", "4"]], ["0", "0"]))
    rc, out, err = run(capsys, "learn", "single-head", "--model", f)
    assert rc == 2 and out == ""
    line = assert_one_line_error(err, prefix="exact-attention: ")
    assert "not identifiable" in line


def test_learn_huge_entry_is_a_clean_error(tmp_path, capsys):
    f = write_json(tmp_path / "huge.json", _model([["1e400", "0"], ["0", "1"]], ["1", "1"]))
    rc, out, err = run(capsys, "learn", "single-head", "--model", f)
    assert rc == 2
    assert_one_line_error(err)


def test_learn_huge_exponent_is_rejected_quickly(tmp_path):
    f = write_json(tmp_path / "huge.json", _model([["1e999999999", "0"], ["0", "1"]], ["1", "1"]))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "exact", "learn", "single-head", "--model", str(f)],
            capture_output=True, text=True, timeout=5,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("exact-attention learn did not finish within 5 s")
    assert proc.returncode == 2
    assert_one_line_error(proc.stderr)


def test_learn_certificate_is_never_silently_dropped(model3, tmp_path, capsys):
    path, _ = model3
    cert = tmp_path / "cert.json"
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--oracle", "float", "--certificate", cert)
    assert cert.exists() or (rc != 0 and err.strip())


# -- learn low-rank ----------------------------------------------------------------------


@pytest.fixture
def low_rank_file(tmp_path, capsys):
    """A random d=6 head of rank 2 written to a file: ``(path, model)``."""
    rc, out, err = run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 1)
    assert rc == 0 and err == ""
    path = tmp_path / "model.json"
    path.write_text(out)
    return path, SingleHead.from_json(json.loads(out))


def _parse(rows) -> tuple:
    return tuple(tuple(Fraction(x) for x in row) for row in rows)


def test_random_low_rank(capsys):
    rc, out, err = run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 1)
    assert rc == 0 and err == ""
    model = SingleHead.from_json(json.loads(out))
    assert model.d == 6 and model.rank == 2
    assert model == SingleHead.random(6, seed=1, rank=2)
    rc, out2, _ = run(capsys, "random", "low-rank", "--d", 6, "--rank", 2, "--seed", 2)
    assert rc == 0 and SingleHead.from_json(json.loads(out2)) != model


def test_random_low_rank_rejects_a_rank_above_d(capsys):
    rc, out, err = run(capsys, "random", "low-rank", "--d", 3, "--rank", 4)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: rank: expected an integer 0 <= rank <= d = 3, got 4\n"


def test_learn_low_rank_json(low_rank_file, capsys):
    path, model = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 2, "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert data["queries"] == 26 == 2 * 2 * 6 - 2 * 2 + 6 and data["verification_queries"] == 2
    assert data["exact"] is True and data["mode"] == "certified" and data["certificate_kind"] == "exact"
    assert data["learner"] == "low-rank" and data["assumptions"] == [] and data["claim"] == "exact"
    assert data["equals_model"] is True and data["certificate"]["holds"] is True
    assert SingleHead.from_json(data["model"]) == model
    assert data["details"]["rank"] == 2 and data["details"]["rank_known"] is True
    K, Q = canonical_factors(model.W)
    assert _parse(data["details"]["factors"]["K"]) == K and _parse(data["details"]["factors"]["Q"]) == Q


def test_learn_low_rank_text_finds_the_rank(low_rank_file, capsys):
    path, model = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path)
    assert rc == 0 and err == ""
    lines = out.splitlines()
    assert "queries     30 (2rd − r² + 2d − r = 30 with the found r = 2), longest sequence 2" in lines
    assert "checks      2 verification queries (lengths 3, 4), reproduced exactly" in lines
    assert any(line.startswith("rank        2 (found by exact rank tests; sketch seed ") for line in lines)
    assert "exact       yes: equal to the model" in lines
    assert any(line.startswith("certificate certificate holds") for line in lines)
    rc, out, _ = run(capsys, "learn", "low-rank", "--model", path, "--rank", 2)
    assert rc == 0
    assert any(line.startswith("rank        2 (within the given bound; sketch seed ") for line in out.splitlines())
    assert "queries     26 (2rd − r² + d = 26), longest sequence 2" in out.splitlines()
    rc, out, _ = run(capsys, "learn", "low-rank", "--model", path, "--json")
    data = json.loads(out)
    assert data["queries"] == 30 and data["details"]["rank"] == 2 and data["details"]["rank_known"] is False
    assert data["verification_queries"] == 2
    assert SingleHead.from_json(data["model"]) == model


def test_learn_low_rank_cs(low_rank_file, capsys):
    pytest.importorskip("cvxpy")
    path, model = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2, "--json")
    assert rc == 0 and err == ""
    data = json.loads(out)
    assert data["mode"] == "cs" and data["exact"] is False and data["error_estimate"] is None
    assert data["learner"] == "low-rank-cs" and data["claim"] == "approximate"
    assert data["queries"] == 6 + cs_measurements(6, 2) == 90 and data["verification_queries"] == 0
    assert "certificate_kind" not in data and "certificate" not in data
    learned = SingleHead.from_json(data["model"])
    W, _ = model.to_numpy()
    Wh, _ = learned.to_numpy()
    assert float(np.linalg.norm(Wh - W) / np.linalg.norm(W)) <= 1e-6
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2)
    assert rc == 0 and err == ""
    assert "queries     90 (d + m = 6 + 84), longest sequence 2" in out.splitlines()
    assert "relative Frobenius error" in out


def test_learn_low_rank_cs_without_cvxpy_is_a_one_line_error(low_rank_file, capsys, monkeypatch):
    hide_cvxpy(monkeypatch)
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: learn_low_rank_cs needs cvxpy: pip install 'exact-attention[cs]'\n"


def test_learn_low_rank_cs_needs_the_rank(low_rank_file, capsys):
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--method", "cs")
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert "--rank" in line


def test_learn_low_rank_bad_rank_is_one_line(low_rank_file, capsys):
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 7)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: rank: expected an integer 0 <= r <= d = 6 or None, got 7\n"


def test_learn_low_rank_option_of_the_other_method_is_an_error(low_rank_file, capsys):
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 2, "--m", 40)
    assert rc == 2 and out == ""
    assert err == "exact-attention: error: --m: applies to --method cs, not sketch\n"


def test_certificate_of_the_sketch_learner(low_rank_file, tmp_path, capsys):
    path, _ = low_rank_file
    cert = tmp_path / "cert.json"
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 2, "--json", "--certificate", cert)
    assert rc == 0 and err == ""
    data = json.loads(cert.read_text())
    assert data["learner"] == "low-rank" and data["conditions"]["rank"] == 2
    assert set(data["conditions"]) == {"rank", "sketch_seed", "sketch_scale_bits"}
    assert len(data["transcript"]) == 26 and len(data["checks"]) == 2
    rc, out, err = run(capsys, "certify", cert, "--json")
    assert rc == 0 and err == ""
    got = json.loads(out)
    assert {k: got[k] for k in ("holds", "kind", "checked", "failed", "failures", "reason")} == {
        "holds": True, "kind": "exact", "checked": 26 + 2, "failed": 0, "failures": [], "reason": None
    }
    assert got["message"].endswith(
        "(the low-rank learner's probe set, which identifies the model among bias-free single heads of rank <= 2, "
        "for a sketch generic for W (its seed independent of W); "
        "the model class checked by 2 random queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))"
    )
    data["conditions"] = {"max_rank": 2}  # the old label of the rank bound is not a condition any more
    old = write_json(tmp_path / "old.json", data)
    rc, out, err = run(capsys, "certify", old)
    assert rc == 2 and out == ""
    assert err == (
        f"exact-attention: error: {old}: certificate: conditions: 'max_rank' is not a condition of learner "
        "'low-rank' (allowed: biases, rank, sketch_scale_bits, sketch_seed)\n"
    )


def test_certificate_is_refused_for_compressed_sensing(low_rank_file, tmp_path, capsys):
    path, _ = low_rank_file
    cert = tmp_path / "cert.json"
    argv = ("learn", "low-rank", "--model", path, "--method", "cs", "--rank", 2, "--certificate", cert)
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert err == (
        "exact-attention: error: --certificate: learner 'low-rank-cs' gives approximate results, "
        "which carry no certificate\n"
    )
    assert not cert.exists()


def test_rank_bound_below_the_truth_is_an_error_with_checks(low_rank_file, capsys):
    """rank(W) = 2 > r = 1: the verification queries expose the rank-1 answer (one line, exit 2)."""
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 1)
    assert rc == 2 and out == ""
    line = assert_one_line_error(err)
    assert line.startswith(f"{ERROR_PREFIX} not a single head of rank <= 1: the learned model does not reproduce")
    assert "the learner's result holds only among bias-free single heads; among heads of rank <= 1; for a sketch generic" in line


def test_rank_bound_below_the_truth_without_checks_reports_the_difference(low_rank_file, capsys):
    """With --checks 0: a wrong model, a holding certificate that states its assumption, and exit 1."""
    path, _ = low_rank_file
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", 1, "--checks", 0)
    assert rc == 1 and err == ""
    lines = out.splitlines()
    assert "checks      none (--checks 0): the result holds among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W)" in lines
    assert "exact       NO: differs from the model (among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W))" in lines
    assert any(line.startswith("rank        1 (within the given bound; sketch seed ") for line in lines)
    assert any(
        line.startswith("certificate certificate holds")
        and line.endswith("assuming it is among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W))")
        for line in lines
    )


# -- verify ----------------------------------------------------------------------------


#: The claims of ``verify --quick`` that need an optional dependency (the cs extra).
CS_CLAIM = "Thm 5.1 CS learner: rel. error <= 1e-6 at C = 3.5"
PHASE_CLAIM = "Thm 5.1 CS phase transition: fails below 2rd − r² measurements, succeeds at the default C"


def hide_cvxpy(monkeypatch) -> None:
    """Make cvxpy unimportable (``import cvxpy`` raises, ``find_spec`` finds nothing), as without the extra."""
    monkeypatch.setitem(sys.modules, "cvxpy", None)


def test_verify_quick_json(capsys):
    """Every claim holds, except that one whose optional dependency is not installed is skipped."""
    rc, out, err = run(capsys, "verify", "--quick", "--json", "--no-progress")
    assert rc == 0
    assert err == ""  # --no-progress: nothing on stderr
    lines = out.splitlines()
    assert lines
    every = [json.loads(line) for line in lines]
    rows = [r for r in every if r["row"] == "claim"]
    instances = [r for r in every if r["row"] == "instance"]  # one row per instance, before its claim's row
    assert len(instances) == sum(len(r["outcomes"]) for r in rows) and all(r["task"].count(":") == 2 for r in instances)
    cvxpy_installed = importlib.util.find_spec("cvxpy") is not None
    for row in rows:
        if row["claim"] in (CS_CLAIM, PHASE_CLAIM) and not cvxpy_installed:
            assert row["holds"] is False and row["skipped"] == "cvxpy is not installed", row
            continue
        assert row["holds"] is True and row["skipped"] is None, row
        assert row["instances"] == row["exact"] == row["count"] > 0
        assert row["failures"] == []
    names = [row["claim"] for row in rows]
    assert any("Thm 4.1" in n for n in names) and CS_CLAIM in names
    assert len(set(names)) == len(names)


def test_verify_table_without_cvxpy_skips_its_claims_and_exits_0(monkeypatch, capsys):
    """The README's promise: a claim whose optional dependency is missing is reported as skipped."""
    hide_cvxpy(monkeypatch)
    rc, out, err = run(capsys, "verify", "--quick", "--quiet")
    assert rc == 0
    assert err == ""
    lines = out.rstrip("\n").splitlines()
    header = lines[0].split()
    assert header == ["claim", "instances", "exact", "count", "seconds"]
    assert set(lines[1]) == {"-"}
    assert any(line.startswith("Thm 4.1") and line.rstrip().endswith("ok") for line in lines[2:])
    assert not any("FAIL" in line for line in lines)
    cs_rows = [line for line in lines if line.startswith(CS_CLAIM)]
    assert len(cs_rows) == 1 and cs_rows[0].rstrip().endswith("skipped")
    assert f"  SKIPPED {CS_CLAIM}: cvxpy is not installed" in lines
    assert f"  SKIPPED {PHASE_CLAIM}: cvxpy is not installed" in lines
    claims = [line for line in lines[2:] if line.rstrip().endswith((" ok", " skipped"))]
    assert lines[-1] == f"{len(claims) - 2}/{len(claims) - 2} claims hold (2 skipped)"


# -- entry points ----------------------------------------------------------------------


def _env():
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    return env


def test_python_dash_m_exact(capsys):
    proc = subprocess.run(
        [sys.executable, "-m", "exact", "random", "single-head", "--d", "2", "--seed", "1"],
        capture_output=True, text=True, timeout=120, env=_env(),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    data = json.loads(proc.stdout)
    assert data["kind"] == "single-head" and data["d"] == 2
    # same output as the in-process call
    assert proc.stdout == run(capsys, "random", "single-head", "--d", 2, "--seed", 1)[1]


def test_console_script_help():
    script = shutil.which(PROG, path=sysconfig.get_path("scripts")) or shutil.which(PROG)
    assert script, f"the {PROG} console script is not installed"
    proc = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"usage: {PROG}")
    for command in ("random", "learn", "certify", "verify"):
        assert command in proc.stdout
