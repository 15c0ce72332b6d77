"""1-D fuzz of scan_segment + proved_breakpoints: a PL function on [0, 1] (any such function is a
ReLU network restricted to a line), the scan's own samples, and whether proved_breakpoints ever
reports count == true count with determined positions that are wrong."""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn.ffn_count import proved_breakpoints
from exact.learn.ffn_path import PathRetry, scan_segment

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
N = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
rng = np.random.default_rng(seed)


def rand_fn():
    bps = {}
    for _ in range(int(rng.integers(1, 4))):  # clusters
        centre = fmpq(int(rng.integers(1, 1 << 20)), 1 << 20)
        if rng.integers(3) == 0:
            centre = fmpq(int(rng.integers(1, 64)), 64)  # dyadic centres: where the scan samples
        if rng.integers(4) == 0:
            centre = fmpq(int(rng.integers(1, 30)), int(rng.integers(31, 60)))
        k = int(rng.integers(1, 5))
        width = fmpq(1, 2 ** int(rng.integers(2, 40)))
        kinds = str(rng.choice(["bump", "free", "sym"]))
        offs = sorted({fmpq(int(rng.integers(-1000, 1001)), 1000) * width for _ in range(k)})
        if kinds == "sym" and k >= 2:
            offs = sorted({-width, fmpq(0), width})
        ks = [fmpq(int(rng.integers(-4, 5)) or 1) for _ in offs]
        if kinds == "bump" and len(offs) >= 3:  # slope changes sum to zero and first moment zero: back on the line
            # solve for last two kinks so that sum k = 0 and sum k*off = 0
            o = offs
            a, b = o[-2], o[-1]
            s0 = sum(ks[:-2], fmpq(0))
            s1 = sum((x * y for x, y in zip(ks[:-2], o[:-2])), fmpq(0))
            # k1 + k2 = -s0 ; k1 a + k2 b = -s1
            k2 = (-s1 + s0 * a) / (b - a)
            k1 = -s0 - k2
            ks[-2], ks[-1] = k1, k2
        if kinds == "sym" and len(offs) == 3:
            c = fmpq(int(rng.integers(1, 4)))
            ks = [c, fmpq(int(rng.integers(-4, 5))), c]
        for o, kk in zip(offs, ks):
            t = centre + o
            if 0 < t < 1 and kk:
                bps[t] = bps.get(t, fmpq(0)) + kk
    bps = {t: k for t, k in bps.items() if k}
    s0 = fmpq(int(rng.integers(-5, 6)))
    y0 = fmpq(int(rng.integers(-5, 6)))
    items = sorted(bps.items())

    def h(t):
        y = y0 + s0 * t
        for b, k in items:
            if t > b:
                y += k * (t - b)
        return y
    return [b for b, _ in items], h


stats = {"cases": 0, "exact count": 0, "determined": 0, "WRONG": 0, "retry": 0}
for case in range(N):
    truth, f = rand_fn()
    for interior in (False, True):
        seen = []

        def h(ts):
            vs = [f(t) for t in ts]
            seen.extend(zip(ts, vs))
            return vs
        pick = None
        if interior:
            def pick(lo, hi):
                return lo + (hi - lo) * fmpq(int(rng.integers(1, 1 << 30)), 1 << 30)
        try:
            scan_segment(h, max_breakpoints=64, interior=pick)
        except (PathRetry, ExactAttentionError):
            stats["retry"] += 1
        pb = proved_breakpoints(seen)
        stats["cases"] += 1
        assert pb.count <= len(truth)
        if pb.count == len(truth):
            stats["exact count"] += 1
            if pb.positions is not None:
                stats["determined"] += 1
                if list(pb.positions) != truth:
                    stats["WRONG"] += 1
                    print("WRONG", case, interior, truth, [(str(t), str(f(t))) for t in truth], pb)
print(stats)
