"""Benchmark: pilot-and-refine (``2(d² + d)`` queries) against the frame learner (``d² + d``).

Gaussian heads with ``‖W‖_F`` just below 𝒲 (``SingleHead.gaussian``), token budget R = 1,
``--instances`` heads per (d, 𝒲).  For every (d, 𝒲, τ, noise, instance) a ``run`` row
records both learners' measured Frobenius errors and certified bounds, and the refining
learner's own pilot bound.  A ``summary`` row per (d, 𝒲, noise) reports the median and
minimum frame/refine ratios of the certified bound and of the measured error, and the
largest measured/bound ratio of either learner (a bound holds iff it is ≤ 1).  The
adversary is the frame learner's: it plays the refining learner's first ``d² + d``
queries, which are the frame learner's, and biases the rest by +τ.  A ``float64`` row per
learner reports τ = 0 on a float64 black box with |W_ij| <= 50.  Nothing is timed.

    python benchmarks/refine.py > benchmarks/results/refine.jsonl
    python benchmarks/refine.py --dims 4 8 --instances 3          # a quick look
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import FloatOracle, NoisyOracle, SingleHead, learn_noisy_frame, learn_noisy_refine  # noqa: E402
from exact.learn.adversary import adversary  # noqa: E402
from exact.noise import Adversarial  # noqa: E402

BENCH = "refine"


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def _fro(result, truth) -> tuple[float, float]:
    W = np.array(result.model.to_numpy()[0], dtype=float)
    Wt = np.array(truth.to_numpy()[0], dtype=float)
    return float(np.linalg.norm(W - Wt)), float(np.abs(W - Wt).max())


def _noise(kind: str, tau: str, truth, w_bound: int):
    if kind == "adversarial":
        return Adversarial(Fraction(tau), adversary(truth, "frame", tau=Fraction(tau), w_bound=w_bound, token_norm=1))
    return f"uniform:{tau}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16, 32])
    p.add_argument("--w-bounds", type=int, nargs="+", default=[2, 8])
    p.add_argument("--taus", nargs="+", default=["1e-4", "1e-6"])
    p.add_argument("--noises", nargs="+", default=["uniform", "adversarial"])
    p.add_argument("--instances", type=int, default=10)
    p.add_argument("--sections", nargs="+", choices=["sweep", "float64"], default=["sweep", "float64"])
    args = p.parse_args(argv)
    if "sweep" in args.sections:
        sweep(args)
    if "float64" in args.sections:
        float64(args)
    return 0


def float64(args) -> None:
    """τ = 0 on a float64 black box with |W_ij| <= 50 (d = 8): every output finite, error <= 1e-11."""
    for name, fn in (("frame", learn_noisy_frame), ("refine", learn_noisy_refine)):
        worst, finite, holds = 0.0, True, True
        for seed in range(min(args.instances, 10)):
            rng = np.random.default_rng(seed)
            W = rng.uniform(-50, 50, (8, 8))
            truth = SingleHead(W.tolist(), rng.standard_normal(8).tolist())
            r = fn(FloatOracle(truth), w_bound=float(np.linalg.norm(W)) * 1.01, token_norm=1)
            Wh = np.array(r.model.to_numpy()[0], dtype=float)
            finite &= bool(np.isfinite(Wh).all())
            err = float(np.abs(Wh - W).max())
            holds &= err <= r.error_bound.W_max
            worst = max(worst, err)
        emit({"row": "float64", "learner": name, "max_abs_error": worst, "finite": finite, "within_bound": holds,
              "target": 1e-11, "met": finite and worst <= 1e-11})


def sweep(args) -> None:
    for d in args.dims:
        for wb in args.w_bounds:
            for kind in args.noises:
                rows = []
                for tau in args.taus:
                    for seed in range(args.instances):
                        truth = SingleHead.gaussian(d, seed=seed, w_frobenius=wb)
                        out = {}
                        for name, fn in (("frame", learn_noisy_frame), ("refine", learn_noisy_refine)):
                            oracle = NoisyOracle(truth, _noise(kind, tau, truth, wb), seed=seed)
                            r = fn(oracle, w_bound=wb, token_norm=1)
                            fro, mx = _fro(r, truth)
                            out[name] = {"queries": oracle.count, "fro": fro, "bound_fro": r.error_bound.W_frobenius,
                                         "max": mx, "bound_max": r.error_bound.W_max}
                            if name == "refine":
                                out[name]["pilot_bound_fro"] = r.details["pilot_W_frobenius"]
                        emit({"row": "run", "d": d, "w_bound": wb, "tau": float(tau), "noise": kind, "seed": seed, **out})
                        rows.append(out)
                bound_ratio = [o["frame"]["bound_fro"] / o["refine"]["bound_fro"] for o in rows]
                err_ratio = [o["frame"]["fro"] / o["refine"]["fro"] for o in rows]
                worst = max(max(o[n]["fro"] / o[n]["bound_fro"], o[n]["max"] / o[n]["bound_max"])
                            for o in rows for n in ("frame", "refine"))
                emit({"row": "summary", "d": d, "w_bound": wb, "noise": kind, "runs": len(rows),
                      "queries": {n: rows[0][n]["queries"] for n in ("frame", "refine")},
                      "bound_ratio_median": float(np.median(bound_ratio)), "bound_ratio_min": min(bound_ratio),
                      "error_ratio_median": float(np.median(err_ratio)), "error_ratio_min": min(err_ratio),
                      "worst_error_over_bound": worst})
                print(f"d={d} 𝒲={wb} {kind}: bound ratio median {np.median(bound_ratio):.2f}", file=sys.stderr,
                      flush=True)


if __name__ == "__main__":
    sys.exit(main())
