"""Certificates: replay a transcript against a recovered model and decide equality.

An exact result carries the transcript of the queries that produced it.  Checking
the certificate means evaluating the recovered model on every query and deciding
that each value is **equal** to the oracle's answer.  Every exact answer is a ratio
of exp-polynomials ``Σ c_k e^{q_k}`` with rational ``c_k, q_k``; by
Lindemann–Weierstrass such a sum is zero iff its merged coefficients vanish, so the
check is exact and decidable (:mod:`exact.expfield`).

A certificate also states what a holding check *means*, and checks that too:

* the **learner** whose probe set the transcript must be; its registry entry
  re-derives that probe set from the certified model (and the recorded
  **conditions**, such as a rank bound and a sketch seed), so a transcript that
  does not identify the model fails;
* the **grid** the parameters were identified on: every parameter must lie on it;
* the **verification queries** (random longer sequences that check the model
  class), replayed like the rest — or, when there are none, the **assumptions** the
  result then rests on ("among bias-free single heads"), which must be stated.

Answers of approximate oracles (callables, floats) come with a declared accuracy;
their certificate is the weaker kind ``"consistent"``: every answer lies within the
declared accuracy of the model's value, checked with rigorous balls.  A float answer
that records its own rounding error is not taken at its word: the bound is recomputed
from the certified model and the smaller of the two is used.

Besides the two equality predicates beside :class:`~exact.oracles.ExactAnswer`
(:func:`~exact.oracles.answer_equals`, :func:`~exact.oracles.answer_equals_logistic`, which
this module uses and re-exports) and the oracles themselves, this is the only module that
reads the exp-polynomial form of an oracle's answers.
It finds learners through :mod:`exact.registry` and imports no learner module.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction

from flint import arb, ctx

from . import registry
from .errors import CertificateInvalid, ExactAttentionError, InvalidArgument, InvalidFormat
from .expfield import ExpRatio, exp_form_from_json
from .checks import CHOSEN_SEED, FRESH_SEED, SEED_ASSUMPTIONS, check_sequences
from .floateval import evaluate_sequences
from .grids import parse_grid
from .jsonfields import check_fields, check_kind, short_repr
from .linalg import mismatches
from .models import SingleHead
from .numbers import approx, floor_log2, format_rational, parse_rational, to_fmpq, to_fraction
from .oracles import ExactAnswer, FloatAnswer, Query, answer_ball, answer_equals, answer_equals_logistic, unzip
from .progress import report
from .protocols import Model
from .sequences import Sequence, forms_agree, kept_rows_of, offset_agrees

__all__ = [
    "Certificate",
    "CheckReport",
    "check_transcript",
    "failed_entries",
    "make_certificate",
    "certificate_to_json",
    "certificate_from_json",
    "transcript_to_json",
    "transcript_from_json",
    "answer_equals",
    "answer_equals_logistic",
    "EXACT",
    "CONSISTENT",
]

EXACT = "exact"
CONSISTENT = "consistent"

_MAX_LISTED = 10


def _error(answer, accuracy: Fraction, rtol: Fraction, recorded_cap: Fraction | None = None) -> Fraction:
    """``accuracy + rtol·|answer|`` plus a float answer's rounding bound (capped by ``recorded_cap``)."""
    err = accuracy
    if rtol:
        err += rtol * abs(answer if isinstance(answer, Fraction) else to_fraction(answer, name="answer"))
    if isinstance(answer, FloatAnswer):
        own = Fraction(answer.error)
        err += own if recorded_cap is None else min(own, recorded_cap)
    return err


def _consistent(answer, value_ball: arb, error: Fraction, prec: int) -> bool:
    """Whether ``|value - answer| <= error`` is proved by rigorous balls."""
    with ctx.workprec(prec):
        diff = value_ball - answer_ball(answer, prec)
        return bool(abs(diff) <= arb(to_fmpq(error)))


