"""Replay one case of tests/test_ffn_attack.py's sweep and show why its certificate fails."""
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, "tests")
from test_ffn_attack import _planted, _round_trip, _units  # noqa: E402

from exact import ExactOracle  # noqa: E402
from exact.ffn import ReLUFFN  # noqa: E402
from exact.learn import learn_ffn  # noqa: E402

seed, target, scaled = int(sys.argv[1]), int(sys.argv[2]), len(sys.argv) > 3
rng = np.random.default_rng(seed)
for case in range(target + 1):
    d = int(rng.integers(1, 7))
    net, kinds = _planted(rng, d, int(rng.integers(1, 9)))
    if scaled:
        net = ReLUFFN([[x * Fraction(2) ** int(rng.integers(-80, 81)) for x in row] for row in net.A],
                      [x * Fraction(2) ** int(rng.integers(-80, 81)) for x in net.w])
    units = _units(net)
    m = units + int(rng.integers(0, 2))
    interior = bool(rng.integers(4) == 0)
    s = int(rng.integers(2**62))
print("d", d, "kinds", kinds, "m", m, "units", units, "seed", s, "interior", interior)
print("A =", [[str(x) for x in row] for row in net.A])
print("w =", [str(x) for x in net.w])
r = learn_ffn(ExactOracle(net), m=m, seed=s, checks=0, interior=interior)
print("right", r.model.function_form() == net.function_form(), "seen", r.details["units_seen"], "paths", r.details["paths"])
print("model A", [[str(x) for x in row] for row in r.model.A], "w", [str(x) for x in r.model.w])
print("direct:", r.certificate.check().message[:400])
print("json:  ", _round_trip(r.certificate).check().message[:400])
