import json
from dataclasses import replace
from fractions import Fraction

from exact import ExactOracle
from exact.certify import certificate_from_json, certificate_to_json
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.io import model_from_json
from exact.learn import learn_ffn, learn_transformer
from exact.learn.ffn import HIDDEN_UNITS, PATH_SEED, at_most
from exact.transformer import Transformer


def rt(cert):
    return certificate_from_json(json.loads(json.dumps(certificate_to_json(cert))), model_from_json=model_from_json)


def report(name, cert):
    try:
        rep = rt(cert).check()
        print(f"{name:60s} holds={rep.holds}  {'' if rep.holds else rep.message[:100]}")
    except ExactAttentionError as e:
        print(f"{name:60s} rejected: {str(e)[:100]}")


net = ReLUFFN([[1, 2, 0], [0, -1, 3], [2, 1, 1]], [1, Fraction(-1, 2), 2])
r = learn_ffn(ExactOracle(net), m=3, seed=5, checks=0)
c = r.certificate
print("honest seen:", r.details["units_seen"], r.assumptions)
report("honest", c)
report("m -> 4", replace(c, conditions={**c.conditions, "m": 4}, assumptions=c.assumptions + (at_most(4),)))
report("m -> 2", replace(c, conditions={**c.conditions, "m": 2}, assumptions=c.assumptions + (at_most(2),)))
report("seed -> 6", replace(c, conditions={**c.conditions, "seed": 6}))
report("drop PATH_SEED", replace(c, assumptions=tuple(a for a in c.assumptions if a != PATH_SEED)))
report("interior added", replace(c, conditions={**c.conditions, "interior": True}))
report("retries 0", replace(c, conditions={**c.conditions, "retries": 0}))
# the not-seen run's certificate (no m), with the check path's queries appended and m added
r0 = learn_ffn(ExactOracle(net), seed=5, checks=0)
c0 = r0.certificate
report("no m: HIDDEN stripped", replace(c0, assumptions=tuple(a for a in c0.assumptions if a != HIDDEN_UNITS)))
report("no m + m=3 + transcript of the m run, HIDDEN stripped",
       replace(c0, transcript=c.transcript, conditions={**c0.conditions, "m": 3},
               assumptions=tuple(a for a in c0.assumptions if a != HIDDEN_UNITS) + (at_most(3),)))
# a model that agrees on the transcript but differs elsewhere: add a unit on a hyperplane the transcript never crosses
# (a cancelled pair: linear, so no answer changes; unit count goes up, function is the same)
pair = ReLUFFN(list(net.A) + [[5, 5, 5], [-5, -5, -5]], list(net.w) + [1, -1])
report("model + linear pair (function changes)", replace(c, model=pair))
# Transformer: swap W
T = Transformer([[1, 0, 0], [0, 1, 0], [1, 0, 1]], net.A, net.w)
rt_ = learn_transformer(ExactOracle(T), m=3, seed=5, checks=0)
ct = rt_.certificate
print("transformer seen:", rt_.details["units_seen"])
report("transformer honest", ct)
report("transformer W changed", replace(ct, model=Transformer([[1, 0, 0], [0, 1, 0], [1, 0, 2]], net.A, net.w)))
report("transformer HIDDEN? strip at_most", replace(ct, assumptions=tuple(a for a in ct.assumptions if a != at_most(3))))
report("transformer cert relabelled ffn", replace(ct, learner="ffn"))
