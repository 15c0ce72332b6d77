"""One block of the canonical multi-head learner [KKG26]: poles and residues, exactly.

With k copies of a token u followed by q, every head h of a multi-head model gives

    f([u,…,u, q]) = A − Σ_h c_h / (1 + k·r_h),   A = uᵀΣ_h v_h,  c_h = (u − q)ᵀv_h,
                                                   r_h = e^{s_h},  s_h = (u − q)ᵀW_h q,

a rational function of k of type (H, H) in which heads with equal s_h merge into one pole
and heads with c_h = 0 show none.  From the answers at k = 0..2H this module recovers
``A`` and the pairs ``(s_h, c_h)``:

1. **interpolation** in ball arithmetic: ``y_k·D(k) = N(k)`` with ``D(0) = 1``, a linear
   system of 2H + 1 unknowns solved over ``arb``;
2. **poles and residues**: the roots ``−1/r_h`` of ``D`` (``acb_poly.roots``), and
   ``c_h = −r_h·N(k_h)/D'(k_h)``; poles whose residue is not certified nonzero are dropped
   (an upper bound H on the heads leaves surplus poles with zero residue);
3. **identification**: ``s_h = ln r_h``, ``c_h`` and ``A`` as the simplest rationals in their
   balls, **confirmed exactly**: every answer must equal ``A − Σ c_h/(1 + k·e^{s_h})`` as an
   exact exp-ratio; otherwise the precision doubles.

This is the building block of the learner; the matching of heads across blocks is not
built yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from flint import acb_poly, arb, ctx

from ..certify import answer_equals
from ..errors import OracleInconsistent, PrecisionInsufficient
from ..expfield import ExpPoly, ExpRatio, ExpSum
from ..linalg import ball_solve
from ..numbers import simplest_in_ball
from ..sequences import Sequence

__all__ = ["BlockFit", "block_sequences", "identify_block", "block_value"]


@dataclass(frozen=True)
class BlockFit:
    """``A`` and the canonical heads ``(s_h, c_h)`` of one block, sorted by ``s``."""

    A: Fraction
    heads: tuple


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


def _solve(ys: list, H: int, prec: int):
    """``N`` (degree H) and ``D`` (degree H, ``D(0) = 1``) with ``y_k·D(k) = N(k)``, k = 0..2H."""
    n = 2 * H + 1
    with ctx.workprec(prec):
        rows, rhs = [], []
        for k in range(n):
            powers = [arb(k) ** j for j in range(H + 1)]
            rows.append(powers + [-ys[k] * powers[j] for j in range(1, H + 1)])
            rhs.append(ys[k])
        x = ball_solve(rows, rhs)
        N = x[: H + 1]
        D = [arb(1)] + x[H + 1 :]
    return N, D


def _candidates(ys: list, H: int, prec: int):
    """Balls for ``A`` and the ``(s_h, c_h)`` of the certified poles, or ``None`` if not resolved."""
    try:
        N, D = _solve(ys, H, prec)
    except (ZeroDivisionError, ValueError):  # singular at this precision (fewer heads than H)
        return None
    if not all(x.is_finite() for x in N + D):
        return None
    with ctx.workprec(prec):
        while len(D) > 1 and D[-1].contains(0):  # surplus degree: fewer canonical heads than H
            if not N[-1].contains(0):
                return None
            D, N = D[:-1], N[:-1]
        h = len(D) - 1
        A = N[h] / D[h] if h else N[0]
        if not h:
            return A, []
        try:
            roots = acb_poly(D).roots()
        except ValueError:  # not separated at this precision
            return None
        dD = acb_poly(D).derivative()
        Np = acb_poly(N)
        heads = []
        for z in roots:
            if not z.imag.contains(0) or not z.real < 0:
                return None  # not yet resolved as a negative real pole
            r = -1 / z.real
            c = -(r * Np(z).real) / dD(z).real
            heads.append((r.log(), c))
    return A, heads


def identify_block(answers, H: int, *, prec: int = 64, max_prec: int = 1 << 14) -> BlockFit:
    """``A`` and the canonical heads of a block from its answers at k = 0..2H (exact answers).

    Examples
    --------
    >>> from exact import ExactOracle, MultiHead
    >>> m = MultiHead([([[1, 0], [0, 2]], [1, "1/2"]), ([[0, 1], [-1, 0]], [2, 0])])
    >>> u, q = [1, 0], [0, 1]
    >>> fit = identify_block(ExactOracle(m).query_batch(block_sequences(u, q, range(5))), 2)
    >>> [(str(s), str(c)) for s, c in fit.heads], fit.A   # s_h = (u − q)ᵀW_h q, c_h = (u − q)ᵀv_h
    ([('-2', '1/2'), ('1', '2')], Fraction(3, 1))
    """
    if len(answers) != 2 * H + 1:
        raise ValueError(f"answers: expected 2H + 1 = {2 * H + 1}, got {len(answers)}")
    while prec <= max_prec:
        ys = [a.ball(prec) for a in answers]
        # fewer canonical heads than H make the full system singular: fit every type (h, h),
        # h = H, H − 1, …, 0, on the first 2h + 1 answers; only an exact fit of all of them counts
        for h in range(H, -1, -1):
            got = _candidates(ys[: 2 * h + 1], h, prec)
            if got is None:
                continue
            A_ball, head_balls = got
            try:
                A = _simplest(A_ball)
                heads = sorted((_simplest(s), _simplest(c)) for s, c in head_balls)
            except (PrecisionInsufficient, ValueError):
                continue
            if all(answer_equals(a, block_value(A, heads, k)) for k, a in enumerate(answers)):
                return BlockFit(A, tuple((s, c) for s, c in heads if c))
        prec *= 2
    raise OracleInconsistent(
        f"no sum of at most {H} heads with rational scores and values reproduces this block's answers "
        f"(up to {max_prec} bits): more heads than {H}, or not a sum of softmax heads"
    )


def _simplest(ball) -> Fraction:
    """The simplest rational in a finite ball (a candidate only: :func:`identify_block` confirms it)."""
    if not ball.is_finite():
        raise PrecisionInsufficient("an unbounded ball")
    q = simplest_in_ball(ball)
    return Fraction(int(q.p), int(q.q))
