"""The learner driver: what every learner shares, written once.

A learner supplies its probes and its decoding; :class:`Run` does the rest:

* validation of the oracle and the options, the arithmetic for the mode;
* the query budget, checked before the first query (learner plus verification);
* timing (time inside the oracle, verification, replay, the learner's own work);
* the transcript slice of this run;
* **verification queries**: a few random sequences longer than any probe, asked
  after the learner is done and decided exactly (or within the oracle's declared
  accuracy).  They catch a black box outside the assumed model class — a multi-head
  model that agrees with a single head on every sequence of length ≤ 2, a head whose
  rank exceeds the bound a low-rank learner assumed — which the learner's own
  queries cannot see.  They are counted, but apart from the learner's count, and
  their randomness is fresh unless ``check_seed`` is given, so no model can be
  chosen against it.  A mismatch raises :class:`OracleInconsistent`.  With
  ``checks=0`` the result states the assumptions it then rests on;
* the certificate (transcript replay, decided exactly), and the
  :class:`~exact.learn.result.LearnResult`.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import operator
import secrets
import time
from collections.abc import Iterable
from fractions import Fraction

import numpy as np

from ..arith import Arithmetic, get_arithmetic
from ..certify import failed_entries, make_certificate
from ..checks import CHOSEN_SEED, FRESH_SEED, check_sequences
from ..floateval import evaluate_float
from ..errors import CertificateInvalid, InvalidArgument, InvalidNumber, OracleInconsistent
from ..numbers import format_rational, to_fraction
from ..oracles import BaseOracle, ExactAnswer, Query
from ..protocols import Model, Oracle
from ..sequences import Sequence
from ..progress import report
from .details import Checks, as_details
from .result import LearnResult

__all__ = ["Run", "DEFAULT_CHECKS", "check_sequences", "oracle_dimension"]

#: Verification queries made by default after a learner finishes.
DEFAULT_CHECKS = 2


_CHUNK = 4096  # queries per oracle call, so that progress shows within a large batch

_ORACLE_INTERFACE = ("d", "exact", "accuracy", "rtol", "count", "transcript", "require", "error_bound", "query_batch")


def _nonneg_int(value, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgument(f"{name}: expected a non-negative integer, got {value!r}")
    return value


def _transcript_of(oracle) -> list:
    """An Oracle-protocol object's transcript as a list, or OracleInconsistent."""
    try:
        return list(oracle.transcript)
    except TypeError:
        raise OracleInconsistent(
            f"the oracle's transcript is {type(oracle.transcript).__name__}, not a sequence of Query entries"
        ) from None


def _declared(oracle, name: str) -> Fraction:
    """The oracle's declared accuracy or rtol, as a nonnegative Fraction."""
    try:
        q = to_fraction(getattr(oracle, name), name=f"the oracle's {name}")
    except InvalidNumber as e:
        raise InvalidArgument(str(e)) from None
    if q < 0:
        raise InvalidArgument(f"the oracle's {name}: expected a nonnegative number, got {format_rational(q)}")
    return q


def oracle_dimension(oracle) -> int:
    """The token dimension of ``oracle``, after checking it offers the Oracle interface.

    Learners call it first, so a wrong argument gets :class:`InvalidArgument`, not an
    ``AttributeError``.
    """
    missing = [a for a in _ORACLE_INTERFACE if not hasattr(oracle, a)]
    if missing:
        raise InvalidArgument(
            f"oracle: expected an Oracle (with {', '.join(_ORACLE_INTERFACE)}), got {type(oracle).__name__} "
            f"without {', '.join(missing)}"
        )
    return oracle.d


