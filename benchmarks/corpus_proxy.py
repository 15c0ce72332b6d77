"""Benchmark: what answering a corpus learner from another process costs, against answering it in-process.

The corpus plugin runs the learner in a process of its own (``exact.corpus.host``); before,
the learner ran in the test process with a counting closure over the oracle.  Both are
measured here, in the same run, on three workloads:

* ``single``: a learner asking ``--queries`` one-query calls ``oracle.query(X)`` (d = 4,
  two tokens) and reading each answer's 30-digit decimal;
* ``batch``: the same queries in ``oracle.query_batch`` calls of 100;
* ``reference``: the package's own learners on every instance of the standard corpus.

A ``run`` row per (workload, mode) gives the queries, the seconds (learner call and its
answering, wall clock, the fastest of ``--repeat``) and queries per second; a ``ratio`` row
per workload the process/in-process time.  Starting the learner process is timed once, in its
own row.  Nothing is asserted.

    python benchmarks/corpus_proxy.py > benchmarks/results/corpus_proxy.jsonl
    python benchmarks/corpus_proxy.py --queries 200 --repeat 1 --no-reference   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from exact import ExactOracle, SingleHead  # noqa: E402
from exact.corpus.generate import write  # noqa: E402
from exact.corpus.host import LearnerHost  # noqa: E402
from exact.corpus.judge import formula, judge  # noqa: E402
from exact.corpus.load import CorpusInstance, load_corpus  # noqa: E402
from exact.corpus.reference import learn as reference_learn  # noqa: E402

BENCH = "corpus_proxy"
_QUERIES = "CORPUS_PROXY_QUERIES"


def emit(row: dict) -> None:
    print(json.dumps({"bench": BENCH, **row}), flush=True)


def _sequences(d: int, n: int) -> list:
    return [[[(k % 7) - 3, 1] + [0] * (d - 2), [1, (k % 5) - 2] + [0] * (d - 2)] for k in range(n)]


def ask_single(oracle, *, theorem, hints):
    """Asks the queries one by one (the learner of the ``single`` workload)."""
    for X in _sequences(oracle.d, int(os.environ[_QUERIES])):
        oracle.query(X).decimal(30)
    raise NotImplementedError("a throughput probe, not a learner")


def ask_batch(oracle, *, theorem, hints):
    """Asks the queries 100 at a time (the learner of the ``batch`` workload)."""
    Xs = _sequences(oracle.d, int(os.environ[_QUERIES]))
    for k in range(0, len(Xs), 100):
        for a in oracle.query_batch(Xs[k:k + 100]):
            a.decimal(30)
    raise NotImplementedError("a throughput probe, not a learner")


def _in_process(learn, instance) -> tuple[int, float]:
    """The former design: the learner in this process, a counting closure over the oracle."""
    oracle = ExactOracle(instance.model)
    asked = [0]

    class Proxy:
        __slots__ = ("d", "query", "query_batch")

    def query(X):
        asked[0] += 1
        return oracle.query(X)

    def query_batch(Xs):
        Xs = list(Xs)
        asked[0] += len(Xs)
        return oracle.query_batch(Xs)

    proxy = Proxy()
    proxy.d, proxy.query, proxy.query_batch = instance.d, query, query_batch
    t = time.perf_counter()
    try:
        returned = learn(proxy, theorem=instance.theorem, hints=dict(instance.hints))
    except NotImplementedError:
        return asked[0], time.perf_counter() - t
    seconds = time.perf_counter() - t
    assert judge(instance, returned)[0]
    return asked[0], seconds


def _in_host(host, instance) -> tuple[int, float]:
    t = time.perf_counter()
    v = host.run(instance)
    seconds = time.perf_counter() - t
    assert v.outcome == "not implemented" or v.passed, v.message
    return v.queries, seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--queries", type=int, default=2000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-reference", action="store_true", help="skip the reference-learner workload")
    args = p.parse_args(argv)
    os.environ[_QUERIES] = str(args.queries)
    start = time.perf_counter()
    emit({"row": "env", "python": platform.python_version(), "platform": platform.platform(),
          "cpus": os.cpu_count(), "queries": args.queries, "repeat": args.repeat})
    here = str(Path(__file__).resolve().parent)
    model = SingleHead([[1, -2, 0, 1], [3, 1, 2, 0], [0, 1, -1, 2], [1, 0, 2, -3]], [1, "-1/2", 2, 3])
    probe = CorpusInstance("4.1", "probe d=4", 4, {}, model, ())
    workloads = [("single", ask_single), ("batch", ask_batch)]
    for name, learn in workloads:
        spec = f"{Path(__file__).stem}:{learn.__name__}"
        t = time.perf_counter()
        host = LearnerHost(spec, path=[here])
        host.start()
        if name == "single":
            emit({"row": "run", "workload": "start", "mode": "process", "seconds": time.perf_counter() - t})
        try:
            rows = {}
            for mode, fn in (("in-process", lambda: _in_process(learn, probe)), ("process", lambda: _in_host(host, probe))):
                best = min((fn() for _ in range(args.repeat)), key=lambda r: r[1])
                rows[mode] = best
                emit({"row": "run", "workload": name, "mode": mode, "queries": best[0], "seconds": best[1],
                      "queries_per_second": best[0] / best[1]})
        finally:
            host.close()
        emit({"row": "ratio", "workload": name, "process_over_in_process": rows["process"][1] / rows["in-process"][1]})
    if not args.no_reference:
        with tempfile.TemporaryDirectory() as tmp:
            write(tmp)
            instances = [i for insts in load_corpus(tmp).instances.values() for i in insts]
            rows = {}
            with LearnerHost("exact.corpus.reference:learn") as host:
                for mode, fn in (("in-process", lambda i: _in_process(reference_learn, i)),
                                 ("process", lambda i: _in_host(host, i))):
                    runs = [[fn(i) for i in instances] for _ in range(args.repeat)]
                    queries = sum(q for q, _ in runs[0])
                    assert queries <= sum(formula(i.theorem, i.d, i.hints)[0] for i in instances)
                    seconds = min(sum(s for _, s in r) for r in runs)
                    rows[mode] = seconds
                    emit({"row": "run", "workload": "reference", "mode": mode, "instances": len(instances),
                          "queries": queries, "seconds": seconds, "queries_per_second": queries / seconds})
        emit({"row": "ratio", "workload": "reference", "process_over_in_process": rows["process"] / rows["in-process"]})
    emit({"row": "done", "seconds": time.perf_counter() - start})
    return 0


if __name__ == "__main__":
    sys.exit(main())
