"""Claims, their verdicts and reports, and the table: the machinery behind ``exact-attention verify``.

Each :class:`Claim` runs a check on a built-in sweep of instances.  An :class:`Instance`
is a name and a typed *case* (one small frozen dataclass per claim family, see
:mod:`exact.verify.cases`); the check gets the case and returns a :class:`Verdict`: whether
the result is exact (or within the theorem's bound) and, if not, why; the query
:class:`Count` against the paper's formula; a note; the measurements plots draw on.
A claim holds only if it was checked on at least one instance and every instance passed.
A claim whose optional dependency is missing is reported as skipped, never as held.

Examples
--------
>>> from exact.verify.formulas import SINGLE_HEAD
>>> c = SINGLE_HEAD.check(7, d=2, reported=6)
>>> c.holds, c.reason()
(False, 'the oracle counted 7 queries, d² + d = 6; the learner reported 6')
>>> claim = Claim("a claim", (Instance("d=2", 2),), lambda d: Verdict(True, SINGLE_HEAD.check(7, d=d)))
>>> o = claim.run_instance(0)
>>> o.exact, o.count, o.reason, o.metrics
(True, False, 'count: the oracle counted 7 queries, d² + d = 6', {'queries': 7, 'formula': 6})
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..formulas import Count
from .ids import ClaimId, InstanceId, parse_id

__all__ = [
    "Instance", "Count", "Verdict", "conditions", "Outcome", "Claim", "ClaimReport", "run_claims", "format_table",
    "table_header", "table_row", "table_footer",
]

C = TypeVar("C")


@dataclass(frozen=True)
class Instance(Generic[C]):
    """One named test instance: its ``case``, the typed data the claim's check runs on."""

    name: str
    case: C


def conditions(*pairs: tuple[bool, str]) -> tuple[bool, str]:
    """``(all hold, why not)`` from ``(holds, what is wrong when it does not)`` pairs.

    >>> conditions((True, "the model differs"), (False, "the certificate does not hold"))
    (False, 'the certificate does not hold')
    """
    failed = [why for ok, why in pairs if not ok]
    return not failed, "; ".join(failed)


@dataclass(frozen=True)
class Verdict:
    """What a check found on one instance.

    Parameters
    ----------
    exact : bool
        The result is exact (or within the theorem's bound); for a refusal, it was refused.
    count : Count or bool
        The query count against the formula; a bool where the check decides the count rule
        itself (``count_why`` then says why it fails).  Claims without a count ignore it.
    why : str
        Why the result is not exact, when it is not.
    note : str
        What the instance showed (printed with the instance's row).
    metrics : mapping
        Plain JSON numbers and strings for plots and reports; a :class:`Count` adds
        ``queries`` (the oracle's count) and ``formula``.
    """

    exact: bool
    count: Count | bool = True
    why: str = ""
    note: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    count_why: str = ""


@dataclass(frozen=True)
class Outcome:
    """What one instance gave: exact (or in bound), right count, seconds, a note, its measurements,
    its identity and, when it failed, the reason.

    ``metrics`` holds the numbers the plots and reports draw on (dimensions, the oracle's
    queries and the formula's count, errors and bounds), as plain JSON numbers and strings.
    """

    instance: str
    exact: bool
    count: bool
    seconds: float
    note: str = ""
    metrics: dict = field(default_factory=dict, compare=True)
    id: InstanceId | None = None
    reason: str = ""

    @property
    def passed(self) -> bool:
        return self.exact and self.count

    def to_json(self) -> dict:
        return {"task": None if self.id is None else str(self.id), "instance": self.instance, "exact": self.exact,
                "count": self.count, "seconds": round(self.seconds, 6), "note": self.note, "reason": self.reason,
                "metrics": dict(self.metrics)}

    @classmethod
    def from_json(cls, row) -> "Outcome":
        """An outcome from its :meth:`to_json` row; strict (``ValueError``)."""
        if not isinstance(row, dict):
            raise ValueError(f"an outcome must be a JSON object, got {type(row).__name__}")
        ident = row.get("task")
        if ident is not None:
            found = parse_id(ident) if isinstance(ident, str) else None
            if not isinstance(found, InstanceId):
                raise ValueError(f"an outcome's task must be THEOREM:CLAIM:INSTANCE, got {ident!r}")
            ident = found
        for key, kind in (("instance", str), ("exact", bool), ("count", bool), ("note", str), ("reason", str)):
            if not isinstance(row.get(key, "" if key in ("note", "reason") else None), kind):
                raise ValueError(f"an outcome's {key!r} must be a {kind.__name__}")
        seconds = row.get("seconds")
        if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds >= 0:
            raise ValueError("an outcome's 'seconds' must be a number >= 0")
        return cls(row["instance"], row["exact"], row["count"], float(seconds), row.get("note", ""),
                   _metrics(row.get("metrics", {})), ident, row.get("reason", ""))


