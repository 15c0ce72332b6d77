"""The Markdown report of a ``verify`` run: a table per theorem, failures with reproducers."""

from __future__ import annotations

from .. import __version__

__all__ = ["markdown_report"]

_TITLES = {
    "4.1": "Theorem 4.1 [BSHK26]: a single head, exactly, from d² + d queries",
    "5.1": "Theorem 5.1 [BSHK26]: low-rank heads",
    "6.1": "Theorem 6.1 and App. B [BSHK26]: noisy and threshold oracles",
    "7.1": "Proposition 7.1 [BSHK26]: non-identifiable multi-head parameterisations",
    "kkg": "[KKG26]: the canonical multi-head form, exactly",
    "transformer": "[BSHK26]: ReLU FFN extraction and the one-layer Transformer",
}


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_report(index, reports, *, quick: bool, max_d: int, tasks=None) -> str:
    """The report of ``reports``, whose claims are ``index`` = [(theorem, claim number), ...].

    Every failed instance gets the command line that re-runs exactly that instance
    (``exact-attention verify --task THEOREM:CLAIM:INSTANCE`` with the sweep's options).

    Examples
    --------
    >>> from exact.verify.core import ClaimReport, Outcome
    >>> bad = Outcome("d=2", False, True, 0.1, "off by one")
    >>> r = ClaimReport("a claim", 1, 0, 1, 0.1, failures=(bad,), outcomes=(bad,))
    >>> text = markdown_report([("kkg", 2)], [r], quick=True, max_d=16)
    >>> "| a claim | 1 | 0/1 | 1/1 |" in text, "exact-attention verify --task kkg:2:0 --quick" in text
    (True, True)
    """
    held = sum(r.holds for r in reports)
    skipped = sum(bool(r.skipped) for r in reports)
    sweep = ("--quick " if quick else "") + (f"--max-d {max_d} " if max_d != 16 else "")
    lines = [
        "# exact-attention verify report",
        "",
        f"exact-attention {__version__}; sweep: {'quick' if quick else 'default'}, max d = {max_d}.",
        f"**{held}/{len(reports) - skipped} claims hold**" + (f" ({skipped} skipped)" if skipped else "") + ".",
        "",
        "Columns: *exact* counts the instances whose result was exact (or within its stated bound); *count* "
        "those whose query count matched the theorem's formula (— for claims without a count).",
    ]
    failures = []
    for theorem in dict.fromkeys(th for th, _ in index):
        lines += ["", f"## {_TITLES.get(theorem, theorem)}", "",
                  "| claim | instances | exact | count | seconds | status |", "|---|---:|---:|---:|---:|---|"]
        for (th, number), r in zip(index, reports):
            if th != theorem:
                continue
            n = r.instances
            count = f"{r.count}/{n}" if r.counts else "—"
            lines.append(f"| {_cell(r.claim)} | {n} | {r.exact}/{n} | {count} | {r.seconds:.2f} | {r.status} |")
            kept = (tasks or {}).get((th, number))
            for k, o in enumerate(r.outcomes):
                if not (o.exact and o.count):
                    original = sorted(set(kept))[k] if kept else k
                    failures.append((th, number, original, r.claim, o))
    lines += ["", "## Failures", ""]
    if not failures:
        lines.append("None.")
    for th, number, k, claim, o in failures:
        lines.append(f"- **{_cell(claim)}** / {_cell(o.instance)}: {_cell(o.note)}  ")
        command = f"exact-attention verify --task {th}:{number}:{k} {sweep}".rstrip()
        lines.append(f"  reproduce: `{command}`")
    return "\n".join(lines) + "\n"
