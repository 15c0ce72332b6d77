"""The three arithmetics a learner runs in: ``symbolic``, ``certified`` and ``float``.

A learner written against this context is written once, as a plan of value queries
whose answers are either rational values directly (``f([e_i]) = v_i``) or *logit measurements*: the answer
``y`` of the logit primitive [BSHK26, Sec. 4] satisfies

    y = base + slope · σ(ℓ),   so   ℓ = σ⁻¹((y − base)/slope),

with ``base`` and ``slope`` known from earlier answers.  Each parameter is a fixed
linear combination ``Σ c · ℓ_m / scale_m`` of measurements.  An arithmetic turns
answers into parameters:

``symbolic``
    sympy, exact: each ``e^q`` in an answer becomes an independent positive symbol,
    σ⁻¹ is computed in the rational function field and must reduce to a monomial,
    whose exponent is read back as an exact rational (or the run fails loudly).
``certified``
    python-flint ``arb`` balls.  Without a grid (exact oracles only) each number is
    the simplest rational in its ball, confirmed exactly against the answer it must
    reproduce; precision doubles until it is.  With a grid, each parameter is the
    unique grid point its ball holds.  Refining an answer is not a new query.
``float``
    numpy float64, vectorised, with a first-order error estimate.

The Theorem 4.1 learner reads every number through this context in all three modes, the
low-rank sketch learner in the two exact ones; the compressed-sensing learner reads its
logits through it; the other learners have their own code per mode (docs/exactness.md,
"Where one algorithm runs in three arithmetics").
"""

from __future__ import annotations

from ..errors import InvalidArgument
from ..grids import Grid
from ..protocols import Oracle
from .base import Answer, Arithmetic, Combo, Confirm, Measurement, Names, primitive_form
from .certified import MAX_HEIGHT_BITS, CertifiedArithmetic
from .floating import FloatArithmetic
from .symbolic import SymbolicArithmetic, symbolic_logit

__all__ = [
    "MODES",
    "Answer",
    "Combo",
    "Confirm",
    "Names",
    "Measurement",
    "Arithmetic",
    "SymbolicArithmetic",
    "CertifiedArithmetic",
    "FloatArithmetic",
    "MAX_HEIGHT_BITS",
    "get_arithmetic",
    "primitive_form",
    "symbolic_logit",
]

MODES = ("certified", "symbolic", "float")


def get_arithmetic(
    mode: str | None, oracle: Oracle, *, grid: Grid | str | None = None, prec: int = 64, max_prec: int = 1 << 23
) -> Arithmetic:
    """The arithmetic for ``mode``; ``None`` picks certified for exact oracles or a declared grid, else float.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle, FloatOracle
    >>> get_arithmetic(None, ExactOracle(SingleHead([[1]], [1]))).name
    'certified'
    >>> get_arithmetic(None, FloatOracle(SingleHead([[1]], [1]))).name
    'float'
    """
    if mode is None:
        mode = "certified" if (oracle.exact or grid is not None) else "float"
    if mode not in MODES:
        raise InvalidArgument(f"mode: expected one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if mode != "certified" and grid is not None:
        raise InvalidArgument(f"grid: only mode='certified' identifies on a grid, got mode={mode!r}")
    if mode == "certified":
        return CertifiedArithmetic(oracle, grid=grid, prec=prec, max_prec=max_prec)
    if mode == "symbolic":
        return SymbolicArithmetic(oracle)
    return FloatArithmetic(oracle)
