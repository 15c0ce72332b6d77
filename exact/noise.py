"""Noise models and noisy oracles: what an approximate black box adds to ``f(X)``, and the bound it declares.

A real black box is not exact: a float32 model rounds every answer, an API rounds to a
few decimals, a defended model adds noise.  A :class:`NoisyOracle` wraps any oracle (or
a model, answered exactly first) and returns ``f(X) + η`` with ``η`` drawn by a noise
model.  Each noise model *declares* its bound, and the oracle carries it as its
``accuracy`` and ``rtol``, so learners and certificates read the bound through the
ordinary oracle interface:

=================  ===========================================  ==============================
spec               answer                                        declared bound on ``|η|``
=================  ===========================================  ==============================
``uniform:τ``      ``f(X) + η``, ``η`` uniform in ``[−τ, τ]``    ``τ``
``round:k``        ``f(X)`` rounded to ``k`` decimals            ``½·10^−k``
``float32``        ``f(X)`` rounded to float32                   ``2^−24·|answer|`` (+ subnormal step)
``float16``        ``f(X)`` rounded to float16                   ``2^−11·|answer|`` (+ subnormal step)
``adversarial:τ``  ``f(X) + η``, ``η ∈ [−τ, τ]`` chosen to hurt    ``τ``
=================  ===========================================  ==============================

Every answer is a :class:`~exact.oracles.FloatAnswer` (a float64 value) whose ``.error``
covers what the declared bound does not: the rounding of the noisy value to float64 and
the enclosure radius of the clean value.  Noise is seeded (``seed=``); the same seed and
the same queries give the same answers.

Examples
--------
>>> from exact.models import SingleHead
>>> o = NoisyOracle(SingleHead([[1]], [2]), "uniform:1e-3", seed=0)
>>> y = o.query([[1]])
>>> abs(y - 2) <= 1e-3, o.accuracy, o.count
(True, Fraction(1, 1000), 1)
>>> parse_noise("round:3"), parse_noise("round:3").accuracy, float(parse_noise("float32").rtol)
(Round(k=3), Fraction(1, 2000), 5.960464843912683e-08)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from collections.abc import Callable

import numpy as np

from .errors import InvalidArgument, InvalidNumber, OracleInconsistent
from .numbers import ball_interval, parse_rational, to_fraction
from .oracles import BaseOracle, ExactAnswer, ExactOracle, FloatAnswer
from .sequences import Sequence

__all__ = [
    "Noise",
    "Uniform",
    "Round",
    "FloatFormat",
    "Adversarial",
    "parse_noise",
    "NoisyOracle",
    "NOISE_KINDS",
]

#: The noise specs :func:`parse_noise` accepts, for help texts.
NOISE_KINDS = ("uniform:TAU", "round:K", "float32", "float16", "adversarial:TAU")

_PREC = 160  # bits of the clean value's enclosure: its radius is part of each answer's .error


@dataclass(frozen=True)
class Noise:
    """A noise model: ``perturb`` turns the clean value into the answer; ``accuracy`` and
    ``rtol`` bound ``|answer − clean|`` by ``accuracy + rtol·|answer|``."""

    @property
    def accuracy(self) -> Fraction:
        return Fraction(0)

    @property
    def rtol(self) -> Fraction:
        return Fraction(0)

    @property
    def spec(self) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def perturb(self, clean: Fraction, rng: np.random.Generator, index: int, X: Sequence) -> Fraction:
        """The noisy answer (exact) to query number ``index`` (``X``) whose clean value is ``clean``."""
        raise NotImplementedError  # pragma: no cover


def _tau(value, what: str) -> Fraction:
    tau = to_fraction(value, name=what)
    if tau < 0:
        raise InvalidArgument(f"{what}: expected a noise level τ >= 0, got {value!r}")
    return tau


@dataclass(frozen=True)
class Uniform(Noise):
    """``η`` uniform in ``[−τ, τ]`` (a float64 draw ``u ∈ [−1, 1]``, then ``η = τ·u`` exactly)."""

    tau: Fraction

    def __post_init__(self):
        object.__setattr__(self, "tau", _tau(self.tau, "uniform:τ"))

    @property
    def accuracy(self) -> Fraction:
        return self.tau

    @property
    def spec(self) -> str:
        return f"uniform:{_short(self.tau)}"

    def perturb(self, clean, rng, index, X):
        return clean + self.tau * Fraction(float(rng.uniform(-1.0, 1.0)))


@dataclass(frozen=True)
class Round(Noise):
    """The answer rounded to ``k`` decimals (half to even), as an API that prints ``k`` digits."""

    k: int

    def __post_init__(self):
        if not isinstance(self.k, int) or isinstance(self.k, bool) or not 0 <= self.k <= 300:
            raise InvalidArgument(f"round:k: expected an integer number of decimals 0 <= k <= 300, got {self.k!r}")

    @property
    def accuracy(self) -> Fraction:
        return Fraction(1, 2 * 10**self.k)

    @property
    def spec(self) -> str:
        return f"round:{self.k}"

    def perturb(self, clean, rng, index, X):
        return Fraction(round(clean * 10**self.k), 10**self.k)


_FORMATS = {"float32": (np.float32, 24, -149), "float16": (np.float16, 11, -24)}


@dataclass(frozen=True)
class FloatFormat(Noise):
    """The answer rounded to a narrower float format (a model that computes in float32 or float16).

    Rounding to nearest errs by at most ``2^−p`` relative to the exact value (``p`` the
    format's significand bits), hence at most ``2^−p/(1 − 2^−p)`` relative to the answer,
    plus half the smallest subnormal near 0.  The clean value is rounded through float64
    first; the declared ``rtol`` includes that double rounding (``2^−53`` more).
    """

    format: str

    def __post_init__(self):
        if self.format not in _FORMATS:
            raise InvalidArgument(f"noise format: expected one of {', '.join(_FORMATS)}, got {self.format!r}")

    @property
    def rtol(self) -> Fraction:
        p = _FORMATS[self.format][1]
        u = Fraction(1, 2**p) + Fraction(1, 2**53)
        return u / (1 - u)

    @property
    def accuracy(self) -> Fraction:
        return Fraction(1, 2 ** (1 - _FORMATS[self.format][2]))  # half the smallest subnormal

    @property
    def spec(self) -> str:
        return self.format

    def perturb(self, clean, rng, index, X):
        dtype = _FORMATS[self.format][0]
        with np.errstate(over="ignore"):
            y = dtype(float(clean))
        if not np.isfinite(y):
            raise OracleInconsistent(f"the answer {float(clean):.6g} overflows {self.format}")
        return Fraction(float(y))


#: ``strategy(index, X, clean, tau) -> η`` with ``|η| <= τ``: how an adversary answers.
Strategy = Callable[[int, Sequence, Fraction, Fraction], Fraction]


@dataclass(frozen=True)
class Adversarial(Noise):
    """``η ∈ [−τ, τ]`` chosen per answer by an adversary's ``strategy``.

    Without a strategy the adversary answers ``+τ`` everywhere (a constant bias).  A
    learner-aware strategy (:func:`exact.learn.noisy.adversary`) simulates the learner
    and chooses each ``η`` to maximise its final error.  A strategy that returns an
    ``η`` outside ``[−τ, τ]`` is refused: the declared bound must hold.
    """

    tau: Fraction
    strategy: Strategy | None = None

    def __post_init__(self):
        object.__setattr__(self, "tau", _tau(self.tau, "adversarial:τ"))

    @property
    def accuracy(self) -> Fraction:
        return self.tau

    @property
    def spec(self) -> str:
        return f"adversarial:{_short(self.tau)}"

    def perturb(self, clean, rng, index, X):
        if self.strategy is None:
            return clean + self.tau
        eta = to_fraction(self.strategy(index, X, clean, self.tau), name="the adversary's η")
        if abs(eta) > self.tau:
            raise OracleInconsistent(f"the adversary chose η = {float(eta):.3g} outside [−τ, τ] (τ = {float(self.tau):.3g})")
        return clean + eta


def _short(q: Fraction) -> str:
    """A compact exact spelling of a noise level (``1e-06`` style when that is exact)."""
    f = float(q)
    return repr(f) if Fraction(repr(f)) == q else f"{q.numerator}/{q.denominator}"


def parse_noise(text) -> Noise:
    """Parse a noise spec: ``uniform:τ``, ``round:k``, ``float32``, ``float16`` or ``adversarial:τ``.

    ``τ`` is parsed exactly (``1e-6`` is ``1/10⁶``), never evaluated.

    >>> parse_noise("uniform:1e-6").tau, parse_noise("adversarial:2/3").tau
    (Fraction(1, 1000000), Fraction(2, 3))
    >>> parse_noise("gauss:1")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidArgument: noise: expected one of uniform:TAU, round:K, float32, float16, adversarial:TAU; got 'gauss:1'
    """
    if isinstance(text, Noise):
        return text
    if not isinstance(text, str):
        raise InvalidArgument(f"noise: expected a spec string such as 'uniform:1e-6', got {type(text).__name__}")
    kind, sep, arg = text.strip().partition(":")
    try:
        if kind in _FORMATS and not sep:
            return FloatFormat(kind)
        if kind == "uniform" and sep:
            return Uniform(parse_rational(arg, name="uniform:τ"))
        if kind == "adversarial" and sep:
            return Adversarial(parse_rational(arg, name="adversarial:τ"))
        if kind == "round" and sep:
            k = parse_rational(arg, name="round:k")
            if k.denominator != 1:
                raise InvalidArgument(f"round:k: expected an integer number of decimals, got {arg!r}")
            return Round(int(k))
    except InvalidNumber as e:
        raise InvalidArgument(str(e)) from None
    shown = text if len(text) <= 60 else text[:57] + "..."
    raise InvalidArgument(f"noise: expected one of {', '.join(NOISE_KINDS)}; got {shown!r}")


class NoisyOracle(BaseOracle):
    """An oracle that answers ``f(X) + η``: any oracle (or model) with a seeded noise model on top.

    Parameters
    ----------
    inner : Oracle or model
        The clean black box.  A model (anything with ``d`` and ``exact(X)``, such as a
        :class:`~exact.models.SingleHead`) is answered exactly first.  An approximate
        oracle's own error bound is added to each answer's ``.error``.
    noise : Noise or str
        A noise model or its spec (:func:`parse_noise`).
    seed : int or None
        Seed of the noise draws.
    budget : int, optional

    Attributes
    ----------
    accuracy, rtol : Fraction
        The noise model's declared bound (see :class:`~exact.oracles.BaseOracle`).
    noise : Noise
    """

    exact = False

    def __init__(self, inner, noise, *, seed: int | None = None, budget: int | None = None):
        noise = parse_noise(noise)
        if not hasattr(inner, "query_batch"):
            if not (hasattr(inner, "exact") and hasattr(inner, "d")):
                raise InvalidArgument(
                    f"inner: expected an oracle or a model with exact parameters, got {type(inner).__name__}"
                )
            inner = ExactOracle(inner)
        if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
            raise InvalidArgument(f"seed: expected a non-negative integer or None, got {seed!r}")
        super().__init__(inner.d, budget=budget, accuracy=noise.accuracy, rtol=noise.rtol)
        self.noise = noise
        self.seed = seed
        self._inner = inner
        self._rng = np.random.default_rng(seed)

    def _answer_batch(self, seqs: list[Sequence]) -> list:
        clean = self._inner.query_batch(seqs)
        out = []
        for i, (seq, c) in enumerate(zip(seqs, clean)):
            value, radius = self._clean(c)
            noisy = self.noise.perturb(value, self._rng, self._count + i, seq)
            try:
                y = float(noisy)
            except OverflowError:
                y = math.inf
            if not math.isfinite(y):
                raise OracleInconsistent(f"the noisy answer to query #{self._count + i + 1} is beyond float64's range")
            own = radius + abs(Fraction(y) - noisy)
            out.append(FloatAnswer(y, _round_up(own)))
        return out

    def _answer(self, seq: Sequence):
        return self._answer_batch([seq])[0]

    def _clean(self, answer) -> tuple[Fraction, Fraction]:
        """The clean value as an exact rational and a bound on its distance to ``f(X)``."""
        if isinstance(answer, ExactAnswer):
            lo, hi = ball_interval(answer.ball(_PREC))
            return (lo + hi) / 2, (hi - lo) / 2
        value = to_fraction(answer, name="the inner oracle's answer")
        return value, self._inner.error_bound(answer)


def _round_up(x: Fraction) -> float:
    """The least float64 >= x (x >= 0), so an error bound stays a bound."""
    f = float(x)
    return f if Fraction(f) >= x else math.nextafter(f, math.inf)

