"""Certified arithmetic: python-flint ``arb`` balls, precision on demand, exact identification.

The numbers a learner reads off its answers (values and logits) are *quantities*
for the :func:`~exact.identify.identify` kernel: each knows how to produce a
rigorous ball at its current precision and how to refine itself.  Precision grows
by doubling, from ``prec`` up to ``max_prec``, and for an approximate oracle only
as far as its declared accuracy lets the answers sharpen.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from typing import TypeAlias

import numpy as np
from flint import arb, ctx, fmpq

from ..errors import InvalidArgument, OracleInconsistent, PrecisionInsufficient
from ..expfield import ExpRatio
from ..grids import Grid, certifiable_grids, parse_grid
from ..identify import identify
from ..numbers import approx, ball_interval, coprime_fraction, floor_log2, simplest_in_ball, to_fmpq
from ..oracles import ExactAnswer, answer_ball, answer_equals, answer_equals_logistic, answer_floats
from ..protocols import Oracle
from .base import (
    OUTSIDE_CLASS, Answer, Arithmetic, Combo, CompiledCombos, Confirm, MatrixParams, Measurement, Names,
    OuterMeasurements,
)

__all__ = ["CertifiedArithmetic", "MAX_HEIGHT_BITS"]

#: No logit of a larger height (bits of numerator and denominator) is searched for:
#: an answer known to many more bits that no such logit reproduces is not a softmax head.
MAX_HEIGHT_BITS = 4096

#: What a measurement is called in messages: a name, or ``(parameter name, measurement index)``
#: with the parameter's name made only when a message needs it.
Label: TypeAlias = "str | tuple[_Lazy, int]"


class CertifiedArithmetic(Arithmetic):
    """Rigorous balls with precision escalation and exact identification.

    Parameters
    ----------
    oracle : Oracle
    grid : Grid or str or None
        Required for approximate oracles; optional for exact ones.
    prec : int
        Starting precision in bits.
    max_prec : int
        Give up (raise :class:`PrecisionInsufficient`) rather than go beyond this.
    """

    name = "certified"
    exact = True

    def __init__(
        self, oracle: Oracle, *, grid: Grid | str | None = None, prec: int = 64, max_prec: int = 1 << 23
    ) -> None:
        super().__init__(oracle)
        self.grid: Grid | None = parse_grid(grid)
        if self.grid is None and not oracle.exact:
            raise InvalidArgument(
                "mode='certified' on an approximate oracle needs a declared grid (e.g. grid='float32' or "
                "grid='rational:1000'): its answers alone cannot make a result "
                "exact; or use mode='float' (for a noisy oracle, learn_noisy or learn_noisy_frame give a "
                "certified error bound)"
            )
        for label, value in (("prec", prec), ("max_prec", max_prec)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 16:
                raise InvalidArgument(f"{label}: expected an integer number of bits >= 16, got {value!r}")
        if max_prec < prec:
            raise InvalidArgument(f"max_prec: expected at least prec = {prec}, got {max_prec}")
        self.prec0 = prec
        self.max_prec = max_prec
        self.precision = prec

    # escalation ------------------------------------------------------------------

    def next_precision(
        self, prec: int, answer: Answer, what: str, interval: tuple[Fraction, Fraction] | None = None
    ) -> int:
        """The next working precision after ``prec`` failed to identify ``what``.

        Raises :class:`PrecisionInsufficient` when the answer cannot sharpen further
        (its declared accuracy is reached) or ``max_prec`` would be exceeded.
        """
        if not isinstance(answer, ExactAnswer) and prec >= _bits_to_resolve(self.oracle.error_bound(answer)):
            if interval is None:  # the softmax weight itself is not resolved inside (0, 1)
                raise PrecisionInsufficient(
                    f"{what}: at the oracle's declared accuracy the softmax weight is not resolved inside "
                    "(0, 1): the logit is too large for this oracle to certify (scale the probes, or use "
                    "an oracle with better accuracy)"
                )
            lo, hi = interval
            grids = certifiable_grids(hi - lo, (lo + hi) / 2)
            raise PrecisionInsufficient(
                f"{what}: the oracle's declared accuracy cannot certify it on grid "
                f"{self.grid.name if self.grid else None} (ball [{approx(lo, 6)}, {approx(hi, 6)}]); "
                f"grids certifiable at this accuracy: {grids}"
            )
        if 2 * prec > self.max_prec:
            raise PrecisionInsufficient(
                f"{what}: not certified at {prec} bits and max_prec={self.max_prec}; raise max_prec "
                "(a logit of size L needs about L/ln 2 bits) or use mode='symbolic'"
            )
        self.precision = max(self.precision, 2 * prec)
        return 2 * prec

    def ball(self, answer: Answer, prec: int) -> arb:
        """A rigorous ball for an answer at ``prec`` bits, widened by the oracle's error bound."""
        return answer_ball(answer, prec, self.oracle.error_bound(answer))

    # values ------------------------------------------------------------------------

    def values(self, answers: Sequence[Answer], names: Sequence[str], offset: Fraction | float | None = None) -> list[Fraction]:
        shift = to_fmpq(Fraction(offset)) if offset else None
        qs = [_Value(self, a, name, shift) for a, name in zip(answers, names)]

        def confirm(values: list[fmpq], fresh: list[int]) -> list[int]:
            return [i for i in fresh
                    if not answer_equals(answers[i], ExpRatio.rational(values[i] + shift if shift else values[i]))]

        out = identify(qs, grid=self.grid, confirm=confirm, approximate=not self.oracle.exact)
        return [Fraction(int(x.p), int(x.q)) for x in out]

    # logits -----------------------------------------------------------------------

    def logit_ball(
        self, answer: Answer, base: fmpq, slope: fmpq, prec: int, what: Label, want: int | None = None
    ) -> tuple[arb | None, int]:
        """A ball for ``ℓ = σ⁻¹((y − base)/slope)`` and the bits the answer resolved.

        Returns ``(None, 0)`` while the softmax weight is not yet inside (0, 1) at this
        precision.  ``want`` caps the relative precision of the log: the odds may be
        known to far more bits than identification needs (at a logit of 10^6 the
        answer needs ~1.4M bits), and both the log and the rational search would pay
        for all of them.
        """
        old = ctx.prec
        try:
            ctx.prec = prec
            y = answer.ball(prec) if isinstance(answer, ExactAnswer) else self.ball(answer, prec)
            alpha = (y - base) / slope
            if not (alpha > 0 and alpha < 1):
                if alpha <= 0 or alpha >= 1:
                    raise OracleInconsistent(
                        f"{_name(what)}: the answer implies a softmax weight {alpha.str(5)} outside (0, 1); "
                        + OUTSIDE_CLASS
                    )
                return None, 0
            odds = alpha / (1 - alpha)
            resolved = odds.rel_accuracy_bits()
            ctx.prec = max(64, min(prec, resolved if want is None else min(resolved, want)) + 32)
            ell = odds.log()
        finally:
            ctx.prec = old
        return (ell, resolved) if ell.is_finite() else (None, 0)

    def approximate_logits(
        self, answers: Sequence[Answer], measurements: Sequence[Measurement], *, bits: int = 60
    ) -> list[float]:
        """Each logit ``ℓ_m / scale_m`` as a float, from a ball refined to ``bits`` bits (relative, absolute near 0)."""
        out = []
        for m, (answer, meas) in enumerate(zip(answers, measurements)):
            base, slope = _exact(meas.base), _exact(meas.slope)
            prec = self.prec0
            while True:
                ell, _ = self.logit_ball(answer, base, slope, prec, f"logit #{m}")
                if ell is not None:
                    mid = float(ell.mid())
                    if float(ell.rad()) <= 2.0**-bits * max(1.0, abs(mid)):  # near 0: absolute accuracy
                        out.append(mid / float(meas.scale))
                        break
                prec = self.next_precision(prec, answer, f"logit #{m}", ball_interval(ell) if ell is not None else None)
        return out

    def combine(
        self,
        answers: Sequence[Answer],
        measurements: Sequence[Measurement],
        combos: Sequence[Combo],
        names: Names | None,
        *,
        confirm: Confirm | None = None,
        as_fmpq: bool = False,
        denominators: Sequence[int | None] | None = None,
    ) -> list[Fraction] | list[fmpq]:
        """Parameters ``Σ c·ℓ_m/scale_m``; see :class:`~exact.arith.base.Arithmetic`.

        With a grid, each parameter is the unique grid point in the ball of its combo.
        Without one, every logit is identified as the simplest rational in its ball and
        confirmed exactly: by ``confirm(values, pending)`` if given (``values`` are the
        candidate parameters as flint ``fmpq``; it returns the measurements whose answers
        the candidate model does not reproduce, typically by replaying the transcript, so
        the last call *is* the certificate), else one answer at a time against
        ``base + slope·σ(ℓ)``.

        ``denominators[m]``, if given and not ``None``, is a ``D`` with ``D·ℓ_m`` likely an integer: the
        first ball of logit ``m`` that is narrower than ``1/(2D)`` then offers the one multiple of ``1/D``
        it holds as the candidate (:meth:`_Logit.candidate`), in place of the simplest rational, which
        needs a ball about ``D`` times narrower.  A hint is a guess like any other: confirmed exactly, and
        a wrong one costs a ball, not precision.
        """
        approximate = not self.oracle.exact
        if self.grid is not None:
            qs = [_Combo(self, answers, measurements, combo, str(_Lazy(names, i))) for i, combo in enumerate(combos)]
            out = identify(qs, grid=self.grid, approximate=approximate)
            return [Fraction(int(x.p), int(x.q)) for x in out]
        fq: dict[int, tuple[Fraction | float, fmpq]] = {}  # id -> (object, its fmpq): shared objects

        def q(x: Fraction | float) -> fmpq:
            hit = fq.get(id(x))
            if hit is None:
                hit = fq[id(x)] = (x, _exact(x))  # holding x keeps its id its own
            return hit[1]

        slot: Mapping[int, int]
        order: Sequence[int]
        terms: list | None
        compiled: CompiledCombos | None = None
        matrix = None
        if (type(combos) is CompiledCombos and type(measurements) is OuterMeasurements and measurements.scale == 1
                and len(combos.first) == len(measurements)):
            # compiled already, every measurement read and every scale 1: slot m is measurement m
            first, matrix, compiled = combos.first, combos.matrix, combos
            terms = compiled.terms if matrix is None else None  # (read below only if needed)
            order = range(len(measurements))
            slot = _Identity()
        else:
            slot, first, terms, order = _compile(combos, measurements, q)

        if denominators is not None and len(denominators) != len(measurements):
            raise InvalidArgument(f"combine: {len(denominators)} denominators for {len(measurements)} measurements")

        def make(i: int) -> _Logit:
            m = order[i]
            meas = measurements[m]
            logit = _Logit(self, answers[m], (_Lazy(names, first[i]), m), q(meas.base), q(meas.slope))
            hint = denominators[m] if denominators is not None else None
            if hint:
                logit.hint = int(hint)
            # tall: float64 found no rational of small height near it, or its hint is a large denominator
            tall = (guesses is not None and guesses[i] is None) or logit.hint.bit_length() > 26
            start = _first_precision(tall, self.prec0, self.max_prec)
            if start != self.prec0:
                logit.prec = logit.want = start
                self.precision = max(self.precision, start)
            return logit

        if not self.oracle.exact:
            guesses = None
        elif type(order) is range:
            guesses = _float_guesses(answers, measurements)
        else:
            guesses = _float_guesses([answers[m] for m in order], [measurements[m] for m in order])
        logits = _LazyList(make, len(order))  # a quantity is built only if its guess is not confirmed

        if confirm is None:

            def check(values: list[fmpq], fresh: list[int]) -> Sequence[int]:
                return [
                    i for i in fresh
                    if not answer_equals_logistic(
                        answers[order[i]], q(measurements[order[i]].base), q(measurements[order[i]].slope), values[i]
                    )
                ]
        else:

            def check(values: list[fmpq], fresh: list[int]) -> Sequence[int]:
                params: Sequence[fmpq]
                kept: Sequence[fmpq]
                if matrix is not None:  # the parameters as one matrix, computed in C (and never changed)
                    params = kept = MatrixParams(matrix(values))
                else:
                    params = _params(terms or (), values)  # (terms is compiled here: no matrix)
                    kept = list(params)  # as computed, whatever confirm does with its list
                failed = confirm(params, list(fresh) if type(order) is range else [order[i] for i in fresh])
                confirmed[:] = [list(values), kept] if not failed else []
                return [slot[m] for m in failed]

        confirmed: list = []  # [the values, their parameters] of the last confirmation that failed nowhere
        values = identify(logits, confirm=check, approximate=approximate, guesses=guesses)
        if confirmed and len(confirmed[0]) == len(values) and all(map(operator.is_, confirmed[0], values)):
            params = confirmed[1]  # the very parameters that confirmation replayed
        else:
            params = _params(terms if terms is not None else compiled.terms if compiled is not None else (), values)
        return params if as_fmpq else [_to_fraction(x) for x in params]


