"""Benchmark: hidden structure in ReLU networks, what the search finds and what it costs (docs/ffn.md).

A tent ``c·(ReLU(n₁·x) − 2ReLU(n₂·x) + ReLU(n₃·x))`` with ``n₁,₃ = t ± e·s`` and ``n₂ = t`` is zero
outside a wedge whose width is of order ``e``; along any line its three kinks cancel
outside the wedge.  Each row plants one tent of width ``e = 2^-w`` in a random network
(d in 3..6, 2..4 visible units) and learns it four ways, in one run on the same networks:

* ``plain``: the search path only (``m`` not given);
* ``interior``: one random point inside every stretch the search takes as linear;
* ``m``: ``m`` given as the true count, so that the check path of "all m units seen" runs
  whenever the search finds ``m`` hyperplanes;
* ``m+interior``: both.

A ``run`` row per (width, way) says how many tents were found (the learned function equals
the network's), how many results dropped the "no hidden units" assumption (never when the
function is wrong: the row asserts it), how many learns were refused, and the mean queries;
a ``ratio`` row per width gives the queries and finds of each way against ``plain``.

    python benchmarks/ffn_hidden.py > benchmarks/results/ffn_hidden.jsonl
    python benchmarks/ffn_hidden.py --networks 10 --widths 2 4     # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import ExactOracle  # noqa: E402
from exact.errors import ExactAttentionError  # noqa: E402
from exact.ffn import ReLUFFN  # noqa: E402
from exact.learn import learn_ffn  # noqa: E402
from exact.learn.ffn import HIDDEN_UNITS  # noqa: E402

BENCH = "ffn_hidden"
WAYS = {"plain": (False, False), "interior": (False, True), "m": (True, False), "m+interior": (True, True)}


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def tent_network(rng, d: int, k: int, w: int) -> ReLUFFN:
    def vec():
        while True:
            v = [int(x) for x in rng.integers(-5, 6, size=d)]
            if any(v):
                return v

    A = [vec() for _ in range(k)]
    weights = [Fraction(int(rng.integers(1, 5))) for _ in range(k)]
    t, s, e = vec(), vec(), Fraction(1, 2**w)
    A += [[a + e * b for a, b in zip(t, s)], t, [a - e * b for a, b in zip(t, s)]]
    return ReLUFFN(A, weights + [1, -2, 1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", type=int, default=40, help="networks per tent width")
    ap.add_argument("--widths", type=int, nargs="+", default=[1, 2, 4, 8, 16], help="tent widths 2^-w")
    args = ap.parse_args(argv)
    for w in args.widths:
        rng = np.random.default_rng(w)
        nets = [tent_network(rng, int(rng.integers(3, 7)), int(rng.integers(2, 5)), w) for _ in range(args.networks)]
        stats = {}
        for way, (with_m, interior) in WAYS.items():
            found = seen = refused = queries = 0
            for i, net in enumerate(nets):
                try:
                    r = learn_ffn(ExactOracle(net), m=net.m if with_m else None, seed=i, checks=0, interior=interior)
                except ExactAttentionError:
                    refused += 1
                    continue
                right = r.model.function_form() == net.function_form()
                dropped = HIDDEN_UNITS not in r.assumptions
                assert right or not dropped, f"network {i}: a missed tent without the hidden-units assumption"
                found += right
                seen += dropped
                queries += r.queries
            done = args.networks - refused
            stats[way] = {"found": found, "queries_mean": queries / done if done else None}
            emit({"row": "run", "tent_width": f"2^-{w}", "way": way, "networks": args.networks, "found": found,
                  "assumption_dropped": seen, "refused": refused, "queries_mean": stats[way]["queries_mean"]})
        base = stats["plain"]
        for way in WAYS:
            if way == "plain" or not base["queries_mean"] or stats[way]["queries_mean"] is None:
                continue
            emit({"row": "ratio", "tent_width": f"2^-{w}", "way": way, "vs": "plain",
                  "queries": stats[way]["queries_mean"] / base["queries_mean"],
                  "found_more": stats[way]["found"] - base["found"]})
    emit({"row": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
