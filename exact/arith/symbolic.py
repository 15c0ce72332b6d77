"""Symbolic arithmetic: sympy, exact, with exponentials as independent positive symbols."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING

from ..errors import InvalidArgument, OracleInconsistent
from ..oracles import ExactAnswer
from ..protocols import Oracle
from .base import Answer, Arithmetic, Combo, Measurement, Names

if TYPE_CHECKING:
    import sympy

__all__ = ["SymbolicArithmetic", "symbolic_logit"]


class SymbolicArithmetic(Arithmetic):
    """Exact answers through their sympy form; every result is a Fraction."""

    name = "symbolic"
    exact = True

    def __init__(self, oracle: Oracle) -> None:
        super().__init__(oracle)
        if not oracle.exact:
            raise InvalidArgument(
                "mode='symbolic' needs an exact oracle; use mode='certified' with a grid, or mode='float'"
            )

    def values(self, answers: Sequence[Answer], names: Sequence[str], offset: Fraction | float | None = None) -> list[Fraction]:
        import sympy

        out = []
        shift = Fraction(offset) if offset else Fraction(0)
        for a, name in zip(answers, names):
            expr = _exact_answer(a, name).sympy()
            if not isinstance(expr, sympy.Rational):
                raise OracleInconsistent(f"{name}: expected a rational answer, got {expr}")
            out.append(Fraction(int(expr.p), int(expr.q)) - shift)
        return out

    def combine(
        self, answers: Sequence[Answer], measurements: Sequence[Measurement], combos: Sequence[Combo],
        names: Names | None, *, denominators: Sequence[int | None] | None = None,
    ) -> list[Fraction]:
        ell: dict[int, Fraction] = {}
        for combo in combos:
            for _, m in combo:
                if m not in ell:
                    meas, what = measurements[m], f"measurement #{m}"
                    ell[m] = symbolic_logit(
                        _exact_answer(answers[m], what).sympy(), _rational(meas.base, what), _rational(meas.slope, what),
                        what=what,
                    )
        return [sum((Fraction(c) * ell[m] / measurements[m].scale for c, m in combo), Fraction(0)) for combo in combos]


def _exact_answer(answer: Answer, what: str) -> ExactAnswer:
    """The answer, which symbolic mode reads through its sympy form, so it must be exact."""
    if not isinstance(answer, ExactAnswer):
        raise OracleInconsistent(f"{what}: an exact oracle answered a {type(answer).__name__}, not an exact answer")
    return answer


def _rational(x: Fraction | float, what: str) -> Fraction:
    """A measurement's base or slope, which symbolic mode needs exact."""
    if isinstance(x, float):
        raise InvalidArgument(f"{what}: symbolic mode needs exact bases and slopes, got the float {x!r}")
    return x


def symbolic_logit(expr: sympy.Expr, base: Fraction, slope: Fraction, *, what: str = "logit") -> Fraction:
    """Exact ``σ⁻¹((expr − base)/slope)`` for an answer made of ``c·exp(q)`` terms.

    Each distinct ``exp(q)`` is replaced by an independent positive symbol
    (:class:`proofs.expsymbols.ExpSymbols`) and the odds ``α/(1−α)`` are computed in
    the rational function field; they must reduce to a monomial ``Π E_k^{n_k}`` with
    coefficient 1, whose logarithm is ``Σ n_k q_k``.  (Running ``cancel`` on ``exp(Rational)`` terms directly can
    overflow gmp or hang; the substitution avoids it.)

    Raises
    ------
    OracleInconsistent
        If the odds are not such a monomial (the logit is not rational).

    Examples
    --------
    >>> import sympy
    >>> e = (2 * sympy.exp(sympy.Rational(3, 2)) + 1) / (sympy.exp(sympy.Rational(3, 2)) + 1)
    >>> symbolic_logit(e, Fraction(1), Fraction(1))
    Fraction(3, 2)
    """
    import sympy

    from proofs.expsymbols import ExpSymbols  # the one implementation of the substitution

    table = ExpSymbols("E", separator="")
    e = table.substitute(expr)
    for q in table.exponents:
        if not isinstance(q, sympy.Rational):
            raise OracleInconsistent(f"{what}: the answer contains exp({q}), whose exponent is not rational")
    syms = table.symbols
    alpha = (e - sympy.Rational(base.numerator, base.denominator)) / sympy.Rational(slope.numerator, slope.denominator)
    odds = sympy.cancel(sympy.together(alpha / (1 - alpha)))
    num, den = sympy.fraction(odds)
    coeff = Fraction(1)
    for part, sign in ((num, 1), (den, -1)):
        poly = sympy.Poly(part, *syms) if syms else sympy.Poly(part, sympy.Symbol("_c"))
        if len(poly.terms()) != 1:
            raise OracleInconsistent(f"{what}: the odds α/(1−α) = {odds} are not a single exponential")
        _, c = poly.terms()[0]
        if not isinstance(c, sympy.Rational):
            raise OracleInconsistent(f"{what}: the odds α/(1−α) = {odds} are not a rational multiple of an exponential")
        c = Fraction(int(c.p), int(c.q))
        coeff = coeff * c if sign > 0 else coeff / c
    if coeff <= 0:
        raise OracleInconsistent(f"{what}: the answer implies a softmax weight outside (0, 1) (odds {odds})")
    if coeff != 1:
        raise OracleInconsistent(
            f"{what}: the odds α/(1−α) = {odds} have the coefficient {coeff}, so the logit log({coeff}) + ... "
            "is not rational"
        )
    logit = table.exponent_of(odds)  # the odds are the monomial e^{logit}
    return Fraction(int(logit.p), int(logit.q))
