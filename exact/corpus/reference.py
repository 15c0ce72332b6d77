"""This package's own learners behind the corpus signature ``learn(oracle, *, theorem, hints) -> dict``.

``pytest --exact-attention-corpus DIR --learner exact.corpus.reference:learn`` runs them on a
corpus; every instance must come back exact at the theorem's count.  They are found in the
registry by name and run without verification queries (``checks=0``): the corpus grants the
model class (a single head, rank ≤ r, at most H heads, m hidden units), so every query they
ask is one the theorem's count allows.

Examples
--------
>>> from exact import ExactOracle, SingleHead
>>> learn(ExactOracle(SingleHead([[1, 2], [3, 4]], [1, -1])), theorem="4.1", hints={})
{'W': [['1', '2'], ['3', '4']], 'v': ['1', '-1']}
"""

from __future__ import annotations

from .. import registry
from ..errors import InvalidArgument, OracleInconsistent
from ..oracles import BaseOracle, ExactAnswer

__all__ = ["learn"]


def _rows(M) -> list:
    return [[str(x) for x in row] for row in M]


class _Relay(BaseOracle):
    """A library oracle over the corpus proxy (``d``, ``query``, ``query_batch``): each query is relayed once."""

    exact = True

    def __init__(self, proxy):
        super().__init__(proxy.d)
        self._proxy = proxy

    def _answer(self, seq):
        return self._checked(self._proxy.query(seq.dense()))

    def _answer_batch(self, seqs):
        return [self._checked(a) for a in self._proxy.query_batch([s.dense() for s in seqs])]

    @staticmethod
    def _checked(answer):
        if type(answer) is not ExactAnswer:
            raise OracleInconsistent(f"the corpus oracle answered a {type(answer).__name__}, not an exact answer")
        return answer


def learn(oracle, *, theorem: str, hints: dict) -> dict:
    """Learn the corpus instance behind ``oracle`` with the registered learner of ``theorem``."""
    if not isinstance(oracle, BaseOracle):
        oracle = _Relay(oracle)
    if theorem == "4.1":
        r = registry.get("single-head").learn(oracle, checks=0)
        return {"W": _rows(r.model.W), "v": [str(x) for x in r.model.v]}
    if theorem == "5.1":
        r = registry.get("low-rank").learn(oracle, rank=hints["rank"], seed=0, checks=0)
        return {"W": _rows(r.model.W), "v": [str(x) for x in r.model.v]}
    if theorem == "kkg":
        r = registry.get("multi-head").learn(oracle, heads=hints["heads"], seed=0, checks=0)
        return {"heads": [{"W": _rows(h.W), "v": [str(x) for x in h.v]} for h in r.model.heads]}
    if theorem == "ffn":
        r = registry.get("ffn").learn(oracle, m=hints["m"], seed=0, checks=0)
        return {"A": _rows(r.model.A), "w": [str(x) for x in r.model.w]}
    if theorem == "transformer":
        r = registry.get("transformer").learn(oracle, m=hints["m"], seed=0, checks=0)
        return {"W": _rows(r.model.W), "A": _rows(r.model.A), "w": [str(x) for x in r.model.w]}
    raise InvalidArgument(f"theorem: expected one of 4.1, 5.1, kkg, ffn, transformer, got {theorem!r}")
