"""Optional extras: what needs one skips without it, and runs with it.

Test functions use ``pytest.importorskip``; doctests are listed in the root conftest's
``DOCTEST_EXTRAS``, whose hook skips them (naming the extra) only when it is missing.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import exact
import proofs
from conftest import DOCTEST_EXTRAS, installed

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("torch", "cvxpy", "matplotlib", "dask", "distributed")
FILES = ["exact/native.py", "exact/learn/low_rank_cs.py"]  # the modules of the listed doctests


def _doctests() -> dict[str, doctest.DocTest]:
    """Every doctest of the two packages, by name (``exact.__main__`` would run the command line)."""
    out = {}
    finder = doctest.DocTestFinder()
    for pkg in (exact, proofs):
        names = [pkg.__name__] + [m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]
        for name in names:
            if name == "exact.__main__":
                continue
            for test in finder.find(importlib.import_module(name)):
                if test.examples:
                    out[test.name] = test
    return out


def test_every_listed_doctest_exists_and_needs_a_known_extra():
    tests = _doctests()
    assert len(tests) > 100
    assert set(DOCTEST_EXTRAS) <= set(tests)
    assert set(DOCTEST_EXTRAS.values()) <= set(EXTRAS)


def test_every_doctest_that_imports_an_extra_is_listed():
    pattern = re.compile(rf"^\s*(import|from)\s+({'|'.join(EXTRAS)})\b")
    importing = {name for name, t in _doctests().items() if any(pattern.match(e.source) for e in t.examples)}
    assert importing == {name for name, module in DOCTEST_EXTRAS.items() if module == "torch"}  # the cs one calls it


def test_installed_sees_a_hidden_module(monkeypatch):
    assert installed("numpy") and not installed("no_such_module_here") and not installed("no_such.sub")
    monkeypatch.setitem(sys.modules, "numpy", None)  # how the tests hide an extra
    assert not installed("numpy")


def _run(hidden: tuple[str, ...]) -> subprocess.CompletedProcess:
    code = (
        "import sys, pytest\n"
        + "".join(f"sys.modules[{m!r}] = None\n" for m in hidden)
        + f"sys.exit(pytest.main(['-q', '-rs', '-p', 'no:cacheprovider', *{FILES!r}]))\n"
    )
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_the_listed_doctests_skip_without_their_extras():
    run = _run(("torch", "cvxpy"))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "exact/native.py: needs the optional 'torch' (not installed)" in run.stdout
    assert "exact/learn/low_rank_cs.py: needs the optional 'cvxpy' (not installed)" in run.stdout
    assert re.search(r"\b1 passed, 4 skipped\b", run.stdout), run.stdout


def test_the_listed_doctests_run_with_their_extras():
    for module in ("torch", "cvxpy"):
        pytest.importorskip(module)
    run = _run(())
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"\b5 passed\b", run.stdout) and "skipped" not in run.stdout, run.stdout
