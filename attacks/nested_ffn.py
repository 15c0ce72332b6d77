"""learn_ffn on nested pencils (units on t ± e1·s, t ± e2·s, t with weights c1, c2, k, c2, c1):
the outer lines meet exactly at the middle breakpoint on every line, so the scan's chord repair runs,
and its id-keyed chord table can hand a stale repair to a new line.  Compare plain with keep-alive."""
import sys
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import ffn_path, learn_ffn
from exact.learn.ffn import HIDDEN_UNITS

orig = ffn_path.Line.through.__func__
kept = []


def keep(on):
    ffn_path.Line.through = classmethod(lambda cls, *a: kept.append(orig(cls, *a)) or kept[-1]) if on else classmethod(orig)


rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 20
diff = 0
for case in range(N):
    d = int(rng.integers(2, 5))
    t = [int(x) for x in rng.integers(-5, 6, size=d)]
    s = [int(x) for x in rng.integers(-5, 6, size=d)]
    if not any(t) or not any(s):
        continue
    e1, e2 = Fraction(1, 2 ** int(rng.integers(2, 12))), Fraction(1, 2 ** int(rng.integers(12, 36)))
    c1, c2, k = [int(rng.integers(1, 4)) * (1 if rng.integers(2) else -1) for _ in range(3)]
    A = [[a + e1 * b for a, b in zip(t, s)], [a + e2 * b for a, b in zip(t, s)], t,
         [a - e2 * b for a, b in zip(t, s)], [a - e1 * b for a, b in zip(t, s)]]
    net = ReLUFFN(A, [c1, c2, k, c2, c1])
    seed = int(rng.integers(2**62))
    out = []
    for on in (False, True):
        keep(on)
        try:
            r = learn_ffn(ExactOracle(net), m=5, seed=seed, checks=0)
            out.append(("ok", r.queries, r.details["paths"], HIDDEN_UNITS not in r.assumptions,
                        r.model.function_form() == net.function_form()))
        except ExactAttentionError as e:
            out.append(("err", type(e).__name__, str(e)[:90]))
        finally:
            keep(False)
            kept.clear()
    if out[0] != out[1]:
        diff += 1
        print("DIFFERS", case, A, [c1, c2, k, c2, c1], seed, out, flush=True)
print("cases", N, "differ", diff)
