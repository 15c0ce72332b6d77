"""The ``identify`` kernel: from rigorous balls to exact numbers, never by guessing.

Every exact quantity a learner recovers (a value, a logit, a pole, a residue, a
breakpoint) is identified by the same stateless loop:

1. **ball**: a rigorous ``arb`` ball that contains the quantity, at the
   quantity's current working precision;
2. **candidate**: on a declared grid, the unique grid point the ball can hold;
   otherwise the simplest rational in the ball;
3. **confirmation**: without a grid, the candidates are confirmed *exactly* by a
   caller-supplied test ("does the candidate reproduce the answers already
   given?"); with a grid, uniqueness on the grid is the certificate, checked
   again by the result's replay;
4. **more precision** for every quantity that was not identified or confirmed,
   and back to 1.  Refining an oracle's answer is not a new query.

A quantity is any object with a ``what`` name, a ``ball()`` method (``None``
when it is not yet resolved at the current precision) and a ``refine()`` method
that raises the precision or, when the answers cannot give more, raises
:class:`~exact.errors.PrecisionInsufficient`.  The loop owns no precision state;
each quantity owns its own.

Examples
--------
>>> from flint import arb, ctx
>>> class Third:                       # the number 1/3, known to `prec` bits
...     what, prec = "x", 8
...     def ball(self):
...         with ctx.workprec(self.prec):
...             return arb(1) / 3
...     def refine(self):
...         self.prec *= 2
>>> from flint import fmpq
>>> identify([Third()], confirm=lambda values, fresh: [i for i in fresh if values[i] != fmpq(1, 3)])
[1/3]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from .errors import InvalidArgument, OracleInconsistent
from .grids import Grid
from .numbers import ball_interval, simplest_in_ball, to_fmpq

__all__ = ["Quantity", "Quantities", "identify", "Confirm"]


class Quantity(Protocol):
    """What :func:`identify` needs of a quantity."""

    @property
    def what(self) -> str:
        """The quantity's name, for messages."""

    def ball(self):
        """A rigorous ``arb`` ball containing the quantity, or ``None`` if not yet resolved."""

    def refine(self) -> None:
        """Raise the working precision; raise :class:`PrecisionInsufficient` when no more is possible."""

    # optional: ``candidate(ball)``, the candidate the quantity takes from a ball (default: the simplest
    # rational in it); any candidate is confirmed exactly like the simplest one


class Quantities(Protocol):
    """What :func:`identify` needs of its list of quantities: a length and indexing (items may
    be built lazily, on first access)."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> Quantity: ...


#: ``confirm(values, fresh) -> failed``: ``values`` holds the current candidate of every
#: quantity (by index), ``fresh`` the indices with a new candidate; it returns the indices
#: among ``fresh`` whose candidate is *not* confirmed exactly.
Confirm = Callable[[list, list[int]], Sequence[int]]


def identify(
    quantities: Quantities,
    *,
    grid: Grid | None = None,
    confirm: Confirm | None = None,
    approximate: bool = False,
    guesses: Sequence | None = None,
) -> list:
    """Identify every quantity exactly: ball → candidate → exact confirmation → more precision.

    Parameters
    ----------
    quantities : sequence of Quantity
    grid : Grid, optional
        Identify each quantity as the unique point of this grid in its ball.
    confirm : callable, optional
        Required without a grid: the exact test of the candidates (see :data:`Confirm`).
        A candidate is never returned unconfirmed.
    approximate : bool
        Whether the balls come from an approximate oracle; then a ball that holds no
        grid point is reported with both possible causes (the value is off the grid,
        or the oracle is less accurate than it declares).
    guesses : sequence, optional
        Without a grid: a first candidate per quantity (``None`` where there is none),
        from any cheap estimate.  A guess is confirmed exactly like any candidate; a
        rejected guess costs no precision, the quantity's ball then gives the next one.

    Returns
    -------
    list of fmpq
        One exact value per quantity, in order (flint rationals: the hot path stays in C).

    Raises
    ------
    PrecisionInsufficient
        From a quantity's ``refine`` when it cannot be identified.
    OracleInconsistent
        When a ball provably holds no point of the grid.
    """
    if grid is None and confirm is None:
        raise InvalidArgument("identify: without a grid, candidates must be confirmed exactly (pass confirm=)")
    if guesses is not None and len(guesses) != len(quantities):
        raise InvalidArgument(f"identify: {len(guesses)} guesses for {len(quantities)} quantities (one per quantity, None where there is none)")
    values: list = [None] * len(quantities)
    pending = list(range(len(quantities)))
    guessed = False  # whether this round tried the guesses (each is tried once, in the first round)
    todo = pending
    if guesses is not None and grid is None:
        values = list(guesses)
        todo = [i for i, g in enumerate(values) if g is None]
        guessed = True
    while pending:
        for i in todo:  # a candidate for every pending quantity not guessed, raising its precision as needed
            values[i] = _candidate(quantities[i], grid, approximate)
        if grid is not None:
            return values  # unique on the grid; the result's replay checks it again
        failed = list(confirm(values, pending))  # type: ignore[misc]
        if failed and (min(failed) < 0 or max(failed) >= len(quantities)):
            raise InvalidArgument(f"identify: confirm returned a failed index outside 0..{len(quantities) - 1}")
        for i in failed:
            if not (guessed and guesses is not None and guesses[i] is not None):  # a rejected guess costs no precision
                quantities[i].refine()
        guessed = False
        pending = todo = failed
    return values


def _candidate(q: Quantity, grid: Grid | None, approximate: bool):
    """The simplest rational (or the unique grid point) in the quantity's ball, refining until there is one."""
    while True:
        ball = q.ball()
        if ball is None:
            q.refine()
            continue
        if grid is None:  # the quantity's own candidate (a hinted denominator), else the simplest rational
            pick = getattr(q, "candidate", None)
            return pick(ball) if pick is not None else simplest_in_ball(ball)
        lo, hi = ball_interval(ball)
        try:
            g = grid.identify(lo, hi, what=q.what)
        except OracleInconsistent as e:
            if not approximate:
                raise
            raise OracleInconsistent(
                f"{e}, or the oracle's answers are less accurate than its declared accuracy (a callable must "
                "compute in higher precision than the grid it is learned on)"
            ) from None
        if g is not None:
            return to_fmpq(g)
        q.refine()
