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

from ..errors import ExactAttentionError, InvalidArgument, InvalidNumber
from ..kinds import get_kind
from ..numbers import format_rational, to_fraction
from ..theorems import corpus_families
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
    """The theorem's query count for this instance and its rule (``"exact"`` or ``"at most"``), from
    the theorem table (:mod:`exact.theorems`).

    >>> formula("4.1", 3, {}), formula("kkg", 2, {"heads": 2})
    ((12, 'exact'), (29, 'exact'))
    """
    family = corpus_families().get(theorem)
    if family is None:
        raise InvalidArgument(f"theorem: expected one of {', '.join(corpus_families())}, got {theorem!r}")
    return family.count(d, hints), family.rule


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


def _plain(x, where: str):
    """The learner's answer with every number as a plain exact ``"p/q"`` (lists and dicts kept)."""
    if isinstance(x, dict):
        return {k: _plain(v, f"{where}.{k}" if where else str(k)) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(x)]
    return format_rational(_num(x, where))


def _difference(got, want, path: str = "") -> str | None:
    """Where two canonical forms (as JSON) first differ, as text."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in want:
            diff = _difference(got.get(key), want[key], f"{path}.{key}" if path else key)
            if diff:
                return diff
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return f"{path}: {len(got)} returned, the reference has {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            diff = _difference(g, w, f"{path}[{k}]")
            if diff:
                return diff
        return None
    if got != want:
        try:
            off = f" (off by {float(Fraction(got) - Fraction(want)):.3g})"
        except (TypeError, ValueError, ZeroDivisionError):
            off = ""
        return f"{path} = {got} but the reference is {want}{off}"
    return None


def judge(instance: CorpusInstance, returned) -> tuple[bool, str]:
    """(exact, message) for the learner's ``returned`` dict on ``instance``.

    The answer is read as a model of the family's kind (its ``fields``, exact numbers) and
    compared with the instance's model by their ``canonical()`` forms, the form results are
    compared in everywhere (:mod:`exact.kinds`); a difference is named by where the two
    canonical forms first differ.
    """
    family = corpus_families()[instance.theorem]
    kind = get_kind(family.kind)
    try:
        if not isinstance(returned, dict):
            raise _Wrong("the learner must return a dict")
        missing = [k for k in family.fields if k not in returned]
        if missing:
            raise _Wrong(f"the learner must return a dict with {missing[0]!r}")
        data = _plain({k: returned[k] for k in family.fields}, "")
        learned = kind.model_class.from_json({"kind": family.kind, "d": instance.d, **data})
    except _Wrong as e:
        return False, f"malformed result: {e}"
    except ExactAttentionError as e:
        return False, f"malformed result: {e}"
    got, want = learned.canonical(), instance.model.canonical()
    if got == want:
        return True, f"equal to the reference as {family.kind} canonical forms"
    return False, _difference(_json(got), _json(want)) or "the canonical forms differ"


def _json(form):
    return form.to_json() if hasattr(form, "to_json") else form


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
