"""What every arithmetic shares: logit measurements and the interface."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol, TypeAlias

from flint import fmpq

from ..expfield import ExpPoly, ExpRatio
from ..linalg import QMatrix
from ..oracles import ExactAnswer
from ..protocols import Oracle

__all__ = [
    "Answer", "Combo", "Confirm", "Names", "Measurement", "OuterMeasurements", "CompiledCombos", "MatrixParams", "Arithmetic",
    "primitive_form", "OUTSIDE_CLASS",
]

#: An oracle's answer as an arithmetic reads it: an exact answer, a float (a
#: :class:`~exact.oracles.FloatAnswer` carries its own rounding bound) or an exact rational
#: (the value a callable returned).
Answer: TypeAlias = ExactAnswer | Fraction | float

#: A parameter as a linear combination ``[(c, m), ...]`` of logit measurements ``m``
#: with integer coefficients ``c``.
Combo: TypeAlias = Sequence[tuple[int, int]]

#: ``confirm(values, pending) -> failed``: the candidate parameters (flint ``fmpq``) and the
#: measurements still pending; returns the measurements whose answers they do not reproduce.
Confirm: TypeAlias = Callable[[Sequence[fmpq], list[int]], Sequence[int]]


class Names(Protocol):
    """Names of parameters for messages, by index: a list, or a sequence that makes them on demand."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> str: ...


@dataclass(frozen=True, slots=True)
class Measurement:
    """A logit measurement: ``answer = base + slope·σ(ℓ)`` and the parameter part is ``ℓ/scale``.

    ``base_err`` and ``slope_err`` bound the errors of ``base`` and ``slope`` when they
    come from approximate answers (float mode); they are 0 in the exact modes.
    """

    base: Fraction | float
    slope: Fraction | float
    scale: Fraction = Fraction(1)
    base_err: float = 0.0
    slope_err: float = 0.0


class OuterMeasurements(Sequence[Measurement]):
    """Exact measurements laid out as a grid: measurement ``m = i·len(slopes) + k`` has ``base =
    bases[i]``, ``slope = slopes[k]`` and the one ``scale`` (the probes of a column share their base,
    the probes of a row their slope).  Held as the two short lists; a :class:`Measurement` is made
    only when one is read.

    >>> from fractions import Fraction
    >>> g = OuterMeasurements([Fraction(1), Fraction(2)], [Fraction(3), Fraction(5), Fraction(7)])
    >>> len(g), g[4], list(g)[4] == g[4], g[-1].slope
    (6, Measurement(base=Fraction(2, 1), slope=Fraction(5, 1), scale=Fraction(1, 1), base_err=0.0, slope_err=0.0), True, Fraction(7, 1))
    """

    __slots__ = ("bases", "slopes", "scale")

    def __init__(self, bases: Sequence, slopes: Sequence, scale: Fraction = Fraction(1)) -> None:
        self.bases, self.slopes, self.scale = list(bases), list(slopes), scale

    def __len__(self) -> int:
        return len(self.bases) * len(self.slopes)

    def __getitem__(self, m: Any) -> Any:
        if isinstance(m, slice):
            return [self[i] for i in range(*m.indices(len(self)))]
        n = len(self)
        if m < 0:
            m += n
        if not 0 <= m < n:
            raise IndexError(m)
        i, k = divmod(m, len(self.slopes))
        return Measurement(self.bases[i], self.slopes[k], self.scale)

    def __iter__(self) -> Iterator[Measurement]:
        scale = self.scale
        return (Measurement(b, s, scale) for b in self.bases for s in self.slopes)


class CompiledCombos(Sequence[Combo]):
    """Combos given compiled: ``terms[p]`` is the one measurement parameter ``p`` reads (coefficient 1),
    or its ``[(c, m), ...]``; ``first[m]`` is a parameter that reads measurement ``m`` (every
    measurement is read), for messages.  ``terms`` may be given as a function that makes them, called
    when they are first read.  As a sequence it gives each combo as ``[(c, m), ...]``, for any
    arithmetic; certified arithmetic reads ``terms`` as they are when every scale is 1, and then
    ``matrix(logits)``, if given, computes all the parameters at once (row-major, as one
    :class:`QMatrix`, from the logits ``ℓ_m`` of the measurements in order).

    >>> c = CompiledCombos([0, [(1, 1), (-1, 0)]], [0, 1])
    >>> list(c), len(c), CompiledCombos(lambda: [1, 0], [1, 0]).terms
    ([[(1, 0)], [(1, 1), (-1, 0)]], 2, [1, 0])
    """

    __slots__ = ("_terms", "first", "matrix")

    def __init__(self, terms: list | Callable[[], list], first: Sequence[int],
                 matrix: Callable[[list], QMatrix] | None = None) -> None:
        self._terms, self.first, self.matrix = terms, first, matrix

    @property
    def terms(self) -> list:
        if callable(self._terms):
            self._terms = self._terms()
        return self._terms

    def __len__(self) -> int:
        return len(self.terms)

    def __getitem__(self, p: Any) -> Any:
        if isinstance(p, slice):
            return [self[i] for i in range(*p.indices(len(self)))]
        t = self.terms[p]
        return [(1, t)] if type(t) is int else list(t)

    def __iter__(self) -> Iterator[Combo]:
        return ([(1, t)] if type(t) is int else list(t) for t in self.terms)


