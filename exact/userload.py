"""Loading a user's callable by name, as ``--oracle MODULE:CALLABLE`` and ``--torch MODULE:ATTR`` do.

Importing the module runs its code: the command line says so in its help.  Modules of the
working directory are found, as pytest and uvicorn find them.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable

from .errors import InvalidArgument

__all__ = ["load_callable"]


def load_callable(text: str, *, option: str) -> Callable:
    """The callable ``ATTR`` of module ``MODULE`` for ``text = "MODULE:ATTR"``, or InvalidArgument
    naming ``option`` and what went wrong.

    >>> load_callable("math:sqrt", option="--oracle")(4.0)
    2.0
    >>> load_callable("math:pi", option="--oracle")
    Traceback (most recent call last):
    ...
    exact.errors.InvalidArgument: --oracle: 'math' has no callable 'pi'
    """
    module_name, sep, attr = text.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidArgument(f"{option}: expected MODULE:ATTR, got {text!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise InvalidArgument(f"{option}: cannot import module {module_name!r}: {type(e).__name__}: {e}"[:280]) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InvalidArgument(f"{option}: {module_name!r} has no callable {attr!r}")
    return fn