def _compile(combos: Sequence[Combo], measurements: Sequence[Measurement], q: Callable) -> tuple:
    """One pass over the combos: each measurement's slot (in order of first use), the first parameter
    it enters (named only if a message needs it), every combo compiled for :func:`_params`, and the
    measurements in slot order."""
    slot: dict[int, int] = {}
    first: list[int] = []
    terms: list = []
    inverse: dict = {}  # id(scale) -> (scale, 1/scale): the measurements share a few scales
    for i, combo in enumerate(combos):
        compiled = []
        for c, m in combo:
            k = slot.get(m)
            if k is None:
                k = slot[m] = len(first)
                first.append(i)
            scale = measurements[m].scale
            inv = inverse.get(id(scale))
            if inv is None:
                inv = inverse[id(scale)] = (scale, 1 / q(scale))
            compiled.append((c * inv[1], k))
        terms.append(compiled[0][1] if len(compiled) == 1 and compiled[0][0] == 1 else compiled)
    return slot, first, terms, list(slot)


class _Identity(Mapping):
    """The slots of compiled combos: measurement ``m`` is slot ``m``."""

    def __getitem__(self, m: int) -> int:
        return m

    def __iter__(self) -> Iterator[int]:  # pragma: no cover - never iterated
        raise TypeError("identity slots are not iterable")

    def __len__(self) -> int:  # pragma: no cover
        raise TypeError("identity slots have no length")


