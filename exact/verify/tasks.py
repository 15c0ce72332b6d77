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

__all__ = ["Task", "run_task", "tasks_for", "run_parallel"]


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


def run_parallel(
    theorems, *, jobs: int, max_d: int = 16, quick: bool = False, on_report: Callable | None = None,
    progress: Callable[[int, int], None] | None = None, only: set | None = None,
) -> list[ClaimReport]:
    """Run every instance of the theorems' claims on a pool of ``jobs`` processes.

    Reports come back in claim order; ``on_report`` is called for each as soon as it and every
    claim before it are complete (so a table streams in order).  ``progress(done, total)`` is
    called as instances finish.  ``only`` restricts the run to these ``(theorem, index)`` claims.
    """
    import concurrent.futures as cf
    import multiprocessing

    claims = [t for t in tasks_for(theorems, max_d=max_d, quick=quick) if only is None or t[:2] in only]
    outcomes: list[list] = [[None] * len(c.instances) for _, _, c in claims]
    skipped = [c.skip_reason for _, _, c in claims]
    futures = {}
    ctx = multiprocessing.get_context("spawn")  # a clean interpreter per worker: no forked flint state
    with cf.ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        for n, (theorem, i, claim) in enumerate(claims):
            if skipped[n] is None:
                for k in range(len(claim.instances)):
                    futures[pool.submit(run_task, Task(theorem, i, k, max_d=max_d, quick=quick))] = (n, k)
        reports: list = [None] * len(claims)
        emitted = 0
        done = 0

        def flush() -> None:
            nonlocal emitted
            while emitted < len(claims):
                n = emitted
                _, _, claim = claims[n]
                if skipped[n] is None and any(o is None for o in outcomes[n]):
                    return
                reports[n] = claim.report(outcomes[n], skipped=skipped[n])
                if on_report is not None:
                    on_report(reports[n])
                emitted += 1

        flush()
        for fut in cf.as_completed(futures):
            n, k = futures[fut]
            outcomes[n][k] = fut.result()
            done += 1
            if progress is not None:
                progress(done, len(futures))
            flush()
        flush()
    return reports
