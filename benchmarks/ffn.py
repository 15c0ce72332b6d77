"""Benchmark: exact ReLU FFN extraction and the one-layer Transformer (SPEC §3.5, §3.6).

For every shape (d, m) and seed a ``run`` row records whether the function-level form is
exact (``==``), whether the unit form is (when identifiable), the queries (verification
included) against the stated bound (m + 1)(d − 2) + 10m + 32, queries per parameter and
seconds.  A ``summary`` row per shape gives the largest count and time with their targets
(≤ 1 s up to (32, 32), ≤ 5 s at (64, 64), ≤ 60 s at (128, 128)).  ``transformer`` rows do
the same for the reduction (W exact, FFN canonical, Q_FFN + 2(d² + d) oracle calls).
``--headline`` also extracts a 784-128-1 network, the cryptanalytic literature's headline
(about 2^21.5 queries at 2^-25 error for the float64 extractor of Carlini, Jagielski and
Mironov, CRYPTO 2020), and reports the queries, the seconds and the error, which is zero.
JSON rows on stdout, progress on stderr.  Times are wall-clock seconds on this machine.

    python benchmarks/ffn.py > benchmarks/results/ffn.jsonl
    python benchmarks/ffn.py --shapes 4x4 8x8 --seeds 2          # a quick look
    python benchmarks/ffn.py --headline --shapes                 # only the 784-128-1 network
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import ExactOracle  # noqa: E402
from exact.ffn import ReLUFFN  # noqa: E402
from exact.learn import learn_ffn, learn_transformer  # noqa: E402
from exact.learn.ffn import ffn_query_bound  # noqa: E402
from exact.transformer import Transformer  # noqa: E402

BENCH = "ffn"
SHAPES = ("4x4", "8x8", "16x16", "32x32", "8x4", "8x16", "64x64", "128x128")
TIME_TARGET = {(64, 64): 5.0, (128, 128): 60.0}


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _shape(text: str) -> tuple[int, int]:
    d, m = text.lower().split("x")
    return int(d), int(m)


def ffn_run(d: int, m: int, seed: int) -> dict:
    net = ReLUFFN.random(d, m, seed=seed)
    oracle = ExactOracle(net)
    t = time.perf_counter()
    r = learn_ffn(oracle, m=m, seed=seed)
    seconds = time.perf_counter() - t
    unit = r.model.unit_form() == net.unit_form() if r.details["identifiable"] else None
    q = oracle.count
    return {"row": "run", "d": d, "m": m, "seed": seed, "function_exact": r.details["function_form"] == net.function_form(),
            "unit_exact": unit, "identifiable": r.details["identifiable"],
            "units_seen": r.details["units_seen"], "assumptions": list(r.assumptions), "queries": q,
            "bound": ffn_query_bound(d, m), "per_parameter": q / (m * (d + 1)), "paths": r.details["paths"],
            "seconds": seconds}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", default=list(SHAPES), help="d×m shapes, e.g. 8x8 (default: the acceptance set)")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--transformer", nargs="*", default=["4x4", "8x8", "16x16"])
    p.add_argument("--headline", action="store_true", help="also extract a 784-128-1 network")
    args = p.parse_args(argv)
    for text in args.shapes:
        d, m = _shape(text)
        rows = []
        for seed in range(args.seeds):
            row = ffn_run(d, m, seed)
            emit(row)
            rows.append(row)
        target = TIME_TARGET.get((d, m), 1.0 if d <= 32 and m <= 32 else None)
        worst_q = max(r["queries"] - r["bound"] for r in rows)
        emit({"row": "summary", "d": d, "m": m, "runs": len(rows),
              "all_function_exact": all(r["function_exact"] for r in rows),
              "all_unit_exact": all(r["unit_exact"] is not False for r in rows),
              "max_queries": max(r["queries"] for r in rows), "bound": rows[0]["bound"], "within_bound": worst_q <= 0,
              "median_per_parameter": sorted(r["per_parameter"] for r in rows)[len(rows) // 2],
              "max_seconds": max(r["seconds"] for r in rows), "seconds_target": target,
              "met": worst_q <= 0 and (target is None or max(r["seconds"] for r in rows) <= target)})
        progress(f"ffn ({d}, {m}): max {max(r['queries'] for r in rows)} <= {rows[0]['bound']}, "
                 f"{max(r['seconds'] for r in rows):.2f} s")
    for text in args.transformer:
        d, m = _shape(text)
        for seed in range(min(args.seeds, 3)):
            T = Transformer.random(d, m, seed=seed)
            oracle = ExactOracle(T)
            t = time.perf_counter()
            r = learn_transformer(oracle, m=m, seed=seed)
            seconds = time.perf_counter() - t
            emit({"row": "transformer", "d": d, "m": m, "seed": seed, "W_exact": r.model.W == T.W,
                  "ffn_exact": r.details["function_form"] == T.ffn.function_form(),
                  "oracle_calls": r.queries, "ffn_queries": r.details["ffn_queries"],
                  "count_holds": r.queries == r.details["ffn_queries"] + 2 * (d * d + d), "seconds": seconds})
        progress(f"transformer ({d}, {m}) done")
    if args.headline:
        d, m = 784, 128
        progress("headline: a 784-128-1 network (about 10^5 queries; minutes)")
        row = ffn_run(d, m, 0)
        row.update(row="headline", cjm20_queries=2**21.5, cjm20_error="2^-25", error=0 if row["function_exact"] else None,
                   query_ratio_vs_cjm20=row["queries"] / 2**21.5)
        emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
