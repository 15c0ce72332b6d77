"""Count stale chord-table hits (a new Line inheriting a freed chord's entry) inside learn_ffn, on nested
pencils and on lifted 1-D functions, and check whether the certificate (which re-runs the learner) holds."""
import sys
import weakref
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import ffn_path, learn_ffn

seen = {}
ev = {"stale": 0}


def spy_id(obj):
    i = id(obj)
    old = seen.get(i)
    if old is not None and old() is not obj:
        chords = sys._getframe(1).f_locals.get("chords", {})
        if i in chords and (chords[i][5] or chords[i][6] is not None):
            ev["stale"] += 1
    seen[i] = weakref.ref(obj)
    return i


ffn_path.id = spy_id
rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 50
hits = fails = 0
for case in range(N):
    d = int(rng.integers(2, 5))
    t = [int(x) for x in rng.integers(-5, 6, size=d)]
    s = [int(x) for x in rng.integers(-5, 6, size=d)]
    if not any(t) or not any(s):
        continue
    A, wts = [], []
    for _ in range(int(rng.integers(1, 3))):  # one or two nested pencils
        tt = [x + int(y) for x, y in zip(t, rng.integers(-2, 3, size=d))]
        if not any(tt):
            continue
        k = int(rng.integers(-6, 7)) or 1
        A.append(tt)
        wts.append(Fraction(k))
        for _ in range(int(rng.integers(1, 3))):
            e = Fraction(1, 2 ** int(rng.integers(2, 36)))
            c = int(rng.integers(1, 4)) * (1 if rng.integers(2) else -1)
            A += [[a + e * b for a, b in zip(tt, s)], [a - e * b for a, b in zip(tt, s)]]
            wts += [Fraction(c), Fraction(c)]
    if not A:
        continue
    net = ReLUFFN(A, wts)
    seen.clear()
    ev["stale"] = 0
    try:
        r = learn_ffn(ExactOracle(net), m=len(A), seed=int(rng.integers(2**62)), checks=0)
    except ExactAttentionError as e:
        r = None
    if ev["stale"]:
        hits += 1
        seen.clear()
        holds = r.certificate.check().holds if r is not None else None
        print("stale hits", ev["stale"], "case", case, "result", r is not None, "cert holds", holds, flush=True)
        if holds is False:
            fails += 1
            print("  CERT FAILS:", r.certificate.check().message[:200], A, wts, flush=True)
print("cases", N, "with stale hits", hits, "cert fails", fails)