#: Fewer logits than this get no float guesses: the float pass would cost more than it saves.
MIN_GUESSES = 64

#: The largest denominator a float guess may have (float64 pins a logit to ~2^-52 at best).
MAX_GUESS_DENOMINATOR = 1 << 26


def _float_guesses(answers: Sequence[Answer], measurements: Sequence[Measurement]) -> list[fmpq | None]:
    """A cheap first candidate for each logit: σ⁻¹ in float64, then a nearby rational of small height.

    Nothing here is trusted: every guess is confirmed exactly (like any candidate), and a
    wrong or missing guess only sends its logit down the rigorous ball path.  The float
    estimate ``x`` of a logit comes with ``tol``, sixteen times its estimated float error;
    the guess is the first continued-fraction convergent ``p/q`` of ``x`` within ``tol``
    with ``q²·tol <= 1/4`` (:func:`_convergents_within`), the only rational of denominator
    at most ``q`` that close.
    """
    n = len(answers)
    if n < MIN_GUESSES:
        return [None] * n
    try:
        y = answer_floats(answers)
        floats: dict = {}  # id -> (object, its float): measurements share their bases and slopes

        def fl(x: Fraction | float) -> float:
            hit = floats.get(id(x))
            if hit is None:
                hit = floats[id(x)] = (x, float(x))  # holding x keeps its id its own
            return hit[1]

        if type(measurements) is OuterMeasurements:  # a grid: each column's base and each row's slope once
            rows = len(measurements.slopes)
            base = np.repeat(np.array([float(x) for x in measurements.bases]), rows)
            slope = np.tile(np.array([float(x) for x in measurements.slopes]), len(measurements.bases))
        else:
            base = np.array([fl(m.base) for m in measurements])
            slope = np.array([fl(m.slope) for m in measurements])
    except OverflowError:  # a number beyond float64: no float guesses, the balls decide
        return [None] * n
    with np.errstate(all="ignore"):
        alpha = (y - base) / slope
        ok = np.isfinite(alpha) & (alpha > 1e-300) & (alpha < 1 - 2**-50)
        ell = np.where(ok, np.log(np.where(ok, alpha, 0.5)) - np.log1p(-np.where(ok, alpha, 0.5)), 0.0)
        err = (np.abs(y) + np.abs(base)) * 2.0**-50 / np.abs(slope) / (alpha * (1 - alpha)) + np.abs(ell) * 2.0**-50
        tol = np.where(ok, 16 * err, np.inf)
    return _convergents_within(ell, tol)


