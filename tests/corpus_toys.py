"""Toy third-party learners for the corpus plugin's tests (Theorem 4.1 only).

``learn`` uses nothing but the documented oracle interface (``oracle.d``, ``oracle.query``,
``answer.decimal``, ``answer.rational``), mpmath and the standard library, as a learner
written outside this package would: v from d one-token queries, then each W_ij from one
two-token logit query [e_j + u; e_j], inverted with σ⁻¹ at as many digits as it takes and
read back as the simplest nearby fraction.  ``learn_off_by_1e30`` adds 1e-30 to W[0][0].

The others misbehave on purpose, each in one way: they skip, xfail, fail, exit, interrupt,
end their process, sleep, ask malformed queries, or look for the model through every object
reachable from the oracle and pad the count (``learn_reads_the_model``).
"""

import collections
import gc
import os
import sys
import time
import types
from fractions import Fraction

import mpmath

NOT_A_LEARNER = "a string, not callable"


def _unit(d, i, scale=1):
    return [Fraction(scale) if t == i else Fraction(0) for t in range(d)]


def _logit(oracle, v, i, j, p):
    """u_iᵀ W e_j for u = e_i (v_i ≠ 0) or u = e_i + e_p (v_p ≠ 0), as a fraction."""
    d = oracle.d
    u = _unit(d, i) if v[i] != 0 or i == p else [a + b for a, b in zip(_unit(d, i), _unit(d, p))]
    vu = sum(a * b for a, b in zip(v, u))
    b = _unit(d, j)
    answer = oracle.query([[x + y for x, y in zip(b, u)], b])
    digits = 60
    while True:
        with mpmath.workdps(digits + 10):
            ratio = (mpmath.mpf(answer.decimal(digits)) - mpmath.mpf(v[j].numerator) / v[j].denominator) / (
                mpmath.mpf(vu.numerator) / vu.denominator)
            if mpmath.mpf(10) ** (20 - digits) < ratio < 1 - mpmath.mpf(10) ** (20 - digits):
                t = mpmath.log(ratio / (1 - ratio))
                return Fraction(mpmath.nstr(t, digits - 20)).limit_denominator(10**12)
        digits *= 4


def learn(oracle, *, theorem, hints):
    if theorem != "4.1":
        raise NotImplementedError(f"this toy learns single heads only, not {theorem}")
    d = oracle.d
    v = [oracle.query([_unit(d, i)]).rational() for i in range(d)]
    p = next(i for i in range(d) if v[i] != 0)
    W = [[None] * d for _ in range(d)]
    for j in range(d):
        W[p][j] = _logit(oracle, v, p, j, p)
        for i in range(d):
            if i != p:
                s = _logit(oracle, v, i, j, p)
                W[i][j] = s if v[i] != 0 else s - W[p][j]
    return {"W": [[str(x) for x in row] for row in W], "v": [str(x) for x in v]}


def learn_off_by_1e30(oracle, *, theorem, hints):
    out = learn(oracle, theorem=theorem, hints=hints)
    out["W"][0][0] = str(Fraction(out["W"][0][0]) + Fraction(1, 10**30))
    return out


def learn_skips_or_xfails(oracle, *, theorem, hints):
    """Asks one query, then calls pytest.skip (odd d) or pytest.xfail (even d)."""
    import pytest

    _record_pid()
    oracle.query([[1] * oracle.d])
    if oracle.d % 2:
        pytest.skip("not today")
    pytest.xfail("known to be hard")


def learn_xfails_directly(oracle, *, theorem, hints):
    import pytest

    pytest.xfail("known to be hard")


def learn_lists_attributes(oracle, *, theorem, hints):
    raise RuntimeError(f"public attributes {[a for a in dir(oracle) if not a.startswith('_')]}")


def learn_resets_its_count(oracle, *, theorem, hints):
    """Asks 3 queries more than the theorem's count and resets the proxy's own count: the host's counts all."""
    oracle.query_batch([[[1] * oracle.d]] * 3)
    oracle._count = 0
    return learn(oracle, theorem=theorem, hints=hints)


def learn_fails(oracle, *, theorem, hints):
    import pytest

    pytest.fail("gave up")


def learn_pytest_exits(oracle, *, theorem, hints):
    import pytest

    pytest.exit("stop the run")


class Abort(BaseException):
    """Not an Exception: what a learner might raise to get out of everything."""


def learn_raises_a_base_exception(oracle, *, theorem, hints):
    raise Abort("out")


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


def learn_raises_the_unprintable(oracle, *, theorem, hints):
    raise Unprintable()


def learn_sys_exits(oracle, *, theorem, hints):
    sys.exit(3)


def learn_interrupts(oracle, *, theorem, hints):
    _record_pid()
    raise KeyboardInterrupt("from the learner")


def learn_ends_its_process(oracle, *, theorem, hints):
    """Ends its process on d = 2 (the next instance gets a fresh one), learns the others."""
    if oracle.d == 2:
        os._exit(7)
    return learn(oracle, theorem=theorem, hints=hints)


def learn_prints(oracle, *, theorem, hints):
    print(f"stdout of the learner, d = {oracle.d}")
    os.write(2, b"fd 2 of the learner\n")
    out = learn(oracle, theorem=theorem, hints=hints)
    out["v"][0] = str(Fraction(out["v"][0]) + 1)  # fails, so the output is shown
    return out


def _record_pid(pid=None):
    path = os.environ.get("CORPUS_TOYS_PID_FILE")
    if path:
        with open(path, "a") as fh:
            fh.write(f"{os.getpid() if pid is None else pid}\n")


