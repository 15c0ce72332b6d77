"""The frozen result every learner returns."""

from __future__ import annotations

from collections.abc import Mapping
import math
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .details import Details, as_details

__all__ = ["LearnResult", "ErrorBound", "describe"]


@dataclass(frozen=True)
class ErrorBound:
    """Certified bounds on the parameter errors of an approximate result.

    Each is an upper bound, rounded up; ``inf`` means no finite bound holds (for
    instance the margin ``|v_i| > τ`` is not certified for some row).

    Attributes
    ----------
    W_frobenius, W_max : float
        Bounds on ``‖Ŵ − W‖_F`` and ``max |Ŵ_ij − W_ij|``.
    v_norm, v_max : float
        Bounds on ``‖v̂ − v‖₂`` and ``max |v̂_i − v_i|``.

    Examples
    --------
    >>> b = ErrorBound.from_entries([[3e-6, 4e-6]], [1e-7, 0.0])
    >>> b.W_max, b.W_frobenius >= 5e-6, b.v_max
    (4e-06, True, 1e-07)
    """

    W_frobenius: float
    W_max: float
    v_norm: float
    v_max: float

    @classmethod
    def from_entries(cls, W_bounds, v_bounds) -> "ErrorBound":
        """From per-entry bounds: the Frobenius and 2-norms are rounded up."""
        w = [float(x) for row in W_bounds for x in row]
        v = [float(x) for x in v_bounds]
        return cls(_norm_up(w), max(w, default=0.0), _norm_up(v), max(v, default=0.0))

    def to_json(self) -> dict:
        return {"W_frobenius": self.W_frobenius, "W_max": self.W_max, "v_norm": self.v_norm, "v_max": self.v_max}


def _norm_up(xs: list) -> float:
    """An upper bound on the Euclidean norm of ``xs`` (each square, the sum and the root rounded up)."""
    if any(math.isinf(x) for x in xs):
        return math.inf
    top = max((abs(x) for x in xs), default=0.0)
    if not top:
        return 0.0
    # scaled by the largest entry, so that tiny squares do not underflow (nor huge ones overflow)
    total = math.fsum((x / top) * (x / top) for x in xs) * (1 + 2.0**-50)
    return max(top, math.nextafter(math.sqrt(total) * (1 + 2.0**-50) * top * (1 + 2.0**-50), math.inf))


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
    details : Details
        Learner-specific facts (the pivot and probe shifts, the sketch seed, ...), typed per
        learner family (:mod:`exact.learn.details`); also readable as a mapping.
    error_bound : ErrorBound or None
        Certified bounds on the parameter errors of an approximate result (the noisy
        learners), under the stated ``assumptions``; ``None`` otherwise.
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
    details: Details = field(default_factory=Details)
    error_bound: ErrorBound | None = None

    def __post_init__(self):
        object.__setattr__(self, "seconds", MappingProxyType(dict(self.seconds)))
        object.__setattr__(self, "details", as_details(self.details))
        object.__setattr__(self, "assumptions", tuple(self.assumptions))

    @property
    def W(self):
        """The recovered ``W`` (shortcut for ``model.W``)."""
        return self.model.W

    @property
    def v(self):
        """The recovered ``v`` (shortcut for ``model.v``)."""
        return self.model.v

    def describe(self, *, report=None, comparison=None) -> list[str]:
        """What the terminal shows about this result (see :func:`describe`)."""
        return describe(self, report=report, comparison=comparison)

    @property
    def total_queries(self) -> int:
        """Every query this run asked: the learner's plus the verification queries."""
        return self.queries + self.verification_queries

    @property
    def claim(self) -> str:
        """One line: exact or approximate, and under which assumptions."""
        if not self.exact:
            if self.error_bound is not None:
                b = self.error_bound
                text = f"approximate (certified: ‖ΔW‖_F <= {b.W_frobenius:.3g}, ‖Δv‖ <= {b.v_norm:.3g})"
            else:
                text = "approximate" if self.error_estimate is None else f"approximate (error <= {self.error_estimate:.3g})"
        else:
            text = "exact" + (f" on grid {self.grid}" if self.grid else "")
        if self.assumptions and self.error_bound is not None:
            return f"{text}, assuming {'; '.join(self.assumptions)}"
        return text + (" " + ", ".join(self.assumptions) if self.assumptions else "")


def _line(label: str, text: str) -> str:
    return f"{label:<11} {text}" if label else f"  {text}"


def describe(result: LearnResult, *, report=None, comparison=None) -> list[str]:
    """What the terminal shows about ``result``: the learner's own statement of its count, the
    checks, the comparison with a true model (when one is known), the certificate, and then
    what the result's details and model say about themselves."""
    from .. import registry

    spec = registry.get(result.learner)
    lines = [_line("mode", result.mode + (f" (grid {result.grid})" if result.grid else "")),
             _line("queries", f"{result.queries} ({spec.state_count(result)}), longest sequence {result.max_length}")]
    checks = result.details.checks
    if result.verification_queries:
        lengths = ", ".join(map(str, checks.lengths))
        lines.append(_line("checks", f"{result.verification_queries} verification queries (lengths {lengths}), "
                                     "reproduced exactly" if result.exact else
                                     f"{result.verification_queries} verification queries (lengths {lengths}), "
                                     "reproduced within the estimate"))
    elif spec.exact:
        lines.append(_line("checks", f"none (--checks 0): the result holds {', '.join(result.assumptions)}"))
    if comparison is not None:
        lines += [_line(label, text) for label, text in comparison.rows]
    elif result.assumptions:
        lines.append(_line("claim", result.claim))
    if not result.exact and result.mode in ("certified", "symbolic"):
        lines.append(_line("exact", f"not claimed: identified on grid {result.grid} but not confirmed by a replay"))
    if report is not None:
        lines.append(_line("certificate", report.message))
    elif spec.exact and result.mode in ("certified", "symbolic"):
        lines.append(_line("certificate", "none"))
    if result.exact:
        lines.append(_line("precision", f"{result.precision} bits" if result.mode == "certified" else "exact symbolic"))
    elif result.error_bound is None and result.error_estimate is not None and comparison is None:
        lines.append(_line("error", f"estimated <= {result.error_estimate:.3g}"))
    lines += [_line(label, text) for label, text in result.details.rows(result)]
    lines.append(_line("seconds", f"{result.seconds.get('total', 0.0):.3f}"))
    return lines + list(result.details.model_rows(result))
