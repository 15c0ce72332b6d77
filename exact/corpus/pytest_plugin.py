"""The pytest plugin: run any learner on a regression corpus, one test per instance.

Installed with the package (entry point ``pytest11``), it does nothing unless asked::

    exact-attention corpus export corpus/
    pytest --exact-attention-corpus corpus/ --learner mypkg.module:learn

Every instance of the corpus becomes a test item ``THEOREM.json::NAME``.  An item passes when
the learner's result equals the reference exactly and the oracle counted no more queries
than the theorem's formula allows; a failure names the instance and the first entry that
differs.  The terminal summary gives, per theorem, the instances, how many were exact and
how many met the count, and the queries asked against the formula.  The learner's
signature is described in :mod:`exact.corpus.judge`.

Before running the learner, each item checks that this package's exact oracle reproduces
the corpus's recorded answers (computed independently, with mpmath) to 45 digits.

Without explicit test paths only the corpus is collected; explicit paths must include it.
The learner runs in the test process: the plugin checks learners that try to be right, it
is no sandbox against one that patches the judge.  ``--exact-attention-theorem T``
(repeatable) restricts the run to some theorems.
"""

from __future__ import annotations

import importlib
import os

import pytest

__all__ = ["load_learner"]

_STATE = pytest.StashKey[dict]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("exact-attention", "exact-attention regression corpus")
    group.addoption("--exact-attention-corpus", metavar="DIR", default=None,
                    help="run a learner on every instance of this corpus (written by 'exact-attention corpus export')")
    group.addoption("--learner", metavar="MODULE:FUNCTION", default=None,
                    help="the learner to run on the corpus: learn(oracle, *, theorem, hints) -> dict")
    group.addoption("--exact-attention-theorem", metavar="THEOREM", action="append", default=None,
                    help="only this theorem of the corpus (4.1, 5.1, kkg, ffn, transformer; repeatable)")


def load_learner(spec: str):
    """The callable named ``MODULE:FUNCTION`` (imported, never evaluated)."""
    module, _, name = spec.partition(":")
    if not module or not name or not all(part.isidentifier() for part in module.split(".") + name.split(".")):
        raise pytest.UsageError(f"--learner: expected MODULE:FUNCTION (e.g. mypkg.module:learn), got {spec!r}")
    try:
        obj = importlib.import_module(module)
    except ImportError as e:
        raise pytest.UsageError(f"--learner: cannot import {module!r} ({e})") from None
    for part in name.split("."):
        if not hasattr(obj, part):
            raise pytest.UsageError(f"--learner: {module!r} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise pytest.UsageError(f"--learner: {spec!r} is not callable")
    return obj


def pytest_configure(config) -> None:
    directory = config.getoption("exact_attention_corpus")
    if directory is None:
        if config.getoption("learner") is not None:
            raise pytest.UsageError("--learner needs --exact-attention-corpus DIR")
        return
    from ..errors import InvalidArgument
    from .load import load_corpus

    spec = config.getoption("learner")
    if spec is None:
        raise pytest.UsageError("--exact-attention-corpus needs --learner MODULE:FUNCTION")
    try:
        corpus = load_corpus(directory, theorems=config.getoption("exact_attention_theorem"))
    except InvalidArgument as e:
        raise pytest.UsageError(str(e)) from None
    files = {os.path.realpath(os.path.join(corpus.directory, corpus.manifest["theorems"][t]["file"])): t
             for t in corpus.instances}
    config.stash[_STATE] = {"corpus": corpus, "learner": load_learner(spec), "files": files, "verdicts": [],
                            "spec": spec}
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [directory]  # no paths given: collect the corpus only
    elif not any(os.path.realpath(a.split("::")[0]).startswith(os.path.realpath(directory)) for a in config.args):
        raise pytest.UsageError(f"--exact-attention-corpus: test paths were given without the corpus; add {directory} "
                                "to them (or give none), so that it is not silently left out")


def pytest_collect_file(file_path, parent):
    state = parent.config.stash.get(_STATE, None)
    if state is None:
        return None
    theorem = state["files"].get(os.path.realpath(file_path))
    if theorem is None:
        return None
    return CorpusFile.from_parent(parent, path=file_path, theorem=theorem)


class CorpusFile(pytest.File):
    """One theorem's file of the corpus: an item per instance."""

    def __init__(self, *, theorem: str, **kwargs):
        super().__init__(**kwargs)
        self.theorem = theorem

    def collect(self):
        for instance in self.config.stash[_STATE]["corpus"].instances[self.theorem]:
            yield CorpusItem.from_parent(self, name=instance.name, instance=instance)


class CorpusFailure(Exception):
    """An instance the learner got wrong, or asked too many queries for."""


class CorpusItem(pytest.Item):
    """One corpus instance: run the learner, judge exactness and the count."""

    def __init__(self, *, instance, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance

    def runtest(self) -> None:
        from .judge import check_oracle, run_instance

        state = self.config.stash[_STATE]
        problem = check_oracle(self.instance)
        if problem is not None:
            raise CorpusFailure(f"this package's oracle disagrees with the corpus: {problem}")
        verdict = run_instance(state["learner"], self.instance)
        state["verdicts"].append(verdict)
        if not verdict.exact:
            raise CorpusFailure(f"{verdict.theorem} / {verdict.instance}: not exact: {verdict.message} "
                                f"({verdict.queries} queries)")
        if not verdict.count_ok:
            raise CorpusFailure(f"{verdict.theorem} / {verdict.instance}: {verdict.queries} queries, above the "
                                f"theorem's {verdict.formula} ({verdict.rule})")

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance(CorpusFailure):
            return f"corpus instance {str(excinfo.value)}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"{self.instance.theorem}: {self.instance.name}"


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state["verdicts"]:
        return
    tr = terminalreporter
    tr.write_sep("=", f"exact-attention corpus: {state['spec']}")
    tr.write_line(f"{'theorem':<12} {'instances':>9} {'exact':>7} {'count':>7} {'queries / formula':>20}  rule")
    by: dict = {}
    for v in state["verdicts"]:
        by.setdefault(v.theorem, []).append(v)
    for theorem, vs in by.items():
        n = len(vs)
        exact = sum(v.exact for v in vs)
        count = sum(v.count_ok for v in vs)
        queries = f"{sum(v.queries for v in vs)} / {sum(v.formula for v in vs)}"
        tr.write_line(f"{theorem:<12} {n:>9} {f'{exact}/{n}':>7} {f'{count}/{n}':>7} {queries:>20}  {vs[0].rule}")
