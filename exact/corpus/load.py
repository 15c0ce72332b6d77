"""Read a regression corpus (as :mod:`exact.corpus.generate` writes it), strictly.

Every number is parsed as an exact rational, never evaluated; every shape is checked by the
model's own constructor.  A file that is not a corpus, a version this package does not
read, or a malformed entry raises :class:`~exact.errors.InvalidArgument` naming the file and
the instance.

Examples
--------
>>> import tempfile
>>> from exact.corpus.generate import write
>>> with tempfile.TemporaryDirectory() as tmp:
...     _ = write(tmp, size="quick")
...     corpus = load_corpus(tmp)
>>> sorted(corpus.instances), corpus.instances["4.1"][0].name, corpus.instances["4.1"][0].id
(['4.1', '5.1', 'ffn', 'kkg', 'transformer'], 'rational d=1', 'rational-d1')
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..errors import ExactAttentionError, InvalidArgument, InvalidNumber
from ..numbers import to_fraction
from ..theorems import corpus_families

__all__ = ["Corpus", "CorpusInstance", "CorpusQuery", "load_corpus", "instance_id", "THEOREMS"]

#: The theorems with a corpus family, and what each grants a learner (the theorem table's).
THEOREMS = tuple(corpus_families())
_HINTS = {key: family.hints for key, family in corpus_families().items()}


@dataclass(frozen=True)
class CorpusQuery:
    """One recorded query: the sequence, the answer's 50-digit decimal and its exact form."""

    X: tuple
    decimal: str
    exact: dict = field(repr=False)


@dataclass(frozen=True)
class CorpusInstance:
    """One reference model of one theorem, with its hints and recorded queries."""

    theorem: str
    name: str
    d: int
    hints: dict
    model: Any = field(repr=False)
    queries: tuple = field(repr=False)

    @property
    def id(self) -> str:
        """The instance's test id (:func:`instance_id` of its name)."""
        return instance_id(self.name)


def instance_id(name: str) -> str:
    """A test id for an instance name that ``pytest -k`` accepts: no spaces, no ``=``.

    ``" = "`` and ``"="`` are dropped, every other run of characters outside letters, digits
    and ``_.+-`` becomes one ``-``.

    >>> instance_id("rational d=2"), instance_id("a head with v = 0 d=2 heads=3"), instance_id("W = 0 d=3 #2")
    ('rational-d2', 'a-head-with-v0-d2-heads3', 'W0-d3-2')
    """
    text = re.sub(r"\s*=\s*", "", name)
    return re.sub(r"[^A-Za-z0-9_.+-]+", "-", text).strip("-") or "instance"


@dataclass(frozen=True)
class Corpus:
    """A loaded corpus: its manifest and its instances per theorem."""

    directory: str
    manifest: dict = field(repr=False)
    instances: dict = field(repr=False)


def _rational(x, where: str) -> Fraction:
    if not isinstance(x, str):
        raise InvalidArgument(f"{where}: expected a rational as a string 'p/q', got {type(x).__name__}")
    try:
        return to_fraction(x, name=where)
    except InvalidNumber as e:
        raise InvalidArgument(str(e)) from None


def _matrix(x, where: str) -> list:
    if not isinstance(x, list) or not all(isinstance(r, list) for r in x):
        raise InvalidArgument(f"{where}: expected a list of rows")
    return [[_rational(v, f"{where}[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(x)]


def _vector(x, where: str) -> list:
    if not isinstance(x, list):
        raise InvalidArgument(f"{where}: expected a list")
    return [_rational(v, f"{where}[{i}]") for i, v in enumerate(x)]


def _model(theorem: str, data, where: str):
    from ..ffn import ReLUFFN
    from ..models import SingleHead
    from ..multihead import MultiHead
    from ..transformer import Transformer

    if not isinstance(data, dict):
        raise InvalidArgument(f"{where}: expected a JSON object")
    try:
        if theorem in ("4.1", "5.1"):
            return SingleHead(_matrix(data["W"], f"{where}.W"), _vector(data["v"], f"{where}.v"))
        if theorem == "kkg":
            heads = data["heads"]
            if not isinstance(heads, list) or not heads:
                raise InvalidArgument(f"{where}.heads: expected a non-empty list")
            d = len(heads[0]["v"]) if isinstance(heads[0], dict) and isinstance(heads[0].get("v"), list) else 0
            return MultiHead([(_matrix(h["W"], f"{where}.heads[{k}].W"), _vector(h["v"], f"{where}.heads[{k}].v"))
                              for k, h in enumerate(heads)], d=d)
        if theorem == "ffn":
            return ReLUFFN(_matrix(data["A"], f"{where}.A"), _vector(data["w"], f"{where}.w"))
        return Transformer(_matrix(data["W"], f"{where}.W"), _matrix(data["A"], f"{where}.A"),
                           _vector(data["w"], f"{where}.w"))
    except (KeyError, TypeError) as e:
        raise InvalidArgument(f"{where}: missing or malformed field ({type(e).__name__}: {e})") from None
    except ExactAttentionError as e:
        raise InvalidArgument(f"{where}: {e}") from None


def _instance(theorem: str, data, where: str) -> CorpusInstance:
    if not isinstance(data, dict):
        raise InvalidArgument(f"{where}: expected a JSON object")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"{where}: an instance needs a non-empty name")
    where = f"{where} ({name})"
    hints = data.get("hints", {})
    if not isinstance(hints, dict) or set(hints) != set(_HINTS[theorem]) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in hints.values()):
        raise InvalidArgument(f"{where}: hints must be exactly {list(_HINTS[theorem])} as non-negative integers")
    model = _model(theorem, data.get("model"), f"{where}.model")
    _check_hints(theorem, hints, model, where)
    if data.get("d") != model.d:
        raise InvalidArgument(f"{where}: d = {data.get('d')!r} but the model has d = {model.d}")
    queries = data.get("queries")
    if not isinstance(queries, list) or not queries:
        raise InvalidArgument(f"{where}.queries: expected a non-empty list")
    parsed = []
    for k, q in enumerate(queries):
        if not isinstance(q, dict) or not isinstance(q.get("decimal"), str) or not isinstance(q.get("exact"), dict):
            raise InvalidArgument(f"{where}.queries[{k}]: expected X, decimal and exact")
        if not _DECIMAL.fullmatch(q["decimal"]):
            raise InvalidArgument(f"{where}.queries[{k}].decimal: expected a finite decimal number")
        X = _matrix(q.get("X"), f"{where}.queries[{k}].X")
        if not X or any(len(r) != model.d for r in X):
            raise InvalidArgument(f"{where}.queries[{k}].X: expected tokens of length {model.d}")
        parsed.append(CorpusQuery(tuple(tuple(r) for r in X), q["decimal"], q["exact"]))
    return CorpusInstance(theorem, name, model.d, dict(hints), model, tuple(parsed))


_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]{1,6})?")


