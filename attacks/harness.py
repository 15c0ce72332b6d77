"""Shared helpers for the FFN attacks: true breakpoints along a segment, planted families."""
from fractions import Fraction

from flint import fmpq

from exact.ffn import ReLUFFN


def true_breakpoints(net: ReLUFFN, P, D):
    """Breakpoints of t -> net(P + tD) on (0, 1), exactly (fmpq), with their slope jumps."""
    jumps = {}
    for a, w in zip(net.A, net.w):
        if not w or not any(a):
            continue
        aP = sum(Fraction(x) * y for x, y in zip(a, P))
        aD = sum(Fraction(x) * y for x, y in zip(a, D))
        if aD == 0:
            continue
        t = -aP / aD
        if 0 < t < 1:
            jumps[t] = jumps.get(t, Fraction(0)) + w * abs(aD)
    return sorted(fmpq(t.numerator, t.denominator) for t, j in jumps.items() if j)


def seg_fn(net: ReLUFFN, P, D):
    A = [[fmpq(x.numerator, x.denominator) for x in row] for row in net.A]
    w = [fmpq(x.numerator, x.denominator) for x in net.w]
    Pq = [fmpq(x) for x in P]
    Dq = [fmpq(x) for x in D]

    def g(t):
        x = [p + t * q for p, q in zip(Pq, Dq)]
        tot = fmpq(0)
        for row, wj in zip(A, w):
            z = sum((r * xi for r, xi in zip(row, x) if r), fmpq(0))
            if z > 0:
                tot += wj * z
        return tot
    return g


def vec(rng, d, lo=-5, hi=5):
    while True:
        v = [int(x) for x in rng.integers(lo, hi + 1, size=d)]
        if any(v):
            return v


def planted(rng, d, max_units=8):
    """Random network with planted tents, cancelled/merged pairs, duplicates (like tests/test_ffn_hidden.py,
    with a wider range of widths and more kinds)."""
    units, weights, kinds = [], [], []
    for _ in range(int(rng.integers(1, 4))):
        kind = str(rng.choice(["tent", "cancelled", "merged", "duplicate", "plain", "wtent", "near3"]))
        e = Fraction(1, 2 ** int(rng.choice([1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 30, 31, 32, 33, 34, 36, 40, 60])))
        c = Fraction(int(rng.integers(1, 4)) * (1 if rng.integers(2) else -1))
        room = max_units - len(units)
        if kind == "tent" and room >= 3:
            t, s = vec(rng, d), vec(rng, d)
            units += [[a + e * b for a, b in zip(t, s)], t, [a - e * b for a, b in zip(t, s)]]
            weights += [c, -2 * c, c]
        elif kind == "wtent" and room >= 3:  # asymmetric tent: n1 = t + e s, n3 = t - f s, weights make sum 0
            t, s = vec(rng, d), vec(rng, d)
            f = e * int(rng.integers(1, 4))
            # c1 (t+es) + c2 t + c3 (t-fs) = 0 -> c1 e = c3 f, c2 = -(c1 + c3)
            c1 = c * f
            c3 = c * e
            units += [[a + e * b for a, b in zip(t, s)], t, [a - f * b for a, b in zip(t, s)]]
            weights += [c1, -(c1 + c3), c3]
        elif kind == "cancelled" and room >= 2:
            a = vec(rng, d)
            units += [a, [-x for x in a]]
            weights += [c, -c]
        elif kind == "merged" and room >= 2:
            a, b = vec(rng, d), vec(rng, d)
            units += [a, [x + e * y for x, y in zip(a, b)]]
            weights += [c, Fraction(int(rng.integers(1, 4)))]
        elif kind == "near3" and room >= 3:
            a, b, b2 = vec(rng, d), vec(rng, d), vec(rng, d)
            units += [a, [x + e * y for x, y in zip(a, b)], [x + e * y for x, y in zip(a, b2)]]
            weights += [c, Fraction(int(rng.integers(1, 4))), -c]
        elif kind == "duplicate" and room >= 2:
            a = vec(rng, d)
            units += [a, [2 * x for x in a]]
            weights += [c, c]
        else:
            continue
        kinds.append(kind)
    while len(units) < max_units and rng.integers(3):
        units.append(vec(rng, d))
        weights.append(Fraction(int(rng.integers(1, 5)), int(rng.integers(1, 4))))
    if not units:
        units, weights = [vec(rng, d)], [Fraction(1)]
    return ReLUFFN(units, weights), kinds


def units_of(net: ReLUFFN) -> int:
    return sum(1 for a, w in zip(net.A, net.w) if w and any(a))
