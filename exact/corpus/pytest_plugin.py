"""The pytest plugin: run any learner on a regression corpus, one test per instance.

Installed with the package (entry point ``pytest11``), it does nothing unless asked::

    exact-attention corpus export corpus/
    pytest --exact-attention-corpus corpus/ --learner mypkg.module:learn

Every instance of the corpus becomes a test item ``THEOREM.json::ID``, the id being the
instance's name without spaces or ``=`` (``rational-d2``, ``rank-1-d4-rank1``), so that
``-k rational-d2`` selects it.  An item passes when the learner returned a result, the result
equals the reference exactly and the answered queries meet the theorem's count; every other
end fails it, naming the instance and the reason: a wrong entry, the count, or no judged
result at all (the learner raised, skipped, exited, or its process ended).  An item that
pytest itself skips or xfails (a marker) fails too: nothing is passed without a judgement.
The terminal summary gives, per theorem, the instances selected, how many were exact and
met the count, the queries asked against the formula (over the judged results), how many
came back without a judged result, by reason, and how many ``-k`` or ``--deselect`` left
out; a theorem the learner does not implement is listed as such.  The learner's signature is described in :mod:`exact.corpus.judge`.

The learner runs in a process of its own (:class:`~exact.corpus.host.LearnerHost`), started
once per test run with the directory pytest was started in first on its ``sys.path`` (as
``python -m pytest`` has it, so a bare ``pytest`` finds a learner module there too); the
models, the counts and the judge stay in the test process.  Before running the learner,
each item checks that this package's exact oracle reproduces the corpus's recorded answers
(computed independently, with mpmath) to 45 digits.

Without explicit test paths only the corpus is collected; explicit paths must include it.
``--exact-attention-theorem T`` (repeatable) restricts the run to some theorems.
"""

from __future__ import annotations

import os
import sys

import pytest

__all__ = ["CorpusFile", "CorpusItem", "CorpusFailure"]

_STATE = pytest.StashKey[dict]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("exact-attention", "exact-attention regression corpus")
    group.addoption("--exact-attention-corpus", metavar="DIR", default=None,
                    help="run a learner on every instance of this corpus (written by 'exact-attention corpus export')")
    group.addoption("--learner", metavar="MODULE:FUNCTION", default=None,
                    help="the learner to run on the corpus: learn(oracle, *, theorem, hints) -> dict")
    group.addoption("--exact-attention-theorem", metavar="THEOREM", action="append", default=None,
                    help="only this theorem of the corpus (4.1, 5.1, kkg, ffn, transformer; repeatable)")


def pytest_configure(config) -> None:
    directory = config.getoption("exact_attention_corpus")
    if directory is None:
        if config.getoption("learner") is not None:
            raise pytest.UsageError("--learner needs --exact-attention-corpus DIR")
        return
    from ..errors import InvalidArgument
    from .host import LearnerError, LearnerHost
    from .load import load_corpus

    spec = config.getoption("learner")
    if spec is None:
        raise pytest.UsageError("--exact-attention-corpus needs --learner MODULE:FUNCTION")
    try:
        corpus = load_corpus(directory, theorems=config.getoption("exact_attention_theorem"))
        host = LearnerHost(spec, path=[str(config.invocation_params.dir)])
    except (InvalidArgument, LearnerError) as e:
        raise pytest.UsageError(str(e)) from None
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args[:] = [directory]  # no paths given: collect the corpus only
    elif not any(os.path.realpath(a.split("::")[0]).startswith(os.path.realpath(directory)) for a in config.args):
        raise pytest.UsageError(f"--exact-attention-corpus: test paths were given without the corpus; add {directory} "
                                "to them (or give none), so that it is not silently left out")
    try:
        host.start()
    except LearnerError as e:
        raise pytest.UsageError(str(e)) from None
    config.add_cleanup(host.close)
    files = {os.path.realpath(os.path.join(corpus.directory, corpus.manifest["theorems"][t]["file"])): t
             for t in corpus.instances}
    config.stash[_STATE] = {"corpus": corpus, "host": host, "files": files, "spec": spec, "results": {},
                            "selected": [], "deselected": []}


def pytest_collect_file(file_path, parent):
    state = parent.config.stash.get(_STATE, None)
    if state is None:
        return None
    theorem = state["files"].get(os.path.realpath(file_path))
    if theorem is None:
        return None
    return CorpusFile.from_parent(parent, path=file_path, theorem=theorem)


