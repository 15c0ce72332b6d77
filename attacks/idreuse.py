"""scan_segment keys its chord table by id(line): a freed Line's id can be reused by a new Line.
Compare the scan's queries with every Line kept alive (so no id is reused) and without."""
import sys

import numpy as np
from flint import fmpq

from exact.errors import ExactAttentionError
from exact.learn import ffn_path
from exact.learn.ffn_path import PathRetry, scan_segment

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300


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
    rng.integers(-3, 4)  # keeps the seeded stream of the recorded runs

    def f(t):
        y = fmpq(0)
        for b, k in items:
            if t > b:
                y += k * (t - b)
        return y
    return f


orig = ffn_path.Line.through.__func__
keep = []


def through_keep(cls, *a):
    line = orig(cls, *a)
    keep.append(line)
    return line


def run(f, keep_alive):
    asked = []

    def h(ts):
        asked.extend(ts)
        return [f(t) for t in ts]
    ffn_path.Line.through = classmethod(through_keep) if keep_alive else classmethod(orig)
    try:
        scan = scan_segment(h, max_breakpoints=64)
        out = ("ok", [b.t for b in scan.breakpoints])
    except (PathRetry, ExactAttentionError) as e:
        out = ("err", str(e)[:60])
    finally:
        ffn_path.Line.through = classmethod(orig)
        keep.clear()
    return asked, out


diff = 0
for case in range(N if len(sys.argv) <= 3 else 0):
    f = sym_fn()
    a1, o1 = run(f, False)
    a2, o2 = run(f, True)
    if a1 != a2 or o1 != o2:
        diff += 1
        print("DIFFERS", case, len(a1), len(a2), o1[0], o2[0], flush=True)
print("cases", N, "differ", diff)

if len(sys.argv) > 3:  # replay one case and print it
    rng = np.random.default_rng(int(sys.argv[1]))
    for case in range(int(sys.argv[3]) + 1):
        f = sym_fn()
    a1, o1 = run(f, False)
    a2, o2 = run(f, True)
    print(len(a1), o1)
    print(len(a2), o2)
