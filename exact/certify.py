"""Certificates: replay a transcript against a recovered model and decide equality.

An exact result carries the transcript of the queries that produced it.  Checking
the certificate means evaluating the recovered model on every query and deciding
that each value is **equal** to the oracle's answer.  Every exact answer is a ratio
of exp-polynomials ``Σ c_k e^{q_k}`` with rational ``c_k, q_k``; by
Lindemann–Weierstrass such a sum is zero iff its merged coefficients vanish, so the
check is exact and decidable (:mod:`exact.expfield`).

Answers of approximate oracles (callables, floats) come with a declared accuracy;
their certificate is the weaker kind ``"consistent"``: every answer lies within the
declared accuracy of the model's value, checked with rigorous balls.

This is the only module that reads the exp-polynomial form of an oracle's answers.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from fractions import Fraction

from flint import arb, ctx

from .errors import CertificateInvalid
from .expfield import ExpRatio, exp_form_from_json
from .oracles import ExactAnswer, FloatAnswer, Query, answer_ball
from .sequences import Sequence
from .numbers import floor_log2, format_rational, parse_rational, to_fmpq, to_fraction

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
    "EXACT",
    "CONSISTENT",
]

EXACT = "exact"
CONSISTENT = "consistent"

_MAX_LISTED = 10


def answer_equals(answer, value: ExpRatio) -> bool:
    """Decide exactly whether an exact oracle answer equals ``value``.

    This is how a learner asks "does my candidate reproduce the answer already
    given?" without reading the answer's internals itself.
    """
    if not isinstance(answer, ExactAnswer):
        raise TypeError(f"answer_equals needs an exact answer, got {type(answer).__name__}")
    return answer._exp_form() == value


def _error(answer, accuracy: Fraction, rtol: Fraction) -> Fraction:
    err = accuracy
    if rtol:
        err += rtol * abs(answer if isinstance(answer, Fraction) else to_fraction(answer, name="answer"))
    if isinstance(answer, FloatAnswer):
        err += Fraction(answer.error)
    return err


def _consistent(answer, value_ball: arb, error: Fraction, prec: int) -> bool:
    """Whether ``|value - answer| <= error`` is proved by rigorous balls."""
    with ctx.workprec(prec):
        diff = value_ball - answer_ball(answer, prec)
        return bool(abs(diff) <= arb(to_fmpq(error)))


@dataclass(frozen=True)
class CheckReport:
    """The outcome of replaying a transcript.

    Attributes
    ----------
    holds : bool
        Whether every answer was reproduced.
    kind : str
        ``"exact"`` (equality decided exactly) or ``"consistent"`` (within the
        declared accuracy).
    checked : int
        How many transcript entries were replayed.
    failures : tuple of int
        Indices of the entries that were not reproduced (at most 10 listed).
    failed : int
        How many entries failed in all.
    reason : str or None
        Why the certificate fails when the cause is not a replayed answer (an empty
        transcript, a violated assumption, a transcript that does not identify the model).
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
            how = "exactly equal to" if self.kind == EXACT else "consistent with"
            return f"certificate holds: the model's values are {how} all {self.checked} answers{self.scope}"
        if self.reason:
            return f"certificate FAILS: {self.reason}"
        shown = ", ".join(f"#{i}" for i in self.failures)
        return (
            f"certificate FAILS: {self.failed} of {self.checked} answers are not reproduced "
            f"by the model (first: {shown})"
        )

    def raise_for_failure(self) -> "CheckReport":
        """Raise :class:`CertificateInvalid` unless the certificate holds."""
        if not self.holds:
            raise CertificateInvalid(self.message)
        return self


