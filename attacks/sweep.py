"""Sweep learn_ffn over planted families with m = the truth's unit count (and m + 1), random seeds;
flag (a) a wrong function without HIDDEN_UNITS, (b) a certificate that fails, or holds after
stripping an assumption, through JSON."""
import json
import sys
import time
from dataclasses import replace
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.certify import certificate_from_json, certificate_to_json
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.io import model_from_json
from exact.learn import learn_ffn
from exact.learn.ffn import HIDDEN_UNITS

from harness import planted, units_of

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
N = int(sys.argv[2]) if len(sys.argv) > 2 else 100
family = sys.argv[3] if len(sys.argv) > 3 else "planted"
rng = np.random.default_rng(seed)
tally = {"cases": 0, "refused": 0, "seen": 0, "seen planted": 0, "wrong stated": 0, "right": 0}
bad = []


def make(rng):
    if family == "planted":
        d = int(rng.integers(1, 7))
        return planted(rng, d, max_units=int(rng.integers(1, 9)))
    if family == "scale":  # huge and tiny entries
        d = int(rng.integers(2, 5))
        net, kinds = planted(rng, d, max_units=int(rng.integers(1, 6)))
        A = [[x * Fraction(2) ** int(rng.integers(-80, 80)) for x in row] for row in net.A]
        w = [x * Fraction(2) ** int(rng.integers(-80, 80)) for x in net.w]
        return ReLUFFN(A, w), kinds + ["scaled"]
    if family == "lowd":  # d = 1, 2 with m > d
        d = int(rng.integers(1, 3))
        return planted(rng, d, max_units=int(rng.integers(1, 7)))
    raise SystemExit(family)


t0 = time.time()
for case in range(N):
    net, kinds = make(rng)
    mu = units_of(net)
    m = [mu, mu, mu + 1, max(mu - 1, 0)][int(rng.integers(4))]
    interior = bool(rng.integers(4) == 0)
    s = int(rng.integers(2**62))
    tally["cases"] += 1
    try:
        r = learn_ffn(ExactOracle(net), m=m, seed=s, checks=0, interior=interior)
    except ExactAttentionError as e:
        tally["refused"] += 1
        if mu <= m and "too small" in str(e):
            bad.append(("false refutation", case, kinds, m, s, interior, str(e)[:120], net.A, net.w))
            print("FALSE REFUTATION", case, kinds, m, s, interior, str(e)[:200], net.A, net.w, flush=True)
        continue
    right = r.model.function_form() == net.function_form()
    seen = HIDDEN_UNITS not in r.assumptions
    tally["right" if right else "wrong stated"] += 1
    if seen:
        tally["seen"] += 1
        tally["seen planted"] += bool(kinds)
    if not right and seen and mu <= m:
        bad.append(("WRONG SEEN", case, kinds, m, s, interior, net.A, net.w))
        print("WRONG SEEN", case, kinds, m, s, interior, net.A, net.w, flush=True)
    if case % 3 == 0:
        cert = certificate_from_json(json.loads(json.dumps(certificate_to_json(r.certificate))),
                                     model_from_json=model_from_json)
    else:
        cert = r.certificate
    rep = cert.check()
    if not rep.holds:
        bad.append(("cert fails", case, kinds, m, s, rep.message[:200]))
        print("CERT FAILS", case, kinds, m, s, interior, rep.message[:300], flush=True)
        continue
    for a in cert.assumptions:
        st = replace(cert, assumptions=tuple(x for x in cert.assumptions if x != a)).check()
        if st.holds and a in r.assumptions:
            bad.append(("stripped holds", case, a))
            print("STRIPPED HOLDS", case, kinds, m, s, a, flush=True)
print(family, seed, tally, "bad:", len(bad), f"{time.time() - t0:.0f}s", flush=True)
