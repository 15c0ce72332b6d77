"""Transformer sweep: planted FFNs under random W; flag a wrong FFN function or W without HIDDEN_UNITS
(truth within m), and certificates that fail or hold with an assumption stripped (through JSON)."""
import json
import sys
from dataclasses import replace
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.certify import certificate_from_json, certificate_to_json
from exact.errors import ExactAttentionError
from exact.io import model_from_json
from exact.learn import learn_transformer
from exact.learn.ffn import HIDDEN_UNITS
from exact.transformer import Transformer

from harness import planted, units_of

rng = np.random.default_rng(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
N = int(sys.argv[2]) if len(sys.argv) > 2 else 60
tally = {"cases": 0, "refused": 0, "seen": 0, "right": 0, "wrong stated": 0, "bad": 0}
for case in range(N):
    d = int(rng.integers(1, 5))
    net, kinds = planted(rng, d, max_units=int(rng.integers(1, 7)))
    W = [[Fraction(int(rng.integers(-4, 5)), int(rng.integers(1, 4))) for _ in range(d)] for _ in range(d)]
    T = Transformer(W, net.A, net.w)
    mu = units_of(net)
    m = [mu, mu, mu + 1][int(rng.integers(3))]
    seed = int(rng.integers(2**62))
    tally["cases"] += 1
    try:
        r = learn_transformer(ExactOracle(T), m=m, seed=seed, checks=int(rng.integers(0, 3)))
    except ExactAttentionError as e:
        tally["refused"] += 1
        if "too small" in str(e):
            print("FALSE REFUTATION?", case, kinds, m, seed, str(e)[:150], flush=True)
        continue
    right = r.model.ffn.function_form() == net.function_form() and r.model.W == T.W
    seen = HIDDEN_UNITS not in r.assumptions
    tally["seen"] += seen
    tally["right" if right else "wrong stated"] += 1
    if not right and seen:
        tally["bad"] += 1
        print("WRONG SEEN", case, kinds, m, seed, T.W, net.A, net.w, flush=True)
    cert = certificate_from_json(json.loads(json.dumps(certificate_to_json(r.certificate))), model_from_json=model_from_json)
    rep = cert.check()
    if not rep.holds:
        tally["bad"] += 1
        print("CERT FAILS", case, kinds, m, seed, rep.message[:200], flush=True)
        continue
    for a in r.assumptions:
        if a in cert.assumptions and replace(cert, assumptions=tuple(x for x in cert.assumptions if x != a)).check().holds:
            tally["bad"] += 1
            print("STRIPPED HOLDS", case, a, flush=True)
print(tally, flush=True)
