"""Canonical multi-head recovery [KKG26]: exactly 4Hd² − 2H + 1 queries of length ≤ 2H + 1.

The parameters of a multi-head model are not identifiable (Proposition 7.1 of
[BSHK26]); its **canonical form** is (:func:`exact.canonical.canonical_form`).  This
learner recovers it exactly from value queries, among sums of at most ``H`` heads.

**Blocks.**  A block ``(u, q)`` asks ``[u, …, u, q]`` for several numbers k of copies.
By the token-copy identity (:mod:`exact.learn.kkg_block`) its answers are
``A − Σ_h c_h/(1 + k e^{s_h})`` with ``s_h = wᵀW_h q``, ``c_h = wᵀv_h``, ``w = u − q``,
and the fit returns, per canonical head, the exact pair ``(s_h, c_h)`` — unlabelled.

**Probes.**  Final tokens ``q_1..q_d`` and directions ``w_1..w_d`` are drawn at random
(seeded, rationals of height 2^24 in [−1, 1], each family linearly independent), so
that with probability 1 no two heads share a score and no value vanishes in a block.

**The paper's plan** (``method="paper"``), 2d² − 1 blocks:

1. *group 1* (final token ``q_1``): the bootstrap block ``w_1`` at k = 0..2H, then the
   measurement blocks ``w_2..w_d`` at k = 1..2H (the k = 0 answer ``f([q_1])`` is the same
   query, reused).  Their limits ``A_i = (q_1 + w_i)ᵀV`` give ``V = Σ_h v_h``, and from
   then on every block's limit ``A = uᵀV`` is known;
2. *in-group links* ``w_1 + w_i`` (additivity: the same head shows ``s_1 + s_i`` and
   ``c_1 + c_i``) label every head of block ``w_i`` by its head in block ``w_1``;
3. *groups 2..d* (final token ``q_g``): d measurement blocks and d − 1 in-group links
   each, at k = 1..2H;
4. *cross-group links* ``(q_1 + q_g + w_1, q_1 + q_g)``: the same head shows
   ``s_h(w_1, q_1) + s_h(w_1, q_g)`` and ``c_h(w_1)``, which labels group g's heads;
5. per head, ``W_h q_g = M⁻¹ s_h(·, q_g)`` and ``v_h = M⁻¹ c_h(·)`` (``M`` has rows
   ``w_i``), and ``W_h = [W_h q_1 … W_h q_d] Q⁻¹``.

That is d bootstrap blocks (the first block of each group), d(d − 1) measurement blocks,
d(d − 1) in-group links and d − 1 cross links: 2d² − 1 blocks and
``(2H + 1) + 2H(2d² − 2) = 4Hd² − 2H + 1`` queries, the longest of length 2H + 1.

**Beyond the paper** (``method="fast"``).  Once group 1 has given every ``v_h``, the
residue ``c_h = w_iᵀv_h`` names its head in every later block, so groups 2..d need no
links; and since both ``A = uᵀV`` and the k = 0 value ``qᵀV`` are then known, a block
needs only k = 1..2H − 1.  Heads that share a ``v`` have equal residues: for a group
where two heads would collide, the learner falls back to the paper's links.  On generic
instances this is ``(2H+1) + 2H(d−1) + (2H−1)(d−1) + (2H−1)d(d−1)`` queries, about half.

**Exactness.**  Every block is confirmed exactly against its answers, and two type-(H, H)
rational functions that agree on 2H + 1 values are equal, so every model of at most H
heads that gives these answers has these pairs.  The matching assumes the probes are
generic for the model: no two heads share a score in a block, no value vanishes, no link
is ambiguous.  That holds with probability 1 for a seed drawn independently of the model;
what the pairs *show* of a degenerate draw (blocks with different numbers of poles, an
ambiguous or missing match) is detected and redrawn (and reported), but a model built
against a known seed can hide a head from every block.  So the result is replayed
against the whole transcript, verified with fresh random queries (the driver), and states
the assumption when those are switched off.

References
----------
[KKG26] Kim, Kim, Guo, *Provably Learning Multi-Head Attention with Queries*,
arXiv 2608.03294 (2026).
"""

from __future__ import annotations

import dataclasses
import functools
import random
import secrets
from dataclasses import dataclass
from fractions import Fraction


from .. import registry
from ..canonical import canonical_form, float_error
from ..errors import InvalidArgument, OracleInconsistent, PrecisionInsufficient
from ..kinds import as_kind
from ..linalg import QMatrix
from ..protocols import Oracle
from ..models import SingleHead
from ..multihead import MultiHead
from ..numbers import format_rational
from .details import Comparison, Details
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from .kkg_block import BlockFit, block_sequences, certified_equals, identify_block, model_block, symbolic_equals
from .kkg_pairs import (FewerPoles, identify_pair, label_scale, model_pair, pair_certified_equals, pair_sequences,
                        pair_symbolic_equals)
from .multi_head_float import learn_float
from .result import LearnResult

__all__ = [
    "learn_multi_head",
    "paper_query_count",
    "fast_query_count",
    "pairs_query_count",
    "lower_bound",
    "Probes",
    "METHODS",
    "SPEC",
    "FAST_SPEC",
    "PAIRS_SPEC",
]

METHODS = ("paper", "fast", "pairs")

#: Probe entries are k / 2^PROBE_BITS with |k| <= 2^PROBE_BITS: a degenerate draw (two heads
#: with one score in a block, a value orthogonal to a direction) has probability about
#: 2^-PROBE_BITS per head pair and block.
PROBE_BITS = 24

#: Redraws of degenerate probes before the learner gives up.
MAX_REDRAWS = 3

#: The largest head bound (a block fits a rational function of type (H, H) in ball arithmetic).
MAX_HEADS = 64


