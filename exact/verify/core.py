"""Claims, their reports and the table: the machinery behind ``exact-attention verify``.

Each :class:`Claim` runs a check on a built-in sweep of instances and records, per
instance, whether the result is exact (or within the theorem's bound), whether the
query count is the one SPEC states, and how long it took.  A claim holds only if it
was checked on at least one instance and every instance passed.  A claim whose
optional dependency is missing is reported as skipped, never as held.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Instance", "Outcome", "Claim", "ClaimReport", "run_claims", "format_table"]


@dataclass(frozen=True)
class Instance:
    """One named test instance: a model plus what the claim expects of it."""

    name: str
    model: object
    grid: str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class Outcome:
    """What one instance gave: exact (or in bound), right count, seconds, a note."""

    instance: str
    exact: bool
    count: bool
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class ClaimReport:
    """Per-claim totals: instances, how many were exact (or in bound), how many hit the count."""

    claim: str
    instances: int
    exact: int
    count: int
    seconds: float
    failures: tuple = ()
    outcomes: tuple = ()
    skipped: str | None = None
    counts: bool = True

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
        }


@dataclass(frozen=True)
class Claim:
    """A statement checked on every instance by ``check(instance) -> (exact, count, note)``.

    ``requires`` names an optional module; without it the claim is skipped.
    ``counts=False`` marks claims with no query count (proofs, constructions): their
    count column shows "—" and does not enter the verdict.
    """

    name: str
    instances: tuple
    check: Callable = field(repr=False)
    requires: str | None = None
    counts: bool = True

    def run(self, progress: Callable[[str], None] | None = None) -> ClaimReport:
        if self.requires is not None and not _importable(self.requires):
            return ClaimReport(
                self.name, len(self.instances), 0, 0, 0.0, skipped=f"{self.requires} is not installed", counts=self.counts
            )
        outcomes = []
        for k, inst in enumerate(self.instances):
            if progress:
                progress(f"{self.name}: {k + 1}/{len(self.instances)} {inst.name}")
            t = time.perf_counter()
            try:
                exact, count, note = self.check(inst)
            except Exception as e:  # a crash is a failed instance, reported, never hidden
                exact, count, note = False, False, f"{type(e).__name__}: {e}"
            if not self.counts:
                count = True
            outcomes.append(Outcome(inst.name, exact, count, time.perf_counter() - t, note))
        return ClaimReport(
            self.name,
            len(outcomes),
            sum(o.exact for o in outcomes),
            sum(o.count for o in outcomes),
            sum(o.seconds for o in outcomes),
            tuple(o for o in outcomes if not (o.exact and o.count)),
            tuple(outcomes),
            counts=self.counts,
        )


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def run_claims(claims, *, progress: bool | None = None) -> list[ClaimReport]:
    """Run claims, showing progress on a terminal (stderr) unless told otherwise."""
    show = sys.stderr.isatty() if progress is None else progress

    def report(msg: str) -> None:
        sys.stderr.write("\r\033[K" + msg[:100])
        sys.stderr.flush()

    out = [c.run(report if show else None) for c in claims]
    if show:
        sys.stderr.write("\r\033[K")
    return out


def format_table(reports) -> str:
    """A plain-text table: claim, instances, exact, count, seconds, verdict."""
    rows = [("claim", "instances", "exact", "count", "seconds", "")]
    for r in reports:
        n = r.instances
        count = f"{r.count}/{n}" if r.counts else "—"
        rows.append((r.claim, str(n), f"{r.exact}/{n}", count, f"{r.seconds:.2f}", r.status))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "-" * len(lines[0]))
    for r in reports:
        if r.skipped:
            lines.append(f"  SKIPPED {r.claim}: {r.skipped}")
        for f in r.failures[:5]:
            lines.append(f"  FAIL {r.claim} / {f.instance}: {f.note}")
    return "\n".join(lines)
