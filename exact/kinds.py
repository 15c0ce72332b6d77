"""The table of model kinds: the one place that knows which models exist.

A kind is a JSON ``"kind"`` string and a model class with ``from_json``, ``to_json`` and
``canonical()`` (the form results are compared in, :class:`~exact.protocols.Model`).  The
command line's ``random`` subcommands, JSON loading and the coercions between kinds (a
single head *is* a multi-head model with ``H = 1``) all read this table; nothing else
switches on a kind.

Adding a model kind means its own module (the class) and one :class:`ModelKind` row here.

Examples
--------
>>> sorted(KINDS)
['ffn', 'multi-head', 'single-head', 'transformer']
>>> get_kind("ffn").summary
'a ReLU network g(x) = wᵀReLU(Ax) (optionally with biases: wᵀReLU(Ax + a) + b)'
>>> [r.command for r in random_recipes()]
['single-head', 'low-rank', 'multi-head', 'ffn', 'transformer']
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidArgument, InvalidFormat
from .ffn import ReLUFFN
from .jsonfields import check_kind, short_repr
from .models import SingleHead
from .multihead import MultiHead
from .registry import Option
from .transformer import Transformer

__all__ = ["ModelKind", "RandomRecipe", "KINDS", "get_kind", "model_from_json", "random_recipes", "as_kind"]

MAX_RANDOM_D = 1024
_GRID = "grid of the entries (default rational:7): rational:Q (denominators <= Q), dyadic:k (multiples of 2^-k), " \
        "float16, bfloat16, float32, float64"


def _common(d_max: int = MAX_RANDOM_D) -> tuple:
    return (
        Option("d", "dimension", f"token dimension (1..{d_max})", minimum=1, maximum=d_max, required=True),
        Option("seed", "int", "seed of the generator", default=0, minimum=0),
        Option("grid", "grid", _GRID, default="rational:7"),
        Option("bound", "positive", "magnitude of the entries (an exact number > 0, e.g. 1e6)", default="2"),
    )


@dataclass(frozen=True)
class RandomRecipe:
    """A ``random COMMAND`` of the command line: its options and how it draws a model.

    ``make(**options)`` receives every option by name (the defaults filled in).
    """

    command: str
    summary: str
    options: tuple
    make: Callable[..., Any] = field(repr=False)


@dataclass(frozen=True)
class ModelKind:
    """One kind of model.

    Attributes
    ----------
    name : str
        The JSON ``"kind"``.
    model_class : type
        Its class: ``from_json``, ``to_json``, ``canonical()``.
    summary : str
        What it is, in one line.
    recipes : tuple of RandomRecipe
        The ``random`` subcommands that draw it.
    accepts : mapping of str to callable
        Other kinds a learner of this kind takes, each with its conversion (a single head
        is a multi-head model with one head).
    """

    name: str
    model_class: Any
    summary: str
    recipes: tuple = ()
    accepts: dict = field(default_factory=dict)


def _single_head(*, d, seed, grid, bound, v_zeros=0, rank=None, biases=False):
    return SingleHead.random(d, seed=seed, grid=grid, bound=bound, v_zeros=v_zeros, rank=rank, biases=biases)


def _multi_head(*, d, heads, seed, grid, bound, duplicate_w=False, shared_v=False, zero_v=False, biases=False,
                shared_w=False):
    return MultiHead.random(d, heads, seed=seed, grid=grid, bound=bound, duplicate_w=duplicate_w, shared_v=shared_v,
                            zero_v=zero_v, biases=biases, shared_w=shared_w)


def _ffn(*, d, m, seed, grid, bound, biases=False):
    return ReLUFFN.random(d, m, seed=seed, grid=grid, bound=bound, biases=biases)


def _transformer(*, d, m, seed, grid, bound, biases=False, residual=False):
    return Transformer.random(d, m, seed=seed, grid=grid, bound=bound, biases=biases, residual=residual)


_V_ZEROS = Option("v_zeros", "int", "how many entries of v are zero", default=0, minimum=0)
_UNITS = Option("m", "int", f"number of hidden units (1..{MAX_RANDOM_D})", minimum=1, maximum=MAX_RANDOM_D, required=True)

KINDS: dict[str, ModelKind] = {
    k.name: k
    for k in (
        ModelKind("single-head", SingleHead, "a single softmax head f(X) = Σ softmax(XWx_N)_i vᵀx_i (optionally "
                  "with biases: f(X) = b + Σ softmax(X(Wx_N + c))_i vᵀx_i)", (
            RandomRecipe("single-head", "a random single softmax head",
                         _common() + (_V_ZEROS, Option("rank", "int", "make rank(W) <= RANK (W = A·B)", minimum=0),
                                      Option("biases", "flag", "also draw the biases c (score) and b (output) of a "
                                                               "torch head: s_i = x_iᵀ(Wx_N + c), f = b + Σ α_i vᵀx_i")),
                         _single_head),
            RandomRecipe("low-rank", "a random single head with rank(W) <= RANK",
                         _common() + (_V_ZEROS, Option("rank", "int", "rank bound r (W = A·B, A d×r, B r×d)",
                                                       minimum=0, required=True)), _single_head),
        )),
        ModelKind("multi-head", MultiHead, "a sum of H softmax heads (optionally with biases: a score bias c_h "
                  "per head and one output bias b)", (
            RandomRecipe("multi-head", "a random sum of H softmax heads (optionally with the non-identifiable "
                         "structures: a duplicate W, a shared v, a zero v)",
                         _common(256) + (
                             Option("heads", "int", "number of heads H (1..64)", minimum=1, maximum=64, required=True),
                             Option("duplicate_w", "flag", "head 2 takes head 1's W (they merge canonically)"),
                             Option("shared_v", "flag", "the last head takes head 1's v (with its own W)"),
                             Option("zero_v", "flag", "the last head gets v = 0 (dropped canonically)"),
                             Option("biases", "flag", "also draw a score bias c_h per head and one output bias b "
                                                      "(torch's heads); --duplicate-w then copies (W, c)"),
                             Option("shared_w", "flag", "with --biases: head 2 takes head 1's W with its own c "
                                                        "(they stay two heads)"),
                         ), _multi_head),
        ), accepts={"single-head": lambda model: MultiHead([model])}),
        ModelKind("ffn", ReLUFFN, "a ReLU network g(x) = wᵀReLU(Ax) (optionally with biases: wᵀReLU(Ax + a) + b)", (
            RandomRecipe("ffn", "a random ReLU network g(x) = wᵀReLU(Ax) (with --biases: wᵀReLU(Ax + a) + b)",
                         _common() + (_UNITS, Option("biases", "flag", "also draw the hidden biases a and the output "
                                                                       "bias b (torch's nn.Linear default)")), _ffn),
        )),
        ModelKind("transformer", Transformer, "a one-layer Transformer T(X) = wᵀReLU(A·h(X)) (optionally with biases, "
                  "a value map and a residual: wᵀReLU(A(x_N + h(X)) + a) + b)", (
            RandomRecipe("transformer", "a random one-layer Transformer T(X) = wᵀReLU(A·h(X)) (with --biases: "
                         "h(X) = Σ softmax(X(Wx_N + c))_i (Vx_i + μ), wᵀReLU(A·h(X) + a) + b)", _common() + (
                             _UNITS, Option("biases", "flag", "also draw the score bias c, the value map V and its "
                                            "bias μ, and the FFN's biases a and b"),
                             Option("residual", "flag", "with --biases: T(X) = wᵀReLU(A(x_N + h(X)) + a) + b")),
                         _transformer),
        )),
    )
}


def get_kind(name: str) -> ModelKind:
    """The kind called ``name``."""
    kind = KINDS.get(name) if isinstance(name, str) else None
    if kind is None:
        raise InvalidArgument(f"kind: unknown model kind {short_repr(name)}; known: {', '.join(sorted(KINDS))}")
    return kind


def random_recipes() -> tuple:
    """Every ``random`` subcommand, in table order."""
    return tuple(r for k in KINDS.values() for r in k.recipes)


def as_kind(model, name: str):
    """``model`` as a model of kind ``name`` (itself, or converted as the kind accepts), or
    :class:`~exact.errors.InvalidArgument`.

    >>> as_kind(SingleHead([[1]], [2]), "multi-head").H
    1
    """
    have = getattr(model, "kind", None)
    if have == name:
        return model
    convert = get_kind(name).accepts.get(have)
    if convert is None:
        raise InvalidArgument(f"model: expected a {name} model, got a {have or type(model).__name__}")
    return convert(model)


def model_from_json(data):
    """Build a model from its JSON object, dispatching on ``"kind"`` through :data:`KINDS`.

    >>> model_from_json({"kind": "single-head", "W": [["1/2"]], "v": ["3"]})
    SingleHead(W=((Fraction(1, 2),),), v=(Fraction(3, 1),))
    >>> model_from_json({"kind": ["single-head"], "W": [["1/2"]], "v": ["3"]})
    Traceback (most recent call last):
    ...
    exact.errors.InvalidFormat: model: field 'kind': expected a string, one of ['ffn', 'multi-head', 'single-head', 'transformer'], got a list
    """
    if not isinstance(data, dict):
        raise InvalidFormat(f"model: expected a JSON object, got {type(data).__name__}")
    name = check_kind(data, where="model", default="single-head", allowed=KINDS)
    kind = KINDS.get(name)
    if kind is None:
        raise InvalidFormat(f"model: unknown kind {short_repr(name)}; expected one of {sorted(KINDS)}")
    return kind.model_class.from_json(data)
