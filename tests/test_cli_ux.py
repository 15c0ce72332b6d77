"""What a user of the command line sees: certificates from a function, progress over the whole
run, one-line messages that name what was wrong, and JSON errors in --json mode."""

import io
import json
import sys
import textwrap
import time

import pytest

from exact.cli import main
from exact.progress import report, terminal_reporter

from test_cli import assert_one_line_error, run


@pytest.fixture
def oracle_module(tmp_path, monkeypatch):
    """A user's module in the working directory: a 2-d single head in float64."""
    (tmp_path / "myhead.py").write_text(textwrap.dedent("""
        import numpy as np
        W = np.array([[1.0, 0.5], [0.0, -1.0]])
        v = np.array([1.0, 0.25])
        def f(X):
            assert isinstance(X, np.ndarray) and X.dtype == np.float64 and X.ndim == 2 and X.shape[1] == 2
            s = X @ W @ X[-1]
            a = np.exp(s - s.max())
            return float(a @ (X @ v) / a.sum())
    """))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("myhead", None)
    return tmp_path


def test_learn_from_a_function_writes_the_certificate_it_was_asked_for(oracle_module, capsys):
    cert = oracle_module / "cert.json"
    rc, out, err = run(capsys, "learn", "single-head", "--oracle", "myhead:f", "--d", 2, "--accuracy", "1e-12",
                       "--grid", "dyadic:4", "--certificate", cert)
    assert rc == 0, err
    assert cert.exists() and json.loads(cert.read_text())["learner"] == "single-head"
    assert f"wrote       {cert}" in out
    rc, out, _ = run(capsys, "certify", cert)
    assert rc == 0 and "certificate holds" in out


def test_the_oracle_option_says_what_the_function_receives(capsys):
    with pytest.raises(SystemExit):
        main(["learn", "single-head", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "numpy float64 array of shape (N, d)" in text and "returning a real number" in text


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_covers_the_whole_run_not_only_the_counted_phases():
    out = _Terminal()
    with terminal_reporter(label="learn single-head", delay=0.0, file=out):
        time.sleep(0.7)  # a phase that reports no counts (loading a model, deciding equality)
        report("queries", 5, 10)
    text = out.getvalue()
    assert "learn single-head" in text and "queries" in text
    quiet = _Terminal()
    with terminal_reporter(quiet=True, label="learn single-head", delay=0.0, file=quiet):
        report("queries", 5, 10)
    assert quiet.getvalue() == ""


@pytest.mark.parametrize("argv, message", [
    (["random", "ffn", "--d", 3, "--m", 2, "--bound", -1], "--bound: expected a number > 0, got -1"),
    (["random", "single-head", "--d", "12345678901234"], "of at most 12 digits, got a 14-digit integer"),
    (["random", "single-head", "--d", 3, "--seed", -1], "--seed: expected an integer >= 0, got -1"),
    (["verify", "--scheduler-timeout", -1], "--scheduler-timeout: expected a number of seconds > 0, got -1"),
])
def test_option_messages_name_what_was_wrong(capsys, argv, message):
    rc, out, err = run(capsys, *argv)
    assert rc == 2 and out == ""
    assert message in assert_one_line_error(err)


def test_library_messages_show_rationals_as_the_user_wrote_them():
    from exact.cli import _as_flags

    assert _as_flags("w_bound: expected > 0, got Fraction(-3, 4)") == "--w-bound: expected > 0, got -3/4"


def test_learn_multi_head_errors_are_one_line(capsys, tmp_path):
    path = tmp_path / "mh.json"
    assert main(["random", "multi-head", "--d", "2", "--heads", "2", "--seed", "0", "--output", str(path)]) == 0
    capsys.readouterr()
    rc, out, err = run(capsys, "learn", "multi-head", "--model", path, "--max-heads", 1)  # the bound is too small
    assert rc == 2
    assert_one_line_error(err)
    rc, out, err = run(capsys, "learn", "multi-head", "--model", path)
    assert rc == 0 and err == "" and f"--heads 2: from {path}" in out  # the file's H is named on stdout


def test_json_mode_errors_are_json_on_stdout_too(capsys, tmp_path):
    rc, out, err = run(capsys, "learn", "single-head", "--model", tmp_path / "missing.json", "--json")
    assert rc == 2
    line = assert_one_line_error(err)
    assert json.loads(out) == {"row": "error", "error": line.removeprefix("exact-attention: error: "), "status": 2}
    rc, out, err = run(capsys, "certify", tmp_path / "missing.json", "--json")
    assert rc == 2 and json.loads(out)["status"] == 2
