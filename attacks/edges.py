from fractions import Fraction
import numpy as np
from exact import ExactOracle
from exact.errors import ExactAttentionError
from exact.ffn import ReLUFFN
from exact.learn import learn_ffn
from exact.learn.ffn import HIDDEN_UNITS, _path, OFF_PATH_CHECKS, _CHECK_BITS

def show(name, net, m, seed=0, **kw):
    try:
        r = learn_ffn(ExactOracle(net), m=m, seed=seed, checks=0, **kw)
        print(f"{name:28s} m={m} right={r.model.function_form() == net.function_form()} "
              f"seen={HIDDEN_UNITS not in r.assumptions} ident={r.details['identifiable']} q={r.queries} "
              f"cert={r.certificate.check().holds}")
    except ExactAttentionError as e:
        print(f"{name:28s} m={m} {type(e).__name__}: {str(e)[:110]}")

show("zero row + unit", ReLUFFN([[0, 0, 0], [1, 2, 3]], [5, 1]), 1)
show("w=0 unit + unit", ReLUFFN([[4, 4, 1], [1, 2, 3]], [0, 1]), 1)
show("zero net m=0", ReLUFFN([[0, 0]], [0]), 0)
show("zero net m=2", ReLUFFN([[0, 0]], [0]), 2)
show("d=1 one unit", ReLUFFN([[3]], [2]), 1)
show("d=1 antipodal m=2", ReLUFFN([[3], [-2]], [1, 1]), 2)
show("d=1 cancelled m=2", ReLUFFN([[3], [-3]], [1, -1]), 2)
show("d=1 cancelled m=0", ReLUFFN([[3], [-3]], [1, -1]), 0)
show("d=2 m>d", ReLUFFN([[1, 0], [0, 1], [1, 1], [1, -1], [2, 1]], [1, -1, 2, 1, -3]), 5)
show("d=2 tent", ReLUFFN([[1, Fraction(1, 2**40)], [1, 0], [1, -Fraction(1, 2**40)], [0, 1]], [1, -2, 1, 1]), 4)
show("huge", ReLUFFN([[2**300, 1, 3], [1, -2**-300 if False else Fraction(1, 2**300), 7]], [Fraction(1, 2**200), 2**100]), 2)
show("tiny w", ReLUFFN([[1, 2, 3], [3, -1, 2]], [Fraction(1, 2**500), 1]), 2)
show("near parallel 2^-31", ReLUFFN([[1, 0, 0], [1, Fraction(1, 2**31), 0], [0, 0, 1]], [1, 1, 1]), 3)
show("near parallel 2^-20", ReLUFFN([[1, 0, 0], [1, Fraction(1, 2**20), 0], [0, 0, 1]], [1, 1, 1]), 3)

# a hyperplane through the check path's p' and one through its corner q' (seed chosen: the check path is
# predictable when the first search path succeeds)
def check_path_of(seed, d):
    rng = np.random.default_rng(seed)
    _path(rng, d)
    for _ in range(OFF_PATH_CHECKS):
        rng.integers(-(1 << 20), (1 << 20) + 1, size=d)
    for _ in range(max(d - 2, 0)):
        rng.integers(1, 257)
    R = 1 << _CHECK_BITS
    p = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
    q = [int(x) for x in rng.integers(-R, R, size=d, endpoint=True)]
    return p, q

d = 3
for seed in range(3):
    p2, q2 = check_path_of(seed, d)
    n_p = [p2[1], -p2[0], 0]          # through p'
    n_q = [0, q2[2], -q2[1]]          # through q'
    n_pq = [int(x) for x in np.cross(np.array(p2, dtype=object), np.array(q2, dtype=object))]
    show(f"through p' seed {seed}", ReLUFFN([n_p, [1, 2, 3], [3, -1, 1]], [1, 1, -2]), 3, seed)
    show(f"through q' seed {seed}", ReLUFFN([n_q, [1, 2, 3], [3, -1, 1]], [1, 1, -2]), 3, seed)
    show(f"contains p',q' seed {seed}", ReLUFFN([n_pq, [1, 2, 3], [3, -1, 1]], [1, 1, -2]), 3, seed)
