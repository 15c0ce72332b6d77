"""The query counts the papers state, written out here, independently of any learner.

The theorem table (:mod:`exact.theorems`), ``verify`` and the corpus judge all read them here.

A count claim compares the queries the **oracle** counted with these formulas; a learner's
own ``query_count`` (its registry spec) is never the yardstick, so a learner and its stated
count cannot drift together.  A test checks that every registered learner states the same
counts as these formulas.

Each :class:`Formula` has its text, as the tables print it, and its value.

Examples
--------
>>> SINGLE_HEAD(d=3), SINGLE_HEAD.text
(12, 'd² + d')
>>> LOW_RANK(d=64, r=4), LOW_RANK_FOUND(d=64, r=4), CS(d=8, r=2, C=3.5)
(560, 620, 120)
>>> KKG_PAPER(d=8, H=4), KKG_FAST(d=8, H=4), KKG_PAIRS(d=8, H=4), KKG_LOWER(d=8, H=4)
(1017, 506, 338, 288)
>>> FFN(d=8, m=8), TRANSFORMER(d=4, q_ffn=50)
(166, 90)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field


__all__ = [
    "Count", "Formula", "SINGLE_HEAD", "LOW_RANK", "LOW_RANK_FOUND", "LOW_RANK_BIASED", "CS", "CS_MEASUREMENTS", "NOISY", "REFINE", "KKG_PAPER",
    "KKG_FAST", "KKG_PAIRS", "KKG_PAIRS_BIASED", "KKG_LOWER", "KKG_BIASED", "KKG_FAST_BIASED", "KKG_LOWER_BIASED", "FFN", "FFN_BIASED", "TRANSFORMER", "TRANSFORMER_BIASED", "ZERO_V", "BIASED", "BIASED_ZERO_V",
]


@dataclass(frozen=True)
class Count:
    """One instance's query count: what the oracle counted against the formula's value.

    ``reported`` is what the learner says it asked (it must agree with the oracle);
    ``at_most`` makes the formula a bound; ``longest`` and ``longest_expected`` compare the
    longest query's length where the theorem states it; ``unmet`` names a further condition
    of the claim's count rule that failed.
    """

    counted: int
    expected: int
    text: str
    reported: int | None = None
    at_most: bool = False
    longest: int | None = None
    longest_expected: int | None = None
    unmet: str = ""

    @property
    def holds(self) -> bool:
        within = self.counted <= self.expected if self.at_most else self.counted == self.expected
        return (within and self.reported in (None, self.counted) and not self.unmet
                and (self.longest_expected is None or self.longest == self.longest_expected))

    def reason(self) -> str:
        """Why the count does not hold (empty when it does)."""
        out = []
        if self.counted > self.expected or (not self.at_most and self.counted != self.expected):
            out.append(f"the oracle counted {self.counted} queries, {'more than ' if self.at_most else ''}"
                       f"{self.text} = {self.expected}")
        if self.reported is not None and self.reported != self.counted:
            out.append(f"the learner reported {self.reported}" + ("" if out else f", the oracle counted {self.counted}"))
        if self.longest_expected is not None and self.longest != self.longest_expected:
            out.append(f"the longest query has length {self.longest}, expected {self.longest_expected}")
        if self.unmet:
            out.append(self.unmet)
        return "; ".join(out)

    def metrics(self) -> dict:
        out: dict = {"queries": self.counted, "formula": self.expected}
        if self.reported is not None and self.reported != self.counted:
            out["reported"] = self.reported
        return out


@dataclass(frozen=True)
class Formula:
    """A stated count: ``text`` as written in the paper (or in SPEC, for the plans beyond it) and its value."""

    text: str
    value: Callable[..., int] = field(repr=False)
    source: str = ""

    def __call__(self, **kwargs) -> int:
        return int(self.value(**kwargs))

    def check(self, counted: int, *, reported: int | None = None, at_most: bool = False, longest: int | None = None,
              longest_expected: int | None = None, unmet: str = "", **values) -> Count:
        """The :class:`Count` of ``counted`` oracle queries against this formula at ``values``."""
        return Count(counted, self(**values), self.text, reported, at_most, longest, longest_expected, unmet)


#: Theorem 4.1 [BSHK26]: one query per token e_i for v, one per entry of W.
SINGLE_HEAD = Formula("d² + d", lambda d: d * d + d, "Theorem 4.1 [BSHK26]")
#: A head with biases (docs/biases.md, beyond): b, v, the d bias logits and the d² shifted logits.
BIASED = Formula("d² + 2d + 1", lambda d: d * d + 2 * d + 1, "docs/biases.md (beyond)")
#: A head with biases and v = 0: b and v, after which nothing more can be learned.
BIASED_ZERO_V = Formula("d + 1", lambda d: d + 1, "docs/biases.md (beyond)")
#: Theorem 4.1, v = 0: the d queries for v, after which nothing more can be learned.
ZERO_V = Formula("d", lambda d: d, "Theorem 4.1 [BSHK26], step 2")
#: The exact sketch learner (SPEC 3.3, beyond): the rank-r manifold's dimension plus d for v.
LOW_RANK = Formula("2rd − r² + d", lambda d, r: 2 * r * d - r * r + d, "SPEC 3.3 (beyond Theorem 5.1)")
#: The same with r found adaptively: one more column per direction beyond the rank, d − r of them.
LOW_RANK_FOUND = Formula("2rd − r² + 2d − r", lambda d, r: 2 * r * d - r * r + 2 * d - r, "SPEC 3.3 (beyond)")
#: The sketch on a head with biases (docs/low-rank.md, beyond): b, and the d shifts u_kᵀc, first.
LOW_RANK_BIASED = Formula("2rd − r² + 2d + 1", lambda d, r: 2 * r * d - r * r + 2 * d + 1, "docs/low-rank.md (beyond)")
#: Theorem 5.1 [BSHK26]: m = ⌈C·2rd⌉ rank-one projections.
CS_MEASUREMENTS = Formula("⌈C·2rd⌉", lambda d, r, C: math.ceil(C * 2 * r * d), "Theorem 5.1 [BSHK26]")
#: Theorem 5.1 [BSHK26]: d queries for v and the m projections.
CS = Formula("d + ⌈C·2rd⌉", lambda d, r, C: d + math.ceil(C * 2 * r * d), "Theorem 5.1 [BSHK26]")
#: Theorem 6.1 [BSHK26] and App. B (value-query equivalents): one query per parameter.
NOISY = Formula("d² + d", lambda d: d * d + d, "Theorem 6.1 [BSHK26]")
#: The refining learner (beyond): a pilot run and a second run at the pilot's scales.
REFINE = Formula("2(d² + d)", lambda d: 2 * (d * d + d), "SPEC 3.4 (beyond)")
#: [KKG26]: 2d² − 1 blocks, the first of 2H + 1 samples, the others of 2H.
KKG_PAPER = Formula("4Hd² − 2H + 1", lambda d, H: 4 * H * d * d - 2 * H + 1, "[KKG26]")
#: The fast plan (SPEC 3.7, beyond), generic instances: group 1's d blocks (the first of 2H + 1
#: samples), its d − 1 links of 2H − 1, and d − 1 blocks of 2H − 1 for each of the other d − 1 groups.
KKG_FAST = Formula("(2H + 1) + 2H(d − 1) + (2H − 1)(d − 1) + (2H − 1)d(d − 1)",
                   lambda d, H: (2 * H + 1) + 2 * H * (d - 1) + (2 * H - 1) * (d - 1) + (2 * H - 1) * d * (d - 1),
                   "SPEC 3.7 (beyond)")
#: The pair plan (docs/multi-head.md, beyond), generic instances: group 1 as in the fast plan, then each
#: of the other d − 1 groups in ⌊d/2⌋ pair lines of 2H samples and, for odd d, one block of 2H − 1.
KKG_PAIRS = Formula("(2H + 1) + (4H − 1)(d − 1) + (2H⌊d/2⌋ + (2H − 1)(d mod 2))(d − 1)",
                    lambda d, H: (2 * H + 1) + (4 * H - 1) * (d - 1)
                    + (2 * H * (d // 2) + (2 * H - 1) * (d % 2)) * (d - 1),
                    "docs/multi-head.md (beyond)")
#: The parameter count of H heads: no plan reading one number per query does with fewer.
KKG_LOWER = Formula("H(d² + d)", lambda d, H: H * (d * d + d), "SPEC 3.7")
#: Heads with biases (docs/biases.md, beyond): one more group of final tokens (d + 1 affinely independent
#: ones give W_h and c_h), so d + 1 bootstrap blocks, (d + 1)(d − 1) measurements and in-group links, d cross links.
KKG_BIASED = Formula("4H(d² + d) − 2H + 1", lambda d, H: 4 * H * (d * d + d) - 2 * H + 1, "docs/biases.md (beyond)")
#: The fast plan with biases, generic instances: d other groups of d blocks of 2H − 1.
KKG_FAST_BIASED = Formula("(2H + 1) + 2H(d − 1) + (2H − 1)(d − 1) + (2H − 1)d²",
                          lambda d, H: (2 * H + 1) + 2 * H * (d - 1) + (2 * H - 1) * (d - 1) + (2 * H - 1) * d * d,
                          "docs/biases.md (beyond)")
#: The pair plan with biases, generic instances: d other groups.
KKG_PAIRS_BIASED = Formula("(2H + 1) + (4H − 1)(d − 1) + (2H⌊d/2⌋ + (2H − 1)(d mod 2))d",
                           lambda d, H: (2 * H + 1) + (4 * H - 1) * (d - 1)
                           + (2 * H * (d // 2) + (2 * H - 1) * (d % 2)) * d,
                           "docs/multi-head.md (beyond)")
#: The parameter count of H heads with biases: (W_h, c_h, v_h) per head and one b.
KKG_LOWER_BIASED = Formula("H(d² + 2d) + 1", lambda d, H: H * (d * d + 2 * d) + 1, "docs/biases.md (beyond)")
#: The ReLU FFN learner (SPEC 3.6): the bound a run stays within, its verification included.
FFN = Formula("(m + 1)(d − 2) + 10m + 32", lambda d, m: (m + 1) * max(d - 2, 0) + 10 * m + 32, "docs/ffn.md")
#: The learner of ReLU networks with biases (docs/ffn.md, beyond): the bound a run stays within on lines
#: without degeneracies, its verification included ((m + 1)(d − 1) probes, about five per breakpoint).
FFN_BIASED = Formula("(m + 1)(d − 1) + 10m + 32", lambda d, m: (m + 1) * max(d - 1, 0) + 10 * m + 32,
                     "docs/ffn.md (beyond)")
#: SPEC 3.5 [BSHK26]: the FFN's queries on one-token inputs, and two calls per single-head query.
TRANSFORMER = Formula("Q_FFN + 2(d² + d)", lambda d, q_ffn: q_ffn + 2 * (d * d + d), "SPEC 3.5 [BSHK26]")
#: The one-layer Transformer with biases (docs/ffn.md, beyond): the FFN with biases, then d(d + 1) logits read
#: through it; with the residual each is a pair, and each pair asked again costs two more.
TRANSFORMER_BIASED = Formula("Q_FFN + d(d + 1), or Q_FFN + 2d(d + 1) + 2·(pairs asked again) with the residual",
                             lambda d, q_ffn, residual=False, again=0: q_ffn + (2 if residual else 1) * d * (d + 1)
                             + 2 * again, "docs/ffn.md (beyond)")
