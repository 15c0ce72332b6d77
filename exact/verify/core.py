"""Claims, their reports and the table: the machinery behind ``exact-attention verify``.

Each :class:`Claim` runs a check on a built-in sweep of instances and records, per
instance, whether the result is exact (or within the theorem's bound), whether the
query count is the one the theorem states, and how long it took.  A claim holds only if it
was checked on at least one instance and every instance passed.  A claim whose
optional dependency is missing is reported as skipped, never as held.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Instance", "Outcome", "Claim", "ClaimReport", "run_claims", "format_table", "table_header", "table_row",
    "table_footer",
]


@dataclass(frozen=True)
class Instance:
    """One named test instance: a model plus what the claim expects of it."""

    name: str
    model: Any
    grid: str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What one instance gave: exact (or in bound), right count, seconds, a note, and its measurements.

    ``metrics`` holds the numbers the plots and reports draw on (dimensions, queries and the
    formula's count, errors and bounds), as plain JSON numbers and strings.
    """

    instance: str
    exact: bool
    count: bool
    seconds: float
    note: str = ""
    metrics: dict = field(default_factory=dict, compare=True)


@dataclass(frozen=True)
class ClaimReport:
    """Per-claim totals: instances, how many were exact (or in bound), how many hit the count.

    ``unrun`` counts the instances of the sweep that a time budget left unstarted; the totals
    cover the instances that ran.
    """

    claim: str
    instances: int
    exact: int
    count: int
    seconds: float
    failures: tuple = ()
    outcomes: tuple = ()
    skipped: str | None = None
    counts: bool = True
    unrun: int = 0

    @property
    def holds(self) -> bool:
        """All instances passed (a claim checked on no instance, or skipped, does not hold)."""
        return self.skipped is None and self.instances > 0 and self.exact == self.count == self.instances

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else ("ok" if self.holds else "FAIL")

    def to_json(self) -> dict:
        return {
            "claim": self.claim,
            "instances": self.instances,
            "exact": self.exact,
            "count": self.count,
            "seconds": round(self.seconds, 3),
            "holds": self.holds,
            "skipped": self.skipped,
            "failures": [dataclasses.asdict(f) for f in self.failures],
            "outcomes": [dataclasses.asdict(o) for o in self.outcomes],
            "counts": self.counts,
            "unrun": self.unrun,
        }

    @classmethod
    def from_json(cls, row) -> "ClaimReport":
        """A report from its :meth:`to_json` row (as ``verify --json`` prints it); strict.

        >>> r = ClaimReport("c", 1, 1, 1, 0.5, outcomes=(Outcome("a", True, True, 0.5, "fine"),))
        >>> ClaimReport.from_json(r.to_json()) == r
        True
        """
        if not isinstance(row, dict):
            raise ValueError(f"expected a JSON object, got {type(row).__name__}")
        try:
            outcomes = tuple(Outcome(str(o["instance"]), bool(o["exact"]), bool(o["count"]), float(o["seconds"]),
                                     str(o.get("note", "")), _metrics(o.get("metrics", {})))
                             for o in row["outcomes"])
            report = cls(str(row["claim"]), int(row["instances"]), int(row["exact"]), int(row["count"]),
                         float(row["seconds"]), tuple(o for o in outcomes if not (o.exact and o.count)), outcomes,
                         row["skipped"] if row.get("skipped") is None else str(row["skipped"]),
                         bool(row.get("counts", True)), int(row.get("unrun", 0)))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a verify row ({type(e).__name__}: {e})") from None
        if report.unrun < 0:
            raise ValueError(f"claim {report.claim!r}: negative unrun count")
        if (report.exact, report.count) != (sum(o.exact for o in outcomes), sum(o.count for o in outcomes)):
            raise ValueError(f"claim {report.claim!r}: its totals contradict its outcomes")
        if report.skipped is None and len(outcomes) != report.instances:
            raise ValueError(f"claim {report.claim!r}: {len(outcomes)} outcomes for {report.instances} instances")
        return report


def _metrics(value) -> dict:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError("metrics must be a JSON object")
    for v in value.values():
        if not (v is None or isinstance(v, (bool, int, float, str))):
            raise ValueError(f"metric values must be numbers or strings, got {type(v).__name__}")
    return dict(value)


