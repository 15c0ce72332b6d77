"""Shippable verification tasks: one claim instance as plain data, run anywhere the package is.

A :class:`Task` names a theorem, a claim of it, an instance of that claim and the sweep's
size (``max_d``, ``budget``).  It holds no code and no model, so it pickles, and any process
that imports ``exact`` rebuilds the claim (once per process) and runs the instance.  That
is what lets ``verify --jobs N`` use a local process pool and ``verify --scheduler ADDR`` a
Dask cluster: the instances of every claim are spread over the workers, and each claim's
report is assembled, in instance order, from its outcomes.  The table is the same as the
sequential run's apart from the seconds.

:func:`run_tasks` is the one entry point; its ``executor`` is ``"sequential"`` (this
process), ``"pool"`` (``jobs`` local processes) or ``"dask"`` (a scheduler address).  With
a ``deadline`` no task starts after it; the claims cut short report how many of their
instances did not run.

Examples
--------
>>> import pickle
>>> task = Task("lemmas", 1, 0, budget="quick")
>>> pickle.loads(pickle.dumps(task)) == task
True
>>> run_task(task).exact                       # the oddness of attention, proved
True
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..errors import InvalidArgument
from .budget import BUDGETS, DEFAULT_BUDGET, check_budget
from .core import Claim, ClaimReport, Outcome

__all__ = ["Task", "run_task", "tasks_for", "run_tasks", "run_parallel", "run_dask"]


@dataclass(frozen=True)
class Task:
    """One instance of one claim of one theorem, as data."""

    theorem: str
    claim: int
    instance: int
    max_d: int = 16
    budget: str = DEFAULT_BUDGET


def _build(theorem: str, max_d: int, budget: str) -> tuple[Claim, ...]:
    from . import claims

    return tuple(claims((theorem,), max_d=max_d, budget=budget))


_claims = functools.lru_cache(maxsize=32)(_build)  # a worker builds each theorem's claims once


def run_task(task: Task) -> Outcome:
    """Run one task in this process (the claim is built once per process and theorem)."""
    built = _claims(task.theorem, task.max_d, check_budget(task.budget))
    if not 0 <= task.claim < len(built) or not 0 <= task.instance < len(built[task.claim].instances):
        raise InvalidArgument(f"task: theorem {task.theorem} has no claim {task.claim} instance {task.instance}")
    return built[task.claim].run_instance(task.instance)


def tasks_for(theorems, *, max_d: int = 16, budget: str = DEFAULT_BUDGET) -> list[tuple[str, int, Claim]]:
    """``(theorem, index, claim)`` for every claim of the given theorems, in report order."""
    return [(theorem, i, claim) for theorem in theorems for i, claim in enumerate(_build(theorem, max_d, budget))]


def _tiers(theorem: str, index: int, claim: Claim, max_d: int) -> list[int]:
    """Per instance of a full-budget claim: 0 if the quick sweep has it, 1 if the standard one does, else 2."""
    names = []
    for budget in BUDGETS[:-1]:
        same = [c for c in _build(theorem, max_d, budget) if c.name == claim.name]
        names.append({i.name for i in same[0].instances} if same else set())
    return [0 if i.name in names[0] else 1 if i.name in names[1] else 2 for i in claim.instances]


def _plan(selected, *, max_d: int, budget: str, deadline: float | None) -> list[tuple[tuple[int, int], Task]]:
    """The tasks of the selected claims ``[(theorem, index, claim, instance indices)]``, keyed by
    (position, instance).  Under a deadline the order spreads the time over every claim: the
    quick sweep's instances first, then the standard sweep's, each round one instance per claim."""
    keyed = []
    for n, (theorem, i, claim, ks) in enumerate(selected):
        if claim.skip_reason is not None:
            continue
        tiers = _tiers(theorem, i, claim, max_d) if deadline is not None else [0] * len(claim.instances)
        for rank, k in enumerate(ks):
            keyed.append(((tiers[k], rank, n), ((n, k), Task(theorem, i, k, max_d=max_d, budget=budget))))
    keyed.sort(key=lambda item: item[0])
    return [item for _, item in keyed]


def _assemble(selected, finished, *, on_report=None, progress=None) -> list[ClaimReport]:
    """Reports in claim order from ``finished``, an iterator of ``((position, instance), outcome)`` in
    any order; ``on_report`` sees each report as soon as it and every report before it are complete.
    Instances that never finished (a deadline) are counted as ``unrun``."""
    slots = [{k: None for k in ks} for _, _, _, ks in selected]
    skipped = [c.skip_reason for _, _, c, _ in selected]
    total = sum(len(s) for n, s in enumerate(slots) if skipped[n] is None)
    reports: list = [None] * len(selected)
    emitted = done = 0

    def flush(final: bool) -> None:
        nonlocal emitted
        while emitted < len(selected):
            n = emitted
            missing = sum(o is None for o in slots[n].values())
            if skipped[n] is None and missing and not final:
                return
            outcomes = [o for o in slots[n].values() if o is not None]
            reports[n] = selected[n][2].report(outcomes, skipped=skipped[n], unrun=missing)
            if on_report is not None:
                on_report(reports[n])
            emitted += 1

    flush(False)
    for (n, k), outcome in finished:
        slots[n][k] = outcome
        done += 1
        if progress is not None:
            progress(done, total)
        flush(False)
    flush(True)
    return reports


def _sequential(selected, plan, deadline) -> Iterator:
    for (n, k), _ in plan:  # in this process: the claims already built, no rebuilding
        if deadline is not None and time.monotonic() >= deadline:
            return
        yield (n, k), selected[n][2].run_instance(k)


def _pool(plan, jobs: int, deadline) -> Iterator:
    import concurrent.futures as cf
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker: no forked flint state
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        if deadline is None:
            futures = {pool.submit(run_task, task): key for key, task in plan}
            for f in cf.as_completed(futures):
                yield futures[f], f.result()
            return
        pending = iter(plan)
        running: dict = {}
        while True:  # a window of 2·jobs tasks, refilled only before the deadline
            while len(running) < 2 * jobs and time.monotonic() < deadline:
                item = next(pending, None)
                if item is None:
                    break
                running[pool.submit(run_task, item[1])] = item[0]
            if not running:
                return
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in finished:
                key = running.pop(f)
                if not f.cancelled():
                    yield key, f.result()
            if time.monotonic() >= deadline:
                for f in [f for f in running if f.cancel()]:
                    running.pop(f)


def _dask(plan, scheduler: str, timeout: float, deadline) -> Iterator:
    try:
        from distributed import Client, as_completed
    except ImportError:
        from ..errors import MissingDependency

        raise MissingDependency(
            "--scheduler needs dask and distributed: pip install 'exact-attention[cluster]'"
        ) from None
    try:
        client = Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as e:
        raise InvalidArgument(
            f"--scheduler: no Dask scheduler answers at {scheduler!r} within {timeout:g} s ({type(e).__name__})"
        ) from None
    with client:
        if deadline is None:
            futures = client.map(run_task, [task for _, task in plan], pure=False)
            key_of = {f.key: key for f, (key, _) in zip(futures, plan)}
            for f in as_completed(futures):
                yield key_of[f.key], f.result()
            return
        window = 2 * max(1, sum(client.nthreads().values()))
        pending = iter(plan)
        key_of = {}
        stream = as_completed()
        for _ in range(window):
            item = next(pending, None)
            if item is None:
                break
            f = client.submit(run_task, item[1], pure=False)
            key_of[f.key] = item[0]
            stream.add(f)
        for f in stream:
            yield key_of[f.key], f.result()
            if time.monotonic() < deadline:
                item = next(pending, None)
                if item is not None:
                    g = client.submit(run_task, item[1], pure=False)
                    key_of[g.key] = item[0]
                    stream.add(g)


def run_tasks(
    selected, *, executor: str = "sequential", jobs: int = 1, scheduler: str | None = None, timeout: float = 10.0,
    max_d: int = 16, budget: str = DEFAULT_BUDGET, deadline: float | None = None,
    on_report: Callable | None = None, progress: Callable[[int, int], None] | None = None,
) -> list[ClaimReport]:
    """Run the selected claims' instances and return their reports, in the order of ``selected``.

    Parameters
    ----------
    selected : list of (theorem, index, Claim, instance indices)
        The claims (as :func:`tasks_for` numbers them) and which of their instances to run.
    executor : {"sequential", "pool", "dask"}
        This process; ``jobs`` local processes; the Dask cluster at ``scheduler``.
    deadline : float, optional
        A :func:`time.monotonic` time after which no task starts (a time budget).
    on_report, progress
        ``on_report(report)`` as each claim completes (in order); ``progress(done, total)`` as
        instances finish.

    Raises
    ------
    MissingDependency
        ``executor="dask"`` without the ``cluster`` extra (dask and distributed).
    InvalidArgument
        An unknown executor, or no Dask scheduler answering at ``scheduler`` within ``timeout`` seconds.
    """
    plan = _plan(selected, max_d=max_d, budget=budget, deadline=deadline)
    if executor == "sequential":
        finished = _sequential(selected, plan, deadline)
    elif executor == "pool":
        finished = _pool(plan, jobs, deadline)
    elif executor == "dask":
        if scheduler is None:
            raise InvalidArgument("executor 'dask' needs a scheduler address")
        finished = _dask(plan, scheduler, timeout, deadline)
    else:
        raise InvalidArgument(f"executor: expected sequential, pool or dask, got {executor!r}")
    return _assemble(selected, finished, on_report=on_report, progress=progress)


def _select(theorems, max_d: int, budget: str, only) -> list:
    return [(th, i, c, range(len(c.instances))) for th, i, c in tasks_for(theorems, max_d=max_d, budget=budget)
            if only is None or (th, i) in only]


def run_parallel(theorems, *, jobs: int, max_d: int = 16, budget: str = DEFAULT_BUDGET, only: set | None = None,
                 **kwargs) -> list[ClaimReport]:
    """Every instance of the theorems' claims (``only``: these ``(theorem, index)`` claims) on ``jobs``
    local processes; see :func:`run_tasks`."""
    return run_tasks(_select(theorems, max_d, budget, only), executor="pool", jobs=jobs, max_d=max_d, budget=budget,
                     **kwargs)


def run_dask(theorems, *, scheduler: str, max_d: int = 16, budget: str = DEFAULT_BUDGET, only: set | None = None,
             **kwargs) -> list[ClaimReport]:
    """Every instance of the theorems' claims on an existing Dask distributed cluster (``Client(scheduler)``),
    gathered as they complete; the same reports as :func:`run_parallel`."""
    return run_tasks(_select(theorems, max_d, budget, only), executor="dask", scheduler=scheduler, max_d=max_d,
                     budget=budget, **kwargs)
