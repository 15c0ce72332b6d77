"""Run the sweep of tests/test_ffn_attack.py up to a case, in one process, and print why the
certificate of that case fails there (it holds when the case is run alone)."""
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, "tests")
import test_ffn_attack as t  # noqa: E402

from exact import ExactOracle  # noqa: E402
from exact.errors import ExactAttentionError  # noqa: E402
from exact.ffn import ReLUFFN  # noqa: E402
from exact.learn import ffn_path, learn_ffn  # noqa: E402

seed, target, scaled = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "scaled"
keep = len(sys.argv) > 4 and sys.argv[4] == "keep"
if keep:
    orig = ffn_path.Line.through.__func__
    kept: list = []
    ffn_path.Line.through = classmethod(lambda cls, *a: kept.append(orig(cls, *a)) or kept[-1])
rng = np.random.default_rng(seed)
for case in range(target + 1):
    d = int(rng.integers(1, 7))
    net, kinds = t._planted(rng, d, int(rng.integers(1, 9)))
    if scaled:
        net = ReLUFFN([[x * Fraction(2) ** int(rng.integers(-80, 81)) for x in row] for row in net.A],
                      [x * Fraction(2) ** int(rng.integers(-80, 81)) for x in net.w])
    m = t._units(net) + int(rng.integers(0, 2))
    interior = bool(rng.integers(4) == 0)
    s = int(rng.integers(2**62))
    try:
        r = learn_ffn(ExactOracle(net), m=m, seed=s, checks=0, interior=interior)
    except ExactAttentionError:
        continue
    cert = t._round_trip(r.certificate) if case % 2 == 0 else r.certificate
    rep = cert.check()
    if not rep.holds:
        print("case", case, kinds, "m", m, "seed", s, "interior", interior, "paths", r.details["paths"])
        print("  ", rep.message[:300])
print("done", "keep-alive" if keep else "plain")
