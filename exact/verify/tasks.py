"""Shippable verification tasks: one claim instance as plain data, run anywhere the package is.

A :class:`Task` is an instance's identity (:class:`~exact.verify.ids.InstanceId`: theorem,
claim number, instance number) and the sweep's size (``max_d``, ``budget``).  It holds no
code and no model, so it pickles, and any process that imports ``exact`` rebuilds the claim
(once per process) and runs the instance.  That is what lets ``verify --jobs N`` use a local
process pool and ``verify --scheduler ADDR`` a Dask cluster: the instances of every claim
are spread over the workers, and each claim's report is assembled, in instance order, from
its outcomes.  The table is the same as the sequential run's apart from the seconds.

:func:`run_tasks` is the one entry point and the one place rows are ordered: whatever order
the instances finish in, ``on_report`` sees the claims in selection order, each as soon as
it and every claim before it are complete (claims reused from an earlier run included).
Its ``executor`` is ``"sequential"`` (this process), ``"pool"`` (``jobs`` local processes)
or ``"dask"`` (a scheduler address).  Without a deadline the instances run claim by claim,
so the first rows come early; with a ``deadline`` no task starts after it, the order spreads
the time over every claim, and the claims cut short report how many of their instances did
not run.  An interrupt (``KeyboardInterrupt``, or any error) stops the pool's workers at
once and cancels the cluster's futures: nothing is left running.

Examples
--------
>>> import pickle
>>> task = Task(InstanceId("lemmas", 1, 0), budget="quick")
>>> pickle.loads(pickle.dumps(task)) == task
True
>>> run_task(task).exact                       # the oddness of attention, proved
True
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidArgument
from .budget import BUDGETS, DEFAULT_BUDGET, check_budget
from .core import Claim, ClaimReport, Outcome
from .ids import ClaimId, InstanceId

__all__ = ["Task", "Entry", "run_task", "tasks_for", "run_tasks", "run_parallel", "run_dask"]


@dataclass(frozen=True)
class Task:
    """One instance of one claim of one theorem, as data: its identity and the sweep it belongs to."""

    id: InstanceId
    max_d: int = 16
    budget: str = DEFAULT_BUDGET


@dataclass(frozen=True)
class Entry:
    """A selected claim: its identity, the claim, and which of its instances to run."""

    id: ClaimId
    claim: Claim
    instances: tuple[int, ...]


def _build(theorem: str, max_d: int, budget: str) -> tuple[Claim, ...]:
    from . import claims

    return tuple(claims((theorem,), max_d=max_d, budget=budget))


_claims = functools.lru_cache(maxsize=32)(_build)  # a worker builds each theorem's claims once


def run_task(task: Task) -> Outcome:
    """Run one task in this process (the claim is built once per process and theorem)."""
    built = _claims(task.id.theorem, task.max_d, check_budget(task.budget))
    c, k = task.id.claim, task.id.instance
    if not 0 <= c < len(built) or not 0 <= k < len(built[c].instances):
        raise InvalidArgument(f"task: {task.id} names no claim instance of this sweep (theorem {task.id.theorem} "
                              f"has {len(built)} claims)")
    return built[c].run_instance(k, id=task.id)


def tasks_for(theorems, *, max_d: int = 16, budget: str = DEFAULT_BUDGET) -> list[Entry]:
    """An :class:`Entry` (every instance) for every claim of the given theorems, in report order."""
    return [Entry(ClaimId(theorem, i), claim, tuple(range(len(claim.instances))))
            for theorem in theorems for i, claim in enumerate(_build(theorem, max_d, budget))]


def _tiers(entry: Entry, max_d: int) -> list[int]:
    """Per instance of a full-budget claim: 0 if the quick sweep has it, 1 if the standard one does, else 2."""
    names = []
    for budget in BUDGETS[:-1]:
        same = [c for c in _build(entry.id.theorem, max_d, budget) if c.name == entry.claim.name]
        names.append({i.name for i in same[0].instances} if same else set())
    return [0 if i.name in names[0] else 1 if i.name in names[1] else 2 for i in entry.claim.instances]


def _plan(selected: Sequence[Entry], positions, *, max_d: int, budget: str,
          deadline: float | None) -> list[tuple[tuple[int, int], Task]]:
    """The tasks of the selected claims at ``positions``, keyed by (position, instance).  Without a
    deadline, claim by claim (the first claim's rows come first); under one, the order spreads the
    time over every claim: the quick sweep's instances first, then the standard sweep's, each round
    one instance per claim."""
    keyed = []
    for n in positions:
        entry = selected[n]
        if entry.claim.skip_reason is not None:
            continue
        tiers = _tiers(entry, max_d) if deadline is not None else None
        for rank, k in enumerate(entry.instances):
            key = (n, rank) if tiers is None else (tiers[k], rank, n)
            keyed.append((key, ((n, k), Task(entry.id.instance(k), max_d=max_d, budget=budget))))
    keyed.sort(key=lambda item: item[0])
    return [item for _, item in keyed]


def _assemble(selected: Sequence[Entry], finished, *, resumed: Mapping[ClaimId, ClaimReport],
              on_report=None, progress=None) -> list[ClaimReport]:
    """Reports in selection order from ``finished``, an iterator of ``((position, instance), outcome)``
    in any order, and the ``resumed`` reports; ``on_report`` sees each report as soon as it and every
    report before it are complete.  Instances that never finished (a deadline) are counted as ``unrun``."""
    fresh = [e.id not in resumed for e in selected]
    slots = [{k: None for k in e.instances} for e in selected]
    skipped = [e.claim.skip_reason if fresh[n] else None for n, e in enumerate(selected)]
    total = sum(len(s) for n, s in enumerate(slots) if fresh[n] and skipped[n] is None)
    reports: list = [None] * len(selected)
    emitted = done = 0

    def flush(final: bool) -> None:
        nonlocal emitted
        while emitted < len(selected):
            n, entry = emitted, selected[emitted]
            if fresh[n]:
                missing = sum(o is None for o in slots[n].values())
                if skipped[n] is None and missing and not final:
                    return
                outcomes = [o for o in slots[n].values() if o is not None]
                reports[n] = entry.claim.report(outcomes, skipped=skipped[n], unrun=missing, id=entry.id)
            else:
                reports[n] = resumed[entry.id]
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


def _nothing() -> Generator:
    yield from ()


def _sequential(selected, plan, deadline) -> Generator:
    for (n, k), task in plan:  # in this process: the claims already built, no rebuilding
        if deadline is not None and time.monotonic() >= deadline:
            return
        yield (n, k), selected[n].claim.run_instance(k, id=task.id)


def _worker_init() -> None:
    """A pool worker ignores SIGINT: a terminal's Ctrl-C reaches the whole process group, and the
    parent, which gets it too, stops the workers itself."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool) -> None:
    """Stop a process pool now: cancel what has not started, terminate the workers, reap them."""
    if hasattr(pool, "terminate_workers"):  # Python >= 3.14
        pool.terminate_workers()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())  # the workers (private before 3.14)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.is_alive():
            p.terminate()
    for p in processes:
        p.join(timeout=1.0)
        if p.is_alive():
            p.kill()
            p.join(timeout=1.0)


