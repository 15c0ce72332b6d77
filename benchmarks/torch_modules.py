"""Benchmark: real torch ``nn.MultiheadAttention`` heads, learned from their float64 answers.

Each row is one module (``num_heads = 1``, eval mode, float64, the biases drawn from
N(0, 1/4) when ``bias=True``, since torch initialises them to 0): its dimension, both ``bias``
settings and both ``batch_first`` settings.  It is learned by the learner of heads with biases
in float mode with adaptive probe scales (``learn_single_head_biased``), and, for a bias-free
module, by Theorem 4.1's learner with its adaptive default and with the fixed scales of
``w_bound = 1024`` (its default before the adaptive scales).  A row reports the queries the oracle counted, the
largest error of any identifiable parameter against ``native_model`` (computed from the
module's weights, independently of the learner), the learner's first-order estimate, whether
the error is within it, and the seconds.  A ``ratio`` row per module compares the errors of
the ways, measured in the same run.

    python benchmarks/torch_modules.py > benchmarks/results/torch_modules.jsonl
    python benchmarks/torch_modules.py --dims 8 16          # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from exact.learn import learn_single_head, learn_single_head_biased  # noqa: E402
from exact.native import TorchOracle, native_model  # noqa: E402


def _module(d: int, *, bias: bool, batch_first: bool, seed: int):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d, 1, bias=bias, batch_first=batch_first, dtype=torch.float64).eval()
    if bias:
        with torch.no_grad():
            mha.in_proj_bias.normal_(0, 0.5)
            mha.out_proj.bias.normal_(0, 0.5)
    return mha, torch.randn(d, dtype=torch.float64)


def _error(model, truth) -> float:
    a, t = model.parameters(), truth.parameters()
    if len(a) != len(t):  # a bias-free truth learned with biases: its c and b are 0
        t = t + (0,) * (len(a) - len(t))
    return max(abs(float(x) - float(y)) for x, y in zip(a, t))


def _run(way: str, learn, mha, w, truth) -> dict:
    oracle = TorchOracle(mha, w)
    t0 = time.perf_counter()
    r = learn(oracle)
    seconds = time.perf_counter() - t0
    err = _error(r.model, truth)
    return {"way": way, "queries": oracle.count, "learner_queries": r.queries, "error": err,
            "estimate": r.error_estimate, "within": err <= r.error_estimate, "seconds": round(seconds, 3),
            "rescaled": getattr(r.details, "rescaled", 0)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[8, 16, 32, 64])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps({"bench": "torch_modules", "row": "env", "torch": torch.__version__, "dims": args.dims,
                      "seed": args.seed}))
    for d in args.dims:
        for bias in (True, False):
            for batch_first in (True, False):
                mha, w = _module(d, bias=bias, batch_first=batch_first, seed=args.seed + d)
                truth = native_model(mha, w)
                ways = [("biased, adaptive", lambda o: learn_single_head_biased(o, mode="float"))]
                if not bias:
                    ways += [("Theorem 4.1, adaptive", lambda o: learn_single_head(o, mode="float")),
                             ("Theorem 4.1, w_bound 1024", lambda o: learn_single_head(o, mode="float", w_bound=1024))]
                rows = []
                for way, learn in ways:
                    row = {"bench": "torch_modules", "row": "run", "d": d, "bias": bias, "batch_first": batch_first,
                           "target_queries": d * d + 2 * d + 1 if "biased" in way else d * d + d}
                    row |= _run(way, learn, mha, w, truth)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                if len(rows) > 1:
                    base = rows[0]["error"] or 1e-300
                    print(json.dumps({"bench": "torch_modules", "row": "ratio", "d": d, "bias": bias,
                                      "batch_first": batch_first,
                                      "error_vs_biased_adaptive": {r["way"]: r["error"] / base for r in rows[1:]}}),
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
