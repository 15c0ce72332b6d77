"""The compressed-sensing learner of Theorem 5.1 [BSHK26], run as the paper states it.

1. ``v`` from ``d`` one-token queries.
2. ``m`` i.i.d. Gaussian pairs ``(a_k, b_k)``; the query ``[a_k + b_k; b_k]`` gives the
   rank-one projection ``t_k = a_kᵀ W b_k`` through the logit primitive.
3. ``Ŵ = argmin ‖W‖_*  subject to  ⟨a_k b_kᵀ, W⟩ = t_k``, solved with cvxpy.

It succeeds for ``m >= C·r·2d`` with probability ``1 − e^{−Ω(m)}`` (rank-one projections,
Cai & Zhang 2015); the paper gives no ``C``, and ``benchmarks/low_rank.py`` measures
it.  Queries: ``d + m``.  The result is approximate (a convex solver's output), so it
carries no certificate; against an exact oracle the logits are read from rigorous
balls refined to 60 bits, so the only error left is the solver's.
"""

from __future__ import annotations

import math
import numbers
import time
import warnings
from fractions import Fraction

import numpy as np

from dataclasses import dataclass

from .. import registry
from ..arith import CertifiedArithmetic, FloatArithmetic, Measurement
from ..errors import InvalidArgument, MissingDependency, ShapeError, SolverFailed
from ..models import SingleHead
from ..protocols import Oracle
from ..sequences import Sequence
from ._common import read_v
from .driver import Run, oracle_dimension
from .details import Comparison, Details
from .result import LearnResult

__all__ = ["learn_low_rank_cs", "cs_measurements", "DEFAULT_C", "SPEC"]

#: The default ``C`` in ``m = ceil(C·2rd)``: the smallest value at which recovery
#: (relative error ≤ 1e-6) succeeded in at least 95% of 20 trials for every shape
#: measured by ``benchmarks/low_rank.py`` ((d, r) ∈ {8, 16, 24} × {1, 2}; results in
#: ``benchmarks/results/low_rank_phase.jsonl``).  At fixed r it still grows with d
#: over that range (r = 1: 3.0, 3.0, 3.5), so larger heads may need more.
DEFAULT_C = 3.5


def cs_measurements(d: int, r: int, C: float = DEFAULT_C) -> int:
    """``m = ceil(C · 2rd)`` rank-one projections.

    >>> cs_measurements(64, 4, 3.5)
    1792
    """
    return math.ceil(C * 2 * r * d)


def _cvxpy():
    """cvxpy, or MissingDependency (checked before any query is spent)."""
    try:
        import cvxpy
    except ImportError:
        raise MissingDependency("learn_low_rank_cs needs cvxpy: pip install 'exact-attention[cs]'") from None
    return cvxpy


def _solve_nuclear(A: np.ndarray, B: np.ndarray, t: np.ndarray, solver: str | None):
    cp = _cvxpy()
    d = A.shape[1]
    X = cp.Variable((d, d))
    constraints = [cp.sum(cp.multiply(A @ X, B), axis=1) == t]
    problem = cp.Problem(cp.Minimize(cp.normNuc(X)), constraints)
    if solver is None:
        solver = "CLARABEL" if "CLARABEL" in cp.installed_solvers() else None
    with warnings.catch_warnings():  # an inaccurate solve is reported through the status instead
        warnings.simplefilter("ignore", UserWarning)
        problem.solve(solver=solver)
    if X.value is None:
        raise SolverFailed(f"learn_low_rank_cs: the solver returned no solution (status {problem.status})")
    return X.value, problem.status, solver or "default"


