"""Multi-head equivalence proofs — Proposition 7.1 [BSHK26].

:func:`prove_equivalent` proves that two multi-head parameterisations define the
same map **for every sequence length N**, or refutes it with an exactly checked
witness.  Models are numeric models (duck-typed, see
:class:`proofs.constructions.NumericModel`; e.g. :class:`exact.multihead.MultiHead`)
or, for fully symbolic families, lists of ``(W, v)`` pairs of sympy matrices.  The
constructions of :mod:`proofs.constructions` are re-exported here.

Never call ``sympify``/``eval`` on user text here: everything is built from sympy
objects.  Exponentials never reach sympy's simplifier (it can overflow gmp on them):
each ``e^{s}`` is replaced by an independent positive symbol first
(:class:`proofs.expsymbols.ExpSymbols`).

The same statement is proved in Coq, for every dimension and sequence length, in ``proofs/coq/multihead.v``:
``F_canon``, ``same_canon_same_map``, ``combination_family`` (:mod:`proofs.coq_check` compiles the file and audits its axioms).
"""

from __future__ import annotations

import numbers

import sympy

from .constructions import (
    refuse_biases as _refuse_biases,
    KINDS,
    NumericModel,
    _rand_q,
    _rng,
    add_zero_head,
    construct,
    drop_zero_heads,
    mixed,
    permute_heads,
    split_v,
    symbolic_family,
)
from .core import Proof
from .expsymbols import ExpSymbols

__all__ = [
    "KINDS",
    "split_v",
    "add_zero_head",
    "drop_zero_heads",
    "permute_heads",
    "mixed",
    "construct",
    "symbolic_family",
    "prove_equivalent",
    "prove_families",
]


# -- proofs -------------------------------------------------------------------------------------------


def _is_numeric_model(obj) -> bool:
    """Whether ``obj`` is a numeric multi-head model (duck-typed: it has ``.heads`` and ``.d``)."""
    return hasattr(obj, "heads") and hasattr(obj, "d")


def _rational(x) -> sympy.Rational:
    """An exact parameter (a Fraction or an int) as a sympy Rational; nothing else is accepted."""
    if isinstance(x, bool) or not isinstance(x, numbers.Rational):
        raise TypeError(f"prove_equivalent: expected Fraction parameters in a numeric model, got {type(x).__name__}")
    return sympy.Rational(int(x.numerator), int(x.denominator))


def _as_pairs(model) -> list:
    """``[(W, v)]`` as sympy matrices, from a numeric model or a list of pairs."""
    if _is_numeric_model(model):
        _refuse_biases(model)
        return [
            (sympy.Matrix([[_rational(x) for x in r] for r in h.W]), sympy.Matrix([_rational(x) for x in h.v]))
            for h in model.heads
        ]
    pairs = []
    for W, v in model:
        for M in (W, v):
            if not isinstance(M, sympy.MatrixBase):
                # sympy.Matrix(list) would sympify strings, i.e. run them as code
                raise TypeError(
                    f"prove_equivalent: expected a MultiHead or (W, v) pairs of sympy matrices, got {type(M).__name__}"
                )
        pairs.append((sympy.Matrix(W), sympy.Matrix(v)))
    return pairs


def _key(W: sympy.Matrix) -> tuple:
    return tuple(sympy.expand(x) for x in W)


def _canonical(pairs) -> list:
    """Group by ``W`` (as expanded expressions), sum ``v``, drop zero sums: ``[(key, W, v)]`` in order."""
    groups: dict = {}
    for W, v in pairs:
        k = _key(W)
        groups[k] = (W, groups[k][1] + v if k in groups else v)
    out = []
    for k, (W, v) in groups.items():
        v = v.applyfunc(sympy.expand)
        if any(x != 0 for x in v):
            out.append((k, W, v))
    return out


def _numeric_canonical(model: NumericModel) -> tuple:
    """The canonical form of a numeric model: group heads by equal W, sum their v, drop zero sums, sort.

    Returns
    -------
    tuple of (W, v)
        Pairwise distinct ``W`` (tuples of rows), nonzero ``v``, in increasing order;
        two models (of the same ``d``) define the same map iff these are equal [KKG26].
    """
    groups: dict = {}
    for h in model.heads:
        W, v = tuple(map(tuple, h.W)), tuple(h.v)
        groups[W] = tuple(x + y for x, y in zip(groups[W], v)) if W in groups else v
    return tuple(sorted((W, v) for W, v in groups.items() if any(v)))


def _same_canonical(ca, cb) -> bool:
    if len(ca) != len(cb):
        return False
    db = {k: v for k, _, v in cb}
    return all(k in db and all(sympy.expand(x) == 0 for x in (v - db[k])) for k, _, v in ca)


