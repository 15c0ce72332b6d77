"""The learner's side of a corpus run: a process of its own, holding a proxy oracle and nothing of the model.

:class:`~exact.corpus.host.LearnerHost` starts this process (a fresh interpreter: nothing
inherited from the test process's memory, no module of it re-run) and keeps the models, the
counts and the judge to itself.  Here the learner module is imported, and each
instance's learner gets a :class:`CorpusOracle`: ``d``, ``query``, ``query_batch`` and
``count``, speaking over a pipe.  The test process answers each query with the exact answer
object (:class:`~exact.oracles.ExactAnswer`, pickled) and counts it there; nothing in this
process refers to the model, so no attribute, closure or object graph leads to it.

The two talk over this process's standard input and output (moved to private descriptors,
so that what the learner prints cannot reach them), in length-prefixed frames.  Messages
from here to the test process are JSON (the test process never unpickles what the learner's
process sends); messages the other way are pickles (the learner's process trusts its host).
The learner's printed output is captured per instance and relayed.

Examples
--------
A learner is named ``MODULE:FUNCTION``; it is imported, never evaluated:

>>> load_learner("exact.corpus.reference:learn").__name__
'learn'
>>> load_learner("os.system")
Traceback (most recent call last):
...
exact.corpus.proxy.LearnerError: --learner: expected MODULE:FUNCTION (e.g. mypkg.module:learn), got 'os.system'
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import signal
import struct
import sys
import tempfile
import threading
import time
from fractions import Fraction

from ..errors import ExactAttentionError, InvalidArgument, InvalidNumber, ShapeError
from ..numbers import to_fraction
from ..sequences import as_sequence

__all__ = ["CorpusOracle", "LearnerError", "Channel", "load_learner", "check_spec", "encode_result", "main"]

OUTPUT_LIMIT = 20_000  # characters of a learner's printed output relayed per instance
_DEPTH = 32  # nesting a returned result may have
_ERRORS = {"ShapeError": ShapeError, "InvalidNumber": InvalidNumber, "InvalidArgument": InvalidArgument}


class LearnerError(Exception):
    """The learner named by ``--learner`` cannot be used (a one-line message naming the option)."""


class Channel:
    """Length-prefixed frames over a pair of file descriptors (pipes; unbuffered, no pickle implied)."""

    _HEADER = struct.Struct("!Q")

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def send_bytes(self, data: bytes) -> None:
        view = memoryview(self._HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.write_fd, view):]

    def recv_bytes(self, limit: int | None = None) -> bytes:
        (n,) = self._HEADER.unpack(self._read(self._HEADER.size))
        if limit is not None and n > limit:
            raise OSError(f"a message of {n} bytes, above the limit of {limit}")
        return self._read(n)

    def _read(self, n: int) -> bytes:
        parts, left = [], n
        while left:
            chunk = os.read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError("the other side closed the channel")
            parts.append(chunk)
            left -= len(chunk)
        return b"".join(parts)

    def send(self, obj) -> None:
        self.send_bytes(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self):
        return pickle.loads(self.recv_bytes())


def check_spec(spec) -> tuple[str, str]:
    """``(module, attribute path)`` of ``MODULE:FUNCTION``, checked without importing anything."""
    module, _, name = spec.partition(":") if isinstance(spec, str) else ("", "", "")
    if not module or not name or not all(part.isidentifier() for part in module.split(".") + name.split(".")):
        raise LearnerError(f"--learner: expected MODULE:FUNCTION (e.g. mypkg.module:learn), got {spec!r}")
    return module, name


def load_learner(spec: str):
    """The callable named ``MODULE:FUNCTION`` (imported, never evaluated)."""
    module, name = check_spec(spec)
    try:
        obj = importlib.import_module(module)
    except ImportError as e:
        raise LearnerError(f"--learner: cannot import {module!r} ({e})") from None
    except BaseException as e:  # noqa: BLE001 - a module that skips, exits or fails on import is unusable
        if isinstance(e, KeyboardInterrupt):
            raise
        raise LearnerError(f"--learner: cannot import {module!r} ({type(e).__name__}: {e})"[:400]) from None
    for part in name.split("."):
        if not hasattr(obj, part):
            raise LearnerError(f"--learner: {module!r} has no {name!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise LearnerError(f"--learner: {spec!r} is not callable")
    return obj


class CorpusOracle:
    """What a corpus learner sees: ``d``, ``query(X)``, ``query_batch(Xs)`` and ``count``.

    Every query is validated here first (a malformed one raises :class:`~exact.errors.ShapeError`
    or :class:`~exact.errors.InvalidNumber` and is neither sent nor counted), then answered and
    counted by the test process.  ``count`` is the number of queries answered so far (the test
    process keeps the count that is judged).  After the learner returns, the oracle answers no
    more queries.
    """

    __slots__ = ("d", "_conn", "_count", "_lock")

    def __init__(self, d: int, conn):
        self.d = d
        self._conn = conn
        self._count = 0
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        """Queries answered so far."""
        return self._count

    def query(self, X):
        """The exact answer to one sequence ``X`` (a list of tokens, each a list of d numbers)."""
        return self._ask([_encode_query(X, self.d, "X")])[0]

    def query_batch(self, Xs) -> list:
        """The exact answers to several sequences, in order (each one counted)."""
        try:
            Xs = list(Xs)
        except TypeError:
            raise ShapeError(f"Xs: expected a list of sequences, got {type(Xs).__name__}") from None
        return self._ask([_encode_query(X, self.d, f"Xs[{k}]") for k, X in enumerate(Xs)])

    def _ask(self, rows: list) -> list:
        with self._lock:
            if self._conn is None:
                raise InvalidArgument("oracle: this instance's run has ended; its oracle answers no more queries")
            if not rows:
                return []
            self._conn.send_bytes(json.dumps({"query": rows}).encode())
            reply = self._conn.recv()
        if reply[0] == "answers":
            self._count += len(reply[1])
            return list(reply[1])
        raise _ERRORS.get(reply[1], InvalidArgument)(reply[2])

    def _close(self) -> None:
        with self._lock:
            self._conn = None

    def __repr__(self) -> str:
        return f"CorpusOracle(d={self.d}, count={self._count})"


def _encode_query(X, d: int, name: str) -> list:
    """A sequence as JSON: per token its nonzero entries ``[j, p, q]`` (= p/q at index j); checked
    here, and again by the host."""
    seq = as_sequence(X, d=d) if not isinstance(X, (str, bytes)) else None
    if seq is None:
        raise ShapeError(f"{name}: expected a list of tokens (an N×d array), got a string")
    return [[[j, int(q.numerator), int(q.denominator)] for j, q in r] for r in seq.rows]


def encode_result(x, depth: int = 0):
    """A learner's returned value as JSON the test process decodes strictly (:func:`decode_result`).

    Strings are sent as they are (the judge parses them); other numbers as their exact value
    ``"p/q"`` (a Fraction subclass as a plain Fraction); what is not a number is sent as a
    note saying so, which the judge reports at its place.

    >>> from fractions import Fraction
    >>> encode_result({"v": [1, Fraction(1, 3), "2/7", 0.5, None]})
    {'d': {'v': {'l': [{'q': '1'}, {'q': '1/3'}, {'s': '2/7'}, {'q': '1/2'}, {'x': 'expected a number, got NoneType'}]}}}
    """
    if depth > _DEPTH:
        return {"x": "nested too deeply"}
    if isinstance(x, str):
        return {"s": x}
    if isinstance(x, bool):
        return {"b": x}
    if isinstance(x, dict):
        return {"d": {k: encode_result(v, depth + 1) for k, v in x.items() if isinstance(k, str)}}
    if isinstance(x, (list, tuple)):
        return {"l": [encode_result(v, depth + 1) for v in x]}
    if x is None:
        return {"x": "expected a number, got NoneType"}
    try:
        q = to_fraction(x, name="value")
    except ExactAttentionError as e:
        return {"x": str(e).removeprefix("value: ")[:300]}
    return {"q": str(Fraction(int(q.numerator), int(q.denominator)))}


def _describe(e: BaseException, theorem: str) -> dict:
    """How a learner's exception ends its instance: ``{"outcome", "message"}``."""
    outcomes = sys.modules.get("_pytest.outcomes")
    text = _text(e)
    if outcomes is not None:
        if isinstance(e, outcomes.Skipped):
            return {"outcome": "skipped", "message": f"the learner skipped the instance (pytest.skip: {text})"}
        if isinstance(e, outcomes.XFailed):
            return {"outcome": "skipped", "message": f"the learner xfailed the instance (pytest.xfail: {text})"}
        if isinstance(e, outcomes.Failed):
            return {"outcome": "raised", "message": f"the learner called pytest.fail: {text}"}
        if isinstance(e, outcomes.Exit):
            return {"outcome": "raised", "message": f"the learner called pytest.exit: {text}"}
    if isinstance(e, SystemExit):
        return {"outcome": "raised", "message": f"the learner called sys.exit({_text(e.code, repr)})"}
    if isinstance(e, NotImplementedError):
        return {"outcome": "not implemented", "message": f"the learner raised NotImplementedError: {text}"}
    kind = "" if isinstance(e, Exception) else " (a BaseException)"
    return {"outcome": "raised", "message": f"the learner raised {type(e).__name__}{kind}: {text}"}


