"""The test process's side of a corpus run: the learner in a process of its own, the model here.

:class:`LearnerHost` starts one learner process per run (:mod:`exact.corpus.proxy`; a fresh
interpreter with this process's ``sys.path``, so it inherits nothing of this process's
memory and re-runs none of its modules) and imports the learner there.  For each instance it
answers the learner's queries from an :class:`~exact.oracles.ExactOracle` kept here, counts
them here and judges the returned result here.  A query is counted when it is answered: a
malformed query (wrong shape, not a number) is refused, and a batch holding one is refused
whole, before anything is answered.

Everything the learner's process sends is JSON, read with a size limit and parsed strictly;
a message outside the protocol, or a learner process that ends during an instance, ends that
instance unjudged, and the next instance gets a fresh learner process.
:meth:`LearnerHost.close` (also on leaving the ``with`` block, on ``KeyboardInterrupt`` and
when the test run ends) stops the learner process, terminating and then killing it if it
does not stop, and kills what is left in its process group (processes the learner started).
The learner process runs in a session of its own (a Ctrl-C reaches this process, which stops
it) and ends itself and its process group as soon as this process is gone.

Examples
--------
>>> import tempfile
>>> from exact.corpus.generate import write
>>> from exact.corpus.load import load_corpus
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = write(tmp, size="quick")
...     instance = load_corpus(tmp, theorems=["4.1"]).instances["4.1"][1]
>>> with LearnerHost("exact.corpus.reference:learn") as host:
...     verdict = host.run(instance)
>>> verdict.exact, verdict.queries, verdict.formula, verdict.outcome
(True, 6, 6, 'returned')
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from typing import Any

from ..errors import ExactAttentionError, InvalidArgument, InvalidNumber, ShapeError
from ..numbers import to_fraction
from ..sequences import Sequence
from .judge import Unreadable, Verdict, formula, judge
from .load import CorpusInstance
from .proxy import Channel, LearnerError, check_spec

__all__ = ["LearnerHost", "LearnerError", "run_instance", "learner_spec", "decode_result", "MESSAGE_LIMIT"]

MESSAGE_LIMIT = 64 * 2**20  # bytes in one message from the learner's process
_DEPTH = 40
_BOOT = ("import json, sys; config = json.loads(sys.argv[1]); sys.path[:] = config['sys_path']; "
         "from exact.corpus.proxy import main; main(config)")


def decode_result(x, depth: int = 0):
    """The learner's returned value from its JSON encoding (:func:`~exact.corpus.proxy.encode_result`).

    Numbers come back as plain ``Fraction``; anything outside the encoding becomes an
    :class:`~exact.corpus.judge.Unreadable` that the judge reports at its place.

    >>> decode_result({"d": {"v": {"l": [{"q": "1/3"}, {"s": "2"}, {"x": "not a number"}, {"q": "x"}]}}})
    {'v': [Fraction(1, 3), '2', Unreadable(text='not a number'), Unreadable(text="'x' is not an exact rational")]}
    """
    if depth > _DEPTH or not isinstance(x, dict) or len(x) != 1:
        return Unreadable("not a value the learner's process can send")
    (tag, value), = x.items()
    if tag == "s" and isinstance(value, str):
        return value
    if tag == "b" and isinstance(value, bool):
        return value
    if tag == "x" and isinstance(value, str):
        return Unreadable(value[:300])
    if tag == "q" and isinstance(value, str):
        try:
            q = to_fraction(value, name="value")
        except InvalidNumber:
            return Unreadable(f"{value[:40]!r} is not an exact rational")
        return Fraction(int(q.numerator), int(q.denominator))
    if tag == "l" and isinstance(value, list):
        return [decode_result(v, depth + 1) for v in value]
    if tag == "d" and isinstance(value, dict):
        return {k: decode_result(v, depth + 1) for k, v in value.items()}
    return Unreadable("not a value the learner's process can send")


def _sequence(X, d: int, name: str) -> Sequence:
    """A query sent as JSON (per token, its nonzero entries ``[j, p, q]``), checked strictly."""
    if not isinstance(X, list):
        raise ShapeError(f"{name}: expected a list of tokens")
    rows = []
    for i, r in enumerate(X):
        if not isinstance(r, list):
            raise ShapeError(f"{name}[{i}]: expected a token as a list of [j, p, q] entries")
        pairs = []
        for e in r:
            if not (type(e) is list and len(e) == 3 and all(type(t) is int for t in e) and e[2] > 0):
                raise InvalidNumber(f"{name}[{i}]: expected entries [j, p, q] of integers with q > 0, got "
                                    f"{str(e)[:40]}")
            pairs.append((e[0], Fraction(e[1], e[2])))
        rows.append(tuple(pairs))
    return Sequence(d, tuple(rows))  # its own checks: at least one token, indices increasing in 0..d-1, values ≠ 0


class _Broken(Exception):
    """The learner's process ended or left the protocol during an instance."""


