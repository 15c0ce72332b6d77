"""The command line as a demanding user meets it: versions, help, validated options,
honest exit codes, JSON that carries the certificate's verdict, progress and streaming."""

import argparse
import json
import subprocess
import sys

import pytest

from exact import __version__
from exact.cli import build_parser, main
from exact.models import SingleHead
from exact.progress import reporting

PREFIX = "exact-attention: error:"


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def usage_error(capsys, *argv) -> str:
    """An option error: exit status 2 and exactly one line on stderr, no traceback."""
    with pytest.raises(SystemExit) as info:
        main([str(a) for a in argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    assert len(lines[0]) <= 300 and "Traceback" not in err
    return lines[0]


def write(tmp_path, model, name="m.json"):
    path = tmp_path / name
    path.write_text(json.dumps(model.to_json()))
    return path


# -- version and help ----------------------------------------------------------------------


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"exact-attention {__version__}"


def _actions(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from ((f"{name} {where}", a) for where, a in _actions(sub))
        else:
            yield "", action


def test_every_option_has_help():
    missing = [f"{where}{'/'.join(a.option_strings) or a.dest}" for where, a in _actions(build_parser())
               if not a.help and not isinstance(a, argparse._HelpAction)]
    assert missing == []


def test_grid_help_lists_the_grids():
    helps = [a.help for where, a in _actions(build_parser()) if "--grid" in a.option_strings]
    assert helps and all(all(g in h for g in ("rational:Q", "dyadic:k", "float16", "bfloat16", "float32", "float64"))
                         for h in helps)


def test_learn_commands_come_from_the_registry(capsys):
    from exact import registry

    with pytest.raises(SystemExit):
        main(["learn", "--help"])
    out = capsys.readouterr().out
    for spec in registry.learners():
        assert spec.command in out


# -- numeric options are validated ---------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, words",
    [
        (["random", "single-head", "--d", "0"], "--d"),
        (["random", "single-head", "--d", "abc"], "expected an integer"),
        (["random", "single-head", "--d", "3", "--seed", "-1"], "--seed"),
        (["random", "single-head", "--d", "3", "--bound", "lots"], "--bound"),
        (["random", "single-head", "--d", "3", "--grid", "float8"], "--grid"),
        (["random", "low-rank", "--d", "3", "--rank", "-2"], "--rank"),
        (["verify", "--max-d", "0"], "--max-d"),
        (["verify", "--max-d", "1e9"], "--max-d"),
        (["counterexample", "--d", "2", "--heads", "2", "--inputs", "-1"], "--inputs"),
        (["counterexample", "--d", "2", "--heads", "2", "--inputs", "10000000"], "--inputs"),
        (["learn", "single-head", "--model", "x.json", "--checks", "-1"], "--checks"),
        (["learn", "single-head", "--model", "x.json", "--max-prec", "3"], "--max-prec"),
        (["learn", "single-head", "--model", "x.json", "--check-seed", "x"], "--check-seed"),
        (["learn", "low-rank", "--model", "x.json", "--rank", "-1"], "--rank"),
        (["learn", "low-rank", "--model", "x.json", "--method", "cs", "--C", "0"], "--C"),
        (["learn", "low-rank", "--model", "x.json", "--method", "cs", "--m", "0"], "--m"),
    ],
)
def test_bad_option_values_get_one_line(capsys, argv, words):
    assert words in usage_error(capsys, *argv)


def test_a_huge_random_model_is_refused_at_once_with_an_estimate(capsys):
    line = usage_error(capsys, "random", "single-head", "--d", "100000")
    assert "1..1024" in line and "days" in line and "TB" in line


def test_options_of_another_method_are_an_error(tmp_path, capsys):
    path = write(tmp_path, SingleHead.random(4, seed=1, rank=1))
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", "1", "--C", "2")
    assert rc == 2 and "--C: applies to --method cs" in err


# -- honest results and exit codes ------------------------------------------------------------


def test_json_carries_the_certificate_verdict_and_the_comparison(tmp_path, capsys):
    path = write(tmp_path, SingleHead.random(3, seed=4))
    rc, out, err = run(capsys, "learn", "single-head", "--model", path, "--json")
    assert rc == 0, err
    data = json.loads(out)
    assert data["equals_model"] is True and data["exact"] is True
    assert data["queries"] == 12 and data["verification_queries"] == 2 and data["assumptions"] == []
    cert = data["certificate"]
    assert cert["kind"] == "exact" and cert["holds"] is True
    assert "identifies the model among bias-free single heads" in cert["covers"]


def test_rank_bound_below_the_truth_is_an_error_not_an_exact_result(tmp_path, capsys):
    path = write(tmp_path, SingleHead.random(6, seed=3, rank=2))
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", "1")
    assert rc == 2 and out == ""
    assert "not a single head of rank <= 1" in err


@pytest.mark.parametrize("json_mode", [False, True])
def test_without_checks_a_wrong_rank_is_reported_with_its_assumption_and_exit_1(tmp_path, capsys, json_mode):
    path = write(tmp_path, SingleHead.random(6, seed=3, rank=2))
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", "1", "--checks", "0",
                       *(["--json"] if json_mode else []))
    assert rc == 1, err  # the result differs from the model file
    if json_mode:
        data = json.loads(out)
        assert data["equals_model"] is False and data["exact"] is True
        assert data["assumptions"] == ["among bias-free single heads", "among heads of rank <= 1", "for a sketch generic for W (its seed independent of W)"]
        assert data["claim"] == "exact among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W)"
        assert data["certificate"]["holds"] is True and "among heads of rank <= 1" in data["certificate"]["covers"]
    else:
        assert "NO: differs from the model (among bias-free single heads, among heads of rank <= 1, for a sketch generic for W (its seed independent of W))" in out
        assert "checks      none (--checks 0)" in out


def test_certificate_round_trip_and_json_report(tmp_path, capsys):
    path = write(tmp_path, SingleHead.random(3, seed=6, rank=1))
    cert = tmp_path / "cert.json"
    rc, out, err = run(capsys, "learn", "low-rank", "--model", path, "--rank", "1", "--certificate", cert)
    assert rc == 0, err
    rc, out, err = run(capsys, "certify", cert, "--json")
    report = json.loads(out)
    assert rc == 0 and report["holds"] is True and report["checked"] == 3 + 3 * 1 * 2 - 1 + 2
    data = json.loads(cert.read_text())
    assert data["learner"] == "low-rank" and data["conditions"]["rank"] == 1 and len(data["checks"]) == 2
    data["conditions"]["sketch_seed"] += 1  # another sketch: the transcript is not its probe set
    cert.write_text(json.dumps(data))
    rc, out, err = run(capsys, "certify", cert)
    assert rc == 1 and "not the low-rank learner's probe set" in out


# -- progress and streaming -----------------------------------------------------------------------


def test_learners_report_progress_through_the_scoped_reporter():
    from exact import ExactOracle, learn_single_head

    seen = []
    with reporting(lambda phase, done, total: seen.append((phase, done, total))):
        learn_single_head(ExactOracle(SingleHead.random(3, seed=1)))
    assert ("queries", 12, 12) in seen


def test_verify_streams_rows_even_when_piped():
    proc = subprocess.Popen(
        [sys.executable, "-m", "exact", "verify", "--theorem", "7.1", "--quick", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        header = proc.stdout.readline()
        proc.stdout.readline()  # the rule under the header
        first_row = proc.stdout.readline()
        still_running = proc.poll() is None  # the first claim's row arrived before the run ended
        rest, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert header.startswith("claim") and first_row.startswith("Prop 7.1")
    assert still_running
    assert proc.returncode == 0, err
    assert rest.rstrip().endswith("claims hold")


def test_error_hints_name_flags_not_python_keywords(tmp_path, capsys):
    big = SingleHead([[10**5, 0], [0, 1]], [1, 1])  # a logit of 1e5 needs about 1.4e5 bits
    rc, out, err = run(capsys, "learn", "single-head", "--model", write(tmp_path, big), "--max-prec", "1024")
    assert rc == 2
    assert "--max-prec 1024" in err and "raise --max-prec" in err and "--mode symbolic" in err
    assert "max_prec" not in err and "mode='" not in err
