"""Benchmark: several softmax heads from **float** answers — where the float multi-head learner stands.

The baseline the float multi-head work is measured against ("today's table"):

* ``own`` rows: the library's own random instances, ``MultiHead.random(d, H, seed=seed)`` at
  d ∈ {2, 3, 4, 6, 8, 12, 16} and H ∈ {2, …, 6}, learned from ``FloatOracle`` by
  ``learn_multi_head(oracle, heads=H, mode="float")``: whether the result was returned, and if
  so its largest entry error against the canonical form (``float_error``) and the learner's
  estimate (``wrong``: returned with an error outside its estimate; it must stay 0), or the
  refusal's exception and first words; the queries against H(d² + d) and 4Hd² − 2H + 1.
* ``anchor`` rows: the shape of the only published cryptanalytic multi-head extraction, d = 8,
  H = 6, full rank and rank 2, seeds 0–9; with ``--anchor-oracle callable`` the answers come from a
  plain numpy function of the heads' float64 matrices through ``CallableOracle(f, d=8,
  accuracy=1e-13, rtol=1e-14, batched=True)``, the call a user with a black box makes.
* ``torch`` rows: float64 ``nn.MultiheadAttention(d, H)`` (biases on and off) at (16, 2),
  (16, 4), (32, 4), (64, 8) through ``TorchOracle`` (``--torch``; needs torch), and float32 ones
  with ``--float32`` (their answers with the measured bound: the derived one is about 10⁻² of an
  answer in float32, which hides every step).
* ``table`` rows: per (d, H), returned / merged / refused / wrong.

``relative`` is the error over the truth's largest parameter; ``merged`` is a result with fewer
heads than the truth's canonical form that states it may have merged heads; ``fewer, stated`` one
with fewer heads than the bound that states more heads no sampled answer shows are not excluded.

    python benchmarks/multi_head_float.py > benchmarks/results/multi_head_float.jsonl
    python benchmarks/multi_head_float.py --dims 2 4 --heads 2 --seeds 1      # a quick look
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact.errors import ExactAttentionError  # noqa: E402
from exact.learn import learn_multi_head  # noqa: E402
from exact.learn.multi_head import float_error  # noqa: E402
from exact.multihead import MultiHead  # noqa: E402
from exact.oracles import FloatOracle  # noqa: E402

BENCH = "multi_head_float"


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def _size(truth) -> float:
    """The largest entry of the truth's canonical parameters (W, v, and c, b when biased)."""
    import numpy as np

    canon = truth.canonical()
    sizes = [abs(float(canon.b))]
    for h in canon.heads:
        W, v = h.to_numpy()
        sizes += [float(np.max(np.abs(W))), float(np.max(np.abs(v)))] + [abs(float(x)) for x in h.c]
    return max(sizes)