def _groups(d: int, biases: bool) -> int:
    """The number of final tokens: ``d`` (``W_h q_g`` for a basis ``q_g`` gives ``W_h``), or ``d + 1``
    with biases (``W_h q_g + c_h`` at ``d + 1`` affinely independent ``q_g`` gives ``W_h`` and ``c_h``)."""
    return d + 1 if biases else d


def paper_query_count(d: int, H: int, biases: bool = False) -> int:
    """The [KKG26] count: ``4Hd² − 2H + 1``; with biases (one more group), ``4H(d² + d) − 2H + 1``.

    >>> paper_query_count(8, 4), paper_query_count(8, 4, biases=True)
    (1017, 1145)
    """
    return 4 * H * d * _groups(d, biases) - 2 * H + 1


def fast_query_count(d: int, H: int, biases: bool = False) -> int:
    """The fast plan's count on generic instances (no shared ``v``, no redraw).

    ``(2H + 1) + 2H(d − 1)`` for group 1's blocks, ``(2H − 1)(d − 1)`` for its links and
    ``(2H − 1)d`` for each of the other ``d − 1`` groups (``d`` with biases).

    >>> fast_query_count(8, 4), paper_query_count(8, 4), fast_query_count(8, 4, biases=True)
    (506, 1017, 562)
    """
    return (2 * H + 1) + 2 * H * (d - 1) + (2 * H - 1) * (d - 1) + (2 * H - 1) * d * (_groups(d, biases) - 1)


