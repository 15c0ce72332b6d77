"""From the function-level form to units: which side of each hyperplane its unit faces.

A unit ``w·ReLU(a·x)`` with ``a = c·n`` adds ``(w|c|/2)·|n·x|`` (its kink) and
``(w·c/2)·n·x`` (its share of the linear part) to ``g``.  The kinks ``κ_k`` and the linear
part ``L`` are measured; the orientations are not.  Two cases:

* **Independent normals** (always when ``m <= d`` and the hyperplanes are in general
  position).  ``L = Σ_k y_k·n_k`` has one solution ``y`` when ``L`` lies in the span, and
  each hyperplane then carries ``w⁺ = κ_k + y_k`` on ``+n_k`` and ``w⁻ = κ_k − y_k`` on
  ``−n_k``: one unit when ``|y_k| = |κ_k|``, an antipodal pair otherwise.  This is the
  unique unit form with at most one unit per side of each hyperplane.  When ``L`` is not
  in the span, a linear part no hyperplane explains remains (a cancelled pair
  ``w·ReLU(z) − w·ReLU(−z)`` hides its hyperplane entirely): it is reported as a residual.
* **Dependent normals** (``m > d``).  With one unit per hyperplane, the orientations
  ``s ∈ {±1}^m`` solve the subset sum ``Σ_k s_k·κ_k·n_k = L``.  A basis of the normals
  fixes the signs of the others' combinations; every assignment of the free signs is
  enumerated (float prefilter, exact confirmation) up to ``max_free`` free signs.  Every
  solution is returned; more than one means the unit level is not identifiable.  Beyond
  that, lattice reduction (LLL) looks for a solution as a short vector, confirmed exactly;
  it may find one, but cannot exclude others.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..ffn import FunctionForm, UnitForm
from ..linalg import QMatrix, lll_rows

__all__ = ["Orientation", "orient"]

#: Sign patterns the float filter may pass for exact confirmation before the search gives up.
MAX_CONFIRMATIONS = 4096


@dataclass(frozen=True)
class Orientation:
    """The unit forms consistent with a function-level form.

    Attributes
    ----------
    solutions : tuple of UnitForm
        Every unit form found (with its residual linear part; zero when the units explain
        ``L``).  Empty when none was searched (``reason`` says why).
    one_per_plane : bool
        The solutions put exactly one unit on each hyperplane, and explain ``L`` with no
        residual: the function needs exactly as many units as it has hyperplanes.
    exhaustive : bool
        The search excludes every other unit form with at most one unit per side of each
        hyperplane (``False`` when lattice reduction found a solution but cannot exclude
        others, or the float filter gave up).
    reason : str
        What the solutions are, or why none was found ("" for one unit per hyperplane,
        found exhaustively and uniquely).

    Whether the unit level is *identifiable* is not decided here: that needs every unit of
    the black box accounted for, which only the learner's search can prove (the ReLU
    learner's "all m units seen" rule, :mod:`exact.learn.ffn`).
    """

    solutions: tuple
    one_per_plane: bool
    exhaustive: bool = True
    reason: str = ""

    @property
    def unique(self) -> bool:
        """Exactly one unit form, one unit per hyperplane, and no other excluded."""
        return self.one_per_plane and self.exhaustive and len(self.solutions) == 1

    @property
    def units(self) -> int | None:
        """The units the (first) solution needs, counting a residual as an antipodal pair."""
        if not self.solutions:
            return None
        sol = self.solutions[0]
        return len(sol.units) + (2 if any(sol.residual) else 0)


def _solve_span(normals, L):
    """``y`` with ``Σ y_k n_k = L`` for independent normals, or ``None`` if ``L`` is outside their span."""
    k = len(normals)
    M = QMatrix.from_rows([list(n) for n in normals] + [list(L)]).T  # d × (k+1)
    R, rank = M.rref()
    if rank > k:
        return None
    rows = R.rows()
    return [rows[i][k] for i in range(k)]


def orient(form: FunctionForm, *, max_free: int = 22) -> Orientation:
    """The unit forms of ``form`` with at most one unit per side of each hyperplane (see the module docstring).

    Examples
    --------
    >>> from exact.ffn import ReLUFFN
    >>> net = ReLUFFN([[1, 2], [3, -1]], [2, -1])
    >>> o = orient(net.function_form())
    >>> o.unique, o.solutions[0] == net.unit_form()
    (True, True)
    >>> pair = ReLUFFN([[1, 0], [-1, 0], [0, 1]], [1, 2, 1])   # two units on one hyperplane
    >>> o = orient(pair.function_form())
    >>> o.one_per_plane, o.units, o.solutions[0] == pair.unit_form()
    (False, 3, True)
    """
    normals, kinks, L = form.normals, form.kinks, form.linear
    d, k = form.d, len(normals)
    zero = (Fraction(0),) * d
    if k == 0:
        if not any(L):
            return Orientation((UnitForm((), zero),), True)
        return Orientation((UnitForm((), tuple(L)),), False, True,
                           "g is linear: no hyperplane shows, only a linear part (an antipodal pair, two units)")
    rank = QMatrix.from_rows([list(n) for n in normals]).rank() if k <= d else d
    if rank == k:
        y = _solve_span(normals, L)
        if y is None:
            units = [(n, kap) for n, kap in zip(normals, kinks)] + [(tuple(-x for x in n), kap) for n, kap in zip(normals, kinks)]
            # κ|n·x| = κReLU(n·x) + κReLU(−n·x), with all of L as the residual: one representative
            sol = UnitForm.build(d, units, residual=L)
            return Orientation((sol,), False, True, "the linear part is not in the span of the hyperplane normals "
                               "(a cancelled pair w·ReLU(z) − w·ReLU(−z), or a linear part no unit explains)")
        units = []
        for n, kap, yk in zip(normals, kinks, y):
            units.append((n, kap + yk))
            units.append((tuple(-x for x in n), kap - yk))
        sol = UnitForm.build(d, units)
        pairs = sum(abs(yk) != abs(kap) for kap, yk in zip(kinks, y))
        if pairs:
            return Orientation((sol,), False, True, f"{pairs} hyperplane{'s' if pairs > 1 else ''} carry an antipodal "
                               f"pair (a linear share that is not ±κ): {len(sol.units)} units on {k} hyperplanes")
        return Orientation((sol,), True)
    return _subset_sum(form, max_free=max_free)


def _subset_sum(form: FunctionForm, *, max_free: int) -> Orientation:
    normals, kinks, L = form.normals, form.kinks, form.linear
    d, k = form.d, len(normals)
    N = QMatrix.from_rows([list(n) for n in normals])
    basis = N.T.pivot_columns()  # indices of a basis among the normals
    free = [i for i in range(k) if i not in basis]
    if len(free) > max_free:
        return _lattice(form, len(free), max_free)
    # coordinates in the basis: n_f = Σ_b C[f][b] n_b, L = Σ_b c0[b] n_b (if in the span)
    B = [list(normals[b]) for b in basis]
    c0 = _solve_span([normals[b] for b in basis], L)
    if c0 is None:
        return Orientation((), False, True, "the linear part is not in the span of the normals")
    C = [_solve_span([normals[b] for b in basis], normals[f]) for f in free]
    assert all(c is not None for c in C) and B
    # y_b = c0_b − Σ_f s_f κ_f C_fb must equal s_b κ_b: prefilter in float64, confirm exactly
    # each basis coordinate is scaled by its largest term, so the floats stay in range and the
    # filter's tolerance is relative to that coordinate (a huge weight elsewhere cannot swamp it)
    cols = [[c0[j], kinks[basis[j]]] + [kinks[f] * C[i][j] for i, f in enumerate(free)] for j in range(len(basis))]
    top = [max(abs(x) for x in col) or Fraction(1) for col in cols]
    kb = np.array([float(kinks[b] / t) for b, t in zip(basis, top)])
    c0f = np.array([float(x / t) for x, t in zip(c0, top)])
    Cf = np.array([[float(kinks[f] * C[i][j] / top[j]) for j in range(len(basis))] for i, f in enumerate(free)])
    Cf = Cf.reshape(len(free), len(basis))
    solutions: list = []
    confirmed = 0
    signs = np.array(list(itertools.product((1, -1), repeat=len(free))), dtype=float).reshape(-1, len(free))
    for start in range(0, len(signs), 1 << 16):
        S = signs[start:start + (1 << 16)]
        Y = c0f[None, :] - S @ Cf
        ok = np.all(np.abs(np.abs(Y) - np.abs(kb)[None, :]) <= 1e-9 * (len(free) + 2), axis=1)
        confirmed += int(ok.sum())
        if confirmed > MAX_CONFIRMATIONS:
            return Orientation(tuple(solutions), bool(solutions), False, f"more than {MAX_CONFIRMATIONS} sign patterns "
                               "pass the float filter (the kinks differ too much in size for it): the orientation is "
                               "not resolved")
        for row in S[ok]:
            s_free = [int(x) for x in row]
            y = [c0[j] - sum((sf * kinks[f] * C[i][j] for i, (f, sf) in enumerate(zip(free, s_free))), Fraction(0))
                 for j in range(len(basis))]
            if all(abs(yb) == abs(kinks[b]) for yb, b in zip(y, basis)):
                s = {f: sf for f, sf in zip(free, s_free)}
                s.update({b: (1 if yb * kinks[b] > 0 else -1) for yb, b in zip(y, basis)})
                units = [(tuple(s[i] * x for x in normals[i]), 2 * kinks[i]) for i in range(k)]
                solutions.append(UnitForm.build(d, units))
    solutions.sort(key=lambda u: u.units)
    if not solutions:
        return Orientation((), False, True, "no orientation with one unit per hyperplane explains the linear part "
                           "(antipodal pairs, or a linear part no unit explains)")
    if len(solutions) > 1:
        return Orientation(tuple(solutions), True, True, f"{len(solutions)} orientations explain the function "
                           "(signed, weighted normals summing to zero: a tent)")
    return Orientation(tuple(solutions), True)


def _lattice(form: FunctionForm, n_free: int, max_free: int) -> Orientation:
    """Beyond enumeration: the subset sum ``Σ s_k u_k = L`` (``u_k = κ_k n_k``) as a short vector.

    With ``s = 2x − 1``, ``x ∈ {0, 1}^k``, the rows ``(2e_k | N·u_k)`` and ``(1…1 | N·T)``,
    ``T = (L + Σ u_k)/2``, span a lattice holding ``(s | 0)``, of norm ``√k``; for a large ``N``
    LLL usually finds it.  Each short row of the form ``±(s | 0)`` with ``s ∈ {±1}^k`` is
    confirmed exactly.  A solution found this way is reported, but whether it is the only
    one is not known: the unit level is then not claimed identifiable.
    """
    normals, kinks, L = form.normals, form.kinks, form.linear
    d, k = form.d, len(normals)
    u = [[kinks[i] * x for x in normals[i]] for i in range(k)]
    T = [(L[j] + sum((u[i][j] for i in range(k)), Fraction(0))) / 2 for j in range(d)]
    den = math.lcm(*(x.denominator for row in u + [T] for x in row))
    U = [[int(x * den) for x in row] for row in u]
    Ti = [int(x * den) for x in T]
    N = 2 ** (8 + k.bit_length()) * max(1, max(abs(x) for row in U + [Ti] for x in row).bit_length())
    rows = [[2 if j == i else 0 for j in range(k)] + [N * x for x in U[i]] for i in range(k)]
    rows.append([1] * k + [N * x for x in Ti])
    found = []
    for row in lll_rows(rows):
        head, tail = row[:k], row[k:]
        if any(tail) or any(abs(x) != 1 for x in head):
            continue
        for s in (head, [-x for x in head]):
            if all(sum((s[i] * u[i][j] for i in range(k)), Fraction(0)) == L[j] for j in range(d)):
                units = [(tuple(s[i] * x for x in normals[i]), 2 * kinks[i]) for i in range(k)]
                sol = UnitForm.build(d, units)
                if sol not in found:
                    found.append(sol)
    reason = (f"{n_free} free signs exceed the enumeration limit {max_free}: "
              + (f"{len(found)} orientation(s) found by lattice reduction (LLL); others are not excluded"
                 if found else "lattice reduction (LLL) found no orientation; the orientation is not resolved"))
    return Orientation(tuple(found), bool(found), False, reason)
