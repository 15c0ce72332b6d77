"""Shared sympy helpers of the symbolic proofs: checks, exact identities, softmax pieces.

Every check reduces a claim to an exact statement: a polynomial that expands to
0, or two rational functions whose difference cancels to 0.  Exponentials never
appear here: they are replaced by positive symbols from
:class:`proofs.expsymbols.ExpSymbols` first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import sympy

from proofs.expsymbols import ExpSymbols


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


def _positive_ints(values: Iterable[int], what: str) -> tuple[int, ...]:
    """Return ``values`` as a non-empty tuple, rejecting anything but positive integers.

    Parameters
    ----------
    values : iterable of int
        Candidate sizes.
    what : str
        Name used in the error message (e.g. ``"dims"``).

    Returns
    -------
    tuple of int
        The validated sizes, in the given order.

    Raises
    ------
    ValueError
        If ``values`` is empty or holds a non-integer, a bool or an integer < 1.
    """
    values = tuple(values)
    if not values:
        raise ValueError(f"{what} must not be empty")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{what} must be positive integers, got {value!r}")
    return values


def _scores(x: sympy.Matrix, w: sympy.Matrix) -> list[sympy.Expr]:
    """Return the attention scores s_i = x_i^T W x_N of the rows of ``x``."""
    query = x[-1, :].T
    return [(x[i, :] * w * query)[0, 0] for i in range(x.rows)]


def _weights(x: sympy.Matrix, w: sympy.Matrix, table: ExpSymbols) -> list[sympy.Expr]:
    """Return the unnormalised softmax weights e^{s_i} as symbols from ``table``."""
    return [table(score) for score in _scores(x, w)]


def _attention_average(weights: Sequence[sympy.Expr], x: sympy.Matrix) -> list[sympy.Expr]:
    """Return h(X) = sum_i alpha_i x_i, coordinate by coordinate."""
    return [_softmax_readout(weights, list(x[:, c])) for c in range(x.cols)]
