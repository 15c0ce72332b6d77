"""The learner registry: every learner declares one frozen :class:`LearnerSpec`.

The command line, ``verify`` and certificate checking find learners here, by name;
none of them imports a learner module.  The registry fills itself the first time it is
asked (:func:`get`, :func:`learners`), from two sources, in this order:

* the learners this package ships: the modules in :data:`BUILTIN`, each defining ``SPEC``
  (or a tuple ``SPECS``);
* every installed package's entry points in the group :data:`GROUP`
  (``exact_attention.learners``), each naming a ``LearnerSpec`` or a tuple of them, as
  networkx finds its backends.  A learner in another package thus reaches ``learn``,
  ``certify`` and ``verify`` without any change here (``docs/adding-a-learner.md``).

Importing a learner module registers nothing; :func:`register` adds a spec by hand (for
a session or a test).  A spec is frozen and never patched after it is registered.

A spec says what the learner learns (``model_kind``), in which arithmetics
(``modes``), with how many queries (``query_count``), and how a certificate that
names it is checked: which ``conditions`` it may record (each with a validator) and
the function that re-derives the learner's probe set from a certified model.

Examples
--------
>>> spec = get("single-head")
>>> spec.model_kind, spec.query_count(3), spec.count_formula
('single-head', 12, 'd² + d')
>>> get("no-such-learner")
Traceback (most recent call last):
...
exact.errors.InvalidArgument: learner: unknown learner 'no-such-learner'; registered: ffn, ffn-biased, ffn-float, low-rank, low-rank-cs, multi-head, multi-head-fast, multi-head-pairs, noisy-frame, noisy-paper, noisy-refine, single-head, single-head-biased, threshold, transformer, transformer-biased
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .errors import InvalidArgument

__all__ = ["LearnerSpec", "Option", "Rederived", "register", "get", "learners", "unregister", "BUILTIN", "GROUP",
           "plugin_errors"]

#: The modules of the learners this package ships, each defining ``SPEC`` or ``SPECS``.
BUILTIN = (
    "exact.learn.single_head",
    "exact.learn.single_head_biased",
    "exact.learn.low_rank",
    "exact.learn.low_rank_cs",
    "exact.learn.noisy",
    "exact.learn.noisy_frame",
    "exact.learn.noisy_refine",
    "exact.learn.threshold",
    "exact.learn.ffn",
    "exact.learn.ffn_affine",
    "exact.learn.ffn_float",
    "exact.learn.transformer",
    "exact.learn.transformer_biased",
    "exact.learn.multi_head",
)
#: The entry-point group through which other packages add learners.
GROUP = "exact_attention.learners"


@dataclass(frozen=True)
class Option:
    """A learner option as the command line offers it (``--flag VALUE``), passed on as a keyword.

    ``kind`` is ``"int"``, ``"number"`` (exact: an integer, ``p/q`` or decimal, parsed
    without evaluation), ``"positive"`` (such a number, > 0), ``"float"``, ``"str"``, ``"flag"``,
    ``"grid"`` (a grid name) or ``"dimension"`` (an integer whose cost grows with its
    square).  ``minimum`` and ``maximum`` bound an ``"int"`` or ``"dimension"``.
    ``from_model(model)``, when given, is the value the command line passes when the option
    is omitted and the black box is simulated from a model file (what the file's owner
    knows, such as a multi-head model's ``H``); it says so on stderr.  ``instead_of`` names
    the option this one replaces (``--max-heads`` instead of ``--heads``): given, the other's
    ``from_model`` does not apply.
    """

    name: str
    kind: str
    help: str
    default: Any = None
    choices: tuple | None = None
    minimum: Any = None
    required: bool = False
    maximum: Any = None
    from_model: Callable | None = field(default=None, repr=False, compare=False)
    instead_of: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


@dataclass(frozen=True)
class Rederived:
    """What a certificate check re-derived from the certified model and the transcript.

    ``check_certificate`` may return one instead of a reason: ``reason`` why the transcript
    does not identify the model (``None`` when it does), and ``standing``, the assumptions
    the claim rests on *as re-derived here* (an argument that removes an assumption, such
    as the ReLU learner's "all m units seen", is re-derived from the transcript, never read
    from the certificate).
    """

    reason: str | None = None
    standing: tuple = ()


@dataclass(frozen=True)
class LearnerSpec:
    """Everything the rest of the library needs to know about one learner.

    Attributes
    ----------
    name : str
        Registry key and certificate label, e.g. ``"single-head"``.
    summary : str
        One line: what it learns, from which theorem.
    model_kind : str
        The JSON kind of the models it learns (``"single-head"``).
    modes : tuple of str
        The arithmetics it runs in (``"certified"``, ``"symbolic"``, ``"float"``, ...).
    learn : callable
        ``learn(oracle, **options) -> LearnResult``.
    query_count : callable
        The stated count: ``query_count(d, **conditions) -> int``.
    count_formula : str
        The count as a formula, for reports (``"d² + d"``).
    count_text : callable or None
        ``count_text(result) -> str``: the count a result was asked to meet, as a formula
        with its value, for the terminal (default: ``count_formula = query_count(d, **conditions)``).
    exact : bool
        Whether its results are exact and carry certificates.
    conditions : mapping of str to callable
        The conditions a certificate of this learner may record, each with a
        validator ``value -> bool``; anything else is rejected.
    check_certificate : callable or None
        ``check_certificate(model, transcript, conditions) -> None or reason``:
        re-derives the learner's probe set (and any assumption such as a rank bound)
        from the certified model and says why the transcript does not match.  It may
        return a :class:`Rederived` instead, which also states the standing assumptions
        as re-derived from the transcript (they replace ``standing(conditions)``).
    scope : callable
        ``scope(conditions) -> str``: what a holding certificate covers.
    unchecked : callable
        ``unchecked(conditions) -> tuple of str``: the assumptions the exactness rests
        on when no verification queries were made ("among bias-free single heads", ...).
    model_class : callable
        ``model_class(conditions) -> str``: the class the learner assumes, for the message
        of a failed verification ("a single head of rank <= 2"); default from ``model_kind``.
    options : tuple of Option
        Keyword options offered on the command line.
    adversary : callable, str or None
        For noisy learners: ``adversary(truth, tau=τ, **options) -> strategy``, a
        learner-aware choice of noise for :class:`~exact.noise.Adversarial`; or its
        ``"module:function"`` reference, resolved on use (:meth:`load_adversary`), for an
        adversary that itself simulates the learner's module.
    command, method : str
        The command line's ``learn COMMAND [--method METHOD]`` for this learner.
    standing : callable
        ``standing(conditions) -> tuple of str``: assumptions the exactness rests on that
        verification queries cannot discharge (a ReLU network's kinks that could hide from
        any finite set of queries); stated on every result and required on every
        certificate of this learner.  A learner whose standing assumptions depend on what
        its run saw passes them to :meth:`~exact.learn.driver.Run.finish` and re-derives
        them in ``check_certificate`` (:class:`Rederived`); ``standing(conditions)`` is
        then the most it can rest on.
    selector : tuple of (str, str), optional
        ``(option, value)``: ``--option value`` on the command line selects this learner
        among its command's (the noisy learners: ``--learner frame``).
    switch : str, optional
        A flag that selects this learner (``--threshold``); the learner then reads the
        selectors' options as its own.
    noisy_default : bool
        The learner a noisy black box gets when no learner is named.
    takes_noise : bool
        Whether the learner accepts a simulated noisy oracle (``--noise``).
    claims : callable, optional
        ``claims(budget) -> list of exact.verify.Claim``: what ``exact-attention verify``
        checks for this learner when it is not one of the built-in theorems (a plug-in's own
        claims; ``verify`` runs them under the learner's name).
    rederive_in_run : bool
        Whether the driver re-derives the probe set of the learner's own run when it
        builds the certificate (``False`` when that means re-running the learner, as for
        an adaptive search; the certificate's own :meth:`check` always re-derives it).
    """

    name: str
    summary: str
    model_kind: str
    modes: tuple
    learn: Callable = field(repr=False)
    query_count: Callable = field(repr=False)
    count_formula: str = ""
    count_text: Callable | None = field(default=None, repr=False)
    exact: bool = True
    conditions: Mapping = field(default_factory=dict, repr=False)
    check_certificate: Callable | None = field(default=None, repr=False)
    scope: Callable = field(default=lambda conditions: "", repr=False)
    unchecked: Callable = field(default=lambda conditions: (), repr=False)
    model_class: Callable = field(default=None, repr=False)  # type: ignore[assignment]
    options: tuple = ()
    adversary: Callable | str | None = field(default=None, repr=False)
    command: str = ""
    method: str = ""
    rederive_in_run: bool = True
    standing: Callable = field(default=lambda conditions: (), repr=False)
    selector: tuple | None = None
    switch: str | None = None
    noisy_default: bool = False
    takes_noise: bool = True
    claims: Callable | None = field(default=None, repr=False)

    def __post_init__(self):
        if not self.name or not isinstance(self.name, str):
            raise InvalidArgument(f"name: expected a non-empty learner name, got {self.name!r}")
        object.__setattr__(self, "conditions", MappingProxyType(dict(self.conditions)))
        object.__setattr__(self, "modes", tuple(self.modes))
        object.__setattr__(self, "command", self.command or self.name)
        object.__setattr__(self, "method", self.method or self.name)
        if self.model_class is None:
            kind = self.model_kind.replace("-", " ")
            article = "an" if kind[:1] in "aeiou" else "a"
            object.__setattr__(self, "model_class", lambda conditions: f"{article} {kind}")

    def load_adversary(self) -> Callable | None:
        """The adversary, with a ``"module:function"`` reference imported."""
        if not isinstance(self.adversary, str):
            return self.adversary
        import importlib

        module, _, attr = self.adversary.partition(":")
        return getattr(importlib.import_module(module), attr)

    def state_count(self, result) -> str:
        """The count ``result`` was asked to meet, as text (see ``count_text``)."""
        if self.count_text is not None:
            return self.count_text(result)
        conditions = dict(result.certificate.conditions) if result.certificate is not None else {}
        try:
            n = self.query_count(result.model.d, **conditions)
        except TypeError:
            n = self.query_count(result.model.d)
        return f"{self.count_formula} = {n}" if n is not None else self.count_formula

    def validate_conditions(self, conditions: Mapping) -> str | None:
        """Why ``conditions`` is not a valid set for this learner, or ``None``."""
        if not isinstance(conditions, Mapping):
            return f"conditions: expected an object, got {type(conditions).__name__}"
        for key, value in conditions.items():
            ok = self.conditions.get(key)
            if ok is None:
                allowed = ", ".join(sorted(self.conditions)) or "none"
                return f"conditions: {key!r} is not a condition of learner {self.name!r} (allowed: {allowed})"
            if not ok(value):
                return f"conditions: {key}={value!r} is not a valid value for learner {self.name!r}"
        return None


_REGISTRY: dict[str, LearnerSpec] = {}
_LOADED = False
_BUILTINS_LOADED = False
_ERRORS: list[str] = []


def _specs_of(obj, where: str) -> tuple:
    specs = obj if isinstance(obj, (tuple, list)) else (obj,)
    bad = [x for x in specs if not isinstance(x, LearnerSpec)]
    if bad or not specs:
        raise InvalidArgument(f"{where}: expected a LearnerSpec or a tuple of them, got {type(bad[0] if bad else obj).__name__}")
    return tuple(specs)


def _load_builtins() -> None:
    """Fill the registry with the built-in learners, once (no plug-in looked for), in :data:`BUILTIN` order."""
    global _BUILTINS_LOADED
    if _BUILTINS_LOADED:
        return
    _BUILTINS_LOADED = True
    import importlib

    found = dict(_REGISTRY)  # built-in specs already read from imported modules (_load_imported_builtins)
    _REGISTRY.clear()
    for path in BUILTIN:
        module = importlib.import_module(path)
        for spec in _specs_of(getattr(module, "SPECS", None) or module.SPEC, path):
            _REGISTRY.setdefault(spec.name, found.get(spec.name, spec))
    for name, spec in found.items():
        _REGISTRY.setdefault(name, spec)


def _load_imported_builtins() -> None:
    """Read the specs of the built-in modules imported already (no import, so no cost in a fresh process);
    :func:`_load_builtins` later puts every built-in in order."""
    import sys

    for path in BUILTIN:
        module = sys.modules.get(path)
        specs = (getattr(module, "SPECS", None) or getattr(module, "SPEC", None)) if module is not None else None
        if specs is not None:  # (None while the module is still being imported)
            for spec in _specs_of(specs, path):
                _REGISTRY.setdefault(spec.name, spec)


def _load() -> None:
    """Fill the registry once: the built-in learners, then the installed plug-ins."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    _load_builtins()
    from importlib.metadata import entry_points

    for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
        try:
            specs = _specs_of(ep.load(), f"entry point {ep.name} = {ep.value}")
        except Exception as e:  # a broken plug-in must not break the built-in learners
            _ERRORS.append(f"learner plug-in {ep.name!r} ({ep.value}) failed to load: {type(e).__name__}: {e}"[:300])
            continue
        for spec in specs:
            if spec.name in _REGISTRY:
                _ERRORS.append(f"learner plug-in {ep.name!r} ({ep.value}): the name {spec.name!r} is taken; not loaded")
                continue
            _REGISTRY[spec.name] = spec


def plugin_errors() -> tuple[str, ...]:
    """Why installed learner plug-ins were not loaded (empty when every one loaded)."""
    _load()
    return tuple(_ERRORS)


def register(spec: LearnerSpec, *, replace: bool = False) -> LearnerSpec:
    """Add a learner to the registry (``replace=True`` to overwrite one of the same name)."""
    if not isinstance(spec, LearnerSpec):
        raise InvalidArgument(f"spec: expected a LearnerSpec, got {type(spec).__name__}")
    _load()
    if spec.name in _REGISTRY and not replace:
        raise InvalidArgument(f"learner: {spec.name!r} is already registered (pass replace=True to overwrite)")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Remove a learner (for tests and plug-in reloading)."""
    _load()
    _REGISTRY.pop(name, None)


def get(name: str) -> LearnerSpec:
    """The spec registered under ``name``."""
    # A plug-in never takes a built-in name, so a built-in learner is found without scanning the
    # installed packages for plug-ins (a certificate check inside a learner's run need not), and
    # one whose module is imported already without importing the others.
    if not _BUILTINS_LOADED and isinstance(name, str) and name not in _REGISTRY:
        _load_imported_builtins()
    if not (isinstance(name, str) and name in _REGISTRY):
        _load_builtins()
    if not (isinstance(name, str) and name in _REGISTRY):
        _load()
    spec = _REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        raise InvalidArgument(f"learner: unknown learner {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    return spec


def learners() -> tuple[LearnerSpec, ...]:
    """Every registered spec: the built-in ones in :data:`BUILTIN` order, then the plug-ins."""
    _load()
    return tuple(_REGISTRY.values())


def int_at_least(low: int) -> Callable[[object], bool]:
    """A validator for integers ``>= low`` (booleans refused)."""
    return lambda x: isinstance(x, int) and not isinstance(x, bool) and x >= low
