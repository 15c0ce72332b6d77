"""R2's flaw on the scan's own samples.  Scan f (breakpoints at two dyadic samples the scan asks,
3/4 among them), find two isolated changes two samples apart, and move those two breakpoints into the
gaps beside the middle sample, keeping every sampled value: f2 agrees with f at every point the scan
asks, so the scan asks exactly the same points of f2, and proved_breakpoints reports f's breakpoints
as determined, with count equal to f2's number of breakpoints."""
from flint import fmpq

from exact.learn.ffn_count import proved_breakpoints
from exact.learn.ffn_path import scan_segment
from pattern_freq import risky

F = [(fmpq(3758096381, 17179869184), fmpq(-4)), (fmpq(5, 8), fmpq(-4)), (fmpq(171798691841, 274877906944), fmpq(-3)),
     (fmpq(85899345921, 137438953472), fmpq(3))]


def pl(items):
    items = sorted(items)

    def f(t):
        return sum((k * (t - b) for b, k in items if t > b), fmpq(0))
    return f


def scan(f):
    seen = []

    def h(ts):
        v = [f(t) for t in ts]
        seen.extend(zip(ts, v))
        return v
    scan_segment(h, max_breakpoints=64)
    return seen


def moved(items, samples):
    """f with the breakpoints at samples s1 = t_i and s2 = t_{i+2} moved into (s1, y) and (y, s2)."""
    pts = dict(samples)
    ts = sorted(pts)
    f = pl(items)
    for i, j in risky(samples):
        s1, y, s2 = ts[i], ts[i + 1], ts[j]
        k1 = next(k for b, k in items if b == s1)
        k2 = next(k for b, k in items if b == s2)
        rest = [(b, k) for b, k in items if b not in (s1, s2)]
        # L_a: f's line left of s1; L_b: f's line right of s2
        sa = (f(s1) - f(ts[i - 1])) / (s1 - ts[i - 1])
        sb = (f(ts[j + 1]) - f(s2)) / (ts[j + 1] - s2)
        for num in range(1, 64):
            u1 = s1 + (y - s1) * fmpq(num, 64)
            la = f(s1) + sa * (u1 - s1)
            m = (f(y) - la) / (y - u1)
            if m == sb:
                continue
            # la + m (u2 - u1) = f(s2) + sb (u2 - s2)
            u2 = (f(s2) - sb * s2 - la + m * u1) / (m - sb)
            if y < u2 < s2:
                # kinks: at u1 slope sa -> m, at u2 m -> sb
                return rest + [(u1, m - sa), (u2, sb - m)], (s1, s2), (u1, u2), (k1, k2)
    return None


if __name__ == "__main__":
    S = scan(pl(F))
    print("risky pairs in the scan of f:", risky(S))
    out = moved(F, S)
    assert out is not None
    F2, old, new, _ = out
    f2 = pl(F2)
    S2 = scan(f2)
    assert [t for t, _ in S2] == [t for t, _ in S] and all(f2(t) == y for t, y in S)
    pb = proved_breakpoints(S2)
    truth = sorted(b for b, k in F2 if k)
    print("f2's breakpoints:", [str(t) for t in truth])
    print("proved:", pb.count, [str(t) for t in pb.positions] if pb.positions else pb.positions)
    print("moved", [str(t) for t in old], "->", [str(t) for t in new])
