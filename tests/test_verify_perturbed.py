"""Every verify claim can fail: break what it exercises, and the claim reports FAIL.

Each claim of the registry (at the quick budget) is listed in ``PERTURBATIONS`` with the
defects that must make it fail.  The defects are realistic ones, injected from outside:

* ``value``: the learner returns a model off by δ in one entry (δ = 1e-30 for exact claims,
  1 for claims that check a bound);
* ``count``: the learner asks one query more than it reports (or reports one fewer);
* ``swallow``: the learner returns instead of raising the error the claim expects;
* ``certifier``: certificates check as holding whatever they hold;
* a proof's building block off by 1e-30, a false statement (Lemma A.1 at 4.25), a
  construction that changes the map, a prover whose witness does not separate.

A claim missing from the table fails the coverage test, so a new claim needs a way to fail.
"""

from __future__ import annotations

import dataclasses
import functools
from fractions import Fraction

import pytest
import sympy

from exact import registry
from exact.errors import ExactAttentionError
from exact.verify import THEOREMS, claims

EPS = Fraction(1, 10**30)


def _nudge(model, delta):
    """The model with one entry moved by ``delta`` (a learner that is slightly wrong)."""
    from exact.ffn import ReLUFFN
    from exact.models import SingleHead
    from exact.multihead import MultiHead
    from exact.transformer import Transformer

    def bump(M):
        M = [list(r) for r in M]
        M[0][0] += delta
        return M

    if isinstance(model, SingleHead):
        return SingleHead(bump(model.W), list(model.v), model.c, model.b)
    if isinstance(model, MultiHead):
        first, *rest = model.heads
        return MultiHead([SingleHead(bump(first.W), list(first.v), first.c)] + list(rest), d=model.d, b=model.b)
    if isinstance(model, ReLUFFN):
        return ReLUFFN(bump(model.A), list(model.w), model.a, model.b)
    if isinstance(model, Transformer):
        return Transformer(bump(model.W), [list(r) for r in model.A], list(model.w))
    raise TypeError(type(model).__name__)


def _value(delta):
    def wrap(learn, name):
        def wrapped(oracle, **kw):
            r = learn(oracle, **kw)
            model = _nudge(r.model, delta)
            details = dict(r.details)
            if "function_form" in details:  # the FFN learner also reports the function it learned
                net = getattr(model, "ffn", model)
                details["function_form"] = net.function_form()
            return dataclasses.replace(r, model=model, details=details)
        return wrapped
    return wrap


def _count(learn, name):
    def wrapped(oracle, **kw):
        if name == "threshold":  # it builds its own oracle: it under-reports instead
            r = learn(oracle, **kw)
            return dataclasses.replace(r, queries=r.queries - 1)
        oracle.query([[0] * oracle.d])
        return learn(oracle, **kw)
    return wrapped


def _doubled(learn, name):
    """The fast plan asking as many queries again (a learner that lost its savings)."""
    def wrapped(oracle, **kw):
        r = learn(oracle, **kw)
        for _ in range(r.queries):
            oracle.query([[0] * oracle.d])
        return r
    return wrapped


def _swallow(learn, name):
    def wrapped(oracle, **kw):
        try:
            return learn(oracle, **kw)
        except ExactAttentionError:
            return None  # a learner that does not refuse
    return wrapped


def _learners(monkeypatch, names, transform):
    original = registry.get

    def get(name):
        spec = original(name)
        return dataclasses.replace(spec, learn=transform(spec.learn, name)) if name in names else spec

    monkeypatch.setattr(registry, "get", get)


def _certifier(monkeypatch):
    from exact import certify

    real = certify.Certificate.check

    def check(self, *a, **k):
        report = real(self, *a, **k)
        return dataclasses.replace(report, holds=True)

    monkeypatch.setattr(certify.Certificate, "check", check)


def _broken_inversion(monkeypatch):
    """The residual identity with K = V: the inverse of I + V forgotten."""
    import proofs.inversion as inv

    real = inv._checks
    monkeypatch.setattr(inv, "_checks", lambda d, m, N, broken: real(d, m, N, True))


def _proof_block(module, name):
    """A building block of a symbolic proof, off by 1e-30."""
    def patch(monkeypatch):
        import importlib

        mod = importlib.import_module(f"proofs.{module}")
        real = getattr(mod, name)

        def bad(*a, **k):
            out = real(*a, **k)
            if isinstance(out, list):
                return [out[0] + sympy.Rational(1, 10**30)] + out[1:]
            return out + sympy.Rational(1, 10**30)

        monkeypatch.setattr(mod, name, bad)
    return patch


def _false_lemma_a1(monkeypatch):
    import proofs

    monkeypatch.setattr(proofs, "prove_lemma_a1", functools.partial(proofs.prove_lemma_a1, bound=Fraction(17, 4)))


def _false_pair_pole(monkeypatch):
    """The pair line's pole R_h = r_h/(1 + t_h) off by 1e-30 (a false statement)."""
    import proofs

    pole = lambda r, t: r / (1 + t) + sympy.Rational(1, 10**30)  # noqa: E731
    monkeypatch.setattr(proofs, "prove_pair_line", functools.partial(proofs.prove_pair_line, pole=pole))