class LearnerHost:
    """Run the learner ``MODULE:FUNCTION`` in its own process; answer, count and judge here.

    Parameters
    ----------
    spec : str
        ``MODULE:FUNCTION``, imported in the learner's process only.
    path : list of str, keyword-only
        Directories put first on the learner process's ``sys.path`` (the plugin passes the
        directory pytest was started in, as ``python -m pytest`` has it).
    """

    def __init__(self, spec: str, *, path=()):
        check_spec(spec)
        self.spec = spec
        self.path = [os.fspath(p) for p in path]
        self._process: Any = None  # a subprocess.Popen while the learner's process runs
        self._conn: Any = None  # its Channel
        self._stderr: Any = None  # the file its standard error goes to

    # -- lifetime --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the learner's process and import the learner there (:class:`LearnerError` if it cannot)."""
        if self._process is not None:
            return
        config = {"spec": self.spec, "path": self.path, "sys_path": [p for p in sys.path if isinstance(p, str)]}
        self._stderr = tempfile.TemporaryFile()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _BOOT, json.dumps(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self._stderr, bufsize=0, close_fds=True, start_new_session=os.name == "posix")
        self._conn = Channel(self._process.stdout.fileno(), self._process.stdin.fileno())
        try:
            reply = self._receive()
        except _Broken as e:
            detail = self._stderr_tail()
            self.close()
            raise LearnerError(f"--learner: the learner's process could not start ({e}){detail}"[:600]) from None
        except BaseException:
            self.close()
            raise
        if reply.get("ready") is not True:
            self.close()
            raise LearnerError(str(reply.get("error", "--learner: the learner's process did not start"))[:400])

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0)
            lines = self._stderr.read().decode("utf-8", errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return f": {lines[-1]}" if lines else ""

    def close(self, *, grace: float = 2.0) -> None:
        """Stop the learner's process (terminated, then killed, if it does not end within ``grace`` seconds)."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if conn is not None:
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        if process is not None:
            for stream in (process.stdin, process.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            for end in (None, process.terminate, process.kill):
                if end is not None:
                    end()
                try:
                    process.wait(grace if end is None else 2)
                    break
                except subprocess.TimeoutExpired:
                    continue
            if os.name == "posix":  # what the learner started in its process group goes with it
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        stderr, self._stderr = getattr(self, "_stderr", None), None
        if stderr is not None:
            stderr.close()

    @property
    def pid(self) -> int | None:
        """The learner process's id while it runs."""
        return None if self._process is None else self._process.pid

    def __enter__(self) -> LearnerHost:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- one instance ------------------------------------------------------------------------

    def run(self, instance: CorpusInstance) -> Verdict:
        """Run the learner on ``instance`` and judge what comes back (a :class:`Verdict`, never an exception,
        except ``KeyboardInterrupt`` when the run is interrupted)."""
        from ..oracles import ExactOracle

        want, rule = formula(instance.theorem, instance.d, instance.hints)
        oracle = ExactOracle(instance.model)
        t = time.perf_counter()

        def verdict(exact, message, outcome, output=""):
            return Verdict(instance.theorem, instance.name, exact, oracle.count, want, rule,
                           time.perf_counter() - t, message, outcome, output)

        try:
            self.start()
            self._send(("run", instance.theorem, instance.d, dict(instance.hints)))
            while True:
                msg = self._receive()
                if set(msg) != {"query"}:
                    break
                self._answer(oracle, msg["query"], instance.d)
        except LearnerError as e:
            return verdict(False, str(e), "no result")
        except _Broken as e:
            self.close()
            return verdict(False, str(e), "no result")
        except BaseException:
            self.close(grace=0.2)
            raise
        output = msg.get("output", "")
        output = output[-20_000:] if isinstance(output, str) else ""
        if "interrupted" in msg:
            self.close()
            raise KeyboardInterrupt(f"the learner raised {msg['interrupted']}"[:300])
        if "raised" in msg:
            raised = msg["raised"]
            if not (isinstance(raised, dict) and raised.get("outcome") in ("raised", "not implemented", "skipped")
                    and isinstance(raised.get("message"), str)):
                self.close()
                return verdict(False, "the learner's process sent an unreadable message", "no result")
            return verdict(False, raised["message"][:400], raised["outcome"], output)
        if "result" not in msg:
            self.close()
            return verdict(False, "the learner's process sent an unreadable message", "no result")
        exact, message = judge(instance, decode_result(msg["result"]))
        return verdict(exact, message, "returned", output)

    def _answer(self, oracle, rows, d: int) -> None:
        """Answer one batch, or refuse it whole: a query is counted only when it is answered."""
        try:
            if not isinstance(rows, list):
                raise ShapeError("Xs: expected a list of sequences")
            seqs = [_sequence(X, d, f"Xs[{k}]") for k, X in enumerate(rows)]
        except ExactAttentionError as e:
            self._send(("refused", type(e).__name__, str(e)[:300]))
            return
        self._send(("answers", oracle.query_batch(seqs)))

    def _send(self, obj) -> None:
        try:
            self._conn.send(obj)
        except OSError:
            raise _Broken(f"the learner's process ended{self._exit_code()}") from None

    def _exit_code(self) -> str:
        try:
            code = self._process.wait(1)
        except subprocess.TimeoutExpired:
            return ""
        return f" (exit code {code})"

    def _receive(self) -> dict:
        try:
            data = self._conn.recv_bytes(MESSAGE_LIMIT)
        except EOFError:
            raise _Broken(f"the learner's process ended{self._exit_code()}") from None
        except OSError as e:
            raise _Broken(f"the learner's process sent an unreadable message ({e})"[:300]) from None
        try:
            msg = json.loads(data)
        except (ValueError, RecursionError):
            raise _Broken("the learner's process sent an unreadable message") from None
        if not isinstance(msg, dict):
            raise _Broken("the learner's process sent an unreadable message")
        return msg


def run_instance(learner, instance: CorpusInstance) -> Verdict:
    """Run ``learner`` on ``instance`` in a learner process of its own and judge the result.

    ``learner`` is ``"MODULE:FUNCTION"`` or a module-level function (named by its module and
    qualified name, which must lead back to it).  To run many instances on one learner
    process, use :class:`~exact.corpus.host.LearnerHost`.
    """
    with LearnerHost(learner_spec(learner)) as host:
        return host.run(instance)


def learner_spec(learner) -> str:
    """``MODULE:FUNCTION`` naming ``learner`` (a spec string, or a function importable by its name)."""
    if isinstance(learner, str):
        return learner
    import importlib

    module, name = getattr(learner, "__module__", None), getattr(learner, "__qualname__", None)
    if not callable(learner) or not isinstance(module, str) or not isinstance(name, str) or "<" in name \
            or module == "__main__":
        raise InvalidArgument(f"learner: expected 'MODULE:FUNCTION' or a module-level function, got {learner!r}")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    if obj is not learner:
        raise InvalidArgument(f"learner: {module}:{name} does not lead back to {learner!r}")
    return f"{module}:{name}"
