"""Write the regression corpus: models, queries and exact answers, computed without the library.

This module is deliberately independent of the library whose learners the corpus tests.
It imports only the Python standard library and mpmath (a test checks that), draws every
model with ``random.Random`` from a master seed, computes scores and token values exactly
with ``fractions.Fraction`` and evaluates the answers with mpmath.  Run it as

    exact-attention corpus export DIR            # or
    python -m exact.corpus.generate DIR [--seed S] [--size quick|standard]

Files
-----
``manifest.json``
    ``{"format": "exact-attention-corpus", "version": 1, "generator": {...},
    "theorems": {THEOREM: {"file", "instances", "count", "count_rule", "returns", "hints"}}}``.
``<theorem>.json`` for the theorems ``4.1`` (single head), ``5.1`` (low rank), ``kkg``
(multi-head canonical form), ``ffn`` (bias-free ReLU network) and ``transformer``
    ``{"theorem", "instances": [{"name", "kind", "d", "hints", "model", "queries"}]}``.

Every number is an exact rational written ``"p/q"`` (or ``"p"``).  A model is

* ``4.1``, ``5.1``: ``{"W": d×d, "v": d}``;
* ``kkg``: ``{"heads": [{"W", "v"}, ...], "canonical": [{"W", "v"}, ...]}``, the canonical
  form computed here (heads grouped by equal W, their v summed, zero sums dropped);
* ``ffn``: ``{"A": m×d, "w": m}``, g(x) = wᵀReLU(Ax) on a single token x;
* ``transformer``: ``{"W": d×d, "A": m×d, "w": m}``, T(X) = wᵀReLU(A Σ_i α_i x_i).

Each query is ``{"X": N×d, "decimal": 50 significant digits, "exact": FORM}`` where FORM
states the answer exactly:

* ``{"form": "softmax-sum", "heads": [{"s": [...], "u": [...]}]}``: the answer is
  Σ_heads Σ_i e^{s_i} u_i / Σ_i e^{s_i}, with the scores s_i = x_iᵀ W x_N and token values
  u_i = vᵀx_i as exact rationals;
* ``{"form": "rational", "value": "p/q"}`` (a ReLU network's answer is rational);
* ``{"form": "relu-of-attention", "s": [...]}``: wᵀReLU(A Σ_i α_i x_i) with α = softmax(s).

The decimals are computed at 80 digits and cross-checked against an evaluation without the
max-shift at 120 digits; the two must agree to 60 significant digits.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import struct
import sys
from fractions import Fraction

import mpmath

__all__ = ["build", "write", "main", "THEOREMS", "MASTER_SEED", "DIGITS"]

FORMAT = "exact-attention-corpus"
VERSION = 1
MASTER_SEED = 20261201
DIGITS = 50
DPS = 80
CHECK_DPS = 120
THEOREMS = ("4.1", "5.1", "kkg", "ffn", "transformer")

COUNTS = {
    "4.1": ("d^2 + d", "exact"),
    "5.1": ("2*r*d - r^2 + d", "exact"),
    "kkg": ("4*H*d^2 - 2*H + 1", "exact"),
    "ffn": ("(m + 1)*(d - 2) + 10*m + 32", "at most"),
    "transformer": ("(m + 1)*(d - 2) + 10*m + 32 + 2*(d^2 + d)", "at most"),
}
RETURNS = {
    "4.1": '{"W": d x d, "v": d}',
    "5.1": '{"W": d x d, "v": d}',
    "kkg": '{"heads": [{"W": d x d, "v": d}, ...]} (compared as canonical forms)',
    "ffn": '{"A": m x d, "w": m} (compared as functions: canonical function forms)',
    "transformer": '{"W": d x d, "A": m x d, "w": m} (W exactly, the network as a function)',
}
HINTS = {"4.1": [], "5.1": ["rank"], "kkg": ["heads"], "ffn": ["m"], "transformer": ["m"]}


# -- exact helpers ---------------------------------------------------------------------------

def _q(x) -> str:
    return str(Fraction(x))


def _rat(rng, pmax=9, qmax=7, nonzero=False) -> Fraction:
    while True:
        x = Fraction(rng.randint(-pmax, pmax), rng.randint(1, qmax))
        if x or not nonzero:
            return x


def _dot(a, b) -> Fraction:
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def _matvec(M, x) -> list:
    return [_dot(row, x) for row in M]


def _rank(M) -> int:
    """Rank over ℚ by Gaussian elimination."""
    rows = [list(r) for r in M]
    rank, cols = 0, len(rows[0]) if rows else 0
    for c in range(cols):
        pivot = next((i for i in range(rank, len(rows)) if rows[i][c] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for i in range(len(rows)):
            if i != rank and rows[i][c] != 0:
                f = rows[i][c] / rows[rank][c]
                rows[i] = [a - f * b for a, b in zip(rows[i], rows[rank])]
        rank += 1
    return rank


def _float32(rng) -> Fraction:
    return Fraction(struct.unpack("f", struct.pack("f", rng.gauss(0.0, 1.0)))[0])


def _mpf(q: Fraction):
    return mpmath.mpf(q.numerator) / q.denominator


# -- evaluation -------------------------------------------------------------------------------

def _scores(W, v, X):
    q = _matvec(W, X[-1])
    return [_dot(x, q) for x in X], [_dot(v, x) for x in X]


def _softmax_sum(terms, shift: bool):
    total = mpmath.mpf(0)
    for s, u in terms:
        m = max(s) if shift else Fraction(0)
        e = [mpmath.exp(_mpf(si - m)) for si in s]
        total += mpmath.fsum(ei * _mpf(ui) for ei, ui in zip(e, u)) / mpmath.fsum(e)
    return total


def _relu_attention(s, X, A, w, shift: bool):
    m = max(s) if shift else Fraction(0)
    e = [mpmath.exp(_mpf(si - m)) for si in s]
    z = mpmath.fsum(e)
    h = [mpmath.fsum(ei * _mpf(x[j]) for ei, x in zip(e, X)) / z for j in range(len(X[0]))]
    pre = [mpmath.fsum(_mpf(a) * hj for a, hj in zip(row, h)) for row in A]
    return mpmath.fsum(_mpf(wj) * max(p, 0) for wj, p in zip(w, pre))


def _answer(theorem: str, model: dict, X):
    """(exact form, 50-digit decimal) of the model's answer to X, cross-checked."""
    if theorem == "ffn":
        x = X[-1]
        value = _dot(model["w"], [max(p, Fraction(0)) for p in _matvec(model["A"], x)])
        with mpmath.workdps(DPS):
            return {"form": "rational", "value": _q(value)}, mpmath.nstr(_mpf(value), DIGITS, strip_zeros=False)
    if theorem == "transformer":
        s, _ = _scores(model["W"], [Fraction(0)] * len(X[0]), X)
        with mpmath.workdps(DPS):
            value = _relu_attention(s, X, model["A"], model["w"], True)
        with mpmath.workdps(CHECK_DPS):
            check = _relu_attention(s, X, model["A"], model["w"], False)
        form: dict = {"form": "relu-of-attention", "s": [_q(x) for x in s]}
    else:
        heads = model["heads"] if theorem == "kkg" else [model]
        terms = [_scores(h["W"], h["v"], X) for h in heads]
        with mpmath.workdps(DPS):
            value = _softmax_sum(terms, True)
        with mpmath.workdps(CHECK_DPS):
            check = _softmax_sum(terms, False)
        form = {"form": "softmax-sum", "heads": [{"s": [_q(x) for x in s], "u": [_q(x) for x in u]} for s, u in terms]}
    with mpmath.workdps(CHECK_DPS):
        if abs(value - check) > mpmath.mpf(10) ** -60 * max(abs(check), mpmath.mpf(10) ** -200):
            raise AssertionError(f"{theorem}: evaluations disagree on {X}: {value} vs {check}")
    with mpmath.workdps(DPS):
        return form, mpmath.nstr(value, DIGITS, strip_zeros=False)


