"""Benchmark: the current code against an earlier commit, in one run — did anything get slower?

The earlier code is checked out into a temporary git worktree (``git worktree add --detach``), and
each benchmark script is run from both trees, alternately, ``--repeat`` times: the repeats of the
two sides interleave, so a burst of load from other jobs hits both alike.  Each script adds its own
tree's root to ``sys.path``, so it measures that tree's code.  The rows of the two sides are matched
by their keys, and for each matched measurement the fastest repeat of each side gives the ratio
``current / earlier`` (above 1: slower now).  A ``regression`` row flags every ratio above
``--tolerance`` (default 1.10).

Workloads (small enough for a shared 2-core machine; each script's own documentation says what it
measures):

* ``scale``: ``benchmarks/scale.py --dims 64 256 512 --repeat 1`` (certified, float and low-rank heads;
  ``cpu_seconds`` of each run row, keyed by ``d`` and ``method``);
* ``ffn``: ``benchmarks/ffn.py --headline`` (the 784-128-1 network and the shape sweep; ``seconds``
  of the headline row and of each run row, keyed by ``d``, ``m`` and ``seed``);
* ``multihead``: ``benchmarks/multihead.py --dims 1 2 3 --heads 2 3 --seeds 1`` (every run row's
  ``seconds``, and the (8, 4) and (16, 4) speed rows; plans only one side runs are not compared).

Output: JSON rows (``env``, ``ratio``, ``regression``, ``done``) on stdout; progress on stderr.

    python benchmarks/regress.py --base HEAD~20                      # every workload, 3 repeats
    python benchmarks/regress.py --base 1e98e15 --benches multihead --repeat 2
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = "regress"

#: Per workload: the script's arguments, and per row kind the keys that name a measurement and the
#: field that times it.
WORKLOADS: dict = {
    "scale": (["benchmarks/scale.py", "--dims", "64", "256", "512", "--repeat", "1"],
              {"run": (("d", "method"), "cpu_seconds")}),
    "ffn": (["benchmarks/ffn.py", "--headline"],
            {"headline": (("d", "m", "seed"), "seconds"), "run": (("d", "m", "seed"), "seconds")}),
    "multihead": (["benchmarks/multihead.py", "--dims", "1", "2", "3", "--heads", "2", "3", "--seeds", "1"],
                  {"run": (("d", "H", "seed", "method"), "seconds"), "speed": (("d", "H", "method"), "seconds")}),
}


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _rows(tree: Path, args: list) -> list:
    out = subprocess.run([sys.executable, str(tree / args[0]), *args[1:]], cwd=tree, capture_output=True, text=True,
                         check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _values(rows: list, spec: dict) -> dict:
    """``{(kind, key values...): seconds}`` for the rows the workload measures (the first of a key)."""
    out: dict = {}
    for r in rows:
        kind = r.get("row")
        if kind in spec:
            keys, field = spec[kind]
            value = r.get(field)
            if value is None:
                continue
            if isinstance(value, list):  # a run row with every repeat: the fastest
                value = min(value)
            out.setdefault((kind, *(r.get(k) for k in keys)), float(value))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", required=True, help="the earlier commit (any git revision)")
    p.add_argument("--benches", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=1.10)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    rev = subprocess.run(["git", "rev-parse", args.base], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    emit({"row": "env", "python": platform.python_version(), "base": rev.strip(), "head": head.strip(),
          "config": vars(args)})
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), rev.strip()], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            for bench in args.benches:
                script, spec = WORKLOADS[bench]
                seen: dict = {"earlier": {}, "current": {}}
                for rep in range(args.repeat):
                    for side, tree in (("earlier", base), ("current", ROOT)):
                        progress(f"{bench}: {side} code, repeat {rep + 1} of {args.repeat}")
                        for key, value in _values(_rows(tree, script), spec).items():
                            seen[side].setdefault(key, []).append(value)
                for key in sorted(set(seen["earlier"]) & set(seen["current"]), key=str):
                    a, b = min(seen["earlier"][key]), min(seen["current"][key])
                    ratio = b / a if a > 0 else float("inf")
                    row = {"row": "ratio", "workload": bench, "measurement": list(key), "earlier": a, "current": b,
                           "current_over_earlier": ratio, "repeats": args.repeat}
                    emit(row)
                    if ratio > args.tolerance:
                        emit({**row, "row": "regression", "tolerance": args.tolerance})
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True)
    emit({"row": "done", "seconds": time.perf_counter() - t0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
