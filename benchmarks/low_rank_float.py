"""Benchmark: low-rank heads from float64 answers with the exact sketch's plan (``learn_low_rank``, float mode).

Each row is one head of dimension d and rank r, answered by a torch ``nn.MultiheadAttention``
(float64, eval mode, bias off) whose query and key maps are cut to rank r, through
``TorchOracle``; the truth is ``native_model``, from the module's weights.  A row reports the
queries (the learner's, against 2rd − r² + d with the rank given and 2rd − r² + 2d − r found),
the relative Frobenius error of W, the largest entry error against the first-order estimate,
the rank found with its singular-value gap, and the seconds.  Theorem 4.1's d² + d queries are
given for comparison.

    python benchmarks/low_rank_float.py > benchmarks/results/low_rank_float.jsonl
    python benchmarks/low_rank_float.py --sizes 64:8                 # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from exact.learn import learn_low_rank  # noqa: E402
from exact.native import TorchOracle, native_model  # noqa: E402


def _module(d: int, r: int, seed: int):
    torch.manual_seed(seed)
    mha = torch.nn.MultiheadAttention(d, 1, bias=False, dtype=torch.float64).eval()
    with torch.no_grad():
        mha.in_proj_weight[r:d].zero_()
        mha.in_proj_weight[d + r:2 * d].zero_()
    return mha, torch.randn(d, dtype=torch.float64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["64:8", "128:16", "256:32"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(json.dumps({"bench": "low_rank_float", "row": "env", "torch": torch.__version__, "sizes": args.sizes}))
    for size in args.sizes:
        d, r = (int(x) for x in size.split(":"))
        mha, w = _module(d, r, args.seed + d)
        truth = native_model(mha, w)
        Wt = np.array(truth.to_numpy()[0])
        for rank in (r, None):
            oracle = TorchOracle(mha, w)
            t0 = time.perf_counter()
            res = learn_low_rank(oracle, rank=rank, mode="float", seed=args.seed)
            seconds = time.perf_counter() - t0
            W = np.array(res.model.to_numpy()[0])
            print(json.dumps({
                "bench": "low_rank_float", "row": "run", "d": d, "r": r, "rank_given": rank is not None,
                "queries": res.queries, "formula": 2 * r * d - r * r + d + (0 if rank is not None else d - r),
                "single_head_queries": d * d + d, "rel_frobenius_error": float(np.linalg.norm(W - Wt) / np.linalg.norm(Wt)),
                "max_error": float(np.abs(W - Wt).max()), "estimate": res.error_estimate,
                "within": bool(np.abs(W - Wt).max() <= res.error_estimate), "rank_found": res.details.rank,
                "gap": res.details.gap, "core_condition": res.details.core_condition, "seconds": round(seconds, 2),
            }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
