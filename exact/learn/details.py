"""Results describe themselves: the typed, frozen details of each learner family.

Every learner family declares a subclass of :class:`Details` next to the code that fills
it.  A details object

* holds the family's facts as typed fields (and reads like a mapping of them, so
  ``result.details["rank"]`` keeps working);
* says what the terminal shows about them (:meth:`Details.rows`) and how they look as JSON
  (:meth:`Details.to_json`);
* compares the result with the true model when one is known, as the command line does
  with a model file (:meth:`Details.compare`): exact results by their canonical forms,
  approximate ones by their measured errors against the bound they state.

The driver adds what it knows to every result's details: the verification queries
(:class:`Checks`).

Examples
--------
>>> from exact import ExactOracle, SingleHead, learn_single_head
>>> truth = SingleHead([[1, 2], [0, -1]], [1, 0])
>>> r = learn_single_head(ExactOracle(truth))
>>> r.details["pivot"], r.details.checks.queries
(0, 2)
>>> r.details.compare(r, truth).same
True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..numbers import format_rational

__all__ = ["Details", "Checks", "Comparison", "Extra", "as_details", "jsonable", "head_errors"]


def jsonable(value: Any) -> Any:
    """A detail as JSON: objects by their ``to_json``, rationals as ``"p/q"``, tuples as lists."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, Fraction):
        return format_rational(value)
    if isinstance(value, (tuple, list)):
        return [jsonable(x) for x in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (np.integer, np.floating)):
        return value.item()
    if isinstance(value, np.ndarray):
        return [jsonable(x) for x in value.tolist()]
    if isinstance(value, float) and not np.isfinite(value):
        return "Infinity" if value > 0 else ("-Infinity" if value < 0 else "NaN")
    return value


