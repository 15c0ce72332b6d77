"""One block of the canonical multi-head learner [KKG26]: poles and residues, exactly.

With k copies of a token u followed by q, every head h of a multi-head model gives

    f([u,…,u, q]) = A − Σ_h c_h / (1 + k·r_h),   A = uᵀΣ_h v_h,  c_h = (u − q)ᵀv_h,
                                                   r_h = e^{s_h},  s_h = (u − q)ᵀW_h q,

(with biases, ``s_h = (u − q)ᵀ(W_h q + c_h')`` for the head's score bias ``c_h'`` and the
output bias adds to ``A``: the form is the same),

a rational function ``N(k)/D(k)`` of type (H, H) with ``D(0) = 1``, in which heads with
equal ``s_h`` merge into one pole and heads with ``c_h = 0`` show none.  A block is a set
of *samples* ``(k, y_k)``: oracle answers, or values already known exactly (the value at
``k = 0`` is ``qᵀΣv_h``, and the limit ``A`` as ``k → ∞`` is ``uᵀΣv_h``, once ``Σv_h`` is
known).  From ``2H + 1`` pieces of information :func:`identify_block` recovers ``A`` and
the pairs ``(s_h, c_h)``:

1. **interpolation** in ball arithmetic: ``y_k·D(k) = N(k)`` for each sample, and
   ``N_H = A·D_H`` when ``A`` is known, a linear system of 2H + 1 unknowns solved over
   ``arb``; with fewer canonical heads than H the system is singular, so every type
   (h, h), h = H, H − 1, …, 0, is tried on the first samples it needs;
2. **poles and residues**: the roots ``−1/r_h`` of ``D`` (``acb_poly.roots``, refined to
   the working precision) and ``c_h = −r_h·N(−1/r_h)/D'(−1/r_h)``;
3. **identification** with the shared :func:`~exact.identify.identify` kernel: ``A``,
   ``s_h = ln r_h`` and ``c_h`` are the simplest rationals in their balls, and the whole
   candidate is **confirmed exactly** against every sample (an exp-ratio identity for an
   answer, a rational identity for a known value); otherwise the precision doubles.

Two type-(H, H) rational functions that agree on 2H + 1 pieces of information are equal,
so the confirmed pairs are those of *every* model of at most H heads that gives these
answers.  The confirmation is pluggable: :func:`answer_equals` decides the identity in the
exp-polynomial field (certified mode), :func:`symbolic_equals` in sympy with each
exponential a positive symbol (symbolic mode).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from flint import acb_poly, arb, ctx

from ..errors import OracleInconsistent, PrecisionInsufficient
from ..expfield import ExpPoly, ExpRatio, ExpSum
from ..identify import identify
from ..linalg import ball_solve
from ..oracles import answer_equals
from ..sequences import Sequence

__all__ = [
    "BlockFit",
    "block_sequences",
    "identify_block",
    "block_value",
    "model_block",
    "certified_equals",
    "symbolic_equals",
    "MAX_BLOCK_PREC",
    "block_balls",
    "sample_ball",
]

#: The largest working precision (bits) a block is fitted at before it is declared inconsistent.
MAX_BLOCK_PREC = 1 << 14

#: Below this largest precision a failed block is reported as a precision failure, never as an
#: inconsistent oracle: the probes' entries have 2^24 denominators, so a block's scores and
#: values need a few hundred bits before the simplest rationals in their balls can be right.
CONCLUSIVE_PREC = 1024

#: A candidate that fails its exact confirmation refutes the block only when every ball of its fit
#: is narrower than 2^-CONCLUSIVE_BITS (else the failure is reported as one of precision).
CONCLUSIVE_BITS = 256


@dataclass(frozen=True)
class BlockFit:
    """``A`` and the canonical heads ``(s_h, c_h)`` of one block, sorted by ``s``; ``prec`` is
    the working precision that identified them (0 for a fit computed exactly from a model)."""

    A: Fraction
    heads: tuple
    prec: int


def block_sequences(u, q, ks) -> list[Sequence]:
    """``[u, …, u, q]`` with ``k`` copies of ``u``, for each ``k`` in ``ks``."""
    d = len(q)
    tu = {i: Fraction(x) for i, x in enumerate(u) if x}
    tq = {i: Fraction(x) for i, x in enumerate(q) if x}
    return [Sequence.sparse(d, [tu] * k + [tq]) for k in ks]


def block_value(A: Fraction, heads, k: int):
    """The exact value ``A − Σ c_h/(1 + k·e^{s_h})`` as an exp-sum."""
    terms = [ExpRatio.rational(A)]
    for s, c in heads:
        den = ExpPoly([(1, 0), (k, s)]) if k else ExpPoly.constant(1)
        terms.append(ExpRatio(ExpPoly.constant(-Fraction(c)), den))
    return ExpSum(terms)


def model_block(model, u, q) -> BlockFit:
    """The block ``(u, q)`` of a known model, from its parameters: ``A`` and the pairs
    ``(s, c)`` with equal scores merged and zero residues dropped (with biases, each score
    is ``wᵀ(W q + c)`` for the head's score bias, and ``A`` holds the output bias).

    >>> from exact import MultiHead
    >>> m = MultiHead([([[1, 0], [0, 2]], [1, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])
    >>> fit = model_block(m, [1, 0], [0, 1])
    >>> [(str(s), str(c)) for s, c in fit.heads], fit.A
    ([('-2', '1/2'), ('1', '2')], Fraction(3, 1))
    """
    u = [Fraction(x) for x in u]
    q = [Fraction(x) for x in q]
    w = [a - b for a, b in zip(u, q)]
    merged: dict = {}
    A = Fraction(getattr(model, "b", 0))
    for h in model.heads:
        Wq = [sum((x * y for x, y in zip(row, q) if x and y), ci) for row, ci in zip(h.W, h.c)]
        s = sum((x * y for x, y in zip(w, Wq)), Fraction(0))
        merged[s] = merged.get(s, Fraction(0)) + sum((x * y for x, y in zip(w, h.v)), Fraction(0))
        A += sum((x * y for x, y in zip(u, h.v)), Fraction(0))
    return BlockFit(A, tuple(sorted((s, c) for s, c in merged.items() if c)), prec=0)


def rational_value(A: Fraction, heads, k: int) -> Fraction | None:
    """``A − Σ c_h/(1 + k·e^{s_h})`` when it is rational (``k = 0``, or no heads), else ``None``."""
    if k and heads:
        return None
    return A - sum((Fraction(c) for _, c in heads), Fraction(0))


def symbolic_equals(answer, value) -> bool:
    """Decide ``answer == value`` in sympy: each ``e^{s}`` a positive symbol, ``e^{−s}`` its inverse.

    The answer's sympy form writes each head as ``(x + y·e^{±s})/(1 + κ·e^{±s})``; the
    candidate's exponents and their negatives get one symbol each, every other exponential
    an independent one, and both sides must be the same element of the rational function field.
    An identity there holds at the true exponentials, so ``True`` is a proof; ``False``
    means "not confirmed".
    """
    import sympy

    from proofs.expsymbols import ExpSymbols  # the one implementation of the substitution

    E = ExpSymbols()
    for s in sorted({Fraction(s) for s, _ in value.heads if s}):
        e = sympy.Rational(s.numerator, s.denominator)
        E.assign(-e, 1 / E(e))
    lhs = E.substitute(answer.sympy())
    rhs = E.substitute(block_value(value.A, value.heads, value.k).sympy())
    symbols = sorted(lhs.free_symbols | rhs.free_symbols, key=lambda x: x.name)
    if not symbols:
        return bool(lhs.is_Rational and rhs.is_Rational and lhs == rhs)
    K, *_ = sympy.field(symbols, sympy.QQ)  # sparse rational function arithmetic: cancels exactly
    return K.from_expr(lhs) == K.from_expr(rhs)


@dataclass(frozen=True)
class _Candidate:
    """What :func:`symbolic_equals` compares an answer with."""

    A: Fraction
    heads: tuple
    k: int


def certified_equals(answer, value: _Candidate) -> bool:
    """Decide ``answer == value`` exactly in the exp-polynomial field."""
    return answer_equals(answer, block_value(value.A, value.heads, value.k))


def _system(samples: list, h: int, A, prec: int):
    """``N`` (degree h) and ``D`` (degree h, ``D(0) = 1``) through the first samples (and ``A``)."""
    n = 2 * h + 1 - (A is not None)
    if len(samples) < n:
        return None
    with ctx.workprec(prec):
        rows, rhs = [], []
        for k, y in samples[:n]:
            powers = [arb(k) ** j for j in range(h + 1)]
            rows.append(powers + [-y * powers[j] for j in range(1, h + 1)])
            rhs.append(y)
        if A is not None:  # the limit k → ∞: N_h = A·D_h (N_0 = A when h = 0)
            row = [arb(0)] * (2 * h + 1)
            row[h] = arb(1)
            a = _ball(A, prec)
            if h:
                row[2 * h] = -a
            rows.append(row)
            rhs.append(arb(0) if h else a)
        x = ball_solve(rows, rhs)
    return x[: h + 1], [arb(1)] + x[h + 1 :]


#: What :func:`_balls` returns for a fit whose poles are proved not to be negative reals.
REFUTED = "refuted"

#: What :func:`_balls` returns when the interpolation system is not certified nonsingular (a
#: type larger than the number of poles).
SINGULAR = "singular"


def _balls(samples: list, h: int, A, prec: int):
    """Balls for ``A`` and the ``(s_h, c_h)`` of a type-(h, h) fit, or ``None`` if not resolved."""
    try:
        got = _system(samples, h, A, prec)
    except (ZeroDivisionError, ValueError):  # singular at this precision (fewer heads than h)
        return SINGULAR
    if got is None:
        return None
    N, D = got
    if not all(x.is_finite() for x in N + D):
        return None
    with ctx.workprec(prec):
        if h and D[h].contains(0):  # a surplus degree: a smaller type fits
            return None
        A_ball = N[h] / D[h] if h else N[0]
        if not h:
            return A_ball, []
        try:
            roots = acb_poly(D).roots(tol=arb(2) ** (-(prec // 2)), maxprec=prec)
        except ValueError:  # not separated (or not refined) at this precision
            return None
        dD = acb_poly(D).derivative()
        Np = acb_poly(N)
        heads = []
        for z in roots:
            if not z.imag.contains(0) or z.real >= 0:
                return REFUTED  # a pole proved not negative real: no sum of softmax heads has it
            if not z.real < 0:
                return None  # not yet resolved as a negative real pole
            r = -1 / z.real
            c = -(r * Np(z).real) / dD(z).real
            heads.append((r.log(), c))
    return A_ball, heads


def block_balls(samples: list, h: int, A, prec: int):
    """The balls of a type-(h, h) fit through ball samples ``(k, y)`` (and the limit ``A`` when known):
    ``(A_ball, [(ln r_h, c_h), ...])`` for the form ``A − Σ c_h/(1 + k r_h)``; ``None`` when not
    resolved at ``prec`` bits, :data:`SINGULAR` when the system is not certified nonsingular,
    :data:`REFUTED` when a pole is proved not to be a negative real."""
    return _balls(samples, h, A, prec)


class _Fit:
    """The balls of one type-(h, h) fit at one precision: :func:`identify_block` raises the
    precision between attempts, so a quantity that needs more makes this attempt fail."""

    def __init__(self, samples, h, A, prec):
        self.h, self.A, self.prec = h, A, prec
        ys = [(k, y if isinstance(y, arb) else _ball(y, prec)) for k, y in samples]
        self.got = _balls(ys, h, A, prec)

    def refine(self):
        raise PrecisionInsufficient(f"a block fit of type ({self.h}, {self.h}) at {self.prec} bits")


def sample_ball(y, prec: int):
    """The ball of a block's sample at ``prec`` bits: an oracle answer's, or a known Fraction's."""
    if isinstance(y, Fraction):
        with ctx.workprec(prec):
            return arb(y.numerator) / y.denominator
    return y.ball(prec)


_ball = sample_ball


class _Part:
    """One quantity of a fit (``A``, or ``s``/``c`` of the i-th pole): a ball from the shared fit."""

    what = "a block's limit, score or value"  # named only in grid messages: blocks use none

    def __init__(self, fit: _Fit, index: int):
        self.fit, self.index = fit, index

    def ball(self):
        A_ball, heads = self.fit.got  # parts exist only for a fit that resolved h poles
        if self.index == 0:
            return None if self.fit.A is not None else A_ball
        pole, part = divmod(self.index - 1, 2)
        b = heads[pole][part]
        return b if b.is_finite() else None

    def refine(self):
        self.fit.refine()


def identify_block(
    samples,
    H: int,
    *,
    A: Fraction | None = None,
    equals: Callable = certified_equals,
    prec: int = 64,
    max_prec: int = MAX_BLOCK_PREC,
) -> BlockFit:
    """``A`` and the canonical heads of a block from its samples ``(k, y_k)``, identified exactly.

    Parameters
    ----------
    samples : list of (int, answer or Fraction)
        Oracle answers (exact) and values known exactly, at distinct ``k >= 0``; together
        with ``A`` they must give at least ``2H + 1`` pieces of information.
    H : int
        An upper bound on the number of heads (surplus poles are found absent).
    A : Fraction, optional
        The limit ``uᵀΣv_h`` when it is already known.
    equals : callable
        ``equals(answer, candidate) -> bool``, the exact decision for an answer:
        :func:`certified_equals` (default) or :func:`symbolic_equals`.

    Raises
    ------
    OracleInconsistent
        When no sum of at most ``H`` heads with rational scores and values reproduces every
        sample up to ``max_prec`` bits (more heads than ``H``, or not a sum of softmax heads).

    Examples
    --------
    >>> from exact import ExactOracle, MultiHead
    >>> m = MultiHead([([[1, 0], [0, 2]], [1, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])
    >>> u, q = [1, 0], [0, 1]
    >>> answers = ExactOracle(m).query_batch(block_sequences(u, q, range(5)))
    >>> fit = identify_block(list(enumerate(answers)), 2)
    >>> [(str(s), str(c)) for s, c in fit.heads], fit.A   # s_h = (u − q)ᵀW_h q, c_h = (u − q)ᵀv_h
    ([('-2', '1/2'), ('1', '2')], Fraction(3, 1))
    """
    samples = [(int(k), y) for k, y in samples]
    need = 2 * H + 1 - (A is not None)
    if len(samples) < need or len({k for k, _ in samples}) != len(samples):
        raise ValueError(f"samples: expected at least {need} at distinct k, got {len(samples)}")
    A = None if A is None else Fraction(A)
    p = prec
    resolved = False  # whether the largest nonsingular type was resolved at the last precision tried
    while p <= max_prec:
        largest = None
        for h in range(H, -1, -1):  # fewer canonical heads than H make the larger systems singular
            fit = _try(samples, h, A, p, equals)
            if isinstance(fit, BlockFit):
                return fit
            if largest is None and fit != "singular":
                largest = fit
        resolved = largest == "resolved"
        p *= 2
    if not resolved or max_prec < CONCLUSIVE_PREC:
        raise PrecisionInsufficient(
            f"a block of at most {H} heads is not resolved at {max_prec} bits (raise max_prec), or the model has "
            f"more than {H} canonical heads (raise heads= or max_heads=)"
        )
    raise OracleInconsistent(
        f"no sum of at most {H} softmax heads with rational scores and values resolved at {max_prec} bits "
        f"reproduces this block's {len(samples)} values: the model has more than {H} canonical heads (raise heads= "
        "or max_heads=), or is not a sum of softmax heads (or its parameters need more than max_prec bits)"
    )


def _try(samples, h: int, A, prec: int, equals) -> BlockFit | str:
    """The type-(h, h) fit at ``prec`` bits, confirmed exactly; else ``"resolved"`` (its poles and
    residues were resolved, or proved not negative reals, but no candidate reproduced the
    samples), ``"singular"`` (the system is not certified nonsingular) or ``"unresolved"``."""
    fit = _Fit(samples, h, A, prec)  # one precision per attempt: the caller raises it
    got = fit.got
    if got is REFUTED:
        return "resolved"
    if got is SINGULAR:
        return "singular"
    if got is None or len(got[1]) != h:
        return "unresolved"
    parts = [_Part(fit, i) for i in range(2 * h + 1)]
    result: list = []
    visible: list = []  # samples a candidate missed by more than the working precision can hide

    def confirm(values, fresh):
        a = A if A is not None else _fraction(values[0])
        heads = tuple(sorted((_fraction(values[1 + 2 * i]), _fraction(values[2 + 2 * i])) for i in range(h)))
        if len({s for s, _ in heads}) != h or any(c == 0 for _, c in heads):
            return list(fresh)
        for k, y in samples:  # a cheap rigorous test first: a candidate whose ball misses an answer's is out
            if not isinstance(y, Fraction) and not _may_equal(y, a, heads, k, prec):
                visible.append(k)
                return list(fresh)
        for k, y in samples:
            if isinstance(y, Fraction):
                if rational_value(a, heads, k) != y and not (k and _equal_rational(a, heads, k, y)):
                    value = rational_value(a, heads, k)
                    if value is not None and abs(value - y) > Fraction(1, 2 ** (prec // 2)):
                        visible.append(k)
                    return list(fresh)
            elif not equals(y, _Candidate(a, heads, k)):
                return list(fresh)
        result.append(BlockFit(a, heads, prec=prec))
        return []

    guesses = [A] + [None] * (2 * h) if A is not None else None
    try:
        identify(parts, confirm=confirm, guesses=guesses)
    except PrecisionInsufficient:
        pass
    if result:
        return result[0]
    # A mismatch proves something only when every ball was narrow (then the simplest rational in
    # each is the quantity itself whenever its height is below about 2^(CONCLUSIVE_BITS/2)) and
    # the candidate missed a sample visibly, by more than the working precision: a miss below it
    # is what a pole too far out to resolve at this precision looks like.
    A_ball, heads = got
    balls = ([A_ball] if A is None else []) + [b for pair in heads for b in pair]
    narrow = all(b.rad() < arb(2) ** -CONCLUSIVE_BITS for b in balls)
    return "resolved" if narrow and visible else "unresolved"


def _may_equal(answer, A, heads, k: int, prec: int) -> bool:
    """Whether the answer's ball and the candidate's overlap at ``prec`` bits (``False`` is a proof
    that they differ)."""
    return bool(answer.ball(prec).overlaps(block_value(A, heads, k).ball(prec)))


def _equal_rational(A, heads, k, y) -> bool:
    """Whether ``A − Σ c/(1 + k e^{s}) = y`` exactly for a rational ``y`` (``k > 0``)."""
    return block_value(A, heads, k) == ExpSum([ExpRatio.rational(y)])


def _fraction(x) -> Fraction:
    if isinstance(x, Fraction):
        return x
    return Fraction(int(x.p), int(x.q))