def attempt(oracle, truth, d: int, H: int, seed: int, *, biases: bool = False) -> dict:
    """One float run: returned (error, relative error, estimate, within) or refused (the exception and
    its first words); a result with fewer heads than the truth's canonical form that says it may have
    merged heads is ``merged``; the queries against H(d² + d) and 4Hd² − 2H + 1."""
    t = time.perf_counter()
    row: dict = {"d": d, "H": H, "seed": seed, "biases": biases, "lower": H * (d * d + d),
                 "kkg": 4 * H * d * d - 2 * H + 1}
    try:
        r = learn_multi_head(oracle, heads=H, mode="float", seed=seed, biases=biases)
    except ExactAttentionError as e:
        row.update(outcome="refused", error_type=type(e).__name__, reason=str(e)[:160])
    else:
        err = float_error(r.model, truth)
        within = err <= r.error_estimate
        merged = any("may come back merged" in a for a in r.assumptions)
        hidden = any("no sampled answer shows" in a for a in r.assumptions)
        fewer = r.model.H < truth.canonical().H
        outcome = "returned" if within else ("merged" if merged and fewer and not hidden else
                                             "fewer, stated" if hidden and fewer else "wrong")
        row.update(outcome=outcome, queries=r.queries, error=err, relative=err / _size(truth),
                   estimate=r.error_estimate, heads=r.model.H, lines=r.details["blocks"],
                   lines_refused=r.details["lines_refused"])
    row["seconds"] = time.perf_counter() - t
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4, 6, 8, 12, 16])
    p.add_argument("--heads", type=int, nargs="+", default=[2, 3, 4, 5, 6])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--anchor-seeds", type=int, default=10, help="seeds of the d = 8, H = 6 rows (0: none)")
    p.add_argument("--anchor-oracle", choices=["float", "callable"], default="float",
                   help="the anchor rows' oracle: FloatOracle, or CallableOracle over a numpy function")
    p.add_argument("--torch", action="store_true", help="also float64 nn.MultiheadAttention modules")
    p.add_argument("--torch-shapes", type=str, nargs="+", default=["16,2", "16,4", "32,4", "64,8"])
    p.add_argument("--torch-seeds", type=int, default=10)
    p.add_argument("--torch-first-seed", type=int, default=0, help="the torch rows' seeds start here")
    p.add_argument("--torch-biases", choices=["both", "off", "on"], default="both")
    p.add_argument("--float32", action="store_true", help="the torch modules in float32 as well")
    p.add_argument("--dtypes", choices=["float64", "float32"], nargs="+", default=None,
                   help="the torch modules' dtypes (default float64, and float32 with --float32)")
    p.add_argument("--no-own", action="store_true", help="skip the own-instance table")
    args = p.parse_args(argv)
    emit({"row": "env", "python": platform.python_version(), "config": vars(args)})
    for d in [] if args.no_own else args.dims:
        for H in args.heads:
            rows = [attempt(FloatOracle(m), m, d, H, s) for s in range(args.seeds)
                    for m in [MultiHead.random(d, H, seed=s)]]
            for row in rows:
                emit({"row": "own", **row})
            emit({"row": "table", "d": d, "H": H, **{k: sum(r["outcome"] == k for r in rows)
                                                    for k in ("returned", "merged", "refused", "wrong")}})
    for rank in (None, 2):
        for s in range(args.anchor_seeds):
            m = MultiHead.random(8, 6, seed=s) if rank is None else _ranked(8, 6, rank, s)
            oracle = FloatOracle(m) if args.anchor_oracle == "float" else _callable(m)
            emit({"row": "anchor", "rank": rank or 8, "oracle": args.anchor_oracle, **attempt(oracle, m, 8, 6, s)})
    if args.torch:
        import torch

        from exact.native import TorchOracle, native_model

        torch.set_num_threads(1)  # tiny batches: one thread is about 60× faster than two contending ones

        names = args.dtypes or ["float64"] + (["float32"] if args.float32 else [])
        dtypes = [getattr(torch, n) for n in names]
        for shape in args.torch_shapes:
            d, H = (int(x) for x in shape.split(","))
            for dtype in dtypes:
                for bias in {"both": (False, True), "off": (False,), "on": (True,)}[args.torch_biases]:
                    for s in range(args.torch_first_seed, args.torch_first_seed + args.torch_seeds):
                        torch.manual_seed(s)
                        mha = torch.nn.MultiheadAttention(d, H, bias=bias, batch_first=True, dtype=dtype).eval()
                        if bias:  # torch starts its biases at zero; a trained module's are not
                            _randomise_biases(mha, s)
                        readout = _readout(d, s)
                        truth = native_model(mha, readout)
                        # float32: the a-priori rounding bound is about 10⁻² of an answer, which hides every
                        # step; the measured bound (exact evaluation of each answer) is about 10⁻⁷
                        bound = "derived" if dtype == torch.float64 else "measured"
                        emit({"row": "torch", "dtype": str(dtype).removeprefix("torch."), "bound": bound,
                              **attempt(TorchOracle(mha, readout, bound=bound), truth, d, H, s, biases=bias)})
    return 0


def _ranked(d: int, H: int, rank: int, seed: int) -> MultiHead:
    """``H`` random heads whose ``W_h`` have rank ``rank`` (products of random d×rank factors)."""
    import numpy as np
    from fractions import Fraction

    from exact.models import SingleHead

    rng = np.random.default_rng(seed)
    heads = []
    for _ in range(H):
        U, V = rng.integers(-3, 4, (d, rank)), rng.integers(-3, 4, (rank, d))
        W = [[Fraction(int(x), 4) for x in row] for row in U @ V]
        v = [Fraction(int(x), 2) for x in rng.integers(-4, 5, d)]
        heads.append(SingleHead(W, v))
    return MultiHead(heads)


def _callable(truth: MultiHead):
    """``CallableOracle`` over a plain numpy evaluation of the heads' float64 matrices (batched: an
    ``n × N × d`` array in, ``n`` answers out), with a declared accuracy of 1e-13 + 1e-14·|y|."""
    import numpy as np

    from exact.oracles import CallableOracle

    heads = [(h.to_numpy()[0], h.to_numpy()[1]) for h in truth.heads]

    def f(X):
        out = np.zeros(X.shape[0])
        for W, v in heads:
            s = np.einsum("nid,de,ne->ni", X, W, X[:, -1, :])
            a = np.exp(s - s.max(axis=1, keepdims=True))
            out += np.einsum("ni,ni->n", a / a.sum(axis=1, keepdims=True), X @ v)
        return out

    return CallableOracle(f, d=truth.d, accuracy="1e-13", rtol="1e-14", batched=True)


def _randomise_biases(mha, seed: int) -> None:
    """Set the module's projection biases (query, key, value and output) to normal draws of
    standard deviation 0.1, the size of its weights."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in (mha.in_proj_bias, mha.out_proj.bias):
            p.copy_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def _readout(d: int, seed: int):
    import numpy as np

    return np.random.default_rng(seed).standard_normal(d)


if __name__ == "__main__":
    sys.exit(main())