def _convergents_within(x: np.ndarray, tol: np.ndarray) -> list[fmpq | None]:
    """For each ``x[i]``, the first continued-fraction convergent ``p/q`` with ``|x − p/q| <= tol``
    and ``q²·tol <= 1/4`` (as ``fmpq``), else ``None``; vectorised over ``x`` in float64, so both
    tests (and the convergents themselves) hold only up to float64 rounding.  That is enough for a
    guess, which is a candidate only: it is confirmed exactly, and a wrong one costs a replay.

    A rational with ``|x − p/q| < 1/(2q²)`` is a convergent of ``x`` (Legendre), and two
    rationals of denominator at most ``q`` are ``1/q²`` apart, so with ``q²·tol <= 1/4``
    no other candidate of denominator at most ``q`` lies within ``tol``.  Denominators
    stop at :data:`MAX_GUESS_DENOMINATOR`, numerators at 2^53 (exact in float64).

    >>> x = np.array([1 / 3, 3.14159, -0.5, 2.0, 0.45, 0.45, 1 / 3, 0.7])
    >>> tol = np.array([1e-12, 2e-3, 0.0, 0.25, 1 / 16, 1 / 16 + 1e-9, 1 / 196 + 1e-9, np.inf])
    >>> [str(g) for g in _convergents_within(x, tol)]
    ['1/3', '22/7', '-1/2', '2', '1/2', 'None', '1/3', 'None']
    """
    out = np.full(len(x), None, dtype=object)
    active = np.isfinite(x) & (tol <= 0.25)
    r = np.where(active, x, 0.0)
    p0, q0, p1, q1 = np.zeros_like(r), np.ones_like(r), np.ones_like(r), np.zeros_like(r)
    while active.any():
        a = np.floor(r)
        p0, q0, p1, q1 = p1, q1, a * p1 + p0, a * q1 + q0
        with np.errstate(all="ignore"):
            active &= (q1 * q1 * tol <= 0.25) & (q1 <= MAX_GUESS_DENOMINATOR) & (np.abs(p1) <= 2.0**53)
        with np.errstate(all="ignore"):
            hit = active & (np.abs(x - p1 / q1) <= tol)
        idx = np.flatnonzero(hit)
        if idx.size:  # |p|, q <= 2^53: exact as int64
            out[idx] = list(map(fmpq, p1[idx].astype(np.int64).tolist(), q1[idx].astype(np.int64).tolist()))
        frac = r - a
        active &= ~hit & (frac > 0)
        with np.errstate(all="ignore"):
            r = np.where(active, 1 / np.where(active, frac, 1.0), 0.0)
    return out.tolist()


