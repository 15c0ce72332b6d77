"""Shippable verification tasks: one claim instance as plain data, run anywhere the package is.

A :class:`Task` names a theorem, a claim of it, an instance of that claim and the sweep's
size (``max_d``, ``quick``).  It holds no code and no model, so it pickles, and any process
that imports ``exact`` rebuilds the claim (once per process) and runs the instance.  That
is what lets ``verify --jobs N`` use a local process pool: the instances of every claim
are spread over the workers, and each claim's report is assembled, in instance order,
from its outcomes.  The table is the same as the sequential run's apart from the seconds.

Examples
--------
>>> import pickle
>>> task = Task("7.1", 3, 0, max_d=16, quick=True)
>>> pickle.loads(pickle.dumps(task)) == task
True
>>> run_task(task).exact                       # the oddness-of-attention identity, proved
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidArgument
from .core import Claim, ClaimReport, Outcome

__all__ = ["Task", "run_task", "tasks_for", "run_parallel", "run_dask"]


@dataclass(frozen=True)
class Task:
    """One instance of one claim of one theorem, as data."""

    theorem: str
    claim: int
    instance: int
    max_d: int = 16
    quick: bool = False


@functools.lru_cache(maxsize=32)
def _claims(theorem: str, max_d: int, quick: bool) -> tuple[Claim, ...]:
    from . import claims

    return tuple(claims((theorem,), max_d=max_d, quick=quick))


def run_task(task: Task) -> Outcome:
    """Run one task in this process (the claim is built once per process and theorem)."""
    built = _claims(task.theorem, task.max_d, task.quick)
    if not 0 <= task.claim < len(built) or not 0 <= task.instance < len(built[task.claim].instances):
        raise InvalidArgument(f"task: theorem {task.theorem} has no claim {task.claim} instance {task.instance}")
    return built[task.claim].run_instance(task.instance)


def tasks_for(theorems, *, max_d: int = 16, quick: bool = False) -> list[tuple[str, int, Claim]]:
    """``(theorem, index, claim)`` for every claim of the given theorems, in report order."""
    out = []
    for theorem in theorems:
        for i, claim in enumerate(_claims(theorem, max_d, quick)):
            out.append((theorem, i, claim))
    return out


def _selected(theorems, max_d: int, quick: bool, only) -> list:
    return [t for t in tasks_for(theorems, max_d=max_d, quick=quick) if only is None or t[:2] in only]


def _assemble(claims, finished, *, on_report=None, progress=None) -> list[ClaimReport]:
    """Reports in claim order from ``finished``, an iterator of ``((claim, instance), outcome)`` in
    any order; ``on_report`` sees each report as soon as it and every report before it are complete."""
    outcomes: list[list] = [[None] * len(c.instances) for _, _, c in claims]
    skipped = [c.skip_reason for _, _, c in claims]
    total = sum(len(c.instances) for n, (_, _, c) in enumerate(claims) if skipped[n] is None)
    reports: list = [None] * len(claims)
    emitted = done = 0

    def flush() -> None:
        nonlocal emitted
        while emitted < len(claims):
            n = emitted
            if skipped[n] is None and any(o is None for o in outcomes[n]):
                return
            reports[n] = claims[n][2].report(outcomes[n], skipped=skipped[n])
            if on_report is not None:
                on_report(reports[n])
            emitted += 1

    flush()
    for (n, k), outcome in finished:
        outcomes[n][k] = outcome
        done += 1
        if progress is not None:
            progress(done, total)
        flush()
    flush()
    return reports


def _tasks(claims, max_d: int, quick: bool) -> list[tuple[tuple[int, int], Task]]:
    return [((n, k), Task(theorem, i, k, max_d=max_d, quick=quick))
            for n, (theorem, i, claim) in enumerate(claims) if claim.skip_reason is None
            for k in range(len(claim.instances))]


def run_parallel(
    theorems, *, jobs: int, max_d: int = 16, quick: bool = False, on_report: Callable | None = None,
    progress: Callable[[int, int], None] | None = None, only: set | None = None,
) -> list[ClaimReport]:
    """Run every instance of the theorems' claims on a pool of ``jobs`` local processes.

    Reports come back in claim order; ``on_report`` is called for each as soon as it and every
    claim before it are complete (so a table streams in order).  ``progress(done, total)`` is
    called as instances finish.  ``only`` restricts the run to these ``(theorem, index)`` claims.
    """
    import concurrent.futures as cf
    import multiprocessing

    claims = _selected(theorems, max_d, quick, only)
    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker: no forked flint state
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(run_task, task): key for key, task in _tasks(claims, max_d, quick)}
        finished = ((futures[f], f.result()) for f in cf.as_completed(futures))
        return _assemble(claims, finished, on_report=on_report, progress=progress)


def run_dask(
    theorems, *, scheduler, max_d: int = 16, quick: bool = False, on_report: Callable | None = None,
    progress: Callable[[int, int], None] | None = None, only: set | None = None, timeout: float = 10.0,
) -> list[ClaimReport]:
    """Run the instances on an existing Dask distributed cluster (``Client(scheduler)``), gathering
    results as they complete; the same reports as :func:`run_parallel`.

    Raises
    ------
    MissingDependency
        Without the ``cluster`` extra (dask and distributed).
    InvalidArgument
        When no scheduler answers at ``scheduler`` within ``timeout`` seconds.
    """
    try:
        from distributed import Client, as_completed
    except ImportError:
        from ..errors import MissingDependency

        raise MissingDependency(
            "--scheduler needs dask and distributed: pip install 'exact-attention[cluster]'"
        ) from None
    claims = _selected(theorems, max_d, quick, only)
    try:
        client = Client(scheduler, timeout=timeout)
    except (OSError, TimeoutError) as e:
        raise InvalidArgument(
            f"--scheduler: no Dask scheduler answers at {scheduler!r} within {timeout:g} s ({type(e).__name__})"
        ) from None
    with client:
        keyed = _tasks(claims, max_d, quick)
        futures = client.map(run_task, [task for _, task in keyed], pure=False)
        key_of = {f.key: key for f, (key, _) in zip(futures, keyed)}
        finished = ((key_of[f.key], f.result()) for f in as_completed(futures))
        return _assemble(claims, finished, on_report=on_report, progress=progress)
