"""Threshold (membership) oracles, and value queries answered by bisection on them (App. B).

A :class:`ThresholdOracle` answers only bits: ``[f(X) >= θ]`` for a query ``X`` and a
threshold ``θ`` the learner chooses.  Each bit is one query, counted.  Against an exact
model the bit is decided exactly (equality of exp-polynomials is decidable).

:class:`BisectingOracle` turns it back into a value oracle with a declared accuracy
``ε``: a value query bisects ``θ`` until ``f(X)`` is pinned to an interval of width at
most ``2ε`` and answers its midpoint.  It bisects **only inside the interval already
known** for ``f(X)``:

* ``f(X)`` is a convex combination of the values ``vᵀx_i``, so once ``v`` is known to
  within ``τ`` per coordinate (from one-token queries along the axes, which this oracle
  answers first), ``f(X)`` lies in the hull of the ``v̂ᵀx_i`` widened by ``Σ_k |x_ik|·τ_k``;
* for a two-token query ``[a; b]`` the softmax weight of ``a`` is ``σ((a − b)ᵀW b)``, and
  ``|(a − b)ᵀW b| <= ‖a − b‖·‖b‖·𝒲 = λ``, so ``f = vᵀb + α·vᵀ(a − b)`` with
  ``α ∈ [σ(−λ), σ(λ)]``, a narrower interval;
* before ``v`` is known, ``|f(X)| <= max_i ‖x_i‖·V`` with ``V`` the declared bound on ``‖v‖``.

The prior is rigorous under the stated bounds.  A *miss* (``f(X)`` outside the prior,
which only a false bound can cause) is detected with one extra bit whenever the
bisection ends at the prior's edge; the query is then re-bisected over the full range,
and the miss is counted, never silent.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .errors import InvalidArgument, OracleInconsistent, QueryBudgetExceeded
from .expfield import ExpRatio
from .numbers import ball_interval, to_fraction
from .oracles import BaseOracle, ExactAnswer, ExactOracle, answer_equals
from .sequences import Sequence, as_sequence

__all__ = ["ThresholdOracle", "BisectingOracle"]


class ThresholdOracle:
    """Answers ``[f(X) >= θ]``, one counted bit per query.

    Parameters
    ----------
    inner : model or exact oracle
        The black box; a model (``SingleHead``, ...) is answered exactly.
    budget : int, optional
        The most bits it will answer.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> t = ThresholdOracle(SingleHead([[0]], [2]))
    >>> t.query_bit([[1]], 2), t.query_bit([[1]], "2.0001"), t.count
    (True, False, 2)
    """

    def __init__(self, inner, *, budget: int | None = None):
        if not hasattr(inner, "query_batch"):
            if not (hasattr(inner, "exact") and hasattr(inner, "d")):
                raise InvalidArgument(f"inner: expected an exact oracle or a model, got {type(inner).__name__}")
            inner = ExactOracle(inner)
        if not inner.exact:
            raise InvalidArgument("inner: a threshold oracle decides [f(X) >= θ] exactly; it needs an exact oracle")
        if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 0):
            raise InvalidArgument(f"budget: expected a non-negative integer or None, got {budget!r}")
        self.d = inner.d
        self.budget = budget
        self._inner = inner
        self._count = 0
        self._values: dict = {}  # id(seq) -> (seq, exact answer): one inner query per distinct sequence object

    @property
    def count(self) -> int:
        """Bits answered so far."""
        return self._count

    def query_bit(self, X, theta) -> bool:
        """``[f(X) >= θ]`` (θ exact: a number or a string, parsed, never evaluated)."""
        if self.budget is not None and self._count >= self.budget:
            raise QueryBudgetExceeded(f"the threshold oracle's budget of {self.budget} bits is spent")
        seq = X if isinstance(X, Sequence) else as_sequence(X, d=self.d)
        t = to_fraction(theta, name="theta")
        hit = self._values.get(id(seq))
        if hit is None or hit[0] is not seq:
            hit = self._values[id(seq)] = (seq, self._inner.query_batch([seq])[0])
        self._count += 1
        return _at_least(hit[1], t)


def _at_least(answer: ExactAnswer, t: Fraction) -> bool:
    """Decide ``answer >= t`` exactly: balls until they separate, then exact equality."""
    prec = 64
    while prec <= 1 << 16:
        lo, hi = ball_interval(answer.ball(prec))
        if lo >= t:
            return True
        if hi < t:
            return False
        prec *= 4
    if answer_equals(answer, ExpRatio.rational(t)):
        return True
    raise OracleInconsistent("the threshold bit could not be decided at 65536 bits")  # pragma: no cover


def _sigma_range(lam: float) -> tuple[float, float]:
    """Floats ``lo <= σ(−λ)`` and ``hi >= σ(λ)``."""
    s = 1.0 / (1.0 + math.exp(lam))
    return s * (1 - 1e-12), min(1.0, (1 - s) * (1 + 1e-12))


class BisectingOracle(BaseOracle):
    """A value oracle of accuracy ``ε`` whose every answer is bisected from threshold bits.

    Parameters
    ----------
    threshold : ThresholdOracle
    epsilon : number
        Declared accuracy of each answer (the bisection stops at width ``2ε``).
    v_bound : number
        ``V``, an assumed bound on ``‖v‖₂`` (the prior before ``v`` is known).
    w_bound : number, optional
        ``𝒲``, an assumed bound on ``‖W‖_F``: narrows the prior of two-token queries.

    Attributes
    ----------
    bits : int
        Threshold bits spent; ``full_range_bits`` what bisecting every query over the
        full range ``|f| <= max‖x_i‖·V`` would have spent; ``misses`` the queries whose
        value fell outside the prior (re-bisected over the full range).
    """

    def __init__(self, threshold: ThresholdOracle, *, epsilon, v_bound, w_bound=None, budget: int | None = None):
        eps = to_fraction(epsilon, name="epsilon")
        if eps <= 0:
            raise InvalidArgument(f"epsilon: expected a positive accuracy, got {epsilon!r}")
        V = to_fraction(v_bound, name="v_bound")
        if V <= 0:
            raise InvalidArgument(f"v_bound: expected a positive bound on ‖v‖, got {v_bound!r}")
        Wb = None if w_bound is None else to_fraction(w_bound, name="w_bound")
        if Wb is not None and Wb <= 0:
            raise InvalidArgument(f"w_bound: expected a positive bound, got {w_bound!r}")
        super().__init__(threshold.d, budget=budget, accuracy=eps)
        self.threshold = threshold
        self.epsilon, self.v_bound, self.w_bound = eps, V, Wb
        self.bits = 0
        self.full_range_bits = 0
        self.misses = 0
        self._v: dict[int, tuple[float, float]] = {}  # i -> (v̂_i, bound on |v̂_i − v_i|)

    def _answer(self, seq: Sequence) -> Fraction:
        rows = seq.dense()
        full = self._full_range(rows)
        lo, hi = self._prior(rows) or full
        lo, hi = max(lo, full[0]), min(hi, full[1])
        value, at_edge = self._bisect(seq, lo, hi)
        if at_edge and not self._inside(seq, lo, hi, at_edge):
            if (lo, hi) == full:
                raise OracleInconsistent(
                    f"query #{self._count + 1}: f(X) lies outside ±max‖x_i‖·V = ±{float(full[1]):.6g}: "
                    f"the bound v_bound = {self.v_bound} on ‖v‖ is false"
                )
            self.misses += 1
            value, at_edge = self._bisect(seq, *full)
            if at_edge and not self._inside(seq, *full, at_edge):
                raise OracleInconsistent(
                    f"query #{self._count + 1}: f(X) lies outside ±max‖x_i‖·V = ±{float(full[1]):.6g}: "
                    f"the bound v_bound = {self.v_bound} on ‖v‖ is false"
                )
        self.full_range_bits += _bits(full, self.epsilon)
        self._learn_v(rows, value)
        return value

    def _inside(self, seq, lo: Fraction, hi: Fraction, edge: str) -> bool:
        """One bit: is ``f(X)`` really on the inner side of the edge the bisection ended at?"""
        self.bits += 1
        return not self.threshold.query_bit(seq, hi) if edge == "hi" else self.threshold.query_bit(seq, lo)

    def _bisect(self, seq, lo: Fraction, hi: Fraction):
        """Bisect ``[lo, hi]`` down to width ``2ε``; returns the midpoint and which edge it stayed at, if any."""
        went_up = went_down = False
        while hi - lo > 2 * self.epsilon:
            mid = (lo + hi) / 2
            self.bits += 1
            if self.threshold.query_bit(seq, mid):
                lo, went_up = mid, True
            else:
                hi, went_down = mid, True
        edge = "hi" if not went_down and went_up else ("lo" if not went_up and went_down else None)
        return (lo + hi) / 2, edge

    def _full_range(self, rows) -> tuple[Fraction, Fraction]:
        r = max(_norm_up(row) for row in rows) * self.v_bound
        return -r, r

    def _learn_v(self, rows, value: Fraction) -> None:
        """A one-token query along an axis, ``[c·e_i]``, reads ``v_i = f/c`` to ``±ε/|c|``."""
        if len(rows) == 1:
            nz = [(i, x) for i, x in enumerate(rows[0]) if x]
            if len(nz) == 1:
                i, c = nz[0]
                self._v[i] = (float(value / c), float(self.epsilon / abs(c)) * (1 + 1e-12))

    def _prior(self, rows):
        """The interval known for ``f(X)`` from ``v̂`` (and 𝒲 for two tokens), or ``None``."""
        if len(self._v) < self.d:
            return None
        vh = [self._v[i][0] for i in range(self.d)]
        tv = [self._v[i][1] for i in range(self.d)]
        x = [[float(t) for t in row] for row in rows]
        vals = [sum(a * b for a, b in zip(r, vh)) for r in x]
        # the error of v̂ plus the float64 rounding of v̂ itself and of the dot product (cancellation included)
        rounding = (self.d + 4) * 2.0**-52
        errs = [sum(abs(a) * (t + rounding * abs(b)) for a, t, b in zip(r, tv, vh)) for r in x]
        lo = min(v - e for v, e in zip(vals, errs))
        hi = max(v + e for v, e in zip(vals, errs))
        if len(x) == 2 and self.w_bound is not None:
            a, b = x
            u = [p - q for p, q in zip(a, b)]
            lam = math.hypot(*u) * math.hypot(*b) * float(self.w_bound) * (1 + 1e-12)
            s_lo, s_hi = _sigma_range(lam)
            base, slope = vals[1], vals[0] - vals[1]
            e_base = errs[1]
            e_slope = sum(abs(p) * (t + rounding * abs(b)) for p, t, b in zip(u, tv, vh))
            ends = [base + s * slope for s in (s_lo, s_hi)]
            lo2 = min(ends) - e_base - s_hi * e_slope
            hi2 = max(ends) + e_base + s_hi * e_slope
            lo, hi = max(lo, lo2), min(hi, hi2)
        pad = 1e-12 * (abs(lo) + abs(hi)) + 1e-300  # the float arithmetic of the prior itself
        return Fraction(lo - pad), Fraction(hi + pad)


def _norm_up(row) -> Fraction:
    """A rational upper bound on the Euclidean norm of a row."""
    n2 = sum((Fraction(x) ** 2 for x in row), Fraction(0))
    r = Fraction(math.sqrt(float(n2)))
    while r * r < n2:
        r = r * (1 + Fraction(1, 2**40)) + Fraction(1, 2**60)
    return r


def _bits(interval, eps: Fraction) -> int:
    """Bits to bisect ``interval`` down to width ``2ε``."""
    width = interval[1] - interval[0]
    n = 0
    while width > 2 * eps:
        width /= 2
        n += 1
    return n