@dataclass(frozen=True)
class CheckReport:
    """The outcome of checking a certificate or replaying a transcript.

    Attributes
    ----------
    holds : bool
        Whether every answer was reproduced and every stated condition holds.
    kind : str
        ``"exact"`` (equality decided exactly) or ``"consistent"`` (within the
        declared accuracy).
    checked : int
        How many transcript entries were replayed (verification queries included).
    failures : tuple of int
        Indices of the entries that were not reproduced (at most 10 listed).
    failed : int
        How many entries failed in all.
    reason : str or None
        Why the certificate fails when the cause is not a replayed answer (an empty
        transcript, a violated condition, a transcript that is not the learner's
        probe set, a parameter off the stated grid).
    scope : str
        What a holding check covers beyond the replay.
    """

    holds: bool
    kind: str
    checked: int
    failures: tuple = ()
    failed: int = 0
    reason: str | None = None
    scope: str = ""

    def __bool__(self) -> bool:
        return self.holds

    @property
    def message(self) -> str:
        if self.holds:
            if self.kind == EXACT:
                return f"certificate holds: the model's values are exactly equal to all {self.checked} answers{self.scope}"
            return f"certificate holds: the model's values are consistent with all {self.checked} answers{self.scope}"
        if self.reason:
            return f"certificate FAILS: {self.reason}"
        shown = ", ".join(f"#{i}" for i in self.failures)
        return (
            f"certificate FAILS: {self.failed} of {self.checked} answers are not reproduced "
            f"by the model (first: {shown})"
        )

    def to_json(self) -> dict:
        return {
            "holds": self.holds,
            "kind": self.kind,
            "checked": self.checked,
            "failed": self.failed,
            "failures": list(self.failures),
            "reason": self.reason,
            "message": self.message,
        }

    def raise_for_failure(self) -> "CheckReport":
        """Raise :class:`CertificateInvalid` unless the certificate holds."""
        if not self.holds:
            raise CertificateInvalid(self.message)
        return self


def check_transcript(
    model: Model, transcript: Iterable[Query], *, accuracy=Fraction(0), rtol=Fraction(0), prec: int = 256
) -> CheckReport:
    """Replay ``transcript`` against ``model`` (nothing else is checked).

    Exact answers are compared exactly.  Answers of approximate oracles must lie
    within ``accuracy + rtol·|answer|`` of the model's value (rigorous balls at
    ``prec`` bits).

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> o = ExactOracle(SingleHead([[1]], [3]))
    >>> _ = o.query([[2], [1]])
    >>> check_transcript(SingleHead([[1]], [3]), o.transcript).holds
    True
    >>> check_transcript(SingleHead([[1]], [2]), o.transcript).failures
    (0,)
    """
    entries = list(transcript)
    failures = failed_entries(model, entries, accuracy=accuracy, rtol=rtol, prec=prec)
    return CheckReport(
        holds=not failures,
        kind=EXACT if _all_exact(entries) else CONSISTENT,
        checked=len(entries),
        failures=tuple(failures[:_MAX_LISTED]),
        failed=len(failures),
    )


def failed_entries(
    model: Model, transcript: Iterable[Query], *, accuracy=Fraction(0), rtol=Fraction(0), prec: int = 256, caps=None
) -> list[int]:
    """Indices of every transcript entry that ``model`` does not reproduce (see :func:`check_transcript`).

    ``caps`` (one per entry, or ``None``) caps the rounding error a float answer may
    claim for itself.
    """
    entries = list(transcript)
    exact = _all_exact(entries)
    accuracy, rtol = to_fraction(accuracy, name="accuracy"), to_fraction(rtol, name="rtol")
    failures = []
    batch = getattr(model, "rational_batch", None)
    seen: dict = {}  # verdicts of forms_agree on shared objects (bases, offsets, and the queries themselves)
    _forget_by_identity(model)
    if exact and batch is not None:  # a model with rational values (a ReLU network): all at once
        agree = [forms_agree(q.X, seen) for q in entries]  # (a query that is not its rows is not evaluated)
        values = iter(batch([q.X for q, ok in zip(entries, agree) if ok]))
        for i, (q, ok) in enumerate(zip(entries, agree)):
            if not ok:
                failures.append(i)
                continue
            v = next(values)
            if type(q.answer) is not ExactAnswer:
                failures.append(i)
                continue
            r = q.answer.rational()
            if r is None or r != Fraction(int(v.p), int(v.q)):
                failures.append(i)
        return failures
    # Offset probes laid out as a grid are decided together (one flint product for the model's side);
    # an answer the grid does not reproduce as it stands is decided again below, on its own.
    pending = _grid_undecided(model, entries, seen) if exact else None
    for i in range(len(entries)) if pending is None else pending:
        q = entries[i]
        if i % 4096 == 4095:
            report("replay", i + 1, len(entries))
        if not forms_agree(q.X, seen):  # a derived form that is not its rows': evaluation would decide another query
            failures.append(i)
            continue
        if type(q.answer) is not ExactAnswer and isinstance(q.answer, ExactAnswer):
            failures.append(i)  # a subclass could decide its own equality: never trusted
            continue
        if exact:
            pair = model._pair(q.X) if hasattr(model, "_pair") else None
            given = q.answer._pair() if pair is not None else None
            if given is not None and pair is not None and (given == pair or (given[1] == pair[1] and given[3] == pair[3]
                                                         and given[0] - given[2] == pair[0] - pair[2])):
                ok = True  # the same values and score difference: the softmax does not see a common shift
            elif pair is not None:  # decide on the forms, without building the model's
                form = q.answer._exp_form()
                ok = form.equals_softmax2(*pair) if isinstance(form, ExpRatio) else form == model.exact(q.X)
            else:
                ok = answer_equals(q.answer, model.exact(q.X))
        else:
            err = _error(q.answer, accuracy, rtol, None if caps is None else caps[i])
            p = max(prec, 64 - floor_log2(err)) if err > 0 else prec  # resolve well below the error
            ok = _consistent(q.answer, model.ball(q.X, prec=p), err, p)
        if not ok:
            failures.append(i)
    return failures


