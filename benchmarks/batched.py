"""Benchmark: a torch module answering one sequence per call against a batch per call.

The black box is an ``nn.MultiheadAttention`` (float64, eval mode, bias on) read out by a
vector, wrapped three ways: a ``CallableOracle`` that calls it once per sequence, a batched
``CallableOracle`` (one call per sequence length) and ``TorchOracle``. Each answers the same
queries, the probe set of the learner of heads with biases (d² + 2d + 1 sequences of
lengths 1 and 2), and a row reports the seconds; a ``ratio`` row gives single/batched and
single/TorchOracle, measured in the same run.

    python benchmarks/batched.py > benchmarks/results/batched.jsonl
    python benchmarks/batched.py --dims 32                   # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from exact.learn.single_head_biased import bias_probes, value_queries  # noqa: E402
from exact.learn.single_head import ProbePlan  # noqa: E402
from exact.native import TorchOracle  # noqa: E402
from exact.oracles import CallableOracle  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", type=int, nargs="+", default=[32, 64, 128])
    args = ap.parse_args(argv)
    print(json.dumps({"bench": "batched", "row": "env", "torch": torch.__version__, "dims": args.dims}))
    for d in args.dims:
        torch.manual_seed(d)
        mha = torch.nn.MultiheadAttention(d, 1, batch_first=True, dtype=torch.float64).eval()
        w = torch.randn(d, dtype=torch.float64)

        def batch_fn(X):
            with torch.no_grad():
                x = torch.as_tensor(X, dtype=torch.float64)
                out, _ = mha(x[:, -1:], x, x, need_weights=False)
            return (out[:, 0] * w).sum(dim=-1).numpy()

        def single_fn(X):
            return float(batch_fn(X[None])[0])

        plan = ProbePlan.choose([1.0] * d)
        seqs = value_queries(d) + bias_probes(plan) + plan.sequences()
        rows = {}
        for way, oracle in (("one per call", CallableOracle(single_fn, d=d, accuracy="1e-12")),
                            ("batched", CallableOracle(batch_fn, d=d, accuracy="1e-12", batched=True)),
                            ("TorchOracle", TorchOracle(mha, w))):
            t0 = time.perf_counter()
            oracle.query_batch(seqs)
            rows[way] = time.perf_counter() - t0
            print(json.dumps({"bench": "batched", "row": "run", "d": d, "way": way, "queries": oracle.count,
                              "seconds": round(rows[way], 3)}), flush=True)
        print(json.dumps({"bench": "batched", "row": "ratio", "d": d,
                          "one_per_call_over_batched": rows["one per call"] / rows["batched"],
                          "one_per_call_over_torch_oracle": rows["one per call"] / rows["TorchOracle"]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