# -- models -----------------------------------------------------------------------------------

def _head(rng, d, *, bound=9, rank=None, v_zeros=0, grid=None):
    if grid == "float32":
        W = [[_float32(rng) for _ in range(d)] for _ in range(d)]
        v = [_float32(rng) for _ in range(d)]
        return W, v
    if rank is None:
        W = [[_rat(rng, bound) for _ in range(d)] for _ in range(d)]
    else:
        while True:
            a = [[_rat(rng, 5, 3) for _ in range(rank)] for _ in range(d)]
            b = [[_rat(rng, 5, 3) for _ in range(d)] for _ in range(rank)]
            W = [[sum((a[i][k] * b[k][j] for k in range(rank)), Fraction(0)) for j in range(d)] for i in range(d)]
            if _rank(W) == rank:
                break
    zeros = set(rng.sample(range(d), v_zeros))
    v = [Fraction(0) if i in zeros else _rat(rng, 9, 7, nonzero=True) for i in range(d)]
    return W, v


def _canonical(heads):
    groups: dict = {}
    for W, v in heads:
        key = tuple(tuple(r) for r in W)
        total = groups.get(key, [Fraction(0)] * len(v))
        groups[key] = [a + b for a, b in zip(total, v)]
    return [(list(map(list, W)), v) for W, v in groups.items() if any(v)]


