"""Benchmark: ReLU networks with biases from **float64** answers of real torch modules (docs/ffn.md,
"From float answers"), against the cryptanalytic literature's figures.

Carlini, Jagielski and Mironov (CRYPTO 2020) extract a random 784-128-1 float64 network with biases
in 2^21.5 ≈ 2.97·10⁶ queries at a parameter error of 2^-25.  Here the same kind of black box, an
``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))`` in float64 (``TorchOracle``), is
learned by ``learn_ffn(oracle, m=m, mode="float")``:

* ``random-784-128``: torch's default initialisation, seeds 0.. (``--seeds``);
* ``digits-64-32`` and ``digits-64-128``: trained with torch (Adam, float64, seeded) to regress the
  digit of scikit-learn's bundled ``load_digits`` images (8×8 pixels in 0..16; nothing is
  downloaded; ``pip install scikit-learn``).

Each ``run`` row records the queries and their ratio to 2^21.5; the largest parameter error against
the module's weights (``native_model``, exact) in three canonical forms, each with the learner's
estimate and whether every error lies within its estimate: ``first`` (each hyperplane's first normal
entry 1, the library's function form), ``max`` (its largest entry 1) and ``kink`` (each hyperplane
scaled by its kink: each unit as sign(w)·ReLU(|w|(Aᵀx + a)), nothing divided); the largest error of
the function on 10⁵ random inputs (Gaussian for the random network, uniform in [0, 16]^64 for the
digits ones) against the module's own float64 answers; and seconds.  The ``exact`` row beside it is
the exact learner on the module's weights as an exact network (``ExactOracle(native_model(seq))``),
by default only where d·m <= 2048 (``--exact``).

    python benchmarks/ffn_float.py > benchmarks/results/ffn_float.jsonl
    python benchmarks/ffn_float.py --cases digits-64-32 --seeds 1     # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import ExactOracle  # noqa: E402
from exact.learn import learn_ffn, learn_ffn_biased  # noqa: E402
from exact.learn.ffn_float import form_error, kink_scaled, max_normalized  # noqa: E402

BENCH = "ffn_float"
CASES = ("random-784-128", "digits-64-32", "digits-64-128")
CJM_QUERIES = 2**21.5
CJM_ERROR = 2.0**-25


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def _module(case: str, seed: int):
    import torch

    torch.manual_seed(seed)
    if case == "random-784-128":
        return torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1)).double().eval()
    from sklearn.datasets import load_digits

    m = int(case.rsplit("-", 1)[1])
    X, y = load_digits(return_X_y=True)
    X = torch.tensor(X, dtype=torch.float64)
    y = torch.tensor(y, dtype=torch.float64)
    seq = torch.nn.Sequential(torch.nn.Linear(64, m), torch.nn.ReLU(), torch.nn.Linear(m, 1)).double()
    opt = torch.optim.Adam(seq.parameters(), lr=1e-2)
    for _ in range(300):
        opt.zero_grad()
        loss = ((seq(X)[:, 0] - y) ** 2).mean()
        loss.backward()
        opt.step()
    return seq.eval(), float(loss.detach())


def _inputs(case: str, rng, n: int) -> np.ndarray:
    return rng.standard_normal((n, 784)) if case.startswith("random") else rng.uniform(0, 16, (n, 64))


def run(case: str, seed: int, *, exact: bool = True) -> list[dict]:
    import torch

    from exact.native import TorchOracle, native_model

    got = _module(case, seed)
    seq, loss = got if isinstance(got, tuple) else (got, None)
    d, m = seq[0].in_features, seq[0].out_features
    truth = native_model(seq)
    form_truth = truth.function_form()
    oracle = TorchOracle(seq)
    t = time.perf_counter()
    r = learn_ffn(oracle, m=m, mode="float", seed=seed, check_seed=seed)
    seconds = time.perf_counter() - t
    form = r.details.form
    row = {"row": "run", "case": case, "d": d, "m": m, "seed": seed, "queries": r.queries,
           "over_cjm_queries": r.queries / CJM_QUERIES, "seconds": seconds, "lines": r.details.lines,
           "kinks": r.details.kinks, "offsets_refined": r.details.offsets_refined, **({"training_loss": loss} if loss is not None else {})}
    for name, shaped in (("first", form), ("max", max_normalized(form)), ("kink", kink_scaled(form))):
        e = form_error(form, form_truth, normalize=name)
        row[f"error_{name}"] = e["max"]
        row[f"log2_error_{name}"] = math.log2(e["max"]) if 0 < e["max"] < math.inf else None
        row[f"estimate_{name}"] = shaped.error_estimate
        row[f"within_{name}"] = bool(e["within"])
    X = _inputs(case, np.random.default_rng(seed + 1000), 100_000)
    with torch.no_grad():
        want = seq(torch.as_tensor(X, dtype=torch.float64))[:, 0].numpy()
    row["function_error"] = float(np.abs(form.value(X) - want).max())
    row["function_scale"] = float(np.abs(want).max())
    rows = [row]
    if not exact:
        return rows
    t = time.perf_counter()
    ex = learn_ffn_biased(ExactOracle(truth), m=m, seed=seed)
    rows.append({"row": "exact", "case": case, "seed": seed, "queries": ex.queries,
                 "function_exact": ex.exact and ex.details["function_form"] == form_truth,
                 "seconds": time.perf_counter() - t, "float_over_exact_queries": r.queries / ex.queries})
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--exact", choices=("small", "all", "none"), default="small",
                   help="the exact learner's row beside: for d·m <= 2048 only (default; on float64 weights, whose "
                        "rationals have 53-bit numerators, it takes minutes beyond), for every case, or none")
    args = p.parse_args(argv)
    import torch

    emit({"row": "env", "python": platform.python_version(), "torch": torch.__version__, "machine": platform.machine(),
          "cjm_queries": CJM_QUERIES, "cjm_error": CJM_ERROR})
    t0 = time.perf_counter()
    for case in args.cases:
        for seed in range(args.seeds):
            d, m = (784, 128) if case.startswith("random") else (64, int(case.rsplit("-", 1)[1]))
            for row in run(case, seed, exact=args.exact == "all" or (args.exact == "small" and d * m <= 2048)):
                emit(row)
    emit({"row": "done", "seconds": time.perf_counter() - t0})


if __name__ == "__main__":
    main()