def learn_low_rank_cs(
    oracle: Oracle,
    *,
    rank: int,
    m: int | None = None,
    C: float = DEFAULT_C,
    seed: int = 0,
    probe_scale=1,
    solver: str | None = None,
) -> LearnResult:
    """Learn a rank-``r`` head by nuclear-norm minimisation over ``m`` Gaussian rank-one projections.

    Parameters
    ----------
    oracle : Oracle
        Exact oracles are read through rigorous balls; others in float64.
    rank : int
        The rank bound ``r`` (it only sets the default ``m``).
    m : int, optional
        Number of projections; default ``ceil(C·2rd)``.
    C : float
        The constant in ``m = C·2rd`` when ``m`` is not given.
    seed : int
        Seed of the Gaussian probes.
    probe_scale : number
        Scale of the probes (the recovery problem is invariant to it; a smaller
        scale keeps float-oracle logits away from saturation).
    solver : str, optional
        cvxpy solver name (default Clarabel when installed).

    Returns
    -------
    LearnResult
        ``mode="cs"``, ``exact=False``, ``certificate=None``, ``error_estimate=None``;
        ``details`` holds ``m``, ``C`` (= m/(2rd)), the solver and its status, and the
        largest constraint ``residual``.

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> truth = SingleHead.random(6, seed=0, rank=1)
    >>> result = learn_low_rank_cs(ExactOracle(truth), rank=1, seed=0)  # needs cvxpy (the cs extra)
    >>> result.queries == 6 + cs_measurements(6, 1), result.exact
    (True, False)
    """
    d = oracle_dimension(oracle)
    if not isinstance(rank, int) or isinstance(rank, bool) or not 1 <= rank <= d:
        raise ShapeError(f"rank: expected an integer 1 <= r <= d = {d}, got {rank!r}")
    if m is None:
        if isinstance(C, bool) or not isinstance(C, numbers.Real) or not (math.isfinite(float(C)) and C > 0):
            raise InvalidArgument(f"C: expected a positive finite constant, got {C!r}")
        C = float(C)
        m = cs_measurements(d, rank, C)
    if not isinstance(m, int) or isinstance(m, bool) or m < 1:
        raise InvalidArgument(f"m: expected a positive number of projections, got {m!r}")
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise InvalidArgument(f"seed: expected a non-negative integer, got {seed!r}")
    scale = float(probe_scale) if isinstance(probe_scale, numbers.Real) and not isinstance(probe_scale, bool) else -1.0
    if not (math.isfinite(scale) and scale > 0):
        raise InvalidArgument(f"probe_scale: expected a positive finite scale, got {probe_scale!r}")
    _cvxpy()
    arith = CertifiedArithmetic(oracle) if oracle.exact else FloatArithmetic(oracle)
    run = Run(SPEC, oracle, arithmetic=arith, queries=d + m, checks=0)
    with run:

        v, _ = read_v(run)
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((m, d)) * scale
        B = rng.standard_normal((m, d)) * scale
        seqs, meas, probes = [], [], []
        for a, b in zip(A, B):
            # The first token is a + b rounded to float64, exactly what a float oracle is sent;
            # the probe actually measured is then u = (a + b) − b, exactly.
            first = [Fraction(float(x) + float(y)) for x, y in zip(a, b)]
            bq = [Fraction(float(y)) for y in b]
            aq = [s - y for s, y in zip(first, bq)]
            probes.append([float(x) for x in aq])
            seqs.append(Sequence._exact(d, (_nonzero(first), _nonzero(bq))))
            base = sum((Fraction(vi) * x for vi, x in zip(v, bq)), Fraction(0))
            slope = sum((Fraction(vi) * x for vi, x in zip(v, aq)), Fraction(0))
            meas.append(Measurement(base, slope))
        answers = run.ask(seqs)
        t = np.array(arith.approximate_logits(answers, meas))

        t_solve = time.perf_counter()
        A = np.array(probes)  # the probes actually measured
        W, status, used = _solve_nuclear(A, B, t, solver)
        solve_seconds = time.perf_counter() - t_solve
        residual = float(np.max(np.abs(np.einsum("md,de,me->m", A, W, B) - t)))
        model = SingleHead(W, [Fraction(x) for x in v])
        return run.finish(
            model,
            approximate=True,
            mode="cs",
            details=CSDetails(m=m, C=m / (2 * rank * d), solver=used, status=status, residual=residual,
                              solver_seconds=solve_seconds),
        )


@dataclass(frozen=True)
class CSDetails(Details):
    """The compressed-sensing solve: the measurements ``m`` (``C = m/(2rd)``), the solver, its
    status and residual, and its time.  Its result states no bound; the comparison with a true
    model reports the relative Frobenius error."""

    m: int = 0
    C: float = 0.0
    solver: str = ""
    status: str = ""
    residual: float = 0.0
    solver_seconds: float = 0.0

    def compare(self, result, truth) -> Comparison:
        W, _ = truth.to_numpy()
        Wh, _ = result.model.to_numpy()
        err = float(np.linalg.norm(Wh - W) / max(np.linalg.norm(W), 1e-300))
        return Comparison(False, True, {"W_relative_frobenius": err}, rows=(
            ("error", f"relative Frobenius error {err:.3g} against the true model (solver {self.status})"),))


def _nonzero(x: list[Fraction]) -> tuple:
    return tuple((j, q) for j, q in enumerate(x) if q)


SPEC = (
    registry.LearnerSpec(
        name="low-rank-cs",
        summary="Theorem 5.1 [BSHK26]: nuclear-norm recovery from m = C·2rd Gaussian rank-one projections (approximate)",
        model_kind="single-head",
        modes=("certified", "float"),
        learn=learn_low_rank_cs,
        query_count=lambda d, rank=1, m=None, C=DEFAULT_C, **conditions: d + (m or cs_measurements(d, rank, C)),
        count_text=lambda result: f"d + m = {result.model.d} + {result.details['m']}",
        count_formula="d + m",
        exact=False,
        options=(
            registry.Option("rank", "int", "the rank bound r (sets m = ceil(C·2rd))", minimum=1, required=True),
            registry.Option("m", "int", "number of projections (overrides --C)", minimum=1),
            registry.Option("C", "float", "the constant in m = ceil(C·2rd)", default=DEFAULT_C),
            registry.Option("seed", "int", "seed of the Gaussian probes", default=0, minimum=0),
        ),
        command="low-rank",
        method="cs",
    )
)
