"""Benchmark: learning a single softmax head (Theorem 4.1).

For each dimension ``d`` and seed, a random rational head
``SingleHead.random(d, seed=seed, grid="rational:7", bound=2)`` is learnt

* in ``certified`` and ``symbolic`` mode from an :class:`ExactOracle`
  (symbolic only up to ``--symbolic-max-d``, it is slow), and
* in ``float`` mode from a :class:`FloatOracle`,

and compared with a *peer*: the paper's algorithm coded the straightforward way
(float64, Gaussian probes, no pivot trick, one dense ``d² × d²`` solve).

Output: one JSON object per line on stdout (progress goes to stderr).

* one ``"row": "env"`` row first (versions, CPU count, configuration);
* one ``"row": "run"`` row per (d, seed, method);
* ``"row": "ratio"`` rows per d, medians over seeds of ratios measured in this
  run: ``symbolic/certified`` and ``certified/float`` (seconds) and
  ``peer/float`` (max error);
* one ``"row": "done"`` row with the total wall time.

Timings are reported, never asserted: machines are shared and noisy, so only the
ratios measured within one run are meant to be compared.

Run from the repository root::

    python benchmarks/single_head.py                 # dims 1..64, 3 seeds
    python benchmarks/single_head.py --quick         # smoke test, a few seconds
    python benchmarks/single_head.py --large         # adds d=128, 256 (certified only)
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

# Make ``exact`` importable when the script is run as ``python benchmarks/single_head.py``.
_ROOT = Path(__file__).resolve().parent.parent
if str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))

from exact.learn.single_head import learn_single_head  # noqa: E402
from exact.models import SingleHead  # noqa: E402
from exact.oracles import ExactOracle, FloatOracle  # noqa: E402

BENCH = "single_head"
GRID = "rational:7"
BOUND = 2
DEFAULT_DIMS = (1, 2, 4, 8, 16, 32, 64)
QUICK_DIMS = (1, 2, 4, 8)
LARGE_DIMS = (128, 256)
PEER_MAX_D = 64  # d = 64 is a 4096 × 4096 dense solve; beyond that the peer is skipped
WARMUP_SEED = 10_000  # the warm-up head is not one of the benchmarked ones


# -- output ----------------------------------------------------------------------------


def _json_safe(x):
    """Non-finite floats become the strings "NaN", "Infinity", "-Infinity" (strict JSON)."""
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    return x


def emit(row: dict) -> None:
    print(json.dumps(_json_safe({"bench": BENCH, **row}), allow_nan=False), flush=True)


def progress(msg: str) -> None:
    print(f"[{BENCH}] {msg}", file=sys.stderr, flush=True)


def env_row(args, dims) -> dict:
    import flint
    import mpmath
    import sympy

    try:
        from sympy.external.gmpy import GROUND_TYPES as sympy_ground_types
    except ImportError:  # pragma: no cover - older sympy
        sympy_ground_types = None
    return {
        "row": "env",
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "numpy": np.__version__,
        "sympy": sympy.__version__,
        "sympy_ground_types": sympy_ground_types,
        "flint": flint.__version__,
        "mpmath": mpmath.__version__,
        "config": {
            "dims": list(dims),
            "seeds": args.seeds,
            "symbolic_max_d": args.symbolic_max_d,
            "large": args.large,
            "large_dims": list(LARGE_DIMS) if args.large else [],
            "peer_max_d": PEER_MAX_D,
            "grid": GRID,
            "bound": BOUND,
            "float_w_bound": "learner default",
            "warmup": not args.no_warmup,
        },
    }


# -- measurements ----------------------------------------------------------------------


def max_error_exact(model: SingleHead, truth: SingleHead) -> float:
    """``max |Ŵ − W|, |v̂ − v|`` over all entries, computed in Fractions, reported in float64."""
    diffs = [abs(a - b) for ra, rb in zip(model.W, truth.W) for a, b in zip(ra, rb)]
    diffs += [abs(a - b) for a, b in zip(model.v, truth.v)]
    return float(max(diffs))


def max_error_float(W: np.ndarray, v: np.ndarray, truth: SingleHead) -> float:
    """As :func:`max_error_exact` for float64 arrays (NaN if any entry is NaN, inf if infinite)."""
    if np.isnan(W).any() or np.isnan(v).any():
        return float("nan")
    if not (np.isfinite(W).all() and np.isfinite(v).all()):
        return float("inf")
    diffs = [abs(Fraction(float(W[i, j])) - truth.W[i][j]) for i in range(truth.d) for j in range(truth.d)]
    diffs += [abs(Fraction(float(v[i])) - truth.v[i]) for i in range(truth.d)]
    return float(max(diffs))


class _NoGC:
    """Collect garbage first, then keep the collector off while timing (as :mod:`timeit` does).

    Without this, a full collection over sympy's caches, grown by earlier symbolic
    runs, lands inside whichever run happens to trigger it and costs it ~40 ms.
    """

    def __enter__(self):
        gc.collect()
        self._was = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc):
        if self._was:
            gc.enable()


def run_learner(truth: SingleHead, mode: str) -> dict:
    """Learn ``truth`` in ``mode``; the wall time is taken around the learn call only."""
    oracle = FloatOracle(truth) if mode == "float" else ExactOracle(truth)
    try:
        with _NoGC():
            t0 = time.perf_counter()
            try:
                result = learn_single_head(oracle, mode=mode)
            finally:
                seconds = time.perf_counter() - t0
    except Exception as e:  # reported, not raised: one bad instance must not end the sweep
        return {
            "method": mode,
            "status": "error",
            "error": f"{type(e).__name__}: {e}",
            "seconds": seconds,
            "queries": oracle.count,
        }
    exact_mode = mode != "float"
    return {
        "method": mode,
        "status": "ok",
        "seconds": seconds,
        "query_seconds": result.seconds.get("query"),
        "queries": result.queries,
        "verification_queries": result.verification_queries,
        "exact": (result.model == truth) if exact_mode else None,
        "max_error": max_error_exact(result.model, truth),
        "error_estimate": float(result.error_estimate),
        "precision": result.precision,
    }


def run_peer(truth: SingleHead, d: int, seed: int) -> dict:
    """The paper's algorithm coded the straightforward way, in float64.

    * ``v_i = f([e_i])`` from ``d`` one-token queries;
    * Gaussian probes ``u_k, b_j ~ N(0, I)`` for ``k, j = 1..d`` (seeded numpy
      Generator), no pivot trick and no scaling;
    * for each of the ``d²`` pairs ``(u_k, b_j)``: ``X = [b + u; b]``,
      ``t = logit((f(X) − vᵀb) / (vᵀu)) = uᵀ W b``;
    * ``⟨u bᵀ, W⟩ = t`` solved for ``vec(W)`` with one dense ``d² × d²``
      ``np.linalg.solve``.

    Queries go through :class:`FloatOracle`, so they are counted (``d² + d``).
    """
    oracle = FloatOracle(truth)
    rng = np.random.default_rng([seed, d, 1])
    W_true, v_true = truth.to_numpy()
    t0 = time.perf_counter()
    status = "ok"
    W = np.full((d, d), np.nan)
    with np.errstate(all="ignore"):
        tq = time.perf_counter()
        v = np.array([float(y) for y in oracle.query_batch([np.eye(d)[i : i + 1] for i in range(d)])])
        query_seconds = time.perf_counter() - tq
        U = rng.standard_normal((d, d))  # rows u_k
        B = rng.standard_normal((d, d))  # rows b_j
        pairs = [(k, j) for k in range(d) for j in range(d)]
        X = [np.stack([B[j] + U[k], B[j]]) for k, j in pairs]
        tq = time.perf_counter()
        f = np.array([float(y) for y in oracle.query_batch(X)])
        query_seconds += time.perf_counter() - tq
        vu = np.array([v @ U[k] for k, _ in pairs])
        vb = np.array([v @ B[j] for _, j in pairs])
        a = (f - vb) / vu
        t = np.log(a / (1 - a))
        A = np.stack([np.outer(U[k], B[j]).ravel() for k, j in pairs])  # rows vec(u bᵀ)
        ts = time.perf_counter()
        try:
            W = np.linalg.solve(A, t).reshape(d, d)
        except np.linalg.LinAlgError:
            status = "failed"
        solve_seconds = time.perf_counter() - ts
        # Diagnostics of why it fails: the true logits uᵀWb of the probes.
        true_logits = np.einsum("ka,ab,jb->kj", U, W_true, B)
    seconds = time.perf_counter() - t0
    err = max_error_float(W, v, truth) if status == "ok" else None
    if status == "ok" and err is not None and math.isnan(err):
        status = "nan"
    return {
        "method": "peer",
        "status": status,
        "seconds": seconds,
        "query_seconds": query_seconds,
        "solve_seconds": solve_seconds,
        "queries": oracle.count,
        "exact": None,
        "max_error": err,
        "error_estimate": None,
        "precision": 53,
        "nonfinite_logits": int((~np.isfinite(t)).sum()),
        "max_abs_true_logit": float(np.abs(true_logits).max()),
    }


# -- ratios ----------------------------------------------------------------------------


def _median_worst_nan(xs: list[float]) -> float:
    """Median where NaN ranks as the worst (largest) value; NaN if the median lands on one."""
    s = sorted(xs, key=lambda x: (math.isnan(x), x if not math.isnan(x) else 0.0))
    n = len(s)
    if n % 2:
        return s[n // 2]
    lo, hi = s[n // 2 - 1], s[n // 2]
    return float("nan") if (math.isnan(lo) or math.isnan(hi)) else (lo + hi) / 2


def _ratio(num, den) -> float:
    if num is None or den is None or (isinstance(num, float) and math.isnan(num)):
        return float("nan")
    if den == 0:
        return float("inf") if num > 0 else float("nan")
    return num / den


def ratio_rows(d: int, runs: dict) -> list[dict]:
    """``runs[(seed, method)]`` → row; one ratio row per comparison available at this d."""
    specs = [
        ("symbolic/certified", "seconds", "symbolic", "certified"),
        ("certified/float", "seconds", "certified", "float"),
        ("peer/float", "max_error", "peer", "float"),
    ]
    seeds = sorted({s for s, _ in runs})
    out = []
    for name, quantity, num_m, den_m in specs:
        per_seed = []
        for s in seeds:
            a, b = runs.get((s, num_m)), runs.get((s, den_m))
            if a is None or b is None or b["status"] != "ok":
                continue
            if quantity == "seconds" and a["status"] != "ok":
                continue
            # a failed/NaN peer counts as an infinitely bad error: NaN, ranked worst.
            per_seed.append(_ratio(a.get(quantity), b.get(quantity)))
        if not per_seed:
            continue
        out.append(
            {
                "row": "ratio",
                "d": d,
                "ratio": name,
                "quantity": quantity,
                "value": _median_worst_nan(per_seed),
                "stat": "median",
                "seeds": len(per_seed),
                "per_seed": per_seed,
            }
        )
    return out


# -- main ------------------------------------------------------------------------------


def parse_dims(text: str) -> list[int]:
    try:
        dims = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not dims or any(d < 1 for d in dims):
        raise argparse.ArgumentTypeError(f"expected dimensions >= 1, got {text!r}")
    return dims


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--dims", type=parse_dims, default=None, help="comma-separated d values (default 1,2,4,...,64)")
    ap.add_argument("--seeds", type=int, default=None, help="use seeds 0..N-1 for every d (default 3)")
    ap.add_argument("--symbolic-max-d", type=int, default=16, help="symbolic mode only for d <= this (default 16)")
    ap.add_argument("--quick", action="store_true", help="smoke test: dims 1,2,4,8, 1 seed (unless given)")
    ap.add_argument("--large", action="store_true", help="also d=128, 256: certified mode only, one seed")
    ap.add_argument("--no-warmup", action="store_true", help="skip the untimed warm-up run of each mode")
    args = ap.parse_args(argv)

    dims = args.dims if args.dims is not None else list(QUICK_DIMS if args.quick else DEFAULT_DIMS)
    if args.seeds is None:
        args.seeds = 1 if args.quick else 3
    if args.seeds < 1:
        ap.error("--seeds: expected at least 1")
    seeds = list(range(args.seeds))

    t_start = time.perf_counter()
    emit(env_row(args, dims))

    if not args.no_warmup:
        # First calls pay one-off import and cache costs (sympy especially); keep them out
        # of the timed runs.
        progress("warm-up")
        warm = SingleHead.random(2, seed=WARMUP_SEED, grid=GRID, bound=BOUND)
        for mode in ("certified", "symbolic", "float"):
            run_learner(warm, mode)
        run_peer(warm, 2, WARMUP_SEED)

    for d in dims:
        runs: dict = {}
        for seed in seeds:
            truth = SingleHead.random(d, seed=seed, grid=GRID, bound=BOUND)
            modes = ["certified"] + (["symbolic"] if d <= args.symbolic_max_d else []) + ["float"]
            for mode in modes:
                row = run_learner(truth, mode)
                runs[(seed, mode)] = row
                emit({"row": "run", "d": d, "seed": seed, **row})
                progress(f"d={d} seed={seed} {mode}: {row['seconds']:.3f}s {row['status']}")
            if d <= PEER_MAX_D:
                row = run_peer(truth, d, seed)
                runs[(seed, "peer")] = row
                emit({"row": "run", "d": d, "seed": seed, **row})
                progress(f"d={d} seed={seed} peer: {row['seconds']:.3f}s {row['status']}")
        for r in ratio_rows(d, runs):
            emit(r)

    if args.large:
        seed = seeds[0]
        for d in LARGE_DIMS:
            truth = SingleHead.random(d, seed=seed, grid=GRID, bound=BOUND)
            row = run_learner(truth, "certified")
            emit({"row": "run", "d": d, "seed": seed, **row})
            progress(f"d={d} seed={seed} certified: {row['seconds']:.3f}s {row['status']}")

    emit({"row": "done", "seconds": time.perf_counter() - t_start})
    return 0


if __name__ == "__main__":
    sys.exit(main())
