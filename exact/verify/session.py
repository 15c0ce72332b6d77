"""A ``verify`` session: select claims, check output paths, resume, run, stream the rows, report.

:func:`run_session` is everything ``exact-attention verify`` does; the command line only
parses its options into a :class:`VerifyOptions`.  In order:

1. **Selection.**  Theorem keys and words of claim names (``verify kkg "fast plan"``),
   ``--theorem`` and ``--task ID`` (an instance ``THEOREM:CLAIM:INSTANCE`` or a whole claim
   ``THEOREM:CLAIM``) choose the claims and instances; a target that matches nothing is an
   error naming the close matches.  ``--list`` prints the selection instead of running it.
2. **Output paths** (``--report``, ``--plots``) are checked before any work.
3. **Resume.**  ``--resume FILE`` reads the ``--json`` rows of an earlier run of the same
   sweep; a claim with a row there is reported from it, not run again.
4. **The run** goes through :func:`~exact.verify.tasks.run_tasks`, the one layer that orders
   the rows: each claim's rows are printed (and flushed) as soon as it and every claim before
   it are complete, in every executor, so a pipe sees them as they come and an interrupted
   run leaves every finished claim's rows for ``--resume``.  Ctrl-C (SIGINT) and SIGTERM stop
   the run at once, workers included, with exit status 130 and 143.
5. The footer, the Markdown report and the plots.

The ``--json`` rows
-------------------
One JSON object per line.  For every instance, when its claim completes::

    {"row": "instance", "theorem": "kkg", "claim": NAME, "task": "kkg:0:3", "instance": NAME,
     "exact": true, "count": true, "seconds": 0.01, "note": "...", "reason": "", "metrics": {...}}

then the claim's row, which repeats every outcome and is the one ``--resume`` reads::

    {"row": "claim", "theorem": "kkg", "budget": "standard", "max_d": 16, "task": "kkg:0",
     "claim": NAME, "instances": 9, "exact": 9, "count": 9, "seconds": 1.2, "holds": true,
     "skipped": null, "counts": true, "unrun": 0, "outcomes": [...]}

``task`` is the identity (:mod:`exact.verify.ids`), what ``--task`` takes to re-run that
instance or claim; ``reason`` says why an instance failed
(empty when it passed); ``metrics["queries"]`` is the oracle's count and
``metrics["formula"]`` the paper's.  An error is one line on stderr and, with ``--json``,
also ``{"row": "error", "error": MESSAGE, "status": 2}`` on stdout.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidArgument
from .budget import parse_budget
from .core import ClaimReport, table_footer, table_header, table_row
from .ids import ClaimId, InstanceId, parse_id
from .tasks import Entry, run_tasks, tasks_for

__all__ = ["VerifyOptions", "run_session", "select", "load_resumed", "check_outputs", "error_row", "UnknownClaims",
           "EXIT_FAIL", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_TERMINATED"]

EXIT_FAIL = 1  # a claim does not hold
EXIT_ERROR = 2  # bad input
EXIT_INTERRUPTED = 130  # SIGINT (128 + 2)
EXIT_TERMINATED = 143  # SIGTERM (128 + 15)


@dataclass(frozen=True)
class VerifyOptions:
    """What ``exact-attention verify`` was asked to do (its options, parsed).

    ``budget`` is ``quick``, ``standard``, ``full`` or a number of seconds, as text;
    ``tasks`` are identities (``THEOREM:CLAIM:INSTANCE`` or ``THEOREM:CLAIM``).
    """

    targets: tuple[str, ...] = ()
    theorems: tuple[str, ...] = ()
    budget: str = "standard"
    max_d: int = 16
    tasks: tuple[str, ...] = ()
    jobs: int = 1
    scheduler: str | None = None
    scheduler_timeout: float = 10.0
    report: str | None = None
    plots: str | None = None
    resume: str | None = None
    json: bool = False
    progress: bool = True
    list: bool = False


class UnknownClaims(InvalidArgument):
    """Verify targets that name no theorem and no claim (the message names the close matches)."""


# -- selection ----------------------------------------------------------------------------


def _close_matches(word: str, entries: Sequence[Entry], theorems: Sequence[str]) -> list[str]:
    """Theorem keys and claims whose names come closest to ``word`` (best first, at most 3)."""
    w = word.lower()
    found = [(1.0, f"{t!r}") for t in difflib.get_close_matches(word, theorems, n=2, cutoff=0.6)]
    scored = []
    for e in entries:
        name = e.claim.name.lower()
        size = min(len(w), len(name))
        windows = {name[i:i + size] for i in range(len(name) - size + 1)}
        score = max(difflib.SequenceMatcher(None, w, window).ratio() for window in windows)
        if score >= 0.75:
            short = e.claim.name if len(e.claim.name) <= 40 else e.claim.name[:39].rstrip() + "…"
            scored.append((score, f"{e.id} ({short})"))
    scored.sort(key=lambda item: -item[0])
    return [text for _, text in (found + scored)[:3]]


def select(options: VerifyOptions, budget: str) -> list[Entry]:
    """The claims (and instances) the options choose from the sweep of ``budget``, in report order.

    Raises
    ------
    UnknownClaims
        A target names no theorem and no claim.
    InvalidArgument
        A ``--task`` that is no identity, or names nothing in this sweep.
    """
    from . import theorem_keys

    THEOREMS = theorem_keys()
    theorems = [t for t in options.targets if t in THEOREMS] + list(options.theorems)
    words = [t for t in options.targets if t not in THEOREMS]
    picked = [_task(text) for text in options.tasks]
    build: tuple[str, ...]
    if words or not (theorems or picked):
        build = THEOREMS  # words are matched against every claim
    else:  # in the order given
        build = tuple(dict.fromkeys(theorems + [p.theorem for p in picked if p.theorem in THEOREMS]))
    every = tasks_for(build, max_d=options.max_d, budget=budget)
    for w in words:
        if not any(w.lower() in e.claim.name.lower() for e in every):
            close = _close_matches(w, every, THEOREMS)
            raise UnknownClaims(
                f"verify: no theorem or claim matches {w!r}" + (f"; close: {', '.join(close)}" if close else "")
                + "; 'exact-attention verify --list' lists the claims")
    targeted = bool(theorems or words)
    chosen = [e for e in every if not targeted or e.id.theorem in theorems
              or any(w.lower() in e.claim.name.lower() for w in words)]
    if not picked:
        return chosen
    known = {e.id: e for e in every}
    wanted: dict[ClaimId, set[int]] = {}
    for text, p in zip(options.tasks, picked):
        cid = p.claim_id if isinstance(p, InstanceId) else p
        entry = known.get(cid)
        if entry is None:
            count = sum(e.id.theorem == cid.theorem for e in every)
            raise InvalidArgument(f"--task: {text!r} names no claim of this sweep (theorem {cid.theorem!r} has "
                                  f"{count} claims; 'exact-attention verify --list' lists them)")
        if isinstance(p, InstanceId):
            if p.instance >= len(entry.claim.instances):
                raise InvalidArgument(f"--task: {text!r} names no instance of this sweep ({cid} has "
                                      f"{len(entry.claim.instances)} instances at --budget {budget}, "
                                      f"--max-d {options.max_d}; mind --budget and --max-d)")
            wanted.setdefault(cid, set()).add(p.instance)
        else:
            wanted.setdefault(cid, set()).update(entry.instances)
    outside = [str(c) for c in wanted if targeted and c not in {e.id for e in chosen}]
    if outside:
        raise InvalidArgument(f"--task: {', '.join(outside)} is not among the claims the targets select")
    return [Entry(e.id, e.claim, tuple(sorted(wanted[e.id]))) for e in every if e.id in wanted]


def _task(text: str) -> ClaimId | InstanceId:
    try:
        return parse_id(text, name="--task")
    except InvalidArgument:
        raise InvalidArgument(f"--task: expected THEOREM:CLAIM:INSTANCE or THEOREM:CLAIM (e.g. kkg:1:0), "
                              f"got {text[:60]!r}") from None


def _list(entries: Sequence[Entry], out, *, as_json: bool) -> None:
    if as_json:
        for e in entries:
            print(json.dumps({"row": "list", "task": str(e.id), "theorem": e.id.theorem, "claim": e.claim.name,
                              "instances": len(e.instances), "counts": e.claim.counts,
                              "requires": e.claim.requires, "skipped": e.claim.skip_reason}), file=out)
        return
    width = max([len("task"), *(len(str(e.id)) for e in entries)])
    print(f"{'task'.ljust(width)}  instances  claim", file=out)
    for e in entries:
        skip = e.claim.skip_reason
        print(f"{str(e.id).ljust(width)}  {len(e.instances):9d}  {e.claim.name}" + (f"  (skipped: {skip})" if skip else ""),
              file=out)


# -- output paths -------------------------------------------------------------------------


def _probe(directory: str, option: str, given: str) -> None:
    """Create and remove a file in ``directory``: the only sure test that it can be written."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        raise InvalidArgument(f"{option}: expected a path that can be written, got {given!r}: "
                              f"no file can be created in {directory} ({e.strerror or type(e).__name__})") from None


