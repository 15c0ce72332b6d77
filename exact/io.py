"""JSON input and output: models, results and certificates.

Rationals are written as ``"p/q"`` strings (integers as ``"p"``) so nothing is lost.
Reading never evaluates text: numbers go through :func:`exact.numbers.parse_rational`,
which accepts only integers, ratios and decimals.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .certify import Certificate, certificate_from_json, certificate_to_json
from .errors import ExactAttentionError, InvalidFormat
from .models import SingleHead
from .multihead import MultiHead

__all__ = [
    "MODEL_KINDS",
    "model_from_json",
    "result_to_json",
    "certificate_to_json",
    "load_json",
    "load_model",
    "load_certificate",
    "dump_json",
]

MODEL_KINDS = {"single-head": SingleHead, "multi-head": MultiHead}


def model_from_json(data):
    """Build a model from its JSON object, dispatching on ``"kind"``.

    >>> model_from_json({"kind": "single-head", "W": [["1/2"]], "v": ["3"]})
    SingleHead(W=((Fraction(1, 2),),), v=(Fraction(3, 1),))
    """
    if not isinstance(data, dict):
        raise InvalidFormat(f"model: expected a JSON object, got {type(data).__name__}")
    kind = data.get("kind", "single-head")
    cls = MODEL_KINDS.get(kind)
    if cls is None:
        raise InvalidFormat(f"model: unknown kind {kind!r}; expected one of {sorted(MODEL_KINDS)}")
    return cls.from_json(data)


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
        "seconds": {k: round(v, 6) for k, v in result.seconds.items()},
        "details": {k: (list(v) if isinstance(v, tuple) else v) for k, v in result.details.items()},
    }
    if result.certificate is not None:
        out["certificate_kind"] = result.certificate.kind
        if certificate:
            out["certificate"] = certificate_to_json(result.certificate)
    return out


def load_json(source: str | Path):
    """Read JSON from a path (``"-"`` is standard input), with clear errors."""
    try:
        text = sys.stdin.read() if str(source) == "-" else Path(source).read_text()
    except OSError as e:
        raise InvalidFormat(f"cannot read {source}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidFormat(f"{source}: not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None


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
        raise type(e)(f"{source}: {e}") from None


def load_certificate(source: str | Path) -> Certificate:
    """Load a certificate written by :func:`certificate_to_json`."""
    data = load_json(source)
    try:
        return certificate_from_json(data, model_from_json=model_from_json)
    except (ExactAttentionError, ValueError, KeyError, TypeError) as e:
        raise InvalidFormat(f"{source}: {e}") from None


def dump_json(obj, path: str | Path | None = None) -> str:
    """Serialise to indented JSON; write to ``path`` if given.  Returns the text."""
    text = json.dumps(obj, indent=1)
    if path is not None:
        Path(path).write_text(text + "\n")
    return text