def _single_head_instances(rng, size):
    dims = (1, 2, 3) if size == "quick" else (1, 2, 3, 4, 5, 6)
    out: list = [("rational", d, {}, _head(rng, d)) for d in dims]
    out += [("v with zeros", 4, {}, _head(rng, 4, v_zeros=2)), ("rank-1 W", 4, {}, _head(rng, 4, rank=1))]
    if size != "quick":
        out += [("W = 0", 3, {}, ([[Fraction(0)] * 3 for _ in range(3)], _head(rng, 3)[1])),
                ("entries up to 1e4", 3, {}, _head(rng, 3, bound=10**4)),
                ("float32 entries", 4, {}, _head(rng, 4, grid="float32"))]
    return [(kind, d, hints, {"W": W, "v": v}) for kind, d, hints, (W, v) in out]


def _low_rank_instances(rng, size):
    shapes = ((4, 1), (6, 2)) if size == "quick" else ((4, 1), (4, 2), (6, 2), (8, 1), (8, 2), (8, 3))
    return [(f"rank {r}", d, {"rank": r}, dict(zip(("W", "v"), _head(rng, d, rank=r)))) for d, r in shapes]


def _multi_head_instances(rng, size):
    shapes = ((1, 2), (2, 2)) if size == "quick" else ((1, 2), (1, 3), (2, 2), (2, 3), (3, 2), (3, 3))
    out = []
    for d, H in shapes:
        out.append(("distinct W", d, H, [_head(rng, d, bound=3) for _ in range(H)]))
    if size != "quick":
        W, v = _head(rng, 2, bound=3)
        out.append(("two heads share W", 2, 3, [(W, v), (W, _head(rng, 2)[1]), _head(rng, 2, bound=3)]))
        out.append(("a head with v = 0", 2, 3, [_head(rng, 2, bound=3), (_head(rng, 2)[0], [Fraction(0)] * 2),
                                               _head(rng, 2, bound=3)]))
    return [(kind, d, {"heads": H}, {"heads": [{"W": W, "v": v} for W, v in heads],
                                     "canonical": [{"W": W, "v": v} for W, v in _canonical(heads)]})
            for kind, d, H, heads in out]


def _relu_layer(rng, d, m):
    while True:
        A = [[Fraction(rng.randint(-4, 4)) for _ in range(d)] for _ in range(m)]
        if all(any(row) for row in A) and len({tuple(r) for r in A}) == m:
            return A, [_rat(rng, 5, 3, nonzero=True) for _ in range(m)]