def _f_symbolic(pairs, X: sympy.Matrix, E: dict):
    """``f(X)`` per head as ``(Σ e^{s_i}, Σ e^{s_i} v·x_i)``, each ``e^{s}`` a positive symbol.

    ``E`` is the assignment of :class:`~proofs.expsymbols.ExpSymbols` (expanded score →
    symbol ``E0, E1, ...``), filled in place; passing the same dict for both models
    makes equal scores share one symbol.
    """
    table = ExpSymbols("E", separator="", table=E)
    N = X.rows
    q = X.row(N - 1).T
    terms = []
    for W, v in pairs:
        e = [table((X.row(i) * W * q)[0]) for i in range(N)]
        c = [(X.row(i) * v)[0] for i in range(N)]
        terms.append((sympy.Add(*e), sympy.Add(*[ei * ci for ei, ci in zip(e, c)])))
    return terms


def _difference_vanishes(ta, tb) -> bool:
    """Whether ``Σ num/den`` over ``ta`` minus over ``tb`` is 0 as a rational function.

    Terms with the same denominator are added first (that alone settles every
    construction here); otherwise the whole difference is cancelled.
    """
    groups: dict = {}
    for den, num in ta:
        groups[den] = groups.get(den, 0) + num
    for den, num in tb:
        groups[den] = groups.get(den, 0) - num
    if all(sympy.expand(n) == 0 for n in groups.values()):
        return True
    total = sympy.Add(*[n / den for den, n in groups.items()])
    return sympy.cancel(sympy.together(total)) == 0


def _describe(pairs, canon) -> str:
    return f"{len(pairs)} head(s) → {len(canon)} canonical head(s)"


def prove_equivalent(a, b, *, lengths=(1, 2, 3, 4), witness_tries: int = 200, seed: int = 0) -> Proof:
    """Prove that two multi-head parameterisations define the same map, or refute it.

    Parameters
    ----------
    a, b : numeric models, or lists of ``(W, v)`` sympy matrices (symbolic families)
        A numeric model is duck-typed (:class:`~proofs.constructions.NumericModel`),
        e.g. an :class:`exact.multihead.MultiHead`; anything else is refused (strings
        are never turned into sympy objects).
    lengths : tuple of int
        Sequence lengths for the independent symbolic-``X`` check.
    witness_tries, seed : int
        For non-equivalent numeric models: how many seeded random inputs to try for a
        witness.

    Returns
    -------
    Proof
        ``details["equivalent"]`` says which way the proof went.  Equivalence is
        proved by two arguments: (1) the canonical forms are equal, and ``f`` depends
        only on the canonical form, for every ``N``; (2) independently, ``f_a − f_b``
        vanishes as a rational function for symbolic ``X`` of each length in
        ``lengths``, with each ``e^{s}`` an independent positive symbol.
        Non-equivalence is proved by a witness ``X`` on which the two maps differ,
        decided exactly.

    Examples
    --------
    With numeric models (e.g. ``MultiHead.random(2, 2, seed=0)`` and its
    ``split_v``) the calls are the same, and a non-equivalent numeric pair is
    refuted by a witness in ``details["witness"]``.  Symbolic families:

    >>> A, B = symbolic_family("split", 2, 2)
    >>> p = prove_equivalent(A, B)
    >>> p.verified, p.details["equivalent"]
    (True, True)
    >>> W, v = A[0]
    >>> q = prove_equivalent(A, [(W, 2 * v)] + A[1:])  # not a split: v_1 doubled
    >>> q.verified, q.details["equivalent"]
    (False, False)
    >>> prove_equivalent([("W", "v")], B)
    Traceback (most recent call last):
    ...
    TypeError: prove_equivalent: expected a MultiHead or (W, v) pairs of sympy matrices, got str
    """
    if not lengths:
        raise ValueError("lengths: the independent symbolic-X check needs at least one sequence length")
    pa, pb = _as_pairs(a), _as_pairs(b)
    d = {W.rows for W, _ in pa + pb} | {m.d for m in (a, b) if _is_numeric_model(m)}
    if len(d) > 1:
        raise ValueError(f"prove_equivalent: the models have different token dimensions {sorted(d)}")
    d = d.pop() if d else 1
    ca, cb = _canonical(pa), _canonical(pb)
    steps = [
        f"Canonical form of A: group heads by W, sum their v, drop zero sums: {_describe(pa, ca)}.",
        f"Canonical form of B: {_describe(pb, cb)}.",
    ]
    same = _same_canonical(ca, cb)
    numeric = _is_numeric_model(a) and _is_numeric_model(b)
    if numeric:
        exact_same = _numeric_canonical(a) == _numeric_canonical(b)
        if exact_same != same:  # pragma: no cover - the two canonicalisations must agree
            raise AssertionError("symbolic and exact canonical forms disagree")
    if same:
        steps.append("The canonical forms are equal: the same W's, and each group's summed v agrees (expanded).")
        steps.append(
            "For every sequence X of every length N, f(X) = Σ_groups softmax(X W_g x_N)ᵀ (X Σ v): heads with "
            "equal W have equal scores, so their outputs add into one head with the summed v, and a head with "
            "v = 0 contributes 0. So f depends only on the canonical form, and f_A = f_B for all N; this "
            "argument does not depend on N."
        )
        checks = {}
        for N in lengths:
            X = sympy.Matrix(N, d, lambda i, j: sympy.Symbol(f"x_{i}{j}"))
            E: dict = {}
            ok = _difference_vanishes(_f_symbolic(pa, X, E), _f_symbolic(pb, X, E))
            checks[N] = ok
            steps.append(
                f"Independent check, N = {N}: with symbolic tokens x_ij and each e^s replaced by a positive symbol "
                f"({len(E)} distinct scores), f_A − f_B reduces to 0 as a rational function: {ok}."
            )
        verified = all(checks.values())
        return Proof(
            name="multi-head equivalence",
            statement="f_A(X) = f_B(X) for every input X of every length N",
            verified=verified,
            method="canonical form (all N) + symbolic-X rational-function identity (N in lengths)",
            steps=tuple(steps),
            details={"equivalent": True, "canonical_heads": len(ca), "symbolic_lengths": {str(k): v for k, v in checks.items()}},
        )
    steps.append("The canonical forms differ, so by [KKG26] the maps differ; a witness input shows it.")
    if not numeric:
        return Proof(
            name="multi-head non-equivalence",
            statement="f_A ≠ f_B",
            verified=False,
            method="canonical forms differ (no witness search for symbolic models)",
            steps=tuple(steps),
            details={"equivalent": False},
        )
    return _refute(a, b, steps, tries=witness_tries, seed=seed)


