"""Oracles: black boxes that answer value queries, count them and keep a transcript.

Every oracle answers ``query(X)`` with ``f(X)`` and counts queries *per instance*.
It records the longest sequence asked and a transcript of ``(X, answer)`` pairs that
can be replayed (:mod:`exact.certify`) and serialised (:mod:`exact.io`).  An
optional ``budget`` makes the oracle raise :class:`QueryBudgetExceeded` instead of
answering past it.

Oracles
-------
:class:`ExactOracle`
    Exact real answers (:class:`ExactAnswer`) for a model with rational parameters:
    refinable to any precision as rigorous balls; refinement is not a new query.
:class:`CallableOracle`
    Wraps any Python function ``X -> number`` (float, mpmath ``mpf``, Fraction,
    sympy number, a 0-d torch tensor...) with a declared absolute accuracy.  This is
    how the library is pointed at a real model.
:class:`FloatOracle`
    float64 answers of a model evaluated with numpy, vectorised over batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any
from collections.abc import Callable
import math
import operator

import numpy as np
from flint import arb, ctx, fmpq

from .errors import InvalidArgument, InvalidNumber, OracleInconsistent, QueryBudgetExceeded, ShapeError
from .expfield import ExpPoly, ExpRatio, ExpSum, softmax2_approx
from .floateval import evaluate_float, evaluate_sequences
from .numbers import exact_rational, to_fmpq, to_fraction
from .sequences import Sequence, as_sequence, is_float64

__all__ = [
    "BaseOracle",
    "ExactOracle",
    "CallableOracle",
    "FloatOracle",
    "ExactAnswer",
    "Query",
    "answer_ball",
    "answer_equals",
    "answer_difference",
    "answer_equals_logistic",
    "answer_floats",
    "FloatAnswer",
]


class ExactAnswer:
    """The exact real answer of an exact oracle.

    Learners read it only through :meth:`ball` (a rigorous ``arb`` ball at any
    precision; refining is *not* a new query), :meth:`sympy` and ``float()``, and ask
    whether it equals a candidate with :func:`answer_equals` or
    :func:`answer_equals_logistic` beside it.  Its exp-polynomial form is reserved for
    those two predicates and for :mod:`exact.certify`.
    """

    __slots__ = ("__form", "_cache")

    def __init__(self, form):
        # ``form`` is an exp-ratio (or a sum of them), or — the compact form of the
        # logit primitive's answers, a quarter of the memory in a large transcript —
        # the tuple ``(s1, c1, s2, c2)`` of a two-token softmax (c1 e^s1 + c2 e^s2)/(e^s1 + e^s2).
        # Equality of answers is decided on this form, so it must be the library's own
        # types all the way down (exact types: a subclass could decide equality itself).
        if not _valid_form(form):
            raise InvalidArgument(
                "ExactAnswer: expected an ExpRatio, an ExpSum or a tuple (s1, c1, s2, c2) of flint fmpq "
                f"in normal form, got {type(form).__name__}"
            )
        self.__form = form
        self._cache: tuple[int, arb] | None = None

    def ball(self, prec: int) -> arb:
        """A rigorous ball containing the answer, computed at ``prec`` bits."""
        if self._cache is not None and self._cache[0] >= prec:
            return self._cache[1]
        if prec <= 256:  # cheap to recompute: not worth holding a ball per answer in a large transcript
            return self.__value().ball(prec)
        b = self.__value().ball(prec)
        self._cache = (prec, b)
        return b

    def sympy(self):
        """The answer as an exact sympy expression (sums of ``c·exp(q)``)."""
        return self.__value().sympy()

    def decimal(self, digits: int = 50) -> str:
        """The answer as a decimal string of ``digits`` significant digits, every one of them correct
        (from a rigorous ball; no library types needed to read it).

        >>> from exact.models import SingleHead
        >>> ExactOracle(SingleHead([[0]], [1])).query([[1], [3]]).decimal(20)
        '2.0000000000000000000'
        """
        if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 100_000:
            raise InvalidArgument(f"digits: expected an integer in 1..100000, got {digits!r}")
        prec = int(digits * 3.33) + 64
        while True:
            with ctx.workprec(prec):
                b = self.ball(prec)
                text = b.str(digits, radius=False, more=False)
                if b.rad() == 0 or b.rad() * 10 ** (digits + 2) < abs(b.mid()) or b.is_zero():
                    return text
            prec *= 2
            if prec > 1 << 20:
                raise InvalidArgument(f"digits: cannot resolve {digits} digits of this answer")

    def rational(self) -> Fraction | None:
        """The answer as an exact Fraction when it is rational (a ReLU network's answers are),
        else ``None``; decided exactly, not from a ball.

        >>> from exact.ffn import ReLUFFN
        >>> ExactOracle(ReLUFFN([[1, -1]], [3])).query([[2, "1/3"]]).rational()
        Fraction(5, 1)
        """
        f = self.__form
        if type(f) is tuple:
            s1, c1, s2, c2 = f
            if s1 == s2:
                r = (c1 + c2) / 2
            elif c1 == c2:
                r = c1
            else:
                return None
            return Fraction(int(r.p), int(r.q))
        if type(f) is ExpSum:
            total = Fraction(0)
            for den, num in f.terms:  # an exp-sum's terms are (denominator, numerator)
                r = ExpRatio(num, den).as_rational()
                if r is None:
                    return None if len(f.terms) == 1 else _sum_rational(f)
                total += r
            return total
        return f.as_rational()

    def __float__(self) -> float:
        """A float64 approximation (not rigorous; use :meth:`ball` for a guaranteed enclosure)."""
        f = self.__form
        if type(f) is tuple:
            return softmax2_approx(*f)
        approx = getattr(f, "approx", None)
        return approx() if approx is not None else float(self.ball(64).mid())

    def __value(self):
        f = self.__form
        if type(f) is tuple:
            s1, c1, s2, c2 = f
            return ExpRatio.softmax((s1, s2), (c1, c2))
        return f

    def _exp_form(self):
        # Internal: the exp-polynomial normal form, for certificates only.
        f = self.__form
        if type(f) is tuple:
            s1, c1, s2, c2 = f
            return ExpRatio.softmax((s1, s2), (c1, c2))
        return f

    def _pair(self) -> tuple | None:
        # Internal: the compact (s1, c1, s2, c2), for certificates only.
        f = self.__form
        return f if type(f) is tuple else None

    def __repr__(self) -> str:
        with ctx.workprec(64):
            return f"ExactAnswer({self.ball(64).str(15, radius=False)}...)"


def answer_equals(answer: object, value: ExpRatio | ExpSum) -> bool:
    """Decide exactly whether an exact oracle answer equals ``value`` (an exp-ratio or exp-sum).

    This is how a learner asks "does my candidate reproduce the answer already
    given?" without reading the answer's internals itself.  Equality is decided on
    the exp-polynomial normal forms (Lindemann–Weierstrass, :mod:`exact.expfield`).

    >>> from exact.models import SingleHead
    >>> head = SingleHead([[0]], [1])
    >>> answer = ExactOracle(head).query([[1], [3]])
    >>> answer_equals(answer, head.exact([[1], [3]])), answer_equals(answer, ExpRatio.rational(3))
    (True, False)
    """
    if not isinstance(answer, ExactAnswer):
        raise InvalidArgument(f"answer_equals needs an exact answer, got {type(answer).__name__}")
    return bool(answer._exp_form() == value)


def answer_difference(a: object, b: object) -> "ExactAnswer":
    """The exact difference ``a − b`` of two exact answers, as an exact answer (no query).

    >>> from exact.models import SingleHead
    >>> box = ExactOracle(SingleHead([[1]], [1]))
    >>> x, y = box.query([[1], [2]]), box.query([[-1], [2]])
    >>> answer_difference(x, y).rational() is None, answer_difference(x, x).rational()
    (True, Fraction(0, 1))
    """
    if not isinstance(a, ExactAnswer) or not isinstance(b, ExactAnswer):
        raise InvalidArgument(f"answer_difference needs two exact answers, got {type(a).__name__}, {type(b).__name__}")
    fa, fb = a._exp_form(), b._exp_form()
    if isinstance(fa, ExpRatio) and isinstance(fb, ExpRatio) and fa.den == fb.den:
        return ExactAnswer(ExpRatio(fa.num - fb.num, fa.den))  # e.g. X and −X of even scores share it
    negated = ExpRatio(-fb.num, fb.den) if isinstance(fb, ExpRatio) else ExpSum([ExpRatio(-n, d) for d, n in fb.terms])
    return ExactAnswer(ExpSum([fa, negated]))


def answer_equals_logistic(answer: object, base: fmpq, slope: fmpq, ell: fmpq) -> bool:
    """Decide exactly whether an exact answer equals ``base + slope·σ(ell)`` (the logit primitive);
    ``base``, ``slope`` and ``ell`` are exact rationals (``fmpq``, ``Fraction`` or ``int``).

    >>> from exact.models import SingleHead
    >>> answer = ExactOracle(SingleHead([[0]], [1])).query([[1], [3]])  # (1 + 3)/2: σ(0) = 1/2
    >>> answer_equals_logistic(answer, fmpq(1), fmpq(2), fmpq(0))
    True
    >>> answer = ExactOracle(SingleHead([[1]], [1])).query([[2], [1]])  # 1 + 1·σ(2 − 1)
    >>> [answer_equals_logistic(answer, fmpq(1), fmpq(1), fmpq(x)) for x in (1, -1, 2)]
    [True, False, False]
    >>> answer_equals_logistic(answer, Fraction(1), 1, Fraction(1))
    True
    """
    if not isinstance(answer, ExactAnswer):
        raise InvalidArgument(f"answer_equals_logistic needs an exact answer, got {type(answer).__name__}")
    base, slope, ell = (x if type(x) is fmpq else exact_rational(x, name=name) for x, name in
                        ((base, "base"), (slope, "slope"), (ell, "ell")))
    pair = answer._pair()
    if pair is not None and ell != 0:  # c2 + (c1 − c2)·σ(s1 − s2), read off the compact form
        s1, c1, s2, c2 = pair
        if s1 - s2 == ell:
            return bool(c2 == base and c1 - c2 == slope)
        if s2 - s1 == ell:
            return bool(c1 == base and c2 - c1 == slope)
        if slope != 0:  # a gap other than ±ℓ: never equal (docs/exactness.md, "one logit")
            return False
    form = answer._exp_form()
    if not isinstance(form, ExpRatio):  # a sum of ratios (a multi-head answer)
        form = form.as_ratio()
    return bool(form.equals_logistic(base, slope, ell))


_ITEMS = tuple(map(operator.itemgetter, range(4)))


def unzip(rows: list, k: int) -> list[tuple]:
    """The ``k`` columns of a list of ``k``-tuples, each one C-level pass (``zip(*rows)`` with thousands
    of rows is several times slower: it advances one iterator per row).

    >>> unzip([(1, "a"), (2, "b")], 2)
    [(1, 2), ('a', 'b')]
    """
    return [tuple(map(get, rows)) for get in (_ITEMS[:k] if k <= 4 else map(operator.itemgetter, range(k)))]


def answer_floats(answers) -> np.ndarray:
    """float64 approximations of many answers at once, close to what ``float(a)`` gives each (not rigorous: a
    cheap estimate, to be confirmed or refined by exact means).  An exact two-token answer costs one
    exact subtraction and three conversions; the softmax is evaluated for all of them in numpy.

    >>> from exact.models import SingleHead
    >>> box = ExactOracle(SingleHead([[0, 1], [2, 0]], [1, -1]))
    >>> xs = [box.query([[1, 0], [0, 1]]), box.query([[0, 3]]), 1.5]
    >>> [float(x) for x in answer_floats(xs)] == [float(x) for x in xs]
    True
    """
    if set(map(type, answers)) == {ExactAnswer}:
        pairs = list(map(ExactAnswer._pair, answers))
    else:
        pairs = [a._pair() if type(a) is ExactAnswer else None for a in answers]
    if pairs and None not in pairs:  # every answer a two-token softmax: its parts as floats, in C-level passes
        n = len(pairs)
        s1, x1, s2, x2 = unzip(pairs, 4)
        diff = s1 if not any(s2) else map(operator.sub, s1, s2)
        t = np.fromiter(map(float, diff), np.float64, n)
        c1 = np.fromiter(map(float, x1), np.float64, n)
        c2 = np.fromiter(map(float, x2), np.float64, n)
    else:
        n = len(answers)
        t, c1, c2 = np.zeros(n), np.zeros(n), np.empty(n)
        for i, (a, pair) in enumerate(zip(answers, pairs)):
            if pair is None:
                c2[i] = float(a)  # t = 0 and c1 = c2: the softmax below returns c2
                c1[i] = c2[i]
                continue
            s1, x1, s2, x2 = pair
            t[i], c1[i], c2[i] = float(s1 - s2), float(x1), float(x2)
    # (c1 e^t + c2)/(e^t + 1) with t = s1 − s2, from the side where the exponential is at most 1
    e = np.exp(-np.abs(t))
    return np.where(t <= 0, c1 * e + c2, c1 + c2 * e) / (1.0 + e)


def _sum_rational(f: ExpSum) -> Fraction | None:
    """An exp-sum whose terms are not each rational may still sum to a rational: combine, then decide."""
    total = None
    for den, num in f.terms:
        r = ExpRatio(num, den)
        total = r if total is None else total + r
    return None if total is None else total.as_rational()


def _valid_poly(p) -> bool:
    """An :class:`ExpPoly` of the exact type, its terms sorted by exponent, distinct, nonzero, ``fmpq``."""
    if type(p) is not ExpPoly:
        return False
    terms = p._terms
    if type(terms) is not tuple:
        return False
    last = None
    for t in terms:
        if type(t) is not tuple or len(t) != 2 or type(t[0]) is not fmpq or type(t[1]) is not fmpq or t[1] == 0:
            return False
        if last is not None and not last < t[0]:
            return False
        last = t[0]
    return True


def _valid_form(form) -> bool:
    kind = type(form)
    if kind is tuple:
        return len(form) == 4 and all(type(x) is fmpq for x in form)
    if kind is ExpRatio:
        return _valid_poly(form.num) and _valid_poly(form.den) and bool(form.den._terms)
    if kind is ExpSum:
        terms = form.terms
        return type(terms) is tuple and all(
            type(t) is tuple and len(t) == 2 and _valid_poly(t[0]) and _valid_poly(t[1]) and bool(t[0]._terms)
            for t in terms
        )
    return False


def answer_ball(answer, prec: int, error: Fraction = Fraction(0)) -> arb:
    """A rigorous ball for an answer: exact answers are refined, others widened by ``error``."""
    if isinstance(answer, ExactAnswer):
        return answer.ball(prec)
    q = answer if type(answer) is Fraction else to_fraction(answer, name="answer")
    with ctx.workprec(prec):
        b = arb(fmpq(q.numerator, q.denominator))
        if error:
            b += arb(0, rad=arb(to_fmpq(error)).upper())
        return b


class FloatAnswer(float):
    """A float64 answer that carries the bound on its own rounding error (``.error``).

    It behaves as a plain float everywhere; :meth:`BaseOracle.error_bound` adds ``.error``
    to the oracle's declared accuracy.
    """

    __slots__ = ("error",)
    error: float

    def __new__(cls, value: float, error: float):
        obj = super().__new__(cls, value)
        obj.error = float(error)
        return obj

    def __reduce__(self):
        return (FloatAnswer, (float(self), self.error))


@dataclass(frozen=True, slots=True)
class Query:
    """One transcript entry: the sequence asked and the answer given."""

    X: Sequence
    answer: Any


class BaseOracle:
    """Base class of the library's oracles: counting, budget, transcript, input validation.

    It implements the :class:`~exact.protocols.Oracle` protocol; any object with that
    interface is an oracle too.

    Subclasses implement ``_answer(seq)`` (and may override ``_answer_batch``).

    Attributes
    ----------
    d : int
        Token dimension.
    exact : bool
        Whether answers are exact reals (:class:`ExactAnswer`).
    accuracy : Fraction
        Declared absolute accuracy of each answer (0 for exact oracles).
    rtol : Fraction
        Declared relative accuracy; an answer ``y`` is within
        ``accuracy + rtol·|y|`` of ``f(X)`` (see :meth:`error_bound`).
    """

    exact = False

    def __init__(self, d: int, *, budget: int | None = None, accuracy=0, rtol=0):
        if not isinstance(d, int) or isinstance(d, bool) or d < 1:
            raise ShapeError(f"d: expected an integer d >= 1, got {d!r}")
        if budget is not None and (not isinstance(budget, int) or budget < 0):
            raise InvalidArgument(f"budget: expected a non-negative integer or None, got {budget!r}")
        acc = to_fraction(accuracy, name="accuracy")
        if acc < 0:
            raise InvalidNumber(f"accuracy: expected a non-negative bound, got {accuracy!r}")
        rel = to_fraction(rtol, name="rtol")
        if rel < 0:
            raise InvalidNumber(f"rtol: expected a non-negative bound, got {rtol!r}")
        self.d = d
        self.budget = budget
        self.accuracy = acc
        self.rtol = rel
        self._count = 0
        self._max_length = 0
        self._transcript: list[Query] = []

    # -- bookkeeping ---------------------------------------------------------------

    @property
    def count(self) -> int:
        """Queries answered so far by this instance."""
        return self._count

    @property
    def max_length(self) -> int:
        """The longest sequence asked so far (0 before any query)."""
        return self._max_length

    @property
    def transcript(self) -> tuple[Query, ...]:
        """Every ``(X, answer)`` pair, in order."""
        return tuple(self._transcript)

    @property
    def remaining(self) -> int | None:
        """Queries left in the budget (``None`` if unlimited)."""
        return None if self.budget is None else self.budget - self._count

    def error_bound(self, answer) -> Fraction:
        """The bound on ``|answer - f(X)|``: ``accuracy + rtol·|answer|`` (0 if exact), plus a
        :class:`FloatAnswer`'s own rounding bound."""
        if isinstance(answer, ExactAnswer):
            return Fraction(0)
        bound = self.accuracy
        if self.rtol:
            bound += self.rtol * abs(to_fraction(answer, name="answer"))
        if isinstance(answer, FloatAnswer):
            bound += Fraction(answer.error)
        return bound

    def require(self, n: int, *, what: str = "this learner") -> None:
        """Raise :class:`QueryBudgetExceeded` now if ``n`` more queries do not fit the budget."""
        if self.budget is not None and self._count + n > self.budget:
            raise QueryBudgetExceeded(
                f"{what} needs {n} more queries, but the oracle's budget allows {self.budget - self._count} "
                f"(budget={self.budget}, used={self._count})"
            )

    # -- asking ----------------------------------------------------------------------

    def query(self, X):
        """Answer one value query ``f(X)``; ``X`` is an ``N × d`` array-like or a Sequence."""
        return self.query_batch([X])[0]

    def query_batch(self, Xs) -> list:
        """Answer several queries (each counted); returns the answers in order."""
        seqs = [as_sequence(X, d=self.d) for X in Xs]
        self.require(len(seqs), what="this batch")
        answers = []
        # Recorded one by one: if an answer fails, the queries already answered still count.
        for seq, a in zip(seqs, self._answer_batch(seqs)):
            self._count += 1
            self._max_length = max(self._max_length, seq.length)
            self._transcript.append(Query(seq, a))
            answers.append(a)
        return answers

    def _answer_batch(self, seqs: list[Sequence]):
        """Answers in order (a generator here; vectorised oracles return a list)."""
        return (self._answer(s) for s in seqs)

    def _answer(self, seq: Sequence):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d}, count={self._count}, budget={self.budget})"