class Run:
    """One run of one learner against one oracle; use it as a context manager.

    ``with Run(SPEC, oracle, ...) as run:`` pauses the garbage collector for the run and
    restores it on exit, whatever happens.

    Parameters
    ----------
    spec : LearnerSpec
        The learner's registry entry (its name, modes and model class).
    oracle : Oracle
        Read only through its public interface.
    mode, grid, prec, max_prec :
        Passed to :func:`~exact.arith.get_arithmetic`; ``mode`` must be one of the spec's modes.
    queries : int or None
        The learner's query count when known up front: the budget is checked for it
        (plus the verification queries) before the first query.
    certify : bool
        Replay the transcript against the result (exact modes).
    checks : int
        Verification queries to make after the learner (0 to skip, and state the assumption).
    check_seed : int or None
        Seed of the verification queries; ``None`` (default) draws a fresh one.
    """

    def __init__(
        self,
        spec,
        oracle: Oracle,
        *,
        mode=None,
        grid=None,
        prec: int = 64,
        max_prec: int = 1 << 23,
        queries: int | None = None,
        certify: bool = True,
        checks: int = DEFAULT_CHECKS,
        check_seed: int | None = None,
        arithmetic: Arithmetic | None = None,
    ) -> None:
        self.t0 = time.perf_counter()
        oracle_dimension(oracle)
        if mode is not None and mode not in spec.modes:
            raise InvalidArgument(f"mode: learner {spec.name!r} runs in {', '.join(map(repr, spec.modes))}, got {mode!r}")
        self.spec = spec
        self.oracle = oracle
        self.arith = arithmetic or get_arithmetic(mode, oracle, grid=grid, prec=prec, max_prec=max_prec)
        if self.arith.name not in spec.modes:
            raise InvalidArgument(
                f"mode: learner {spec.name!r} runs in {', '.join(map(repr, spec.modes))}, not in "
                f"{self.arith.name!r} (the default for this oracle); pass mode= explicitly"
            )
        self.certify = bool(certify)
        self.checks = _nonneg_int(checks, "checks")
        if check_seed is not None:
            _nonneg_int(check_seed, "check_seed")
        self.check_seed = secrets.randbits(63) if check_seed is None else check_seed
        self.check_seed_given = check_seed is not None
        # The declared accuracy is read once: replay, verification and certificate all use it.
        self.accuracy, self.rtol = (_declared(oracle, name) for name in ("accuracy", "rtol"))
        if queries is not None:
            oracle.require(queries + self.checks, what=f"{spec.name} (d={oracle.d}: {queries} queries + {self.checks} checks)")
        self.start = oracle.count
        self.total = queries
        self.seconds = {"query": 0.0, "check": 0.0, "certify": 0.0}
        self.replayed: Model | None = None  # the model whose replay of the whole transcript reproduced every answer
        # The (query, answer) pairs of this run, as the oracle returned them: confirmation,
        # replay and certificate use these, never a transcript the oracle reports later.
        self._entries: list = []

    # A run allocates millions of small exact numbers and frees few: the cyclic garbage
    # collector would traverse them again and again for nothing (1.3x at d >= 256).  It is
    # paused for the run, as timeit does, and restored however the run ends.
    def __enter__(self) -> "Run":
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc) -> None:
        if self._gc_was_enabled:
            gc.enable()

    @property
    def d(self) -> int:
        return self.oracle.d

    @property
    def grid(self):
        return getattr(self.arith, "grid", None)

    def ask(self, seqs) -> list:
        """Ask the oracle a batch of queries, timing the time spent inside it (and reporting progress)."""
        seqs = list(seqs)
        answers: list = []
        for i in range(0, len(seqs), _CHUNK):
            chunk, entries, seconds = self._answers(seqs[i : i + _CHUNK])
            self.seconds["query"] += seconds
            answers += chunk
            self._entries += entries
            report("queries", self.oracle.count - self.start, self.total)
        return answers

    def _answers(self, seqs: list) -> tuple[list, list, float]:
        """The oracle's answers to one batch, its transcript entries for them and the seconds spent
        inside the oracle; checked (the learner's time): one answer per query, of the exact type for
        an exact oracle, and recorded as returned."""
        oracle = self.oracle
        log = getattr(oracle, "_transcript", None) if isinstance(oracle, BaseOracle) else None
        before = len(log) if log is not None else len(_transcript_of(oracle))
        t = time.perf_counter()
        raw = oracle.query_batch(seqs)
        if not hasattr(raw, "__iter__") or isinstance(raw, (str, bytes, dict)):
            raise OracleInconsistent(f"the oracle's query_batch returned {type(raw).__name__}, not a list of answers")
        answers = list(raw)  # (an error the oracle raises while answering is its own, and propagates as it is)
        seconds = time.perf_counter() - t
        if len(answers) != len(seqs):
            raise OracleInconsistent(f"the oracle returned {len(answers)} answers to a batch of {len(seqs)} queries")
        if oracle.exact and not set(map(type, answers)) <= {ExactAnswer}:  # exactly: equality is decided on its form
            a = next(a for a in answers if type(a) is not ExactAnswer)
            raise OracleInconsistent(
                f"the oracle declares exact=True but answered a {type(a).__name__}, not an ExactAnswer "
                "(an oracle whose answers are numbers declares exact=False and an accuracy)"
            )
        entries = list(log[before:]) if log is not None else _transcript_of(oracle)[before:]
        if (
            len(entries) != len(answers)
            or not set(map(type, entries)) <= {Query}
            or not all(map(operator.is_, map(_ANSWER, entries), answers))
        ):
            raise OracleInconsistent(
                f"the oracle's transcript does not record the {len(answers)} answers it just returned "
                f"(it gained {len(entries)} entries)"
            )
        if not all(map(operator.is_, map(_X, entries), seqs)):
            for i, (q, seq) in enumerate(zip(entries, seqs)):
                if q.X is not seq and (type(q.X) is not Sequence or q.X != seq):  # the oracle changed the query
                    # (a callable rounds to float64; anything but a Sequence is not what was asked)
                    raise OracleInconsistent(
                        f"the oracle's transcript records another sequence than query #{i} of the batch asked "
                        "(an oracle that rounds its inputs cannot be learned exactly with these probes)"
                    )
        return answers, entries, seconds

    def require(self, n: int, what: str) -> None:
        """Check that ``n`` more learner queries, plus the verification queries, fit the budget."""
        self.oracle.require(n + self.checks, what=f"{self.spec.name} ({what}: {n} queries + {self.checks} checks)")

    @property
    def transcript(self) -> tuple:
        """This run's queries so far, with the answers the oracle returned to them."""
        return tuple(self._entries)

    def replay(self, model: Model, transcript: Iterable[Query]) -> list[int]:
        """Indices of the transcript entries ``model`` does not reproduce (timed as certification)."""
        t = time.perf_counter()
        bad = failed_entries(model, transcript, accuracy=self.accuracy, rtol=self.rtol)
        self.seconds["certify"] += time.perf_counter() - t
        if not bad:
            self.replayed = model
        return bad

    # -- the end of a run -----------------------------------------------------------------

    def finish(
        self, model, *, conditions=None, details=None, error_estimate=None, approximate: bool = False, mode=None,
        error_bound=None, assumptions=(), standing=None,
    ) -> LearnResult:
        """Certify, verify, and package the result.

        ``approximate=True`` marks a result that is not exact whatever the arithmetic
        (a convex solver's output, a noisy learner's estimate): no certificate, no
        verification queries.  Such a result may carry a certified ``error_bound`` and
        the ``assumptions`` it rests on.  ``standing`` (default the spec's
        ``standing(conditions)``) is what this run's exactness rests on beyond verification
        queries, for a learner whose run decides it (its certificate check re-derives it).
        """
        queries = self.oracle.count - self.start
        transcript = self.transcript
        if queries != len(transcript):
            raise OracleInconsistent(
                f"the oracle counts {queries} queries for this run, but answered {len(transcript)}"
            )
        conditions = dict(conditions or {})
        grid = self.grid
        exact = self.arith.exact and not approximate
        certificate = None
        if exact:
            if self.certify and self.replayed is not model:
                bad = self.replay(model, transcript)
                if bad and grid is not None:
                    raise OracleInconsistent(
                        f"the parameters identified on grid {grid.name} do not reproduce {len(bad)} of the "
                        f"oracle's {len(transcript)} answers (first #{bad[0]}): the true parameters are not on "
                        "that grid, or the oracle is less accurate than it declares"
                    )
                if bad:
                    raise OracleInconsistent(
                        f"{self.spec.name}: the learned model does not reproduce {len(bad)} of the oracle's recorded "
                        f"answers (first #{bad[0]}), though each was confirmed as it was read: the oracle's transcript "
                        "is not what it answered"
                    )
            # Without a grid every number was confirmed exactly as it was identified; on a
            # grid only the replay confirms the result, so without it nothing is claimed.
            exact = self.certify or grid is None
        checked = self._verify(model, error_estimate, conditions) if self.checks and not approximate else ()
        if approximate:
            assumptions = tuple(assumptions)
        else:
            assumptions = () if checked else tuple(self.spec.unchecked(conditions))
        cert_assumptions = assumptions
        if checked:  # a seed known in advance could be targeted; a certificate's reader cannot tell
            assumptions = (CHOSEN_SEED,) if self.check_seed_given else ()
            cert_assumptions = (CHOSEN_SEED if self.check_seed_given else FRESH_SEED,)
        if not approximate:  # what no verification query can discharge is always stated
            rests = tuple(self.spec.standing(conditions) if standing is None else standing)
            standing = tuple(a for a in rests if a not in assumptions)
            assumptions += standing
            cert_assumptions += tuple(a for a in standing if a not in cert_assumptions)
        report = None
        if self.arith.exact and not approximate:
            certificate = make_certificate(
                model,
                transcript,
                accuracy=self.accuracy,
                rtol=self.rtol,
                learner=self.spec.name,
                conditions=conditions,
                grid=grid.name if grid is not None else None,
                checks=checked,
                check_seed=self.check_seed if checked else None,
                assumptions=cert_assumptions,
            )
            if self.replayed is model:  # the one replay of this run: its outcome is the certificate's
                t = time.perf_counter()
                # transcript reproduced above, checks decided in _verify; a learner whose probe-set
                # check re-runs it is not re-run on its own run (``certify`` re-derives it)
                report = certificate._check([], rederive=self.spec.rederive_in_run, standing=rests)
                self.seconds["certify"] += time.perf_counter() - t
                if not report.holds:  # pragma: no cover - a learner violating its own registered conditions
                    raise CertificateInvalid(f"{self.spec.name}: internal error, {report.message}")
        self.seconds["total"] = time.perf_counter() - self.t0
        self.seconds["solve"] = self.seconds["total"] - self.seconds["query"] - self.seconds["check"] - self.seconds["certify"]
        lengths = sorted({q.X.length for q in checked})
        return LearnResult(
            model=model,
            mode=mode or self.arith.name,
            exact=exact,
            queries=queries,
            max_length=max(map(_LENGTH, transcript), default=0),
            certificate=certificate,
            report=report,
            error_estimate=None if approximate else (self.arith.errors() if error_estimate is None else error_estimate),
            grid=grid.name if grid is not None else None,
            precision=self.arith.precision,
            seconds=self.seconds,
            learner=self.spec.name,
            verification_queries=len(checked),
            assumptions=assumptions,
            error_bound=error_bound,
            details=dataclasses.replace(
                as_details(details),
                checks=Checks(len(checked), tuple(lengths), self.check_seed if checked else None),
            ),
        )

    def _verify(self, model, error_estimate, conditions) -> tuple:
        """Ask the verification queries and decide them; raise OracleInconsistent on a mismatch."""
        t = time.perf_counter()
        # a float result's checks are scaled from its float64 view (its exact size can cost a pass over W)
        bits = getattr(model, "float_magnitude_bits", None) if not self.arith.exact else None
        seqs = check_sequences(model, self.checks, self.check_seed, magnitude=bits() if bits else None)
        _, entries, answering = self._answers(seqs)  # answering: the oracle's time, not the check's
        self.seconds["query"] += answering
        t += answering
        queries = tuple(entries)
        if self.arith.exact:
            bad = failed_entries(model, queries, accuracy=self.accuracy, rtol=self.rtol)
            how = "exactly" if self.oracle.exact else "within the oracle's declared accuracy"
        else:
            est = self.arith.errors() if error_estimate is None else error_estimate
            bad = [i for i, q in enumerate(queries) if not _within_float_bound(model, q, self.oracle, est)]
            how = "within the float result's error bound"
        self.seconds["check"] += time.perf_counter() - t
        if bad:
            q = queries[bad[0]]
            assumed = "; ".join(self.spec.unchecked(conditions)) or f"among {self.spec.model_kind} models"
            grid = self.grid
            unconfirmed = (
                f"; the parameters were identified on grid {grid.name} without a replay, and may be off it"
                if grid is not None and not self.certify else ""
            )
            raise OracleInconsistent(
                f"not {self.spec.model_class(conditions)}: the learned model does not reproduce {how} {len(bad)} of "
                f"{len(queries)} random verification queries (first of length {q.X.length}); the learner's result "
                f"holds only {assumed}{unconfirmed}"
            )
        return queries