#: A model's memos keyed by the identity of a query's integer rows (models.SingleHead._column and the like).
_IDENTITY_MEMOS = ("_columns", "_dots", "_values")


def _forget_by_identity(model) -> None:
    """Drop a model's memos keyed by the identity of a query's parts before a replay: a part changed in
    place since it was remembered must be evaluated as it is now (memos by value are kept)."""
    for holder in (model, getattr(model, "_head", None)):
        memo = getattr(holder, "__dict__", None)
        if isinstance(memo, dict):
            for name in _IDENTITY_MEMOS:
                memo.pop(name, None)


#: Fewer offset probes than this in a row are replayed one by one.
MIN_GRID = 64

_X, _ANSWER, _OFFSET = operator.attrgetter("X"), operator.attrgetter("answer"), operator.attrgetter("_offset")
_D = operator.attrgetter("d")
#: The forms an offset probe never carries besides its offset (exact.sequences.forms_agree).
_OFFSET_FREE = tuple(map(operator.attrgetter, ("_fq", "_ints", "_near", "_shift", "_f64")))


def _grid_undecided(model: Model, entries: list, seen: dict | None = None) -> list[int] | None:
    """The entries a grid replay leaves to be decided one by one, or ``None`` for no grid.

    A grid is a run of offset probes ``[b_i + Δ_r; b_i]`` in the transcript (at least
    :data:`MIN_GRID` of them, between queries of other forms) laid out in blocks: either blocks
    of ``n`` entries that share one base object, every block holding the same ``n`` offset
    objects in the same order (the bases outer), or blocks that share one offset object, every
    block holding the same bases in the same order (the offsets outer).  The model gives the pair
    ``(s, c₀, 0, c₁)`` of all of them at once (``_offset_grid``: the pair its ``_pair`` gives each
    probe), and an answer of compact form ``(s₁, c₁', s₂, c₂')`` is reproduced where ``c₁' = c₀``,
    ``c₂' = c₁`` and ``s₁ − s₂ = s`` (the softmax does not see a common shift of the scores),
    decided for a whole run by two flint matrix equalities (scores, first values) and one tuple
    comparison (second values, one per base).  Every entry outside a grid, and every grid entry
    not reproduced that way, is left to be decided on its own.  So is every grid whose bases or
    offsets carry a derived form that is not their rows' (:func:`~exact.sequences.forms_agree`;
    ``seen`` shares its verdicts with the caller).
    """
    seen = {} if seen is None else seen
    if type(model) is not SingleHead or len(entries) < MIN_GRID:  # (a subclass may evaluate otherwise)
        return None
    if model.biased:  # no grid form (_offset_grid): not worth a pass
        return None
    queries = list(map(_X, entries))
    if set(map(type, queries)) != {Sequence}:
        return None
    offs = list(map(_OFFSET, queries))
    if offs.count(None) == len(offs):
        return None
    undecided: list[int] = []
    grids = 0
    a, n = 0, len(offs)
    while a < n:
        if offs[a] is None:  # a run of other queries
            b = next((i for i in range(a, n) if offs[i] is not None), n)
            undecided.extend(range(a, b))
            a = b
            continue
        try:  # the end of this run of offset probes (a C-level scan from a)
            b = offs.index(None, a)
        except ValueError:
            b = n
        run = offs[a:b]
        if set(map(type, run)) != {tuple} or set(map(len, run)) != {3} or set(map(_D, queries[a:b])) != {model.d}:
            undecided.extend(range(a, b))  # (an offset is a tuple itself: a subclass could unpack otherwise)
        else:
            bases, deltas, fqs = unzip(run, 3)
            for lo, hi, layout in _segments(bases, deltas, fqs):  # the run's grids, and what lies between
                bad = _grid_run(model, entries[a + lo : a + hi], layout, seen) if layout is not None else None
                if bad is None:
                    undecided.extend(range(a + lo, a + hi))
                else:
                    grids += 1
                    undecided.extend(a + lo + i for i in bad)
        a = b
    return undecided if grids else None


def _segments(bases: tuple, deltas: tuple, fqs: tuple) -> list[tuple]:
    """A run of offset probes cut into ``(start, end, layout)`` pieces: each grid of at least
    :data:`MIN_GRID` probes with its :func:`_blocks` layout, and the stretches between with ``None``.
    At each place the longer of the two layouts that start there is taken."""
    out: list[tuple] = []
    a, n, loose = 0, len(bases), None
    while a < n:
        best = max((_grid_at(bases, deltas, fqs, a, outer) for outer in (True, False)), key=lambda g: g[0])
        if best[0] - a >= MIN_GRID:
            if loose is not None:
                out.append((loose, a, None))
                loose = None
            out.append((a, best[0], best[1]))
            a = best[0]
        else:
            if loose is None:
                loose = a
            a = max(best[2], a + 1)  # past the stretch that shares this first base or offset
    if loose is not None:
        out.append((loose, n, None))
    return out


