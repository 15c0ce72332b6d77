"""Symbolic proof of the odd part of a one-layer Transformer (SPEC 3.5, 3.9).

For T(X) = w^T ReLU(A h(X)), the identity ReLU(z) - ReLU(-z) = z and the
oddness of the attention average h give T(X) - T(-X) = (A^T w)^T h(X): the odd
part of T is a single attention head with value vector A^T w.  The ReLU
identity is decided by an exhaustive case split on signs; the rest as
polynomial or rational-function identities, with each e^{s_i} a positive symbol
from :class:`proofs.expsymbols.ExpSymbols`.

The same statement is proved in Coq, for every dimension and sequence length, in ``proofs/coq/transformer.v``:
``transformer_odd_part``, ``transformer_one_token`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import sympy

from proofs._symbolic import (
    _attention_average,
    _Check,
    _expands_to_zero,
    _is_identity,
    _positive_ints,
    _verdict,
    _weights,
)
from proofs.core import Proof
from proofs.expsymbols import ExpSymbols
from proofs.oddness import prove_attention_oddness

__all__ = ["prove_transformer_odd_part"]

_TRANSFORMER_STATEMENT = (
    "ReLU(z) - ReLU(-z) = z for every real z; hence, for T(X) = w^T ReLU(A h(X)) and using "
    "h(-X) = -h(X), T(X) - T(-X) = w^T (ReLU(A h(X)) - ReLU(-A h(X))) = w^T A h(X) = (A^T w)^T h(X): "
    "the odd part of T is a single attention head with the same W and value vector A^T w."
)
_TRANSFORMER_METHOD = (
    "ReLU identity by an exhaustive case split on the sign of z (sympy.refine of the Piecewise form, "
    "and Max with sign-restricted symbols, over all 2^m sign patterns of the hidden layer); linear "
    "algebra by polynomial expansion with symbolic A, w, h; end-to-end with the explicit attention "
    "average h(X), e^{s_i} replaced by positive symbols, as rational-function identities (sympy.cancel)"
)


def _relu(z: sympy.Expr) -> sympy.Expr:
    """Return ReLU(z) = max(z, 0)."""
    return sympy.Max(z, 0)


def _relu_piecewise(z: sympy.Expr) -> sympy.Expr:
    """Return ReLU(z) as the piecewise function z if z >= 0, else 0."""
    return sympy.Piecewise((z, z >= 0), (0, True))


def _relu_scalar_checks(sign: int = -1) -> list[_Check]:
    """Check ReLU(z) + sign * ReLU(-z) = z by cases z > 0, z = 0, z < 0.

    Parameters
    ----------
    sign : {-1, 1}, default -1
        ``-1`` is the true identity; ``+1`` gives the false identity
        ReLU(z) + ReLU(-z) = z, used as a negative control.

    Returns
    -------
    list of _Check
        The Piecewise case split (three cases) and the Max case split with
        sign-restricted symbols (two cases).
    """
    z = sympy.Symbol("z", real=True)
    expr = _relu_piecewise(z) + sign * _relu_piecewise(-z) - z
    cases = {
        "z > 0": sympy.refine(expr, sympy.Q.positive(z)),
        "z = 0": expr.subs(z, 0),
        "z < 0": sympy.refine(expr, sympy.Q.negative(z)),
    }
    piecewise_ok = all(value == 0 for value in cases.values())

    p = sympy.Symbol("p", nonnegative=True)
    n = sympy.Symbol("n", positive=True)
    max_cases = {
        "z = p >= 0": _relu(p) + sign * _relu(-p) - p,
        "z = -n < 0": _relu(-n) + sign * _relu(n) + n,
    }
    max_ok = all(sympy.expand(value) == 0 for value in max_cases.values())

    pm = "-" if sign == -1 else "+"
    return [
        _Check(
            "relu identity (piecewise cases)",
            f"ReLU(z) {pm} ReLU(-z) = z with ReLU(z) = Piecewise((z, z >= 0), (0, True)): "
            + ", ".join(f"case {case}: refine(...) -> {value}" for case, value in cases.items())
            + f"; all cases {_verdict(piecewise_ok)}",
            piecewise_ok,
        ),
        _Check(
            "relu identity (Max cases)",
            f"ReLU(z) {pm} ReLU(-z) = z with ReLU(z) = Max(z, 0): "
            + ", ".join(f"case {case}: {sympy.expand(value)}" for case, value in max_cases.items())
            + f"; all cases {_verdict(max_ok)}",
            max_ok,
        ),
    ]


def _hidden_layer_check(m: int, sign: int = -1) -> _Check:
    """Check sum_j w_j (ReLU(z_j) + sign * ReLU(-z_j)) = w^T z over all 2^m sign patterns of z.

    Parameters
    ----------
    m : int
        Number of hidden units.
    sign : {-1, 1}, default -1
        ``-1`` for the true identity, ``+1`` for the negative control.

    Returns
    -------
    _Check
        Whether every sign pattern reduced exactly to 0.
    """
    w = sympy.symbols(f"w_0:{m}")
    nonneg = sympy.symbols(f"p_0:{m}", nonnegative=True)
    neg = sympy.symbols(f"n_0:{m}", positive=True)
    failures = 0
    for pattern in range(2**m):
        z = [neg[j] * -1 if (pattern >> j) & 1 else nonneg[j] for j in range(m)]
        expr = sympy.Add(*(w[j] * (_relu(z[j]) + sign * _relu(-z[j])) - w[j] * z[j] for j in range(m)))
        failures += sympy.expand(expr) != 0
    ok = failures == 0
    pm = "-" if sign == -1 else "+"
    return _Check(
        f"hidden layer m={m}",
        f"w^T (ReLU(z) {pm} ReLU(-z)) = w^T z for z in R^{m}: in each of the {2**m} sign patterns "
        f"(z_j = p_j >= 0 or z_j = -n_j < 0) the difference {_verdict(ok)}",
        ok,
    )


def _transformer_checks(d: int, m: int, lengths: Sequence[int], sign: int = -1) -> list[_Check]:
    """Check T(X) + sign * T(-X) = (A^T w)^T h(X) for symbolic A (m x d), w, W and X.

    Parameters
    ----------
    d, m : int
        Token dimension and hidden width.
    lengths : sequence of int
        Sequence lengths of the end-to-end checks with the explicit h(X).
    sign : {-1, 1}, default -1
        ``-1`` for the true identity, ``+1`` for the negative control.

    Returns
    -------
    list of _Check
        Linearity with a symbolic vector h, then, per length N, the oddness
        of the pre-activations and the final identity with the explicit h(X).
    """
    a = sympy.Matrix(m, d, sympy.symbols(f"A_0:{m}_0:{d}"))
    w = sympy.Matrix(sympy.symbols(f"w_0:{m}"))
    h = sympy.Matrix(sympy.symbols(f"h_0:{d}", real=True))
    scope = f"for symbolic d={d}, m={m}"
    linear = _expands_to_zero((w.T * (a * h))[0, 0] - ((a.T * w).T * h)[0, 0])
    flip = all(_expands_to_zero(c) for c in (a * (-h) + a * h))
    checks = [
        _Check(
            f"linear part {scope}",
            "A(-h) = -(A h), so ReLU(A h(-X)) = ReLU(-A h(X)), and w^T A h = (A^T w)^T h: "
            f"expand(A(-h) + A h) {_verdict(flip)}, expand(w^T (A h) - (A^T w)^T h) {_verdict(linear)} "
            f"{scope}",
            linear and flip,
        )
    ]
    weight_matrix = sympy.Matrix(d, d, sympy.symbols(f"W_0:{d}_0:{d}"))
    for n in lengths:
        x = sympy.Matrix(n, d, sympy.symbols(f"x_0:{n}_0:{d}"))
        table = ExpSymbols("E")
        h_pos = sympy.Matrix(_attention_average(_weights(x, weight_matrix, table), x))
        h_neg = sympy.Matrix(_attention_average(_weights(-x, weight_matrix, table), -x))
        z_pos, z_neg = a * h_pos, a * h_neg
        z_odd = all(_is_identity(zn, -zp) for zp, zn in zip(z_pos, z_neg))
        # By the hidden-layer identity, T(X) + sign*T(-X) = w^T z(X) once z(-X) = -z(X); with sign = +1
        # that identity is false, so the chain is only claimed when the hidden-layer check holds.
        final = _is_identity((w.T * z_pos)[0, 0], ((a.T * w).T * h_pos)[0, 0])
        checks.append(
            _Check(
                f"explicit h(X) {scope}, N={n}",
                f"with the explicit h(X) for N={n} (e^{{s_i}} -> E_i): z(X) = A h(X) satisfies "
                f"cancel(z(-X) + z(X)) {_verdict(z_odd)}, so T(X) {'-' if sign == -1 else '+'} T(-X) = "
                f"w^T z(X) by the hidden-layer identity, and cancel(w^T A h(X) - (A^T w)^T h(X)) "
                f"{_verdict(final)} {scope}",
                z_odd and final,
            )
        )
    return checks


def _odd_part_proof(
    dims: tuple[int, ...], hidden: tuple[int, ...], lengths: tuple[int, ...], sign: int
) -> Proof:
    """Assemble the Transformer odd-part proof for ``T(X) + sign * T(-X)``."""
    oddness = prove_attention_oddness(dims=dims, lengths=lengths)
    checks = [
        _Check(
            "attention oddness",
            f"h(-X) = -h(X) (proved by prove_attention_oddness for d in {list(dims)}, N in {list(lengths)}: "
            f"{'verified' if oddness.verified else 'NOT verified'})",
            oddness.verified,
        ),
        *_relu_scalar_checks(sign),
    ]
    checks += [_hidden_layer_check(m, sign) for m in hidden]
    for d in dims:
        for m in hidden:
            checks += _transformer_checks(d, m, lengths, sign)
    conclusion = all(check.ok for check in checks)
    checks.append(
        _Check(
            "conclusion",
            "T(X) - T(-X) = (A^T w)^T h(X): the odd part of T is the single head (W, v_eff = A^T w), "
            "so the exact single-head learner applies to X -> T(X) - T(-X)"
            if conclusion
            else "the chain of checks broke, so no conclusion is drawn",
            conclusion,
        )
    )
    return Proof.from_checks(
        "transformer odd part",
        _TRANSFORMER_STATEMENT,
        _TRANSFORMER_METHOD,
        checks,
        dims=list(dims),
        hidden=list(hidden),
        lengths=list(lengths),
        combination="T(X) - T(-X)" if sign == -1 else "T(X) + T(-X)",
    )


def prove_transformer_odd_part(
    *, dims: Iterable[int] = (1, 2), hidden: Iterable[int] = (1, 2, 3), lengths: Iterable[int] = (1, 2)
) -> Proof:
    """Prove T(X) - T(-X) = (A^T w)^T h(X) for the one-layer Transformer.

    For T(X) = w^T ReLU(A h(X)) with the attention average
    h(X) = sum_i alpha_i x_i (SPEC 1.4), the chain is

    1. h(-X) = -h(X) (:func:`prove_attention_oddness`);
    2. ReLU(z) - ReLU(-z) = z for every real z, by cases on the sign of z;
    3. hence T(X) - T(-X) = w^T (ReLU(A h) - ReLU(-A h)) = w^T A h = (A^T w)^T h(X).

    So the odd part of T is a single attention head with the same W and the
    value vector A^T w (SPEC 3.5).  Step 2 is checked for a scalar (Piecewise
    with ``sympy.refine``, and Max with sign-restricted symbols) and for a
    whole hidden layer over all 2^m sign patterns; step 3 with symbolic A, w
    and h, and end-to-end with the explicit rational h(X).

    Parameters
    ----------
    dims : iterable of int, default (1, 2)
        Token dimensions d.
    hidden : iterable of int, default (1, 2, 3)
        Hidden widths m.
    lengths : iterable of int, default (1, 2)
        Sequence lengths N of the oddness and end-to-end checks.

    Returns
    -------
    Proof
        ``verified`` is ``True`` only if every check reduced exactly as
        required; ``details`` records the sizes and each check's outcome.

    Raises
    ------
    ValueError
        If a size list is empty or holds a non-positive integer.

    Examples
    --------
    >>> proof = prove_transformer_odd_part(dims=(2,), hidden=(2,), lengths=(2,))
    >>> proof.verified
    True
    >>> proof.details["combination"]
    'T(X) - T(-X)'
    """
    return _odd_part_proof(
        _positive_ints(dims, "dims"),
        _positive_ints(hidden, "hidden"),
        _positive_ints(lengths, "lengths"),
        sign=-1,
    )