def check_transcript(model, transcript, *, accuracy=Fraction(0), rtol=Fraction(0), prec: int = 256) -> CheckReport:
    """Replay ``transcript`` against ``model``.

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
    exact = _all_exact(entries)
    failures = failed_entries(model, entries, accuracy=accuracy, rtol=rtol, prec=prec)
    return CheckReport(
        holds=not failures,
        kind=EXACT if exact else CONSISTENT,
        checked=len(entries),
        failures=tuple(failures[:_MAX_LISTED]),
        failed=len(failures),
    )


def failed_entries(model, transcript, *, accuracy=Fraction(0), rtol=Fraction(0), prec: int = 256) -> list[int]:
    """Indices of every transcript entry that ``model`` does not reproduce (see :func:`check_transcript`)."""
    entries = list(transcript)
    exact = _all_exact(entries)
    failures = []
    for i, q in enumerate(entries):
        if exact:
            ok = answer_equals(q.answer, model.exact(q.X))
        else:
            err = _error(q.answer, accuracy, rtol)
            p = max(prec, 64 - floor_log2(err)) if err > 0 else prec  # resolve well below the error
            ok = _consistent(q.answer, model.ball(q.X, prec=p), err, p)
        if not ok:
            failures.append(i)
    return failures


@dataclass(frozen=True)
class Certificate:
    """A recovered model together with the transcript it must reproduce.

    Anyone can check it with :meth:`check`, and it serialises to JSON
    (:func:`certificate_to_json`).

    Examples
    --------
    >>> from exact.models import SingleHead
    >>> from exact.oracles import ExactOracle
    >>> from exact.learn import learn_single_head
    >>> truth = SingleHead([[2, 0], [1, "1/3"]], [1, -1])
    >>> cert = learn_single_head(ExactOracle(truth)).certificate
    >>> print(cert.check().message)
    certificate holds: the model's values are exactly equal to all 6 answers (the Theorem 4.1 probe set, which identifies the model)
    >>> import dataclasses
    >>> dataclasses.replace(cert, model=SingleHead([[2, 0], [1, "1/4"]], [1, -1])).check().holds
    False

    Attributes
    ----------
    model :
        The recovered model.
    transcript : tuple of Query
        The queries asked and the oracle's answers.
    kind : str
        ``"exact"`` for exact oracles, ``"consistent"`` for approximate ones.
    accuracy, rtol : Fraction
        The oracle's declared absolute and relative accuracy (0 for exact oracles).
    learner : str or None
        The learner whose probe set the transcript must be (``"single_head"``: the
        check re-derives the Theorem 4.1 probes from the model's ``v`` and requires
        the transcript to be exactly those queries, which identify the model).
    conditions : mapping
        Assumptions the model must satisfy, e.g. ``{"max_rank": r}`` for the
        low-rank learner (its queries identify ``W`` only among rank-``r`` matrices).
    """

    model: object
    transcript: tuple = field(repr=False)
    kind: str = EXACT
    accuracy: Fraction = Fraction(0)
    rtol: Fraction = Fraction(0)
    learner: str | None = None
    conditions: dict = field(default_factory=dict)

    def check(self) -> CheckReport:
        """Decide whether the model reproduces every answer, under the stated conditions."""
        n = len(self.transcript)
        if not n:
            return CheckReport(False, self.kind, 0, reason="the transcript is empty, so it proves nothing")
        reason = self._unmet_condition()
        if reason:
            return CheckReport(False, self.kind, n, reason=reason)
        report = check_transcript(self.model, self.transcript, accuracy=self.accuracy, rtol=self.rtol)
        if report.holds:
            report = dataclasses.replace(report, scope=self._scope())
        if report.kind != self.kind:
            return CheckReport(
                False, self.kind, n,
                reason=f"the answers are of kind {report.kind!r} but the certificate claims {self.kind!r}",
            )
        return report

    def _scope(self) -> str:
        """What the holding check covers beyond the replay, for the message."""
        if self.learner == "single_head":
            return " (the Theorem 4.1 probe set, which identifies the model)"
        if self.learner == "low_rank":
            return f" (the low-rank learner's queries; identifies the model among rank <= {self.conditions['max_rank']})"
        return " (replay only: the transcript is not checked to identify the model)"

    def _unmet_condition(self) -> str | None:
        from .learn.single_head import ProbePlan  # learners build certificates: import late
        from .models import SingleHead
        from .sequences import Sequence

        if (self.learner or self.conditions) and not isinstance(self.model, SingleHead):
            return f"learner and rank conditions apply to single heads, not to a {type(self.model).__name__}"
        r = self.conditions.get("max_rank")
        if r is not None and self.model.rank > r:
            return f"the model has rank {self.model.rank}, above the assumed bound r = {r}"
        d = self.model.d if self.learner else 0
        if self.learner and not any(self.model.v):
            return "v = 0, so no query depends on W: the transcript cannot identify it"
        if self.learner == "single_head":
            expected = [Sequence.basis(d, i) for i in range(d)] + ProbePlan.choose(self.model.v).sequences()
            if [q.X for q in self.transcript] != expected:
                return "the transcript is not the Theorem 4.1 probe set for this model's v, so it need not identify it"
        if self.learner == "low_rank":
            if r is None:
                return "a low-rank certificate must state its rank bound (conditions max_rank)"
            from .learn.low_rank import low_rank_query_count

            n, rank = len(self.transcript), self.model.rank
            allowed = {
                d + d * r + rank * (d - r),  # rank given (a true rank below r uses fewer row queries)
                low_rank_query_count(d, rank, rank_known=False),  # rank found
            }
            if n not in allowed:
                return f"the transcript has {n} queries, not the low-rank learner's {sorted(allowed)} for d={d}, r={r}"
        return None

    def __repr__(self) -> str:
        return f"Certificate(kind={self.kind!r}, queries={len(self.transcript)})"


def _all_exact(entries) -> bool:
    return all(isinstance(q.answer, ExactAnswer) for q in entries)


def make_certificate(
    model, transcript, *, accuracy=Fraction(0), rtol=Fraction(0), learner=None, conditions=None
) -> Certificate:
    """Build the certificate of a learned model (exact when every answer is exact)."""
    entries = tuple(transcript)
    extra = {"learner": learner, "conditions": dict(conditions or {})}
    if _all_exact(entries):
        return Certificate(model, entries, EXACT, **extra)
    return Certificate(model, entries, CONSISTENT, Fraction(accuracy), Fraction(rtol), **extra)




# -- JSON ------------------------------------------------------------------------------


def _answer_to_json(answer) -> dict:
    if isinstance(answer, ExactAnswer):
        return {"exact": answer._exp_form().to_json()}
    out = {"value": format_rational(to_fraction(answer, name="answer"))}
    if isinstance(answer, FloatAnswer):
        out["error"] = format_rational(to_fraction(answer.error, name="error"))
    return out


def _answer_from_json(data):
    if isinstance(data, dict) and set(data) == {"exact"}:
        return ExactAnswer(exp_form_from_json(data["exact"]))
    if isinstance(data, dict) and set(data) == {"value"}:
        return parse_rational(data["value"], name="answer")
    if isinstance(data, dict) and set(data) == {"value", "error"}:
        value = parse_rational(data["value"], name="answer")
        error = parse_rational(data["error"], name="error")
        if error < 0 or abs(value) > 2**1000 or Fraction(float(value)) != value:
            raise ValueError(f"answer: a float answer needs a float64 value and an error >= 0, got {data!r}")
        return FloatAnswer(float(value), float(error))
    raise ValueError(f"answer: expected {{'exact': ...}} or {{'value': 'p/q'}}, got {data!r}")


def certificate_to_json(cert: Certificate) -> dict:
    """The certificate as JSON: model, kind, accuracy and every ``(X, answer)`` pair.

    Exact answers are stored in their exp-polynomial form ``{"num": [[c, q], ...],
    "den": [...]}`` (value ``Σ c e^q / Σ c' e^q'``), so the check can be re-run
    anywhere; rationals are ``"p/q"`` strings.
    """
    return {
        "kind": "certificate",
        "certificate_kind": cert.kind,
        "accuracy": format_rational(cert.accuracy),
        "rtol": format_rational(cert.rtol),
        "learner": cert.learner,
        "conditions": dict(cert.conditions),
        "model": cert.model.to_json(),
        "transcript": transcript_to_json(cert.transcript),
    }


def transcript_to_json(transcript) -> list:
    """An oracle's transcript as JSON: ``[{"X": sequence, "answer": {...}}, ...]``.

    Exact answers are written in exp-polynomial form (``{"exact": {"num": ..., "den": ...}}``),
    others as ``{"value": "p/q"}``, so a transcript can be replayed anywhere.
    """
    return [{"X": q.X.to_json(), "answer": _answer_to_json(q.answer)} for q in transcript]


def transcript_from_json(data) -> tuple:
    """Rebuild transcript entries (:class:`~exact.oracles.Query`) from :func:`transcript_to_json`."""
    if not isinstance(data, list):
        raise ValueError("transcript: expected a list of {'X': ..., 'answer': ...} entries")
    return tuple(
        Query(Sequence.from_json(e["X"]), _answer_from_json(e["answer"]))
        if isinstance(e, dict) and set(e) == {"X", "answer"}
        else _bad_entry(e)
        for e in data
    )


def certificate_from_json(data, *, model_from_json) -> Certificate:
    """Rebuild a certificate from :func:`certificate_to_json` output (no ``eval`` anywhere)."""
    if not isinstance(data, dict) or data.get("kind") != "certificate":
        raise ValueError("certificate: expected a JSON object with kind 'certificate'")
    kind = data.get("certificate_kind")
    if kind not in (EXACT, CONSISTENT):
        raise ValueError(f"certificate: expected certificate_kind 'exact' or 'consistent', got {kind!r}")
    entries = transcript_from_json(data.get("transcript"))
    learner = data.get("learner")
    if learner not in (None, "single_head", "low_rank"):
        raise ValueError(f"certificate: unknown learner {learner!r}")
    conditions = data.get("conditions") or {}
    if not isinstance(conditions, dict) or not all(
        k == "max_rank" and isinstance(v, int) and not isinstance(v, bool) for k, v in conditions.items()
    ):
        raise ValueError(f"certificate: expected conditions like {{'max_rank': r}}, got {conditions!r}")
    return Certificate(
        model_from_json(data.get("model")),
        entries,
        kind,
        parse_rational(str(data.get("accuracy", "0")), name="accuracy"),
        parse_rational(str(data.get("rtol", "0")), name="rtol"),
        learner,
        conditions,
    )


def _bad_entry(e):
    raise ValueError(f"transcript: expected entries {{'X': ..., 'answer': ...}}, got {e!r}")
