"""Every annotation of a module evaluates: documentation tools, ``typing.get_type_hints`` and
runtime checkers read them, and with postponed evaluation nothing else would notice one that
does not (``int >> None``, a misspelt name)."""

import inspect
import typing


def defined_in(module) -> list:
    """The functions and classes ``module`` defines, with the methods of those classes."""
    out = []
    for _, obj in inspect.getmembers(module):
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(obj):
            out.append(obj)
        elif inspect.isclass(obj):
            out.append(obj)
            # written methods only: a dataclass's generated __init__ names the base classes' field types,
            # which the module need not import
            methods = [f for _, f in inspect.getmembers(obj, inspect.isfunction)]
            methods += [p.fget for _, p in inspect.getmembers(obj, lambda x: isinstance(x, property)) if p.fget]
            out += [f for f in methods
                    if f.__module__ == module.__name__ and f.__code__.co_filename == module.__file__]
    return out


def assert_annotations_evaluate(*modules) -> int:
    """Evaluate every annotation in ``modules`` (raises on the first that does not); returns how many
    objects were read."""
    n = 0
    for module in modules:
        for obj in defined_in(module):
            typing.get_type_hints(obj)
            n += 1
    return n