def _coq_rejects(monkeypatch):
    """Coq rejects a file (as it does a false variant of a statement)."""
    from proofs import coq_check

    failed = coq_check.CoqCheck("failed", "decoding.v does not check: Error: Unable to unify", "8.16.1")
    monkeypatch.setattr(coq_check, "coq_status", lambda: failed)


def _bad_construction(monkeypatch):
    from proofs import multihead as mh

    real = mh.construct
    monkeypatch.setattr(mh, "construct", lambda model, kind, **k: _nudge_v(real(model, kind, **k)))


def _nudge_v(model):
    from exact.multihead import MultiHead

    first, *rest = model.heads
    v = list(first.v)
    v[0] += EPS
    return MultiHead([(first.W, v)] + [(h.W, h.v) for h in rest], d=model.d)


def _bad_family(monkeypatch):
    from proofs import multihead as mh

    real = mh.symbolic_family

    def family(*a):
        A, B = real(*a)
        W, v = B[0]
        return A, [(W, v + sympy.ones(*v.shape) * sympy.Rational(1, 10**30))] + B[1:]

    monkeypatch.setattr(mh, "symbolic_family", family)


def _blind_witness(monkeypatch):
    from proofs import multihead as mh

    real = mh.prove_equivalent

    def prove(a, b, **k):
        p = real(a, b, **k)
        if p.details.get("witness") is not None:
            d = len(p.details["witness"][0])
            p = dataclasses.replace(p, details={**p.details, "witness": [[0] * d]})
        return p

    monkeypatch.setattr(mh, "prove_equivalent", prove)


def _bad_bias_value(monkeypatch):
    """The normal form's token value v^T x + b off by 1e-30."""
    from proofs import biases

    real = biases._Head.value
    monkeypatch.setattr(biases._Head, "value", lambda self, x: real(self, x) + sympy.Rational(1, 10**30))


def L(names, transform):
    names = (names,) if isinstance(names, str) else names
    return lambda monkeypatch: _learners(monkeypatch, set(names), transform)


EXACT, BOUND, COUNT, SWALLOW = _value(EPS), _value(Fraction(1)), _count, _swallow
NOISY = ("noisy-paper", "noisy-frame", "noisy-refine")