def _existing_ancestor(path: str) -> str:
    here = os.path.abspath(path)
    while not os.path.lexists(here):
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return here


def check_outputs(*, report: str | None, plots: str | None) -> None:
    """:class:`InvalidArgument` now, before the sweep, if ``report`` (a file) or ``plots`` (a directory,
    created if missing) could not be written at the end."""
    if report is not None:
        if os.path.isdir(report):
            raise InvalidArgument(f"--report: expected a file to write, got {report!r}: it is a directory")
        parent = os.path.dirname(os.path.abspath(report))
        if not os.path.isdir(parent):
            where = _existing_ancestor(parent)
            why = f"{parent} does not exist" if os.path.isdir(where) else f"{where} is not a directory"
            raise InvalidArgument(f"--report: expected a file in an existing directory, got {report!r}: {why}")
        if os.path.exists(report):
            try:
                open(report, "r+b").close()  # writable, and left as it is until the report replaces it
            except OSError as e:
                raise InvalidArgument(f"--report: expected a file that can be written, got {report!r}: "
                                      f"{e.strerror or type(e).__name__}") from None
        else:
            _probe(parent, "--report", report)
    if plots is not None:
        from .plots import require_matplotlib

        require_matplotlib()  # a missing extra is known now, not after the sweep
        if os.path.lexists(plots) and not os.path.isdir(plots):
            raise InvalidArgument(f"--plots: expected a directory, got {plots!r}: it exists and is not a directory")
        where = _existing_ancestor(plots)
        if not os.path.isdir(where):
            raise InvalidArgument(f"--plots: expected a directory that can be created, got {plots!r}: "
                                  f"{where} is not a directory")
        _probe(where, "--plots", plots)


