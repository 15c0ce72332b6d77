"""The frozen result every learner returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

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
        ``"certified"``, ``"symbolic"`` or ``"float"`` (``"cs"`` for compressed sensing).
    exact : bool
        Whether the parameters are claimed exact: then ``certificate`` proves it,
        under the stated ``assumptions``.  ``False`` for approximate results and for
        grid identifications that were not confirmed (``certify=False``).
    queries : int
        Value queries the learner itself used (the count its theorem states).
    max_length : int
        The longest sequence the learner asked.
    certificate : Certificate or None
        Transcript plus model; ``certificate.check()`` replays it.  ``None`` for
        approximate results.
    report : CheckReport or None
        The certificate's check as the learner's own replay established it (each
        run replays its transcript once), or ``None`` when it was not replayed.
    error_estimate : float or None
        0 for exact results; in float mode a first-order bound on the largest
        parameter error; ``None`` when the method gives no bound (compressed sensing).
    grid : str or None
        The grid the parameters were identified on, if any.
    precision : int
        The largest working precision in bits (certified mode), 53 in float mode,
        0 in symbolic mode.
    seconds : mapping
        Wall-clock seconds per phase: ``query`` (the oracle answering, the verification
        queries included), ``check`` (drawing and deciding the verification queries),
        ``certify`` (replay), ``solve`` (the rest) and ``total``.
    learner : str
        The registry name of the learner.
    verification_queries : int
        Extra queries spent checking the model class (random longer sequences,
        decided exactly or within the stated accuracy); not part of ``queries``.
    assumptions : tuple of str
        What exactness rests on beyond the certificate, e.g. ``("among single
        heads",)`` when no verification query was made.  Empty when every
        assumption was checked.
    details : mapping
        Learner-specific facts (the pivot and probe shifts, the sketch seed, ...).
    """

    model: Any
    mode: str
    exact: bool
    queries: int
    max_length: int
    certificate: Any = field(default=None, repr=False)
    report: Any = field(default=None, repr=False)
    error_estimate: float | None = 0.0
    grid: str | None = None
    precision: int = 0
    seconds: Mapping = field(default_factory=dict)
    learner: str = ""
    verification_queries: int = 0
    assumptions: tuple = ()
    details: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "seconds", MappingProxyType(dict(self.seconds)))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))

    @property
    def W(self):
        """The recovered ``W`` (shortcut for ``model.W``)."""
        return self.model.W

    @property
    def v(self):
        """The recovered ``v`` (shortcut for ``model.v``)."""
        return self.model.v

    @property
    def total_queries(self) -> int:
        """Every query this run asked: the learner's plus the verification queries."""
        return self.queries + self.verification_queries

    @property
    def claim(self) -> str:
        """One line: exact or approximate, and under which assumptions."""
        if not self.exact:
            text = "approximate" if self.error_estimate is None else f"approximate (error <= {self.error_estimate:.3g})"
        else:
            text = "exact" + (f" on grid {self.grid}" if self.grid else "")
        return text + (" " + ", ".join(self.assumptions) if self.assumptions else "")
