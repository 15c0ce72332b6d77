"""Why valid networks (units <= m) are refused: tally the error messages."""
import collections
import sys
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import learn_ffn

from harness import planted, units_of

rng = np.random.default_rng(int(sys.argv[1]))
N = int(sys.argv[2])
family = sys.argv[3]
why = collections.Counter()
examples = {}
for case in range(N):
    if family == "scale":
        d = int(rng.integers(2, 5))
        net, kinds = planted(rng, d, max_units=int(rng.integers(1, 6)))
        net = ReLUFFN([[x * Fraction(2) ** int(rng.integers(-80, 80)) for x in row] for row in net.A],
                      [x * Fraction(2) ** int(rng.integers(-80, 80)) for x in net.w])
    else:
        d = int(rng.integers(1, 7))
        net, kinds = planted(rng, d, max_units=int(rng.integers(1, 9)))
    mu = units_of(net)
    seed = int(rng.integers(2**62))
    try:
        learn_ffn(ExactOracle(net), m=mu, seed=seed, checks=0)
    except ExactAttentionError as e:
        key = type(e).__name__ + ": " + str(e)[:110]
        why[key] += 1
        examples.setdefault(key, (kinds, mu, seed, net.A, net.w))
for k, v in why.most_common():
    print(v, k)
    print("    e.g.", examples[k][:3])
