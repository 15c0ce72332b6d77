"""Benchmark: the noisy learners against every noise model, with their certified bounds.

Conventions (Theorem 6.1's acceptance): Gaussian heads with ‖W‖_F just below 𝒲 = 2
(``SingleHead.gaussian``), token budget R = 1, ``--instances`` heads per d (default 20),
τ ∈ {1e-2, 1e-4, 1e-6, 1e-8}.  For every (d, τ, noise, learner, instance) a ``run`` row
records the measured errors and the certified bounds; summary rows then report:

* ``validity``: the largest measured/bound ratio per noise model and learner (Frobenius
  and max-entry, and ‖v̂ − v‖ against √d·τ/R); a bound holds iff the ratio is ≤ 1;
* ``closed_form``: the paper learner's largest ratio to L·τ(3𝒲² + 2σ(½)𝒲)/(μ − τ) (τ < μ);
* ``adversary``: the paper learner's median adversarial/uniform error ratio per d, and
  the tightness instance (v = ½·1, ‖W‖_F ≤ 1e-3) as a fraction of the bound;
* ``improvement``: median and minimum paper/frame Frobenius ratio per d and noise for
  τ ≤ 1e-4, and at 𝒲 = 8, d = 16, τ = 1e-6;
* ``float64``: τ = 0 with |W_ij| ≤ 50 (a float64 oracle): finiteness and error;
* ``threshold``: bits against full-range bisection for ε ∈ {1e-3, 1e-5}, misses, and
  whether every error stays within its bound.

``--plot PNG`` draws the median error against τ per noise model and learner, with the
median certified bound as dashed lines (needs matplotlib).  JSON rows on stdout,
progress on stderr.  Nothing is timed here.

    python benchmarks/noise.py --plot benchmarks/results/noise.png > benchmarks/results/noise.jsonl
    python benchmarks/noise.py --dims 4 8 --instances 5          # a quick look
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import FloatOracle, NoisyOracle, SingleHead, learn_noisy, learn_noisy_frame  # noqa: E402
from exact.learn import learn_threshold  # noqa: E402
from exact.learn.adversary import adversary  # noqa: E402
from exact.learn.noisy import LIPSCHITZ_HALF  # noqa: E402
from exact.noise import Adversarial  # noqa: E402

BENCH = "noise"
LEARNERS = {"paper": learn_noisy, "frame": learn_noisy_frame}
NOISES = ("uniform", "round", "float32", "adversarial")
TAUS = ("1e-2", "1e-4", "1e-6", "1e-8")
SIGMA_HALF = 1 / (1 + math.exp(-0.5))


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _errors(result, truth):
    W, v = (np.array(x, dtype=float) for x in result.model.to_numpy())
    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    return float(np.linalg.norm(W - Wt)), float(np.abs(W - Wt).max()), float(np.linalg.norm(v - vt))


def _noise(kind: str, tau: str, truth, learner: str, w_bound, seed: int):
    if kind == "round":  # round:k with ½·10^-k <= τ
        k = max(0, math.ceil(-math.log10(2 * float(tau))))
        return f"round:{k}", None
    if kind == "float32":
        return "float32", None
    if kind == "adversarial":
        t = Fraction(tau)
        return Adversarial(t, adversary(truth, learner, tau=t, w_bound=w_bound, token_norm=1)), None
    return f"uniform:{tau}", seed


def run_one(truth, kind, tau, learner, w_bound, seed):
    noise, noise_seed = _noise(kind, tau, truth, learner, w_bound, seed)
    oracle = NoisyOracle(truth, noise, seed=noise_seed)
    r = LEARNERS[learner](oracle, w_bound=w_bound, token_norm=1)
    fro, mx, vn = _errors(r, truth)
    b = r.error_bound
    return {"fro": fro, "max": mx, "v": vn, "bound_fro": b.W_frobenius, "bound_max": b.W_max,
            "bound_v": b.v_norm, "tau_declared": float(oracle.accuracy), "rtol": float(oracle.rtol)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dims", type=int, nargs="+", default=[4, 8, 16, 32])
    p.add_argument("--instances", type=int, default=20)
    p.add_argument("--plot", default=None, metavar="PNG")
    args = p.parse_args(argv)
    rows = []
    for d in args.dims:
        for tau in TAUS:
            for kind in NOISES:
                for learner in LEARNERS:
                    for seed in range(args.instances):
                        truth = SingleHead.gaussian(d, seed=seed)
                        row = {"row": "run", "d": d, "tau": float(tau), "noise": kind, "learner": learner, "seed": seed,
                               **run_one(truth, kind, tau, learner, 2, seed)}
                        mu = float(min(abs(x) for x in truth.v))
                        row["mu"] = mu
                        emit(row)
                        rows.append(row)
            progress(f"d={d} τ={tau} done")
    summarise(rows)
    extra_claims(args)
    if args.plot:
        plot(rows, args.plot)
    return 0


def summarise(rows) -> None:
    for kind in NOISES:
        for learner in LEARNERS:
            sel = [r for r in rows if r["noise"] == kind and r["learner"] == learner]
            if not sel:
                continue
            emit({"row": "validity", "noise": kind, "learner": learner, "runs": len(sel),
                  "max_ratio_fro": max(r["fro"] / r["bound_fro"] for r in sel),
                  "max_ratio_max": max(r["max"] / r["bound_max"] for r in sel),
                  "max_ratio_v_sqrt_d": max((r["v"] / (math.sqrt(r["d"]) * r["tau_declared"]) for r in sel
                                             if r["tau_declared"] > 0), default=None),
                  "holds": all(r["fro"] <= r["bound_fro"] and r["max"] <= r["bound_max"] and r["v"] <= r["bound_v"]
                               for r in sel)})
    paper = [r for r in rows if r["learner"] == "paper" and r["noise"] == "uniform" and r["tau"] < r["mu"]]
    if paper:
        def closed(r):
            t, W = r["tau"] * (1 + 1e-9), 2.0
            return LIPSCHITZ_HALF * t * (3 * W * W + 2 * SIGMA_HALF * W) / (r["mu"] - t)
        emit({"row": "closed_form", "runs": len(paper), "max_ratio": max(r["max"] / closed(r) for r in paper),
              "max_bound_ratio": max(r["bound_max"] / closed(r) for r in paper)})
    for d in sorted({r["d"] for r in rows}):
        key = lambda r: (r["tau"], r["seed"])  # noqa: E731
        adv = {key(r): r["fro"] for r in rows if r["d"] == d and r["learner"] == "paper" and r["noise"] == "adversarial"}
        uni = {key(r): r["fro"] for r in rows if r["d"] == d and r["learner"] == "paper" and r["noise"] == "uniform"}
        ratios = [adv[k] / uni[k] for k in adv if k in uni and uni[k] > 0]
        if ratios:
            emit({"row": "adversary", "d": d, "median_adversarial_over_uniform": float(np.median(ratios)),
                  "min": float(min(ratios)), "target": 2.0, "met": float(np.median(ratios)) >= 2})
        for kind in ("uniform", "round", "adversarial"):
            by = {learner: {(r["tau"], r["seed"]): r["fro"] for r in rows
                            if r["d"] == d and r["noise"] == kind and r["tau"] <= 1e-4 and r["learner"] == learner}
                  for learner in LEARNERS}
            pairs = [by["paper"][k] / by["frame"][k] for k in by["paper"] if by["frame"].get(k)]
            if pairs:
                target = {4: 6, 8: 10, 16: 20, 32: 50}.get(d)
                med = float(np.median(pairs))
                emit({"row": "improvement", "d": d, "noise": kind, "runs": len(pairs), "median_paper_over_frame": med,
                      "min": float(min(pairs)), "target_median": target, "target_min": 3,
                      "met": (target is None or med >= target) and min(pairs) >= 3})


def extra_claims(args) -> None:
    # tightness: v = ½·1, ‖W‖_F <= 1e-3
    d, tau = 4, Fraction(1, 10**6)
    truth = SingleHead((np.random.default_rng(0).standard_normal((d, d)) * 1e-4).tolist(), [Fraction(1, 2)] * d)
    r = learn_noisy(NoisyOracle(truth, Adversarial(tau, adversary(truth, "paper", tau=tau, w_bound=2, token_norm=1))),
                    w_bound=2, token_norm=1)
    fro, mx, _ = _errors(r, truth)
    emit({"row": "adversary_tightness", "fraction_of_bound_max": mx / r.error_bound.W_max,
          "fraction_of_bound_fro": fro / r.error_bound.W_frobenius, "target": [0.90, 0.92]})
    # 𝒲 = 8, d = 16, τ = 1e-6
    ratios = []
    for seed in range(min(args.instances, 10)):
        truth = SingleHead.gaussian(16, seed=seed, w_frobenius=8)
        e = [_errors(fn(NoisyOracle(truth, "uniform:1e-6", seed=seed), w_bound=8, token_norm=1), truth)[0]
             for fn in (learn_noisy, learn_noisy_frame)]
        ratios.append(e[0] / e[1])
    emit({"row": "improvement_w8", "d": 16, "w_bound": 8, "tau": 1e-6, "median_paper_over_frame": float(np.median(ratios)),
          "min": float(min(ratios)), "target": 100, "met": float(np.median(ratios)) >= 100})
    # float64, τ = 0, |W_ij| <= 50
    for name, fn in LEARNERS.items():
        worst, finite = 0.0, True
        for seed in range(min(args.instances, 10)):
            rng = np.random.default_rng(seed)
            W = rng.uniform(-50, 50, (8, 8))
            truth = SingleHead(W.tolist(), rng.standard_normal(8).tolist())
            r = fn(FloatOracle(truth), w_bound=float(np.linalg.norm(W)) * 1.01, token_norm=1)
            Wh = np.array(r.model.to_numpy()[0])
            finite &= bool(np.isfinite(Wh).all())
            worst = max(worst, float(np.abs(Wh - W).max()))
        emit({"row": "float64", "learner": name, "max_abs_error": worst, "finite": finite, "target": 1e-11,
              "met": finite and worst <= 1e-11})
    # threshold
    for eps in ("1e-3", "1e-5"):
        bits = full = misses = 0
        holds = True
        for seed in range(min(args.instances, 10)):
            truth = SingleHead.gaussian(8, seed=seed)
            r = learn_threshold(truth, epsilon=eps, v_bound=10, w_bound=2, token_norm=1)
            bits += r.details["bit_queries"]
            full += r.details["full_range_bits"]
            misses += r.details["prior_misses"]
            holds &= _errors(r, truth)[0] <= r.error_bound.W_frobenius
        emit({"row": "threshold", "epsilon": float(eps), "bits_over_full_range": bits / full, "misses": misses,
              "within_bound": holds, "target": 0.8, "met": bits / full <= 0.8 and misses == 0 and holds})


def plot(rows, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(NOISES), figsize=(4 * len(NOISES), 3.6), sharey=True)
    d = max(r["d"] for r in rows)
    for ax, kind in zip(axes, NOISES):
        for learner, color in (("paper", "tab:red"), ("frame", "tab:blue")):
            sel = [r for r in rows if r["noise"] == kind and r["learner"] == learner and r["d"] == d]
            taus = sorted({r["tau"] for r in sel})
            med = [np.median([r["fro"] for r in sel if r["tau"] == t]) for t in taus]
            bnd = [np.median([r["bound_fro"] for r in sel if r["tau"] == t]) for t in taus]
            ax.loglog(taus, med, "o-", color=color, label=f"{learner}: measured")
            ax.loglog(taus, bnd, "--", color=color, label=f"{learner}: certified bound")
        ax.set_title(f"{kind} noise, d = {d}")
        ax.set_xlabel("τ")
    axes[0].set_ylabel("median ‖Ŵ − W‖_F")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
