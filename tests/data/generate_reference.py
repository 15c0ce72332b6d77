"""Generate reference values for a single softmax-attention head.

This script produces ``tests/data/single_head_reference.json``: a set of
single-head instances (rational parameters ``W`` (d x d) and ``v`` (length d))
together with query sequences ``X`` and the value ``f(X)`` of

    s_i   = x_i^T W x_N            (i = 1..N; x_N is the query token and
                                    attends to itself too)
    alpha = softmax(s)
    f(X)  = sum_i alpha_i * (v^T x_i)

computed with mpmath at 120 significant digits and recorded with 110
significant digits.

The computation is deliberately independent of the library under test: it
uses only the Python standard library (random, fractions, json, struct,
platform, argparse) and mpmath.  The scores ``s_i`` and the token values
``v^T x_i`` are computed exactly with ``fractions.Fraction``; ``max(s)`` is
subtracted exactly before the (mpmath) exponentials are taken.

Output is deterministic for a fixed master seed (``random.Random(seed)``).

Re-run from the repository root with

    python tests/data/generate_reference.py

which (over)writes ``tests/data/single_head_reference.json``.  Use
``-o PATH`` to write elsewhere, or ``-o -`` to print the JSON to stdout.

JSON schema
-----------
{
  "generator": {"script", "python", "mpmath", "dps", "seed"},
  "instances": [
    {
      "name": str (unique), "kind": str, "d": int, "seed": int,
      "W": [[str, ...], ...]   # d rows of exact rationals "p/q" or "p"
      "v": [str, ...],         # d exact rationals
      "queries": [
        {
          "type": "one_token" | "logit_primitive" | "random",
          # one_token:        "i" (0-based), X = [e_i]
          # logit_primitive:  "k", "j" (0-based), X = [e_j + e_k; e_j]
          # random:           "N" (sequence length)
          "X": [[str, ...], ...],   # N rows (tokens) of d exact rationals
          "f": str                  # decimal string, 110 significant digits
        }, ...
      ]
    }, ...
  ]
}
"""

import argparse
import json
import os
import platform
import random
import struct
import sys
from fractions import Fraction

import mpmath

MASTER_SEED = 20240917
DPS = 120
OUT_DIGITS = 110
CHECK_DPS = 170

SCRIPT_PATH = "tests/data/generate_reference.py"
DEFAULT_OUTPUT = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "single_head_reference.json"
)


# ---------------------------------------------------------------------------
# exact helpers
# ---------------------------------------------------------------------------

def frac_str(x):
    """Exact rational as "p/q" (or "p" for integers)."""
    return str(Fraction(x))


def rand_rational(rng, pmax, qmax):
    return Fraction(rng.randint(-pmax, pmax), rng.randint(1, qmax))


def rand_nonzero_rational(rng, pmax, qmax):
    while True:
        x = rand_rational(rng, pmax, qmax)
        if x != 0:
            return x


def to_float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def rand_float32(rng):
    return Fraction(to_float32(rng.gauss(0.0, 1.0)))


def unit(d, i):
    return [Fraction(1) if t == i else Fraction(0) for t in range(d)]


def dot(a, b):
    return sum((x * y for x, y in zip(a, b)), Fraction(0))


def matvec(W, x):
    return [dot(row, x) for row in W]


# ---------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------

def scores_and_values(W, v, X):
    """Exact scores s_i = x_i^T W x_N and token values u_i = v^T x_i."""
    Wq = matvec(W, X[-1])
    s = [dot(x, Wq) for x in X]
    u = [dot(v, x) for x in X]
    return s, u


def mpf_frac(q):
    return mpmath.mpf(q.numerator) / q.denominator


def evaluate(W, v, X, dps=DPS):
    """Stable evaluation: subtract max(s) (exactly) before exp."""
    s, u = scores_and_values(W, v, X)
    m = max(s)
    with mpmath.workdps(dps):
        e = [mpmath.exp(mpf_frac(si - m)) for si in s]
        num = mpmath.fsum(ei * mpf_frac(ui) for ei, ui in zip(e, u))
        den = mpmath.fsum(e)
        return +(num / den)


