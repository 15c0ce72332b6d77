"""The one theorem table: number → title → learners → verify claims → corpus family → doc page.

``verify`` (its theorem keys, the report's titles), the regression corpus (its families,
their hints, count rules and answer formats) and the docs index read this table; nothing
else keeps a list of theorems.  The counts are the papers' formulas (:mod:`exact.formulas`),
stated here independently of any learner's own count.

A learner installed as a plug-in (:mod:`exact.registry`) that declares ``claims`` adds a
theorem of its own to ``verify``, keyed by its name (:func:`verify_theorems`).

Examples
--------
>>> [t.key for t in THEOREMS.values()]
['4.1', 'biases', '5.1', '6.1', '7.1', 'kkg', 'ffn', 'transformer', 'lemmas']
>>> THEOREMS["5.1"].corpus.count(4, {"rank": 2}), THEOREMS["5.1"].corpus.rule
(16, 'exact')
>>> [k for k, t in THEOREMS.items() if t.corpus]
['4.1', '5.1', 'kkg', 'ffn', 'transformer']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import InvalidArgument
from .formulas import FFN, KKG_PAPER, LOW_RANK, SINGLE_HEAD

__all__ = ["Theorem", "CorpusFamily", "THEOREMS", "get_theorem", "verify_theorems", "corpus_families"]


@dataclass(frozen=True)
class CorpusFamily:
    """What the regression corpus holds for a theorem.

    Attributes
    ----------
    kind : str
        The model kind of its instances (:mod:`exact.kinds`); a learner's answer is read as
        that kind's JSON (its ``fields``) and compared by ``canonical()``.
    fields : tuple of str
        The keys of the learner's answer.
    hints : tuple of str
        What the theorem grants the learner (``rank``, ``heads``, ``m``).
    count : callable
        ``count(d, hints) -> int``: the theorem's count for an instance.
    text : str
        The count as plain text, for the corpus manifest.
    rule : str
        ``"exact"`` (the count must be met exactly) or ``"at most"``.
    returns : str
        The answer's format, for the manifest.
    """

    kind: str
    fields: tuple
    hints: tuple
    count: Callable[[int, dict], int] = field(repr=False)
    text: str
    rule: str
    returns: str


@dataclass(frozen=True)
class Theorem:
    """One row of the table.

    Attributes
    ----------
    key : str
        What ``verify`` and the corpus call it (``"4.1"``).
    title : str
        Its title in reports.
    learners : tuple of str
        The registry names of the learners it concerns.
    claims : str or None
        ``"module:function"`` of its verify claims, ``function(budget=...)`` (and ``max_d=``
        when ``max_d``), imported when ``verify`` runs them.
    max_d : bool
        Whether its claims take the sweep's ``max_d``.
    corpus : CorpusFamily or None
        Its corpus family, if it has one.
    doc : str
        The page of docs/ that derives it.
    """

    key: str
    title: str
    learners: tuple
    claims: str | None
    doc: str
    corpus: CorpusFamily | None = None
    max_d: bool = False

    def build_claims(self, *, budget: str, max_d: int = 16) -> list:
        """Its verify claims for ``budget``."""
        if self.claims is None:
            return []
        import importlib

        module, _, name = self.claims.partition(":")
        build = getattr(importlib.import_module(module), name)
        return build(budget=budget, max_d=max_d) if self.max_d else build(budget=budget)


_FFN_COUNT = lambda d, h: FFN(d=d, m=h["m"])  # noqa: E731

THEOREMS: dict[str, Theorem] = {t.key: t for t in (
    Theorem("4.1", "Theorem 4.1 [BSHK26]: a single head, exactly, from d² + d queries", ("single-head",),
            "exact.verify.single_head:single_head_claims", "single-head.md",
            CorpusFamily("single-head", ("W", "v"), (), lambda d, h: SINGLE_HEAD(d=d), "d^2 + d", "exact",
                         '{"W": d x d, "v": d}'), max_d=True),
    Theorem("biases", "A head with biases, as torch builds it, exactly, from d² + 2d + 1 queries",
            ("single-head-biased",), "exact.verify.biases:biased_claims", "biases.md", max_d=True),
    Theorem("5.1", "Theorem 5.1 [BSHK26]: low-rank heads", ("low-rank", "low-rank-cs"),
            "exact.verify.low_rank:low_rank_claims", "low-rank.md",
            CorpusFamily("single-head", ("W", "v"), ("rank",), lambda d, h: LOW_RANK(d=d, r=h["rank"]),
                         "2*r*d - r^2 + d", "exact", '{"W": d x d, "v": d}')),
    Theorem("6.1", "Theorem 6.1 and App. B [BSHK26]: noisy and threshold oracles",
            ("noisy-paper", "noisy-frame", "noisy-refine", "threshold"), "exact.verify.noisy:noisy_claims",
            "noisy.md"),
    Theorem("7.1", "Proposition 7.1 [BSHK26]: non-identifiable multi-head parameterisations", (),
            "exact.verify.multihead:multihead_claims", "multi-head.md"),
    Theorem("kkg", "[KKG26]: the canonical multi-head form, exactly", ("multi-head", "multi-head-fast", "multi-head-pairs"),
            "exact.verify.kkg:kkg_claims", "multi-head.md",
            CorpusFamily("multi-head", ("heads",), ("heads",), lambda d, h: KKG_PAPER(d=d, H=h["heads"]),
                         "4*H*d^2 - 2*H + 1", "exact",
                         '{"heads": [{"W": d x d, "v": d}, ...]} (compared as canonical forms)')),
    Theorem("ffn", "Exact ReLU FFN extraction, and when every unit is accounted for (and from float answers)",
            ("ffn", "ffn-biased", "ffn-float"),
            "exact.verify.transformer:ffn_claims", "ffn.md",
            CorpusFamily("ffn", ("A", "w"), ("m",), _FFN_COUNT, "(m + 1)*(d - 2) + 10*m + 32", "at most",
                         '{"A": m x d, "w": m} (compared as functions: canonical function forms)')),
    Theorem("transformer", "[BSHK26]: the one-layer Transformer by the odd-query reduction, and with biases and a "
            "residual by inverting the FFN", ("transformer", "transformer-biased"),
            "exact.verify.transformer:transformer_claims", "ffn.md",
            CorpusFamily("transformer", ("W", "A", "w"), ("m",), lambda d, h: _FFN_COUNT(d, h) + 2 * (d * d + d),
                         "(m + 1)*(d - 2) + 10*m + 32 + 2*(d^2 + d)", "at most",
                         '{"W": d x d, "A": m x d, "w": m} (W exactly, the network as a function)')),
    Theorem("lemmas", "The identities the learners rest on", (), "exact.verify.lemmas:lemma_claims", "proofs.md"),
)}


def get_theorem(key: str) -> Theorem:
    """The row ``key``, or :class:`~exact.errors.InvalidArgument` naming the known ones."""
    theorem = verify_theorems().get(key) if isinstance(key, str) else None
    if theorem is None:
        raise InvalidArgument(f"theorem: unknown theorem {key!r}; known: {', '.join(verify_theorems())}")
    return theorem


def corpus_families() -> dict[str, CorpusFamily]:
    """The theorems with a corpus family, by key, in table order."""
    return {k: t.corpus for k, t in THEOREMS.items() if t.corpus is not None}


def verify_theorems() -> dict[str, Theorem]:
    """What ``verify`` runs: the table, then one theorem per registered learner that states
    ``claims`` (a plug-in's), keyed by the learner's name."""
    from . import registry

    out = dict(THEOREMS)
    for spec in registry.learners():
        if spec.claims is not None and spec.name not in out:
            out[spec.name] = _PluginTheorem(spec.name, spec.summary, (spec.name,), None, "", spec=spec)
    return out


@dataclass(frozen=True)
class _PluginTheorem(Theorem):
    spec: object = field(default=None, repr=False, compare=False)

    def build_claims(self, *, budget: str, max_d: int = 16) -> list:
        return list(self.spec.claims(budget))  # type: ignore[attr-defined]
