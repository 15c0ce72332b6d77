"""Progress reporting for long runs, scoped like a precision context.

Library code calls :func:`report` with a phase name and a count; nothing happens
unless a caller has installed a reporter with :func:`reporting`, which the command
line does with a terminal progress bar (tqdm, on stderr, shown only after a second,
hidden with ``--quiet``).  The reporter lives in a context variable, so it never
leaks out of the ``with`` block or into another thread's run.

Examples
--------
>>> seen = []
>>> with reporting(lambda phase, done, total: seen.append((phase, done, total))):
...     report("queries", 5, 10)
>>> report("queries", 10, 10)  # no reporter installed: nothing happens
>>> seen
[('queries', 5, 10)]
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["report", "reporting", "terminal_reporter", "elapsed"]

Reporter = Callable[[str, int, "int | None"], None]

_REPORTER: ContextVar[Reporter | None] = ContextVar("exact_progress_reporter", default=None)


def report(phase: str, done: int, total: int | None = None) -> None:
    """Tell the installed reporter (if any) that ``done`` of ``total`` units of ``phase`` are finished."""
    reporter = _REPORTER.get()
    if reporter is not None:
        reporter(phase, done, total)


@contextlib.contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    """Install ``reporter`` for the duration of the block (``None`` silences reporting)."""
    token = _REPORTER.set(reporter)
    try:
        yield
    finally:
        _REPORTER.reset(token)


class _Bars:
    """One tqdm bar per phase, on stderr, each shown only once it has run for a second."""

    def __init__(self, *, delay: float = 1.0, file=None):
        self.delay = delay
        self.file = file or sys.stderr
        self.bars: dict = {}

    def __call__(self, phase: str, done: int, total: int | None) -> None:
        from tqdm import tqdm

        bar = self.bars.get(phase)
        if bar is None:
            bar = self.bars[phase] = tqdm(
                total=total, desc=phase, delay=self.delay, file=self.file, leave=False, dynamic_ncols=True,
                disable=None,  # off when stderr is not a terminal
            )
        if total is not None and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()


@contextlib.contextmanager
def terminal_reporter(*, quiet: bool = False, delay: float = 1.0, label: str | None = None,
                      file=None) -> Iterator[None]:
    """Progress bars on stderr for the block (none with ``quiet``, none when stderr is not a terminal).

    With ``label``, a line ``label: elapsed`` covers the whole block, whatever its phases report
    (loading a model, deciding equality, writing a file), and each counted phase adds its bar.
    """
    if quiet:
        with reporting(None):
            yield
        return
    bars = _Bars(delay=delay, file=file)
    with contextlib.ExitStack() as stack:
        if label is not None:
            stack.enter_context(elapsed(label, delay=delay, file=file))
        try:
            with reporting(bars):
                yield
        finally:
            bars.close()


@contextlib.contextmanager
def elapsed(label: str, *, quiet: bool = False, delay: float = 1.0, file=None) -> Iterator[None]:
    """An elapsed-time indicator on stderr for work that reports no counts (e.g. a symbolic proof)."""
    if quiet:
        yield
        return
    from tqdm import tqdm

    bar = tqdm(total=None, desc=label, delay=delay, file=file or sys.stderr, leave=False, disable=None,
               bar_format="{desc}: {elapsed}")
    stop = threading.Event()

    def tick():
        while not stop.wait(0.5):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()