class ExactOracle(BaseOracle):
    """Exact answers of a model with rational parameters.

    Parameters
    ----------
    model : SingleHead (or any model with ``d`` and ``exact(X) -> ExpRatio``)
    budget : int, optional

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> o = ExactOracle(SingleHead([[1]], ["1/2"]))
    >>> y = o.query([[3]])
    >>> o.count, float(y)
    (1, 1.5)
    """

    exact = True

    def __init__(self, model, *, budget: int | None = None):
        super().__init__(model.d, budget=budget)
        self.__model = model

    def _answer_batch(self, seqs: list[Sequence]):
        batch = getattr(self.__model, "exact_batch", None)
        if batch is not None:  # a model that evaluates many queries at once (a ReLU network)
            return [ExactAnswer(f) for f in batch(seqs)]
        return super()._answer_batch(seqs)

    def _answer(self, seq: Sequence) -> ExactAnswer:
        pair = getattr(self.__model, "_pair", None)
        if pair is not None:
            p = pair(seq)
            if p is not None:
                return ExactAnswer(p)
        return ExactAnswer(self.__model.exact(seq))


class CallableOracle(BaseOracle):
    """Wrap any Python function ``X -> number`` as an oracle with a declared accuracy.

    Parameters
    ----------
    fn : callable
        Called with one sequence.  Its answer may be a float, int, Fraction, mpmath
        ``mpf``, sympy number, numpy scalar or a one-element torch tensor; it is
        taken at its exact value.
    d : int
        Token dimension.
    accuracy : number
        Declared bound on ``|answer - f(X)|``.  Certificates from this oracle are of
        the weaker kind "consistent within accuracy".
    inputs : {"numpy", "fractions"}
        How ``X`` is passed: an ``N × d`` float64 array (entries rounded to float64;
        the transcript records the rounded sequence actually sent), or a list of
        lists of Fractions.
    batched : bool
        ``fn`` takes a batch of equal-length sequences, an ``n × N × d`` float64 array
        (numpy inputs only), and returns ``n`` answers (an array, tensor or list); it is
        called once per sequence length of a batch of queries, at most :data:`MAX_BATCH`
        sequences at a time.  Every sequence still counts as one query.
    budget : int, optional

    Examples
    --------
    >>> o = CallableOracle(lambda X: float(X[-1].sum()), d=2, accuracy="1e-15")
    >>> o.query([[1, 2], [3, 4]])
    Fraction(7, 1)
    >>> b = CallableOracle(lambda X: X[:, -1].sum(axis=1), d=2, accuracy="1e-15", batched=True)
    >>> b.query_batch([[[1, 2], [3, 4]], [[5, 6]]]), b.count
    ([Fraction(7, 1), Fraction(11, 1)], 2)
    """

    def __init__(
        self, fn: Callable, *, d: int, accuracy, rtol=0, inputs: str = "numpy", batched: bool = False,
        budget: int | None = None,
    ):
        super().__init__(d, budget=budget, accuracy=accuracy, rtol=rtol)
        if not callable(fn):
            raise InvalidArgument(f"fn: expected a callable X -> number, got {type(fn).__name__}")
        if inputs not in ("numpy", "fractions"):
            raise InvalidArgument(f"inputs: expected 'numpy' or 'fractions', got {inputs!r}")
        if batched and inputs != "numpy":
            raise InvalidArgument("batched: a batched function takes numpy inputs (an n × N × d array)")
        self._fn = fn
        self._inputs = inputs
        self._batched = bool(batched)

    def query_batch(self, Xs) -> list:
        if self._inputs == "numpy":
            seen: dict = {}  # id(value) -> (value, is float64): probes repeat a few value objects
            Xs = [self._as_sent(as_sequence(X, d=self.d), seen) for X in Xs]
        return super().query_batch(Xs)

    def _as_sent(self, seq: Sequence, seen: dict | None = None) -> Sequence:
        """The sequence after rounding to float64, which is what ``fn`` really sees."""
        cheap = seq._float64_exact()
        if cheap is not None:  # a float64-backed sequence or offset pair: no need to walk d entries
            return seq if cheap else Sequence._floats(seq.to_numpy())
        seen = {} if seen is None else seen
        for r in seq.rows:
            for _, q in r:
                hit = seen.get(id(q))
                if hit is None or hit[0] is not q:
                    hit = seen[id(q)] = (q, is_float64(q))
                if not hit[1]:
                    break
            else:
                continue
            break
        else:
            return seq
        return Sequence.from_rows(seq.to_numpy())  # to_numpy names entries beyond float64's range

    def _answer(self, seq: Sequence) -> Fraction:
        X: Any = seq.to_numpy() if self._inputs == "numpy" else seq.dense()
        y = self._fn(X[None])[0] if self._batched else self._fn(X)
        return self._check(y, seq)

    def _answer_batch(self, seqs: list[Sequence]):
        if not self._batched:
            return super()._answer_batch(seqs)
        raw: list = [None] * len(seqs)
        by_len: dict[int, list[int]] = {}
        for i, s in enumerate(seqs):
            by_len.setdefault(s.length, []).append(i)
        for idx in by_len.values():
            for start in range(0, len(idx), MAX_BATCH):
                part = idx[start:start + MAX_BATCH]
                ys = self._fn(np.stack([seqs[i].to_numpy() for i in part]))
                try:
                    n = -1 if isinstance(ys, (dict, str, bytes)) else len(ys)
                except TypeError:
                    n = -1
                if n != len(part):
                    raise OracleInconsistent(f"the batched function returned {n if n >= 0 else type(ys).__name__} "
                                             f"answers for a batch of {len(part)} sequences of length "
                                             f"{seqs[part[0]].length}; it must return one per sequence")
                for i, y in zip(part, ys):
                    raw[i] = y
        return (self._check(y, s) for y, s in zip(raw, seqs))

    def _check(self, y, seq) -> Fraction:
        try:
            if isinstance(y, np.ndarray) and y.shape == ():
                y = y[()]  # a 0-d array: its one element (which may be text, below)
            if isinstance(y, (str, bytes)):  # text is input syntax, not a number a model computes
                raise InvalidNumber(f"answer: expected a number, got text ({type(y).__name__})")
            return to_fraction(y, name="answer")
        except InvalidNumber as e:
            shown = repr(y) if len(repr(y)) <= 60 else repr(y)[:57] + "..."
            raise OracleInconsistent(
                f"the oracle answered {shown} to query #{self._count + 1} (length {seq.length}): {e}"
            ) from None


