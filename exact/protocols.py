"""The two interfaces the library is written against: :class:`Oracle` and :class:`Model`.

They are :class:`typing.Protocol` classes, checked structurally: anything with these
attributes is an oracle or a model, whether or not it derives from a class of this
library.  Learners read an oracle *only* through :class:`Oracle`; certificates
evaluate a model *only* through :class:`Model`.

Examples
--------
>>> from exact import ExactOracle, SingleHead
>>> isinstance(ExactOracle(SingleHead([[1]], [1])), Oracle), isinstance(SingleHead([[1]], [1]), Model)
(True, True)
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Protocol, runtime_checkable

__all__ = ["Oracle", "Model"]


@runtime_checkable
class Oracle(Protocol):
    """A black box answering value queries ``f(X)``, counting them and keeping a transcript.

    Attributes
    ----------
    d : int
        Token dimension.
    exact : bool
        Whether answers are exact reals (refinable to any precision as rigorous balls).
    accuracy, rtol : Fraction
        The declared absolute and relative accuracy of approximate answers (0 if exact).
    count : int
        Queries answered so far by this instance.
    transcript : tuple
        Every ``(X, answer)`` pair, in order.
    """

    d: int
    exact: bool
    accuracy: Fraction
    rtol: Fraction

    @property
    def count(self) -> int: ...

    @property
    def transcript(self) -> tuple: ...

    def require(self, n: int, *, what: str = ...) -> None:
        """Raise QueryBudgetExceeded now if ``n`` more queries do not fit the budget."""

    def error_bound(self, answer: Any) -> Fraction:
        """The bound on ``|answer − f(X)|`` (0 for exact answers)."""

    def query_batch(self, Xs: Any) -> list:
        """Answer several queries, each counted, in order."""


@runtime_checkable
class Model(Protocol):
    """A model with exact parameters that can be evaluated exactly, as a ball and in float64.

    Attributes
    ----------
    kind : str
        The model's JSON kind (``"single-head"``, ``"multi-head"``), also the model class a
        learner names in its registry entry.
    d : int
        Token dimension.
    """

    @property
    def kind(self) -> str: ...

    @property
    def d(self) -> int: ...

    def exact(self, X: Any) -> Any:
        """The exact value f(X), comparable with ``==`` to an exact answer's form."""

    def ball(self, X: Any, *, prec: int = ...) -> Any:
        """A rigorous ``arb`` ball for f(X) at ``prec`` bits."""

    def float(self, X: Any) -> Any:
        """f(X) in float64."""

    def parameters(self) -> tuple:
        """Every parameter as one flat tuple of Fractions."""

    def to_json(self) -> dict:
        """The model as JSON, rationals as ``"p/q"`` strings."""

    def canonical(self) -> Any:
        """The form results are compared in (``==``): two models with equal canonical forms
        define the same map (a multi-head model's merged heads, a ReLU network's
        function-level form)."""
