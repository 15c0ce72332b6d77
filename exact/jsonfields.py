"""Checking the shape of parsed JSON: fields, kinds and short descriptions for messages.

Every ``from_json`` in the library (models, sequences, certificates) checks its object
with :func:`check_fields`: unknown fields are an error listing the allowed ones, so a
typo such as ``"V"`` for ``"v"`` cannot go unnoticed, and a ``"kind"`` must be a string
(:func:`check_kind`).  Messages describe values by their JSON type
(:func:`describe_json`) and never echo more than a few characters of an input
(:func:`short_repr`).
"""

from __future__ import annotations

from fractions import Fraction

from .errors import InvalidFormat

__all__ = ["check_fields", "check_kind", "describe_json", "short_repr"]


def check_fields(data, *, where: str, required=(), optional=(), error=InvalidFormat) -> dict:
    """Check that ``data`` is a JSON object with every ``required`` field and no unknown one.

    The one field check of every ``from_json`` (models, sequences; certificates too):
    unknown fields are an error, not silently ignored, so a typo such as ``"V"`` for
    ``"v"`` cannot go unnoticed.

    Parameters
    ----------
    data : object
        The parsed JSON value.
    where : str
        What ``data`` is, for messages (``"model"``, ``"heads[2]"``, ``"certificate"``).
    required, optional : iterables of str
        The fields that must be present, and those that may be.
    error : exception class, keyword-only
        What to raise (default :class:`~exact.errors.InvalidFormat`).

    Returns
    -------
    dict
        ``data`` itself, checked.

    Examples
    --------
    >>> check_fields({"W": 1, "v": 2}, where="model", required=("W", "v"), optional=("d",))
    {'W': 1, 'v': 2}
    >>> check_fields({"W": 1, "v": 2, "extra": 1}, where="model", required=("W", "v"), optional=("d",))
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: model: unknown field(s) ['extra']; allowed fields: ['W', 'd', 'v']
    >>> check_fields({"W": 1}, where="model", required=("W", "v"))
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: model: missing field(s) ['v']
    >>> check_fields([1], where="model")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: model: expected a JSON object, got a list
    """
    if not isinstance(data, dict):
        raise error(f"{where}: expected a JSON object, got {describe_json(data)}")
    allowed = set(required) | set(optional)
    unknown = [k for k in data if k not in allowed]
    if unknown:
        shown = ", ".join(short_repr(k, 30) for k in unknown[:5]) + (f", and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        raise error(f"{where}: unknown field(s) [{shown}]; allowed fields: {sorted(allowed)}")
    missing = [k for k in required if k not in data]
    if missing:
        raise error(f"{where}: missing field(s) {sorted(missing)}")
    return data


def check_kind(data: dict, *, where: str, default=None, allowed=None, error=InvalidFormat):
    """Return ``data["kind"]`` (or ``default`` if absent), insisting that it is a string.

    ``allowed`` (the known kinds) only improves the message.  Comparing the kind with the
    expected one is the caller's business.

    >>> check_kind({"kind": "single-head"}, where="model"), check_kind({}, where="model", default="x")
    ('single-head', 'x')
    >>> check_kind({"kind": {"a": 1}}, where="model")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: model: field 'kind': expected a string, got an object
    """
    if "kind" not in data:
        return default
    kind = data["kind"]
    if not isinstance(kind, str):
        choices = f", one of {sorted(allowed)}" if allowed else ""
        raise error(f"{where}: field 'kind': expected a string{choices}, got {describe_json(kind)}")
    return kind


def describe_json(x) -> str:
    """Name the JSON type of a parsed value, for messages: ``"an object"``, ``"a list"``, ...

    >>> describe_json({}), describe_json([]), describe_json("x"), describe_json(2), describe_json(None)
    ('an object', 'a list', 'a string', 'a number', 'null')
    """
    if isinstance(x, dict):
        return "an object"
    if isinstance(x, (list, tuple)):
        return "a list"
    if isinstance(x, str):
        return "a string"
    if isinstance(x, bool):
        return "a boolean"
    if x is None:
        return "null"
    if isinstance(x, (int, float, Fraction)):
        return "a number"
    return f"a {type(x).__name__}"


def short_repr(x, limit: int = 60) -> str:
    """``repr(x)`` cut to ``limit`` characters, so a message never echoes a whole input.

    >>> short_repr("x" * 100, 10)
    "'xxxxxx..."
    """
    try:
        text = repr(x)
    except ValueError:  # an int beyond Python's 4300-digit str limit, inside x
        return f"<{type(x).__name__}, too large to print>"
    return text if len(text) <= limit else text[: limit - 3] + "..."
