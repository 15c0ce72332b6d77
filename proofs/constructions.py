"""Multi-head parameterisations that define the same map — Proposition 7.1 [BSHK26].

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

The constructions below produce such a *different* parameterisation from any numeric
model, and :func:`symbolic_family` builds fully symbolic pairs;
:func:`proofs.multihead.prove_equivalent` proves the two define the same map.

Numeric models are duck-typed (:class:`NumericModel`): any object with ``.d`` and
``.heads``, each head with ``.W`` (a tuple of rows of Fractions) and ``.v`` (a tuple of
Fractions), such as :class:`exact.multihead.MultiHead`.  A construction builds its
result as ``type(model)(heads, d=model.d)``, where ``heads`` holds the model's own head
objects where they are kept and a ``(W, v)`` pair for each new or changed head; so the
model type must accept such pairs in place of heads (and validate them).  This single rule
also covers a model without heads, which has no head type to copy.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any, Protocol

import sympy

__all__ = [
    "NumericModel",
    "KINDS",
    "split_v",
    "add_zero_head",
    "drop_zero_heads",
    "permute_heads",
    "mixed",
    "construct",
    "symbolic_family",
]

KINDS = ("split", "zero", "permute", "mixed")


class NumericModel(Protocol):
    """What :mod:`proofs` needs of a numeric multi-head model (e.g. ``exact.multihead.MultiHead``).

    Attributes
    ----------
    heads : tuple
        The heads, each with ``.W`` (tuple of ``d`` rows of ``d`` Fractions) and ``.v``
        (tuple of ``d`` Fractions).
    d : int
        The token dimension.

    Notes
    -----
    ``type(model)(heads, d=d)`` must build a model from head objects and ``(W, v)``
    pairs; models compare with ``==`` as parameter lists.  :func:`prove_equivalent`
    also calls ``exact(X)`` (a value whose ``==`` decides equality exactly) and
    ``ball(X, prec=bits)`` (a rigorous ``flint.arb``).
    """

    heads: tuple
    d: int

    def exact(self, X) -> Any: ...

    def ball(self, X, *, prec: int = 128) -> Any: ...


def refuse_biases(model) -> None:
    """The families and their proofs are for bias-free heads: a score bias ``c_h`` or an output bias
    ``b`` would be ignored, so a model that has one is refused."""
    if getattr(model, "b", 0) or any(any(getattr(h, "c", ()) or ()) for h in model.heads):
        raise ValueError("proofs: the multi-head families and their proofs are for bias-free heads, and this model "
                         "has biases (a score bias c_h or an output bias b); its biases would be ignored")


# -- constructions on numeric models -------------------------------------------------------


def _rng(seed) -> random.Random:
    return random.Random(seed)


def _rand_q(rng: random.Random, bound: int = 3, den: int = 5) -> Fraction:
    return Fraction(rng.randint(-bound * den, bound * den), rng.randint(1, den))


def _rebuild(model: NumericModel, heads: list) -> NumericModel:
    """``type(model)(heads, d=model.d)``: heads are head objects or ``(W, v)`` pairs."""
    return type(model)(heads, d=model.d)


def _distinct_heads(model: NumericModel) -> int:
    """The number of different heads, compared by their parameters ``(W, v)``."""
    return len({(tuple(map(tuple, h.W)), tuple(h.v)) for h in model.heads})


def _require_heads(model: NumericModel, n: int, what: str) -> None:
    if len(model.heads) < n:
        raise ValueError(f"{what}: needs a model with at least {n} head(s), got H={len(model.heads)}")


def split_v(model: NumericModel, *, head: int | None = None, t=None, seed=None) -> NumericModel:
    """Split head ``i`` into ``(W_i, v_i − t)`` and ``(W_i, t)``, the new head at a random place.

    ``t`` defaults to a random nonzero rational vector.

    Examples
    --------
    Any type with ``.heads`` and ``.d`` that accepts ``(W, v)`` pairs will do:

    >>> from collections import namedtuple
    >>> Head = namedtuple("Head", "W v")
    >>> class Model(namedtuple("Model", "heads d")):
    ...     def __new__(cls, heads, d):
    ...         return super().__new__(cls, tuple(Head(*h) for h in heads), d)
    >>> m = Model([(((1, 2), (0, 1)), (1, 0)), (((0, 1), (1, 0)), (2, 3))], d=2)
    >>> b = split_v(m, head=1, t=[1, 1], seed=0)  # (W_1, (2, 3)) -> (W_1, (1, 2)), (W_1, t)
    >>> sorted(h.v for h in b.heads if h.W == ((0, 1), (1, 0)))
    [(Fraction(1, 1), Fraction(1, 1)), (Fraction(1, 1), Fraction(2, 1))]
    """
    _require_heads(model, 1, "split_v")
    rng = _rng(seed)
    i = rng.randrange(len(model.heads)) if head is None else head
    W, v = model.heads[i].W, model.heads[i].v
    if t is None:
        t = [Fraction(0)] * model.d
        while not any(t):
            t = [_rand_q(rng) for _ in range(model.d)]
    t = tuple(Fraction(x) for x in t)
    heads = list(model.heads)
    heads[i] = (W, tuple(a - b for a, b in zip(v, t)))
    heads.insert(rng.randrange(len(heads) + 1), (W, t))
    return _rebuild(model, heads)


def add_zero_head(model: NumericModel, *, W=None, seed=None) -> NumericModel:
    """Insert a head ``(W, 0)`` (``W`` random unless given) at a random place.

    Examples
    --------
    >>> from collections import namedtuple
    >>> Head = namedtuple("Head", "W v")
    >>> class Model(namedtuple("Model", "heads d")):
    ...     def __new__(cls, heads, d):
    ...         return super().__new__(cls, tuple(Head(*h) for h in heads), d)
    >>> add_zero_head(Model([], d=1), W=[[5]], seed=3)
    Model(heads=(Head(W=[[5]], v=(Fraction(0, 1),)),), d=1)
    """
    rng = _rng(seed)
    if W is None:
        W = [[_rand_q(rng) for _ in range(model.d)] for _ in range(model.d)]
    heads = list(model.heads)
    heads.insert(rng.randrange(len(heads) + 1), (W, (Fraction(0),) * model.d))
    return _rebuild(model, heads)


def drop_zero_heads(model: NumericModel) -> NumericModel:
    """Remove every head with ``v = 0``."""
    return _rebuild(model, [h for h in model.heads if any(h.v)])


def permute_heads(model: NumericModel, *, perm=None, seed=None) -> NumericModel:
    """Reorder the heads (a random permutation that changes the parameter list, unless given).

    Examples
    --------
    >>> from collections import namedtuple
    >>> Head = namedtuple("Head", "W v")
    >>> class Model(namedtuple("Model", "heads d")):
    ...     def __new__(cls, heads, d):
    ...         return super().__new__(cls, tuple(Head(*h) for h in heads), d)
    >>> m = Model([(((1,),), (1,)), (((2,),), (1,)), (((3,),), (1,))], d=1)
    >>> [h.W for h in permute_heads(m, perm=[2, 0, 1]).heads]
    [((3,),), ((1,),), ((2,),)]
    >>> p = permute_heads(m, seed=1)
    >>> p != m and sorted(p.heads) == sorted(m.heads)
    True
    """
    H = len(model.heads)
    if perm is None:
        if _distinct_heads(model) < 2:
            raise ValueError("permute_heads: needs at least two different heads to give different parameters")
        rng = _rng(seed)
        perm = list(range(H))
        while [model.heads[i] for i in perm] == list(model.heads):
            rng.shuffle(perm)
    if sorted(perm) != list(range(H)):
        raise ValueError(f"perm: expected a permutation of 0..{H - 1}, got {perm!r}")
    return _rebuild(model, [model.heads[i] for i in perm])


def mixed(model: NumericModel, *, seed=None, steps: int = 3) -> NumericModel:
    """A random composition of ``steps`` constructions; always different as parameters.

    Examples
    --------
    >>> from collections import namedtuple
    >>> Head = namedtuple("Head", "W v")
    >>> class Model(namedtuple("Model", "heads d")):
    ...     def __new__(cls, heads, d):
    ...         return super().__new__(cls, tuple(Head(*h) for h in heads), d)
    >>> m = Model([(((1, 0), (0, 1)), (1, 2))], d=2)
    >>> mixed(m, seed=4) != m
    True
    """
    rng = _rng(seed)
    out = model
    for _ in range(max(1, steps)):
        choices = ["zero"] + (["split"] if out.heads else []) + (["permute"] if _distinct_heads(out) >= 2 else [])
        kind = rng.choice(choices)
        s = rng.randrange(2**31)
        out = split_v(out, seed=s) if kind == "split" else add_zero_head(out, seed=s) if kind == "zero" else permute_heads(out, seed=s)
    return out if out != model else add_zero_head(out, seed=rng.randrange(2**31))


def construct(model: NumericModel, kind: str, *, seed=None) -> NumericModel:
    """Apply the construction ``kind`` (one of :data:`KINDS`)."""
    refuse_biases(model)
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