def _grid_at(bases: tuple, deltas: tuple, fqs: tuple, a: int, base_outer: bool) -> tuple:
    """``(end, layout, stretch)``: the longest grid that starts at ``a`` with the bases outer (blocks
    holding the same offsets, in order, on one base each) or the offsets outer (blocks holding the
    same bases, in order, on one offset each), its :func:`_grid_run` layout, and the end of its first
    block.  Every entry must hold the very objects its place in the grid names."""
    n = len(bases)
    lead, inner = ((bases,), (deltas, fqs)) if base_outer else ((deltas, fqs), (bases,))
    m = next((i for i in range(a, n) if any(x[i] is not x[a] for x in lead)), n) - a  # the first block
    block = [x[a : a + m] for x in inner]
    end = a + m
    while end + m <= n and all(all(map(operator.is_, x[end : end + m], itertools.repeat(x[end]))) for x in lead) \
            and all(all(map(operator.is_, x[end : end + m], y)) for x, y in zip(inner, block)):
        end += m
    heads = range(a, end, m)
    if base_outer:
        layout = (tuple(bases[i] for i in heads), list(zip(*block)), True)
    else:
        layout = (tuple(block[0]), [(deltas[i], fqs[i]) for i in heads], False)
    return end, layout, a + m


def _grid_run(model: SingleHead, entries: list, layout: tuple, seen: dict) -> list[int] | None:
    """The entries of one grid of offset probes that it does not reproduce (indices into the grid),
    or ``None`` if the model or the answers have no grid form, or a part of the grid carries a form
    that is not its rows' (see :func:`_grid_undecided`)."""
    blocks, offsets, base_outer = layout
    d = model.d
    if not (all(forms_agree(b, seen) for b in blocks) and all(offset_agrees(t, f, d) for t, f in offsets)):
        return None
    probes = list(map(_X, entries))  # an offset pair is its base and offset alone, and rows it keeps are theirs
    n = len(probes)
    if any(operator.countOf(map(get, probes), None) != n for get in _OFFSET_FREE):
        return None
    kept = kept_rows_of(probes)
    if kept.count(None) != len(kept) and not all(forms_agree(X, seen) for X, r in zip(probes, kept) if r is not None):
        return None
    rows = [f if f is not None else tuple((j, to_fmpq(x)) for j, x in t) for t, f in offsets]
    model_side = model._offset_grid(blocks, rows)
    maybe = list(map(ExactAnswer._pair, map(_ANSWER, entries)))
    if model_side is None or None in maybe:
        return None
    given: list[tuple] = maybe  # type: ignore[assignment]
    S, C0, c1 = model_side  # entry (i, r): base i, offset r
    if not base_outer:  # the answers run over the bases inside each offset's block: (r, i)
        S, C0 = S.T, C0.T
    s1, v1, s2, v2 = unzip(given, 4)
    try:  # second scores that are one and the same 0 (as a single head's oracle gives them) need no subtraction
        same = s2[0] == 0 and all(map(operator.is_, s2, itertools.repeat(s2[0])))
        bad = set(mismatches(S, s1, None if same else s2))
        bad.update(mismatches(C0, v1))
    except (TypeError, ValueError):  # pragma: no cover - a compact form holds only fmpq (ExactAnswer checks it)
        return None
    if base_outer:  # each base's c₁, once per offset
        want = tuple(itertools.chain.from_iterable(itertools.repeat(c, len(offsets)) for c in c1))
    else:
        want = tuple(c1) * len(offsets)
    if v2 != want:
        bad.update(i for i, (x, y) in enumerate(zip(v2, want)) if not x == y)
    return sorted(bad)


