"""JSON input and output: models, results and certificates.

Rationals are written as ``"p/q"`` strings (integers as ``"p"``) so nothing is lost.
Reading never evaluates text: numbers go through :func:`exact.numbers.parse_rational`,
which accepts only integers, ratios and decimals, in ASCII, with bounded length.

Reading is strict (:func:`load_json`), so a malformed file gets one clear error that
names the file and the field, never a traceback or a silently different model:

* at most :data:`MAX_FILE_BYTES` bytes, checked before the file is read whole;
* UTF-8, strictly (an error names the byte offset); a leading byte-order mark is ignored;
* nesting at most :data:`MAX_DEPTH` containers deep, checked without recursion;
* no duplicate keys in an object (JSON parsers disagree on which one wins);
* **JSON numbers are exact**: ``0.1`` in a file is the rational 1/10, exactly as the
  string ``"0.1"`` (a ``Fraction``, never a binary float), and ``12`` is the ``int`` 12.
  They obey the same limits as number strings (:data:`exact.numbers.MAX_DIGITS`,
  :data:`exact.numbers.MAX_DECIMAL_EXPONENT`); ``NaN`` and ``Infinity`` are refused.
  Writers still emit ``"p/q"`` strings, the form that holds every rational.

Each ``from_json`` then checks its object's fields with :func:`check_fields` (unknown
fields are an error listing the allowed ones) and its ``"kind"`` with :func:`check_kind`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from .certify import Certificate, certificate_from_json, certificate_to_json
from .errors import ExactAttentionError, InvalidFormat, InvalidNumber
from .kinds import KINDS, model_from_json
from .jsonfields import check_fields, check_kind, describe_json, short_repr
from .numbers import MAX_DIGITS, parse_rational

__all__ = [
    "MODEL_KINDS",
    "MAX_FILE_BYTES",
    "MAX_DEPTH",
    "model_from_json",
    "result_to_json",
    "certificate_to_json",
    "load_json",
    "parse_json",
    "check_fields",
    "check_kind",
    "describe_json",
    "short_repr",
    "load_model",
    "load_certificate",
    "dump_json",
]

MODEL_KINDS: dict[str, Any] = {name: k.model_class for name, k in KINDS.items()}

#: The largest input file :func:`load_json` reads (256 MiB); larger ones are refused
#: before they are read.
MAX_FILE_BYTES = 256 * 2**20

#: The deepest nesting of JSON arrays and objects :func:`load_json` accepts (the
#: top-level container is level 1).  The files this project writes nest at most about
#: 10 deep (certificates); Python's own parser would raise ``RecursionError`` near 1000.
MAX_DEPTH = 64


def result_to_json(result, *, certificate: bool = False) -> dict:
    """A learner's result as JSON (the certificate, with its transcript, on request).

    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> from exact.learn import learn_single_head
    >>> r = learn_single_head(ExactOracle(SingleHead([["1/2"]], [3])))
    >>> out = result_to_json(r)
    >>> out["model"]["W"], out["queries"], out["certificate_kind"]
    ([['1/2']], 2, 'exact')
    """
    out = {
        "kind": "result",
        "model": result.model.to_json(),
        "mode": result.mode,
        "exact": result.exact,
        "queries": result.queries,
        "max_length": result.max_length,
        "error_estimate": result.error_estimate,
        "grid": result.grid,
        "precision_bits": result.precision,
        "learner": result.learner,
        "verification_queries": result.verification_queries,
        "assumptions": list(result.assumptions),
        "claim": result.claim,
        "seconds": {k: round(v, 6) for k, v in result.seconds.items()},
        "details": result.details.to_json(),
    }
    if result.error_bound is not None:
        out["error_bound"] = result.error_bound.to_json()
    if result.certificate is not None:
        out["certificate_kind"] = result.certificate.kind
        if certificate:
            out["certificate"] = certificate_to_json(result.certificate)
    return out


# -- strict reading --------------------------------------------------------------------


def load_json(source: str | Path):
    """Read a JSON file strictly (``"-"`` is standard input); every error names the file.

    See the module docstring for the rules: size (:data:`MAX_FILE_BYTES`), strict UTF-8,
    depth (:data:`MAX_DEPTH`), no duplicate keys, exact numbers.

    Raises
    ------
    InvalidFormat
        If the file cannot be read or is not acceptable JSON.
    InvalidNumber
        If a JSON number is beyond the limits of :func:`exact.numbers.parse_rational`
        (the message names the field, e.g. ``W[0][1]``), or is ``NaN``/``Infinity``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = path.write_text('{"W": [[0.1, 2]], "v": ["0.1"]}')
    >>> load_json(path)
    {'W': [[Fraction(1, 10), 2]], 'v': ['0.1']}
    >>> _ = path.write_text('{"W": [[1]], "W": [[2]]}')
    >>> load_json(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: ...m.json: (top level): duplicate key 'W' in a JSON object
    """
    name = _display(source)
    data = _read_bytes(source, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InvalidFormat(
            f"{name}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start}, line {line}: {e.reason})"
        ) from None
    return parse_json(text.removeprefix("\ufeff"), name=name)


def parse_json(text: str, *, name: str = "<string>"):
    """Parse JSON text with the rules of :func:`load_json` (depth, duplicates, exact numbers).

    >>> parse_json('[0.1, 3, "x"]')
    [Fraction(1, 10), 3, 'x']
    >>> parse_json('{"v": [1e99999]}')
    Traceback (most recent call last):
    ...
    exact.errors.InvalidNumber: <string>: v[0]: the decimal exponent exceeds ±10000 (MAX_DECIMAL_EXPONENT); write such a number as 'p/q'
    """
    _check_depth(text, name)
    flagged = []

    def pairs(items):
        out = dict(items)
        if len(out) != len(items):
            seen: set = set()
            key = None
            for k, _ in items:
                if k in seen:
                    key = k
                    break
                seen.add(k)
            flagged.append(True)
            return _Invalid(lambda where: InvalidFormat(f"{where}: duplicate key {short_repr(key)} in a JSON object"))
        return out

    def number(text):
        try:
            return parse_rational(text)
        except InvalidNumber:
            flagged.append(True)
            return _Invalid(lambda where: _number_error(text, where))

    def integer(text):
        if len(text) - text.startswith("-") > MAX_DIGITS:
            return number(text)
        return int(text)

    def constant(text):
        flagged.append(True)
        return _Invalid(lambda where: InvalidNumber(
            f"{where}: expected a finite number, got {text} (not a JSON number)"
        ))

    try:
        out = json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_int=integer,
                         parse_constant=constant)
    except json.JSONDecodeError as e:
        raise InvalidFormat(f"{name}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:  # not reached after _check_depth; kept as a last line of defence
        raise InvalidFormat(f"{name}: JSON nested more than {MAX_DEPTH} levels deep (MAX_DEPTH)") from None
    if flagged:
        _raise_first_invalid(out, name)
    return out


def _display(source) -> str:
    """The file's name for messages (one line even if the name holds a newline)."""
    name = "<stdin>" if str(source) == "-" else str(source)
    return name if name.isprintable() else repr(name)


def _read_bytes(source, name: str) -> bytes:
    """At most :data:`MAX_FILE_BYTES` bytes of ``source``; larger files are refused unread."""
    too_big = f"{name}: the file is larger than the limit of {MAX_FILE_BYTES} bytes (MAX_FILE_BYTES)"
    try:
        if str(source) == "-":
            stream = getattr(sys.stdin, "buffer", None)  # None when stdin is a text stream (StringIO)
            if stream is not None:
                data = stream.read(MAX_FILE_BYTES + 1)
            else:
                data = sys.stdin.read(MAX_FILE_BYTES + 1).encode("utf-8", "surrogatepass")
        else:
            with open(source, "rb") as f:
                if os.fstat(f.fileno()).st_size > MAX_FILE_BYTES:
                    raise InvalidFormat(too_big)
                data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InvalidFormat(f"cannot read {name}: {e.strerror or e}") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidFormat(too_big)
    return data


# Strings (with their escapes) and the characters that give JSON its structure.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.DOTALL)


def _check_depth(text: str, name: str) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH`, without recursion.

    Strings are cut out and the brackets counted at C speed; only a file that is too
    deep is scanned token by token, to name the field where the limit is crossed.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if len(brackets) <= MAX_DEPTH:
        return
    codes = np.frombuffer(brackets.encode("ascii"), dtype=np.uint8)
    depth = np.cumsum(np.where((codes == ord("[")) | (codes == ord("{")), 1, -1))
    if depth.max() <= MAX_DEPTH:
        return
    path, line, column = _where_too_deep(text)
    raise InvalidFormat(
        f"{name}: {_path_text(path)}: JSON nested more than {MAX_DEPTH} levels deep "
        f"(MAX_DEPTH; at line {line}, column {column})"
    )


def _where_too_deep(text: str):
    """The path to, and the position of, the first container nested beyond :data:`MAX_DEPTH`."""
    frames: list[list] = []  # one per open container: [key or index, expecting a key]
    for m in _TOKEN.finditer(text):
        t = m.group()
        if t in "[{":
            if len(frames) == MAX_DEPTH:
                start = m.start()
                line = text.count("\n", 0, start) + 1
                return [f[0] for f in frames], line, start - text.rfind("\n", 0, start)
            frames.append([0, True] if t == "[" else [None, True])
        elif t in "]}":
            if frames:
                frames.pop()
        elif t == ",":
            if frames and isinstance(frames[-1][0], int):
                frames[-1][0] += 1
            elif frames:
                frames[-1][1] = True
        elif frames and frames[-1][1] and not isinstance(frames[-1][0], int):  # an object's key
            try:
                frames[-1][0] = json.loads(t)
            except ValueError:
                frames[-1][0] = t
            frames[-1][1] = False
    return [], 1, 1  # unbalanced text; unreachable in practice


class _Invalid:
    """Stands in, while parsing, for a value that is refused once its field is known."""

    __slots__ = ("error",)

    def __init__(self, error):
        self.error = error  # field path -> exception


def _number_error(text: str, where: str) -> InvalidNumber:
    try:
        parse_rational(text, name=where)
    except InvalidNumber as e:
        return e
    return InvalidNumber(f"{where}: the number is not acceptable")  # pragma: no cover


def _raise_first_invalid(root, name: str) -> None:
    """Find the first :class:`_Invalid` in document order and raise its error, naming the field."""
    stack: list[tuple] = [(root, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, _Invalid):
            e = node.error(_path_text(path))
            raise type(e)(f"{name}: {e}") from None
        if isinstance(node, dict):
            stack.extend((v, (*path, k)) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((v, (*path, i)) for i, v in reversed(list(enumerate(node))))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _path_text(path) -> str:
    """A field path as in messages: ``W[0][1]``, ``heads[2].v[0]``, ``(top level)``."""
    parts = []
    for k in path:
        if isinstance(k, int):
            parts.append(f"[{k}]")
        elif isinstance(k, str) and _NAME.fullmatch(k) and len(k) <= 40:
            parts.append(f".{k}" if parts else k)
        else:
            parts.append(f"[{short_repr(k, 30)}]")
    text = "".join(parts) or "(top level)"
    return text if len(text) <= 80 else text[:50] + "..." + text[-27:]


# -- files -----------------------------------------------------------------------------


def load_model(source: str | Path):
    """Load a model JSON file (see :func:`model_from_json`).

    Errors name the file; numbers are parsed, never evaluated.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.json"
    >>> _ = path.write_text('{"kind": "single-head", "W": [["__import__(0)"]], "v": ["1"]}')
    >>> load_model(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    exact.errors.InvalidNumber: ...m.json: W[0][0]: expected an integer, 'p/q' or decimal string, got '__import__(0)'
    """
    data = load_json(source)
    try:
        return model_from_json(data)
    except ExactAttentionError as e:
        raise type(e)(f"{_display(source)}: {e}") from None


def load_certificate(source: str | Path) -> Certificate:
    """Load a certificate written by :func:`certificate_to_json`."""
    data = load_json(source)
    try:
        return certificate_from_json(data, model_from_json=model_from_json)
    except (ExactAttentionError, ValueError, KeyError, TypeError) as e:
        raise InvalidFormat(f"{_display(source)}: {e}") from None


def dump_json(obj, path: str | Path | None = None) -> str:
    """Serialise to indented JSON; write to ``path`` if given.  Returns the text."""
    text = json.dumps(obj, indent=1)
    if path is not None:
        Path(path).write_text(text + "\n")
    return text