class _Value:
    """An answer that is itself the quantity (``v_i = f([e_i])``)."""

    __slots__ = ("arith", "answer", "what", "prec", "last", "offset")

    def __init__(self, arith: CertifiedArithmetic, answer: Answer, what: str, offset: fmpq | None = None) -> None:
        self.arith, self.answer, self.what, self.offset = arith, answer, what, offset
        self.prec = arith.prec0
        self.last: arb | None = None

    def ball(self) -> arb:
        y = self.arith.ball(self.answer, self.prec)
        if self.offset is not None:
            old = ctx.prec
            try:
                ctx.prec = self.prec
                y = y - self.offset
            finally:
                ctx.prec = old
        self.last = y  # the quantity's ball (answer − offset): what a refusal reports
        return y

    def refine(self) -> None:
        interval = ball_interval(self.last) if self.last is not None else None
        self.prec = self.arith.next_precision(self.prec, self.answer, self.what, interval)


class _Logit:
    """``ℓ = σ⁻¹((y − base)/slope)`` of one logit measurement, with a height cap on the log.

    It holds no ball between calls (a large learn holds one of these per measurement);
    ``refine`` recomputes the little it needs.
    """

    __slots__ = ("arith", "answer", "base", "slope", "label", "prec", "want", "resolved", "hint", "hinted")

    def __init__(self, arith: CertifiedArithmetic, answer: Answer, label: Label, base: fmpq, slope: fmpq) -> None:
        self.arith, self.answer, self.label, self.base, self.slope = arith, answer, label, base, slope
        self.prec, self.want, self.resolved = arith.prec0, 64, 0
        self.hint, self.hinted = 0, False  # a likely denominator (0: none), and whether it gave the last candidate

    @property
    def what(self) -> str:
        # A measurement can feed several parameters (the pivot row's logits enter every
        # shifted row), so it is named by its own index first.
        return _name(self.label)

    def ball(self) -> arb | None:
        ell, self.resolved = self.arith.logit_ball(self.answer, self.base, self.slope, self.prec, self.label, self.want)
        return ell

    def candidate(self, ball: arb) -> fmpq:
        """The candidate a ball offers: the one multiple of ``1/hint`` it holds, the first time the ball
        is narrow enough to hold at most one (``2·rad·hint < 1``); otherwise the simplest rational.

        >>> from exact.models import SingleHead
        >>> from exact.oracles import ExactOracle
        >>> logit = _Logit(CertifiedArithmetic(ExactOracle(SingleHead([[0]], [1]))), None, "x", fmpq(0), fmpq(1))
        >>> logit.hint = 2**40
        >>> ball = arb(fmpq(5**17 + 1, 2**40), 2.0**-60)  # a 2^-60 ball around 762939453126/2^40
        >>> c = logit.candidate(ball)
        >>> c, logit.hint, logit.hinted, simplest_in_ball(ball) == c  # the simplest rational is another
        (381469726563/549755813888, 0, True, False)
        """
        D = self.hint
        if D:
            m_, e_ = ball.mid().man_exp()
            r_, f_ = ball.rad().man_exp()
            m, e, r, f = int(m_), int(e_), int(r_), int(f_)
            k = max(0, -e, -f)
            mid, rad = (m << (e + k)) * D, (r << (f + k)) * D  # the ball times D, over 2^k
            if 2 * rad < (1 << k):  # at most one integer in [mid − rad, mid + rad] / 2^k
                self.hint, self.hinted = 0, True
                n = (mid + (1 << k >> 1)) >> k  # the nearest integer to mid / 2^k
                if abs((n << k) - mid) <= rad:
                    return fmpq(n, D)
                self.hinted = False  # the ball holds no multiple of 1/D: the hint was wrong
        return simplest_in_ball(ball)

    def refine(self) -> None:
        """After a rejected candidate: a rejected hint costs nothing (the same ball offers its simplest
        rational next); otherwise use bits the answer already holds, else refine the answer."""
        if self.hinted:
            self.hinted = False
            return
        if self.resolved > 2 * self.want:
            if self.want >= MAX_HEIGHT_BITS:
                raise PrecisionInsufficient(
                    f"{self.what}: no rational logit below 2**{MAX_HEIGHT_BITS} reproduces the answer (known to "
                    f"{self.resolved} bits): a larger logit, or a black box outside the learner's class, such as "
                    "one with an output bias (learn it with biases); mode='symbolic' decides which"
                )
            self.want *= 2
        else:
            last = self.ball()
            interval = ball_interval(last) if last is not None else None
            self.prec = self.arith.next_precision(self.prec, self.answer, self.what, interval)