def _start_a_sleeper():
    """A process of the learner's own that would sleep a minute."""
    import subprocess

    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]).pid


def learn_records_its_pid(oracle, *, theorem, hints):
    _record_pid()
    return learn(oracle, theorem=theorem, hints=hints)


def learn_leaves_a_process(oracle, *, theorem, hints):
    _record_pid(_start_a_sleeper())
    return learn(oracle, theorem=theorem, hints=hints)


def learn_sleeps(oracle, *, theorem, hints):
    """Records its pid and a sleeping process's of its own, then sleeps."""
    sleeper = _start_a_sleeper()
    _record_pid(sleeper)
    _record_pid()
    for _ in range(600):
        time.sleep(0.1)
    raise RuntimeError("slept a minute")


def learn_with_malformed_queries(oracle, *, theorem, hints):
    """Asks malformed queries first (each refused, none answered); then learns."""
    d = oracle.d
    refused = 0
    for bad in ([[1] * (d + 1)], [], [["nan"] * d], "abc", [[1] * d, [2] * (d + 2)]):
        try:
            oracle.query(bad)
        except (ValueError, TypeError) as e:  # exact's ShapeError and InvalidNumber are ValueErrors
            refused += 1
            assert type(e).__name__ in ("ShapeError", "InvalidNumber"), type(e)
    try:
        oracle.query_batch([[[1] * d], [[1] * (d + 1)]])  # one good, one bad: nothing answered
    except ValueError:
        refused += 1
    for raw in ([[[[d, 1, 1]]]], [[[["0", 1, 1]]]], [[[[0, 1, 0]]]], [[[[0, True, 1]]]], [[[[1, 1, 1], [0, 1, 1]]]],
                [[[[0, 0, 1]]]], [[]], "X"):
        try:  # past the proxy's own check, straight onto the pipe: the host refuses them too
            oracle._ask(raw)
        except ValueError:
            refused += 1
    assert refused == 14 and oracle.count == 0, (refused, oracle.count)
    return learn(oracle, theorem=theorem, hints=hints)


def reachable(root, *, until=None, limit=5_000_000):
    """The objects reachable from ``root``, breadth first: referents (gc), closures' cells, bound
    methods' ``__self__`` and ``__func__``, instances' ``__dict__`` and slots; the walk stops at the
    first object for which ``until`` holds.  Returns (objects seen, sys.modules among them, the object found).

    Objects are inspected through ``type()`` and ``object.__getattribute__`` only, so that no
    object's own code (a property, a ``__class__``, a module's ``__getattr__``) runs.
    """
    seen = {id(root): root}
    todo = collections.deque([root])  # breadth first: the nearest objects are found first
    while todo and len(seen) < limit:
        o = todo.popleft()
        if until is not None and until(o):
            return list(seen.values()), any(x is sys.modules for x in seen.values()), o
        kind = type(o)
        nxt = list(gc.get_referents(o))
        if kind is types.FunctionType:
            nxt += [c.cell_contents for c in o.__closure__ or () if _has_contents(c)]
        if kind in (types.MethodType, types.BuiltinMethodType):
            nxt.append(o.__self__)
        if kind is types.MethodType:
            nxt.append(o.__func__)
        if not issubclass(kind, type):
            try:
                nxt.append(object.__getattribute__(o, "__dict__"))
            except Exception:
                pass
            for klass in kind.__mro__:
                slots = klass.__dict__.get("__slots__", ())
                for name in (slots,) if type(slots) is str else slots:
                    try:
                        nxt.append(object.__getattribute__(o, name))
                    except Exception:
                        pass
        for x in nxt:
            if id(x) not in seen:
                seen[id(x)] = x
                todo.append(x)
    return list(seen.values()), any(x is sys.modules for x in seen.values()), None


def _has_contents(cell):
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _head_like(o, d):
    """Whether ``o`` holds a single head of dimension d: ``W`` (d rows of d Fractions) and ``v`` in its ``__dict__``."""
    try:
        attrs = object.__getattribute__(o, "__dict__")
    except Exception:
        return False
    if type(attrs) is not dict:
        return False
    W, v = attrs.get("W"), attrs.get("v")
    return type(W) in (tuple, list) and type(v) in (tuple, list) and len(v) == d and len(W) == d and \
        all(type(r) in (tuple, list) and len(r) == d and all(type(x) is Fraction for x in r) for r in W)


_MODEL_TYPES = {"SingleHead", "MultiHead", "ReLUFFN", "Transformer", "ExactOracle", "CorpusInstance", "Corpus"}


def _model_object(o, d):
    """Whether ``o`` is, or holds, a model: a single head of dimension d (any type with W and v), or one of
    the package's model, oracle or corpus types."""
    kind = type(o)
    return _head_like(o, d) or (kind.__name__ in _MODEL_TYPES and kind.__module__.startswith("exact."))


def learn_reads_the_model(oracle, *, theorem, hints):
    """Dishonest: finds a single head among the objects reachable from the oracle, returns its
    parameters and pads the queries to exactly d² + d."""
    if theorem != "4.1":
        raise NotImplementedError("this cheat reads single heads only")
    d = oracle.d
    objects, modules, model = reachable(oracle, until=lambda o: _head_like(o, d))
    if model is None:
        found = [o for o in objects if _model_object(o, d)]
        raise LookupError(f"no model among the {len(objects)} objects reachable from the oracle "
                          f"(sys.modules {'among them' if modules else 'not reached'}; {len(found)} model, oracle "
                          "or corpus objects)")
    while oracle.count < d * d + d:
        oracle.query([[0] * d])
    return {"W": [list(r) for r in model.W], "v": list(model.v)}