def _submit(pool, task):
    """``pool.submit(run_task, task)`` with SIGINT ignored meanwhile: a worker the submit spawns then
    starts with SIGINT ignored (an ignored signal stays ignored across exec), so a Ctrl-C that comes
    while it is still importing, before ``_worker_init`` runs, cannot print a traceback there."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return pool.submit(run_task, task)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return pool.submit(run_task, task)
    finally:
        signal.signal(signal.SIGINT, previous)


def _pool(plan, jobs: int, deadline) -> Generator:
    import concurrent.futures as cf
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker: no forked flint state
    pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init)
    clean = False
    try:
        pending = iter(plan)
        running: dict = {}
        window = len(plan) if deadline is None else 2 * jobs  # under a deadline: refilled only before it
        while True:
            while len(running) < window and (deadline is None or time.monotonic() < deadline):
                item = next(pending, None)
                if item is None:
                    break
                running[_submit(pool, item[1])] = item[0]
            if not running:
                clean = True
                return
            finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
            for f in finished:
                key = running.pop(f)
                if not f.cancelled():
                    yield key, f.result()
            if deadline is not None and time.monotonic() >= deadline:
                for f in [f for f in running if f.cancel()]:
                    running.pop(f)
    finally:
        if clean:
            pool.shutdown(wait=True)
        else:
            _stop(pool)


def _dask(plan, scheduler: str, timeout: float, deadline) -> Generator:
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
    submitted: list = []
    with client:
        try:
            window = len(plan) if deadline is None else 2 * max(1, sum(client.nthreads().values()))
            pending = iter(plan)
            key_of = {}
            stream = as_completed()

            def submit() -> None:
                item = next(pending, None)
                if item is not None:
                    f = client.submit(run_task, item[1], pure=False)
                    key_of[f.key] = item[0]
                    submitted.append(f)
                    stream.add(f)

            for _ in range(window):
                submit()
            for f in stream:
                yield key_of[f.key], f.result()
                if deadline is not None and time.monotonic() < deadline:
                    submit()
        finally:
            with contextlib.suppress(Exception):  # an interrupt: the cluster forgets what is left
                client.cancel([f for f in submitted if not f.done()])


def run_tasks(
    selected: Sequence[Entry], *, executor: str = "sequential", jobs: int = 1, scheduler: str | None = None,
    timeout: float = 10.0, max_d: int = 16, budget: str = DEFAULT_BUDGET, deadline: float | None = None,
    resumed: Mapping[ClaimId, ClaimReport] | None = None, on_report: Callable | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[ClaimReport]:
    """Run the selected claims' instances and return their reports, in the order of ``selected``.

    Parameters
    ----------
    selected : sequence of Entry
        The claims (as :func:`tasks_for` numbers them) and which of their instances to run.
    executor : {"sequential", "pool", "dask"}
        This process; ``jobs`` local processes; the Dask cluster at ``scheduler``.
    deadline : float, optional
        A :func:`time.monotonic` time after which no task starts (a time budget).
    resumed : mapping of ClaimId to ClaimReport, optional
        Claims already done (an earlier run's rows): not run again, reported in their place.
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
    resumed = resumed or {}
    fresh = [n for n, e in enumerate(selected) if e.id not in resumed]
    plan = _plan(selected, fresh, max_d=max_d, budget=budget, deadline=deadline)
    finished: Generator
    if executor == "sequential":
        finished = _sequential(selected, plan, deadline)
    elif executor == "pool":
        finished = _pool(plan, jobs, deadline) if plan else _nothing()
    elif executor == "dask":
        if scheduler is None:
            raise InvalidArgument("executor 'dask' needs a scheduler address")
        finished = _dask(plan, scheduler, timeout, deadline) if plan else _nothing()
    else:
        raise InvalidArgument(f"executor: expected sequential, pool or dask, got {executor!r}")
    with contextlib.closing(finished):  # an interrupt stops the executor here
        return _assemble(selected, finished, resumed=resumed, on_report=on_report, progress=progress)


def _select(theorems, max_d: int, budget: str, only) -> list[Entry]:
    return [e for e in tasks_for(theorems, max_d=max_d, budget=budget) if only is None or e.id in only]


def run_parallel(theorems, *, jobs: int, max_d: int = 16, budget: str = DEFAULT_BUDGET, only: set | None = None,
                 **kwargs) -> list[ClaimReport]:
    """Every instance of the theorems' claims (``only``: these :class:`ClaimId` claims) on ``jobs``
    local processes; see :func:`run_tasks`."""
    return run_tasks(_select(theorems, max_d, budget, only), executor="pool", jobs=jobs, max_d=max_d, budget=budget,
                     **kwargs)


def run_dask(theorems, *, scheduler: str, max_d: int = 16, budget: str = DEFAULT_BUDGET, only: set | None = None,
             **kwargs) -> list[ClaimReport]:
    """Every instance of the theorems' claims on an existing Dask distributed cluster (``Client(scheduler)``),
    gathered as they complete; the same reports as :func:`run_parallel`."""
    return run_tasks(_select(theorems, max_d, budget, only), executor="dask", scheduler=scheduler, max_d=max_d,
                     budget=budget, **kwargs)
