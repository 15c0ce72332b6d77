"""Multi-head non-identifiability: constructions and proofs — Proposition 7.1 [BSHK26].

Distinct parameterisations of multi-head attention

    f(X) = Σ_h softmax(X W_h x_N)ᵀ (X v_h)

define the same map when they differ by

* **split-v**: heads sharing a ``W`` may redistribute their ``v``:
  ``(W, v₁), (W, v₂) ≡ (W, v₁ + t), (W, v₂ − t)`` (a head ``(W, v)`` can split into
  ``(W, v − t), (W, t)``);
* **zero-v**: a head ``(W, 0)`` with any ``W`` can be added or removed, so ``H`` itself is
  not identifiable;
* **permute**: heads can be reordered;
* any composition of these.

The constructions below produce such a *different* parameterisation from any model;
:func:`prove_equivalent` proves that two parameterisations define the same map **for
every sequence length N**, or refutes it with an exactly checked witness.  Models are
numeric :class:`~exact.multihead.MultiHead` objects or, for fully symbolic families,
lists of ``(W, v)`` pairs of sympy matrices.

Never call ``sympify``/``eval`` on user text here: everything is built from sympy
objects.  Exponentials never reach sympy's simplifier (it can overflow gmp on them):
each ``e^{s}`` is replaced by an independent positive symbol first.
"""

from __future__ import annotations

import random
from fractions import Fraction

import sympy

from exact.canonical import canonical_form
from exact.models import SingleHead
from exact.multihead import MultiHead
from exact.numbers import format_rational

from .core import Proof

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
]

KINDS = ("split", "zero", "permute", "mixed")


# -- constructions on numeric models -------------------------------------------------------


def _rng(seed) -> random.Random:
    return random.Random(seed)


def _rand_q(rng: random.Random, bound: int = 3, den: int = 5) -> Fraction:
    return Fraction(rng.randint(-bound * den, bound * den), rng.randint(1, den))


def _require_heads(model: MultiHead, n: int, what: str) -> None:
    if model.H < n:
        raise ValueError(f"{what}: needs a model with at least {n} head(s), got H={model.H}")


def split_v(model: MultiHead, *, head: int | None = None, t=None, seed=None) -> MultiHead:
    """Split head ``i`` into ``(W_i, v_i − t)`` and ``(W_i, t)``, the new head at a random place.

    ``t`` defaults to a random nonzero rational vector.

    >>> m = MultiHead.random(2, 2, seed=0)
    >>> b = split_v(m, seed=1)
    >>> b.H, b != m
    (3, True)
    """
    _require_heads(model, 1, "split_v")
    rng = _rng(seed)
    i = rng.randrange(model.H) if head is None else head
    W, v = model.heads[i].W, model.heads[i].v
    if t is None:
        t = [Fraction(0)] * model.d
        while not any(t):
            t = [_rand_q(rng) for _ in range(model.d)]
    t = [Fraction(x) for x in t]
    heads = list(model.heads)
    heads[i] = SingleHead(W, [a - b for a, b in zip(v, t)])
    heads.insert(rng.randrange(len(heads) + 1), SingleHead(W, t))
    return MultiHead(heads, d=model.d)


def add_zero_head(model: MultiHead, *, W=None, seed=None) -> MultiHead:
    """Insert a head ``(W, 0)`` (``W`` random unless given) at a random place.

    >>> add_zero_head(MultiHead.random(2, 1, seed=0), seed=3).H
    2
    """
    rng = _rng(seed)
    if W is None:
        W = [[_rand_q(rng) for _ in range(model.d)] for _ in range(model.d)]
    heads = list(model.heads)
    heads.insert(rng.randrange(len(heads) + 1), SingleHead(W, [0] * model.d))
    return MultiHead(heads, d=model.d)


def drop_zero_heads(model: MultiHead) -> MultiHead:
    """Remove every head with ``v = 0``."""
    return MultiHead([h for h in model.heads if any(h.v)], d=model.d)


def permute_heads(model: MultiHead, *, perm=None, seed=None) -> MultiHead:
    """Reorder the heads (a random permutation that changes the parameter list, unless given).

    >>> m = MultiHead.random(2, 3, seed=0)
    >>> p = permute_heads(m, seed=1)
    >>> p != m and sorted(map(repr, p.heads)) == sorted(map(repr, m.heads))
    True
    """
    if perm is None:
        if len(set(model.heads)) < 2:
            raise ValueError("permute_heads: needs at least two different heads to give different parameters")
        rng = _rng(seed)
        perm = list(range(model.H))
        while [model.heads[i] for i in perm] == list(model.heads):
            rng.shuffle(perm)
    if sorted(perm) != list(range(model.H)):
        raise ValueError(f"perm: expected a permutation of 0..{model.H - 1}, got {perm!r}")
    return MultiHead([model.heads[i] for i in perm], d=model.d)


def mixed(model: MultiHead, *, seed=None, steps: int = 3) -> MultiHead:
    """A random composition of ``steps`` constructions; always different as parameters.

    >>> m = MultiHead.random(2, 2, seed=0)
    >>> mixed(m, seed=4) != m
    True
    """
    rng = _rng(seed)
    out = model
    for _ in range(max(1, steps)):
        choices = ["zero"] + (["split"] if out.H else []) + (["permute"] if len(set(out.heads)) >= 2 else [])
        kind = rng.choice(choices)
        s = rng.randrange(2**31)
        out = split_v(out, seed=s) if kind == "split" else add_zero_head(out, seed=s) if kind == "zero" else permute_heads(out, seed=s)
    return out if out != model else add_zero_head(out, seed=rng.randrange(2**31))