#: The most sequences a batched function receives in one call.
MAX_BATCH = 4096


class FloatOracle(CallableOracle):
    """float64 answers of a single head (or a sum of heads) evaluated with numpy, vectorised over batches.

    Each answer is a :class:`FloatAnswer` carrying a bound on its float64 rounding
    error, computed from the evaluation itself by standard dot-product bounds on
    sums of absolute terms (see :func:`exact.floateval.float_rounding_bounds`), so cancellation anywhere
    (in the scores, the values or the final sum) is covered.  For a multi-head model the
    heads' values and bounds are summed, and the bound of the sum is added.

    Parameters
    ----------
    model : SingleHead, MultiHead, or a head ``(W, v)`` or ``(W, v, c, b)`` of float arrays
    accuracy, rtol : number
        Further declared absolute and relative accuracy (default none).

    Examples
    --------
    >>> import numpy as np
    >>> o = FloatOracle((np.eye(2), np.ones(2)))
    >>> o.query([[1, 0], [0, 1]])
    1.0
    """

    def __init__(self, model, *, accuracy=0, rtol=0, budget: int | None = None):
        self._ffn = None
        if callable(getattr(model, "float_with_bound", None)):  # a ReLU network: one-token queries
            self._ffn = model
            super().__init__(lambda X: float(model.float_with_bound(np.asarray(X, dtype=np.float64)[-1:])[0][0]),
                             d=model.d, accuracy=accuracy, rtol=rtol, budget=budget)
            return
        if isinstance(model, tuple):
            heads = [model]
        elif callable(getattr(model, "float_heads", None)):  # a sum of softmax heads, in float64
            heads = model.float_heads()
        else:
            raise InvalidArgument(
                f"model: FloatOracle evaluates sums of softmax heads (a model with float_heads(), such as a "
                f"SingleHead or a MultiHead, or a pair (W, v)) and ReLU networks, got {type(model).__name__}; wrap "
                "other models' float "
                "evaluation in a CallableOracle"
            )
        pairs = [_float_head(h) for h in heads]
        self._pairs = pairs
        super().__init__(
            lambda X: sum(evaluate_float(W, v, X, c=c, b=b) for W, v, c, b in pairs), d=pairs[0][0].shape[0],
            accuracy=accuracy, rtol=rtol, budget=budget,
        )

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        out: list = [None] * len(seqs)
        if self._ffn is not None:
            if any(s.length != 1 for s in seqs):
                raise ShapeError("X: a ReLU network is queried on one-token sequences [x]")
            ys, errs = self._ffn.float_with_bound(np.stack([s.to_numpy()[0] for s in seqs]))
            if not (np.isfinite(ys).all() and np.isfinite(errs).all()):
                raise OracleInconsistent("the float network produced a non-finite answer or bound (overflow?)")
            return [FloatAnswer(y, e) for y, e in zip(ys.tolist(), errs.tolist())]
        by_len: dict[int, list[int]] = {}
        for i, s in enumerate(seqs):
            by_len.setdefault(s.length, []).append(i)
        for idx in by_len.values():
            batch = [seqs[i] for i in idx]
            W, v, c, b = self._pairs[0]
            ys, errs = evaluate_sequences(W, v, batch, c=c, b=b)
            for W, v, c, b in self._pairs[1:]:
                y2, e2 = evaluate_sequences(W, v, batch, c=c, b=b)
                ys = ys + y2
                errs = errs + e2 + np.abs(ys) * np.finfo(np.float64).eps  # the rounding of the sum itself
            if not np.isfinite(ys).all():
                raise OracleInconsistent("the float model produced a non-finite answer (overflow?)")
            if not np.isfinite(errs).all():
                raise OracleInconsistent("the float model's answers cannot be bounded (its terms overflow float64)")
            for i, y, e in zip(idx, ys.tolist(), errs.tolist()):
                out[i] = FloatAnswer(y, e)
        return out

    def _answer(self, seq: Sequence):  # a FloatAnswer
        return self._answer_batch([seq])[0]


def _float_head(head) -> tuple:
    """``(W, v, c, b)`` in float64 from a head ``(W, v)`` or ``(W, v, c, b)``, checked."""
    if not isinstance(head, tuple) or len(head) not in (2, 4):
        raise ShapeError("model: expected a head (W, v) or (W, v, c, b) of float arrays")
    W, v = np.asarray(head[0], dtype=np.float64), np.asarray(head[1], dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or v.shape != (W.shape[0],):
        raise ShapeError(f"model: expected W of shape (d, d) and v of shape (d,), got {W.shape} and {v.shape}")
    c, b = (np.asarray(head[2], dtype=np.float64), float(head[3])) if len(head) == 4 else (None, 0.0)
    if c is not None and c.shape != v.shape:
        raise ShapeError(f"model: expected c of shape (d,) = {v.shape}, got {c.shape}")
    if not (np.isfinite(W).all() and np.isfinite(v).all()):
        raise InvalidNumber("model: W and v must be finite")
    if c is not None and not (np.isfinite(c).all() and math.isfinite(b)):
        raise InvalidNumber("model: the biases c and b must be finite")
    return W, v, c, b
