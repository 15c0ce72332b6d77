"""Sweep budgets: how many instances each claim is checked on.

Three named budgets size every claim's instance generator:

``quick``
    The smallest sweep that still touches every claim (a few seconds per theorem).
``standard``
    The default of ``exact-attention verify``: every claim on a sweep sized to run in
    under a minute, sequentially, on a 2-core machine.
``full``
    More seeds, larger dimensions and every structured case; meant for ``--jobs N`` or a
    cluster.

A budget may also be a number of **seconds**.  The run then draws from the full sweep,
one instance of every claim at a time (the quick sweep's instances first, then the
standard sweep's, then the rest), and starts no instance after the deadline.  Claims
whose sweep was cut short say how many of their instances ran; a claim holds only on
the instances that ran, and the report says so.

Examples
--------
>>> parse_budget("quick"), parse_budget("90"), parse_budget("2.5")
('quick', 90.0, 2.5)
>>> pick("standard", quick=1, standard=2, full=3)
2
"""

from __future__ import annotations

import math
from typing import TypeVar

from ..errors import InvalidArgument

__all__ = ["BUDGETS", "DEFAULT_BUDGET", "parse_budget", "pick", "check_budget"]

BUDGETS = ("quick", "standard", "full")
DEFAULT_BUDGET = "standard"

T = TypeVar("T")


def check_budget(budget: str) -> str:
    """``budget`` if it names a sweep, else :class:`InvalidArgument`."""
    if budget not in BUDGETS:
        raise InvalidArgument(f"budget: expected one of {', '.join(BUDGETS)}, got {budget!r}")
    return budget


def parse_budget(text: str) -> str | float:
    """A named budget, or a positive, finite number of seconds (``--budget 90``)."""
    if text in BUDGETS:
        return text
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise InvalidArgument(f"budget: expected {', '.join(BUDGETS)} or a positive number of seconds, got {text!r}")
    return seconds


def pick(budget: str, *, quick: T, standard: T, full: T) -> T:
    """The value for ``budget`` among the three."""
    return {"quick": quick, "standard": standard, "full": full}[check_budget(budget)]
