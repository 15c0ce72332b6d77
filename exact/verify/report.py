"""The Markdown report of a ``verify`` run: a table per theorem, failures with reproducers."""

from __future__ import annotations

from .. import __version__

__all__ = ["markdown_report"]



def _title(theorem) -> str:
    from ..theorems import verify_theorems

    row = verify_theorems().get(theorem)
    return row.title if row is not None else (theorem or "Other claims")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def sweep_options(budget: str, max_d: int) -> str:
    """The ``verify`` options that rebuild this sweep (empty for the default one)."""
    return (f"--budget {budget} " if budget != "standard" else "") + (f"--max-d {max_d} " if max_d != 16 else "")


def markdown_report(reports, *, budget: str = "standard", max_d: int = 16, seconds: float | None = None) -> str:
    """The report of ``reports`` (each with its claim's ``id``; their outcomes with theirs).

    Each theorem gets a table: instances, how many were exact (or within the bound), how many
    hit the query count, the queries the oracles counted against the formula's count summed
    over the instances, seconds and status.  Every failed instance gets its reason and the
    command line that re-runs exactly that instance (``exact-attention verify --task
    THEOREM:CLAIM:INSTANCE`` with the sweep's options).  ``seconds`` records a time budget (the
    sweep is then the full one).

    Examples
    --------
    >>> from exact.verify.core import ClaimReport, Outcome
    >>> from exact.verify.ids import ClaimId, InstanceId
    >>> bad = Outcome("d=2", False, True, 0.1, "", {"queries": 7, "formula": 6}, InstanceId("kkg", 2, 0), "off by one")
    >>> r = ClaimReport("a claim", 1, 0, 1, 0.1, failures=(bad,), outcomes=(bad,), id=ClaimId("kkg", 2))
    >>> text = markdown_report([r], budget="quick")
    >>> "| a claim | 1 | 0/1 | 1/1 | 7 / 6 |" in text, "exact-attention verify --task kkg:2:0 --budget quick" in text
    (True, True)
    """
    held = sum(r.holds for r in reports)
    skipped = sum(bool(r.skipped) for r in reports)
    partial = sum(bool(r.unrun) for r in reports)
    sweep = sweep_options(budget, max_d)
    size = f"{seconds:g} s over the full sweep" if seconds is not None else budget
    lines = [
        "# exact-attention verify report",
        "",
        f"exact-attention {__version__}; budget: {size}; max d = {max_d}.",
        f"**{held}/{len(reports) - skipped} claims hold**" + (f" ({skipped} skipped)" if skipped else "") + "."
        + (f" {partial} claims ran on part of their sweep before the time budget ran out." if partial else ""),
        "",
        "Columns: *exact* counts the instances whose result was exact (or within its stated bound); *count* "
        "those whose query count matched the theorem's formula (— for claims without a count); *queries / "
        "formula* sums, over the instances, the queries the oracle counted and the count the formula gives (the "
        "bound, where the theorem states one).",
    ]
    failures = []
    theorem_of = [r.id.theorem if r.id is not None else "" for r in reports]
    for theorem in dict.fromkeys(theorem_of):
        lines += ["", f"## {_title(theorem)}", "",
                  "| claim | instances | exact | count | queries / formula | seconds | status |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        for th, r in zip(theorem_of, reports):
            if th != theorem:
                continue
            n = r.instances
            count = f"{r.count}/{n}" if r.counts else "—"
            ran = f"{n} of {n + r.unrun}" if r.unrun else str(n)
            lines.append(f"| {_cell(r.claim)} | {ran} | {r.exact}/{n} | {count} | {_queries(r)} | "
                         f"{r.seconds:.2f} | {r.status} |")
            failures += [(r.claim, o) for o in r.outcomes if not o.passed]
    lines += _provers(reports)
    lines += ["", "## Failures", ""]
    if not failures:
        lines.append("None.")
    for claim, o in failures:
        why = o.reason + (f" ({o.note})" if o.note else "")
        lines.append(f"- **{_cell(claim)}** / {_cell(o.instance)}: {_cell(why)}  ")
        if o.id is not None:
            command = f"exact-attention verify --task {o.id} {sweep}".rstrip()
            lines.append(f"  reproduce: `{command}`")
    return "\n".join(lines) + "\n"


def _queries(report) -> str:
    """Queries the oracles counted against the formula's count, summed over the instances that record both."""
    pairs = [(o.metrics["queries"], o.metrics["formula"]) for o in report.outcomes
             if isinstance(o.metrics.get("queries"), int) and isinstance(o.metrics.get("formula"), int)]
    if not pairs:
        return "—"
    return f"{sum(q for q, _ in pairs)} / {sum(f for _, f in pairs)}"


def _provers(reports) -> list[str]:
    """A table of the lemmas' provers (sympy, and Coq with its version), and the axioms Coq's proofs rest on."""
    rows = [(r.claim, o) for r in reports for o in r.outcomes if "coq" in o.metrics]
    if not rows:
        return []
    lines = ["", "## Provers", "",
             "Each lemma is proved in sympy (`proofs/`) and, where it is formalised, in Coq (`proofs/coq/`: every "
             "file compiled by `coqc`, no admits, `Print Assumptions` on each theorem).", "",
             "| lemma | sympy | Coq | checked by |", "|---|---|---|---|"]
    for claim, o in rows:
        version = o.metrics.get("coq_version")
        lines.append(f"| {_cell(claim)} | {_cell(o.metrics.get('sympy', ''))} | {_cell(o.note.split('Coq: ', 1)[-1])} | "
                     f"{'Coq ' + str(version) if version else '—'} |")
    axioms = sorted({a.strip() for _, o in rows for a in str(o.metrics.get("coq_axioms", "")).split(",") if a.strip()})
    if axioms:
        lines += ["", "The Coq theorems rest on these axioms only, the standard ones of Coq's real numbers: "
                  + ", ".join(f"`{a}`" for a in axioms) + "."]
    return lines