class MatrixParams(Sequence[fmpq]):
    """Parameters held as a :class:`QMatrix` (row-major); the flat list of entries is made on first read.

    >>> p = MatrixParams(QMatrix.from_rows([[1, 2], [3, 4]]))
    >>> len(p), p[2], list(p)[-1]
    (4, 3, 4)
    """

    __slots__ = ("qmatrix", "_flat")

    def __init__(self, qmatrix: QMatrix) -> None:
        self.qmatrix = qmatrix
        self._flat: list | None = None

    def _entries(self) -> list:
        flat = self._flat
        if flat is None:
            flat = self._flat = self.qmatrix.entries()
        return flat

    def __len__(self) -> int:
        r, c = self.qmatrix.shape
        return r * c

    def __getitem__(self, i: Any) -> Any:
        return self._entries()[i]

    def __iter__(self) -> Iterator[fmpq]:
        return iter(self._entries())


#: What a softmax weight outside [0, 1] says about the black box (no probe scale produces one).
OUTSIDE_CLASS = ("no head of this class gives that at any scale: an output bias (if the learner is bias-free, learn "
                 "it with biases), a sink token, dropout, a mask or several heads")


def primitive_form(base: fmpq, slope: fmpq, logit: fmpq) -> ExpRatio:
    """The exact value ``base + slope·σ(logit)`` as an exp-ratio (``fmpq`` arguments)."""
    if logit == 0:
        return ExpRatio(ExpPoly._raw([(_ZERO, 2 * base + slope)]), ExpPoly._raw([(_ZERO, _TWO)]))
    lo, hi = (_ZERO, logit) if logit > 0 else (logit, _ZERO)
    c_lo, c_hi = (base, base + slope) if logit > 0 else (base + slope, base)
    num = ExpPoly.__new__(ExpPoly)
    num._terms = tuple(t for t in ((lo, c_lo), (hi, c_hi)) if t[1] != 0)
    den = ExpPoly.__new__(ExpPoly)
    den._terms = ((lo, _ONE), (hi, _ONE))
    return ExpRatio(num, den)


_ZERO, _ONE, _TWO = fmpq(0), fmpq(1), fmpq(2)


class Arithmetic:
    """Interface shared by the three arithmetics.

    ``values(answers, names)`` reads answers that are parameters themselves;
    ``combine(answers, measurements, combos, names)`` returns the parameters
    ``Σ c · ℓ_m / scale_m`` for each combo ``[(c, m), ...]``.  Arithmetics that
    identify candidates (certified mode without a grid) also accept a
    ``confirm(values, pending) -> failed measurements`` hook.  ``denominators``, if given,
    holds per measurement a number that its logit times it is likely an integer (or ``None``):
    a hint that arithmetics which guess may try first, and others ignore.
    """

    name: str
    exact: bool
    precision: int = 0

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle

    def values(self, answers: Sequence[Answer], names: Sequence[str], offset: Fraction | float | None = None) -> list[Fraction] | list[float]:
        """The answers as parameters; given ``offset`` (a number this arithmetic returned before,
        such as an output bias), each parameter is ``answer − offset`` and is identified as such."""
        raise NotImplementedError

    def value_errors(self, names: Sequence[str]) -> list[float]:
        """Error bounds of the values last read under ``names`` (0 for exact arithmetics)."""
        return [0.0] * len(names)

    def combine(
        self, answers: Sequence[Answer], measurements: Sequence[Measurement], combos: Sequence[Combo],
        names: Names | None, *, denominators: Sequence[int | None] | None = None,
    ) -> list[Fraction] | list[float] | list[fmpq]:
        raise NotImplementedError

    def approximate_logits(self, answers: Sequence[Answer], measurements: Sequence[Measurement]) -> list[float]:
        """Each logit ``ℓ_m / scale_m`` as a float (for learners that need no exactness)."""
        raise NotImplementedError(f"{self.name} arithmetic gives no approximate logits; use certified or float")

    def errors(self) -> float:
        """The largest estimated parameter error (0 for exact arithmetics)."""
        return 0.0

    def add_error(self, error: float) -> None:
        """Count ``error``, a parameter's estimated error that a learner derived itself (such as
        ``v_i = f([e_i]) − b``, which carries both answers' errors), in :meth:`errors`."""