#: claim name prefix -> the defects that must each make it fail
PERTURBATIONS = {
    "Thm 4.1: exact W, v in d²+d queries (certified)": [L("single-head", EXACT), L("single-head", COUNT)],
    "Thm 4.1: exact W, v in d²+d queries (symbolic)": [L("single-head", EXACT), L("single-head", COUNT)],
    "Thm 4.1: grid heads bit for bit": [L("single-head", EXACT), L("single-head", COUNT)],
    "Thm 4.1: float64 oracle + float32 grid": [L("single-head", EXACT), L("single-head", COUNT)],
    "Thm 4.1: float mode error <= 1e-9": [L("single-head", BOUND), L("single-head", COUNT)],
    "Thm 4.1: float mode error <= 1e-6": [L("single-head", BOUND), L("single-head", COUNT)],
    "v = 0 raises NotIdentifiable": [L("single-head", SWALLOW), L("single-head", COUNT)],
    "tampered certificate is rejected": [_certifier],
    "out-of-range answer raises OracleInconsistent": [L("single-head", SWALLOW)],
    "Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (certified)": [L("low-rank", EXACT), L("low-rank", COUNT)],
    "Thm 5.1 sketch (beyond): float answers": [L("low-rank", BOUND), L("low-rank", COUNT)],
    "Thm 5.1 sketch: exact W, v in 2rd−r²+d queries (symbolic)": [L("low-rank", EXACT), L("low-rank", COUNT)],
    "Thm 5.1 sketch, rank found": [L("low-rank", EXACT), L("low-rank", COUNT)],
    "Thm 5.1 sketch with biases (beyond)": [L("low-rank", EXACT), L("low-rank", COUNT)],
    "Thm 5.1 CS learner": [L("low-rank-cs", BOUND), L("low-rank-cs", COUNT)],
    "Thm 5.1 CS phase transition": [L("low-rank-cs", BOUND), L("low-rank-cs", COUNT)],
    "Thm 6.1 paper, ": [L("noisy-paper", BOUND), L("noisy-paper", COUNT)],
    "Thm 6.1 frame, ": [L("noisy-frame", BOUND), L("noisy-frame", COUNT)],
    "Thm 6.1 refine, ": [L("noisy-refine", BOUND), L("noisy-refine", COUNT)],
    "Thm 6.1 paper: bound <=": [L("noisy-paper", BOUND), L("noisy-paper", COUNT)],
    "Thm 6.1 frame beats paper": [L("noisy-frame", BOUND)],
    "Thm 6.1 refine (2x queries)": [L("noisy-refine", BOUND), L("noisy-refine", COUNT)],
    "App. B threshold": [L("threshold", BOUND), L("threshold", COUNT)],
    "Prop 7.1: constructions differ": [_bad_construction],
    "Prop 7.1: symbolic families": [_bad_family],
    "Prop 7.1: non-equivalent pairs refuted": [_blind_witness],
    "KKG26: canonical form exactly": [L("multi-head", EXACT), L("multi-head", COUNT)],
    "KKG26: symbolic mode": [L("multi-head", EXACT), L("multi-head", COUNT)],
    "KKG26 (beyond): fast plan exact": [L("multi-head-fast", EXACT), L("multi-head-fast", COUNT)],
    "KKG26 (beyond): fast plan median": [L("multi-head-fast", EXACT), L("multi-head-fast", _doubled)],
    "KKG26 (beyond): pair plan exact": [L("multi-head-pairs", EXACT), L("multi-head-pairs", COUNT)],
    "KKG26: a too-small H bound": [L("multi-head", SWALLOW)],
    "KKG26: float mode": [L("multi-head", BOUND), L("multi-head", COUNT)],
    "KKG26 with biases (beyond): canonical form exactly": [L("multi-head", EXACT), L("multi-head", COUNT)],
    "KKG26 with biases (beyond): fast plan exact": [L("multi-head-fast", EXACT), L("multi-head-fast", COUNT)],
    "KKG26 with biases (beyond): symbolic mode": [L("multi-head", EXACT), L("multi-head", COUNT)],
    "KKG26 with biases (beyond): the bias-free plan refuses": [L("multi-head", SWALLOW), _certifier],
    "FFN: exact canonical form": [L("ffn", EXACT), L("ffn", COUNT)],
    "FFN edge cases": [L("ffn", EXACT)],
    "FFN with biases (beyond)": [L("ffn-biased", EXACT), L("ffn-biased", COUNT)],
    "Transformer: exact W and FFN": [L("transformer", EXACT), L("transformer", COUNT)],
    "Transformer: Aᵀw = 0": [L("transformer", SWALLOW)],
    "Transformer with biases (beyond)": [L("transformer-biased", EXACT), L("transformer-biased", COUNT)],
    "Transformer inversion": [_broken_inversion],
    "Logit primitive": [_proof_block("logit", "_sigmoid"), _coq_rejects],
    "Oddness of attention": [_proof_block("oddness", "_attention_average")],
    "Transformer odd part": [_proof_block("transformer", "_attention_average")],
    "Token copy": [_proof_block("token_copy", "_weights")],
    "Lemma A.1": [_false_lemma_a1, _coq_rejects],
    "Theorem 4.1 decoding": [_coq_rejects],
    "Proposition 7.1: f is the map of its canonical form": [_bad_family, _coq_rejects],
    "Pair line": [_false_pair_pole],
    "Biases: exact W, c, v, b in d²+2d+1 queries": [L("single-head-biased", EXACT), L("single-head-biased", COUNT)],
    "Biases: float64 oracle + float32 grid": [L("single-head-biased", EXACT), L("single-head-biased", COUNT)],
    "Biases: float mode error": [L("single-head-biased", BOUND), L("single-head-biased", COUNT)],
    "Biases: v = 0 raises NotIdentifiable": [L("single-head-biased", SWALLOW), L("single-head-biased", COUNT)],
    "Biases: a certificate with c or b tampered": [_certifier],
    "Biases: torch's head with biases": [_bad_bias_value],
}


def _entry(name):
    keys = [k for k in PERTURBATIONS if name.startswith(k)]
    assert len(keys) == 1, f"claim {name!r}: {len(keys)} entries in PERTURBATIONS"
    return PERTURBATIONS[keys[0]]


ALL = [(th, c.name) for th in THEOREMS for c in claims((th,), budget="quick")]


def test_every_claim_has_a_way_to_fail():
    for _, name in ALL:
        assert _entry(name)
    used = {k for k in PERTURBATIONS if any(n.startswith(k) for _, n in ALL)}
    assert used == set(PERTURBATIONS), set(PERTURBATIONS) - used


@pytest.mark.parametrize("theorem, name", ALL, ids=[n[:48] for _, n in ALL])
def test_the_claim_holds_and_each_defect_makes_it_fail(monkeypatch, theorem, name):
    (claim,) = [c for c in claims((theorem,), budget="quick") if c.name == name]
    if claim.skip_reason:
        pytest.skip(claim.skip_reason)
    n = len(claim.instances)
    first = [k for k in range(n) if k < 3 or (k == n - 1 and "phase" in name)]  # the phase claim: C = 3.5 too
    assert claim.report([claim.run_instance(k) for k in first]).holds  # unperturbed, it holds
    for n, perturb in enumerate(_entry(name)):
        with monkeypatch.context() as m:
            perturb(m)
            (broken,) = [c for c in claims((theorem,), budget="quick") if c.name == name]  # built under the defect
            report = broken.report([broken.run_instance(k) for k in first])
        assert report.status == "FAIL", f"defect {n} of {name!r} went unnoticed: {report.outcomes}"
