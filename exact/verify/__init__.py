"""Check the theorems' claims on real instances: the engine behind ``exact-attention verify``.

:func:`claims` builds the claims of the chosen theorems; :func:`run_claims` runs them
and :func:`format_table` prints the report.
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .core import Claim, ClaimReport, Instance, Outcome, format_table, run_claims, table_footer, table_header, table_row
from .kkg import kkg_claims
from .low_rank import low_rank_claims
from .multihead import multihead_claims
from .noisy import noisy_claims
from .single_head import single_head_claims
from .transformer import transformer_claims

__all__ = [
    "THEOREMS",
    "claims",
    "Claim",
    "ClaimReport",
    "Instance",
    "Outcome",
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
]

THEOREMS = ("4.1", "5.1", "6.1", "7.1", "kkg", "transformer")


def claims(theorems=THEOREMS, *, max_d: int = 16, quick: bool = False) -> list[Claim]:
    """The claims of the given theorems (``"4.1"`` single head, ``"5.1"`` low rank, ``"6.1"`` noisy and
    threshold oracles, ``"7.1"`` multi-head, ``"transformer"`` the ReLU FFN and one-layer Transformer)."""
    unknown = set(theorems) - set(THEOREMS)
    if unknown:
        raise InvalidArgument(f"theorem: expected some of {', '.join(THEOREMS)}, got {', '.join(sorted(unknown))}")
    out: list[Claim] = []
    if "4.1" in theorems:
        out += single_head_claims(max_d=max_d, quick=quick)
    if "5.1" in theorems:
        out += low_rank_claims(quick=quick)
    if "6.1" in theorems:
        out += noisy_claims(quick=quick)
    if "7.1" in theorems:
        out += multihead_claims(quick=quick)
    if "kkg" in theorems:
        out += kkg_claims(quick=quick)
    if "transformer" in theorems:
        out += transformer_claims(quick=quick)
    return out
