"""Lift repro_idreuse's function to a ReLU network along the first search path of a chosen seed
(chosen against the network: this is about a valid network being refused, not a wrong result)."""
import sys
from fractions import Fraction

import numpy as np

from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import ffn_path, learn_ffn
from exact.learn.ffn import _path
from repro_idreuse import BPS

orig = ffn_path.Line.through.__func__
kept = []


def keep(on):
    ffn_path.Line.through = classmethod(lambda cls, *a: kept.append(orig(cls, *a)) or kept[-1]) if on else classmethod(orig)


def lifted(seed, d=3, extra=0):
    rng = np.random.default_rng(seed)
    p, q = _path(rng, d)
    D = [b - a for a, b in zip(p, q)]
    r2 = np.random.default_rng(seed + 1)
    A, w = [], []
    for b, k in BPS:
        x = [Fraction(pi) + Fraction(int(b.p), int(b.q)) * di for pi, di in zip(p, D)]
        while True:
            u = [Fraction(int(v)) for v in r2.integers(-9, 10, size=d)]
            # a = u - (u.x / x.x) x : orthogonal to x
            xx = sum(xi * xi for xi in x)
            ux = sum(ui * xi for ui, xi in zip(u, x))
            a = [ui - ux / xx * xi for ui, xi in zip(u, x)]
            aD = sum(ai * di for ai, di in zip(a, D))
            if aD:
                if aD < 0:
                    a, aD = [-ai for ai in a], -aD
                break
        A.append(a)
        w.append(Fraction(k) / abs(aD))
    return ReLUFFN(A, w)


for seed in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    net = lifted(seed)
    out = []
    for on in (False, True):
        keep(on)
        try:
            r = learn_ffn(ExactOracle(net), m=5, seed=seed, checks=0)
            out.append(("ok", r.queries, r.details["paths"], r.model.function_form() == net.function_form()))
        except ExactAttentionError as e:
            out.append(("err", type(e).__name__, str(e)[:150]))
        finally:
            keep(False)
            kept.clear()
    print(seed, out, flush=True)
