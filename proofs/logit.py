"""Symbolic proof of the logit primitive of a single softmax-attention head.

All algebra is done on plain symbols: every exponential ``e^{s}`` is replaced
by an independent positive symbol and relations between exponents are
substituted explicitly (``e^{s_1} = e^{s_2} e^{L}``), so the checks are exact
identities in a rational function field and never touch ``exp``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import sympy

from proofs.core import Proof

__all__ = ["prove_logit_primitive"]

_STATEMENT = (
    "For one softmax-attention head (W, v), a query b and a = b + u, the "
    "sequence X = [a; b] gives f(X) = v^T b + sigma(u^T W b) v^T u; hence, "
    "whenever v^T u != 0, u^T W b = sigma^{-1}((f(X) - v^T b) / (v^T u))."
)
_METHOD = (
    "bilinearity by polynomial expansion (sympy.expand); softmax identities as "
    "exact rational-function identities (sympy.cancel) with e^{s_2}, e^{L} "
    "replaced by positive symbols and e^{s_1} = e^{s_2} e^{L} substituted"
)


class _Check(NamedTuple):
    """One reduction-to-zero check and its readable description."""

    label: str
    sentence: str
    ok: bool


def _is_plain_rational(expr: sympy.Expr) -> bool:
    """Return whether ``expr`` is built from symbols and rationals by +, * and integer powers.

    Parameters
    ----------
    expr : sympy.Expr
        Expression to inspect.

    Returns
    -------
    bool
        ``False`` if any other node (``exp``, ``log``, ``E``, ...) occurs.
    """
    for node in sympy.preorder_traversal(expr):
        if isinstance(node, (sympy.Symbol, sympy.Rational, sympy.Add, sympy.Mul)):
            continue
        if isinstance(node, sympy.Pow) and node.exp.is_Integer:
            continue
        return False
    return True


def _is_identity(lhs: sympy.Expr, rhs: sympy.Expr) -> bool:
    """Decide whether ``lhs == rhs`` as rational functions of their symbols.

    Parameters
    ----------
    lhs, rhs : sympy.Expr
        Rational expressions in plain symbols (no exponentials).

    Returns
    -------
    bool
        ``True`` exactly when ``cancel(lhs - rhs)`` is the zero expression.

    Raises
    ------
    ValueError
        If the difference is not a plain rational expression.

    Examples
    --------
    >>> x = sympy.Symbol("x", positive=True)
    >>> _is_identity(x / (1 + x), 1 - 1 / (1 + x))
    True
    >>> _is_identity(x / (1 + x), 1 / (1 + x))
    False
    """
    difference = lhs - rhs
    if not _is_plain_rational(difference):
        raise ValueError("replace exponentials by positive symbols before checking")
    return sympy.cancel(difference) == 0


def _expands_to_zero(expr: sympy.Expr) -> bool:
    """Return whether the polynomial ``expr`` expands to exactly 0.

    Parameters
    ----------
    expr : sympy.Expr
        Polynomial expression (commutative or non-commutative symbols).

    Returns
    -------
    bool
        ``True`` exactly when ``sympy.expand(expr) == 0``.
    """
    return sympy.expand(expr) == 0


def _sigmoid(exp_t: sympy.Expr) -> sympy.Expr:
    """Return sigma(t) = 1 / (1 + e^{-t}) written in the symbol ``exp_t`` = e^{t}.

    Parameters
    ----------
    exp_t : sympy.Expr
        Positive expression standing for e^{t}.

    Returns
    -------
    sympy.Expr
        ``exp_t / (1 + exp_t)``.
    """
    return exp_t / (1 + exp_t)


def _softmax_readout(weights: Sequence[sympy.Expr], values: Sequence[sympy.Expr]) -> sympy.Expr:
    """Return sum_i alpha_i values_i with alpha = weights / sum(weights).

    Parameters
    ----------
    weights : sequence of sympy.Expr
        Unnormalised softmax weights e^{s_i}.
    values : sequence of sympy.Expr
        Per-token values v^T x_i.

    Returns
    -------
    sympy.Expr
        The attention output f(X).
    """
    total = sympy.Add(*weights)
    return sympy.Add(*(w * value for w, value in zip(weights, values))) / total


def _verdict(ok: bool) -> str:
    """Render the outcome of a reduction to zero."""
    return "= 0" if ok else "!= 0 (check FAILED)"


def _softmax_checks(
    exp_s2: sympy.Expr,
    exp_l: sympy.Expr,
    value_a: sympy.Expr,
    value_b: sympy.Expr,
    value_u: sympy.Expr,
    scope: str,
) -> list[_Check]:
    """Check the forward identity and its inverse for X = [a; b].

    Parameters
    ----------
    exp_s2, exp_l : sympy.Expr
        Positive symbols for e^{s_2} and e^{L}, L = u^T W b.
    value_a, value_b, value_u : sympy.Expr
        v^T a, v^T b (= B) and v^T u (= C).
    scope : str
        Suffix naming where the check was made (e.g. ``"for symbolic d=3"``).

    Returns
    -------
    list of _Check
        Forward identity, inverse alpha = sigma(L) and log-odds alpha/(1-alpha) = e^{L}.
    """
    exp_s1 = exp_s2 * exp_l  # e^{s_1} = e^{s_2} e^{L}, since s_1 = s_2 + L
    f = _softmax_readout((exp_s1, exp_s2), (value_a, value_b))
    sigma_l = _sigmoid(exp_l)
    alpha = (f - value_b) / value_u
    forward = _is_identity(f, value_b + sigma_l * value_u)
    inverse = _is_identity(alpha, sigma_l)
    log_odds = _is_identity(alpha / (1 - alpha), exp_l)
    return [
        _Check(
            f"forward {scope}",
            "f(X) = v^T b + sigma(L) v^T u: with E_s1 = E_s2 E_L, "
            "cancel((E_s1 v^T a + E_s2 v^T b)/(E_s1 + E_s2) - (v^T b + E_L/(1 + E_L) v^T u)) "
            f"{_verdict(forward)} {scope}",
            forward,
        ),
        _Check(
            f"inverse {scope}",
            "alpha := (f(X) - v^T b)/(v^T u) = sigma(L) when v^T u != 0: "
            f"cancel(alpha - E_L/(1 + E_L)) {_verdict(inverse)} {scope}",
            inverse,
        ),
        _Check(
            f"log-odds {scope}",
            "log(alpha/(1 - alpha)) = L = u^T W b: "
            f"cancel(alpha/(1 - alpha) - E_L) {_verdict(log_odds)} {scope}",
            log_odds,
        ),
    ]


def _dimension_free_checks() -> list[_Check]:
    """Part A: the argument with vectors and matrices kept opaque.

    Bilinearity is checked in the free (non-commutative) algebra generated by
    b^T, u^T, W and b; the softmax identities use scalar symbols B = v^T b and
    C = v^T u.

    Returns
    -------
    list of _Check
        Bilinearity followed by the three softmax checks.
    """
    b_t, u_t, w, b = sympy.symbols("b^T u^T W b", commutative=False)
    bilinear = _expands_to_zero((b_t + u_t) * w * b - b_t * w * b - u_t * w * b)
    scope = "(dimension-free)"
    exp_s2, exp_l = sympy.symbols("E_s2 E_L", positive=True)
    value_b, value_u = sympy.symbols("B C")
    return [
        _Check(
            f"bilinearity {scope}",
            "s_1 = s_2 + L by bilinearity, so e^{s_1} = e^{s_2} e^{L}: "
            f"expand((b^T + u^T) W b - b^T W b - u^T W b) {_verdict(bilinear)} "
            f"{scope}, with E_s2 = e^{{s_2}} > 0, E_L = e^{{L}} > 0, B = v^T b, C = v^T u, v^T a = B + C",
            bilinear,
        ),
        *_softmax_checks(exp_s2, exp_l, value_b + value_u, value_b, value_u, scope),
    ]


def _symbolic_matrix_checks(d: int) -> list[_Check]:
    """Part B: the argument for a fully symbolic d x d head.

    Parameters
    ----------
    d : int
        Token dimension.

    Returns
    -------
    list of _Check
        Bilinearity by expansion followed by the three softmax checks.
    """
    w = sympy.Matrix(d, d, sympy.symbols(f"w_0:{d}_0:{d}"))
    v, u, b = (sympy.Matrix(sympy.symbols(f"{name}_0:{d}")) for name in "vub")
    a = b + u
    s_1, s_2, logit = ((x.T * w * b)[0, 0] for x in (a, b, u))
    bilinear = _expands_to_zero(s_1 - s_2 - logit)
    scope = f"for symbolic d={d}"
    exp_s2, exp_l = sympy.symbols("E_s2 E_L", positive=True)
    value_a, value_b, value_u = ((v.T * x)[0, 0] for x in (a, b, u))
    return [
        _Check(
            f"bilinearity {scope}",
            "s_1 = s_2 + L by bilinearity: "
            f"expand((b+u)^T W b - b^T W b - u^T W b) {_verdict(bilinear)} {scope}",
            bilinear,
        ),
        *_softmax_checks(exp_s2, exp_l, value_a, value_b, value_u, scope),
    ]


def _validate_dims(dims: Iterable[int]) -> tuple[int, ...]:
    """Return ``dims`` as a tuple, rejecting anything but positive integers."""
    dims = tuple(dims)
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"dimensions must be positive integers, got {d!r}")
    return dims


def prove_logit_primitive(*, dims: Iterable[int] = (1, 2, 3)) -> Proof:
    """Prove the logit primitive of a single softmax-attention head.

    For a head with parameters W (d x d) and v (d), the query token b and
    the token a = b + u, the two-token sequence X = [a; b] satisfies

        f(X) = v^T b + sigma(u^T W b) v^T u,   sigma(t) = 1 / (1 + e^{-t}),

    so that, whenever v^T u != 0, u^T W b = sigma^{-1}((f(X) - v^T b)/(v^T u)).
    This is the primitive behind Theorem 4.1 of [BSHK26]_ (Sec. 4): one
    query reveals one bilinear form u^T W b.

    Part A proves the identity without fixing a dimension: bilinearity in
    the free algebra, then the softmax identity, its inverse and the
    log-odds as exact rational-function identities in E_s2 = e^{s_2},
    E_L = e^{L}, B = v^T b and C = v^T u. Part B repeats every check with
    fully symbolic W, v, u, b for each dimension in ``dims``.

    Parameters
    ----------
    dims : iterable of int, default (1, 2, 3)
        Dimensions for which the fully symbolic check (Part B) is run.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if every check reduced exactly to 0;
        ``details`` records the dimensions and the outcome of each check.

    Raises
    ------
    ValueError
        If some dimension is not a positive integer.

    References
    ----------
    .. [BSHK26] S. Bhattamishra, K. Shah, M. Hahn, V. Kanade, "Provably
       Learning Attention with Queries", Sec. 4 (logit primitive behind
       Theorem 4.1).

    Examples
    --------
    >>> proof = prove_logit_primitive(dims=(2,))
    >>> proof.verified
    True
    >>> proof.details["dims"]
    [2]
    """
    dims = _validate_dims(dims)
    checks = _dimension_free_checks()
    for d in dims:
        checks += _symbolic_matrix_checks(d)
    return Proof.from_checks(
        "logit primitive",
        _STATEMENT,
        _METHOD,
        checks,
        dims=list(dims),
    )
