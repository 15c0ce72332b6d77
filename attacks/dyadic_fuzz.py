"""Clusters of breakpoints around the dyadic points the scan's middle step asks (1/2, 1/4, 3/8, ...),
with and without interior points: does the risky pattern (two isolated changes two samples apart) or
a wrong determined position ever appear?"""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn.ffn_count import proved_breakpoints
from exact.learn.ffn_path import PathRetry, scan_segment
from pattern_freq import risky

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
stats = {"runs": 0, "risky": 0, "wrong": 0}
for case in range(N):
    bps = {}
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(1, 6))
        centre = fmpq(int(rng.integers(1, 1 << k)) | 1, 1 << k)
        for _ in range(int(rng.integers(1, 4))):
            off = fmpq(int(rng.integers(-8, 9)), 1 << int(rng.integers(3, 45)))
            t = centre + off
            if 0 < t < 1:
                bps[t] = bps.get(t, fmpq(0)) + fmpq(int(rng.integers(-4, 5)))
    items = sorted((t, k) for t, k in bps.items() if k)
    truth = [t for t, _ in items]

    def f(t):
        return sum((k * (t - b) for b, k in items if t > b), fmpq(0))
    for interior in (False, True):
        seen = []

        def h(ts):
            v = [f(t) for t in ts]
            seen.extend(zip(ts, v))
            return v
        pick = (lambda lo, hi: lo + (hi - lo) * fmpq(int(rng.integers(1, 1 << 30)), 1 << 30)) if interior else None
        try:
            scan_segment(h, max_breakpoints=64, interior=pick)
            ok = True
        except (PathRetry, ExactAttentionError):
            ok = False
        stats["runs"] += 1
        if risky(seen):
            stats["risky"] += 1
            stats["risky, scan ok"] = stats.get("risky, scan ok", 0) + ok
            print("risky", ok, case, interior, [(str(t), str(k)) for t, k in items], flush=True)
        pb = proved_breakpoints(seen)
        if pb.count == len(truth) and pb.positions is not None and list(pb.positions) != truth:
            stats["wrong"] += 1
            print("WRONG", case, interior, [(str(t), str(k)) for t, k in items], pb, flush=True)
print(stats)
