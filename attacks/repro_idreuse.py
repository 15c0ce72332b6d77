"""scan_segment's chord table is keyed by id(line); a freed chord's id is reused by a new Line,
which then inherits the old chord's failure count and repair.  On this piecewise-linear function
(a nested pencil: kinks 1, -3, -4, -3, 1 around 40/97) the scan fails ('an interval shrank below
2^-256') unless every Line is kept alive, in which case it finds the five breakpoints."""
import gc

from flint import fmpq

from exact.learn import ffn_path
from exact.learn.ffn_path import PathRetry, scan_segment

BPS = [(fmpq(5242783, 12713984), 1), (fmpq(21474836383, 52076478464), -3), (fmpq(40, 97), -4),
       (fmpq(21474836577, 52076478464), -3), (fmpq(5242977, 12713984), 1)]


def f(t):
    return sum((k * (t - b) for b, k in BPS if t > b), fmpq(0))


def scan(keep_alive: bool):
    orig = ffn_path.Line.through.__func__
    kept = []
    if keep_alive:
        ffn_path.Line.through = classmethod(lambda cls, *a: kept.append(orig(cls, *a)) or kept[-1])
    try:
        s = scan_segment(lambda ts: [f(t) for t in ts], max_breakpoints=64)
        return "found", [str(b.t) for b in s.breakpoints], s.queries
    except PathRetry as e:
        return "PathRetry", str(e)
    finally:
        ffn_path.Line.through = classmethod(orig)


if __name__ == "__main__":
    gc.collect()
    print("plain:     ", scan(False))
    print("keep alive:", scan(True))
    print("plain:     ", scan(False))


def nondeterminism(trials: int = 12):
    """The same scan, in different memory states (a few objects allocated and freed first)."""
    outcomes = []
    for n in range(trials):
        junk = [object() for _ in range(n * 7)]  # shifts which addresses are free
        del junk[::2]
        outcomes.append(scan(False)[0])
    return outcomes
