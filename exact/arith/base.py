"""What every arithmetic shares: logit measurements and the interface."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol, TypeAlias

from flint import fmpq

from ..expfield import ExpPoly, ExpRatio
from ..oracles import ExactAnswer
from ..protocols import Oracle

__all__ = ["Answer", "Combo", "Confirm", "Names", "Measurement", "Arithmetic", "primitive_form", "OUTSIDE_CLASS"]

#: An oracle's answer as an arithmetic reads it: an exact answer, a float (a
#: :class:`~exact.oracles.FloatAnswer` carries its own rounding bound) or an exact rational
#: (the value a callable returned).
Answer: TypeAlias = ExactAnswer | Fraction | float

#: A parameter as a linear combination ``[(c, m), ...]`` of logit measurements ``m``
#: with integer coefficients ``c``.
Combo: TypeAlias = Sequence[tuple[int, int]]

#: ``confirm(values, pending) -> failed``: the candidate parameters (flint ``fmpq``) and the
#: measurements still pending; returns the measurements whose answers they do not reproduce.
Confirm: TypeAlias = Callable[[list[fmpq], list[int]], Sequence[int]]


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
    ``confirm(values, pending) -> failed measurements`` hook.
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
        names: Names | None,
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