@dataclass(frozen=True)
class Certificate:
    """A recovered model together with the transcript it must reproduce, and what that proves.

    Anyone can check it with :meth:`check`, and it serialises to JSON
    (:func:`certificate_to_json`).

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> from exact import learn_single_head
    >>> truth = SingleHead([[2, 0], [1, "1/3"]], [1, -1])
    >>> cert = learn_single_head(ExactOracle(truth)).certificate
    >>> print(cert.check().message)  # doctest: +NORMALIZE_WHITESPACE
    certificate holds: the model's values are exactly equal to all 8 answers (the single-head learner's
    probe set, which identifies the model among bias-free single heads; the model class checked by 2 random
    queries of lengths 3–4; assuming it is independent of the check seed (drawn afresh by the learner))
    >>> import dataclasses
    >>> dataclasses.replace(cert, model=SingleHead([[2, 0], [1, "1/4"]], [1, -1])).check().holds
    False

    Attributes
    ----------
    model :
        The recovered model.
    transcript : tuple of Query
        The learner's queries and the oracle's answers.
    kind : str
        ``"exact"`` for exact oracles, ``"consistent"`` for approximate ones.
    accuracy, rtol : Fraction
        The oracle's declared absolute and relative accuracy (0 for exact oracles).
    learner : str or None
        The registry name of the learner whose probe set the transcript must be;
        ``None`` for a plain replay that claims nothing more.
    conditions : mapping
        What the learner's claim depends on, validated by its registry entry, e.g.
        ``{"rank": r, "sketch_seed": s}`` for the low-rank learner.
    grid : str or None
        The grid every parameter must lie on.
    checks : tuple of Query
        Verification queries (random longer sequences), replayed like the transcript.
    check_seed : int or None
        The seed they were drawn from: :func:`~exact.checks.check_sequences` rebuilds them
        from the certified model, so they cannot be chosen after the fact.
    assumptions : tuple of str
        The assumptions the claim rests on when there are no verification queries.
    """

    model: Model
    transcript: tuple = field(repr=False)
    kind: str = EXACT
    accuracy: Fraction = Fraction(0)
    rtol: Fraction = Fraction(0)
    learner: str | None = None
    conditions: Mapping = field(default_factory=dict)
    grid: str | None = None
    checks: tuple = field(default=(), repr=False)
    assumptions: tuple = ()
    check_seed: int | None = None

    def __post_init__(self):
        # Validated however it is built (constructor, dataclasses.replace, JSON), so that
        # check() meets only well-typed fields.
        for name in ("transcript", "checks"):
            value = getattr(self, name)
            if isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__"):
                raise InvalidArgument(f"{name}: expected a sequence of Query entries, got {type(value).__name__}")
            value = tuple(value)
            well_typed = set(map(type, value)) <= {Query} and set(map(type, map(_X, value))) <= {Sequence}
            bad = None if well_typed else next(q for q in value if type(q) is not Query or type(q.X) is not Sequence)
            if bad is not None:
                raise InvalidArgument(f"{name}: expected Query(X: Sequence, answer) entries, got {short_repr(bad)}")
            object.__setattr__(self, name, value)
        for name in ("accuracy", "rtol"):
            q = to_fraction(getattr(self, name), name=name)
            if q < 0:
                raise InvalidArgument(f"{name}: expected a nonnegative number, got {format_rational(q)}")
            object.__setattr__(self, name, q)
        seed = self.check_seed
        if seed is not None and (type(seed) is not int or seed < 0):
            raise InvalidArgument(f"check_seed: expected None or an integer >= 0, got {short_repr(seed)}")
        if isinstance(self.assumptions, (str, bytes)) or not all(isinstance(a, str) for a in tuple(self.assumptions)):
            raise InvalidArgument(f"assumptions: expected a tuple of strings, got {short_repr(self.assumptions)}")
        object.__setattr__(self, "assumptions", tuple(self.assumptions))
        for name in ("learner", "grid"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise InvalidArgument(f"{name}: expected None or a string, got {short_repr(getattr(self, name))}")
        if not isinstance(self.conditions, Mapping):
            raise InvalidArgument(f"conditions: expected a mapping, got {type(self.conditions).__name__}")
        if not isinstance(self.kind, str):
            raise InvalidArgument(f"kind: expected a string, got {short_repr(self.kind)}")

    def check(self) -> CheckReport:
        """Decide whether the model reproduces every answer, under the stated conditions."""
        return self._check(None)

    def _check(self, failures: list[int] | None, *, rederive: bool = True, standing=None) -> CheckReport:
        """:meth:`check`, reusing ``failures`` when the caller has just replayed exactly these
        entries (transcript, then checks) against exactly this model — the learner driver,
        so that a learn replays its transcript once.  ``rederive=False`` (the driver, for a
        learner whose probe-set check re-runs the learner) skips re-deriving the probe set of
        the run that just made it; ``standing`` is then what the run itself established)."""
        entries = tuple(self.transcript) + tuple(self.checks)
        n = len(entries)
        if not self.transcript:
            return CheckReport(False, self.kind, 0, reason="the transcript is empty, so it proves nothing")
        if self.kind not in (EXACT, CONSISTENT):
            return CheckReport(False, self.kind, n, reason=f"unknown certificate kind {self.kind!r}")
        types = set(map(type, map(_ANSWER, entries)))
        try:
            reason = self._unmet_condition(rederive, standing)
            caps = None if reason else self._float_caps(entries, types)
        except ExactAttentionError as e:
            reason = str(e)
        if reason:
            return CheckReport(False, self.kind, n, reason=reason)
        if isinstance(caps, str):
            return CheckReport(False, self.kind, n, reason=caps)
        if failures is None or caps is not None:
            failures = failed_entries(self.model, entries, accuracy=self.accuracy, rtol=self.rtol, caps=caps)
        kind = EXACT if types <= {ExactAnswer} else CONSISTENT
        if kind != self.kind:
            return CheckReport(
                False, self.kind, n,
                reason=f"the answers are of kind {kind!r} but the certificate claims {self.kind!r}",
            )
        return CheckReport(
            holds=not failures,
            kind=kind,
            checked=n,
            failures=tuple(failures[:_MAX_LISTED]),
            failed=len(failures),
            scope=self._scope() if not failures else "",
        )

    # -- what the check covers ------------------------------------------------------------

    def _scope(self) -> str:
        parts = []
        if self.kind == CONSISTENT:
            acc = f"±{approx(self.accuracy, 3)}" + (f" + {approx(self.rtol, 3)}·|answer|" if self.rtol else "")
            parts.append(f"within the declared accuracy {acc} (plus each float answer's rounding bound)")
        if self.learner is None:
            parts.append("replay only: the transcript is not checked to identify the model")
        else:
            spec = registry.get(self.learner)
            if self.kind == EXACT:
                parts.append(f"the {self.learner} learner's probe set, which identifies the model {spec.scope(self.conditions)}")
            else:
                parts.append(f"the {self.learner} learner's probe set")
        if self.grid:
            scale = self.conditions.get("w_scale")
            parts.append(f"every parameter on grid {self.grid}" + (f", W and c divided by {scale}" if scale else ""))
        if self.checks:
            lengths = sorted({q.X.length for q in self.checks})
            span = f"lengths {lengths[0]}–{lengths[-1]}" if len(lengths) > 1 else f"length {lengths[0]}"
            n = len(self.checks)
            parts.append(f"the model class checked by {n} random quer{'y' if n == 1 else 'ies'} of {span}")
        if self.assumptions:
            parts.append("assuming it is " + ", ".join(self.assumptions))
        return " (" + "; ".join(parts) + ")"

    def _unmet_condition(self, rederive: bool, standing) -> str | None:
        if self.grid is not None:
            grid = parse_grid(self.grid)
            assert grid is not None  # a string always parses to a grid (or raises)
            params = getattr(self.model, "parameters", None)
            if params is None:
                return f"a {type(self.model).__name__} states no parameters to check against grid {self.grid}"
            scale = self.conditions.get("w_scale")  # the grid holds W/w_scale (a head's √r·W)
            if scale is not None:
                if not hasattr(self.model, "grid_parameters"):
                    return f"a {type(self.model).__name__} has no W to scale for grid {self.grid}"
                values = self.model.grid_parameters(parse_rational(scale, name="w_scale"))
            else:
                values = params()
            off = next((i for i, x in enumerate(values) if not grid.contains(x)), None)
            if off is not None:
                where = f" (W/{scale})" if scale is not None else ""
                return f"parameter #{off} of the model is not on the stated grid {self.grid}{where}"
        reason = self._unmet_learner_condition(rederive, standing)
        if reason or not self.checks:
            return reason
        if self.check_seed is None:
            return "the certificate holds verification queries but not the seed they were drawn from"
        if not any(a in self.assumptions for a in SEED_ASSUMPTIONS):
            return (
                "the certificate's verification queries prove something only if their seed is independent of "
                f"the black box, and it does not state that assumption ({FRESH_SEED!r} or {CHOSEN_SEED!r})"
            )
        if [q.X for q in self.checks] != check_sequences(self.model, len(self.checks), self.check_seed):
            return (
                "the verification queries are not the ones the recorded check seed gives for this model, "
                "so they need not be random"
            )
        return None

    def _unmet_learner_condition(self, rederive: bool, standing) -> str | None:
        if self.learner is None:
            return "conditions are stated without a learner to interpret them" if self.conditions else None
        spec = registry.get(self.learner)
        if not spec.exact:
            return f"learner {self.learner!r} gives approximate results, which carry no certificate"
        if spec.check_certificate is None:
            return f"learner {self.learner!r} states no way to check its probe set, so its certificates prove nothing"
        kind = getattr(self.model, "kind", None)
        if kind != spec.model_kind:
            return f"learner {self.learner!r} learns {spec.model_kind} models, not a {type(self.model).__name__}"
        bad = spec.validate_conditions(self.conditions)
        if bad:
            return bad
        out = spec.check_certificate(self.model, self.transcript, dict(self.conditions)) if rederive else None
        if isinstance(out, registry.Rederived):  # what the claim rests on, re-derived from the transcript
            reason, standing = out.reason, out.standing
        elif out is None or isinstance(out, str):
            reason = out
        else:
            return f"learner {self.learner!r}: its certificate check returned {type(out).__name__}, not a reason"
        if reason:
            return reason
        if standing is None:
            standing = spec.standing(dict(self.conditions))
        missing = [a for a in standing if a not in self.assumptions]
        if missing:
            return f"the certificate does not state the assumptions its claim rests on: {'; '.join(missing)}"
        if not self.checks:
            missing = [a for a in spec.unchecked(dict(self.conditions)) if a not in self.assumptions]
            if missing:
                return (
                    "the certificate holds no verification query, yet does not state the assumptions its claim "
                    f"then rests on: {'; '.join(missing)}"
                )
        return None

    def _float_caps(self, entries, types: set):
        """Per entry, the rounding bound recomputed from the model for a float answer that records one
        (``types``: the entries' answer types)."""
        if not any(issubclass(t, FloatAnswer) for t in types):
            return None
        idx = [i for i, q in enumerate(entries) if isinstance(q.answer, FloatAnswer)]
        if getattr(self.model, "kind", None) != "single-head" or not isinstance(self.model, SingleHead):
            return "the answers record float rounding errors, which can be checked only for a single-head model"
        W, v = self.model.to_numpy()
        c, b = self.model.biases_numpy() if self.model.biased else (None, 0.0)
        caps: list = [None] * len(entries)
        for i in idx:  # the oracle's own bound computation, one sequence at a time (it is batch-independent)
            _, bound = evaluate_sequences(W, v, [entries[i].X], c=c, b=b)
            caps[i] = Fraction(float(bound[0]))
        return caps

    def __repr__(self) -> str:
        return f"Certificate(kind={self.kind!r}, learner={self.learner!r}, queries={len(self.transcript)})"


def _all_exact(entries) -> bool:
    return set(map(type, map(_ANSWER, entries))) <= {ExactAnswer}


def make_certificate(
    model: Model,
    transcript: Iterable[Query],
    *,
    accuracy=Fraction(0),
    rtol=Fraction(0),
    learner=None,
    conditions=None,
    grid=None,
    checks=(),
    assumptions=(),
    check_seed=None,
) -> Certificate:
    """Build the certificate of a learned model (exact when every answer is exact)."""
    entries = tuple(transcript)
    checks = tuple(checks)
    kind = EXACT if _all_exact(entries + checks) else CONSISTENT
    return Certificate(
        model,
        entries,
        kind,
        Fraction(0) if kind == EXACT else Fraction(accuracy),
        Fraction(0) if kind == EXACT else Fraction(rtol),
        learner,
        dict(conditions or {}),
        grid,
        checks,
        tuple(assumptions),
        check_seed,
    )


# -- JSON ------------------------------------------------------------------------------

_FIELDS = {
    "kind", "certificate_kind", "accuracy", "rtol", "learner", "conditions", "grid", "checks", "check_seed",
    "assumptions", "model", "transcript",
}
_REQUIRED = {"kind", "certificate_kind", "model", "transcript"}


def _answer_to_json(answer) -> dict:
    if isinstance(answer, ExactAnswer):
        return {"exact": answer._exp_form().to_json()}
    out = {"value": format_rational(to_fraction(answer, name="answer"))}
    if isinstance(answer, FloatAnswer):
        out["error"] = format_rational(to_fraction(answer.error, name="error"))
    return out


def _answer_from_json(data, where: str):
    if isinstance(data, dict) and set(data) == {"exact"}:
        return ExactAnswer(exp_form_from_json(data["exact"]))
    if isinstance(data, dict) and set(data) == {"value"}:
        return parse_rational(_text(data["value"], f"{where}.value"), name=f"{where}.value")
    if isinstance(data, dict) and set(data) == {"value", "error"}:
        value = parse_rational(_text(data["value"], f"{where}.value"), name=f"{where}.value")
        error = parse_rational(_text(data["error"], f"{where}.error"), name=f"{where}.error")
        if abs(value) > 2**1000 or Fraction(float(value)) != value:
            raise InvalidFormat(f"{where}: a float answer's value must be a float64 number, got {format_rational(value)[:40]}")
        if error < 0 or abs(error) > 2**1000 or Fraction(float(error)) != error:
            raise InvalidFormat(f"{where}: a float answer's error must be a float64 number >= 0")
        return FloatAnswer(float(value), float(error))
    raise InvalidFormat(f"{where}: expected {{'exact': ...}}, {{'value': 'p/q'}} or {{'value', 'error'}}, got {_short(data)}")


def _text(x, where: str) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, (int, Fraction)) and not isinstance(x, bool):
        return format_rational(Fraction(x))
    raise InvalidFormat(f"{where}: expected a number string, got {type(x).__name__}")


