"""Steps shared by the single-head learners: reading ``v`` from one-token queries."""

from __future__ import annotations

from ..errors import NotIdentifiable
from ..sequences import Sequence

__all__ = ["read_v"]


def read_v(run):
    """``v_i = f([e_i])`` from ``d`` one-token queries; returns ``(v, v_err)``.

    Raises
    ------
    NotIdentifiable
        If ``v = 0`` (exactly, or within the oracle's accuracy): then no query
        depends on ``W``.
    """
    d = run.d
    answers = run.ask([Sequence.basis(d, i) for i in range(d)])
    names = [f"v[{i}]" for i in range(d)]
    v = run.arith.values(answers, names)
    v_err = run.arith.value_errors(names)
    if all(abs(x) <= e for x, e in zip(v, v_err)):
        if run.arith.exact:
            raise NotIdentifiable("v = 0: then f(X) = 0 for every X, so W has no effect and cannot be identified")
        raise NotIdentifiable(
            f"v is zero within the oracle's accuracy (max |v_i| = {max(map(abs, v)):.3g}): then f does not "
            "depend on W and W cannot be identified"
        )
    return v, v_err
