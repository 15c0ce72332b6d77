"""Does scan_segment ever accept more breakpoints than the function has?  With max_breakpoints = m
(as the learner passes), that raises OracleInconsistent ('not a ReLU network with that many units')
against a network with at most m units."""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError, OracleInconsistent
from exact.learn.ffn_path import PathRetry, scan_segment

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
over = 0
for case in range(N):
    bps = {}
    for _ in range(int(rng.integers(1, 5))):
        centre = fmpq(int(rng.integers(1, 1 << 12)), 1 << 12) if rng.integers(2) else fmpq(int(rng.integers(1, 97)), 97)
        kind = int(rng.integers(3))
        w = fmpq(1, 2 ** int(rng.integers(2, 40)))
        if kind == 0:  # symmetric pencil
            c = fmpq(int(rng.integers(1, 4)))
            pts = [(centre - w, c), (centre, fmpq(int(rng.integers(-6, 7)))), (centre + w, c)]
        elif kind == 1:  # zero-sum bump
            pts = [(centre - w, fmpq(1)), (centre, fmpq(-2)), (centre + w, fmpq(1))]
        else:
            pts = [(centre + fmpq(int(rng.integers(-64, 65)), 64) * w, fmpq(int(rng.integers(-4, 5)))) for _ in range(3)]
        for t, k in pts:
            if 0 < t < 1:
                bps[t] = bps.get(t, fmpq(0)) + k
    items = sorted((t, k) for t, k in bps.items() if k)
    if not items:
        continue

    def f(t):
        return sum((k * (t - b) for b, k in items if t > b), fmpq(0))
    interior = bool(rng.integers(2))
    pick = (lambda lo, hi: lo + (hi - lo) * fmpq(int(rng.integers(1, 1 << 30)), 1 << 30)) if interior else None
    try:
        scan_segment(lambda ts: [f(t) for t in ts], max_breakpoints=len(items), interior=pick)
    except OracleInconsistent as e:
        over += 1
        print("OVER", case, interior, [(str(t), str(k)) for t, k in items], str(e)[:80], flush=True)
    except (PathRetry, ExactAttentionError):
        pass
print("cases", N, "over-found", over)