@dataclass(frozen=True)
class Claim:
    """A statement checked on every instance by ``check(instance) -> (exact, count, note[, metrics])``.

    ``requires`` names an optional module; without it the claim is skipped.
    ``counts=False`` marks claims with no query count (proofs, constructions): their
    count column shows "—" and does not enter the verdict.
    """

    name: str
    instances: tuple
    check: Callable = field(repr=False)
    requires: str | None = None
    counts: bool = True

    @property
    def skip_reason(self) -> str | None:
        """Why the claim cannot run here (its optional dependency is missing), or ``None``."""
        if self.requires is not None and not _importable(self.requires):
            return f"{self.requires} is not installed"
        return None

    def run_instance(self, k: int) -> Outcome:
        """Check instance ``k``; a crash is a failed instance, reported, never hidden."""
        inst = self.instances[k]
        t = time.perf_counter()
        metrics: dict = {}
        try:
            result = self.check(inst)
            exact, count, note = result[:3]
            if len(result) > 3:
                metrics = _metrics(result[3])
        except Exception as e:
            exact, count, note = False, False, f"{type(e).__name__}: {e}"
        if not self.counts:
            count = True
        return Outcome(inst.name, bool(exact), bool(count), time.perf_counter() - t, note, metrics)

    def run(self, progress: Callable[[str], None] | None = None) -> ClaimReport:
        skipped = self.skip_reason
        if skipped is not None:
            return self.report([], skipped=skipped)
        outcomes = []
        for k, inst in enumerate(self.instances):
            if progress:
                progress(f"{self.name}: {k + 1}/{len(self.instances)} {inst.name}")
            outcomes.append(self.run_instance(k))
        return self.report(outcomes)

    def report(self, outcomes, *, skipped: str | None = None, unrun: int = 0) -> ClaimReport:
        """The claim's report from its instances' outcomes, in instance order (``unrun``: instances
        a time budget left unstarted)."""
        if skipped is None and unrun and not outcomes:
            skipped = "no instance started within the time budget"
        if skipped is not None:
            return ClaimReport(self.name, len(self.instances), 0, 0, 0.0, skipped=skipped, counts=self.counts)
        return ClaimReport(
            self.name,
            len(outcomes),
            sum(o.exact for o in outcomes),
            sum(o.count for o in outcomes),
            sum(o.seconds for o in outcomes),
            tuple(o for o in outcomes if not (o.exact and o.count)),
            tuple(outcomes),
            counts=self.counts,
            unrun=unrun,
        )


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run_claims(claims, *, progress: bool = True, on_report: Callable | None = None) -> list[ClaimReport]:
    """Run claims in order; ``on_report(report)`` is called as each claim finishes.

    ``progress`` shows a bar per claim on stderr (only on a terminal, only after a
    second of work).
    """
    out = []
    for c in claims:
        bar = _claim_bar(c, progress)
        try:
            report = c.run(bar.step if bar else None)
        finally:
            if bar:
                bar.close()
        out.append(report)
        if on_report is not None:
            on_report(report)
    return out


class _claim_bar:
    def __init__(self, claim, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=len(claim.instances), desc=claim.name[:40], file=sys.stderr, leave=False, delay=1.0,
                        disable=None if enabled else True, dynamic_ncols=True)

    def step(self, message: str) -> None:
        self.bar.set_postfix_str(message.rsplit(" ", 1)[-1][:30], refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


_WIDTHS = (60, 9, 9, 9, 9)


def table_header() -> str:
    """The first two lines of the claims table (fixed widths, so rows can stream)."""
    cells = ("claim", "instances", "exact", "count", "seconds")
    line = "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, _WIDTHS)))
    return line + "\n" + "-" * (len(line) + 8)


def table_row(r: ClaimReport) -> str:
    """One claim's row, plus its failures and skip reason on following lines."""
    n = r.instances
    count = f"{r.count}/{n}" if r.counts else "—"
    ran = f"{n} of {n + r.unrun}" if r.unrun else str(n)
    cells = (r.claim[: _WIDTHS[0]], ran, f"{r.exact}/{n}", count, f"{r.seconds:.2f}")
    line = "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, _WIDTHS)))
    lines = [line + "  " + r.status]
    if r.skipped:
        lines.append(f"  SKIPPED {r.claim}: {r.skipped}")
    if r.unrun:
        lines.append(f"  PARTIAL {r.claim}: {r.unrun} of {n + r.unrun} instances not run within the time budget")
    for f in r.failures[:5]:
        lines.append(f"  FAIL {r.claim} / {f.instance}: {f.note}")
    return "\n".join(lines)


def table_footer(reports) -> str:
    held = sum(r.holds for r in reports)
    skipped = sum(bool(r.skipped) for r in reports)
    partial = sum(bool(r.unrun) for r in reports)
    notes = ([f"{skipped} skipped"] if skipped else []) + (
        [f"{partial} on part of their sweep: the time budget ran out"] if partial else [])
    return f"\n{held}/{len(reports) - skipped} claims hold" + (f" ({'; '.join(notes)})" if notes else "")


def format_table(reports) -> str:
    """The whole table: header, one row per claim (with its failures), no footer."""
    return "\n".join([table_header()] + [table_row(r) for r in reports])
