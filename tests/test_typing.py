"""Types: mypy runs clean on the ``exact`` package (configuration in pyproject.toml), the public
signatures name the :class:`~exact.protocols.Oracle` and :class:`~exact.protocols.Model`
protocols, and the arithmetics are fully annotated."""

import ast
import functools
import inspect
import typing
from pathlib import Path

import pytest

from exact import registry
from exact.learn import LearnResult
from exact.protocols import Model, Oracle

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean_on_exact():
    api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra")
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental", str(ROOT / "exact")])
    assert status == 0, out + err
    assert "Success: no issues found" in out


# -- what the signatures say, checked without mypy -------------------------------------------


def _learners():
    for spec in registry.learners():
        learn = spec.learn.func if isinstance(spec.learn, functools.partial) else spec.learn
        yield spec.name, learn


@pytest.mark.parametrize("name, learn", list(_learners()), ids=[n for n, _ in _learners()])
def test_every_registered_learner_takes_an_oracle_and_returns_a_learn_result(name, learn):
    hints = typing.get_type_hints(learn)
    first = next(iter(inspect.signature(learn).parameters))
    assert first == "oracle"
    assert Oracle in typing.get_args(hints["oracle"]) or hints["oracle"] is Oracle, hints["oracle"]
    assert hints["return"] is LearnResult


def test_the_threshold_learner_also_takes_a_model():
    from exact.learn import learn_threshold
    from exact.threshold import ThresholdOracle

    assert set(typing.get_args(typing.get_type_hints(learn_threshold)["oracle"])) == {ThresholdOracle, Oracle, Model}


def test_the_model_taking_functions_take_a_model():
    from exact.certify import check_transcript, failed_entries, make_certificate
    from exact.checks import check_sequences

    for f in (check_transcript, failed_entries, make_certificate, check_sequences):
        assert typing.get_type_hints(f)["model"] is Model, f.__name__


def _unannotated(path: Path) -> list[str]:
    """Every function of ``path`` with a parameter (other than self or cls) or a return left unannotated."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        args = node.args
        params = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        missing = [a.arg for a in params if a.annotation is None and a.arg not in ("self", "cls")]
        if node.returns is None:
            missing.append("return")
        if missing:
            out.append(f"{path.name}:{node.lineno} {node.name}: {', '.join(missing)}")
    return out


def test_the_arithmetics_are_fully_annotated():
    files = sorted((ROOT / "exact" / "arith").glob("*.py"))
    assert len(files) == 5
    assert [m for f in files for m in _unannotated(f)] == []


def test_the_annotation_walk_finds_what_is_missing(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def f(a, b: int) -> int:\n    return b\n\nclass C:\n    def g(self, *xs: int):\n        pass\n")
    assert _unannotated(f) == ["m.py:1 f: a", "m.py:5 g: return"]
