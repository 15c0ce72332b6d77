"""Symbolic proof that softmax attention is odd in its input sequence (SPEC 3.9).

Scores s_i = x_i^T W x_N are even in X, so the softmax weights are unchanged
by X -> -X while every token flips sign: h(-X) = -h(X) and f(-X) = -f(X).  No
check builds ``exp``: each e^{s_i} is a positive symbol from
:class:`proofs.expsymbols.ExpSymbols`, shared between X and -X only when the
expanded scores coincide, and every identity is decided exactly in a rational
function field (or as a polynomial identity by expansion).

The same statement is proved in Coq, for every dimension and sequence length, in ``proofs/coq/oddness.v``:
``attention_odd`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

from collections.abc import Iterable

import sympy

from proofs._symbolic import (
    _attention_average,
    _Check,
    _expands_to_zero,
    _is_identity,
    _positive_ints,
    _scores,
    _softmax_readout,
    _verdict,
    _weights,
)
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols

__all__ = ["prove_attention_oddness"]

_ODD_STATEMENT = (
    "Scores are even in X: s_i(-X) = s_i(X) with s_i = x_i^T W x_N; hence alpha(-X) = alpha(X), "
    "h(-X) = -h(X) for h(X) = sum_i alpha_i x_i, and f(-X) = -f(X) for the single head "
    "f(X) = sum_i alpha_i v^T x_i (and, summing heads, for multi-head attention)."
)
_ODD_METHOD = (
    "score evenness by polynomial expansion (sympy.expand), in the free algebra and with "
    "symbolic W and X; e^{s_i} replaced by positive symbols E_i, shared between X and -X only "
    "when the expanded scores coincide; h and f compared as rational-function identities (sympy.cancel)"
)


def _free_evenness_check() -> _Check:
    """Check (-x_i)^T W (-x_N) = x_i^T W x_N in the free (non-commutative) algebra."""
    x_i, w, x_n = sympy.symbols("x_i^T W x_N", commutative=False)
    ok = _expands_to_zero((-x_i) * w * (-x_n) - x_i * w * x_n)
    return _Check(
        "score evenness (dimension-free)",
        "scores are even by bilinearity: expand((-x_i)^T W (-x_N) - x_i^T W x_N) "
        f"{_verdict(ok)} (dimension-free)",
        ok,
    )


def _oddness_checks(d: int, n: int) -> list[_Check]:
    """Check evenness of scores and oddness of h and f for symbolic W, v and X (n x d).

    Parameters
    ----------
    d : int
        Token dimension.
    n : int
        Sequence length.

    Returns
    -------
    list of _Check
        Score evenness, equality of softmax weights, oddness of h, oddness of f.
    """
    w = sympy.Matrix(d, d, sympy.symbols(f"w_0:{d}_0:{d}"))
    v = sympy.Matrix(sympy.symbols(f"v_0:{d}"))
    x = sympy.Matrix(n, d, sympy.symbols(f"x_0:{n}_0:{d}"))
    scope = f"for symbolic d={d}, N={n}"

    scores_pos, scores_neg = _scores(x, w), _scores(-x, w)
    even = all(_expands_to_zero(sn - sp) for sp, sn in zip(scores_pos, scores_neg))

    table = ExpSymbols("E")
    weights_pos = _weights(x, w, table)
    weights_neg = _weights(-x, w, table)  # same symbols exactly when the scores expand equal
    total_pos, total_neg = sympy.Add(*weights_pos), sympy.Add(*weights_neg)
    same_alpha = all(
        _is_identity(wn / total_neg, wp / total_pos) for wp, wn in zip(weights_pos, weights_neg)
    )

    h_pos = _attention_average(weights_pos, x)
    h_neg = _attention_average(weights_neg, -x)
    h_odd = all(_is_identity(hn, -hp) for hp, hn in zip(h_pos, h_neg))

    f_pos = _softmax_readout(weights_pos, [(v.T * x[i, :].T)[0, 0] for i in range(n)])
    f_neg = _softmax_readout(weights_neg, [(v.T * (-x[i, :].T))[0, 0] for i in range(n)])
    f_odd = _is_identity(f_neg, -f_pos)

    return [
        _Check(
            f"score evenness {scope}",
            f"s_i(-X) = s_i(X) for i = 1..{n}: expand((-x_i)^T W (-x_N) - x_i^T W x_N) "
            f"{_verdict(even)} {scope}",
            even,
        ),
        _Check(
            f"softmax weights {scope}",
            "equal scores give equal softmax weights, alpha(-X) = alpha(X): with E_i = e^{s_i(X)} "
            f"(assigned per expanded score; {len(table)} distinct symbols for 2N = {2 * n} scores), "
            f"cancel(alpha_i(-X) - alpha_i(X)) {_verdict(same_alpha)} {scope}",
            same_alpha,
        ),
        _Check(
            f"h odd {scope}",
            "h(-X) = sum_i alpha_i (-x_i) = -h(X): cancel(h(-X) + h(X)) "
            f"{_verdict(h_odd)} in each of the {d} coordinates {scope}",
            h_odd,
        ),
        _Check(
            f"f odd {scope}",
            "f(-X) = sum_i alpha_i v^T(-x_i) = -f(X): cancel(f(-X) + f(X)) "
            f"{_verdict(f_odd)} {scope}",
            f_odd,
        ),
    ]


def prove_attention_oddness(
    *, dims: Iterable[int] = (1, 2, 3), lengths: Iterable[int] = (1, 2, 3)
) -> Proof:
    """Prove that softmax attention is odd in its input sequence.

    With scores s_i = x_i^T W x_N, the map X -> -X leaves every score
    unchanged (both factors flip sign), hence leaves the softmax weights
    alpha unchanged, while every token flips sign.  Therefore the attention
    average h(X) = sum_i alpha_i x_i and the single head
    f(X) = sum_i alpha_i v^T x_i are odd: h(-X) = -h(X), f(-X) = -f(X).  A
    multi-head f is a sum of single heads, hence odd as well.  This is the
    first step of a Transformer learner (SPEC 3.5, not implemented yet).

    The evenness of the scores is checked by expansion in the free algebra
    and for a symbolic W (d x d) and X (N x d).  The exponentials are then
    replaced by positive symbols E_i that are shared between X and -X only
    when the two expanded scores are the same polynomial, so the remaining
    checks cannot silently assume what was to be proved.

    Parameters
    ----------
    dims : iterable of int, default (1, 2, 3)
        Token dimensions d of the symbolic checks.
    lengths : iterable of int, default (1, 2, 3)
        Sequence lengths N of the symbolic checks.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if every check reduced exactly to 0;
        ``details`` records ``dims``, ``lengths`` and each check's outcome.

    Raises
    ------
    ValueError
        If ``dims`` or ``lengths`` is empty or holds a non-positive integer.

    Examples
    --------
    >>> proof = prove_attention_oddness(dims=(2,), lengths=(2,))
    >>> proof.verified
    True
    >>> proof.details["checks"]["h odd for symbolic d=2, N=2"]
    True
    """
    dims = _positive_ints(dims, "dims")
    lengths = _positive_ints(lengths, "lengths")
    checks = [_free_evenness_check()]
    for d in dims:
        for n in lengths:
            checks += _oddness_checks(d, n)
    return Proof.from_checks(
        "attention oddness",
        _ODD_STATEMENT,
        _ODD_METHOD,
        checks,
        dims=list(dims),
        lengths=list(lengths),
    )