def _short(x) -> str:
    text = repr(x)
    return text if len(text) <= 60 else text[:57] + "..."


def certificate_to_json(cert: Certificate) -> dict:
    """The certificate as JSON: model, kind, accuracy, learner and conditions, every ``(X, answer)`` pair.

    Exact answers are stored in their exp-polynomial form ``{"num": [[c, q], ...],
    "den": [...]}`` (value ``Σ c e^q / Σ c' e^q'``), so the check can be re-run
    anywhere; rationals are ``"p/q"`` strings.
    """
    return {
        "kind": "certificate",
        "certificate_kind": cert.kind,
        "accuracy": format_rational(Fraction(cert.accuracy)),
        "rtol": format_rational(Fraction(cert.rtol)),
        "learner": cert.learner,
        "conditions": dict(cert.conditions),
        "grid": cert.grid,
        "assumptions": list(cert.assumptions),
        "model": cert.model.to_json(),
        "transcript": transcript_to_json(cert.transcript),
        "checks": transcript_to_json(cert.checks),
        "check_seed": cert.check_seed,
    }


def transcript_to_json(transcript) -> list:
    """An oracle's transcript as JSON: ``[{"X": sequence, "answer": {...}}, ...]``.

    Exact answers are written in exp-polynomial form (``{"exact": {"num": ..., "den": ...}}``),
    others as ``{"value": "p/q"}`` (plus ``"error"`` for a float answer that records
    its rounding bound), so a transcript can be replayed anywhere.
    """
    return [{"X": q.X.to_json(), "answer": _answer_to_json(q.answer)} for q in transcript]


