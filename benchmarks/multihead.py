"""Benchmark: canonical multi-head recovery [KKG26] (SPEC §3.7), the paper's plan, the fast one and the pairs.

``run`` rows: for every (d, H), seed and plan (``paper``, ``fast``, ``pairs``), a random model with H
heads (``MultiHead.random(d, H, seed=seed)``, entries on ``rational:7`` up to ±2) is learned
from ``ExactOracle`` in certified mode; the row records whether the result ``==`` the
model's canonical form, the queries (counted by the oracle, verification queries apart),
the paper's count 4Hd² − 2H + 1, the fast and pair plans' generic counts, the lower bound
H(d² + d), the longest sequence and the seconds.  ``ratio`` rows give, per (d, H), the median
fast/paper and pairs/paper query ratios, pairs over H(d² + d), and the median paper/fast and
paper/pairs time ratios, all measured in this run.  ``counts`` rows set the four counts side by
side at the speed shapes, with the pair plan's ratio to the parameter count (target <= 1.5).
A ``median`` row gives the median fast/paper query ratio over the whole sweep (target
<= 0.6).  ``speed`` rows time the two acceptance shapes (8, 4) and (16, 4), certified, with
their targets (10 s and 60 s).  ``symbolic`` rows time symbolic mode on small shapes.
``float`` rows learn from ``FloatOracle`` and report the error against the canonical form,
the learner's estimate, the intrinsic condition number of the block fits and that of the
naive monomial scheme (H = 2 random heads; H = 4 and 6 with well-separated scores).
``biased`` rows (``--biases``) learn the same heads with biases (``MultiHead.random(d, H,
seed=seed, biases=True)``: the same ``W_h`` and ``v_h``, plus ``c_h`` and ``b``) with
``biases=True``, and give the queries against 4H(d² + d) − 2H + 1 and the seconds against the
bias-free run of the same heads, measured in the same run.

    python benchmarks/multihead.py > benchmarks/results/multihead.jsonl
    python benchmarks/multihead.py --dims 2 3 --heads 2 --seeds 1 --no-speed     # a quick look
    python benchmarks/multihead.py --biases --seeds 1 --no-speed > benchmarks/results/multihead_biases.jsonl
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from exact import ExactOracle, MultiHead, learn_multi_head  # noqa: E402
from exact.canonical import canonical_form  # noqa: E402
from exact.errors import PrecisionInsufficient  # noqa: E402
from exact.learn.multi_head import fast_query_count, lower_bound, pairs_query_count, paper_query_count  # noqa: E402
from exact.oracles import FloatOracle  # noqa: E402

BENCH = "multihead"
METHODS = ("paper", "fast", "pairs")
COUNT = {"paper": "paper_count", "fast": "fast_count", "pairs": "pairs_count"}
SPEED_TARGET = {(8, 4): 10.0, (16, 4): 60.0}


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def learn(model: MultiHead, H: int, method: str, seed: int, mode: str = "certified", biases: bool = False) -> dict:
    oracle = ExactOracle(model)
    t = time.perf_counter()
    r = learn_multi_head(oracle, heads=H, method=method, seed=seed, mode=mode, biases=biases)
    seconds = time.perf_counter() - t
    d = model.d
    return {"d": d, "H": H, "seed": seed, "method": method, "mode": mode, "biases": biases,
            "exact": r.exact and r.model == canonical_form(model), "canonical_heads": r.model.H,
            "queries": oracle.count - r.verification_queries, "paper_count": paper_query_count(d, H, biases),
            "fast_count": fast_query_count(d, H, biases), "pairs_count": pairs_query_count(d, H, biases),
            "lower_bound": lower_bound(d, H, biases),
            "max_length": r.max_length,
            "fallback_groups": r.details["fallback_groups"], "redraws": r.details["redraws"], "seconds": seconds}


def spread(H: int, d: int) -> MultiHead:
    """H heads with well-separated scores: W_h = w_h·I plus a small nilpotent part, w_h over [−3, 3]."""
    heads = []
    for j in range(H):
        w = Fraction(-3) + Fraction(6 * j, H - 1)
        W = [[w if a == b else (Fraction(j, 10) if b > a else Fraction(0)) for b in range(d)] for a in range(d)]
        heads.append((W, [Fraction((-1) ** (a + j) * (1 + (a + j) % 3), 2) for a in range(d)]))
    return MultiHead(heads, d=d)


def float_row(name: str, model: MultiHead, H: int, seed: int) -> dict:
    row = {"row": "float", "instance": name, "d": model.d, "H": H, "seed": seed}
    try:
        r = learn_multi_head(FloatOracle(model), heads=H, seed=seed)
    except PrecisionInsufficient as e:
        return {**row, "refused": True, "reason": str(e)[:200]}
    err = 0.0
    for h in canonical_form(model).heads:
        W, v = h.to_numpy()
        err = max(err, min(max(float(np.max(np.abs(g.to_numpy()[0] - W))), float(np.max(np.abs(g.to_numpy()[1] - v))))
                           for g in r.model.heads))
    return {**row, "refused": False, "heads_found": r.model.H, "error": err, "estimate": r.error_estimate,
            "within_estimate": err <= r.error_estimate, "condition": r.details["condition"],
            "monomial_condition": r.details["monomial_condition"], "queries": r.queries}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    p.add_argument("--heads", type=int, nargs="*", default=[2, 3, 4])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--no-speed", action="store_true", help="skip the (8, 4) and (16, 4) timings")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), help="the plans to run")
    p.add_argument("--biases", action="store_true", help="only the biased rows: heads with biases against the same "
                   "heads without, over the sweep (and (8, 4) unless --no-speed)")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    import flint
    import sympy

    emit({"row": "env", "python": platform.python_version(), "numpy": np.__version__, "sympy": sympy.__version__,
          "flint": flint.__version__, "cpus": __import__("os").cpu_count(), "config": vars(args)})
    if args.biases:
        shapes = [(d, H) for d in args.dims for H in args.heads] + ([] if args.no_speed else [(8, 4)])
        for d, H in shapes:
            for seed in range(args.seeds):
                for method in args.methods:
                    free = learn(MultiHead.random(d, H, seed=seed), H, method, seed)
                    row = learn(MultiHead.random(d, H, seed=seed, biases=True), H, method, seed, biases=True)
                    emit({"row": "biased", **row, "count_met": row["queries"] == row["paper_count"]
                          if method == "paper" else row["queries"] <= row[COUNT[method]] or row["fallback_groups"] > 0,
                          "bias_free_queries": free["queries"], "bias_free_seconds": free["seconds"],
                          "seconds_over_bias_free": row["seconds"] / max(free["seconds"], 1e-9)})
            progress(f"biased ({d}, {H}) done")
        emit({"row": "done", "seconds": time.perf_counter() - t0})
        return 0
    ratios = []
    for d in args.dims:
        for H in args.heads:
            rows: dict = {m: [] for m in args.methods}
            for seed in range(args.seeds):
                model = MultiHead.random(d, H, seed=seed)
                for method in args.methods:
                    row = learn(model, H, method, seed)
                    emit({"row": "run", **row})
                    rows[method].append(row)
            ratio: dict = {"row": "ratio", "d": d, "H": H,
                           "all_exact": all(r["exact"] for rs in rows.values() for r in rs)}
            if "paper" in rows:
                ratio["paper_count_exact"] = all(r["queries"] == r["paper_count"] for r in rows["paper"])
                for m in ("fast", "pairs"):
                    if m in rows:
                        pairs = list(zip(rows[m], rows["paper"]))
                        ratio[f"{m}_over_paper_queries"] = statistics.median(a["queries"] / b["queries"] for a, b in pairs)
                        ratio[f"paper_over_{m}_seconds"] = statistics.median(b["seconds"] / max(a["seconds"], 1e-9)
                                                                             for a, b in pairs)
                if "fast" in rows:
                    ratios += [a["queries"] / b["queries"] for a, b in zip(rows["fast"], rows["paper"])]
            if "pairs" in rows:
                ratio["pairs_over_lower_queries"] = statistics.median(r["queries"] / r["lower_bound"] for r in rows["pairs"])
                ratio["pairs_count_met"] = all(r["queries"] == r["pairs_count"] or r["fallback_groups"] > 0
                                               for r in rows["pairs"])
            emit(ratio)
            progress(f"({d}, {H}): " + ", ".join(f"{k} {v:.3f}" for k, v in ratio.items() if k.endswith("queries")))
    if ratios:
        emit({"row": "median", "fast_over_paper_queries": statistics.median(ratios), "target": 0.6,
              "met": statistics.median(ratios) <= 0.6, "instances": len(ratios)})
    if not args.no_speed:
        for (d, H), target in SPEED_TARGET.items():
            model = MultiHead.random(d, H, seed=0)
            emit({"row": "counts", "d": d, "H": H, "paper": paper_query_count(d, H), "fast": fast_query_count(d, H),
                  "pairs": pairs_query_count(d, H), "lower_bound": lower_bound(d, H),
                  "pairs_over_lower": pairs_query_count(d, H) / lower_bound(d, H), "target": 1.5})
            for method in args.methods:
                row = learn(model, H, method, 0)
                emit({"row": "speed", **row, "target_seconds": target, "met": row["exact"] and row["seconds"] <= target,
                      "count_met": row["queries"] == row[COUNT[method]]})
                progress(f"speed ({d}, {H}) {method}: {row['seconds']:.2f} s, {row['queries']} queries")
        for d, H in ((2, 2), (3, 3), (5, 4)):
            row = learn(MultiHead.random(d, H, seed=0), H, "paper", 0, mode="symbolic")
            emit({"row": "symbolic", **row})
        for name, model, H in (("random", MultiHead.random(2, 2, seed=0), 2), ("random", MultiHead.random(3, 2, seed=1), 2),
                               ("separated", spread(4, 1), 4), ("separated", spread(4, 2), 4),
                               ("random", MultiHead.random(2, 4, seed=0), 4), ("separated", spread(6, 1), 6),
                               ("random", MultiHead.random(2, 6, seed=0), 6)):
            emit(float_row(name, model, H, 0))
    emit({"row": "done", "seconds": time.perf_counter() - t0})
    return 0


if __name__ == "__main__":
    sys.exit(main())
