"""Probe geometry of the one-layer Transformer learners with biases (docs/ffn.md, "The learner"): the
learned one-token function's planes, regions and gradients, the d + 1 probe points chosen on it
(query-free), the probe directions, and the residual block a canonical (W, c, g₁, K) describes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from flint import fmpq

from ..errors import NotIdentifiable, OracleInconsistent
from ..ffn import FunctionForm
from ..linalg import QMatrix
from ..sequences import Sequence
from ..transformer import Transformer

#: Candidate point sets tried (query-free, on the learned form) before the block is called not identifiable.
POINT_DRAWS = 64


def _planes(form: FunctionForm) -> list:
    """The hyperplanes ``(n, o)`` of a function form (offset 0 for a bias-free one)."""
    d = form.d
    return [(n[:d], n[d] if form.affine else Fraction(0)) for n in form.normals]


def _region(form: FunctionForm, x) -> tuple | None:
    """The signs of ``n_jᵀx + o_j`` at ``x`` (``None`` on a hyperplane)."""
    signs = []
    for n, o in _planes(form):
        z = _dot(n, x) + o
        if z == 0:
            return None
        signs.append(z > 0)
    return tuple(signs)


def _gradient(form: FunctionForm, signs: tuple) -> list:
    """``g₁``'s gradient on the region with these signs: ``L + Σ_j κ_j·(±n_j)``."""
    d = form.d
    G = list(form.linear[:d])
    for (n, _), k, s in zip(_planes(form), form.kinks, signs):
        for i in range(d):
            G[i] += k * n[i] if s else -k * n[i]
    return G


def _margin(form: FunctionForm, x, u) -> Fraction | None:
    """The largest ``t`` with ``x + s·u`` in ``x``'s region for ``0 <= s < t`` (``None``: no bound)."""
    best = None
    for n, o in _planes(form):
        z = _dot(n, x) + o
        nu = _dot(n, u)
        if nu and (z > 0) != (nu > 0):
            t = abs(z / nu)
            best = t if best is None or t < best else best
    return best


def _pow2_below(x: Fraction | None, cap: Fraction = Fraction(1)) -> Fraction:
    """The largest power of two ``< x/2`` and ``<= cap``."""
    t = cap
    while x is not None and t >= x / 2:
        t /= 2
    return t


@dataclass
class _Probe:
    """One direction ``u`` at point ``k``: the scale ``t``, the answers, ``κ`` (with the residual)."""

    k: int
    u: list
    t: Fraction
    plus: object = None
    minus: object = None
    kappa: Fraction | None = None

    def seq(self, p, sign: int = 1) -> Sequence:
        """``[p + sign·t·u; p]``."""
        top = {i: x + sign * self.t * y for i, (x, y) in enumerate(zip(p, self.u)) if x + sign * self.t * y}
        return Sequence.sparse(len(p), [top, {i: x for i, x in enumerate(p) if x}])


def _scale_of(form: FunctionForm) -> int:
    """A box ``[−R, R]^d`` holding the hyperplanes' points nearest the origin (so random points in
    it fall in many regions)."""
    R = 1
    for n, o in _planes(form):
        norm2 = _dot(n, n)
        if norm2:
            R = max(R, int(2 * abs(o) / norm2 * max(abs(x) for x in n)) + 1)
    return R


def _points(form: FunctionForm, rng, residual: bool) -> tuple[list, list, list]:
    """``d + 1`` affinely independent points off every hyperplane, each with a nonzero gradient
    (with the residual, the gradients spanning ``ℝ^d``): the points, their gradients, ``g₁`` there."""
    d = form.d
    R = _scale_of(form)
    for attempt in range(POINT_DRAWS):
        scale = R << (attempt % 4)
        pts = [[Fraction(int(x)) for x in rng.integers(-scale, scale + 1, size=d)] for _ in range(d + 1)]
        found = [_region(form, p) for p in pts]
        regions = [r for r in found if r is not None]
        if len(regions) < len(pts):
            continue
        grads = [_gradient(form, r) for r in regions]
        if not all(any(G) for G in grads):
            continue
        B = QMatrix.from_rows([p + [Fraction(1)] for p in pts])
        if B.rank() < d + 1:
            continue
        if residual and QMatrix.from_rows(grads).rank() < d:
            continue
        return pts, grads, [form.value(p) for p in pts]
    if not form.normals and not any(form.linear[:d]):
        raise NotIdentifiable("the one-token function g₁ = T([x]) is constant: the FFN shows nothing of the "
                              "attention, so W and c are not identifiable")
    what = "spanning gradients (the residual's K is seen only along the FFN's gradients)" if residual else \
        "a nonzero gradient"
    raise NotIdentifiable(f"no {d + 1} affinely independent points with {what} among {POINT_DRAWS} draws: "
                          "the one-token function is constant, or flat along too many directions, where it was probed")


def _basis(G: list) -> list:
    """A basis ``u_1..u_d`` with ``Gᵀu_i ≠ 0`` for all ``i``: ``e_i``, or ``e_i + e_j`` where ``G_i = 0``."""
    d = len(G)
    j = next(i for i, x in enumerate(G) if x)
    out = []
    for i in range(d):
        u = [Fraction(0)] * d
        u[i] = Fraction(1)
        if not G[i]:
            u[j] += 1
        out.append(u)
    return out


def _steep_basis(G: list) -> list:
    """A basis with ``|Gᵀu_i| >= max|G|/2`` for every ``i`` (float answers want large slopes): ``e_j`` for
    the largest entry, ``e_i`` where ``|G_i|`` is at least half of it, else ``e_i ± e_j``."""
    d = len(G)
    j = max(range(d), key=lambda i: abs(G[i]))
    out = []
    for i in range(d):
        u = [Fraction(0)] * d
        u[i] = Fraction(1)
        if i != j and 2 * abs(G[i]) < abs(G[j]):
            u[j] += 1 if G[i] * G[j] >= 0 else -1
        out.append(u)
    return out


def _dot(a, b) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _fq(x: Fraction) -> fmpq:
    return fmpq(x.numerator, x.denominator)


def _residual_model(W, c, K, ffn) -> Transformer:
    """A residual block with canonical ``(W, c, g₁, K)``: ``V = K(I − K)⁻¹``, ``A = A₁(I − K)``, ``μ = 0``."""
    d = len(W)
    IK = QMatrix.from_rows([[Fraction(int(i == j)) - x for j, x in enumerate(r)] for i, r in enumerate(K)])
    if IK.rank() < d:  # K = (I + V)⁻¹V has I − K = (I + V)⁻¹, always invertible
        same = all(x == (i == j) for i, r in enumerate(K) for j, x in enumerate(r))
        raise OracleInconsistent(
            "the learned K = I: the block has no residual (T(X) = g₁(h̄)); learn it with residual=False" if same else
            "the learned K has I − K singular, which no residual block x_N + h(X) gives (I − K = (I + V)⁻¹): the "
            "black box is not a one-layer Transformer with a residual")
    V = (QMatrix.from_rows(K) @ IK.inv()).rows()
    A = (QMatrix.from_rows(ffn.A) @ IK).rows()
    return Transformer(W, A, ffn.w, c=c, V=V, mu=[0] * d, a=ffn.a, b=ffn.b, residual=True)
