"""Detect id reuse inside scan_segment's chord table directly: shadow id() in ffn_path with one
that remembers, per id, a weak reference to the object it was first asked about."""
import sys
import weakref

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn import ffn_path
from exact.learn.ffn_path import PathRetry, scan_segment

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
seen = {}
events = {"lookups": 0, "reused": 0, "reused with info": 0}
table = {}


def spy_id(obj):
    i = id(obj)
    events["lookups"] += 1
    old = seen.get(i)
    if old is not None and old() is not obj:
        events["reused"] += 1
        chords = sys._getframe(1).f_locals.get("chords", {})
        if i in chords:
            events["reused with info"] += 1
            info = chords[i]
            if info[6] is not None or info[5] > 0:
                events.setdefault("stale with failures/repair", 0)
                events["stale with failures/repair"] += 1
                key = "stale repaired" if info[6] is not None else f"stale count {info[5]}"
                events[key] = events.get(key, 0) + 1
    seen[i] = weakref.ref(obj)
    return i


ffn_path.id = spy_id


def sym_fn():
    bps = {}
    for _ in range(int(rng.integers(1, 6))):
        b = fmpq(int(rng.integers(1, 1 << 16)), 1 << 16) if rng.integers(2) else fmpq(int(rng.integers(1, 97)), 97)
        w = fmpq(1, 2 ** int(rng.integers(3, 36)))
        c = fmpq(int(rng.integers(1, 4)) * (1 if rng.integers(2) else -1))
        k = fmpq(int(rng.integers(-6, 7)))
        for t, kk in ((b - w, c), (b, k), (b + w, c)):
            if 0 < t < 1:
                bps[t] = bps.get(t, fmpq(0)) + kk
    items = sorted((t, k) for t, k in bps.items() if k)

    def f(t):
        y = fmpq(0)
        for b, k in items:
            if t > b:
                y += k * (t - b)
        return y
    return f


for case in range(N):
    f = sym_fn()
    seen.clear()
    try:
        scan_segment(lambda ts: [f(t) for t in ts], max_breakpoints=64)
    except (PathRetry, ExactAttentionError):
        pass
print(events)
