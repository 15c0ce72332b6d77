"""Do the check path's own samples ever show R2's flaw: count == the true number of breakpoints,
positions determined, yet positions != the true breakpoints?"""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn.ffn_count import proved_breakpoints
from exact.learn.ffn_path import PathRetry, scan_segment

from harness import planted, seg_fn, true_breakpoints, units_of

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
R = 1 << 62
stats = {"segments": 0, "exact count": 0, "determined": 0, "WRONG positions": 0, "retry": 0}
for case in range(N):
    d = int(rng.integers(2, 7))
    net, kinds = planted(rng, d)
    m = units_of(net)
    for bits in (20, 62):
        Rb = 1 << bits
        p = [int(x) for x in rng.integers(-Rb, Rb, size=d, endpoint=True)]
        q = [int(x) for x in rng.integers(-Rb, Rb, size=d, endpoint=True)]
        segs = [(p, [b - a for a, b in zip(p, q)]), (q, [-a - b for a, b in zip(p, q)])]
        end = None
        for P, D in segs:
            g = seg_fn(net, P, D)
            seen = [] if end is None else [(fmpq(0), end)]

            def h(ts, g=g, seen=seen):
                vs = [g(t) for t in ts]
                seen.extend(zip(ts, vs))
                return vs
            try:
                scan = scan_segment(h, start=end, max_breakpoints=m)
            except PathRetry:
                stats["retry"] += 1
                scan = None
            except ExactAttentionError:
                stats["retry"] += 1
                scan = None
            if scan is None:
                # the samples are still samples: look at them
                end = g(fmpq(1))
            else:
                end = scan.end
            truth = true_breakpoints(net, P, D)
            pb = proved_breakpoints(seen)
            stats["segments"] += 1
            assert pb.count <= len(truth), (case, kinds)
            if pb.count == len(truth):
                stats["exact count"] += 1
                if pb.positions is not None:
                    stats["determined"] += 1
                    if list(pb.positions) != truth:
                        stats["WRONG positions"] += 1
                        print("WRONG", case, kinds, d, bits, net.A, net.w, P, D, pb, truth)
print(stats)
