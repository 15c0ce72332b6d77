"""When a result says the unit level is identifiable, is the unit form the truth's?  (truth within m)"""
import sys

import numpy as np

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.learn import learn_ffn

from harness import planted, units_of

rng = np.random.default_rng(int(sys.argv[1]))
N = int(sys.argv[2])
t = {"cases": 0, "identifiable": 0, "bad": 0}
for case in range(N):
    d = int(rng.integers(1, 6))
    net, kinds = planted(rng, d, max_units=int(rng.integers(1, 9)))
    mu = units_of(net)
    m = mu + int(rng.integers(0, 2))
    try:
        r = learn_ffn(ExactOracle(net), m=m, seed=int(rng.integers(2**62)), checks=0)
    except ExactAttentionError:
        continue
    t["cases"] += 1
    if r.details["identifiable"]:
        t["identifiable"] += 1
        if r.model.unit_form() != net.unit_form():
            t["bad"] += 1
            print("UNIT FORM WRONG", case, kinds, m, net.A, net.w, flush=True)
print(t)
