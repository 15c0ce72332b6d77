"""The exception hierarchy of exact-attention.

Every error the library raises on purpose derives from :class:`ExactAttentionError`
and from the built-in exception a caller would expect, so both
``except ExactAttentionError`` and ``except ValueError`` work.
"""

from __future__ import annotations

__all__ = [
    "ExactAttentionError",
    "InvalidNumber",
    "ShapeError",
    "NotIdentifiable",
    "PrecisionInsufficient",
    "QueryBudgetExceeded",
    "OracleInconsistent",
    "CertificateInvalid",
    "InvalidFormat",
    "InvalidArgument",
    "MissingDependency",
    "SolverFailed",
]


class ExactAttentionError(Exception):
    """Base class of every error raised by exact-attention."""


class InvalidNumber(ExactAttentionError, ValueError):
    """A value is not a finite real number that can be taken exactly (NaN, inf, text)."""


class ShapeError(ExactAttentionError, ValueError):
    """An array, matrix or sequence has the wrong shape."""


class NotIdentifiable(ExactAttentionError, ValueError):
    """No set of queries can determine the parameters (for example v = 0)."""


class PrecisionInsufficient(ExactAttentionError, ArithmeticError):
    """The answers are not precise enough to certify a result.

    Raised instead of returning a guess: a result called exact is never a guess.
    """


class QueryBudgetExceeded(ExactAttentionError, RuntimeError):
    """An oracle's query budget would be exceeded."""


class OracleInconsistent(ExactAttentionError, ValueError):
    """The oracle's answers cannot come from a model of the assumed class."""


class CertificateInvalid(ExactAttentionError, ValueError):
    """A certificate does not check: the result does not reproduce its transcript."""


class InvalidFormat(ExactAttentionError, ValueError):
    """A file or JSON document is not of the expected form."""


class InvalidArgument(ExactAttentionError, ValueError):
    """An argument of a public function is out of its domain (a mode, a seed, a size, ...)."""


class MissingDependency(ExactAttentionError, ImportError):
    """An optional dependency (an extra such as ``cs`` or ``torch``) is not installed."""


class SolverFailed(ExactAttentionError, ArithmeticError):
    """A numerical solver (the convex program of the compressed-sensing learner) returned no solution."""
