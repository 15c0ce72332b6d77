"""What the ReLU learners share below all of them: their option checks and the assumptions they state."""

from __future__ import annotations

from ..errors import InvalidArgument

__all__ = ["PATH_SEED", "at_most", "check_options"]

#: Every result of the ReLU learners rests on its search path being drawn independently of the network.
PATH_SEED = "for a search path independent of the network (its seed drawn independently of it)"


def at_most(m: int) -> str:
    """The assumption a given ``m`` states: an upper bound on the hidden units.

    >>> at_most(1), at_most(3)
    ('among networks with at most 1 hidden unit', 'among networks with at most 3 hidden units')
    """
    return f"among networks with at most {m} hidden unit{'' if m == 1 else 's'}"


def _seed_ok(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**63


def check_options(*, m, seed, retries, max_units, interior: bool) -> None:
    """The ReLU learners' options, checked before any query (:class:`~exact.errors.InvalidArgument`)."""
    if m is not None and (not isinstance(m, int) or isinstance(m, bool) or m < 0):
        raise InvalidArgument(f"m: expected a non-negative number of units, got {m!r}")
    for name, value in (("retries", retries), ("max_units", max_units)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InvalidArgument(f"{name}: expected a non-negative integer, got {value!r}")
    if seed is not None and not _seed_ok(seed):
        raise InvalidArgument(f"seed: expected an integer in [0, 2^63), got {seed!r}")
    if not isinstance(interior, bool):
        raise InvalidArgument(f"interior: expected True or False, got {interior!r}")
