"""Judge a learner's result on a corpus instance: exactly right, and within the query count.

The learner's signature (any callable named ``MODULE:FUNCTION``; documented in ``docs/verify.md``)::

    learn(oracle, *, theorem: str, hints: dict) -> dict

``oracle`` answers exactly: ``oracle.d`` is the token dimension, ``oracle.query(X)`` takes a
sequence X (a list of tokens, each a list of d numbers: ints, ``Fraction`` or ``"p/q"``
strings) and returns an answer with ``answer.decimal(digits)`` (a correct decimal string),
``answer.rational()`` (a ``Fraction`` when the answer is rational, else ``None``),
``answer.sympy()`` (the exact value), ``answer.ball(prec)`` (a rigorous ``arb`` ball) and
``float(answer)``.  ``oracle.query_batch(Xs)`` asks several at once; ``oracle.count`` is the
number answered so far.  Every answered query counts; a malformed one (wrong shape, not a
number) raises :class:`~exact.errors.ShapeError` or :class:`~exact.errors.InvalidNumber`, is not
answered and is not counted.

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

The learner runs in a process of its own (:mod:`exact.corpus.host`, :mod:`exact.corpus.proxy`):
the model, the count and this judge stay in the test process, which answers each query over
a pipe, so nothing the learner can reach in its own process refers to the model.  A learner
that returns nothing judgeable (it raises, skips, exits or its process ends) gets a
:class:`Verdict` saying so, never a pass.  What this does not defend against (the corpus
files themselves, timing, the answers' exact forms) is listed in ``docs/verify.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from ..errors import InvalidArgument, InvalidNumber
from ..numbers import to_fraction
from .load import CorpusInstance

__all__ = ["Verdict", "Unreadable", "OUTCOMES", "formula", "judge", "check_oracle"]

OUTCOMES = ("returned", "not implemented", "skipped", "raised", "no result")


@dataclass(frozen=True)
class Verdict:
    """How a learner did on one instance.

    ``outcome`` is ``"returned"`` when the learner returned a result and it was judged;
    otherwise the instance has no judged result: ``"not implemented"`` (the learner raised
    ``NotImplementedError``), ``"skipped"`` (it called ``pytest.skip`` or ``pytest.xfail``),
    ``"raised"`` (any other exception, ``pytest.fail``, ``pytest.exit``, ``sys.exit``) or
    ``"no result"`` (its process ended, left the protocol, or the instance never ran).  Only
    a returned result can be exact or meet the count.  ``queries`` counts the queries answered.
    """

    theorem: str
    instance: str
    exact: bool
    queries: int
    formula: int
    rule: str
    seconds: float
    message: str = ""
    outcome: str = "returned"
    output: str = field(default="", repr=False)

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise InvalidArgument(f"outcome: expected one of {', '.join(OUTCOMES)}, got {self.outcome!r}")
        if self.exact and self.outcome != "returned":
            raise InvalidArgument(f"exact: only a returned result can be exact, not one with outcome {self.outcome!r}")

    @property
    def returned(self) -> bool:
        """Whether the learner returned a result that was judged."""
        return self.outcome == "returned"

    @property
    def count_ok(self) -> bool:
        """A returned result whose answered queries meet the theorem's rule."""
        if not self.returned:
            return False
        return self.queries == self.formula if self.rule == "exact" else self.queries <= self.formula

    @property
    def passed(self) -> bool:
        return self.exact and self.count_ok


@dataclass(frozen=True)
class Unreadable:
    """A value of the learner's result that could not be sent as a number (the judge reports it in place)."""

    text: str


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
    if isinstance(x, Unreadable):
        raise _Wrong(f"{where}: {x.text}")
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
