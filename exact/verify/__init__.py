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
from .transformer import transformer_claims

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
    "lemma_claims",
]

THEOREMS = ("4.1", "5.1", "6.1", "7.1", "kkg", "transformer", "lemmas")

_BUILDERS = {  # 4.1 also takes max_d
    "5.1": low_rank_claims,
    "6.1": noisy_claims,
    "7.1": multihead_claims,
    "kkg": kkg_claims,
    "transformer": transformer_claims,
    "lemmas": lemma_claims,
}


def claims(theorems=THEOREMS, *, max_d: int = 16, budget: str = DEFAULT_BUDGET) -> list[Claim]:
    """The claims of the given theorems, their sweeps sized by ``budget`` (``"quick"``, ``"standard"``, ``"full"``).

    Theorems: ``"4.1"`` single head, ``"5.1"`` low rank, ``"6.1"`` noisy and threshold oracles,
    ``"7.1"`` non-identifiable multi-head families, ``"kkg"`` canonical multi-head recovery,
    ``"transformer"`` the ReLU FFN and the one-layer Transformer, ``"lemmas"`` the identities
    the learners rest on.  ``max_d`` bounds the Theorem 4.1 random sweep.

    >>> [c.name for c in claims(("lemmas",))][:1]
    ['Logit primitive: f([b+u; b]) = vᵀb + σ(uᵀWb)·vᵀu']
    """
    unknown = set(theorems) - set(THEOREMS)
    if unknown:
        raise InvalidArgument(f"theorem: expected some of {', '.join(THEOREMS)}, got {', '.join(sorted(unknown))}")
    check_budget(budget)
    out: list[Claim] = []
    for theorem in THEOREMS:
        if theorem in theorems:
            out += single_head_claims(max_d=max_d, budget=budget) if theorem == "4.1" else _BUILDERS[theorem](budget=budget)
    return out