def pairs_query_count(d: int, H: int, biases: bool = False) -> int:
    """The pair plan's count on generic instances: group 1 as in the fast plan, then each other group
    (``d − 1`` of them, ``d`` with biases) in ``⌊d/2⌋`` pair lines of ``2H`` queries, and one block of
    ``2H − 1`` when d is odd.

    ``(2H + 1) + (4H − 1)(d − 1) + (2H⌊d/2⌋ + (2H − 1)(d mod 2))·(G − 1)``, G the number of groups.

    >>> pairs_query_count(8, 4), fast_query_count(8, 4), lower_bound(8, 4)
    (338, 506, 288)
    >>> pairs_query_count(16, 4), lower_bound(16, 4), pairs_query_count(8, 4, biases=True)
    (1194, 1088, 370)
    """
    per_group = 2 * H * (d // 2) + (2 * H - 1) * (d % 2)
    return (2 * H + 1) + (4 * H - 1) * (d - 1) + per_group * (_groups(d, biases) - 1)


def lower_bound(d: int, H: int, biases: bool = False) -> int:
    """The number of parameters of H heads, ``H(d² + d)`` (with biases ``H(d² + 2d) + 1``): no plan
    that reads one number per query can do with fewer."""
    return H * (d * d + 2 * d) + 1 if biases else H * (d * d + d)


# -- probes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probes:
    """Final tokens ``q`` and directions ``w`` (d each, linearly independent), from a seed; for
    heads with biases, one more final token ``q0`` (``q_1, …, q_d, q0`` affinely independent)."""

    q: tuple
    w: tuple
    q0: tuple | None = None
    lam: Fraction | None = None

    @classmethod
    def draw(cls, d: int, rng: random.Random, *, biases: bool = False) -> "Probes":
        """Random rationals ``k/2^24`` in [−1, 1], redrawn until each family is a basis (and, with
        biases, until ``q0`` is off the affine hull of the ``q``, then the cross links' weight
        ``lam`` in (0, 1); drawn last, so the ``q`` and ``w`` of a seed are the same either way)."""
        def entry() -> Fraction:
            return Fraction(rng.randint(-(1 << PROBE_BITS), 1 << PROBE_BITS), 1 << PROBE_BITS)

        def basis() -> tuple:
            while True:
                rows = tuple(tuple(entry() for _ in range(d)) for _ in range(d))
                if QMatrix.from_rows(rows).rank() == d:
                    return rows
        q, w = basis(), basis()
        if not biases:
            return cls(q, w)
        while True:
            q0 = tuple(entry() for _ in range(d))
            if QMatrix.from_rows([x + (Fraction(1),) for x in q + (q0,)]).rank() == d + 1:
                break
        while True:  # not 1/2: heads with one W and v whose c are evenly spaced would match wrongly at the mean
            lam = Fraction(rng.randint(1, (1 << PROBE_BITS) - 1), 1 << PROBE_BITS)
            if lam != Fraction(1, 2):
                return cls(q, w, q0, lam)

    @property
    def finals(self) -> tuple:
        """The groups' final tokens: ``q_1, …, q_d`` (then ``q0`` with biases)."""
        return self.q + ((self.q0,) if self.q0 is not None else ())


def _add(*vectors) -> tuple:
    return tuple(sum(xs, Fraction(0)) for xs in zip(*vectors))


def _dot(a, b) -> Fraction:
    return sum((x * y for x, y in zip(a, b) if x and y), Fraction(0))


class _Degenerate(Exception):
    """The probes are not generic for this model (redraw them)."""


# -- who answers the blocks ------------------------------------------------------------------


class _OracleBlocks:
    """Blocks asked of the oracle through the run, fitted and confirmed exactly."""

    def __init__(self, run: Run, H: int, equals, prec: int, max_prec: int, pair_equals=pair_certified_equals):
        self.run, self.H, self.equals, self.prec, self.max_prec = run, H, equals, prec, max_prec
        self.pair_equals = pair_equals
        self.blocks = 0
        self.bits = 0

    def block(self, u, q, ks, *, extra=(), A=None) -> tuple[BlockFit, object]:
        ks = list(ks)
        seqs = block_sequences(u, q, ks)
        self.run.require(len(seqs), f"block {self.blocks + 1}")
        answers = self.run.ask(seqs)
        samples = list(extra) + list(zip(ks, answers))
        fit = identify_block(samples, self.H, A=A, equals=self.equals, prec=self.prec, max_prec=self.max_prec)
        self.blocks += 1
        self.bits = max(self.bits, fit.prec)
        y0 = next((a for k, a in zip(ks, answers) if k == 0), None)
        return fit, y0

    def pair(self, ua, ub, q, ks, *, A, labels) -> tuple:
        """A pair line's ``(s_a, s_b)`` per labelled head (:mod:`exact.learn.kkg_pairs`)."""
        ks = list(ks)
        seqs = pair_sequences(ua, ub, q, ks)
        self.run.require(len(seqs), f"pair line {self.blocks + 1}")
        answers = self.run.ask(seqs)
        try:
            got = identify_pair(list(zip(ks, answers)), labels, A=A, H=self.H, equals=self.pair_equals,
                                prec=self.prec, max_prec=self.max_prec)
        except FewerPoles as e:
            raise _Degenerate(str(e)) from None
        except OracleInconsistent as e:  # no model with the first group's heads gives this line: those heads
            raise _Degenerate(f"a pair line refutes the first group's heads ({e})") from None  # may be merged
        self.blocks += 1
        return got


class _TooLong(Exception):
    """The plan asks more sequences than the transcript holds."""


class _ModelBlocks:
    """Blocks answered by a known model (certificate checking): the sequences are recorded, and
    the plan stops as soon as it asks more than ``limit`` of them."""

    def __init__(self, model, limit: int | None = None):
        self.model = model
        self.limit = limit
        self.sequences: list = []
        self.blocks = 0

    def block(self, u, q, ks, *, extra=(), A=None) -> tuple[BlockFit, object]:
        ks = list(ks)
        if self.limit is not None and len(self.sequences) + len(ks) > self.limit:
            raise _TooLong
        self.sequences += block_sequences(u, q, ks)
        self.blocks += 1
        return model_block(self.model, u, q), None  # known samples only feed an oracle's fits

    def pair(self, ua, ub, q, ks, *, A, labels) -> tuple:
        ks = list(ks)
        if self.limit is not None and len(self.sequences) + len(ks) > self.limit:
            raise _TooLong
        self.sequences += pair_sequences(ua, ub, q, ks)
        self.blocks += 1
        try:
            return model_pair(self.model, ua, ub, q, labels)
        except FewerPoles as e:
            raise _Degenerate(str(e)) from None


# -- the plan ----------------------------------------------------------------------------------


@dataclass
class _Stats:
    links: int = 0
    cross_links: int = 0
    fallback_groups: int = 0
    redraws: int = 0
    pair_lines: int = 0


def _plan(blocks, d: int, H: int, method: str, probes: Probes, stats: _Stats) -> tuple[list, Fraction]:
    """Run the plan on ``blocks``; return the canonical heads ``[SingleHead, ...]`` and ``b``.

    With biases (``probes.q0`` drawn) every score is ``wᵀg_h(q)`` for the affine
    ``g_h(q) = W_h q + c_h``; the limits and ``k = 0`` values carry ``b``; the cross links use the
    final token ``λq_1 + (1 − λ)q_g`` (a random affine weight λ), where ``g_h`` is the same affine
    combination of its values at ``q_1`` and ``q_g``; and the ``d + 1`` groups give ``[W_h | c_h]``
    from ``g_h`` at ``d + 1`` affinely independent points.
    """
    q, w = probes.finals, probes.w
    biased = probes.q0 is not None
    M = QMatrix.from_rows(w)  # rows w_i: s(w_i) = w_iᵀa for a = W_h q
    Minv = M.inv()
    fast = method in ("fast", "pairs")  # the pair plan's group 1 and fallbacks are the fast plan's
    two_h = 2 * H

    def solve_w(values) -> tuple:
        return tuple(Fraction(int(x.p), int(x.q)) for x in Minv.matvec(values))

    def expect(fit: BlockFit, m: int) -> tuple:
        if len(fit.heads) != m:
            raise _Degenerate(f"a block shows {len(fit.heads)} heads, another {m}")
        return fit.heads

    # group 1: bootstrap, measurements, V
    fit0, y0 = blocks.block(_add(q[0], w[0]), q[0], range(two_h + 1))
    base = fit0.heads
    m = len(base)
    y0_value = fit0.A - sum((c for _, c in base), Fraction(0))  # = q_1ᵀV
    group = [base]
    limits = [fit0.A]
    for i in range(1, d):
        fit, _ = blocks.block(_add(q[0], w[i]), q[0], range(1, two_h + 1), extra=[(0, y0)])
        group.append(expect(fit, m))
        limits.append(fit.A)
    V = solve_w([a - y0_value for a in limits])
    b = y0_value - _dot(q[0], V)  # f([q_1]) = b + q_1ᵀV
    if b and not biased:
        raise OracleInconsistent(
            f"the answers show an output bias b = {format_rational(b)} (f([q]) − qᵀΣv_h ≠ 0), which a sum of "
            "bias-free heads does not have: learn it with biases=True (--biases), or the oracle is not a sum of "
            "softmax heads")

    def known(u) -> Fraction:  # a block's limit, and (at u = q) its k = 0 value
        return b + _dot(u, V)

    groups = len(q)
    s_of: list[list] = [[None] * groups for _ in range(m)]  # s_of[j][g] = the vector (s_j(w_i, q_g))_i
    c_of: list = [None] * m  # c_of[j] = (c_j(w_i))_i
    first = _label_group(blocks, group, q[0], w, known, y0, two_h if not fast else two_h - 1, H, stats)
    for j in range(m):
        s_of[j][0] = tuple(s for s, _ in first[j])
        c_of[j] = tuple(c for _, c in first[j])
    v = [solve_w(c_of[j]) for j in range(m)]

    # groups 2..d (and q0)
    for g in range(1, groups):
        qg = q[g]
        y0g = known(qg)
        if method == "pairs":
            got = _pair_group(blocks, qg, w, v, known, y0g, H, stats)
            if got is not None:
                for j in range(m):
                    s_of[j][g] = got[j]
                continue
        ks = range(1, two_h) if fast else range(1, two_h + 1)
        predicted = [[_dot(w[i], v[j]) for j in range(m)] for i in range(d)]
        named = fast and all(len(set(row)) == m and all(row) for row in predicted)
        if named:  # the residue names the head
            for i in range(d):
                u = _add(qg, w[i])
                fit, _ = blocks.block(u, qg, ks, extra=[(0, y0g)], A=known(u))
                by_c = {c: s for s, c in expect(fit, m)}
                if set(by_c) != set(predicted[i]):
                    raise _Degenerate("a block's residues are not the predicted ones")
                for j in range(m):
                    s_of[j][g] = (s_of[j][g] or ()) + (by_c[predicted[i][j]],)
            continue
        if fast:
            stats.fallback_groups += 1
        fits = []
        for i in range(d):
            u = _add(qg, w[i])
            fit, _ = blocks.block(u, qg, ks, extra=[(0, y0g)], A=known(u))
            fits.append(expect(fit, m))
        local = _label_group(blocks, fits, qg, w, known, y0g, len(ks), H, stats)
        # cross link: final token q_1 + q_g (with biases λq_1 + (1 − λ)q_g: g_h is affine), direction w_1
        lam = probes.lam if biased and probes.lam is not None else Fraction(1)
        rest = 1 - lam if biased else Fraction(1)
        qq = tuple(lam * x + rest * y for x, y in zip(q[0], qg))
        u = _add(qq, w[0])
        link, _ = blocks.block(u, qq, ks, extra=[(0, known(qq))], A=known(u))
        stats.cross_links += 1
        shown = set(expect(link, m))
        order = _match(
            m,
            lambda j, l: (lam * s_of[j][0][0] + rest * local[l][0][0], c_of[j][0]) in shown
            and local[l][0][1] == c_of[j][0],
        )
        for j in range(m):
            s_of[j][g] = tuple(s for s, _ in local[order[j]])
    # W_j q_g (+ c_j) for every group: [W_j | c_j] [q_g; 1] = g_j(q_g)
    Q = QMatrix.from_columns([x + (Fraction(1),) for x in q] if biased else q)
    Qinv = Q.inv()
    heads = []
    for j in range(m):
        cols = [solve_w(s_of[j][g]) for g in range(groups)]
        WC = (QMatrix.from_columns(cols, nrows=d) @ Qinv).rows()
        if biased:
            heads.append(SingleHead([row[:d] for row in WC], v[j], [row[d] for row in WC]))
        else:
            heads.append(SingleHead(WC, v[j]))
    return heads, b


def _pair_group(blocks, qg, w, v, known, y0g, H: int, stats: _Stats) -> list | None:
    """A group in pair lines: directions ``(w_a, w_b)`` two at a time, ``w_b`` scaled by ``2^{-j}`` so
    that the residues name the heads (:func:`~exact.learn.kkg_pairs.label_scale`; either direction
    may take the label's role), and the last direction of an odd d in a block named by its residues.
    Per head, the scores ``s_h(w_i, q_g)`` for every i; ``None`` (asking nothing) when some pair has
    no label scale or the last block no distinct nonzero residues."""
    d, m = len(w), len(v)
    lines = []
    for a in range(0, d - 1, 2):
        b = a + 1
        ca = [_dot(w[a], vj) for vj in v]
        cb = [_dot(w[b], vj) for vj in v]
        j = label_scale(ca, cb)
        if j is None:  # the other direction in the label's role
            a, b, ca, cb = b, a, cb, ca
            j = label_scale(ca, cb)
            if j is None:
                return None
        eps = Fraction(1, 1 << j)
        lines.append((a, b, eps, [(x, eps * y) for x, y in zip(ca, cb)]))
    last = [_dot(w[d - 1], vj) for vj in v] if d % 2 else None
    if last is not None and not (len(set(last)) == m and all(last)):
        return None
    scores: list[list] = [[None] * d for _ in range(m)]
    for a, b, eps, labels in lines:
        ua = _add(qg, w[a])
        ub = _add(qg, tuple(eps * x for x in w[b]))
        got = blocks.pair(ua, ub, qg, range(2 * H), A=known(ua), labels=labels)
        stats.pair_lines += 1
        for j in range(m):
            scores[j][a], scores[j][b] = got[j][0], got[j][1] / eps
    if last is not None:
        u = _add(qg, w[d - 1])
        fit, _ = blocks.block(u, qg, range(1, 2 * H), extra=[(0, y0g)], A=known(u))
        if len(fit.heads) != m:
            raise _Degenerate(f"a block shows {len(fit.heads)} heads, another {m}")
        by_c = {c: s for s, c in fit.heads}
        if set(by_c) != set(last):
            raise _Degenerate("a block's residues are not the predicted ones")
        for j in range(m):
            scores[j][d - 1] = by_c[last[j]]
    return [tuple(row) for row in scores]


def _label_group(blocks, fits, qg, w, known, y0, n_link: int, H: int, stats: _Stats) -> list:
    """In-group links ``w_1 + w_i``: for each head of block 1, its pair in every block of the group."""
    d, m = len(fits), len(fits[0])
    labelled = [[fits[0][j]] for j in range(m)]
    for i in range(1, d):
        u = _add(qg, w[0], w[i])
        link, _ = blocks.block(u, qg, range(1, n_link + 1), extra=[(0, y0)], A=known(u))
        stats.links += 1
        if len(link.heads) != m:
            raise _Degenerate(f"a link block shows {len(link.heads)} heads, its blocks {m}")
        shown = set(link.heads)
        a, b = fits[0], fits[i]
        order = _match(m, lambda j, l: (a[j][0] + b[l][0], a[j][1] + b[l][1]) in shown)
        for j in range(m):
            labelled[j].append(b[order[j]])
    return labelled


def _match(m: int, fits) -> list:
    """The unique bijection ``j → l`` with ``fits(j, l)`` for every j, or :class:`_Degenerate`."""
    order = []
    for j in range(m):
        hits = [l for l in range(m) if fits(j, l)]
        if len(hits) != 1:
            raise _Degenerate(f"a head matches {len(hits)} heads across blocks")
        order.append(hits[0])
    if len(set(order)) != m:
        raise _Degenerate("two heads match the same head across blocks")
    return order


# -- the learner -------------------------------------------------------------------------------


def _bound(d: int, heads, max_heads) -> int:
    if (heads is None) == (max_heads is None):
        raise InvalidArgument(
            "heads/max_heads: give exactly one: heads=H (the model has H heads) or max_heads=H0 (at most H0); "
            "both bound the canonical heads the learner looks for"
        )
    H = heads if heads is not None else max_heads
    name = "heads" if heads is not None else "max_heads"
    if not isinstance(H, int) or isinstance(H, bool) or H < 1:
        raise InvalidArgument(f"{name}: expected an integer >= 1, got {H!r}")
    if H > MAX_HEADS:
        raise InvalidArgument(f"{name}: at most {MAX_HEADS} heads (blocks of length 2H + 1 fit rational "
                              f"functions of type (H, H)), got {H}")
    return H


def _run_plan(blocks, d: int, H: int, method: str, seed: int, biases: bool = False) -> tuple[MultiHead, _Stats]:
    """The plan with probes from ``seed``, redrawn (from the same generator) while degenerate."""
    rng = random.Random(seed)
    stats = _Stats()
    reasons = []
    for _ in range(MAX_REDRAWS + 1):
        probes = Probes.draw(d, rng, biases=biases)
        try:
            heads, b = _plan(blocks, d, H, method, probes, stats)
            return MultiHead(heads, d=d, b=b), stats
        except _Degenerate as e:
            stats.redraws += 1
            reasons.append(str(e))
    raise OracleInconsistent(
        f"the block pairs stayed inconsistent across {MAX_REDRAWS + 1} independent random probe sets "
        f"({'; '.join(reasons)}): for a sum of at most {H} softmax heads this has probability about "
        f"2^-{PROBE_BITS} per draw for a seed independent of the model, so the oracle is not one (or the model "
        f"was built against this seed: use a fresh one)"
        + ("" if biases else "; heads with score biases c_h break the cross links: learn with biases=True")
    )


def learn_multi_head(
    oracle: Oracle,
    *,
    heads: int | None = None,
    max_heads: int | None = None,
    method: str = "paper",
    mode: str | None = None,
    seed: int | None = None,
    prec: int = 64,
    max_prec: int = 1 << 14,
    certify: bool = True,
    checks: int = DEFAULT_CHECKS,
    check_seed: int | None = None,
    biases: bool = False,
) -> LearnResult:
    """The canonical form of a sum of at most H softmax heads, exactly [KKG26].

    Parameters
    ----------
    oracle : Oracle
        An exact oracle, read only through its public interface.
    heads, max_heads : int
        Exactly one: the number of heads ``H`` of the model, or an upper bound ``H0`` on it.
        Either bounds the canonical heads (equal ``W`` merged, zero ``v`` dropped), which the
        result reports; the learner's blocks are sized by it (length ``2H + 1``).
    method : {"paper", "fast"}
        ``"paper"``: exactly ``4Hd² − 2H + 1`` queries (:func:`paper_query_count`).
        ``"fast"``: blocks matched on their residues once the ``v_h`` are known, about half
        as many (:func:`fast_query_count` on generic instances; groups where two heads share
        a ``v`` fall back to the paper's links).
    mode : {"certified", "symbolic", "float"}, optional
        How each block's candidate is confirmed: in the exp-polynomial field (``"certified"``,
        default) or in sympy, each exponential a positive symbol (``"symbolic"``, slower).
        The candidates come from ball arithmetic in both.  ``"float"`` (the default for a
        float oracle) runs the sweep of narrow steps instead (``docs/multi_head_float.md``):
        two-token queries along lines, every entry with a first-order error bound, the
        largest as ``error_estimate``; it needs ``d >= 2`` without biases.
    seed : int, optional
        Seed of the random probes; ``None`` draws a fresh one (reported, and recorded in the
        certificate, which rebuilds the probes from it).
    prec, max_prec : int
        Starting and largest working precision (bits) of a block fit.
    certify, checks, check_seed :
        As for every learner (:class:`~exact.learn.driver.Run`): replay of the transcript,
        and random verification queries of length 3–4 after learning.
    biases : bool
        Learn among sums of heads **with biases** (a score bias ``c_h`` per head and one
        output bias ``b``, as torch builds them; ``docs/biases.md``): one more group of blocks,
        ``4H(d² + d) − 2H + 1`` queries (paper) or :func:`fast_query_count` with ``biases=True``.
        The canonical form merges equal ``(W_h, c_h)``.  In float mode, one more least-squares
        fit per head (``c_h`` from the offsets) and ``b`` from ``f([q₀])``.

    Returns
    -------
    LearnResult
        ``model`` is the canonical form (a :class:`~exact.multihead.MultiHead`);
        ``details`` holds ``canonical_heads``, the counts (``paper_count``, ``fast_count``,
        ``lower_bound``), ``blocks``, ``links``, ``cross_links``, ``fallback_groups``,
        ``redraws`` and the probe ``seed``.

    Raises
    ------
    OracleInconsistent
        When a block needs more than ``H`` canonical heads (the bound is too small), or the
        answers are not those of a sum of softmax heads.
    PrecisionInsufficient
        In float mode, when the lines do not resolve the heads (near-equal or structured heads,
        steps too small), with the measured reason.

    Examples
    --------
    >>> from exact import ExactOracle, MultiHead
    >>> from exact.canonical import canonical_form
    >>> truth = MultiHead([([[1, 0], [0, -1]], [1, 2]), ([[0, 1], [1, 0]], [-1, "1/2"])])
    >>> result = learn_multi_head(ExactOracle(truth), heads=2, seed=1)
    >>> result.model == canonical_form(truth), result.queries == paper_query_count(2, 2), result.max_length
    (True, True, 5)
    >>> fast = learn_multi_head(ExactOracle(truth), heads=2, method="fast", seed=1)
    >>> fast.model == canonical_form(truth), fast.queries, paper_query_count(2, 2)
    (True, 18, 29)
    >>> biased = MultiHead([SingleHead([[1]], [2], c=["1/2"]), SingleHead([[1]], [-1], c=[0])], b=3)
    >>> r = learn_multi_head(ExactOracle(biased), heads=2, biases=True, seed=1)
    >>> r.model == canonical_form(biased), r.queries == paper_query_count(1, 2, biases=True)
    (True, True)
    """
    d = oracle_dimension(oracle)
    H = _bound(d, heads, max_heads)
    if method not in METHODS:
        raise InvalidArgument(f"method: expected one of {', '.join(map(repr, METHODS))}, got {method!r}")
    floating = mode == "float" or (mode is None and not oracle.exact)
    if not isinstance(biases, bool):
        raise InvalidArgument(f"biases: expected True or False, got {biases!r}")
    if floating and method != "paper":
        raise InvalidArgument("mode='float' runs its own plan (the sweep of narrow steps): leave method at 'paper'")
    if not floating and not oracle.exact:
        raise InvalidArgument(
            f"mode={mode!r} is exact and needs an exact oracle; use mode='float' for a float oracle"
        )
    if seed is None:
        seed = secrets.randbits(63)
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise InvalidArgument(f"seed: expected an integer in [0, 2^64) or None, got {seed!r}")
    spec = {"paper": SPEC, "fast": FAST_SPEC, "pairs": PAIRS_SPEC}[method]
    count = {"paper": paper_query_count, "fast": fast_query_count, "pairs": pairs_query_count}[method](d, H, biases)
    run = Run(spec, oracle, mode="float" if floating else mode, prec=prec, max_prec=max_prec,
              queries=None if floating else count, certify=certify, checks=checks, check_seed=check_seed)
    if floating:
        return _learn_float(run, d, H, seed, biases)
    symbolic = run.arith.name == "symbolic"
    equals = symbolic_equals if symbolic else certified_equals
    with run:
        blocks = _OracleBlocks(run, H, equals, prec, max_prec, pair_symbolic_equals if symbolic else pair_certified_equals)
        found, stats = _run_plan(blocks, d, H, method, seed, biases)
        model = canonical_form(found)
        if certify:
            bad = run.replay(model, run.transcript)
            if bad:
                raise OracleInconsistent(
                    f"the decoded model does not reproduce {len(bad)} of the {len(run.transcript)} answers (first "
                    f"#{bad[0]}): the probes were not generic for this model (was it built against the probe "
                    f"seed?), or the oracle is not a sum of at most {H} softmax heads"
                    + (" with biases" if biases else "")
                )
        conditions = {"heads": H, "probe_seed": seed, **({"biases": True} if biases else {})}
        details = MultiHeadDetails(
            canonical_heads=model.H, heads_bound=H, method=method, paper_count=paper_query_count(d, H, biases),
            fast_count=fast_query_count(d, H, biases), lower_bound=lower_bound(d, H, biases), blocks=blocks.blocks,
            links=stats.links,
            cross_links=stats.cross_links, fallback_groups=stats.fallback_groups, redraws=stats.redraws, seed=seed,
            block_precision=blocks.bits, biases=biases, pairs_count=pairs_query_count(d, H, biases),
            pair_lines=stats.pair_lines,
        )
        return run.finish(model, conditions=conditions, details=details)


def _n(count, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class MultiHeadDetails(Details):
    """The plan that ran: the canonical heads found and the bound ``H``, the method, the counts it is
    measured against (the paper's, the fast plan's, the parameter count ``H(d² + d)``), its blocks
    and links, fallbacks and redraws, the probe seed; the exact blocks' precision, or the float
    fits' condition numbers."""

    canonical_heads: int
    heads_bound: int
    method: str
    paper_count: int
    fast_count: int
    lower_bound: int
    blocks: int
    links: int
    cross_links: int
    fallback_groups: int
    redraws: int
    seed: int
    block_precision: int | None = None
    condition: float | None = None
    monomial_condition: float | None = None
    biases: bool = False
    lines_refused: int | None = None
    rows_dropped: int | None = None
    readings_aside: int | None = None
    row_scale: float | None = None
    pairs_count: int | None = None
    pair_lines: int = 0

    def rows(self, result) -> list:
        if self.method == "sweep":
            return [("lines", f"{self.blocks} two-token lines ({self.lines_refused} refused, {self.links} on link rows; "
                              f"{self.rows_dropped} rows dropped, {self.readings_aside} slope readings set aside; row length {self.row_scale:.3g}; seed {self.seed})")]
        pairs = f"{_n(self.pair_lines, 'pair line')}, " if self.method == "pairs" else ""
        out = [("blocks", f"{self.blocks} ({pairs}{_n(self.links, 'in-group link')}, {_n(self.cross_links, 'cross link')}, "
                          f"{_n(self.fallback_groups, 'group')} fell back to links, {_n(self.redraws, 'probe redraw')}; "
                          f"seed {self.seed})")]
        if self.condition is not None:
            out.append(("condition", f"{self.condition:.3g} (the block fits' intrinsic sensitivity); the monomial "
                                     f"scheme's matrix: {self.monomial_condition:.3g}"))
        return out

    def model_rows(self, result) -> list:
        fmt = format_rational if result.exact else (lambda x: f"{float(x):.17g}")
        biased = result.model.biased or self.biases
        merged = "equal (W, c) merged" if biased else "equal W merged"
        lines = [f"canonical   {result.model.H} head(s) ({merged}, zero v dropped)"]
        if biased:
            lines.append(f"b = {fmt(result.model.b)}")
        for i, h in enumerate(result.model.heads):
            lines.append(f"head {i + 1}: v = [" + ", ".join(fmt(x) for x in h.v) + "]")
            if biased:
                lines.append("  c = [" + ", ".join(fmt(x) for x in h.c) + "]")
            lines += ["  W [" + ", ".join(fmt(x) for x in row) + "]" for row in h.W]
        return lines

    def compare(self, result, truth) -> Comparison:
        """Exact: the canonical forms.  Float: the largest entry error against the truth's canonical
        form, which the stated estimate must bound."""
        if result.exact:
            same = result.model == canonical_form(as_kind(truth, "multi-head"))
            verdict = "yes: equal to the model's canonical form" if same else "NO: differs from the model's canonical form"
            return Comparison(same, rows=(("exact", verdict + (f" ({', '.join(result.assumptions)})"
                                                               if result.assumptions else "")),))
        err = float_error(result.model, truth)
        within = result.error_estimate is not None and err <= result.error_estimate
        return Comparison(False, within, {"max": err}, rows=(
            ("error", f"estimated <= {result.error_estimate:.3g} per entry; measured {err:.3g} against the model "
                      f"file's canonical form ({'within' if within else 'NOT within'} the estimate)"),))


def _count_text(result) -> str:
    d = result.details
    pairs = f", pairs on generic instances {d.pairs_count}" if d.method == "pairs" else ""
    if d.biases:
        return (f"with biases: paper 4H(d² + d) − 2H + 1 = {d.paper_count}, fast on generic instances {d.fast_count}"
                f"{pairs}, parameters H(d² + 2d) + 1 = {d.lower_bound}; H = {d.heads_bound}")
    return (f"paper 4Hd² − 2H + 1 = {d.paper_count}, fast on generic instances {d.fast_count}{pairs}, parameters "
            f"H(d² + d) = {d.lower_bound}; H = {d.heads_bound}")


def _learn_float(run: Run, d: int, H: int, seed: int, biases: bool) -> LearnResult:
    """The sweep on float answers (:mod:`exact.learn.multi_head_float`)."""
    with run:
        found = learn_float(run, d, H, seed, biases)
        model = canonical_form(found.model)
        c = found.counts
        details = MultiHeadDetails(
            canonical_heads=model.H, heads_bound=H, method="sweep", paper_count=paper_query_count(d, H, biases),
            fast_count=fast_query_count(d, H, biases), lower_bound=lower_bound(d, H, biases), blocks=c.lines,
            links=c.links, cross_links=0, fallback_groups=0, redraws=0, seed=seed, biases=biases,
            lines_refused=c.lines_refused, rows_dropped=c.rows_dropped,
            readings_aside=c.readings_aside, row_scale=c.scale,
        )
        conditions = {"heads": H, "probe_seed": seed, **({"biases": True} if biases else {})}
        try:
            result = run.finish(model, details=details, error_estimate=found.estimate, conditions=conditions)
        except OracleInconsistent as e:  # in floats, most often a head no line resolved
            raise PrecisionInsufficient(
                f"float mode: the learned model fails a verification query ({e}); a head no line resolved, two "
                f"near-equal heads, or an oracle that is not a sum of at most {H} softmax heads"
                + (" with biases" if biases else " without biases (learn with biases=True)")
            ) from None
    # float answers cannot rule out heads no line resolved (or near-equal ones), so the class a float
    # result is learned in is always stated
    merged = (f"heads whose (W, c) differ by less than about {found.merge:.1g} (for heads the size of those found) may "
              "come back merged as one head (the sum of their v, none when their v cancel): float answers see such a "
              "split only at second order")
    hidden = () if model.H >= H else (hidden_heads(model.H, H),)
    stated = tuple(a for a in (_unchecked(conditions)[0], FLOAT_RESOLUTION, merged, *hidden)
                   if a not in result.assumptions)
    return dataclasses.replace(result, assumptions=result.assumptions + stated)


#: What a float result's error estimate rests on.  Float answers cannot tell a head that no line
#: resolved (a tiny step, or one beyond every window) from an absent one, nor two heads within
#: the answers' errors of each other from one.
FLOAT_RESOLUTION = (
    "a first-order error estimate from the answers' declared errors (every head read as a step on enough lines, "
    "in at least d rows, to determine its W by least squares; a head no line resolved, or heads near-equal within the answers' errors, are not "
    "excluded by the answers)"
)


def hidden_heads(found: int, H: int) -> str:
    """What a float result with fewer canonical heads than its bound cannot exclude: more heads, up to the
    bound, that no sample shows.  A line is sampled at finitely many points, so two heads whose steps
    nearly coincide on every line and whose heights cancel (large W, opposite v: a bump narrower than
    the sampling) leave every answer the learner asked as it would be without them.  With as many
    heads found as the bound allows there is no room for them."""
    return (f"{found} canonical head{'' if found == 1 else 's'} found within the bound H = {H}: up to {H - found} more "
            "heads that no sampled answer shows are not excluded (steps too small, or steps that fall between the "
            "samples of every line: for instance two heads of large W with cancelling v make a bump narrower than a "
            "line's sampling)")


def _rederive(model, conditions, method: str, limit: int | None = None) -> list | str:
    """The sequences the learner asks of ``model`` with the recorded bound and seed, or why not
    (re-deriving stops past ``limit`` sequences: a longer plan cannot be the transcript's)."""
    H, seed = conditions.get("heads"), conditions.get("probe_seed")
    biases = conditions.get("biases", False) is True
    if H is None or seed is None:
        return "a multi-head certificate must record its head bound and probe seed (conditions heads, probe_seed)"
    if not isinstance(model, MultiHead):
        return f"expected a multi-head model, got a {type(model).__name__}"
    if model.biased and not biases:
        return ("the certified model has biases (a c_h or b nonzero), which the bias-free plan does not identify; "
                "a certificate of heads with biases records the condition biases=true")
    if model != canonical_form(model):
        return "the certified model is not in canonical form"
    if model.H > H:
        return f"the model has {model.H} canonical heads, above the bound H = {H}"
    blocks = _ModelBlocks(model, limit)
    try:
        decoded, _ = _run_plan(blocks, model.d, H, method, seed, biases)
    except OracleInconsistent as e:
        return f"the learner's plan does not decode this model: {e}"
    except _TooLong:
        return f"the {method} plan for this model, head bound and probe seed asks more than the transcript's {limit} queries"
    if canonical_form(decoded) != model:  # its answers decode to another model: the probes do not identify it
        return (f"the {method} plan's probes are not generic for this model: its own answers decode to another "
                "model, so the transcript does not identify it")
    return blocks.sequences


def _checker(method: str):
    def check(model, transcript, conditions) -> str | None:
        seqs = _rederive(model, conditions, method, limit=len(transcript))
        if isinstance(seqs, str):
            return seqs
        if [q.X for q in transcript] != seqs:
            return (
                f"the transcript is not the {method} plan's probe set for this model, head bound and probe seed, "
                "so it need not identify the model"
            )
        return None
    return check


#: Exactness rests on the probes being generic for the model: true with probability 1 for a
#: seed drawn independently of it; verification queries check it, and without them it is stated.
GENERIC = "for probes generic for the model (their seed independent of it)"


def _class(conditions) -> str:
    heads = f"a sum of at most {conditions.get('heads', 'H')} softmax heads"
    return heads + (" with biases" if conditions.get("biases") is True else " without biases")


def _unchecked(conditions) -> tuple:
    return ("among " + _class(conditions).removeprefix("a ").replace("sum", "sums", 1), GENERIC)


def _scope(conditions) -> str:
    return f"{_unchecked(conditions)[0]}, up to canonical form, {GENERIC}"


def _seed_ok(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 2**64


_OPTIONS = (
    registry.Option("heads", "int", "H, the number of heads of the model (bounds the canonical heads)", minimum=1,
                    from_model=lambda model: max(model.H, 1)),
    registry.Option("max_heads", "int", "H0, an upper bound on the number of heads (instead of --heads)", minimum=1,
                    instead_of="heads"),
    registry.Option("seed", "int", "seed of the random probes (default: fresh, reported)", minimum=0),
    registry.Option("biases", "flag", "heads with biases (a score bias c_h per head, one output bias b; one more "
                    "group of blocks)", from_model=lambda model: True if model.biased else None),
)


def _spec(method: str, name: str, summary: str, count, formula: str) -> registry.LearnerSpec:
    return registry.LearnerSpec(
        name=name,
        summary=summary,
        model_kind="multi-head",
        modes=("certified", "symbolic", "float") if method == "paper" else ("certified", "symbolic"),
        learn=functools.partial(learn_multi_head, method=method),
        query_count=lambda d, heads=None, max_heads=None, biases=False, **conditions: count(
            d, heads or max_heads or 1, biases is True),
        count_formula=formula,
        count_text=_count_text,
        conditions={"heads": lambda x: registry.int_at_least(1)(x) and x <= MAX_HEADS, "probe_seed": _seed_ok,
                    "biases": lambda x: x is True},
        check_certificate=_checker(method),
        scope=_scope,
        unchecked=_unchecked,
        model_class=lambda conditions: _class(conditions) + (
            "" if conditions.get("biases") is True else " (for heads with biases, learn with biases=True)"),
        options=_OPTIONS,
        command="multi-head",
        method=method,
    )


SPEC = (_spec(
    "paper", "multi-head",
    "[KKG26]: the canonical form of a multi-head model, exactly, from 4Hd² − 2H + 1 queries of length <= 2H + 1",
    paper_query_count, "4Hd² − 2H + 1",
))
FAST_SPEC = (_spec(
    "fast", "multi-head-fast",
    "beyond [KKG26]: the canonical form, blocks matched on their residues: about half the paper's queries",
    fast_query_count, "(2H+1) + 2H(d−1) + (2H−1)(d² − 1)",
))
PAIRS_SPEC = (_spec(
    "pairs", "multi-head-pairs",
    "beyond [KKG26]: the canonical form, two scores per head from each line of 2H answers (pair lines "
    "labelled by their residues): about 1.2× the parameter count",
    pairs_query_count, "(2H+1) + (4H−1)(d−1) + (2H⌊d/2⌋ + (2H−1)(d mod 2))(d−1)",
))
SPECS = (SPEC, FAST_SPEC, PAIRS_SPEC)
