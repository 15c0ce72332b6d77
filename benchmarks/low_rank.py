"""Benchmark: low-rank heads (Theorem 5.1).

Two parts, both printing one JSON object per line on stdout (progress on stderr):

``phase``
    The paper's compressed-sensing learner (:func:`learn_low_rank_cs`) over
    ``C = m / (2rd)`` for several ``(d, r)``: the success rate (relative Frobenius
    error ≤ 1e-6) over seeded trials, one ``"row": "phase"`` row per point, then one
    ``"row": "threshold"`` row per ``(d, r)`` and overall with the smallest ``C`` at
    which recovery succeeded in at least 95% of trials.  With ``--plot FILE`` it draws
    the phase transition (needs matplotlib: ``pip install 'exact-attention[plot]'``).

``compare``
    One head with ``d = 64, r = 4`` learnt three ways in the same run: the exact
    sketch learner, the CS learner at the measured ``C``, and the full single-head
    learner — query counts, seconds and errors side by side, with ratio rows.

Timings are reported, never asserted.  Run from the repository root::

    python benchmarks/low_rank.py phase --plot benchmarks/results/low_rank_phase.png
    python benchmarks/low_rank.py compare --C 2.0
    python benchmarks/low_rank.py phase --quick        # smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from exact.learn import learn_low_rank, learn_low_rank_cs, learn_single_head  # noqa: E402
from exact.learn.low_rank import low_rank_query_count  # noqa: E402
from exact.models import SingleHead  # noqa: E402
from exact.oracles import ExactOracle  # noqa: E402

BENCH = "low_rank"
SUCCESS = 1e-6
PHASE_SHAPES = ((8, 1), (8, 2), (16, 1), (16, 2), (24, 1), (24, 2))
PHASE_CS = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0)


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rel_error(result, truth: SingleHead) -> float:
    W, _ = truth.to_numpy()
    Wh, _ = result.model.to_numpy()
    return float(np.linalg.norm(Wh - W) / max(np.linalg.norm(W), 1e-300))


def phase(args) -> None:
    shapes = ((8, 1), (8, 2)) if args.quick else PHASE_SHAPES
    Cs = (1.0, 3.0) if args.quick else PHASE_CS
    trials = 3 if args.quick else args.trials
    curves = {}
    for d, r in shapes:
        for C in Cs:
            ok, secs = 0, []
            for trial in range(trials):
                truth = SingleHead.random(d, seed=1000 * d + 100 * r + trial, rank=r)
                m = math.ceil(C * 2 * r * d)
                t0 = time.perf_counter()
                res = learn_low_rank_cs(ExactOracle(truth), rank=r, m=m, seed=trial)
                secs.append(time.perf_counter() - t0)
                ok += rel_error(res, truth) <= SUCCESS
            rate = ok / trials
            curves.setdefault((d, r), []).append((C, rate))
            emit({"row": "phase", "d": d, "r": r, "C": C, "m": math.ceil(C * 2 * r * d), "trials": trials,
                  "success_rate": rate, "median_seconds": statistics.median(secs)})
            progress(f"phase d={d} r={r} C={C}: {rate:.2f}")
    overall = 0.0
    for (d, r), pts in curves.items():
        c95 = next((C for C, rate in pts if rate >= 0.95 and all(q >= 0.95 for c2, q in pts if c2 >= C)), None)
        overall = max(overall, c95 if c95 is not None else math.inf)
        emit({"row": "threshold", "d": d, "r": r, "C95": c95})
    emit({"row": "threshold", "scope": "all shapes", "C95": overall if math.isfinite(overall) else None})
    if args.plot:
        plot(curves, args.plot)


def plot(curves, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for (d, r), pts in curves.items():
        ax.plot([c for c, _ in pts], [q for _, q in pts], marker="o", label=f"d={d}, r={r}")
    ax.axhline(0.95, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("C = m / (2rd)")
    ax.set_ylabel(f"success rate (rel. error ≤ {SUCCESS:g})")
    ax.set_title("Nuclear-norm recovery from rank-one projections (Thm 5.1 learner)")
    ax.set_ylim(-0.03, 1.03)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    progress(f"wrote {path}")


def compare(args) -> None:
    d, r = args.d, args.r
    truth = SingleHead.random(d, seed=args.seed, rank=r)
    rows = {}
    for name, run in (
        ("sketch", lambda o: learn_low_rank(o, rank=r)),
        ("sketch-unknown-rank", lambda o: learn_low_rank(o)),
        ("single-head", lambda o: learn_single_head(o)),
        ("cs", lambda o: learn_low_rank_cs(o, rank=r, C=args.C, seed=args.seed)),
    ):
        progress(f"compare: {name} ...")
        oracle = ExactOracle(truth)
        t0 = time.perf_counter()
        res = run(oracle)
        secs = time.perf_counter() - t0
        rows[name] = {"queries": res.queries, "seconds": secs}
        emit({"row": "run", "d": d, "r": r, "method": name, "queries": res.queries,
              "verification_queries": res.verification_queries, "seconds": secs,
              "exact": res.model == truth if res.exact else None, "rel_error": rel_error(res, truth)})
    emit({"row": "formula", "d": d, "r": r, "sketch": low_rank_query_count(d, r),
          "sketch_unknown_rank": low_rank_query_count(d, r, rank_known=False), "single_head": d * d + d,
          "cs": d + math.ceil(args.C * 2 * r * d)})
    for a, b, q in (("single-head", "sketch", "queries"), ("single-head", "sketch", "seconds"),
                    ("cs", "sketch", "queries"), ("cs", "sketch", "seconds")):
        emit({"row": "ratio", "ratio": f"{a}/{b}", "quantity": q, "value": rows[a][q] / rows[b][q]})


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="part", required=True)
    ph = sub.add_parser("phase")
    ph.add_argument("--trials", type=int, default=20)
    ph.add_argument("--quick", action="store_true")
    ph.add_argument("--plot", default=None, metavar="PNG")
    cp = sub.add_parser("compare")
    cp.add_argument("--d", type=int, default=64)
    cp.add_argument("--r", type=int, default=4)
    cp.add_argument("--C", type=float, default=3.0)
    cp.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import numpy

    emit({"row": "env", "python": platform.python_version(), "numpy": numpy.__version__, "part": args.part})
    t0 = time.perf_counter()
    phase(args) if args.part == "phase" else compare(args)
    emit({"row": "done", "seconds": time.perf_counter() - t0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