class _Combo:
    """A parameter ``Σ c·ℓ_m/scale_m`` as one ball (grid mode identifies parameters, not logits)."""

    __slots__ = ("arith", "answers", "measurements", "combo", "what", "prec", "last")

    def __init__(
        self, arith: CertifiedArithmetic, answers: Sequence[Answer], measurements: Sequence[Measurement],
        combo: Combo, what: str,
    ) -> None:
        self.arith, self.answers, self.measurements, self.combo, self.what = arith, answers, measurements, combo, what
        self.prec = arith.prec0
        self.last: arb | None = None

    def ball(self) -> arb | None:
        total = arb(0)
        self.last = None
        with ctx.workprec(self.prec):
            for c, m in self.combo:
                meas = self.measurements[m]
                ell, _ = self.arith.logit_ball(
                    self.answers[m], _exact(meas.base), _exact(meas.slope), self.prec, self.what
                )
                if ell is None:
                    return None
                total += ell * to_fmpq(Fraction(c) / meas.scale)
        self.last = total
        return total

    def refine(self) -> None:
        interval = ball_interval(self.last) if self.last is not None else None
        self.prec = self.arith.next_precision(self.prec, self.answers[self.combo[0][1]], self.what, interval)


class _LazyList:
    """A read-only sequence whose items are made on first access."""

    __slots__ = ("make", "items")

    def __init__(self, make: Callable[[int], _Logit], n: int) -> None:
        self.make = make
        self.items: list[_Logit | None] = [None] * n

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> _Logit:
        item = self.items[i]
        if item is None:
            item = self.items[i] = self.make(i)
        return item


