"""Steps shared by the learners: timed queries and reading ``v`` from one-token queries."""

from __future__ import annotations

import time

from ..errors import NotIdentifiable
from ..sequences import Sequence

__all__ = ["Asker", "read_v"]


class Asker:
    """Asks an oracle batches of queries and adds up the time spent inside it."""

    def __init__(self, oracle):
        self.oracle = oracle
        self.seconds = 0.0

    def __call__(self, seqs) -> list:
        t = time.perf_counter()
        answers = self.oracle.query_batch(seqs)
        self.seconds += time.perf_counter() - t
        return answers


def read_v(ask: Asker, arith, d: int):
    """``v_i = f([e_i])`` from ``d`` one-token queries; returns ``(v, v_err)``.

    Raises
    ------
    NotIdentifiable
        If ``v = 0`` (exactly, or within the oracle's accuracy): then no query
        depends on ``W``.
    """
    answers = ask([Sequence.basis(d, i) for i in range(d)])
    names = [f"v[{i}]" for i in range(d)]
    v = arith.values(answers, names)
    v_err = arith.value_errors(names)
    if all(abs(x) <= e for x, e in zip(v, v_err)):
        if arith.exact:
            raise NotIdentifiable("v = 0: then f(X) = 0 for every X, so W has no effect and cannot be identified")
        raise NotIdentifiable(
            f"v is zero within the oracle's accuracy (max |v_i| = {max(map(abs, v)):.3g}): then f does not "
            "depend on W and W cannot be identified"
        )
    return v, v_err