def pytest_collection_finish(session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is not None:
        state["selected"] = [item for item in session.items if isinstance(item, CorpusItem)]


class CorpusFile(pytest.File):
    """One theorem's file of the corpus: an item per instance."""

    def __init__(self, *, theorem: str, **kwargs):
        super().__init__(**kwargs)
        self.theorem = theorem

    def collect(self):
        for instance in self.config.stash[_STATE]["corpus"].instances[self.theorem]:
            yield CorpusItem.from_parent(self, name=instance.id, instance=instance)


class CorpusFailure(Exception):
    """An instance the learner got wrong, asked the wrong number of queries for, or returned no result on."""


def _unjudged(instance, message: str, outcome: str = "no result"):
    from .judge import Verdict, formula

    want, rule = formula(instance.theorem, instance.d, instance.hints)
    return Verdict(instance.theorem, instance.name, False, 0, want, rule, 0.0, message[:400], outcome)


class CorpusItem(pytest.Item):
    """One corpus instance: run the learner, judge exactness and the count."""

    def __init__(self, *, instance, **kwargs):
        super().__init__(**kwargs)
        self.instance = instance

    def runtest(self) -> None:
        from .judge import check_oracle

        state = self.config.stash[_STATE]
        results = state["results"]
        where = f"{self.instance.theorem} / {self.instance.name}"
        try:
            problem = check_oracle(self.instance)
            if problem is not None:
                results[self.nodeid] = _unjudged(self.instance, f"this package's oracle disagrees with the corpus: "
                                                                f"{problem}")
                raise CorpusFailure(f"{where}: {results[self.nodeid].message}")
            verdict = state["host"].run(self.instance)
        except BaseException as e:
            if self.nodeid not in results:
                results[self.nodeid] = _unjudged(self.instance, f"not judged: {type(e).__name__}: {e}")
            raise
        results[self.nodeid] = verdict
        if verdict.output:
            sys.stdout.write(verdict.output)
        if not verdict.returned:
            raise CorpusFailure(f"{where}: not judged: {verdict.message} ({verdict.queries} queries answered)")
        if not verdict.exact:
            raise CorpusFailure(f"{where}: not exact: {verdict.message} ({verdict.queries} queries)")
        if not verdict.count_ok:
            relation = "not exactly" if verdict.rule == "exact" else "above"
            raise CorpusFailure(f"{where}: {verdict.queries} queries, {relation} the theorem's {verdict.formula} "
                                f"({verdict.rule})")

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance(CorpusFailure):
            return f"corpus instance {str(excinfo.value)}"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, 0, f"{self.instance.theorem}: {self.instance.name}"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """A corpus item that pytest skips or xfails (a marker, another plugin) fails: that is no judgement."""
    report = yield
    if isinstance(item, CorpusItem) and report.skipped:
        results = item.config.stash[_STATE]["results"]
        xfailed = hasattr(report, "wasxfail")
        reason = report.wasxfail if xfailed else None
        if reason is None and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3:
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        reason = reason or "no reason given"
        where = f"corpus instance {item.instance.theorem} / {item.instance.name}"
        verdict = results.get(item.nodeid)
        if verdict is not None and call.when == "call":  # judged, then turned into an xfail: it stays a failure
            text = str(report.longrepr).removeprefix(where + ": ")
            report.longrepr = f"{where}: pytest xfailed the instance ({reason}), which does not pass it: {text}"
        else:
            message = f"pytest {'xfailed' if xfailed else 'skipped'} the instance before it was judged ({reason})"
            results[item.nodeid] = _unjudged(item.instance, message)
            report.longrepr = f"{where}: not judged: {message}"
        if xfailed:
            del report.wasxfail
        report.outcome = "failed"
    return report


_NOTES = {"not implemented": "not implemented", "skipped": "skipped by the learner", "raised": "raised",
          "no result": "no result"}


def summary_rows(selected, results, deselected=()) -> list[str]:
    """The summary's lines: per theorem, the selected instances, how they ended, and how many were deselected."""
    by: dict = {}
    left_out: dict = {}
    for item in selected:
        by.setdefault(item.instance.theorem, []).append(results.get(item.nodeid))
    for item in deselected:
        by.setdefault(item.instance.theorem, [])
        left_out[item.instance.theorem] = left_out.get(item.instance.theorem, 0) + 1
    lines = [f"{'theorem':<12} {'instances':>9} {'exact':>7} {'count':>7} {'queries / formula':>20}  rule"]
    for theorem, vs in by.items():
        n = len(vs)
        tail = f"; {left_out[theorem]} deselected" if theorem in left_out else ""
        if vs and all(v is not None and v.outcome == "not implemented" for v in vs):
            lines.append(f"{theorem:<12} {n:>9}  not implemented by the learner{tail}")
            continue
        judged = [v for v in vs if v is not None and v.returned]
        notes: dict = {}
        for v in vs:
            key = "not run" if v is None else None if v.returned else _NOTES[v.outcome]
            if key is not None:
                notes[key] = notes.get(key, 0) + 1
        exact = sum(v.exact for v in judged)
        count = sum(v.count_ok for v in judged)
        queries = f"{sum(v.queries for v in judged)} / {sum(v.formula for v in judged)}" if judged else "-"
        rule = next((v.rule for v in vs if v is not None), "")
        line = f"{theorem:<12} {n:>9} {f'{exact}/{n}':>7} {f'{count}/{n}':>7} {queries:>20}  {rule}"
        if notes:
            line += "; not judged: " + ", ".join(f"{k} {key}" for key, k in notes.items())
        lines.append((line + tail).rstrip())
    return lines


def pytest_deselected(items) -> None:
    for item in items:
        if isinstance(item, CorpusItem):
            item.config.stash[_STATE]["deselected"].append(item)


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or config.option.collectonly or not (state["selected"] or state["deselected"]):
        return
    terminalreporter.write_sep("=", f"exact-attention corpus: {state['spec']}")
    for line in summary_rows(state["selected"], state["results"], state["deselected"]):
        terminalreporter.write_line(line)
