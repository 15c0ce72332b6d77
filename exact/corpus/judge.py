"""Run a learner on a corpus instance and judge it: exactly right, and within the query count.

The learner's signature (any callable; documented in ``docs/corpus.md``)::

    learn(oracle, *, theorem: str, hints: dict) -> dict

``oracle`` answers exactly: ``oracle.d`` is the token dimension, ``oracle.query(X)`` takes a
sequence X (a list of tokens, each a list of d numbers: ints, ``Fraction`` or ``"p/q"``
strings) and returns an answer with ``answer.decimal(digits)`` (a correct decimal string),
``answer.rational()`` (a ``Fraction`` when the answer is rational, else ``None``),
``answer.sympy()`` (the exact value), ``answer.ball(prec)`` (a rigorous ``arb`` ball) and
``float(answer)``.  ``oracle.query_batch(Xs)`` asks several at once.  Every query counts.

``theorem`` is one of ``"4.1"``, ``"5.1"``, ``"kkg"``, ``"ffn"``, ``"transformer"``; ``hints``
holds what the theorem grants the learner (``rank``, ``heads`` or ``m``).  The returned dict
holds exact numbers (int, ``Fraction`` or ``"p/q"``; floats are taken at their exact binary
value):

* ``"4.1"``, ``"5.1"``: ``{"W": d×d, "v": d}``, compared entry by entry with ``==``;
* ``"kkg"``: ``{"heads": [{"W", "v"}, ...]}``, compared as canonical forms;
* ``"ffn"``: ``{"A": m×d, "w": m}``, compared as functions (their canonical function forms);
* ``"transformer"``: ``{"W", "A", "w"}``: W with ``==``, the network as a function.

The count rule is the theorem's: exactly d² + d (4.1), 2rd − r² + d (5.1), 4Hd² − 2H + 1
(kkg); at most (m+1)(d−2) + 10m + 32 (ffn), plus 2(d² + d) (transformer).

The learner gets a proxy with ``d``, ``query`` and ``query_batch`` only, which counts every
query itself and holds no attribute leading to the model.  This keeps honest learners
honest; it is no sandbox: code running in the same process can always reach the judge, so
the corpus checks learners that are trying to be right, not adversaries.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import InvalidArgument, InvalidNumber
from ..numbers import to_fraction
from .load import CorpusInstance

__all__ = ["Verdict", "formula", "judge", "run_instance", "check_oracle"]


@dataclass(frozen=True)
class Verdict:
    """How a learner did on one instance."""

    theorem: str
    instance: str
    exact: bool
    queries: int
    formula: int
    rule: str
    seconds: float
    message: str = ""

    @property
    def count_ok(self) -> bool:
        return self.queries == self.formula if self.rule == "exact" else self.queries <= self.formula

    @property
    def passed(self) -> bool:
        return self.exact and self.count_ok


def formula(theorem: str, d: int, hints: dict) -> tuple[int, str]:
    """The theorem's query count for this instance and its rule (``"exact"`` or ``"at most"``)."""
    ffn = (hints.get("m", 0) + 1) * (d - 2) + 10 * hints.get("m", 0) + 32
    if theorem == "4.1":
        return d * d + d, "exact"
    if theorem == "5.1":
        r = hints["rank"]
        return 2 * r * d - r * r + d, "exact"
    if theorem == "kkg":
        H = hints["heads"]
        return 4 * H * d * d - 2 * H + 1, "exact"
    if theorem == "ffn":
        return ffn, "at most"
    if theorem == "transformer":
        return ffn + 2 * (d * d + d), "at most"
    raise InvalidArgument(f"theorem: expected one of 4.1, 5.1, kkg, ffn, transformer, got {theorem!r}")


class _Wrong(Exception):
    """The learner's answer is malformed (reported as a failed instance, naming the field)."""


def _num(x, where: str) -> Fraction:
    if isinstance(x, (list, tuple, dict)):
        raise _Wrong(f"{where}: expected a number, got a {type(x).__name__}")
    try:
        q = to_fraction(x, name=where)
    except InvalidNumber as e:
        raise _Wrong(str(e)) from None
    return Fraction(int(q.numerator), int(q.denominator))  # a plain Fraction: a subclass's == is not trusted