def _ffn_instances(rng, size):
    shapes = ((3, 3), (4, 4)) if size == "quick" else ((3, 3), (4, 4), (4, 6), (6, 4), (5, 8))
    return [("random", d, {"m": m}, dict(zip(("A", "w"), _relu_layer(rng, d, m)))) for d, m in shapes]


def _transformer_instances(rng, size):
    shapes = ((3, 3),) if size == "quick" else ((3, 3), (4, 4), (4, 2))
    out = []
    for d, m in shapes:
        while True:
            A, w = _relu_layer(rng, d, m)
            if any(_dot([A[j][i] for j in range(m)], w) for i in range(d)):  # Aᵀw ≠ 0
                break
        W = [[_rat(rng, 3, 4) for _ in range(d)] for _ in range(d)]
        out.append(("random", d, {"m": m}, {"W": W, "A": A, "w": w}))
    return out


_MAKERS = {"4.1": _single_head_instances, "5.1": _low_rank_instances, "kkg": _multi_head_instances,
           "ffn": _ffn_instances, "transformer": _transformer_instances}


def _json_model(model: dict) -> dict:
    def enc(x):
        if isinstance(x, dict):
            return {k: enc(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [enc(v) for v in x]
        return _q(x)

    return enc(model)


def _queries(rng, theorem, model, d, n):
    out = []
    for k in range(n):
        N = 1 if theorem == "ffn" else 1 + k % 4
        X = [[_rat(rng, 5, 4) for _ in range(d)] for _ in range(N)]
        form, decimal = _answer(theorem, model, X)
        out.append({"X": [[_q(x) for x in row] for row in X], "decimal": decimal, "exact": form})
    return out


def build(*, seed: int = MASTER_SEED, size: str = "standard") -> dict:
    """The corpus as ``{file name: JSON document}``; deterministic for a seed and size."""
    if size not in ("quick", "standard"):
        raise ValueError(f"size: expected quick or standard, got {size!r}")
    master = random.Random(seed)
    files: dict = {}
    manifest: dict = {
        "format": FORMAT, "version": VERSION,
        "generator": {"module": "exact.corpus.generate", "python": platform.python_version(),
                      "mpmath": mpmath.__version__, "dps": DPS, "check_dps": CHECK_DPS, "digits": DIGITS,
                      "seed": seed, "size": size},
        "theorems": {},
    }
    for theorem in THEOREMS:
        rng = random.Random(master.randrange(2**32))
        instances: list = []
        for kind, d, hints, model in _MAKERS[theorem](rng, size):
            name = f"{kind} d={d}" + "".join(f" {k}={v}" for k, v in hints.items())
            n = 1
            while any(i["name"] == name for i in instances):
                n += 1
                name = f"{name} #{n}"
            instances.append({"name": name, "kind": kind, "d": d, "hints": hints, "model": _json_model(model),
                              "queries": _queries(rng, theorem, model, d, 6)})
        files[f"{theorem}.json"] = {"theorem": theorem, "instances": instances}
        count, rule = COUNTS[theorem]
        manifest["theorems"][theorem] = {"file": f"{theorem}.json", "instances": len(instances), "count": count,
                                         "count_rule": rule, "returns": RETURNS[theorem], "hints": HINTS[theorem]}
    files["manifest.json"] = manifest
    return files


def write(directory, *, seed: int = MASTER_SEED, size: str = "standard") -> list[str]:
    """Write the corpus into ``directory`` (created); the paths written."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, doc in build(seed=seed, size=size).items():
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False)
            fh.write("\n")
        paths.append(path)
    return paths


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m exact.corpus.generate", description=__doc__.splitlines()[0])
    p.add_argument("directory")
    p.add_argument("--seed", type=int, default=MASTER_SEED)
    p.add_argument("--size", choices=("quick", "standard"), default="standard")
    args = p.parse_args(argv)
    for path in write(args.directory, seed=args.seed, size=args.size):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