def _check_hints(theorem: str, hints: dict, model, where: str) -> None:
    """The hints must be the model's own (a larger one would loosen the count)."""
    if theorem == "5.1":
        from ..linalg import QMatrix

        rank = QMatrix.from_rows([list(r) for r in model.W]).rank()
        if hints["rank"] != rank:
            raise InvalidArgument(f"{where}: hint rank = {hints['rank']} but the model's W has rank {rank}")
    elif theorem == "kkg" and hints["heads"] != model.H:
        raise InvalidArgument(f"{where}: hint heads = {hints['heads']} but the model has {model.H} heads")
    elif theorem in ("ffn", "transformer") and hints["m"] != model.m:
        raise InvalidArgument(f"{where}: hint m = {hints['m']} but the model has {model.m} hidden units")


def _read(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InvalidArgument(f"corpus: {path} does not exist") from None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError) as e:
        raise InvalidArgument(f"corpus: {path} is not readable JSON ({type(e).__name__}: {e})"[:300]) from None


def load_corpus(directory, *, theorems=None) -> Corpus:
    """Load the corpus in ``directory`` (``theorems``: only these; default all the manifest lists)."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise InvalidArgument(f"corpus: {directory} is not a directory (write one with 'exact-attention corpus "
                              "export DIR')")
    manifest = _read(os.path.join(directory, "manifest.json"))
    if not isinstance(manifest, dict) or manifest.get("format") != "exact-attention-corpus":
        raise InvalidArgument(f"corpus: {directory}/manifest.json is not an exact-attention corpus manifest")
    if manifest.get("version") != 1:
        raise InvalidArgument(f"corpus: version {manifest.get('version')!r} is not one this package reads (1)")
    listed = manifest.get("theorems")
    if not isinstance(listed, dict) or not listed or not set(listed) <= set(THEOREMS):
        raise InvalidArgument(f"corpus: the manifest must list some of the theorems {', '.join(THEOREMS)}")
    chosen = list(listed) if theorems is None else list(theorems)
    unknown = set(chosen) - set(listed)
    if unknown:
        raise InvalidArgument(f"corpus: no theorem {', '.join(sorted(unknown))} here (it has {', '.join(listed)})")
    out = {}
    for theorem in chosen:
        entry = listed[theorem]
        name = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(name, str) or os.path.basename(name) != name:
            raise InvalidArgument(f"corpus: theorem {theorem}: a plain file name is required")
        doc = _read(os.path.join(directory, name))
        if not isinstance(doc, dict) or doc.get("theorem") != theorem or not isinstance(doc.get("instances"), list):
            raise InvalidArgument(f"corpus: {name} is not the file of theorem {theorem}")
        instances = tuple(_instance(theorem, inst, f"{name}: instance {k}") for k, inst in enumerate(doc["instances"]))
        names = [i.name for i in instances]
        if len(set(names)) != len(names):
            raise InvalidArgument(f"corpus: {name}: instance names must be unique")
        ids = [i.id for i in instances]
        if len(set(ids)) != len(ids):
            twice = sorted({i for i in ids if ids.count(i) > 1})
            raise InvalidArgument(f"corpus: {name}: instance names must give unique test ids (spaces and '=' "
                                  f"dropped); {', '.join(twice)} occurs more than once")
        out[theorem] = instances
    return Corpus(directory, manifest, out)
