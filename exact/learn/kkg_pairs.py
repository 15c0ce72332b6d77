"""Pair lines of the canonical multi-head learner: two scores per head from 2H answers.

Take a final token ``q``, ``k`` copies of a token ``u_a`` and one copy of a token ``u_b``.  In
head h the copies of ``u_a`` carry the weight ``r_h = e^{s_a}`` and ``u_b`` the weight
``t_h = e^{s_b}``, relative to ``q``, with ``s_x = (u_x − q)ᵀ(W_h q + c_h)``.  With
``V = Σ_h v_h``, ``ca_h = (u_a − q)ᵀv_h`` and ``cb_h = (u_b − q)ᵀv_h``,

    f([u_a × k, u_b, q]) = b + qᵀV + Σ_h (k·r_h·ca_h + t_h·cb_h) / (1 + k·r_h + t_h).

As a function of ``k`` each head's term is ``ca_h − C_h/(1 + k·R_h)`` with

    R_h = r_h / (1 + t_h),    C_h = ca_h − cb_h·θ_h,    θ_h = t_h / (1 + t_h) ∈ (0, 1),

so the line is the token-copy block's rational function of type (H, H), with the limit
``A = b + u_aᵀV``.  Its pole and residue now carry **two** new numbers per head: ``θ_h``
from the residue (once ``ca_h`` and ``cb_h`` are known), hence ``t_h``, and then ``r_h`` from
the pole.

**Labels.**  The learner knows every canonical ``v_h`` before it asks a pair line, hence every
``(ca_h, cb_h)``.  ``C_h`` lies strictly between ``ca_h`` and ``ca_h − cb_h``: in the open
interval ``J_h``.  The learner scales ``u_b − q`` by ``2^{-j}`` (which scales ``cb_h`` and
``s_b``) until the ``J_h`` are pairwise disjoint and exclude 0 (:func:`label_scale`).  Then
each pole's residue lies in exactly one ``J_h``, which names its head, and no head's pole can
vanish (``C_h ≠ 0``).  This holds for *every* model whose canonical heads have these ``v_h``:
given the heads of the first group, the labels are a proof, not a further genericity
assumption.  The first group's heads themselves rest on the probes being generic (two heads
with one ``W_h q_1`` look like one there), as in the fast plan; unlike the fast plan's named
blocks, whose residues must equal their predictions exactly, a pair line cannot expose such a
merge when the adversary also merges its poles (the residue's θ is free), so only the
verification queries catch a model built against a known seed.

**Exactness.**  With ``A`` known, 2H samples (``k = 0 .. 2H − 1``) determine a type-(H, H)
function: two such functions with one limit that agree at 2H points have a difference whose
numerator has degree at most 2H − 1.  The fit of type (m, m), m the number of canonical
heads, on the first 2m samples is confirmed exactly against all 2H, so the line's function,
and with it every head's ``(s_a, s_b)``, is that of every model of at most H heads with these
``v_h`` that gives these answers.  A line that shows fewer than m poles (two heads with one
``R_h``, probability 0 for random probes) is reported as degenerate (:class:`FewerPoles`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from flint import arb, ctx

from ..errors import OracleInconsistent, PrecisionInsufficient
from ..expfield import ExpPoly, ExpRatio, ExpSum
from ..identify import identify
from ..oracles import answer_equals
from ..sequences import Sequence
from .kkg_block import CONCLUSIVE_BITS, CONCLUSIVE_PREC, MAX_BLOCK_PREC, REFUTED, SINGULAR, block_balls
from .kkg_block import sample_ball as _ball

__all__ = [
    "PairCandidate",
    "FewerPoles",
    "pair_sequences",
    "pair_value",
    "label_scale",
    "model_pair",
    "identify_pair",
    "pair_certified_equals",
    "pair_symbolic_equals",
    "MAX_LABEL_SHIFT",
]

#: The largest ``j`` of the label scale ``2^{-j}`` tried before the pair is given up (labels that
#: need more are about as close as the probes' resolution, 2^-24).
MAX_LABEL_SHIFT = 40


class FewerPoles(Exception):
    """A pair line shows fewer poles than the canonical heads (two heads with one ``R_h``): the
    probes are not generic for this model."""


@dataclass(frozen=True)
class PairCandidate:
    """A candidate line: the constant ``base = b + qᵀV`` and per head ``(s_a, s_b, ca, cb)``, at
    ``k`` copies of ``u_a``."""

    base: Fraction
    heads: tuple
    k: int


def pair_sequences(ua, ub, q, ks) -> list[Sequence]:
    """``[u_a × k, u_b, q]`` for each ``k`` in ``ks``."""
    d = len(q)

    def sparse(x) -> dict:
        return {i: Fraction(v) for i, v in enumerate(x) if v}

    ta, tb, tq = sparse(ua), sparse(ub), sparse(q)
    return [Sequence.sparse(d, [ta] * k + [tb, tq]) for k in ks]


def pair_value(base: Fraction, heads, k: int) -> ExpSum:
    """The exact value ``base + Σ_h (k·ca·e^{s_a} + cb·e^{s_b})/(1 + k·e^{s_a} + e^{s_b})``.

    >>> v = pair_value(Fraction(1), [(Fraction(0), Fraction(0), Fraction(2), Fraction(4))], 1)
    >>> v.ball(64).contains(3)   # 1 + (2 + 4)/3
    True
    """
    terms = [ExpRatio.rational(base)]
    for sa, sb, ca, cb in heads:
        num = ExpPoly([(k * Fraction(ca), sa), (Fraction(cb), sb)])
        den = ExpPoly([(1, 0), (k, sa), (1, sb)])
        terms.append(ExpRatio(num, den))
    return ExpSum(terms)


def _interval(ca: Fraction, cb: Fraction) -> tuple[Fraction, Fraction]:
    """The closure of ``J``: the residues ``ca − cb·θ``, θ ∈ (0, 1), lie strictly inside."""
    return (min(ca, ca - cb), max(ca, ca - cb))


def label_scale(ca, cb) -> int | None:
    """The smallest ``j >= 0`` such that the intervals between ``ca_h`` and ``ca_h − 2^{-j}·cb_h``
    are pairwise disjoint and exclude 0, or ``None`` when no ``j <= MAX_LABEL_SHIFT`` does (two
    equal or zero ``ca``, or a zero ``cb``: then a residue cannot name its head).

    >>> label_scale([Fraction(2), Fraction(4)], [Fraction(1), Fraction(1)])
    0
    >>> label_scale([Fraction(1), Fraction(2)], [Fraction(3), Fraction(-1)])
    2
    >>> label_scale([Fraction(1), Fraction(1)], [Fraction(1), Fraction(2)]) is None
    True
    """
    ca = [Fraction(x) for x in ca]
    cb = [Fraction(x) for x in cb]
    if any(x == 0 for x in ca) or any(x == 0 for x in cb) or len(set(ca)) != len(ca):
        return None
    for j in range(MAX_LABEL_SHIFT + 1):
        eps = Fraction(1, 1 << j)
        ivs = sorted(_interval(a, eps * b) for a, b in zip(ca, cb))
        if all(not lo <= 0 <= hi for lo, hi in ivs) and all(ivs[i][1] < ivs[i + 1][0] for i in range(len(ivs) - 1)):
            return j
    return None


def model_pair(model, ua, ub, q, labels) -> tuple:
    """``(s_a, s_b)`` of each labelled head of a known canonical model, in the order of ``labels``
    (``(ca, cb)`` per head, as the plan predicts them from the ``v_h``)."""
    ua, ub, q = ([Fraction(x) for x in t] for t in (ua, ub, q))
    wa = [x - y for x, y in zip(ua, q)]
    wb = [x - y for x, y in zip(ub, q)]

    def dot(a, b) -> Fraction:
        return sum((x * y for x, y in zip(a, b) if x and y), Fraction(0))

    found = {}
    for h in model.heads:
        g = [sum((x * y for x, y in zip(row, q) if x and y), Fraction(ci)) for row, ci in zip(h.W, h.c)]
        found[(dot(wa, h.v), dot(wb, h.v))] = (dot(wa, g), dot(wb, g))
    try:
        scores = tuple(found[(Fraction(ca), Fraction(cb))] for ca, cb in labels)
    except KeyError:
        raise FewerPoles("a pair line's labels are not the model's heads") from None
    # two heads with one pole R = e^{s_a}/(1 + e^{s_b}) merge on the line, as the oracle's fit would show
    for i, (sa, sb) in enumerate(scores):
        for sa2, sb2 in scores[:i]:
            if ExpPoly([(1, sa), (1, sa + sb2)]) == ExpPoly([(1, sa2), (1, sa2 + sb)]):
                raise FewerPoles("two heads share a pair line's pole")
    return scores


def pair_certified_equals(answer, value: PairCandidate) -> bool:
    """Decide ``answer == value`` exactly in the exp-polynomial field."""
    return answer_equals(answer, pair_value(value.base, value.heads, value.k))


def pair_symbolic_equals(answer, value: PairCandidate) -> bool:
    """Decide ``answer == value`` in sympy, every exponential a positive symbol.

    Each head's ``e^{s_a}`` and ``e^{s_b}`` get a symbol ``X``, ``Y``; ``e^{−s_a}``, ``e^{−s_b}``,
    ``e^{s_a − s_b}`` and ``e^{s_b − s_a}`` are ``1/X``, ``1/Y``, ``X/Y`` and ``Y/X`` (where they have
    no stand-in yet): true relations, so an identity in the rational function field holds at the
    true exponentials and ``True`` is a proof; ``False`` means "not confirmed".
    """
    import sympy

    from proofs.expsymbols import ExpSymbols

    def rat(x) -> sympy.Rational:
        x = Fraction(x)
        return sympy.Rational(x.numerator, x.denominator)

    E = ExpSymbols()
    for sa, sb, _, _ in value.heads:
        for s in (sa, sb):
            if s:
                E(rat(s))
    for sa, sb, _, _ in value.heads:
        a, b = rat(sa), rat(sb)
        X = E(a) if a else sympy.Integer(1)
        Y = E(b) if b else sympy.Integer(1)
        for e, val in ((-a, 1 / X), (-b, 1 / Y), (a - b, X / Y), (b - a, Y / X)):
            if e != 0:
                try:
                    E.assign(e, val)
                except ValueError:  # the exponent has a stand-in already
                    pass
    lhs = E.substitute(answer.sympy())
    rhs = E.substitute(pair_value(value.base, value.heads, value.k).sympy())
    symbols = sorted(lhs.free_symbols | rhs.free_symbols, key=lambda x: x.name)
    if not symbols:
        return bool(lhs.is_Rational and rhs.is_Rational and lhs == rhs)
    K, *_ = sympy.field(symbols, sympy.QQ)
    return K.from_expr(lhs) == K.from_expr(rhs)


class _Line:
    """One type-(m, m) fit of a pair line at one precision, labelled: per head ``(s_a, s_b)`` balls,
    or a status (``"singular"``, ``"refuted"``, ``"unresolved"``)."""

    what = "a pair line's score"

    def __init__(self, samples, labels, A: Fraction, prec: int):
        self.prec = prec
        m = len(labels)
        got = block_balls([(k, _ball(y, prec)) for k, y in samples], m, A, prec)
        self.status = "ok"
        self.heads: list = []
        if got is SINGULAR or got is REFUTED:
            self.status = got
            return
        if got is None or len(got[1]) != m:
            self.status = "unresolved"
            return
        with ctx.workprec(prec):
            named: list = [None] * m
            for log_R, C in got[1]:
                inside = [j for j, (ca, cb) in enumerate(labels) if _holds(_interval(ca, cb), C, prec)]
                touches = [j for j, (ca, cb) in enumerate(labels) if _touches(_interval(ca, cb), C, prec)]
                if not touches or (len(inside) == 1 and named[inside[0]] is not None):
                    self.status = REFUTED  # a residue no head's interval holds, or two poles for one head
                    return
                if len(inside) != 1 or len(touches) != 1:
                    self.status = "unresolved"
                    return
                j = inside[0]
                ca, cb = (_ball(x, prec) for x in labels[j])
                theta = (ca - C) / cb
                t = theta / (1 - theta)
                r = log_R.exp() * (1 + t)
                if not (t > 0 and r > 0):
                    self.status = "unresolved"
                    return
                named[j] = (r.log(), t.log())
        self.heads = named

    def refine(self):
        raise PrecisionInsufficient(f"a pair line at {self.prec} bits")


def _holds(interval, C, prec: int) -> bool:
    lo, hi = (_ball(x, prec) for x in interval)
    return bool(C > lo and C < hi)


def _touches(interval, C, prec: int) -> bool:
    lo, hi = (_ball(x, prec) for x in interval)
    return not bool(C < lo or C > hi)


class _Score:
    what = "a pair line's score"

    def __init__(self, line: _Line, index: int):
        self.line, self.index = line, index

    def ball(self):
        head, part = divmod(self.index, 2)
        b = self.line.heads[head][part]
        return b if b.is_finite() else None

    def refine(self):
        self.line.refine()


def identify_pair(
    samples,
    labels,
    *,
    A: Fraction,
    H: int,
    equals: Callable = pair_certified_equals,
    prec: int = 64,
    max_prec: int = MAX_BLOCK_PREC,
) -> tuple:
    """The exact ``(s_a, s_b)`` of every labelled head of a pair line.

    Parameters
    ----------
    samples : list of (int, answer)
        The answers at ``k = 0 .. 2H − 1`` copies of ``u_a``.
    labels : list of (Fraction, Fraction)
        ``(ca_h, cb_h)`` per canonical head, with disjoint intervals (:func:`label_scale`).
    A : Fraction
        The limit ``b + u_aᵀV``.
    H : int
        The head bound (the samples must be 2H).

    Returns
    -------
    tuple of (Fraction, Fraction)
        Per head, in the order of ``labels``.

    Raises
    ------
    FewerPoles
        When the line shows fewer poles than heads at every precision (degenerate probes).
    OracleInconsistent
        When the line's resolved fit has a pole no head's interval holds, or no candidate reproduces
        the answers: the oracle is not a sum of at most H heads with these ``v_h``.
    PrecisionInsufficient
        When ``max_prec`` does not resolve the line.

    Examples
    --------
    >>> from exact import ExactOracle, MultiHead
    >>> m = MultiHead([([[1, 0], [0, 2]], [1, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])
    >>> q, ua = [0, 1], [1, 1]                    # w_a = (1, 0): ca = (1, 2)
    >>> label_scale([1, 2], [Fraction(5, 4), 2])  # w_b = (1, 1/2): cb = (5/4, 2), scaled by 2^-2
    2
    >>> ub = [Fraction(1, 4), Fraction(9, 8)]     # q + w_b/4
    >>> labels = [(1, Fraction(5, 16)), (2, Fraction(1, 2))]
    >>> answers = ExactOracle(m).query_batch(pair_sequences(ua, ub, q, range(4)))
    >>> got = identify_pair(list(enumerate(answers)), labels, A=Fraction(7, 2), H=2)   # A = u_aᵀV
    >>> [(str(a), str(b)) for a, b in got]        # (s_a, s_b) = (w_aᵀW_h q, (w_b/4)ᵀW_h q)
    [('0', '1/4'), ('1', '1/4')]
    """
    samples = [(int(k), y) for k, y in samples]
    labels = [(Fraction(ca), Fraction(cb)) for ca, cb in labels]
    m = len(labels)
    if len(samples) < 2 * H or len({k for k, _ in samples}) != len(samples) or m > H:
        raise ValueError(f"samples: expected {2 * H} at distinct k for at most {H} heads, got {len(samples)}, {m} heads")
    A = Fraction(A)
    base = A - sum((ca for ca, _ in labels), Fraction(0))
    p = prec
    nonsingular = resolved = False
    while p <= max_prec:
        line = _Line(samples, labels, A, p)
        if line.status == SINGULAR:
            p *= 2
            continue
        nonsingular = True
        if line.status == REFUTED:
            resolved = True
        elif line.status == "ok":
            got = _confirm(line, samples, labels, base, equals, p)
            if isinstance(got, tuple):
                return got
            resolved = got
        p *= 2
    if not nonsingular and max_prec >= CONCLUSIVE_PREC:
        raise FewerPoles(f"a pair line shows fewer than {m} poles (two heads share its pole)")
    if not resolved or max_prec < CONCLUSIVE_PREC:
        raise PrecisionInsufficient(f"a pair line of {m} heads is not resolved at {max_prec} bits (raise max_prec)")
    raise OracleInconsistent(
        f"no sum of at most {H} softmax heads with these v_h and rational scores reproduces this pair line's "
        f"{len(samples)} values at {max_prec} bits: the oracle is not such a sum (or its parameters need more than "
        "max_prec bits)"
    )


def _confirm(line: _Line, samples, labels, base: Fraction, equals, prec: int) -> tuple | bool:
    """The confirmed scores, or whether the failure is conclusive (narrow balls, a visible miss)."""
    m = len(labels)
    parts = [_Score(line, i) for i in range(2 * m)]
    result: list = []
    visible: list = []

    def confirm(values, fresh):
        heads = tuple((_fraction(values[2 * j]), _fraction(values[2 * j + 1]), ca, cb)
                      for j, (ca, cb) in enumerate(labels))
        for k, y in samples:  # a rigorous ball test first
            if not y.ball(prec).overlaps(pair_value(base, heads, k).ball(prec)):
                visible.append(k)
                return list(fresh)
        for k, y in samples:
            if not equals(y, PairCandidate(base, heads, k)):
                return list(fresh)
        result.append(tuple((sa, sb) for sa, sb, _, _ in heads))
        return []

    if not parts:  # no heads: the line must be the constant b + qᵀV at every sample
        confirm([], [])
    else:
        try:
            identify(parts, confirm=confirm)
        except PrecisionInsufficient:
            pass
    if result:
        return result[0]
    narrow = all(b.rad() < arb(2) ** -CONCLUSIVE_BITS for pair in line.heads for b in pair)
    return bool(narrow and visible)


def _fraction(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    return Fraction(int(x.p), int(x.q))
