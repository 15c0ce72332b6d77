"""Exponentials as independent positive symbols: the one place this substitution lives.

Every exact answer of an attention model is a ratio of exp-polynomials
``sum_k c_k e^{q_k}`` (SPEC §2).  Run on such expressions directly, sympy merges
``exp(p) exp(q)`` for rational ``p, q`` into powers of ``exp(1/lcm)``, and then
``cancel``, ``powsimp`` or ``simplify`` overflow gmp (an uncatchable process
death) or hang.  Replacing each distinct ``e^{s}`` by an independent positive
symbol turns the algebra into a computation in a rational function field, which
is exact and fast; exponents are read back from the monomials at the end.

:class:`ExpSymbols` holds one such assignment.  Two exponents share a symbol
exactly when their expansions are equal, so ``e^{s}`` and ``e^{s'}`` are never
identified before ``s = s'`` has been established by expansion.  Proofs, the
multi-head equivalence check and the ``symbolic`` arithmetic of :mod:`exact`
all create their stand-in symbols here.
"""

from __future__ import annotations

import sympy

__all__ = ["ExpSymbols"]


class ExpSymbols:
    """An assignment of one positive symbol to each distinct exponential ``e^{s}``.

    The assignment grows as exponents are looked up, so this is a small mutable
    registry rather than a frozen record.  Exponents are sympy expressions and
    are keyed by their expanded form.

    Parameters
    ----------
    prefix : str, default "E"
        Automatic symbols are named ``prefix + separator + n`` with n = 0, 1, ...
        counting the entries of the table.
    separator : str, default "_"
        Text between ``prefix`` and the counter.
    table : dict, optional
        A dict to keep the assignment in, filled in place (key: the expanded
        exponent; value: its symbol, or the expression given to :meth:`assign`).
        Passing the same dict to several instances shares one assignment.

    Examples
    --------
    >>> x, y = sympy.symbols("x y")
    >>> E = ExpSymbols()
    >>> E(x * y), E((-x) * (-y)), E(x + 1)
    (E_0, E_0, E_1)
    >>> E(x * y).is_positive
    True
    >>> E.substitute(3 * sympy.exp(x * y) / (1 + sympy.exp(1 + x)))
    3*E_0/(E_1 + 1)
    >>> E.exponent_of(E(x * y) ** 2 / E(x + 1))
    2*x*y - x - 1
    >>> E(sympy.Symbol("L"), name="E_L")
    E_L
    >>> len(E)
    3
    """

    def __init__(self, prefix: str = "E", *, separator: str = "_", table: dict | None = None) -> None:
        self._prefix = prefix
        self._separator = separator
        self._table: dict = {} if table is None else table
        self._exponents: dict = {}  # symbol -> the exponent it stands for, as first given

    # -- the assignment --------------------------------------------------------------------

    def __call__(self, exponent: sympy.Expr, *, name: str | None = None) -> sympy.Expr:
        """Return the positive symbol standing for ``e^{exponent}``, creating it on first use.

        Parameters
        ----------
        exponent : sympy.Expr
            The exponent s.
        name : str, optional
            The name of the symbol when it is created (e.g. ``"E_L"`` for e^{L});
            by default ``prefix + separator + n``.

        Returns
        -------
        sympy.Expr
            The positive symbol for ``e^{exponent}`` (or the expression assigned to
            it by :meth:`assign`).

        Raises
        ------
        ValueError
            If ``name`` differs from the name of an existing symbol for the same
            exponent, or is already used for a different exponent.
        """
        key = sympy.expand(exponent)
        if key in self._table:
            found = self._table[key]
            if name is not None and getattr(found, "name", None) != name:
                raise ValueError(f"name: e^({exponent}) already stands as {found}, not {name}")
            return found
        name = f"{self._prefix}{self._separator}{len(self._table)}" if name is None else name
        if any(getattr(value, "name", None) == name for value in self._table.values()):
            raise ValueError(f"name: {name!r} already stands for another exponential")
        symbol = sympy.Symbol(name, positive=True)
        self._table[key] = symbol
        self._exponents[symbol] = exponent
        return symbol

    def assign(self, exponent: sympy.Expr, value: sympy.Expr) -> sympy.Expr:
        """Let ``e^{exponent}`` be the monomial ``value`` in symbols of this table.

        Used when an exponent is a proved sum of exponents that already have
        symbols, e.g. ``e^{s_u} = E_q R`` for ``s_u = s_q + L``.

        Parameters
        ----------
        exponent : sympy.Expr
            The exponent s.
        value : sympy.Expr
            A monomial in this table's symbols whose exponent expands to ``s``.

        Returns
        -------
        sympy.Expr
            ``value``.

        Raises
        ------
        ValueError
            If ``e^{exponent}`` already has a different stand-in, or ``value`` is
            not a monomial of exponent ``exponent``.

        Examples
        --------
        >>> s, L = sympy.symbols("s L")
        >>> E = ExpSymbols()
        >>> E.assign(s + L, E(s) * E(L, name="R"))
        E_0*R
        >>> E(L + s)
        E_0*R
        """
        key = sympy.expand(exponent)
        if key in self._table and self._table[key] != value:
            raise ValueError(f"exponent: e^({exponent}) already stands as {self._table[key]}, not {value}")
        if sympy.expand(self.exponent_of(value) - exponent) != 0:
            raise ValueError(f"value: {value} stands for e^({self.exponent_of(value)}), not e^({exponent})")
        self._table[key] = value
        return value

    def __len__(self) -> int:
        """The number of distinct exponents assigned so far."""
        return len(self._table)

    @property
    def symbols(self) -> tuple:
        """The symbols created by this instance, in order of creation."""
        return tuple(self._exponents)

    @property
    def exponents(self) -> tuple:
        """The exponents of :attr:`symbols`, in the same order and as first given."""
        return tuple(self._exponents.values())

    # -- substitution and read-back ------------------------------------------------------

    def substitute(self, expr: sympy.Expr) -> sympy.Expr:
        """Replace every ``exp(s)`` in ``expr`` (and the constant ``E`` = e^1) by its symbol.

        New exponents get symbols in the order of ``sympy.default_sort_key`` of
        their ``exp`` atoms, followed by ``E``.

        Parameters
        ----------
        expr : sympy.Expr
            An expression built from sympy objects (never a string).

        Returns
        -------
        sympy.Expr
            ``expr`` without ``exp``: a rational function of the symbols when the
            rest of ``expr`` is rational.

        Raises
        ------
        ValueError
            If ``expr`` already holds a different symbol with the name of a stand-in.

        Examples
        --------
        >>> E = ExpSymbols("E", separator="")
        >>> half = sympy.Rational(1, 2)
        >>> E.substitute((2 * sympy.exp(half) + sympy.E) / (sympy.exp(-half) + 1))
        (2*E1 + E2)/(E0 + 1)
        >>> E.exponents
        (-1/2, 1/2, 1)
        """
        atoms = sorted(expr.atoms(sympy.exp), key=sympy.default_sort_key)
        rule = {atom: self(atom.args[0]) for atom in atoms}
        if expr.has(sympy.E):  # sympy writes exp(1) as the constant E
            rule[sympy.E] = self(sympy.Integer(1))
        names = {symbol.name: symbol for symbol in self._exponents}
        for free in expr.free_symbols:
            if free.name in names and free != names[free.name]:
                exponent = self._exponents[names[free.name]]
                raise ValueError(f"expr: the symbol {free} clashes with the stand-in for e^({exponent})")
        return expr.xreplace(rule)

    def exponent_of(self, monomial: sympy.Expr) -> sympy.Expr:
        """Read back ``s`` from a monomial ``e^{s}`` written in this table's symbols.

        Parameters
        ----------
        monomial : sympy.Expr
            A product of integer powers of :attr:`symbols`, with coefficient 1.

        Returns
        -------
        sympy.Expr
            ``sum_k n_k s_k`` for ``monomial = prod_k E_k^{n_k}``.

        Raises
        ------
        ValueError
            If ``monomial`` is not such a product.

        Examples
        --------
        >>> E = ExpSymbols()
        >>> q = sympy.Rational(3, 4)
        >>> E.exponent_of(E.substitute(sympy.exp(q) ** 3 / sympy.exp(-q)))
        3
        """
        symbols, exponents = self.symbols, self.exponents
        numerator, denominator = sympy.fraction(sympy.together(monomial))
        total = sympy.Integer(0)
        for part, sign in ((numerator, 1), (denominator, -1)):
            try:
                terms = sympy.Poly(part, *symbols).terms() if symbols else [((), part)]
            except sympy.PolynomialError:
                terms = []
            if len(terms) != 1 or terms[0][1] != 1:
                raise ValueError(f"monomial: {monomial} is not a product of powers of {list(symbols)}")
            total += sign * sympy.Add(*(n * s for n, s in zip(terms[0][0], exponents)))
        return total