_LENGTH = operator.attrgetter("X.length")
_X, _ANSWER = operator.attrgetter("X"), operator.attrgetter("answer")


def _within_float_bound(model, q, oracle, eps: float) -> bool:
    """A float result reproduces an answer within its (first-order) error, widened fourfold."""
    X = np.array([[float(x) for x in row] for row in q.X.dense()])
    y = float(q.answer)
    norms = np.abs(X).sum(axis=1)
    bound = 0.0
    heads = getattr(model, "heads", (model,))
    for head in heads:  # a sum of heads: the heads' bounds add up
        _, v = head._float_view if hasattr(head, "_float_view") else head.to_numpy()
        biased = getattr(head, "biased", False)  # c moves each score by at most ε‖x_i‖₁, b the value by ε
        delta = eps * float(norms.max() * (norms[-1] + biased))
        c = X @ v
        spread = float(c.max() - c.min())
        bound += math.expm1(min(2 * delta, 700.0)) * spread / 2 + eps * float(norms.max() + biased)
    tolerance = 4 * bound + float(oracle.error_bound(q.answer)) + 1e-12 * (1 + abs(y))
    if len(heads) == 1 and hasattr(model, "_float_view"):  # a single head: its float64 view, computed once
        W, v = model._float_view
        c, b = model.biases_numpy() if model.biased else (None, 0.0)
        got = evaluate_float(W, v, X, c=c, b=b) if model.biased else evaluate_float(W, v, X)
    else:
        got = model.float(X)
    return abs(float(got) - y) <= tolerance
