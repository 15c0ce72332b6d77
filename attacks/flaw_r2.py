"""R2's 'determined points': a run of length 1 next to another run two samples away.

Two continuous piecewise-linear functions with exactly count = 2 breakpoints fit the
same samples, with different breakpoints: proved_breakpoints returns positions
for one of them.
"""
from flint import fmpq
from exact.learn.ffn_count import proved_breakpoints

def h(t):  # 0 up to 5/2, slope 1 up to 7/2, then flat: breakpoints 5/2, 7/2
    t = fmpq(t)
    if t <= fmpq(5, 2):
        return fmpq(0)
    if t <= fmpq(7, 2):
        return t - fmpq(5, 2)
    return fmpq(1)

def k(t):  # 0 up to 2, slope 1/2 up to 4, then flat: breakpoints 2, 4
    t = fmpq(t)
    return min(max((t - 2) / 2, fmpq(0)), fmpq(1))

ts = [fmpq(i) for i in range(8)]
assert [h(t) for t in ts] == [k(t) for t in ts]
print([str(h(t)) for t in ts])
print(proved_breakpoints([(t, h(t)) for t in ts]))   # count 2, positions (2, 4): h's are 5/2, 7/2
