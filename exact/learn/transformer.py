"""A one-layer Transformer ``T(X) = wᵀReLU(A·h(X))``, exactly: the FFN, then the odd part (SPEC §3.5).

1. **The FFN.**  One-token inputs see only the FFN, ``T([x]) = wᵀReLU(Ax)``, so the exact
   ReLU learner (:mod:`exact.learn.ffn`) runs on the oracle as it is.  Its function-level
   form gives ``L = ½·Aᵀw``.
2. **The attention.**  ``T(X) − T(−X) = (Aᵀw)ᵀh(X)`` is a single head with the same ``W``
   and the value vector ``v_eff = Aᵀw`` (:class:`~exact.odd.OddOracle`), so Theorem 4.1's
   learner recovers ``W`` and ``v_eff`` exactly with ``d² + d`` odd queries, each two
   oracle calls.  It needs ``Aᵀw ≠ 0``: otherwise the odd part vanishes, and the learner
   raises :class:`~exact.errors.NotIdentifiable` before asking it anything.
3. **The check.**  ``v_eff`` must equal ``2L`` exactly: two independent measurements of
   ``Aᵀw``, one from the FFN's linear part and one from the attention's value vector.

The count is the FFN learner's plus ``2(d² + d)`` oracle calls, all counted on the oracle;
the random verification sequences (lengths 3 and 4) then check the whole model at once.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import registry
from ..errors import InvalidArgument, NotIdentifiable, OracleInconsistent
from ..odd import OddOracle
from ..protocols import Oracle
from ..sequences import Sequence
from ..transformer import Transformer
from .driver import DEFAULT_CHECKS, Run, oracle_dimension
from ..numbers import format_rational
from .details import Comparison, Details
from .ffn import FFN_CONDITIONS, FFNDetails, _extract, check_options, check_ffn_part, ffn_conditions, ffn_details, standing_assumptions
from .result import LearnResult
from .single_head import ProbePlan, learn_single_head

__all__ = ["learn_transformer", "SPEC"]


def learn_transformer(oracle: Oracle, *, m: int | None = None, seed=None, checks: int = DEFAULT_CHECKS, check_seed=None,
                      retries: int = 3, max_units: int = 4096, mode: str | None = None) -> LearnResult:
    """Learn ``W`` exactly and the FFN ``(A, w)`` in canonical form from an exact oracle.

    Parameters
    ----------
    oracle : Oracle
        An exact oracle of a one-layer Transformer.
    m : int, optional
        The number of hidden units, if known.
    seed : int, optional
        Seed of the FFN learner's search path (fresh when omitted; reported).
    checks, check_seed :
        Random verification sequences (lengths 3 and 4) decided exactly, and their seed.
    retries, max_units :
        As for :func:`~exact.learn.ffn.learn_ffn`.
    mode : {None, "certified", "float"}
        ``"float"`` (the default for an approximate oracle) reads float answers: the FFN by
        :func:`~exact.learn.ffn_float.learn_ffn_float`'s plan, then Theorem 4.1's float mode on the odd
        part over the float oracle (each odd answer declared within both calls' errors), with an
        estimate (:func:`_learn_float`).

    Examples
    --------
    >>> from exact import ExactOracle
    >>> T = Transformer([[1, "1/2"], [0, -1]], [[1, 1], [2, -1], [0, 1]], [1, "-1/2", 2])
    >>> r = learn_transformer(ExactOracle(T), m=3, seed=0)
    >>> r.model.W == T.W, r.details["function_form"] == T.ffn.function_form(), r.exact
    (True, True, True)
    >>> r.queries == r.details["ffn_queries"] + 2 * (2 * 2 + 2)
    True
    """
    d = oracle_dimension(oracle)
    check_options(m=m, seed=seed, retries=retries, max_units=max_units, interior=False)
    if mode not in (None, "certified", "float"):
        raise InvalidArgument(f"mode: expected 'certified' or 'float', got {mode!r}")
    if seed is None:
        seed = secrets.randbits(63)
    if mode == "float" or (mode is None and not oracle.exact):
        return _learn_float(oracle, d, m=m, seed=seed, check_seed=check_seed, retries=min(retries, 2),
                            max_units=max_units)
    if not oracle.exact:
        raise InvalidArgument("oracle: the exact Transformer learner reads exact answers; this oracle is approximate "
                              "(learn it with mode='float')")
    run = Run(SPEC, oracle, mode="certified", checks=checks, check_seed=check_seed)
    with run:
        try:
            ex = _extract(run.ask, lambda: run.transcript, run.replay, d, m=m, seed=seed, retries=retries,
                          max_units=max_units)
        except OracleInconsistent as e:
            raise OracleInconsistent(f"{e}; a block with biases or a residual (as torch builds it) is learned by "
                                     "learn_transformer_biased (learn transformer --biases [--residual])") from None
        form, ffn = ex.form, ex.model
        ffn_queries = oracle.count - run.start
        v_ffn = tuple(2 * x for x in form.linear)  # Aᵀw = 2L
        if not any(v_ffn):
            raise NotIdentifiable(
                "Aᵀw = 0 (the FFN's linear part vanishes): the odd part T(X) − T(−X) = (Aᵀw)ᵀh(X) is zero, "
                "so it shows nothing of W; this reduction needs Aᵀw ≠ 0"
            )
        run.require(2 * (d * d + d), f"the odd part: d² + d = {d * d + d} queries, two calls each")
        head = learn_single_head(OddOracle(oracle, ask=run.ask), mode="certified", checks=0)
        if tuple(head.model.v) != v_ffn:
            raise OracleInconsistent(
                "the odd part's value vector differs from Aᵀw = 2L measured on the FFN: the black box is not a "
                "one-layer Transformer T(X) = wᵀReLU(A·h(X))"
            )
        model = Transformer(head.model.W, ffn.A, ffn.w)
        details = ffn_details(ex, seed, TransformerDetails, ffn_queries=ffn_queries, odd_queries=head.queries,
                              v_eff=v_ffn)
        conditions = ffn_conditions(seed, retries, m, False)
        return run.finish(model, conditions=conditions, details=details,
                          standing=standing_assumptions(m, ex.sighting.seen))


def _learn_float(oracle, d: int, *, m, seed: int, check_seed, retries: int, max_units: int) -> LearnResult:
    """Float answers: the FFN with estimates, then the odd part's single head in float mode; ``v_eff``
    must agree with ``2L`` within both estimates."""
    from ..learn.ffn_float import _asker, check_block, float_extract, float_standing

    if check_seed is None:
        check_seed = secrets.randbits(63)
    run = Run(SPEC, oracle, mode="float", certify=False, checks=0)
    with run:
        form, ffn_details = float_extract(_asker(run), d, m=m, seed=seed, check_seed=check_seed, checks=8,
                                          retries=retries, max_units=max_units)
        ffn_queries = oracle.count - run.start
        L, L_err = form.linear[:d], form.linear_err[:d]
        if not (abs(L) > L_err).any():
            raise NotIdentifiable("Aᵀw = 2L is zero within its estimate: the odd part T(X) − T(−X) = (Aᵀw)ᵀh(X) "
                                  "shows nothing of W at this precision")
        hint = ("; a block with biases or a residual has no single-head odd part: it is learned by "
                "learn_transformer_biased (from float answers without a residual)")
        try:
            head = learn_single_head(OddOracle(oracle, ask=run.ask), mode="float", checks=0)
        except OracleInconsistent as e:
            raise OracleInconsistent(f"the odd part is not a single head: {e}"[:400] + hint) from None
        v = [float(x) for x in head.model.v]
        est = float(head.error_estimate or 0.0)
        gap = max(abs(x - 2 * y) for x, y in zip(v, L))
        allowed = 4 * (est + 2 * float(L_err.max()))
        if gap > allowed:
            raise OracleInconsistent(
                f"the odd part's value vector differs from Aᵀw = 2L measured on the FFN by {gap:.3g}, beyond the "
                f"estimates' {allowed:.2g}: the black box is not a one-layer Transformer T(X) = wᵀReLU(A·h(X))" + hint)
        net = form.network()
        model = Transformer(head.model.W, net.A, net.w, a=net.a, b=net.b)
        worst = check_block(run, model, form, est, np.random.default_rng([check_seed, 7]))
        details = TransformerFloatDetails(form=form, ffn=ffn_details, ffn_queries=ffn_queries,
                                          odd_queries=head.queries, W_estimate=est, v_gap=gap, worst_check=worst)
        standing = float_standing(m, ffn_details.kinks) + ("among one-layer Transformers with a bias-free ReLU FFN",)
        return run.finish(model, conditions={"seed": seed, **({"m": m} if m is not None else {})}, details=details,
                          error_estimate=max(est, form.error_estimate), standing=standing)


@dataclass(frozen=True)
class TransformerFloatDetails(Details):
    """Float answers: the FFN's float form and its plan, the queries of each part, the odd part's
    estimate for ``W`` and how far its ``v`` lies from ``2L``."""

    form: Any  # a FloatForm (exact.learn.ffn_float, imported when the float path runs)
    ffn: Any  # its FloatFFNDetails
    ffn_queries: int
    odd_queries: int
    W_estimate: float
    v_gap: float
    worst_check: float = 0.0

    def model_rows(self, result) -> list:
        from .ffn_float import float_form_rows

        return ["W ="] + ["  [" + ", ".join(f"{float(x):.17g}" for x in row) + "]" for row in result.model.W] + \
            float_form_rows(self.form)

    def compare(self, result, truth) -> Comparison:
        from .ffn_float import compare_forms

        err = max(abs(float(a) - float(b)) for ra, rb in zip(result.model.W, truth.W) for a, b in zip(ra, rb))
        return compare_forms(self.form, truth.ffn.function_form(), (("W", err, self.W_estimate),))

    def rows(self, result) -> list:
        return [("function", f"the FFN from float answers: {self.ffn.kinks} hyperplanes, largest parameter estimate "
                             f"{self.form.error_estimate:.3g}"),
                ("attention", f"W from {self.odd_queries} odd queries (two calls each), estimate {self.W_estimate:.3g}; "
                              f"|v − 2L| = {self.v_gap:.2g}")]


@dataclass(frozen=True)
class TransformerDetails(FFNDetails):
    """The FFN learner's details, plus the queries of each part and ``v_eff = Aᵀw`` (measured twice)."""

    ffn_queries: int
    odd_queries: int
    v_eff: tuple

    def model_rows(self, result) -> list:
        return ["W ="] + ["  [" + ", ".join(format_rational(x) for x in row) + "]" for row in result.model.W]

    def _ffn(self, model):
        return model.ffn


def _count_text(result) -> str:
    d, q = result.model.d, result.details["ffn_queries"]
    if isinstance(result.details, TransformerFloatDetails):
        checks = result.queries - q - 2 * result.details["odd_queries"]
        return (f"{q} for the FFN + {result.details['odd_queries']} odd queries (two calls each) + {checks} checks of "
                f"the block = {result.queries} oracle calls (float answers)")
    return (f"{q} for the FFN + {result.details['odd_queries']} odd queries (two calls each) = {result.queries} oracle "
            f"calls (Q_FFN + 2(d² + d) = {q} + {2 * (d * d + d)})")


def _check_certificate(model, transcript, conditions) -> registry.Rederived:
    """The transcript must be the FFN learner's queries on the model's FFN (same seed, the same
    function found), then Theorem 4.1's probe set for ``v_eff = Aᵀw``, each probe as the pair ``X, −X``."""
    rests = standing_assumptions(conditions.get("m"), False)
    v = model.v_eff
    if not any(v):
        return registry.Rederived("Aᵀw = 0, so the odd part shows nothing of W: the transcript cannot identify it",
                                  rests)
    xs = [q.X for q in transcript]
    part = check_ffn_part(model.ffn, xs, conditions)
    if isinstance(part, str):
        return registry.Rederived(part, rests)
    rests = standing_assumptions(conditions.get("m"), part.seen)
    n = part.queries
    probes = [Sequence.basis(model.d, i) for i in range(model.d)] + ProbePlan.choose(v).sequences()
    if xs[n:] != [x for s in probes for x in (s, -s)]:
        return registry.Rederived("the transcript is not the FFN learner's queries followed by Theorem 4.1's probe "
                                  "pairs for this model, so it need not identify it", rests)
    return registry.Rederived(None, rests)


SPEC = (
    registry.LearnerSpec(
        name="transformer",
        summary="one-layer Transformer [BSHK26 §5]: the FFN exactly, then Theorem 4.1 on the odd part T(X) − T(−X)",
        model_kind="transformer",
        modes=("certified", "float"),
        learn=learn_transformer,
        query_count=lambda d, m=None, **conditions: None,
        count_formula="Q_FFN(d, m) + 2(d² + d)",
        count_text=_count_text,
        conditions=FFN_CONDITIONS,
        check_certificate=_check_certificate,
        standing=lambda conditions: standing_assumptions(conditions.get("m"), False),
        scope=lambda conditions: "among one-layer Transformers with a bias-free ReLU FFN",
        unchecked=lambda conditions: ("among one-layer Transformers with a bias-free ReLU FFN",),
        model_class=lambda conditions: "a one-layer Transformer whose FFN's units all show on the search path",
        options=(
            registry.Option("m", "int", "an upper bound on the hidden units, if known", minimum=0),
            registry.Option("seed", "int", "seed of the FFN search path (default: fresh, reported)", minimum=0),
        ),
        command="transformer",
        method="exact",
        rederive_in_run=False,
    )
)
