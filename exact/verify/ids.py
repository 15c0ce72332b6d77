"""The one identity of a claim and of a claim instance: ``THEOREM:CLAIM`` and ``THEOREM:CLAIM:INSTANCE``.

A claim is its theorem's key and its number in that theorem's list of claims; an instance
is its claim's identity and its number in the claim's sweep.  The same identity is what
``verify --task`` takes, what every ``--json`` row carries as ``"task"``, what ``--resume``
matches rows by and what a report's reproducer line names.  Numbers refer to the sweep
that ``--budget`` and ``--max-d`` build, which every row records beside the identity.

Examples
--------
>>> InstanceId.parse("kkg:1:0")
InstanceId(theorem='kkg', claim=1, instance=0)
>>> str(ClaimId("4.1", 2).instance(7)), str(InstanceId("4.1", 2, 7).claim_id)
('4.1:2:7', '4.1:2')
>>> ClaimId.parse("kkg:x")
Traceback (most recent call last):
...
exact.errors.InvalidArgument: id: expected THEOREM:CLAIM (e.g. kkg:1), got 'kkg:x'
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidArgument

__all__ = ["ClaimId", "InstanceId", "parse_id"]


def _number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 9 else None


@dataclass(frozen=True, order=True)
class ClaimId:
    """A claim: its theorem's key and its number among that theorem's claims."""

    theorem: str
    claim: int

    def __str__(self) -> str:
        return f"{self.theorem}:{self.claim}"

    def instance(self, k: int) -> "InstanceId":
        """The identity of this claim's instance number ``k``."""
        return InstanceId(self.theorem, self.claim, k)

    @classmethod
    def parse(cls, text: str, *, name: str = "id") -> "ClaimId":
        """``THEOREM:CLAIM`` as :meth:`__str__` writes it; :class:`InvalidArgument` otherwise."""
        found = _quiet(text)
        if not isinstance(found, ClaimId):
            raise InvalidArgument(f"{name}: expected THEOREM:CLAIM (e.g. kkg:1), got {text!r}")
        return found


@dataclass(frozen=True, order=True)
class InstanceId:
    """One instance of one claim: the claim's identity and the instance's number in its sweep."""

    theorem: str
    claim: int
    instance: int

    def __str__(self) -> str:
        return f"{self.theorem}:{self.claim}:{self.instance}"

    @property
    def claim_id(self) -> ClaimId:
        return ClaimId(self.theorem, self.claim)

    @classmethod
    def parse(cls, text: str, *, name: str = "id") -> "InstanceId":
        """``THEOREM:CLAIM:INSTANCE`` as :meth:`__str__` writes it; :class:`InvalidArgument` otherwise."""
        found = _quiet(text)
        if not isinstance(found, InstanceId):
            raise InvalidArgument(f"{name}: expected THEOREM:CLAIM:INSTANCE (e.g. kkg:1:0), got {text!r}")
        return found


def _quiet(text: str) -> ClaimId | InstanceId | None:
    parts = text.split(":")
    numbers = [n for n in (_number(p) for p in parts[1:]) if n is not None]
    if len(parts) not in (2, 3) or not parts[0] or len(numbers) != len(parts) - 1:
        return None
    return ClaimId(parts[0], numbers[0]) if len(numbers) == 1 else InstanceId(parts[0], numbers[0], numbers[1])


def parse_id(text: str, *, name: str = "id") -> ClaimId | InstanceId:
    """A claim's (``THEOREM:CLAIM``) or an instance's (``THEOREM:CLAIM:INSTANCE``) identity.

    The theorem is everything before the numbers, so keys with a dot (``4.1``) parse too.

    >>> parse_id("4.1:0"), parse_id("4.1:0:3")
    (ClaimId(theorem='4.1', claim=0), InstanceId(theorem='4.1', claim=0, instance=3))
    """
    if not isinstance(text, str):
        raise InvalidArgument(f"{name}: expected a string THEOREM:CLAIM[:INSTANCE], got {type(text).__name__}")
    found = _quiet(text)
    if found is not None:
        return found
    raise InvalidArgument(f"{name}: expected THEOREM:CLAIM or THEOREM:CLAIM:INSTANCE (e.g. kkg:1:0), got {text[:60]!r}")
