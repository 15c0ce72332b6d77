"""A learner that lives outside ``exact/`` reaches ``learn``, ``certify`` and ``verify`` once installed.

The package in docs/examples/diagonal-head declares its spec in the ``exact_attention.learners``
entry-point group.  It is installed with pip into a fresh virtual environment (which sees this
project through the system site-packages), and the command line is run there, from a folder
outside the repository.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "docs" / "examples" / "diagonal-head"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    where = tmp_path_factory.mktemp("plugin")
    home = where / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(home)
    python = home / "bin" / "python"
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                          "--no-build-isolation", "--quiet", str(PLUGIN)], capture_output=True, text=True, timeout=300)
    if out.returncode != 0 and "no such option: --python" in out.stderr:  # pip < 22.3
        out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--quiet",
                              "--target", str(home / "lib" / "site"), str(PLUGIN)], capture_output=True, text=True,
                             timeout=300)
    assert out.returncode == 0, out.stderr
    work = where / "work"
    work.mkdir()
    return python, work


def _run(env, *args, check=True):
    python, work = env
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([str(python), "-m", "exact", *map(str, args)], capture_output=True, text=True, cwd=work,
                         env=environ, timeout=300)
    if check:
        assert out.returncode == 0, out.stderr
    return out


def test_the_plug_in_is_listed_learns_certifies_and_is_verified(env):
    _, work = env
    assert "diagonal-head" in _run(env, "learn", "--help").stdout
    model = work / "diag.json"
    model.write_text(json.dumps({"kind": "single-head", "W": [["2", "0"], ["0", "-1/3"]], "v": ["1", "1/2"]}))
    cert = work / "cert.json"
    out = _run(env, "learn", "diagonal-head", "--model", model, "--certificate", cert)
    assert "exact       yes: equal to the model" in out.stdout and "queries     4 (2d = 4)" in out.stdout
    assert json.loads(cert.read_text())["learner"] == "diagonal-head"
    assert "certificate holds" in _run(env, "certify", cert).stdout
    out = _run(env, "verify", "diagonal-head", "--quiet")
    assert "diagonal heads: exact, 2d queries" in out.stdout and out.stdout.rstrip().endswith("1/1 claims hold")


def test_a_certificate_of_the_plug_in_is_checked_by_its_rule(env):
    _, work = env
    model = work / "full.json"
    model.write_text(json.dumps({"kind": "single-head", "W": [["2", "1"], ["0", "-1/3"]], "v": ["1", "1/2"]}))
    out = _run(env, "learn", "diagonal-head", "--model", model, check=False)
    assert out.returncode == 2 and "among heads with a diagonal W" in out.stderr  # not diagonal: refused