@dataclass(frozen=True)
class ClaimReport:
    """Per-claim totals: instances, how many were exact (or in bound), how many hit the count.

    ``unrun`` counts the instances of the sweep that a time budget left unstarted; the totals
    cover the instances that ran.  ``id`` is the claim's identity in the sweep.
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
    id: ClaimId | None = None

    @property
    def holds(self) -> bool:
        """All instances passed (a claim checked on no instance, or skipped, does not hold)."""
        return self.skipped is None and self.instances > 0 and self.exact == self.count == self.instances

    @property
    def status(self) -> str:
        return "skipped" if self.skipped else ("ok" if self.holds else "FAIL")

    def to_json(self) -> dict:
        return {
            "task": None if self.id is None else str(self.id),
            "claim": self.claim,
            "instances": self.instances,
            "exact": self.exact,
            "count": self.count,
            "seconds": round(self.seconds, 3),
            "holds": self.holds,
            "skipped": self.skipped,
            "counts": self.counts,
            "unrun": self.unrun,
            "failures": [o.to_json() for o in self.failures],
            "outcomes": [o.to_json() for o in self.outcomes],
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
            ident = row.get("task")
            if ident is not None:
                found = parse_id(ident) if isinstance(ident, str) else None
                if not isinstance(found, ClaimId):
                    raise ValueError(f"a claim's task must be THEOREM:CLAIM, got {ident!r}")
                ident = found
            if not isinstance(row["outcomes"], list):
                raise ValueError("'outcomes' must be a list")
            outcomes = tuple(Outcome.from_json(o) for o in row["outcomes"])
            for key in ("instances", "exact", "count", "unrun"):
                if not isinstance(row.get(key, 0), int) or isinstance(row.get(key), bool):
                    raise ValueError(f"{key!r} must be an integer")
            skipped = row["skipped"]
            if not (skipped is None or isinstance(skipped, str)) or not isinstance(row["claim"], str):
                raise ValueError("'claim' and 'skipped' must be strings")
            report = cls(row["claim"], row["instances"], row["exact"], row["count"], float(row["seconds"]),
                         tuple(o for o in outcomes if not o.passed), outcomes, skipped,
                         bool(row.get("counts", True)), row.get("unrun", 0), ident)
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"not a verify row ({type(e).__name__}: {e})") from None
        if report.unrun < 0:
            raise ValueError(f"claim {report.claim!r}: negative unrun count")
        if (report.exact, report.count) != (sum(o.exact for o in outcomes), sum(o.count for o in outcomes)):
            raise ValueError(f"claim {report.claim!r}: its totals contradict its outcomes")
        if report.skipped is None and len(outcomes) != report.instances:
            raise ValueError(f"claim {report.claim!r}: {len(outcomes)} outcomes for {report.instances} instances")
        if ident is not None and any(o.id is None or o.id.claim_id != ident for o in outcomes):
            raise ValueError(f"claim {report.claim!r}: an outcome's task is not an instance of {ident}")
        return report


def _metrics(value) -> dict:
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ValueError("metrics must be a JSON object")
    for v in value.values():
        if not (v is None or isinstance(v, (bool, int, float, str))):
            raise ValueError(f"metric values must be numbers or strings, got {type(v).__name__}")
    return dict(value)


@dataclass(frozen=True)
class Claim(Generic[C]):
    """A statement checked on every instance by ``check(case) -> Verdict``.

    ``requires`` names an optional module; without it the claim is skipped.
    ``counts=False`` marks claims with no query count (proofs, constructions): their
    count column shows "—" and does not enter the verdict.  ``needs`` is a function saying why
    the claim cannot run here (an outside tool is missing), or ``None`` when it can.
    """

    name: str
    instances: tuple[Instance[C], ...]
    check: Callable[[C], Verdict] = field(repr=False)
    requires: str | None = None
    counts: bool = True
    needs: Callable[[], str | None] | None = field(default=None, repr=False)

    @property
    def skip_reason(self) -> str | None:
        """Why the claim cannot run here (its optional dependency is missing), or ``None``."""
        if self.requires is not None and not _importable(self.requires):
            return f"{self.requires} is not installed"
        return self.needs() if self.needs is not None else None

    def run_instance(self, k: int, *, id: InstanceId | None = None) -> Outcome:
        """Check instance ``k`` (whose identity is ``id``); a crash is a failed instance, reported, never hidden."""
        inst = self.instances[k]
        t = time.perf_counter()
        try:
            verdict = self.check(inst.case)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"the check returned a {type(verdict).__name__}, not a Verdict")
            metrics = _metrics(verdict.metrics)
        except Exception as e:
            return Outcome(inst.name, False, not self.counts, time.perf_counter() - t, "", {}, id,
                           f"{type(e).__name__}: {e}")
        seconds = time.perf_counter() - t
        reasons = [] if verdict.exact else [verdict.why or "not exact"]
        if isinstance(verdict.count, Count):
            count, metrics = verdict.count.holds, {**verdict.count.metrics(), **metrics}
            count_why = verdict.count.reason()
        else:
            count, count_why = bool(verdict.count), verdict.count_why or "the count rule does not hold"
        if not self.counts:
            count = True
        if not count:
            reasons.append(f"count: {count_why}")
        return Outcome(inst.name, bool(verdict.exact), count, seconds, verdict.note, metrics, id, "; ".join(reasons))

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

    def report(self, outcomes, *, skipped: str | None = None, unrun: int = 0, id: ClaimId | None = None) -> ClaimReport:
        """The claim's report from its instances' outcomes, in instance order (``unrun``: instances
        a time budget left unstarted)."""
        if skipped is None and unrun and not outcomes:
            skipped = "no instance started within the time budget"
        if skipped is not None:
            return ClaimReport(self.name, len(self.instances), 0, 0, 0.0, skipped=skipped, counts=self.counts, id=id)
        return ClaimReport(
            self.name,
            len(outcomes),
            sum(o.exact for o in outcomes),
            sum(o.count for o in outcomes),
            sum(o.seconds for o in outcomes),
            tuple(o for o in outcomes if not o.passed),
            tuple(outcomes),
            counts=self.counts,
            unrun=unrun,
            id=id,
        )


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # a module set to None in sys.modules (hidden), or without a spec
        return False


def run_claims(claims, *, progress: bool = True, on_report: Callable | None = None) -> list[ClaimReport]:
    """Run claims in order in this process; ``on_report(report)`` is called as each claim finishes.

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


