"""Check the theorems' claims on real instances: the engine behind ``exact-attention verify``.

:func:`claims` builds the claims of the chosen theorems; :func:`run_claims` runs them in
this process and :func:`format_table` prints the table.  A whole ``verify`` session
(selection, output paths, resume, executors, streamed rows, report, plots) is
:func:`exact.verify.session.run_session`.
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .core import (Claim, ClaimReport, Count, Instance, Outcome, Verdict, conditions, format_table, run_claims,
                   table_footer, table_header, table_row)
from .ids import ClaimId, InstanceId
from .budget import BUDGETS, DEFAULT_BUDGET, check_budget
from .kkg import kkg_claims
from .lemmas import lemma_claims
from .low_rank import low_rank_claims
from .multihead import multihead_claims
from .noisy import noisy_claims
from .single_head import single_head_claims
from .transformer import ffn_claims, transformer_claims

__all__ = [
    "THEOREMS",
    "BUDGETS",
    "DEFAULT_BUDGET",
    "claims",
    "Claim",
    "ClaimReport",
    "Instance",
    "Outcome",
    "Verdict",
    "Count",
    "conditions",
    "ClaimId",
    "InstanceId",
    "run_claims",
    "format_table",
    "table_header",
    "table_row",
    "table_footer",
    "single_head_claims",
    "low_rank_claims",
    "multihead_claims",
    "kkg_claims",
    "noisy_claims",
    "transformer_claims",
    "ffn_claims",
    "theorem_keys",
    "lemma_claims",
]

def theorem_keys() -> tuple[str, ...]:
    """The theorems ``verify`` runs: the theorem table's, then each learner plug-in's that states claims."""
    from ..theorems import verify_theorems

    return tuple(verify_theorems())


#: The built-in theorems (the theorem table's keys); :func:`theorem_keys` adds the plug-ins'.
THEOREMS = ("4.1", "biases", "5.1", "6.1", "7.1", "kkg", "ffn", "transformer", "lemmas")


def claims(theorems=None, *, max_d: int = 16, budget: str = DEFAULT_BUDGET) -> list[Claim]:
    """The claims of the given theorems (default: every one), their sweeps sized by ``budget``
    (``"quick"``, ``"standard"``, ``"full"``), in the theorem table's order (:mod:`exact.theorems`).

    ``max_d`` bounds the Theorem 4.1 random sweep.

    >>> [c.name for c in claims(("lemmas",))][:1]
    ['Logit primitive: f([b+u; b]) = vᵀb + σ(uᵀWb)·vᵀu']
    """
    from ..theorems import verify_theorems

    table = verify_theorems()
    theorems = tuple(table) if theorems is None else tuple(theorems)
    unknown = set(theorems) - set(table)
    if unknown:
        raise InvalidArgument(f"theorem: expected some of {', '.join(table)}, got {', '.join(sorted(unknown))}")
    check_budget(budget)
    out: list[Claim] = []
    for key, theorem in table.items():
        if key in theorems:
            out += theorem.build_claims(budget=budget, max_d=max_d)
    return out