def construct(model: MultiHead, kind: str, *, seed=None) -> MultiHead:
    """Apply the construction ``kind`` (one of :data:`KINDS`)."""
    if kind == "split":
        return split_v(model, seed=seed)
    if kind == "zero":
        return add_zero_head(model, seed=seed)
    if kind == "permute":
        return permute_heads(model, seed=seed)
    if kind == "mixed":
        return mixed(model, seed=seed)
    raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")


# -- fully symbolic families ---------------------------------------------------------------------


def _sym_matrix(name: str, rows: int, cols: int) -> sympy.Matrix:
    return sympy.Matrix(rows, cols, lambda i, j: sympy.Symbol(f"{name}_{i}{j}" if cols > 1 else f"{name}_{i}"))


def symbolic_family(kind: str, d: int, H: int) -> tuple[list, list]:
    """Two fully symbolic parameterisations ``(A, B)`` related by ``kind``.

    ``A`` has heads ``(W_h, v_h)`` with symbolic entries; ``B`` is ``A`` after the
    construction, with symbols ``t_i`` for the split and ``Z`` for a zero head's ``W``.

    >>> A, B = symbolic_family("split", 2, 2)
    >>> len(A), len(B), B[0][1][0]
    (2, 3, -t_0 + v1_0)
    """
    if kind not in ("split", "zero", "permute"):
        raise ValueError(f"kind: expected 'split', 'zero' or 'permute' for a symbolic family, got {kind!r}")
    if d < 1 or H < (2 if kind == "permute" else 1):
        raise ValueError(f"symbolic_family: d >= 1 and enough heads for {kind!r} are needed, got d={d}, H={H}")
    A = [(_sym_matrix(f"W{h + 1}", d, d), _sym_matrix(f"v{h + 1}", d, 1)) for h in range(H)]
    if kind == "split":
        t = _sym_matrix("t", d, 1)
        W1, v1 = A[0]
        B = [(W1, v1 - t)] + A[1:] + [(W1, t)]
    elif kind == "zero":
        B = A + [(_sym_matrix("Z", d, d), sympy.zeros(d, 1))]
    else:
        B = A[1:] + A[:1]
    return A, B


# -- proofs -------------------------------------------------------------------------------------------


def _as_pairs(model) -> list:
    """``[(W, v)]`` as sympy matrices, from a MultiHead or a list of pairs."""
    if isinstance(model, MultiHead):
        return [
            (sympy.Matrix([[sympy.Rational(x.numerator, x.denominator) for x in r] for r in h.W]),
             sympy.Matrix([sympy.Rational(x.numerator, x.denominator) for x in h.v]))
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


def _same_canonical(ca, cb) -> bool:
    if len(ca) != len(cb):
        return False
    db = {k: v for k, _, v in cb}
    return all(k in db and all(sympy.expand(x) == 0 for x in (v - db[k])) for k, _, v in ca)


def _f_symbolic(pairs, X: sympy.Matrix, E: dict):
    """``f(X)`` with each ``e^{s}`` replaced by the positive symbol ``E[s]`` (keyed by the expanded score)."""
    N = X.rows
    q = X.row(N - 1).T
    terms = []
    for W, v in pairs:
        s = [sympy.expand((X.row(i) * W * q)[0]) for i in range(N)]
        e = [E.setdefault(si, sympy.Symbol(f"E{len(E)}", positive=True)) for si in s]
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
    a, b : MultiHead, or lists of ``(W, v)`` sympy matrices (symbolic families)
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
    >>> from exact.multihead import MultiHead
    >>> m = MultiHead.random(2, 2, seed=0)
    >>> p = prove_equivalent(m, split_v(m, seed=1))
    >>> p.verified, p.details["equivalent"]
    (True, True)
    >>> prove_equivalent(m, MultiHead.random(2, 2, seed=5)).details["equivalent"]
    False
    """
    if not lengths:
        raise ValueError("lengths: the independent symbolic-X check needs at least one sequence length")
    pa, pb = _as_pairs(a), _as_pairs(b)
    d = {W.rows for W, _ in pa + pb} | {m.d for m in (a, b) if isinstance(m, MultiHead)}
    if len(d) > 1:
        raise ValueError(f"prove_equivalent: the models have different token dimensions {sorted(d)}")
    d = d.pop() if d else 1
    ca, cb = _canonical(pa), _canonical(pb)
    steps = [
        f"Canonical form of A: group heads by W, sum their v, drop zero sums: {_describe(pa, ca)}.",
        f"Canonical form of B: {_describe(pb, cb)}.",
    ]
    same = _same_canonical(ca, cb)
    if isinstance(a, MultiHead) and isinstance(b, MultiHead):
        exact_same = canonical_form(a) == canonical_form(b)
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
    if not (isinstance(a, MultiHead) and isinstance(b, MultiHead)):
        return Proof(
            name="multi-head non-equivalence",
            statement="f_A ≠ f_B",
            verified=False,
            method="canonical forms differ (no witness search for symbolic models)",
            steps=tuple(steps),
            details={"equivalent": False},
        )
    return _refute(a, b, steps, tries=witness_tries, seed=seed)


def _refute(a: MultiHead, b: MultiHead, steps: list, *, tries: int, seed: int) -> Proof:
    rng = _rng(seed)
    for k in range(tries):
        N = 1 + k % 6
        X = [[_rand_q(rng, 2, 3) for _ in range(a.d)] for _ in range(N)]
        fa, fb = a.exact(X), b.exact(X)
        if not fa == fb:  # decided exactly (exp-polynomial normal forms, Lindemann–Weierstrass)
            ba, bb = fa.ball(200), fb.ball(200)
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
                    "witness": [[format_rational(x) for x in row] for row in X],
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