def _refute(a: NumericModel, b: NumericModel, steps: list, *, tries: int, seed: int) -> Proof:
    rng = _rng(seed)
    for k in range(tries):
        N = 1 + k % 6
        X = [[_rand_q(rng, 2, 3) for _ in range(a.d)] for _ in range(N)]
        fa, fb = a.exact(X), b.exact(X)
        if not fa == fb:  # decided exactly (exp-polynomial normal forms, Lindemann–Weierstrass)
            ba, bb = a.ball(X, prec=200), b.ball(X, prec=200)
            steps.append(
                f"Witness X of length {N} (try {k + 1}): f_A(X) ≈ {ba.str(20, radius=False)} and "
                f"f_B(X) ≈ {bb.str(20, radius=False)}; inequality decided exactly"
                + (" and the rigorous balls are disjoint." if not ba.overlaps(bb) else ".")
            )
            return Proof(
                name="multi-head non-equivalence",
                statement="f_A(X) ≠ f_B(X) for the witness X below",
                verified=True,
                method="canonical forms differ; exact evaluation at a witness",
                steps=tuple(steps),
                details={
                    "equivalent": False,
                    "witness": [[str(x) for x in row] for row in X],  # "p" or "p/q"
                    "f_A": ba.str(30, radius=False),
                    "f_B": bb.str(30, radius=False),
                },
            )
    steps.append(f"No witness among {tries} random inputs: non-equivalence is not proved.")
    return Proof(
        name="multi-head non-equivalence",
        statement="f_A ≠ f_B",
        verified=False,
        method="canonical forms differ; witness search failed",
        steps=tuple(steps),
        details={"equivalent": False},
    )



def prove_families(*, dims=(1, 2), heads=(2,)) -> Proof:
    """Prove the split, zero-head and permutation families of Proposition 7.1 symbolically.

    For each ``d`` in ``dims`` and ``H`` in ``heads``, each family's two fully symbolic
    parameterisations (:func:`symbolic_family`) go through :func:`prove_equivalent`.  The
    same statement for every ``d``, ``N`` and ``H``, and for any composition of the
    families, is the Coq theorem ``multihead.combination_family`` (``proofs/coq/multihead.v``).

    >>> prove_families(dims=(1,), heads=(2,)).verified
    True
    """
    steps, ok = [], True
    for d in dims:
        for H in heads:
            for kind in ("split", "zero", "permute"):
                proof = prove_equivalent(*symbolic_family(kind, d, H))
                ok = ok and proof.verified and proof.details.get("equivalent") is True
                steps.append(f"{kind}, d={d}, H={H}: {'proved' if proof.verified else 'NOT proved'}")
    return Proof(
        name="proposition_7_1_families",
        statement="heads sharing a W with v split, a head with v = 0, and a permutation of the heads leave f unchanged",
        verified=ok and bool(steps),
        method="prove_equivalent on fully symbolic families: canonical forms equal, and f_a - f_b = 0 as a "
               "rational function at symbolic X",
        steps=tuple(steps),
    )