_WIDTHS = (9, 9, 9, 9)
#: How many failed instances a claim's row lists (the --json rows and the report list them all).
SHOWN_FAILURES = 5


def _width(names) -> int:
    return max([len("claim"), *(len(n) for n in names)])


def table_header(names=()) -> str:
    """The first two lines of the claims table; the claim column is as wide as the longest of
    ``names`` (the claims to come), so rows can stream and no name is cut."""
    width = _width(names)
    cells = ("claim".ljust(width),) + tuple(c.rjust(w) for c, w in zip(("instances", "exact", "count", "seconds"),
                                                                          _WIDTHS))
    line = "  ".join(cells)
    return line + "\n" + "-" * (len(line) + 8)


def table_row(r: ClaimReport, names=()) -> str:
    """One claim's row (the claim column as wide as for ``names``), plus its failures, with their
    reasons and identities, and its skip reason on following lines."""
    n = r.instances
    count = f"{r.count}/{n}" if r.counts else "—"
    ran = f"{n} of {n + r.unrun}" if r.unrun else str(n)
    cells = (r.claim.ljust(_width(names)),) + tuple(
        c.rjust(w) for c, w in zip((ran, f"{r.exact}/{n}", count, f"{r.seconds:.2f}"), _WIDTHS))
    lines = ["  ".join(cells) + "  " + r.status]
    lines += [f"  {o.note}" for o in r.outcomes if o.passed and "coq" in o.metrics]  # which provers checked it
    if r.skipped:
        lines.append(f"  SKIPPED {r.claim}: {r.skipped}")
    if r.unrun:
        lines.append(f"  PARTIAL {r.claim}: {r.unrun} of {n + r.unrun} instances not run within the time budget")
    for f in r.failures[:SHOWN_FAILURES]:
        where = f" [{f.id}]" if f.id is not None else ""
        lines.append(f"  FAIL {r.claim} / {f.instance}{where}: {f.reason}" + (f" ({f.note})" if f.note else ""))
    if len(r.failures) > SHOWN_FAILURES:
        lines.append(f"  ... and {len(r.failures) - SHOWN_FAILURES} more failed instances of {r.claim} "
                     "(--json or --report lists them all)")
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
    names = [r.claim for r in reports]
    return "\n".join([table_header(names)] + [table_row(r, names) for r in reports])
