"""The command line's argument types: every value is validated, with one-line messages.

Options declared by learners and model kinds (:class:`~exact.registry.Option`) become
``argparse`` arguments through :func:`add_option`; nothing here knows a learner or a kind.
"""

from __future__ import annotations

import argparse
import re
from fractions import Fraction

from .errors import ExactAttentionError
from .grids import parse_grid
from .noise import parse_noise
from .numbers import format_rational, parse_rational
from .registry import Option

__all__ = ["EXIT_FAIL", "EXIT_ERROR", "Parser", "add_option", "int_type", "number", "grid", "noise", "oracle_choice",
           "nonneg_number", "duration", "size", "positive_float", "GRIDS_HELP"]

EXIT_FAIL = 1  # a claim or certificate does not hold
EXIT_ERROR = 2  # bad input, or the problem has no answer (not identifiable, ...)

GRIDS_HELP = "rational:Q (denominators <= Q), dyadic:k (multiples of 2^-k), float16, bfloat16, float32, float64"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2)."""

    def error(self, message: str):
        command = self.prog.removeprefix("exact-attention").strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_ERROR, f"exact-attention: error: {where}{message} (see {self.prog} --help)\n")


def int_type(low: int, high: int | None = None):
    """An integer in ``low..high`` (``high`` ``None``: unbounded); the message says which bound failed.

    >>> int_type(0, 9)("12")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer in 0..9, got 12
    >>> int_type(1)("12345678901234567890")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer >= 1 of at most 12 digits, got a 20-digit integer
    """
    bound = f">= {low}" if high is None else f"in {low}..{high}"

    def parse(text: str) -> int:
        t = text.strip()
        digits = t.lstrip("+-")
        if not (digits.isascii() and digits.isdigit()):
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {text[:40]!r}")
        if len(digits) > 12:
            raise argparse.ArgumentTypeError(f"expected an integer {bound} of at most 12 digits, got a "
                                             f"{len(digits)}-digit integer")
        n = int(t)
        if n < low or (high is not None and n > high):
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {n}")
        return n

    return parse


def duration(seconds: float) -> str:
    for unit, span in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.3g} {unit}"
    return f"{seconds:.2g} s"


def size(nbytes: float) -> str:
    for unit, span in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= span:
            return f"{nbytes / span:.3g} {unit}"
    return f"{nbytes:.3g} bytes"


def dimension(high: int):
    """A token dimension in ``1..high``; above it, what it would cost."""

    def parse(text: str) -> int:
        d = int_type(1)(text)
        if d > high:
            entries = d * d
            raise argparse.ArgumentTypeError(
                f"expected an integer in 1..{high}, got {d}: W alone would hold {entries:.3g} exact entries, "
                f"about {duration(entries * 10e-6)} and {size(entries * 100)} to draw (and d² + d = "
                f"{entries + d:.3g} queries to learn)"
            )
        return d

    return parse


def number(text: str) -> Fraction:
    try:
        return parse_rational(text, name="value")
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value: ")) from None


def positive_number(text: str) -> Fraction:
    """An exact number > 0 (``--bound``).

    >>> positive_number("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a number > 0, got -1
    """
    q = number(text)
    if q <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {format_rational(q)}")
    return q


def positive_float(text: str) -> float:
    q = number(text)
    if q <= 0 or q > 10**6:
        raise argparse.ArgumentTypeError(f"expected a positive number up to 1e6, got {text[:40]!r}")
    return float(q)


def nonneg_number(text: str) -> Fraction:
    q = number(text)
    if q < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text[:40]!r}")
    return q


def seconds(text: str) -> float:
    """A positive number of seconds (``--scheduler-timeout``).

    >>> seconds("-1")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a number of seconds > 0, got -1
    """
    q = number(text)
    if q <= 0 or q > 10**6:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {format_rational(q)}")
    return float(q)


def oracle_choice(text: str) -> str:
    if text in ("exact", "float") or re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", text):
        return text
    raise argparse.ArgumentTypeError(f"expected 'exact', 'float' or MODULE:CALLABLE, got {text[:40]!r}")


def noise(text: str):
    try:
        return parse_noise(text)
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def grid(text: str) -> str:
    try:
        parse_grid(text)
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("grid: ")) from None
    return text


_TYPES = {
    "int": lambda opt: int_type(opt.minimum if opt.minimum is not None else -(2**62), opt.maximum),
    "dimension": lambda opt: dimension(opt.maximum or 1024),
    "number": lambda opt: number,
    "positive": lambda opt: positive_number,
    "float": lambda opt: positive_float,
    "str": lambda opt: str,
    "grid": lambda opt: grid,
}


def add_option(parser, opt: Option, *, help: str | None = None, default_from_option: bool = False) -> None:
    """Add ``opt`` as ``--flag`` (a flag for ``kind="flag"``).  The parsed value defaults to
    ``None`` (the learner's own default applies) unless ``default_from_option``."""
    text = help if help is not None else opt.help + (f" (default {opt.default})" if opt.default is not None else "")
    default = opt.default if default_from_option else None
    if opt.kind == "flag":
        parser.add_argument(opt.flag, dest=opt.name, action="store_const", const=True,
                            default=False if default_from_option else None, help=text)
        return
    if opt.choices:
        parser.add_argument(opt.flag, dest=opt.name, choices=opt.choices, default=default, help=text,
                            required=opt.required and default_from_option)
        return
    parser.add_argument(opt.flag, dest=opt.name, type=_TYPES[opt.kind](opt), default=default, help=text,
                        required=opt.required and default_from_option)