def evaluate_naive(W, v, X, dps):
    """Plain evaluation without max subtraction (cross-check only)."""
    s, u = scores_and_values(W, v, X)
    with mpmath.workdps(dps):
        e = [mpmath.exp(mpf_frac(si)) for si in s]
        num = mpmath.fsum(ei * mpf_frac(ui) for ei, ui in zip(e, u))
        den = mpmath.fsum(e)
        return +(num / den)


def close(a, b, digits):
    """|a - b| <= 10^-digits * max(|a|, |b|) (exact equality for zeros)."""
    with mpmath.workdps(CHECK_DPS):
        if a == 0 or b == 0:
            return a == b
        return abs(a - b) <= mpmath.mpf(10) ** (-digits) * max(abs(a), abs(b))


# ---------------------------------------------------------------------------
# instances
# ---------------------------------------------------------------------------

def make_rational(rng, d):
    W = [[rand_rational(rng, 9, 7) for _ in range(d)] for _ in range(d)]
    v = [rand_rational(rng, 9, 7) for _ in range(d)]
    return W, v


def make_v_zeros(rng, d=4):
    W = [[rand_rational(rng, 9, 7) for _ in range(d)] for _ in range(d)]
    zero_idx = set(rng.sample(range(d), 2))
    v = [Fraction(0) if i in zero_idx else rand_nonzero_rational(rng, 9, 7)
         for i in range(d)]
    assert sum(1 for x in v if x == 0) == 2
    return W, v


def make_singular(rng, d=4):
    a = [rand_nonzero_rational(rng, 9, 7) for _ in range(d)]
    b = [rand_nonzero_rational(rng, 9, 7) for _ in range(d)]
    W = [[a[i] * b[j] for j in range(d)] for i in range(d)]
    v = [rand_rational(rng, 9, 7) for _ in range(d)]
    # rank exactly 1: nonzero, and every 2x2 minor vanishes
    assert any(W[i][j] != 0 for i in range(d) for j in range(d))
    for i in range(d):
        for k in range(d):
            for j in range(d):
                for l in range(d):
                    assert W[i][j] * W[k][l] - W[i][l] * W[k][j] == 0
    return W, v


def make_huge(rng, d=3):
    W = [[Fraction(rng.randint(-10**6, 10**6), rng.randint(1, 7))
          for _ in range(d)] for _ in range(d)]
    v = [rand_rational(rng, 9, 7) for _ in range(d)]
    return W, v


def make_float32(rng, d=4):
    W = [[rand_float32(rng) for _ in range(d)] for _ in range(d)]
    v = [rand_float32(rng) for _ in range(d)]
    for x in [y for row in W for y in row] + v:
        assert float(x) == to_float32(float(x))
        assert Fraction(float(x)) == x
    return W, v


def make_v_zero(rng, d=2):
    W = [[rand_rational(rng, 9, 7) for _ in range(d)] for _ in range(d)]
    v = [Fraction(0)] * d
    return W, v


# ---------------------------------------------------------------------------
# queries
# ---------------------------------------------------------------------------

RANDOM_LENGTHS = (1, 2, 3, 5)
NUM_LOGIT_PAIRS = 3


def make_queries(rng, d):
    qs = []
    for i in range(d):
        qs.append(({"type": "one_token", "i": i}, [unit(d, i)]))
    if d == 1:
        pairs = [(0, 0)]
    else:
        all_pairs = [(k, j) for k in range(d) for j in range(d) if k != j]
        pairs = rng.sample(all_pairs, min(NUM_LOGIT_PAIRS, len(all_pairs)))
    for k, j in pairs:
        ej, ek = unit(d, j), unit(d, k)
        X = [[a + b for a, b in zip(ej, ek)], ej]
        qs.append(({"type": "logit_primitive", "k": k, "j": j}, X))
    for N in RANDOM_LENGTHS:
        X = [[rand_rational(rng, 5, 4) for _ in range(d)] for _ in range(N)]
        qs.append(({"type": "random", "N": N}, X))
    return qs