class _Fields(Mapping):
    """A frozen dataclass that also reads as the mapping of its fields (``ALIASES`` renames keys)."""

    ALIASES: dict = {}

    def _names(self) -> list[str]:
        return [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        name = {v: k for k, v in self.ALIASES.items()}.get(key, key)
        if name not in self._names():
            raise KeyError(key)
        return getattr(self, name)

    def __iter__(self) -> Iterator[str]:
        return (self.ALIASES.get(n, n) for n in self._names())

    def __len__(self) -> int:
        return len(self._names())

    def to_json(self) -> dict:
        return {k: jsonable(v) for k, v in self.items()}


@dataclass(frozen=True)
class Checks(_Fields):
    """The verification queries of a run: how many, their lengths, their seed (``None`` when none)."""

    queries: int = 0
    lengths: tuple = ()
    seed: int | None = None


@dataclass(frozen=True)
class Comparison:
    """A result against the true model.

    Attributes
    ----------
    same : bool
        An exact result equals the truth in the form it claims (canonical forms, and the
        unit level where it is claimed identified); ``False`` for approximate results.
    within : bool
        Every bound or estimate the result states holds for its measured error (``True``
        when it states none).
    measured : dict or None
        The measured errors of an approximate result.
    rows : tuple of (str, str)
        What the terminal shows about the comparison.
    """

    same: bool
    within: bool = True
    measured: dict | None = None
    rows: tuple = ()

    def to_json(self) -> dict:
        out: dict = {"equals_model": self.same}
        if self.measured is not None:
            out["measured_error"] = {k: (v if v != float("inf") else "Infinity") for k, v in self.measured.items()}
            out["within_bound"] = self.within
        return out


def head_errors(learned, truth) -> dict:
    """The errors of a single-head estimate against the truth: ``‖ΔW‖_F``, ``max |ΔW_ij|``, ``‖Δv‖``,
    ``max |Δv_i|``, and for heads with biases ``max |Δc_i|`` and ``|Δb|``."""
    W, v = (np.array(x, dtype=float) for x in learned.to_numpy())
    Wt, vt = (np.array(x, dtype=float) for x in truth.to_numpy())
    out = {"W_frobenius": float(np.linalg.norm(W - Wt)), "W_max": float(np.abs(W - Wt).max(initial=0.0)),
           "v_norm": float(np.linalg.norm(v - vt)), "v_max": float(np.abs(v - vt).max(initial=0.0))}
    if getattr(learned, "biased", False) or getattr(truth, "biased", False):
        (c, b), (ct, bt) = learned.biases_numpy(), truth.biases_numpy()
        out |= {"c_max": float(np.abs(c - ct).max(initial=0.0)), "b": abs(b - bt)}
    return out


def _fmt(result):
    return format_rational if result.exact else (lambda x: f"{float(x):.17g}")


@dataclass(frozen=True)
class Details(_Fields):
    """Learner-specific facts; the base of every family's details (see the module docstring).

    ``checks`` is filled in by the driver.
    """

    checks: Checks = field(default_factory=Checks, kw_only=True)

    def rows(self, result) -> list:
        """``(label, text)`` lines the terminal shows about these details (none by default)."""
        return []

    def model_rows(self, result) -> list:
        """Lines that show the learned model; by default its ``W`` and ``v`` (single heads)."""
        fmt = _fmt(result)
        model = result.model
        lines = ["W ="] + ["  [" + ", ".join(fmt(x) for x in row) + "]" for row in model.W]
        lines += ["v = [" + ", ".join(fmt(x) for x in model.v) + "]"]
        if getattr(model, "biased", False):
            lines += ["c = [" + ", ".join(fmt(x) for x in model.c) + "]", f"b = {fmt(model.b)}"]
        return lines

    def compare(self, result, truth) -> Comparison:
        """The result against ``truth``: an exact result by canonical forms; an approximate one by
        its errors against its certified bound (if it states one)."""
        if result.exact:
            same = result.model.canonical() == truth.canonical()
            verdict = "yes: equal to the model" if same else "NO: differs from the model"
            suffix = f" ({', '.join(result.assumptions)})" if result.assumptions else ""
            return Comparison(same, rows=(("exact", verdict + suffix),))
        measured = head_errors(result.model, truth)
        if result.error_bound is None:  # a first-order estimate, not a bound: shown, not held to
            est = "" if result.error_estimate is None else f"estimated <= {result.error_estimate:.3g}; "
            biases = (f", max |Δc_i| = {measured['c_max']:.3g}, |Δb| = {measured['b']:.3g}"
                      if "c_max" in measured else "")
            return Comparison(False, True, measured, rows=(
                ("error", f"{est}measured max |ΔW_ij| = {measured['W_max']:.3g}, max |Δv_i| = "
                          f"{measured['v_max']:.3g}{biases} against the true model"),))
        b = result.error_bound
        within = all(measured[k] <= v for k, v in b.to_json().items())
        verdict = "yes" if within else "NO: the bound does not hold"
        return Comparison(False, within, measured, rows=(
            ("bound", f"certified ‖ΔW‖_F <= {b.W_frobenius:.3g}, max |ΔW_ij| <= {b.W_max:.3g}, "
                      f"‖Δv‖ <= {b.v_norm:.3g} ({'; '.join(result.assumptions)})"),
            ("measured", f"‖ΔW‖_F = {measured['W_frobenius']:.3g}, max |ΔW_ij| = {measured['W_max']:.3g}, "
                         f"‖Δv‖ = {measured['v_norm']:.3g} against the true model; within the bound: {verdict}"),
        ))


@dataclass(frozen=True)
class Extra(Details):
    """Details given as a plain mapping (a learner outside this package that declares no class)."""

    entries: Mapping = field(default_factory=dict)

    def __getitem__(self, key: str) -> Any:
        if key in self.entries:
            return self.entries[key]
        return super().__getitem__(key)

    def __iter__(self) -> Iterator[str]:
        return iter([*self.entries, "checks"])

    def __len__(self) -> int:
        return len(self.entries) + 1

    def to_json(self) -> dict:
        return {**{str(k): jsonable(v) for k, v in self.entries.items()}, "checks": self.checks.to_json()}


def as_details(details) -> Details:
    """``details`` as a :class:`Details` (a mapping becomes :class:`Extra`)."""
    if details is None:
        return Details()
    if isinstance(details, Details):
        return details
    if isinstance(details, Mapping):
        return Extra(entries=dict(details))
    raise TypeError(f"details: expected a Details object or a mapping, got {type(details).__name__}")
