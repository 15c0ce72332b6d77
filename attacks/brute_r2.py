"""Brute force over small configurations: samples at 0..n, breakpoints at quarter points, small kinks.
Every case where proved_breakpoints reports count == the truth's breakpoints and determined positions
that are not the truth's, classified by whether it is two runs of length 1 two samples apart."""
import itertools
from collections import Counter

from flint import fmpq

from exact.learn.ffn_count import proved_breakpoints
from pattern_freq import risky

import sys
n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
NB = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 2, 3]
KS = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else [-2, -1, 1, 2]
ts = [fmpq(i) for i in range(n + 1)]
cands = [fmpq(k, 4) for k in range(1, 4 * n)]
kinds = Counter()
for nb in NB:
    for bps in itertools.combinations(cands, nb):
        for ks in itertools.product(KS, repeat=nb):
            def h(t):
                return sum((k * (t - b) for b, k in zip(bps, ks) if t > b), fmpq(0))
            S = [(t, h(t)) for t in ts]
            pb = proved_breakpoints(S)
            if pb.count == nb and pb.positions is not None and list(pb.positions) != list(bps):
                kinds["two runs of 1 two apart" if risky(S) else "OTHER"] += 1
                if not risky(S) and kinds["OTHER"] <= 3:
                    print("OTHER", [str(b) for b in bps], ks, pb)
print(dict(kinds))
