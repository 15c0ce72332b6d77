"""The odd part of an exact oracle: ``X ↦ f(X) − f(−X)``, two calls per query.

For a one-layer Transformer the odd part is a single softmax head with the same ``W``
and the value vector ``Aᵀw`` (:mod:`exact.transformer`), so Theorem 4.1's learner runs on
it unchanged.  Each query asks the inner oracle ``X`` and then ``−X``; the answer is their
exact difference.  The inner calls are counted where they are made (the inner oracle,
or the ``ask`` function of a learner's run), and this oracle counts the odd queries.
"""

from __future__ import annotations

from collections.abc import Callable

from .errors import OracleInconsistent
from .oracles import BaseOracle, ExactAnswer, FloatAnswer, answer_difference
from .sequences import Sequence

__all__ = ["OddOracle"]


class OddOracle(BaseOracle):
    """``X ↦ f(X) − f(−X)`` for an oracle ``f``: exact over an exact oracle, else a float whose declared
    error is both answers' plus the subtraction's rounding.

    Parameters
    ----------
    inner : Oracle
        An exact oracle (its answers are :class:`~exact.oracles.ExactAnswer`), or an approximate one
        whose answers declare their errors (:meth:`~exact.protocols.Oracle.error_bound`).
    ask : callable, optional
        How to ask the inner oracle a batch (default ``inner.query_batch``); a learner
        passes its run's ``ask`` so that the inner calls land in its transcript.

    Examples
    --------
    >>> from exact import ExactOracle
    >>> from exact.transformer import Transformer
    >>> T = Transformer([[1, 0], [0, 2]], [[1, 1], [2, -1]], [1, "-1/2"])
    >>> box = ExactOracle(T)
    >>> odd = OddOracle(box)
    >>> X = [[1, 2], [0, 1]]
    >>> odd.query(X).ball(64).mid() == ExactOracle(T.odd_head).query(X).ball(64).mid(), odd.count, box.count
    (True, 1, 2)
    """

    exact = True

    def __init__(self, inner, *, ask: Callable | None = None, budget: int | None = None):
        super().__init__(inner.d, budget=budget)
        # over an approximate oracle the difference is a float, declared within both answers' errors
        # and the rounding of the subtraction
        self.exact = bool(inner.exact)
        self._inner = inner
        self._ask = ask if ask is not None else inner.query_batch

    def _answer_batch(self, seqs: list[Sequence]):
        pairs = []
        for s in seqs:
            pairs += [s, -s]
        answers = self._ask(pairs)
        if len(answers) != len(pairs):
            raise OracleInconsistent("the inner oracle did not answer every query of the pair")
        if not self.exact:
            out = []
            for a, b in zip(answers[::2], answers[1::2]):
                y = float(a) - float(b)
                err = float(self._inner.error_bound(a)) + float(self._inner.error_bound(b)) + abs(y) * 2.0**-53
                out.append(FloatAnswer(y, err))
            return out
        if any(type(a) is not ExactAnswer for a in answers):
            raise OracleInconsistent("the inner oracle did not answer every query of the pair exactly")
        return [answer_difference(a, b) for a, b in zip(answers[::2], answers[1::2])]
