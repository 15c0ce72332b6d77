"""Benchmark: exact extraction of ReLU networks with biases, g(x) = wᵀReLU(Ax + a) + b (docs/ffn.md).

For every shape (d, m) and seed, a random network with biases (``ReLUFFN.random(d, m, seed=seed,
biases=True)``, entries on ``rational:7``) is learned by ``learn_ffn_biased`` from ``ExactOracle``;
the ``run`` row records whether the function-level form is exact (``==``), the learner's queries
(verification apart), queries per parameter (m(d + 2) + 1 parameters) and seconds, and, measured in
the same run, the bias-free learner on the same A and w without biases (its queries per
parameter, m(d + 1) parameters, and seconds) with the ratio of the seconds.  ``--headline`` adds a
784-128-1 network with biases, the shape of the cryptanalytic literature's headline (about 2^21.5
float64 queries at 2^-25 error, Carlini, Jagielski and Mironov, CRYPTO 2020; the fair comparison,
from float64 answers, is not made here).

    python benchmarks/ffn_biased.py > benchmarks/results/ffn_biased.jsonl
    python benchmarks/ffn_biased.py --shapes 4x4 --seeds 1        # a quick look
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import ExactOracle  # noqa: E402
from exact.ffn import ReLUFFN  # noqa: E402
from exact.learn import learn_ffn, learn_ffn_biased  # noqa: E402

BENCH = "ffn_biased"
SHAPES = ("4x4", "8x8", "16x16", "32x32", "8x16", "64x64")


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def run(d: int, m: int, seed: int, *, compare: bool = True) -> dict:
    net = ReLUFFN.random(d, m, seed=seed, biases=True)
    oracle = ExactOracle(net)
    t = time.perf_counter()
    r = learn_ffn_biased(oracle, m=m, seed=seed)
    seconds = time.perf_counter() - t
    row = {"row": "run", "d": d, "m": m, "seed": seed, "function_exact": r.exact and
           r.details["function_form"] == net.function_form(), "queries": r.queries,
           "verification": r.verification_queries, "parameters": m * (d + 2) + 1,
           "per_parameter": r.queries / (m * (d + 2) + 1), "seconds": seconds,
           "units_seen": r.details["units_seen"], "identifiable": r.details["identifiable"]}
    if compare:
        free = ReLUFFN(net.A, net.w)
        o2 = ExactOracle(free)
        t = time.perf_counter()
        r2 = learn_ffn(o2, m=m, seed=seed)
        s2 = time.perf_counter() - t
        row.update(bias_free_per_parameter=r2.queries / (m * (d + 1)), bias_free_seconds=s2,
                   seconds_over_bias_free=seconds / max(s2, 1e-9))
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", default=list(SHAPES))
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--headline", action="store_true", help="also a 784-128-1 network with biases")
    args = p.parse_args(argv)
    import flint
    import numpy

    emit({"row": "env", "python": platform.python_version(), "numpy": numpy.__version__, "flint": flint.__version__,
          "config": vars(args)})
    for text in args.shapes:
        d, m = (int(x) for x in text.split("x"))
        rows = [run(d, m, seed) for seed in range(args.seeds)]
        for row in rows:
            emit(row)
        emit({"row": "summary", "d": d, "m": m, "all_exact": all(r["function_exact"] for r in rows),
              "all_units_seen": all(r["units_seen"] for r in rows),
              "median_per_parameter": sorted(r["per_parameter"] for r in rows)[len(rows) // 2],
              "median_bias_free_per_parameter": sorted(r["bias_free_per_parameter"] for r in rows)[len(rows) // 2],
              "median_seconds": sorted(r["seconds"] for r in rows)[len(rows) // 2],
              "median_seconds_over_bias_free": sorted(r["seconds_over_bias_free"] for r in rows)[len(rows) // 2]})
        print(f"({d}, {m}) done", file=sys.stderr, flush=True)
    if args.headline:
        emit({**run(784, 128, 0, compare=False), "row": "headline"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