def transcript_from_json(data, *, where: str = "transcript") -> tuple:
    """Rebuild transcript entries (:class:`~exact.oracles.Query`) from :func:`transcript_to_json`."""
    if not isinstance(data, list):
        raise InvalidFormat(f"{where}: expected a list of {{'X': ..., 'answer': ...}} entries, got {type(data).__name__}")
    out = []
    for i, e in enumerate(data):
        if not (isinstance(e, dict) and set(e) == {"X", "answer"}):
            raise InvalidFormat(f"{where}[{i}]: expected an object with exactly 'X' and 'answer', got {_short(e)}")
        out.append(Query(Sequence.from_json(e["X"]), _answer_from_json(e["answer"], f"{where}[{i}].answer")))
    return tuple(out)


def certificate_from_json(data, *, model_from_json) -> Certificate:
    """Rebuild a certificate from :func:`certificate_to_json` output (strictly; no ``eval`` anywhere).

    Unknown or missing fields, a learner or condition the registry does not know,
    and malformed answers are errors.
    """
    check_fields(data, where="certificate", required=sorted(_REQUIRED), optional=sorted(_FIELDS - _REQUIRED))
    if check_kind(data, where="certificate") != "certificate":
        raise InvalidFormat(f"certificate: expected kind 'certificate', got {short_repr(data['kind'])}")
    kind = data["certificate_kind"]
    if kind not in (EXACT, CONSISTENT):
        raise InvalidFormat(f"certificate: expected certificate_kind 'exact' or 'consistent', got {_short(kind)}")
    learner = data.get("learner")
    if learner is not None and not isinstance(learner, str):
        raise InvalidFormat(f"certificate: learner must be a string or null, got {_short(learner)}")
    conditions = data.get("conditions")
    conditions = {} if conditions is None else conditions
    if not isinstance(conditions, dict):
        raise InvalidFormat(f"certificate: expected conditions as an object, got {_short(conditions)}")
    if learner is not None:
        try:
            spec = registry.get(learner)
        except InvalidArgument as e:
            raise InvalidFormat(f"certificate: {e}") from None
        bad = spec.validate_conditions(conditions)
        if bad:
            raise InvalidFormat(f"certificate: {bad}")
    grid = data.get("grid")
    if grid is not None:
        if not isinstance(grid, str):
            raise InvalidFormat(f"certificate: expected grid as a string, got {_short(grid)}")
        parse_grid(grid)
    check_seed = data.get("check_seed")
    if check_seed is not None and (not isinstance(check_seed, int) or isinstance(check_seed, bool) or check_seed < 0):
        raise InvalidFormat(f"certificate: expected check_seed as a non-negative integer or null, got {_short(check_seed)}")
    assumptions = data.get("assumptions") or []
    if not isinstance(assumptions, list) or not all(isinstance(a, str) for a in assumptions):
        raise InvalidFormat("certificate: expected assumptions as a list of strings")
    accuracy = parse_rational(_text(data.get("accuracy", "0"), "accuracy"), name="accuracy")
    rtol = parse_rational(_text(data.get("rtol", "0"), "rtol"), name="rtol")
    if accuracy < 0 or rtol < 0:
        raise InvalidFormat("certificate: accuracy and rtol must be >= 0")
    return Certificate(
        model_from_json(data["model"]),
        transcript_from_json(data["transcript"]),
        kind,
        accuracy,
        rtol,
        learner,
        conditions,
        grid,
        transcript_from_json(data.get("checks") or [], where="checks"),
        tuple(assumptions),
        check_seed,
    )
