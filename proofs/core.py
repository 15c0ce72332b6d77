"""A small, JSON-serialisable record of a checked symbolic proof."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["Proof"]


def _to_plain(value: Any) -> Any:
    """Convert ``value`` into plain JSON types (dict, list, str, numbers, bool, None).

    Parameters
    ----------
    value : Any
        A nested structure of mappings, lists/tuples and JSON scalars.

    Returns
    -------
    Any
        An equivalent structure built only from plain JSON types.

    Raises
    ------
    TypeError
        If ``value`` contains a non-string mapping key or a non-JSON leaf.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("Proof details must use string keys")
        return {key: _to_plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_plain(item) for item in value]
    raise TypeError(f"{type(value).__name__} is not JSON-serialisable")


@dataclass(frozen=True)
class Proof:
    """Outcome of a symbolic proof: what was claimed, how, and whether it held.

    Parameters
    ----------
    name : str
        Short identifier of the proved fact.
    statement : str
        The claim, in words and formulas.
    verified : bool
        ``True`` only if every check of the proof reduced exactly as required.
    method : str
        How the checks were carried out.
    steps : tuple of str
        Readable sentences, one per step of the argument.
    details : Mapping, optional
        Extra JSON-able data (e.g. the instances checked). Stored read-only.

    Examples
    --------
    >>> p = Proof(name="toy", statement="1 + 1 = 2", verified=True,
    ...           method="integer arithmetic", steps=("1 + 1 - 2 reduces to 0",))
    >>> bool(p)
    True
    >>> p.to_json()["steps"]
    ['1 + 1 - 2 reduces to 0']
    >>> print(p)
    Proof: toy
    Statement: 1 + 1 = 2
    Method: integer arithmetic
    Verdict: verified
    Steps:
      1. 1 + 1 - 2 reduces to 0
    """

    name: str
    statement: str
    verified: bool
    method: str
    steps: tuple[str, ...]
    details: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "steps", tuple(self.steps))
        object.__setattr__(self, "details", MappingProxyType(_to_plain(self.details)))

    @classmethod
    def from_checks(cls, name: str, statement: str, method: str, checks, **details) -> "Proof":
        """A proof made of checks ``(label, sentence, ok)``: verified iff every check is ok.

        The sentences become the steps and ``details["checks"]`` maps labels to verdicts.

        >>> from collections import namedtuple
        >>> C = namedtuple("C", "label sentence ok")
        >>> Proof.from_checks("x", "1 = 1", "trivial", [C("a", "1 - 1 = 0", True)]).verified
        True
        """
        checks = list(checks)
        return cls(
            name=name,
            statement=statement,
            verified=all(c.ok for c in checks),
            method=method,
            steps=tuple(c.sentence for c in checks),
            details={**details, "checks": {c.label: c.ok for c in checks}},
        )

    def to_json(self) -> dict[str, Any]:
        """Return the proof as a dictionary of plain JSON types.

        Returns
        -------
        dict
            Keys ``name``, ``statement``, ``verified``, ``method``, ``steps``
            (a list) and ``details`` (a dict); suitable for ``json.dumps``.

        Examples
        --------
        >>> import json
        >>> p = Proof("toy", "0 = 0", True, "inspection", ("0 - 0 = 0",), {"n": (1, 2)})
        >>> json.dumps(p.to_json()["details"])
        '{"n": [1, 2]}'
        """
        return {
            "name": self.name,
            "statement": self.statement,
            "verified": bool(self.verified),
            "method": self.method,
            "steps": list(self.steps),
            "details": _to_plain(self.details),
        }

    def __bool__(self) -> bool:
        return bool(self.verified)

    def __str__(self) -> str:
        verdict = "verified" if self.verified else "NOT verified"
        lines = [
            f"Proof: {self.name}",
            f"Statement: {self.statement}",
            f"Method: {self.method}",
            f"Verdict: {verdict}",
            "Steps:",
        ]
        lines += [f"  {i}. {step}" for i, step in enumerate(self.steps, start=1)]
        return "\n".join(lines)
