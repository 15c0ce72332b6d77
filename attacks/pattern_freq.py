"""How often do the scan's own samples hold R2's risky pattern (two runs of length 1, two samples
apart, both 'determined' by proved_breakpoints)?  Any such sample set admits a second function with
the same count and other breakpoints."""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn.ffn_path import PathRetry, scan_segment

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 500


def risky(samples):
    pts = dict(samples)
    ts = sorted(pts)
    ys = [pts[t] for t in ts]
    n = len(ts)
    sig = [(ys[i + 1] - ys[i]) / (ts[i + 1] - ts[i]) for i in range(n - 1)]
    ch = [i for i in range(1, n - 1) if sig[i - 1] != sig[i]]
    chs = set(ch)
    run1 = [i for i in ch if i - 1 not in chs and i + 1 not in chs and 2 <= i <= n - 3]
    r1 = set(run1)
    return [(i, i + 2) for i in run1 if i + 2 in r1]


def rand_fn():
    bps = {}
    for _ in range(int(rng.integers(1, 5))):
        centre = fmpq(int(rng.integers(1, 1 << 12)), 1 << 12) if rng.integers(2) else fmpq(int(rng.integers(1, 97)), 97)
        for _ in range(int(rng.integers(1, 4))):
            t = centre + fmpq(int(rng.integers(-64, 65)), 1 << int(rng.integers(6, 40)))
            if 0 < t < 1:
                bps[t] = bps.get(t, fmpq(0)) + fmpq(int(rng.integers(-4, 5)))
    items = sorted((t, k) for t, k in bps.items() if k)

    def f(t):
        return sum((k * (t - b) for b, k in items if t > b), fmpq(0))
    return f


hits = 0
if __name__ != "__main__":
    N = 0
for case in range(N):
    f = rand_fn()
    for interior in (False, True):
        seen = []

        def h(ts):
            v = [f(t) for t in ts]
            seen.extend(zip(ts, v))
            return v
        pick = (lambda lo, hi: lo + (hi - lo) * fmpq(int(rng.integers(1, 1 << 30)), 1 << 30)) if interior else None
        try:
            scan_segment(h, max_breakpoints=64, interior=pick)
        except (PathRetry, ExactAttentionError):
            pass
        r = risky(seen)
        if r:
            hits += 1
            print("risky pattern", case, interior, r[:3], flush=True)
if N:
    print("cases", 2 * N, "risky", hits)
