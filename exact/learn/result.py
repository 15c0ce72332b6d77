"""The frozen result every learner returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping

__all__ = ["LearnResult"]


@dataclass(frozen=True)
class LearnResult:
    """What a learner recovered, how, and the evidence.

    Attributes
    ----------
    model :
        The recovered model (exact parameters; in float mode, the exact binary
        values of the float estimates).
    mode : str
        ``"certified"``, ``"symbolic"`` or ``"float"``.
    exact : bool
        Whether the parameters are claimed exact (then ``certificate`` proves it).
    queries : int
        Value queries used.
    max_length : int
        The longest sequence asked.
    certificate : Certificate or None
        Transcript plus model; ``certificate.check()`` replays it.  ``None`` in float
        mode.
    error_estimate : float or None
        0 for exact results; in float mode a first-order bound on the largest
        parameter error; ``None`` when the method gives no bound (compressed sensing).
    grid : str or None
        The grid the parameters were identified on, if any.
    precision : int
        The largest working precision in bits (certified mode), 53 in float mode,
        0 in symbolic mode.
    seconds : mapping
        Wall-clock seconds per phase: ``query``, ``solve``, ``certify``, ``total``.
    details : mapping
        Learner-specific facts (e.g. the pivot and probe shifts).
    """

    model: object
    mode: str
    exact: bool
    queries: int
    max_length: int
    certificate: object = field(default=None, repr=False)
    error_estimate: float | None = 0.0
    grid: str | None = None
    precision: int = 0
    seconds: Mapping = field(default_factory=dict)
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "seconds", MappingProxyType(dict(self.seconds)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))

    @property
    def W(self):
        """The recovered ``W`` (shortcut for ``model.W``)."""
        return self.model.W

    @property
    def v(self):
        """The recovered ``v`` (shortcut for ``model.v``)."""
        return self.model.v