def check_query(W, v, meta, X, value):
    d = len(v)
    # independent cross-check: naive formula at higher precision
    naive = evaluate_naive(W, v, X, CHECK_DPS)
    assert close(value, naive, OUT_DIGITS + 2), (meta, value, naive)
    if meta["type"] == "one_token":
        # softmax over a single token is 1, so f = v_i exactly
        with mpmath.workdps(DPS):
            assert value == mpf_frac(v[meta["i"]]), (meta, value)
    elif meta["type"] == "logit_primitive":
        # f([e_j + e_k; e_j]) = v_j + v_k * sigmoid(W_kj)
        k, j = meta["k"], meta["j"]
        with mpmath.workdps(CHECK_DPS):
            t = mpf_frac(W[k][j])
            expected = mpf_frac(v[j]) + mpf_frac(v[k]) / (1 + mpmath.exp(-t))
        assert close(value, expected, OUT_DIGITS + 2), (meta, value, expected)
    if all(x == 0 for x in v):
        assert value == 0
    assert all(len(row) == d for row in X)


def fmt(value):
    with mpmath.workdps(DPS):
        return mpmath.nstr(value, OUT_DIGITS)


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------

def build(seed=MASTER_SEED):
    master = random.Random(seed)
    specs = [("rational_d%d" % d, "rational", d,
              (lambda rng, d=d: make_rational(rng, d)))
             for d in (1, 2, 3, 5, 8)]
    specs += [
        ("v_zeros_d4", "v_zeros", 4, make_v_zeros),
        ("singular_d4", "singular", 4, make_singular),
        ("huge_d3", "huge", 3, make_huge),
        ("float32_d4", "float32", 4, make_float32),
        ("v_zero_d2", "v_zero", 2, make_v_zero),
    ]
    instances = []
    for name, kind, d, maker in specs:
        inst_seed = master.randrange(2**32)
        rng = random.Random(inst_seed)
        W, v = maker(rng)
        assert len(W) == d and all(len(r) == d for r in W) and len(v) == d
        queries = []
        for meta, X in make_queries(rng, d):
            value = evaluate(W, v, X)
            check_query(W, v, meta, X, value)
            q = dict(meta)
            q["X"] = [[frac_str(x) for x in row] for row in X]
            q["f"] = fmt(value)
            queries.append(q)
        instances.append({
            "name": name,
            "kind": kind,
            "d": d,
            "seed": inst_seed,
            "W": [[frac_str(x) for x in row] for row in W],
            "v": [frac_str(x) for x in v],
            "queries": queries,
        })
    names = [inst["name"] for inst in instances]
    assert len(set(names)) == len(names)
    return {
        "generator": {
            "script": SCRIPT_PATH,
            "python": platform.python_version(),
            "mpmath": mpmath.__version__,
            "dps": DPS,
            "seed": seed,
        },
        "instances": instances,
    }


def self_check(data):
    """Round-trip the serialised data and re-verify the one-token values."""
    data = json.loads(json.dumps(data))
    for inst in data["instances"]:
        v = [Fraction(x) for x in inst["v"]]
        for q in inst["queries"]:
            if q["type"] == "one_token":
                with mpmath.workdps(DPS):
                    assert mpmath.mpf(q["f"]) == mpmath.mpf(
                        mpmath.nstr(mpf_frac(v[q["i"]]), OUT_DIGITS)), q


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                        help="output path, or '-' for stdout "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=MASTER_SEED,
                        help="master seed (default: %(default)s)")
    args = parser.parse_args(argv)
    data = build(args.seed)
    self_check(data)
    text = json.dumps(data, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