def _params(terms: Sequence, values: Sequence[fmpq]) -> list[fmpq]:
    """``Σ c·ℓ_m/scale_m`` for every combo, compiled as the slot of its one logit when that is all it is
    (``c/scale_m = 1``), else its ``(c/scale_m, slot)`` terms, as ``fmpq``."""
    out = []
    for t in terms:
        if type(t) is int:
            out.append(values[t])
            continue
        total = _ZERO_Q
        for c, i in t:
            total += c * values[i]
        out.append(total)
    return out


_ZERO_Q = fmpq(0)


class _Lazy:
    """``names[i]``, looked up only when a message is written."""

    __slots__ = ("names", "i")

    def __init__(self, names: Names | None, i: int) -> None:
        self.names, self.i = names, i

    def __str__(self) -> str:
        return str(self.names[self.i]) if self.names is not None else f"parameter #{self.i}"


def _first_precision(tall: bool, prec0: int, max_prec: int) -> int:
    """The precision of a logit's first ball: ``prec0``, or 128 bits for a logit that float64
    found *tall* (no rational of small height near it) when ``max_prec`` allows, rather
    than spending a round at ``prec0`` bits that cannot identify it.

    >>> _first_precision(False, 64, 1 << 23), _first_precision(True, 64, 1 << 23), _first_precision(True, 64, 127)
    (64, 128, 64)
    >>> _first_precision(True, 64, 128), _first_precision(True, 127, 256), _first_precision(True, 256, 512)
    (128, 128, 256)
    """
    return max(prec0, 128) if tall and max_prec >= 128 else prec0


def _name(what: Label) -> str:
    """A measurement's name for messages: a string, or ``(parameter, index)`` rendered lazily."""
    return what if isinstance(what, str) else f"measurement #{what[1]} (needed for {what[0]})"


def _exact(x: Fraction | float) -> fmpq:
    """A measurement's base, slope or scale as ``fmpq``: certified mode measures against exact values only."""
    if isinstance(x, float):
        raise InvalidArgument(f"certified arithmetic: expected an exact base, slope or scale, got the float {x!r}")
    return to_fmpq(x)


def _to_fraction(x: fmpq) -> Fraction:
    return coprime_fraction(int(x.p), int(x.q))


def _bits_to_resolve(error: Fraction) -> int:
    """Working precision beyond which an answer with this error bound stops sharpening."""
    if error <= 0:
        return 1 << 30
    return max(64, 64 - floor_log2(error))