def _text(x, how=str) -> str:
    """``str(x)`` (or ``repr``), cut to 300 characters; a learner's object that cannot say it is named by its type."""
    try:
        return how(x)[:300]
    except BaseException:  # noqa: BLE001 - its __str__ is the learner's code
        return f"<a {type(x).__name__} that cannot be printed>"


@contextlib.contextmanager
def _captured(box: list):
    """Capture file descriptors 1 and 2 (Python's and C's output) into ``box[0]``."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    saved = [os.dup(1), os.dup(2)]
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(Exception):
                    stream.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            tmp.seek(0)
            box.append(tmp.read().decode("utf-8", errors="replace")[-OUTPUT_LIMIT:])


def _run(conn, learn, theorem: str, d: int, hints: dict) -> None:
    oracle = CorpusOracle(d, conn)
    box: list = []
    with _captured(box):
        try:
            msg: dict = {"result": encode_result(learn(oracle, theorem=theorem, hints=hints))}
        except KeyboardInterrupt as e:
            msg = {"interrupted": f"KeyboardInterrupt: {_text(e)}"}
        except BaseException as e:  # noqa: BLE001 - every way out of the learner ends the instance unjudged
            msg = {"raised": _describe(e, theorem)}
        finally:
            oracle._close()
    msg["output"] = box[0] if box else ""
    conn.send_bytes(json.dumps(msg).encode())


def _watch_parent() -> None:
    """End this process as soon as the test process is gone (no orphan outlives its run)."""
    if os.name != "posix":
        return
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(0.2)
        if os.getpgrp() == os.getpid():  # a group of its own (the host's doing): end what the learner started too
            os.killpg(os.getpid(), signal.SIGKILL)
        os._exit(1)

    threading.Thread(target=watch, name="exact-attention-parent-watch", daemon=True).start()


def _private_channel() -> Channel:
    """The protocol on private copies of fds 0 and 1; fd 0 then reads nothing, fd 1 writes to fd 2."""
    channel = Channel(os.dup(0), os.dup(1))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return channel


def main(config: dict) -> None:
    """The learner process's main loop: ``config`` holds ``spec`` and ``path`` (started by the host)."""
    try:
        conn = _private_channel()
        _watch_parent()
        for entry in reversed(config["path"]):  # the invocation directory first, as ``python -m pytest`` has it
            if entry not in sys.path:
                sys.path.insert(0, entry)
        box: list = []
        try:
            with _captured(box):
                learn = load_learner(config["spec"])
        except LearnerError as e:
            conn.send_bytes(json.dumps({"error": str(e), "output": box[0] if box else ""}).encode())
            return
        conn.send_bytes(json.dumps({"ready": True}).encode())
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                return
            if msg[0] != "run":
                return
            _run(conn, learn, *msg[1:])
    except KeyboardInterrupt:
        return
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)  # threads the learner left running do not keep this process alive