def _mat(x, where: str) -> list:
    if not isinstance(x, (list, tuple)) or not all(isinstance(r, (list, tuple)) for r in x):
        raise _Wrong(f"{where}: expected a list of rows")
    return [[_num(v, f"{where}[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(x)]


def _vec(x, where: str) -> list:
    if not isinstance(x, (list, tuple)):
        raise _Wrong(f"{where}: expected a list")
    return [_num(v, f"{where}[{i}]") for i, v in enumerate(x)]


def _field(returned, key: str):
    if not isinstance(returned, dict) or key not in returned:
        raise _Wrong(f"the learner must return a dict with {key!r}")
    return returned[key]


def _first_difference(name: str, got, want) -> str | None:
    """Where two equal-shaped nested lists of Fractions first differ, as text."""
    if len(got) != len(want):
        return f"{name} has {len(got)} entries, the reference {len(want)}"
    for k, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, (list, tuple)):
            diff = _first_difference(f"{name}[{k}]", g, w)
            if diff:
                return diff
        elif g != w:
            return f"{name}[{k}] = {g} but the reference is {w} (off by {float(g - w):.3g})"
    return None


def judge(instance: CorpusInstance, returned) -> tuple[bool, str]:
    """(exact, message) for the learner's ``returned`` dict on ``instance``."""
    from ..canonical import canonical_form
    from ..ffn import ReLUFFN
    from ..multihead import MultiHead

    truth = instance.model
    try:
        if instance.theorem in ("4.1", "5.1"):
            W, v = _mat(_field(returned, "W"), "W"), _vec(_field(returned, "v"), "v")
            diff = _first_difference("W", W, [list(r) for r in truth.W]) or _first_difference("v", v, list(truth.v))
            return diff is None, diff or "W and v equal the reference exactly"
        if instance.theorem == "kkg":
            heads = _field(returned, "heads")
            if not isinstance(heads, (list, tuple)) or not all(isinstance(h, dict) for h in heads):
                raise _Wrong("heads: expected a list of {'W', 'v'} objects")
            parsed = [(_mat(_field(h, "W"), f"heads[{k}].W"), _vec(_field(h, "v"), f"heads[{k}].v"))
                      for k, h in enumerate(heads)]
            got = canonical_form(MultiHead(parsed, d=instance.d)) if parsed else None
            want = canonical_form(truth)
            if got == want:
                return True, f"canonical form equal ({want.H} head(s))"
            return False, _kkg_difference(got, want)
        if instance.theorem == "ffn":
            net = ReLUFFN(_mat(_field(returned, "A"), "A"), _vec(_field(returned, "w"), "w"))
            ok = net.d == truth.d and net.function_form() == truth.function_form()
            return ok, "the same function" if ok else "a different function (canonical function forms differ)"
        W = _mat(_field(returned, "W"), "W")
        diff = _first_difference("W", W, [list(r) for r in truth.W])
        if diff:
            return False, diff
        net = ReLUFFN(_mat(_field(returned, "A"), "A"), _vec(_field(returned, "w"), "w"))
        ok = net.d == truth.d and net.function_form() == truth.ffn.function_form()
        return ok, "W exactly, the same network" if ok else "W exactly, but a different network"
    except _Wrong as e:
        return False, f"malformed result: {e}"
    except InvalidArgument as e:
        return False, f"malformed result: {e}"


def _kkg_difference(got, want) -> str:
    if got is None:
        return f"no heads returned; the reference has {want.H}"
    if got.H != want.H:
        return f"{got.H} canonical head(s) returned, the reference has {want.H}"
    for k, (g, w) in enumerate(zip(got.heads, want.heads)):
        diff = _first_difference(f"head {k}: W", [list(r) for r in g.W], [list(r) for r in w.W]) or \
            _first_difference(f"head {k}: v", list(g.v), list(w.v))
        if diff:
            return diff
    return "canonical forms differ"


def check_oracle(instance: CorpusInstance, digits: int = 45) -> str | None:
    """Why this package's exact oracle disagrees with the corpus's recorded answers, or ``None``.

    The corpus was computed without this package; agreement to ``digits`` significant digits
    on every recorded query cross-checks the evaluation the learners are given.
    """
    import mpmath

    from ..oracles import ExactOracle

    oracle = ExactOracle(instance.model)
    for k, q in enumerate(instance.queries):
        got = oracle.query([list(r) for r in q.X]).decimal(digits + 5)
        with mpmath.workdps(digits + 20):
            a, b = mpmath.mpf(got), mpmath.mpf(q.decimal)
            scale = max(abs(b), mpmath.mpf(10) ** -(digits + 5))
            if abs(a - b) > mpmath.mpf(10) ** -digits * scale:
                return f"{instance.name}: query {k}: this package answers {got[:30]}…, the corpus {q.decimal[:30]}…"
    return None


def run_instance(learn, instance: CorpusInstance) -> Verdict:
    """Run ``learn`` on a fresh counted oracle of ``instance`` and judge the result."""
    from ..oracles import ExactOracle

    oracle, count = _proxy(ExactOracle(instance.model))
    want, rule = formula(instance.theorem, instance.d, instance.hints)
    t = time.perf_counter()
    try:
        returned = learn(oracle, theorem=instance.theorem, hints=dict(instance.hints))
    except Exception as e:  # the learner's failure is the instance's failure, reported with the instance
        return Verdict(instance.theorem, instance.name, False, count(), want, rule, time.perf_counter() - t,
                       f"the learner raised {type(e).__name__}: {e}"[:400])
    seconds = time.perf_counter() - t
    exact, message = judge(instance, returned)
    return Verdict(instance.theorem, instance.name, exact, count(), want, rule, seconds, message)


class CorpusOracle:
    """What a corpus learner sees: ``d``, ``query(X)``, ``query_batch(Xs)``; every query counted."""

    __slots__ = ("d", "query", "query_batch")

    d: int
    query: Any
    query_batch: Any


def _proxy(oracle):
    """A :class:`CorpusOracle` over ``oracle`` and a function returning how many queries it passed on."""
    asked = [0]

    def query(X):
        asked[0] += 1
        return oracle.query(X)

    def query_batch(Xs):
        Xs = list(Xs)
        asked[0] += len(Xs)
        return oracle.query_batch(Xs)

    proxy = CorpusOracle()
    proxy.d, proxy.query, proxy.query_batch = oracle.d, query, query_batch
    return proxy, lambda: asked[0]
