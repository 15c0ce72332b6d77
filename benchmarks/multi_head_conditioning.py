"""Prototype measurement: how well float answers can resolve the heads of one multi-head block, by
sample design (no oracle; the block's own function and its exact Jacobian).

One block of the multi-head learner is the function of the copy count k

    y(k) = A − Σ_h c_h / (1 + k·r_h),      r_h = e^{λ·s_h},

sampled at k = 0..2H today, with the heads' scores s_h of one probe and λ the probe's scale.
Its 2H + 1 unknowns (A, c_h, s_h) are read from the samples; the first-order error of the unknowns
from answer errors of ε relative is ‖J⁺ diag(|y|)‖·ε (J = ∂y/∂(A, c, s)).  Each ``run`` row gives,
for H heads with scores evenly spread in [−1, 1] (and, ``spread`` = "random", Gaussian scores) and
a design, the predicted largest error of the scores and of the residues at ε = 2^-52 (float64
answers), first order, for a least-squares fit of all the design's samples:

* ``today``: k = 0..2H, λ = 1 (the learner's block);
* ``over``: k = 0..8H, λ = 1 (four times the samples, the same range);
* ``geometric``: about 8H integer values of k on a geometric grid from 0 to 4× the largest pole, with
  λ chosen so that the poles −e^{−λ s_h} span a factor K = 2^10 or 2^20 (λ·(s_max − s_min) = ln K): the
  scale separates the heads;
* ``sweep``: the geometric design's samples at two scales, λ and λ/2, fitted jointly (s_h and c_h
  shared): the "peel by scale" lead; ``sweep4``: at four, λ/2^i for i = 0..3.

The longest sequence a design needs is its largest k plus one token; ``max_k`` records it.

    python benchmarks/multi_head_conditioning.py > benchmarks/results/multi_head_conditioning.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys

import numpy as np

BENCH = "multi_head_conditioning"
EPS = 2.0**-52


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def jacobian(ks: np.ndarray, lams: list, A: float, c: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``y`` at every (k, λ) and ``∂y/∂(A, c_1..c_H, s_1..s_H)``."""
    rows, ys = [], []
    for lam in lams:
        r = np.exp(lam * s)
        for k in ks:
            den = 1.0 + k * r
            ys.append(A - float(np.sum(c / den)))
            rows.append(np.concatenate([[1.0], -1.0 / den, c * k * r * lam / den**2]))
    return np.array(ys), np.array(rows)


def predicted(ks, lams, A, c, s) -> dict:
    y, J = jacobian(ks, lams, A, c, s)
    # first-order worst case of the least-squares fit: |J⁺|·(ε|y|) per unknown (the answers' relative error ε)
    pinv = np.linalg.pinv(J, rcond=1e-300)
    err = np.abs(pinv) @ (EPS * np.abs(y))
    H = len(c)
    return {"score_error": float(err[1 + H:].max()), "residue_error": float(err[1:1 + H].max()),
            "samples": len(y), "max_k": float(max(ks))}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--heads", type=int, nargs="+", default=[2, 3, 4, 5, 6, 8])
    p.add_argument("--seeds", type=int, default=3)
    args = p.parse_args(argv)
    emit({"row": "env", "python": platform.python_version(), "numpy": np.__version__, "config": vars(args)})
    for H in args.heads:
        for spread in ("even", "random"):
            for seed in range(args.seeds if spread == "random" else 1):
                rng = np.random.default_rng(seed)
                s = np.linspace(-1, 1, H) if spread == "even" else np.sort(rng.standard_normal(H))
                c = rng.uniform(0.5, 1.5, H) * rng.choice([-1, 1], H)
                A = float(np.sum(np.abs(c)))
                width = float(s.max() - s.min())
                designs = {"today": (np.arange(2 * H + 1, dtype=float), [1.0]),
                           "over": (np.arange(8 * H + 1, dtype=float), [1.0])}
                for bits in (10, 16, 20):
                    # scale λ so that the poles −e^{−λ s_h} span a factor 2^bits; sample integer copy counts on a
                    # geometric grid up to 4× the largest pole (k < 1 is only k = 0)
                    lam = bits * math.log(2) / width
                    top = 4.0 * math.exp(-lam * float(s.min()))
                    grid = np.unique(np.concatenate([[0.0], np.round(np.geomspace(1.0, top, 8 * H))]))
                    designs[f"geometric-2^{bits}"] = (grid, [lam])
                    designs[f"sweep-2^{bits}"] = (grid, [lam, lam / 2])
                    designs[f"sweep4-2^{bits}"] = (grid, [lam / 2**i for i in range(4)])
                for name, (ks, lams) in designs.items():
                    emit({"row": "run", "H": H, "spread": spread, "seed": seed, "design": name,
                          "scale": lams[0], **predicted(ks, lams, A, c, s)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