# -- resume -------------------------------------------------------------------------------


def load_resumed(path: str, *, budget: str, max_d: int, entries: Sequence[Entry]) -> dict[ClaimId, ClaimReport]:
    """The claim rows of an earlier ``verify --json`` run of this sweep, by claim identity, for the
    selected ``entries``; a file that is not such rows is an :class:`InvalidArgument` naming the line."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise InvalidArgument(f"--resume: cannot read {path}: {e.strerror or type(e).__name__}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        where = data[: e.start].count(b"\n") + 1
        raise InvalidArgument(f"--resume: {path}: line {where}: expected the UTF-8 JSON rows of verify --json, "
                              f"got a byte that is not UTF-8 (0x{data[e.start]:02x})") from None
    selected = {e.id: e for e in entries}
    out: dict[ClaimId, ClaimReport] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict) or row.get("row") not in ("instance", "claim"):
                raise ValueError("expected a verify --json row (an object whose \"row\" is \"instance\" or \"claim\")")
            if row["row"] == "instance":
                continue  # the claim's own row follows with every outcome
            if (row.get("budget"), row.get("max_d")) != (budget, max_d):
                raise ValueError(f"a row of budget {row.get('budget')!r}, max d {row.get('max_d')!r}; "
                                 f"this run is budget {budget!r}, max d {max_d}")
            if row.get("task") is None:
                raise ValueError("a claim row without its \"task\" (THEOREM:CLAIM)")
            report = ClaimReport.from_json(row)
            assert report.id is not None
            entry = selected.get(report.id)
            if entry is None:
                continue  # a claim this run does not select
            if entry.claim.name != report.claim:
                raise ValueError(f"{report.id} is {entry.claim.name!r} in this sweep, the row names {report.claim!r}")
            for o in report.outcomes:
                assert o.id is not None  # from_json checked every outcome's id against the claim's
                k = o.id.instance
                if k >= len(entry.claim.instances) or entry.claim.instances[k].name != o.instance:
                    raise ValueError(f"{o.id} is not the instance {o.instance!r} in this sweep")
            out[report.id] = report
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidArgument(f"--resume: {path}: line {n}: {e}"[:250]) from None
    return out


# -- the rows -----------------------------------------------------------------------------


class _Rows:
    """Prints the table or the JSON rows, claim by claim, flushed (stdout may be a pipe)."""

    def __init__(self, out, *, as_json: bool, budget: str, max_d: int, names: Sequence[str]):
        self.out, self.as_json, self.budget, self.max_d, self.names = out, as_json, budget, max_d, names
        self.reports: list[ClaimReport] = []

    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def header(self) -> None:
        if not self.as_json:
            self._print(table_header(self.names))

    def claim(self, report: ClaimReport) -> None:
        self.reports.append(report)
        if not self.as_json:
            self._print(table_row(report, self.names))
            return
        theorem = report.id.theorem if report.id is not None else None
        lines = [json.dumps({"row": "instance", "theorem": theorem, "claim": report.claim, **o.to_json()})
                 for o in report.outcomes]
        lines.append(json.dumps({"row": "claim", "theorem": theorem, "budget": self.budget, "max_d": self.max_d,
                                 **report.to_json()}))
        self._print("\n".join(lines))

    def footer(self) -> None:
        if not self.as_json:
            self._print(table_footer(self.reports))


class _Bar:
    """The instances' progress bar on stderr (a terminal only, after a second; never with ``--quiet``)."""

    def __init__(self, enabled: bool, err):
        from tqdm import tqdm

        self.bar = tqdm(total=0, desc="instances", file=err, leave=False, delay=1.0,
                        disable=None if enabled else True, dynamic_ncols=True)

    def step(self, done: int, total: int) -> None:
        self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


