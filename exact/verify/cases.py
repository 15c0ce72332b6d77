"""The typed cases of the claims' instances: one small frozen dataclass per claim family.

An :class:`~exact.verify.core.Instance` is a name and one of these; the claim's check
receives the case.  Cases never travel between processes: a task names its instance by
identity and the worker rebuilds the claim, so a case may hold any model.

Examples
--------
>>> from exact.models import SingleHead
>>> LowRankCase(SingleHead.random(4, seed=0, rank=1), rank=1).rank
1
>>> ProofCase("prove_lemma_a1").prover
'prove_lemma_a1'
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ffn import ReLUFFN
from ..models import SingleHead
from ..multihead import MultiHead
from ..transformer import Transformer

__all__ = [
    "HeadCase", "LowRankCase", "NoisyCase", "ConstructionCase", "FamilyCase", "PairCase", "HeadsCase", "SweepCase",
    "BoundedHeadsCase", "NetworkCase", "TransformerCase", "ProofCase",
]


@dataclass(frozen=True)
class HeadCase:
    """A single head (Theorems 4.1 and 6.1); ``grid`` is the grid its entries lie on, if any."""

    model: SingleHead
    grid: str | None = None


@dataclass(frozen=True)
class LowRankCase:
    """A head of rank ``rank`` (Theorem 5.1); ``C`` is the compressed-sensing constant, where the claim varies it."""

    model: SingleHead
    rank: int
    C: float | None = None


@dataclass(frozen=True)
class NoisyCase:
    """A head and the oracle's accuracy (Theorem 6.1's τ, App. B's ε), as the decimal text the sweep names."""

    model: SingleHead
    level: str


@dataclass(frozen=True)
class ConstructionCase:
    """A multi-head model and the Proposition 7.1 family (``split``, ``zero``, ...) to build a twin in."""

    model: MultiHead
    kind: str


@dataclass(frozen=True)
class FamilyCase:
    """A symbolic Proposition 7.1 family: its kind, d and H."""

    kind: str
    d: int
    H: int


@dataclass(frozen=True)
class PairCase:
    """Two multi-head models that should be told apart."""

    a: MultiHead
    b: MultiHead


@dataclass(frozen=True)
class HeadsCase:
    """A multi-head model, the head bound H given to the learner and the learner's seed ([KKG26])."""

    model: MultiHead
    heads: int
    seed: int


@dataclass(frozen=True)
class SweepCase:
    """A sweep of random multi-head models, as ``(d, H, seed)`` triples, judged together."""

    points: tuple[tuple[int, int, int], ...]


@dataclass(frozen=True)
class BoundedHeadsCase:
    """A multi-head model, the head bound H, and what must happen: an error whose message contains
    ``expect``, or (float mode) ``"estimate"`` (a result within its estimate) or ``"refuse"``."""

    model: MultiHead
    heads: int
    expect: str


@dataclass(frozen=True)
class NetworkCase:
    """A ReLU network; ``expect`` is, for the edge cases, what the unit level must report:
    ``"unit"`` (identified) or a word of the reason it is not."""

    net: ReLUFFN
    expect: str | None = None


@dataclass(frozen=True)
class TransformerCase:
    """A one-layer Transformer."""

    model: Transformer


@dataclass(frozen=True)
class ProofCase:
    """A proof of :mod:`proofs`, by name (empty: none in sympy), the sizes it runs at (``dims``,
    ``heads``; empty: its own), and the Coq theorems (``FILE.NAME`` in ``proofs/coq/``) that prove
    the same statement (empty: not formalised in Coq)."""

    prover: str
    dims: tuple[int, ...] = ()
    heads: tuple[int, ...] = ()
    coq: tuple[str, ...] = ()