@contextlib.contextmanager
def _sigterm_interrupts():
    """Within it, SIGTERM interrupts like Ctrl-C (so the workers are stopped, not orphaned); yields a
    list that holds the signal once it came."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def handler(signum, frame):
        came.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield came
    finally:
        signal.signal(signal.SIGTERM, previous)


# -- the session --------------------------------------------------------------------------


def _budget(text: str) -> tuple[str, float | None]:
    budget = parse_budget(text)
    return ("full", budget) if isinstance(budget, float) else (budget, None)


def run_session(options: VerifyOptions, *, out=None, err=None) -> int:
    """Run a ``verify`` session; returns the exit status (0: every claim holds or is skipped; 1: one
    does not, or a time budget ran nothing; 130 / 143: interrupted by SIGINT / SIGTERM).

    Raises
    ------
    InvalidArgument
        Bad options (budget, targets, ``--task``, output paths, ``--resume`` rows, executors).
    MissingDependency
        ``--plots`` without matplotlib, ``--scheduler`` without distributed.
    """
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    started = time.monotonic()
    budget, seconds = _budget(options.budget)
    if options.scheduler is not None and options.jobs > 1:
        raise InvalidArgument(f"--jobs {options.jobs} and --scheduler: one executor, either local processes "
                              "or a Dask cluster")
    entries = select(options, budget)
    if options.list:
        _list(entries, out, as_json=options.json)
        return 0
    check_outputs(report=options.report, plots=options.plots)
    resumed = load_resumed(options.resume, budget=budget, max_d=options.max_d, entries=entries) if options.resume else {}
    rows = _Rows(out, as_json=options.json, budget=budget, max_d=options.max_d, names=[e.claim.name for e in entries])
    rows.header()
    executor = "dask" if options.scheduler else "pool" if options.jobs > 1 else "sequential"
    bar = _Bar(options.progress, err)
    try:
        with _sigterm_interrupts() as came:
            try:
                reports = run_tasks(entries, executor=executor, jobs=options.jobs, scheduler=options.scheduler,
                                    timeout=options.scheduler_timeout, max_d=options.max_d, budget=budget,
                                    deadline=None if seconds is None else started + seconds, resumed=resumed,
                                    on_report=rows.claim, progress=bar.step)
            except KeyboardInterrupt:
                bar.close()
                what = "terminated (SIGTERM)" if came else "interrupted"
                rescue = " pass the --json rows printed so far to --resume to go on" if options.json else ""
                print(f"exact-attention: verify: {what} after {len(rows.reports)} of {len(entries)} claims;{rescue}"
                      .rstrip(";"), file=err, flush=True)
                return EXIT_TERMINATED if came else EXIT_INTERRUPTED
    finally:
        bar.close()
    rows.footer()
    return _finish(options, reports, budget=budget, seconds=seconds, ran=len(resumed) < len(entries), err=err)


def _finish(options: VerifyOptions, reports: Sequence[ClaimReport], *, budget: str, seconds: float | None,
            ran: bool, err) -> int:
    if options.report:
        from .report import markdown_report

        with open(options.report, "w", encoding="utf-8") as fh:
            fh.write(markdown_report(reports, budget=budget, max_d=options.max_d, seconds=seconds))
    if options.plots:
        from .plots import draw_plots

        for path in draw_plots(reports, options.plots):
            print(f"plot: {path}", file=err)
    if seconds is not None and ran and not any(r.outcomes for r in reports):
        print("exact-attention: verify: no instance started within the time budget; nothing was checked", file=err)
        return EXIT_FAIL
    return 0 if all(r.holds or r.skipped for r in reports) else EXIT_FAIL


def error_row(message: str, status: int = EXIT_ERROR) -> str:
    """The JSON object ``--json`` prints on stdout for an error (beside the line on stderr).

    >>> error_row("--jobs: expected an integer >= 1, got 0")
    '{"row": "error", "error": "--jobs: expected an integer >= 1, got 0", "status": 2}'
    """
    return json.dumps({"row": "error", "error": message, "status": status})
