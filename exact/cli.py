"""The ``exact-attention`` command line.

The command line *simulates* a black box: it reads a model's parameters from a JSON
file, wraps them in an oracle that answers value queries (and counts them), and lets
a learner recover the parameters from the answers alone.  The comparison with the
file is made only at the end, to report whether the result equals it.  To point a
learner at a real function, use the Python API (:class:`exact.CallableOracle`).

Subcommands::

    exact-attention random single-head --d D --seed S [--grid G]     print a model JSON
    exact-attention random low-rank --d D --rank R --seed S
    exact-attention learn single-head --model FILE [--mode M] [--json]
    exact-attention learn single-head --model FILE --noise uniform:1e-6 [--learner paper|frame|refine] --w-bound WB
    exact-attention learn low-rank --model FILE [--rank R] [--method sketch|cs] [--json]
    exact-attention random ffn --d D --m M --seed S                   a bias-free ReLU network
    exact-attention learn ffn --model FILE [--m M] [--json]
    exact-attention random transformer --d D --m M --seed S
    exact-attention learn transformer --model FILE [--m M] [--json]
    exact-attention counterexample --d D --heads H --seed S [--kind K]  Prop. 7.1, proved
    exact-attention certify FILE                                       re-check a certificate
    exact-attention verify [--budget B] [--jobs N] [--report F]        check the theorems' claims
    exact-attention corpus export DIR                                  reference vectors for other learners

``learn`` offers every registered learner (:mod:`exact.registry`); its options come
from the learner's spec.  Every error is reported as one line on stderr with exit
status 2 (bad input, or a problem without an answer); a claim, a certificate or a
result that does not hold exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from . import __version__, registry
from .errors import ExactAttentionError, InvalidArgument, NotIdentifiable
from .grids import parse_grid
from .io import certificate_to_json, dump_json, load_certificate, load_model, result_to_json
from .ffn import ReLUFFN
from .canonical import canonical_form
from .models import SingleHead
from .multihead import MultiHead
from .noise import NOISE_KINDS, Adversarial, NoisyOracle, parse_noise
from .numbers import format_rational, parse_rational
from .oracles import BaseOracle, CallableOracle, ExactOracle, FloatOracle
from .progress import elapsed, terminal_reporter
from .transformer import Transformer

__all__ = ["main", "build_parser"]

EXIT_FAIL = 1  # a claim or certificate does not hold
EXIT_ERROR = 2  # bad input, or the problem has no answer (not identifiable, ...)

GRIDS_HELP = "rational:Q (denominators <= Q), dyadic:k (multiples of 2^-k), float16, bfloat16, float32, float64"

#: ``random`` refuses larger heads: a d×d matrix of exact rationals costs about 10 µs
#: and 100 bytes per entry to draw (10 s and 0.1 GB at d = 1024), and d² + d queries to learn.
MAX_RANDOM_D = 1024
MAX_INPUTS = 1000
MAX_HEADS = 64


# -- argument types: every numeric option is validated, with one-line messages -----------


def _int_type(low: int, high: int | None = None):
    def parse(text: str) -> int:
        t = text.strip()
        if not (t.lstrip("+-").isascii() and t.lstrip("+-").isdigit()) or len(t) > 12:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}")
        n = int(t)
        if n < low or (high is not None and n > high):
            bound = f">= {low}" if high is None else f"in {low}..{high}"
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {n}")
        return n

    return parse


def _dimension(text: str) -> int:
    """``--d`` of ``random``: an integer in 1..MAX_RANDOM_D; above it, say what it would cost."""
    d = _int_type(1)(text)
    if d > MAX_RANDOM_D:
        entries = d * d
        seconds = entries * 10e-6
        raise argparse.ArgumentTypeError(
            f"expected an integer in 1..{MAX_RANDOM_D}, got {d}: W alone would hold {entries:.3g} exact entries, "
            f"about {_duration(seconds)} and {_size(entries * 100)} to draw (and d² + d = {entries + d:.3g} queries to learn)"
        )
    return d


def _duration(seconds: float) -> str:
    for unit, span in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= span:
            return f"{seconds / span:.3g} {unit}"
    return f"{seconds:.2g} s"


def _size(nbytes: float) -> str:
    for unit, span in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= span:
            return f"{nbytes / span:.3g} {unit}"
    return f"{nbytes:.3g} bytes"


def _number(text: str) -> Fraction:
    try:
        return parse_rational(text, name="value")
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("value: ")) from None


def _positive_float(text: str) -> float:
    q = _number(text)
    if q <= 0 or q > 10**6:
        raise argparse.ArgumentTypeError(f"expected a positive number up to 1e6, got {text[:40]!r}")
    return float(q)


def _oracle_choice(text: str) -> str:
    if text in ("exact", "float") or re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", text):
        return text
    raise argparse.ArgumentTypeError(f"expected 'exact', 'float' or MODULE:CALLABLE, got {text[:40]!r}")


def _nonneg_number(text: str) -> Fraction:
    q = _number(text)
    if q < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text[:40]!r}")
    return q


def _noise(text: str):
    try:
        return parse_noise(text)
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _grid(text: str) -> str:
    try:
        parse_grid(text)
    except ExactAttentionError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("grid: ")) from None
    return text


_OPTION_TYPES = {
    "int": lambda opt: _int_type(opt.minimum if opt.minimum is not None else -(2**62)),
    "number": lambda opt: _number,
    "float": lambda opt: _positive_float,
    "str": lambda opt: str,
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit status 2)."""

    def error(self, message: str):
        command = self.prog.removeprefix("exact-attention").strip()
        where = f"{command}: " if command else ""
        self.exit(EXIT_ERROR, f"exact-attention: error: {where}{message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="exact-attention",
        description="Learn attention parameters from black-box queries, and prove the result exact. "
        "The command line simulates the black box from a parameter file; the Python API points learners at "
        "real functions.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)
    _random_parser(sub)
    _corpus_parser(sub)
    _learn_parser(sub)

    ce = sub.add_parser("counterexample", help="Prop. 7.1: a different multi-head parameterisation with the same map, proved")
    ce.add_argument("--d", type=_int_type(1, 16), default=None, help="token dimension of the random model (1..16)")
    ce.add_argument("--heads", type=_int_type(1, 8), default=None, help="number of heads H of the random model (1..8)")
    ce.add_argument("--seed", type=_int_type(0), default=0, help="seed of the model and the construction")
    ce.add_argument("--kind", choices=("split", "zero", "permute", "mixed"), default="mixed",
                    help="which non-identifiable family to build (default mixed: a random composition)")
    ce.add_argument("--model", default=None, help="start from this multi-head model file instead of a random one")
    ce.add_argument("--inputs", type=_int_type(0, MAX_INPUTS), default=3,
                    help=f"random inputs to evaluate both maps on exactly (0..{MAX_INPUTS})")
    ce.add_argument("--json", action="store_true", help="print the models, the proof and the evaluations as JSON")
    ce.add_argument("--quiet", action="store_true", help="no progress indicator on stderr")

    c = sub.add_parser("certify", help="re-check a certificate file by replaying its transcript")
    c.add_argument("file", help="certificate JSON file ('-' for stdin)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--quiet", action="store_true", help="no progress bar on stderr")

    from .verify import THEOREMS

    v = sub.add_parser("verify", help="check the theorems' claims on a built-in sweep")
    v.add_argument("targets", nargs="*", metavar="CLAIM",
                   help=f"theorems ({', '.join(THEOREMS)}) or words of claim names (case-insensitive) to run; "
                   "default: every claim")
    v.add_argument("--budget", default=None, metavar="BUDGET",
                   help="the sweep's size: quick, standard (the default, under a minute on 2 cores), full, or a "
                   "number of seconds (the full sweep, spread over every claim, no instance started after it)")
    v.add_argument("--quick", action="store_true", help="the same as --budget quick")
    v.add_argument("--max-d", type=_int_type(1, 64), default=16, help="largest d of the random sweep (1..64, default 16)")
    v.add_argument("--theorem", action="append", choices=THEOREMS, help="only these theorems (repeatable; default all)")
    where = v.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=_int_type(1, 256), default=1,
                       help="run the claims' instances on a pool of this many local processes (default 1: sequential)")
    where.add_argument("--scheduler", default=None, metavar="ADDR",
                       help="run the instances on an existing Dask distributed cluster at this scheduler address "
                       "(e.g. tcp://10.0.0.5:8786; needs the 'cluster' extra)")
    v.add_argument("--scheduler-timeout", type=_positive_float, default=10.0, metavar="SECONDS",
                   help="how long to wait for the scheduler to answer (a positive number of seconds, default 10)")
    v.add_argument("--task", action="append", default=None, metavar="THEOREM:CLAIM:INSTANCE",
                   help="run only this instance (as a report's reproducer line gives it), or THEOREM:CLAIM for "
                   "one claim; repeatable")
    v.add_argument("--list", action="store_true",
                   help="list the selected claims (identity, instances at this budget, name) and run nothing")
    v.add_argument("--report", default=None, metavar="FILE",
                   help="also write a Markdown report: a table per theorem, and each failure with the command "
                   "line that re-runs that instance")
    v.add_argument("--resume", default=None, metavar="FILE",
                   help="the --json rows of an earlier (interrupted) run: claims with a row there are not run "
                   "again, their rows are reused")
    v.add_argument("--plots", default=None, metavar="DIR",
                   help="also draw PNG plots of the run into DIR (phase transition, error against τ, FFN queries "
                   "per parameter, multi-head queries against the formula; needs the 'plot' extra)")
    v.add_argument("--json", action="store_true",
                   help="print one JSON row per instance and per claim instead of a table (docs/verify.md: the rows)")
    v.add_argument("--quiet", "--no-progress", dest="quiet", action="store_true", help="no progress bar on stderr")
    return p


def _corpus_parser(sub) -> None:
    c = sub.add_parser("corpus", help="the regression corpus: independent reference vectors for other learners")
    csub = c.add_subparsers(dest="corpus_command", required=True, metavar="ACTION", parser_class=_Parser)
    e = csub.add_parser("export", help="write the corpus (models, queries, exact answers) into DIR")
    e.add_argument("directory", metavar="DIR", help="where to write manifest.json and one file per theorem")
    e.add_argument("--seed", type=_int_type(0), default=None, help="master seed of the generator (default: fixed)")
    e.add_argument("--size", choices=("quick", "standard"), default="standard",
                   help="quick: a few instances per theorem; standard (default): the full corpus")


def _cmd_corpus(args) -> int:
    from .corpus.generate import MASTER_SEED, write

    directory = args.directory
    if os.path.exists(directory) and not os.path.isdir(directory):
        raise InvalidArgument(f"corpus export: {directory} exists and is not a directory")
    if os.path.isdir(directory) and os.listdir(directory) and not os.path.exists(os.path.join(directory,
                                                                                              "manifest.json")):
        raise InvalidArgument(f"corpus export: {directory} is not empty and holds no corpus; refusing to write into it")
    for path in write(directory, seed=MASTER_SEED if args.seed is None else args.seed, size=args.size):
        print(path)
    return 0


def _random_parser(sub) -> None:
    r = sub.add_parser("random", help="print a random model as JSON")
    rsub = r.add_subparsers(dest="model", required=True, metavar="MODEL", parser_class=_Parser)
    for name, text in (("single-head", "a random single softmax head"),
                       ("low-rank", "a random single head with rank(W) <= RANK")):
        rs = rsub.add_parser(name, help=text)
        rs.add_argument("--d", type=_dimension, required=True,
                        help=f"token dimension (1..{MAX_RANDOM_D}; drawing costs about d²·10 µs and d²·100 bytes)")
        rs.add_argument("--seed", type=_int_type(0), default=0, help="seed of the generator (default 0)")
        rs.add_argument("--grid", type=_grid, default="rational:7",
                        help=f"grid of the entries (default rational:7): {GRIDS_HELP}")
        rs.add_argument("--bound", type=_number, default=Fraction(2),
                        help="magnitude of the entries (an exact number, e.g. 1e6; default 2)")
        rs.add_argument("--v-zeros", type=_int_type(0), default=0, help="how many entries of v are zero")
        if name == "single-head":
            rs.add_argument("--rank", type=_int_type(0), default=None, help="make rank(W) <= RANK (W = A·B)")
        else:
            rs.add_argument("--rank", type=_int_type(0), required=True, help="rank bound r (W = A·B, A d×r, B r×d)")
        rs.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")
    rs = rsub.add_parser("multi-head", help="a random sum of H softmax heads (optionally with the "
                         "non-identifiable structures: a duplicate W, a shared v, a zero v)")
    rs.add_argument("--d", type=_int_type(1, 256), required=True, help="token dimension (1..256)")
    rs.add_argument("--heads", type=_int_type(1, 64), required=True, help="number of heads H (1..64)")
    rs.add_argument("--seed", type=_int_type(0), default=0, help="seed of the generator (default 0)")
    rs.add_argument("--grid", type=_grid, default="rational:7",
                    help=f"grid of the entries (default rational:7): {GRIDS_HELP}")
    rs.add_argument("--bound", type=_number, default=Fraction(2),
                    help="magnitude of the entries (an exact number; default 2)")
    rs.add_argument("--duplicate-w", action="store_true", help="head 2 takes head 1's W (they merge canonically)")
    rs.add_argument("--shared-v", action="store_true", help="the last head takes head 1's v (with its own W)")
    rs.add_argument("--zero-v", action="store_true", help="the last head gets v = 0 (dropped canonically)")
    rs.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")
    for name, text in (("ffn", "a random bias-free ReLU network g(x) = wᵀReLU(Ax)"),
                       ("transformer", "a random one-layer Transformer T(X) = wᵀReLU(A·h(X))")):
        rs = rsub.add_parser(name, help=text)
        rs.add_argument("--d", type=_dimension, required=True, help=f"input (token) dimension (1..{MAX_RANDOM_D})")
        rs.add_argument("--m", type=_int_type(1, MAX_RANDOM_D), required=True,
                        help=f"number of hidden units (1..{MAX_RANDOM_D})")
        rs.add_argument("--seed", type=_int_type(0), default=0, help="seed of the generator (default 0)")
        rs.add_argument("--grid", type=_grid, default="rational:7",
                        help=f"grid of the entries (default rational:7): {GRIDS_HELP}")
        rs.add_argument("--bound", type=_number, default=Fraction(2),
                        help="magnitude of the entries (an exact number; default 2)")
        rs.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")


def _learn_parser(sub) -> None:
    lp = sub.add_parser("learn", help="learn a model from an oracle simulated from a model file")
    lsub = lp.add_subparsers(dest="learn_command", required=True, metavar="MODEL", parser_class=_Parser)
    by_command: dict[str, list] = {}
    for spec in registry.learners():
        by_command.setdefault(spec.command, []).append(spec)
    for command, specs in by_command.items():
        text = specs[0].summary if len(specs) == 1 else "; ".join(f"--method {s.method}: {s.summary}" for s in specs)
        lc = lsub.add_parser(command, help=text, description=text)
        lc.set_defaults(specs={s.method: s for s in specs})
        lc.add_argument("--model", default=None,
                        help="model JSON file ('-' for stdin) simulated as the black box (never evaluated as code)")
        if len(specs) > 1:
            lc.add_argument("--method", choices=[s.method for s in specs], default=None,
                            help=f"which learner (default {specs[0].method})")
        noisy = [s for s in specs if s.method.startswith("noisy-")]
        if noisy:
            lc.add_argument("--learner", choices=[s.method.removeprefix("noisy-") for s in noisy], default=None,
                            help="a noisy-oracle learner: 'paper' (Theorem 6.1's probes), 'frame' (the improved "
                            "45° frame, same d² + d queries) or 'refine' (a frame pilot, then probes adapted to it, "
                            "2(d² + d) queries); the default with --noise is 'frame'")
        if any(s.method == "threshold" for s in specs):
            lc.add_argument("--threshold", action="store_true",
                            help="the black box answers only bits [f(X) >= θ]: bisect each value to ±--epsilon, "
                            "then run --learner paper|frame|refine (default paper)")
        lc.add_argument("--noise", type=_noise, default=None,
                        help=f"add noise to the simulated oracle's answers: {', '.join(NOISE_KINDS)} "
                        "(τ exact, e.g. 1e-6 or 1/1000)")
        lc.add_argument("--noise-seed", type=_int_type(0), default=None, help="seed of the noise (default 0)")
        modes = sorted({m for s in specs if s.exact for m in s.modes})
        lc.add_argument("--mode", choices=modes, default=None,
                        help="the arithmetic (default: certified for the exact oracle or with --grid, else float)")
        if "certified" in modes and any(_accepts(s.learn, "grid") for s in specs):
            lc.add_argument("--grid", type=_grid, default=None,
                            help=f"certified mode: identify every parameter on this grid: {GRIDS_HELP}")
            lc.add_argument("--max-prec", type=_int_type(16, 1 << 26), default=1 << 23,
                            help="certified mode: the largest working precision in bits (default 2^23)")
        lc.add_argument("--d", dest="oracle_d", type=_int_type(1, 4096), default=None,
                        help="with --oracle MODULE:CALLABLE: the token dimension")
        lc.add_argument("--accuracy", type=_nonneg_number, default=None,
                        help="with --oracle MODULE:CALLABLE: the accuracy its answers really meet")
        lc.add_argument("--noise-bound", type=_nonneg_number, default=None,
                        help="with --oracle MODULE:CALLABLE: its answers are within this τ (a noisy learner runs)")
        lc.add_argument("--oracle", type=_oracle_choice, default="exact",
                        help="how the simulated black box answers: 'exact' reals, or 'float' float64 with a "
                        "rounding bound; or MODULE:CALLABLE, a real function X -> number imported by name "
                        "(this RUNS that module's code; with --d and --accuracy or --noise-bound, no --model)")
        lc.add_argument("--checks", type=_int_type(0, 100), default=None,
                        help="verification queries after learning (random sequences of length 3–4, or random points "
                        "for a ReLU network; default: the learner's, 2, or 6 for a ReLU network, which checks 2 more itself; 0: none, and the "
                        "result says what it then assumes)")
        lc.add_argument("--check-seed", type=_int_type(0), default=None,
                        help="seed of the verification queries (default: fresh)")
        seen = set()
        for spec in specs:
            for opt in spec.options:
                if opt.name in seen:
                    continue
                seen.add(opt.name)
                owned = [(s.method, o) for s in specs for o in s.options if o.name == opt.name]
                helps = {(o.help, o.default) for _, o in owned}
                if len(helps) > 1:  # the learners use it differently: say how each does
                    text = "; ".join(f"[{m}] {o.help}" + (f" (default {o.default})" if o.default is not None else "")
                                     + (" (required)" if o.required else "") for m, o in owned)
                else:
                    where = "" if len(owned) == len(specs) else f"[{'|'.join(m for m, _ in owned)}] "
                    text = where + opt.help + (f" (default {opt.default})" if opt.default is not None else "")
                lc.add_argument(opt.flag, dest=opt.name, type=_OPTION_TYPES[opt.kind](opt), default=None, help=text)
        lc.add_argument("--json", action="store_true", help="print the result as JSON")
        lc.add_argument("--certificate", default=None, metavar="FILE", help="write the certificate (with transcript) here")
        lc.add_argument("--quiet", action="store_true", help="no progress bar on stderr")


# -- commands ----------------------------------------------------------------------------


def _cmd_random(args) -> int:
    model: Any
    if args.model == "ffn":
        model = ReLUFFN.random(args.d, args.m, seed=args.seed, grid=args.grid, bound=args.bound)
    elif args.model == "transformer":
        model = Transformer.random(args.d, args.m, seed=args.seed, grid=args.grid, bound=args.bound)
    elif args.model == "multi-head":
        model = MultiHead.random(
            args.d, args.heads, seed=args.seed, grid=args.grid, bound=args.bound,
            duplicate_w=args.duplicate_w, shared_v=args.shared_v, zero_v=args.zero_v,
        )
    else:  # "low-rank" is a single head drawn with rank(W) <= --rank
        model = SingleHead.random(
            args.d, seed=args.seed, grid=args.grid, bound=args.bound, v_zeros=args.v_zeros, rank=args.rank
        )
    text = dump_json(model.to_json(), args.output)
    if args.output is None:
        print(text)
    return 0


def _learner_spec(args):
    """The learner the options select: ``--method``, or ``--learner`` (noisy), or the default;
    ``--noise`` without either picks the improved noisy learner."""
    method = getattr(args, "method", None)
    learner = getattr(args, "learner", None)
    if getattr(args, "threshold", False):
        if method not in (None, "threshold") or args.noise is not None:
            raise InvalidArgument("--threshold: the black box answers bits; it takes neither --method nor --noise")
        return args.specs["threshold"]
    if learner is not None:
        if method is not None and method != f"noisy-{learner}":
            raise InvalidArgument(f"--learner {learner}: conflicts with --method {method}")
        method = f"noisy-{learner}"
    if method is None and args.noise is not None and "noisy-frame" in args.specs:
        method = "noisy-frame"
    spec = args.specs[method or next(iter(args.specs))]
    if args.noise is not None and spec.exact:
        noisy = sorted(s.method.removeprefix("noisy-") for s in args.specs.values() if s.method.startswith("noisy-"))
        pointer = (f"; learn a noisy oracle with --learner {'|'.join(noisy)}" if noisy
                   else "; noisy oracles are learned by 'learn single-head --learner paper|frame|refine'")
        raise InvalidArgument(
            f"--noise: learner {spec.name!r} is exact and needs exact answers (or a declared grid), not noise{pointer}"
        )
    return spec


def _callable_oracle(args):
    """``--oracle MODULE:CALLABLE``: import the user's function by name (running its module) and wrap it."""
    import importlib

    module_name, _, attr = args.oracle.partition(":")
    if args.model is not None:
        raise InvalidArgument("--oracle MODULE:CALLABLE: the black box is that function; --model does not apply")
    if args.oracle_d is None:
        raise InvalidArgument("--oracle MODULE:CALLABLE: needs --d, the token dimension")
    if (args.accuracy is None) == (args.noise_bound is None):
        raise InvalidArgument("--oracle MODULE:CALLABLE: needs exactly one of --accuracy and --noise-bound")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as pytest and uvicorn do: modules of the working directory
    try:
        module = importlib.import_module(module_name)
    except Exception as e:
        raise InvalidArgument(f"--oracle: cannot import module {module_name!r}: {type(e).__name__}: {e}"[:280]) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InvalidArgument(f"--oracle: {module_name!r} has no callable {attr!r}")
    accuracy = args.accuracy if args.accuracy is not None else args.noise_bound
    return CallableOracle(fn, d=args.oracle_d, accuracy=accuracy)


def _cmd_learn(args) -> int:
    if ":" in args.oracle:
        chosen = getattr(args, "method", None) or getattr(args, "learner", None) or getattr(args, "threshold", False)
        if args.noise_bound is not None and not chosen and hasattr(args, "learner"):
            args.learner = "frame"  # a stated noise bound: the improved noisy learner by default
        spec = _learner_spec(args)
        return _learn_callable(args, spec)
    for flag, value in (("--d", args.oracle_d), ("--accuracy", args.accuracy), ("--noise-bound", args.noise_bound)):
        if value is not None:
            raise InvalidArgument(f"{flag}: applies only with --oracle MODULE:CALLABLE")
    if args.model is None:
        raise InvalidArgument("--model: the model file to simulate is required (or --oracle MODULE:CALLABLE)")
    spec = _learner_spec(args)
    model = load_model(args.model)
    if spec.model_kind == "multi-head" and getattr(model, "kind", None) == "single-head":
        model = MultiHead([model])  # a single head is a multi-head model with H = 1
    if getattr(model, "kind", None) != spec.model_kind:
        raise InvalidArgument(f"{args.model}: learner {spec.name!r} learns {spec.model_kind} models, got a {model.kind}")
    kwargs = {}
    for opt in spec.options:
        value = getattr(args, opt.name, None)
        if value is not None:
            kwargs[opt.name] = value
        elif opt.required:
            raise InvalidArgument(f"{opt.flag}: learner {spec.name!r} needs it ({opt.help})")
    if spec.method == "threshold" and args.learner is not None:
        kwargs["learner"] = args.learner
    if spec.model_kind == "multi-head":
        if "heads" in kwargs and "max_heads" in kwargs:
            raise InvalidArgument("--heads/--max-heads: give one (both bound the canonical heads)")
        if "heads" not in kwargs and "max_heads" not in kwargs:
            kwargs["heads"] = max(model.H, 1)  # the model file's H: what its owner knows
            if not args.quiet:
                print(f"(--heads {kwargs['heads']}: the number of heads in {args.model})", file=sys.stderr)
    for s in args.specs.values():  # options given for another method are an error, not silently ignored
        for opt in s.options:
            if s is not spec and getattr(args, opt.name, None) is not None and all(o.name != opt.name for o in spec.options):
                raise InvalidArgument(f"{opt.flag}: applies to --method {s.method}, not {spec.method}")
    oracle: BaseOracle = ExactOracle(model) if args.oracle == "exact" else FloatOracle(model)
    if args.noise is not None:
        noise = args.noise
        if isinstance(noise, Adversarial) and noise.strategy is None and spec.adversary is not None:
            # the simulated black box's adversary knows the model and the learner it faces
            options = {k: v for k, v in kwargs.items() if k in ("w_bound", "token_norm")}
            noise = Adversarial(noise.tau, spec.adversary(model, tau=noise.tau, **options))
        oracle = NoisyOracle(oracle, noise, seed=0 if args.noise_seed is None else args.noise_seed)
    elif args.noise_seed is not None:
        raise InvalidArgument("--noise-seed: applies only with --noise")
    if spec.exact:
        kwargs.update(check_seed=args.check_seed)
        if args.checks is not None:
            kwargs["checks"] = args.checks
        if args.mode is not None and _accepts(spec.learn, "mode"):
            kwargs["mode"] = args.mode
        if getattr(args, "grid", None) is not None:
            kwargs["grid"] = args.grid
        if hasattr(args, "max_prec") and _accepts(spec.learn, "max_prec"):
            kwargs["max_prec"] = args.max_prec
    elif args.mode is not None or getattr(args, "grid", None) is not None:
        raise InvalidArgument(f"--mode/--grid: learner {spec.name!r} is approximate and takes neither")
    if args.certificate and not spec.exact:
        raise InvalidArgument(f"--certificate: learner {spec.name!r} gives approximate results, which carry no certificate")
    float_mode = args.mode == "float" or (args.mode is None and args.oracle == "float" and not getattr(args, "grid", None))
    if args.certificate and float_mode:
        raise InvalidArgument(
            "--certificate: float mode gives approximate results, which carry no certificate; "
            "use an exact mode (with --grid G for a float oracle)"
        )
    _announce(spec, model.d, kwargs, quiet=args.quiet)
    with terminal_reporter(quiet=args.quiet):
        result = spec.learn(oracle, **kwargs)
    if args.certificate:
        if result.certificate is None:
            raise InvalidArgument(
                "--certificate: approximate results (float mode) carry no certificate; "
                "use an exact mode (with --grid G for a float oracle)"
            )
        dump_json(certificate_to_json(result.certificate), args.certificate)
    report = result.report
    if result.certificate is not None and report is None:
        with terminal_reporter(quiet=args.quiet):
            report = result.certificate.check()
    same = _same(result, model)
    measured = _measured_errors(result.model, model) if result.error_bound is not None else None
    within = measured is None or _within_bound(measured, result.error_bound)
    if model.kind == "multi-head" and not result.exact:  # float mode: the estimate must hold
        within = _multi_head_float_error(result.model, model) <= result.error_estimate
    ok = (same or not result.exact) and (report is None or report.holds) and within
    if args.json:
        out = result_to_json(result)
        out["equals_model"] = same
        if measured is not None:
            out["measured_error"] = measured
            out["within_bound"] = within
        if report is not None:
            out["certificate"] = {"kind": report.kind, "holds": report.holds, "covers": _covers(report.scope),
                                  "message": report.message}
        if model.kind in ("ffn", "transformer"):
            out.update(_ffn_json(result, model))
        if model.kind == "multi-head":
            out.update(_multi_head_json(result, model))
        print(json.dumps(out, indent=1))
    elif model.kind in ("ffn", "transformer"):
        _print_ffn_result(result, model, report, same)
    elif model.kind == "multi-head":
        _print_multi_head(result, model, report, same)
    else:
        _print_result(result, model, spec, report, same, measured)
    return 0 if ok else EXIT_FAIL


def _accepts(fn, name: str) -> bool:
    """Whether the learner function takes the keyword ``name`` (the command line offers what it takes)."""
    import inspect

    return name in inspect.signature(fn).parameters


def _same(result, model) -> bool:
    """Whether the result is the model: its parameters, or for a ReLU network (and a Transformer's
    FFN) its canonical forms: the function level always, the unit level when it is identifiable."""
    if model.kind == "multi-head":
        return result.model == canonical_form(model)
    if model.kind not in ("ffn", "transformer"):
        return result.model == model
    ffn = model.ffn if model.kind == "transformer" else model
    learned = result.model.ffn if model.kind == "transformer" else result.model
    same = result.details["function_form"] == ffn.function_form()
    if result.details["identifiable"]:
        same = same and learned.unit_form() == ffn.unit_form()
    if model.kind == "transformer":
        same = same and result.model.W == model.W
    return same


def _ffn_json(result, model) -> dict:
    """The canonical forms and the counts of a ReLU network's or a Transformer's result."""
    d = result.details
    out = {
        "function_form": d["function_form"].to_json(),
        "unit_forms": [u.to_json() for u in d["unit_forms"]],
        "identifiable": d["identifiable"],
        "orientations": d["orientations"],
        "oracle_calls": result.queries,
        "queries": result.queries,
    }
    if model.kind == "transformer":
        out["queries"] = d["ffn_queries"] + d["odd_queries"]  # value queries: each odd one is two calls
        out["W"] = result.model.to_json()["W"]
    return out


def _multi_head_float_error(learned, model) -> float:
    """The largest entry error of a float result against the model's canonical form: each true
    head against its nearest learned head (inf when the head counts differ)."""
    truth = canonical_form(model)
    if learned.H != truth.H:
        return float("inf")
    worst = 0.0
    for h in truth.heads:
        W, v = h.to_numpy()
        worst = max(worst, min(max(float(np.max(np.abs(g.to_numpy()[0] - W), initial=0.0)),
                                   float(np.max(np.abs(g.to_numpy()[1] - v), initial=0.0))) for g in learned.heads))
    return worst


def _multi_head_json(result, model) -> dict:
    """The canonical heads and the counts of a multi-head result (and a float result's errors)."""
    d = result.details
    out = {
        "canonical_heads": result.model.to_json()["heads"],
        "canonical_count": result.model.H,
        "queries": result.queries,
        "max_length": result.max_length,
        "paper_count": d.get("paper_count"),
        "fast_count": d.get("fast_count"),
        "lower_bound": d.get("lower_bound"),
    }
    if not result.exact:
        err = _multi_head_float_error(result.model, model)
        out.update(measured_error=err if err != float("inf") else "Infinity", within_estimate=err <= result.error_estimate,
                   condition=d.get("condition"), monomial_condition=d.get("monomial_condition"))
    return out


def _print_multi_head(result, model, report, same: bool) -> None:
    d = result.details
    H = d.get("heads_bound")
    print(f"mode        {result.mode}")
    print(f"queries     {result.queries}, longest sequence {result.max_length} (paper 4Hd² − 2H + 1 = {d.get('paper_count')}, "
          f"fast on generic instances {d.get('fast_count')}, parameters H(d² + d) = {d.get('lower_bound')}; H = {H})")
    def n(count, word):
        return f"{count} {word}{'' if count == 1 else 's'}"

    print(f"blocks      {d.get('blocks')} ({n(d.get('links'), 'in-group link')}, {n(d.get('cross_links'), 'cross link')}, "
          f"{n(d.get('fallback_groups'), 'group')} fell back to links, {n(d.get('redraws'), 'probe redraw')}; "
          f"seed {d.get('seed')})")
    if result.verification_queries:
        lengths = result.details.get("checks", {}).get("lengths", [])
        print(f"checks      {result.verification_queries} verification queries (lengths {', '.join(map(str, lengths))}), "
              "reproduced")
    else:
        print(f"checks      none (--checks 0): the result holds {', '.join(result.assumptions)}")
    fmt = format_rational if result.exact else (lambda x: f"{float(x):.17g}")
    if result.exact:
        verdict = "yes: equal to the model's canonical form" if same else "NO: differs from the model's canonical form"
        print(f"exact       {verdict}" + (f" ({', '.join(result.assumptions)})" if result.assumptions else ""))
    else:
        err = _multi_head_float_error(result.model, model)
        print(f"error       estimated <= {result.error_estimate:.3g} per entry; measured {err:.3g} against the "
              f"model file's canonical form ({'within' if err <= result.error_estimate else 'NOT within'} the estimate)")
        print(f"condition   {d.get('condition', 0):.3g} (the block fits' intrinsic sensitivity); the monomial "
              f"scheme's matrix: {d.get('monomial_condition', 0):.3g}")
    if report is not None:
        print(f"certificate {report.message}")
    print(f"seconds     {result.seconds['total']:.3f}")
    print(f"canonical   {result.model.H} head(s) (equal W merged, zero v dropped)")
    for i, h in enumerate(result.model.heads):
        print(f"head {i + 1}: v = [" + ", ".join(fmt(x) for x in h.v) + "]")
        for row in h.W:
            print("  W [" + ", ".join(fmt(x) for x in row) + "]")


def _print_ffn_result(result, model, report, same: bool) -> None:
    d = result.details
    m = model.m
    if model.kind == "transformer":
        dd = model.d
        print(f"queries     {d['ffn_queries']} for the FFN + {d['odd_queries']} odd queries (two calls each) = "
              f"{result.queries} oracle calls (Q_FFN + 2(d² + d) = {d['ffn_queries']} + {2 * (dd * dd + dd)})")
    else:
        bound = registry.get("ffn").query_count(model.d, m=m)
        print(f"queries     {result.queries} + {result.verification_queries} checks (the stated bound, checks included: "
              f"(m + 1)(d − 2) + 5m + 20 = {bound} for m = {m}), {d['paths']} path(s), seed {d['seed']}")
    print(f"checks      {result.verification_queries} random verification queries, reproduced exactly")
    verdict = "yes: the canonical form equals the model's" if same else "NO: differs from the model's canonical form"
    print(f"exact       {verdict}" + (f" (assuming {'; '.join(result.assumptions)})" if result.assumptions else ""))
    if report is not None:
        print(f"certificate {report.message}")
    form = d["function_form"]
    print(f"function    g(x) = Lᵀx + Σ κ_k|n_kᵀx| with {len(form.normals)} hyperplanes")
    print("  L = [" + ", ".join(format_rational(x) for x in form.linear) + "]")
    for n, k in zip(form.normals, form.kinks):
        print(f"  κ = {format_rational(k)}, n = [" + ", ".join(format_rational(x) for x in n) + "]")
    if d["identifiable"]:
        print(f"units       identifiable: {len(d['unit_forms'][0].units)} units (up to order and positive scaling)")
        for a, w in d["unit_forms"][0].units:
            print(f"  w = {format_rational(w)}, a = [" + ", ".join(format_rational(x) for x in a) + "]")
    else:
        print(f"units       not identifiable: {d['unit_reason']} ({d['orientations']} orientation(s) found)")
    if model.kind == "transformer":
        print("W =")
        for row in result.model.W:
            print("  [" + ", ".join(format_rational(x) for x in row) + "]")
    print(f"seconds     {result.seconds['total']:.3f}")


def _learn_callable(args, spec) -> int:
    """Learn from a user's function: no model file, so nothing to compare with; the result and
    its certificate (or certified bound) are what the command reports."""
    oracle = _callable_oracle(args)
    if args.noise is not None or args.noise_seed is not None:
        raise InvalidArgument("--noise: a real function brings its own noise; declare it with --noise-bound")
    kwargs = {opt.name: getattr(args, opt.name) for opt in spec.options if getattr(args, opt.name, None) is not None}
    missing = [opt.flag for opt in spec.options if opt.required and opt.name not in kwargs]
    if missing:
        raise InvalidArgument(f"{missing[0]}: learner {spec.name!r} needs it")
    if spec.exact:
        kwargs.update(check_seed=args.check_seed)
        if args.checks is not None:
            kwargs["checks"] = args.checks
        if args.mode is not None and _accepts(spec.learn, "mode"):
            kwargs["mode"] = args.mode
        if getattr(args, "grid", None) is not None:
            kwargs["grid"] = args.grid
    with terminal_reporter(quiet=args.quiet):
        result = spec.learn(oracle, **kwargs)
    report = result.report
    if result.certificate is not None and report is None:
        report = result.certificate.check()
    ok = report is None or report.holds
    if args.json:
        out = result_to_json(result)
        if report is not None:
            out["certificate"] = {"kind": report.kind, "holds": report.holds, "covers": _covers(report.scope),
                                  "message": report.message}
        print(json.dumps(out, indent=1))
    else:
        print(f"learner     {result.learner} ({result.mode}), {result.queries} queries of {args.oracle}")
        print(f"claim       {result.claim}")
        if report is not None:
            print(f"certificate {report.message}")
        fmt = format_rational if result.exact else (lambda x: f"{float(x):.17g}")
        print("W =")
        for row in result.model.W:
            print("  [" + ", ".join(fmt(x) for x in row) + "]")
        print("v = [" + ", ".join(fmt(x) for x in result.model.v) + "]")
    return 0 if ok else EXIT_FAIL


def _measured_errors(learned, model) -> dict:
    """The errors of a noisy learner's result against the model file (what the bound must cover)."""
    W, v = (np.array(x, dtype=float) for x in learned.to_numpy())
    Wt, vt = (np.array(x, dtype=float) for x in model.to_numpy())
    return {"W_frobenius": float(np.linalg.norm(W - Wt)), "W_max": float(np.abs(W - Wt).max()),
            "v_norm": float(np.linalg.norm(v - vt)), "v_max": float(np.abs(v - vt).max())}


def _within_bound(measured: dict, bound) -> bool:
    return all(measured[k] <= v for k, v in bound.to_json().items())


#: Measured costs per query of a certified exact learn (oracle, identification, replay and
#: transcript together; see benchmarks/single_head.py), used to announce long runs and to
#: refuse runs that would not fit in memory.
SECONDS_PER_QUERY = {"certified": 3e-5, "symbolic": 3e-3, "float": 2e-5}
BYTES_PER_QUERY = 2000
MAX_LEARN_BYTES = 8e9


def _announce(spec, d: int, kwargs: dict, *, quiet: bool) -> None:
    """Refuse a learn that would not fit in memory; announce one that takes more than ten seconds."""
    try:
        n = int(spec.query_count(d, **{k: v for k, v in kwargs.items() if k in ("rank", "m", "C")}))
    except (TypeError, ValueError, ExactAttentionError):
        return
    mode = kwargs.get("mode") or "certified"
    seconds, nbytes = n * SECONDS_PER_QUERY.get(mode, 3e-5), n * BYTES_PER_QUERY
    if nbytes > MAX_LEARN_BYTES:
        raise InvalidArgument(
            f"{spec.name}: d = {d} needs {n:.3g} queries, about {_size(nbytes)} of transcript and {_duration(seconds)}; "
            f"the limit is {_size(MAX_LEARN_BYTES)} (use the Python API to run it anyway)"
        )
    if seconds > 10 and not quiet:
        print(f"exact-attention: {spec.name}, d = {d}: {n} queries, about {_duration(seconds)} and {_size(nbytes)}",
              file=sys.stderr)


def _claim(result, spec, model) -> str:
    d = model.d
    if spec.name == "low-rank":
        r, given = result.details["rank"], result.details["rank_known"]
        if not given:
            return f"2rd − r² + 2d − r = {2 * r * d - r * r + 2 * d - r} with the found r = {r}"
        bound = result.certificate.conditions["rank"]
        if r == bound:
            return f"2rd − r² + d = {spec.query_count(d, rank=r)}"
        return f"d + d·r + r'(d − r) = {d + d * bound + r * (d - bound)} with r = {bound}, found r' = {r}"
    if spec.name == "low-rank-cs":
        return f"d + m = {d} + {result.details['m']}"
    return f"{spec.count_formula} = {spec.query_count(d)}"


def _print_result(result, model, spec, report, same: bool, measured: dict | None = None) -> None:
    print(f"mode        {result.mode}" + (f" (grid {result.grid})" if result.grid else ""))
    print(f"queries     {result.queries} ({_claim(result, spec, model)}), longest sequence {result.max_length}")
    checks = result.details.get("checks", {})
    if result.verification_queries:
        lengths = checks.get("lengths", [])
        print(f"checks      {result.verification_queries} verification queries (lengths {', '.join(map(str, lengths))}), "
              "reproduced")
    elif spec.exact:
        print(f"checks      none (--checks 0): the result holds {', '.join(result.assumptions)}")
    if "rank" in result.details:
        known = "within the given bound" if result.details["rank_known"] else "found by exact rank tests"
        print(f"rank        {result.details['rank']} ({known}; sketch seed {result.details['seed']})")
    if result.exact:
        verdict = "yes: equal to the model" if same else "NO: differs from the model"
        print(f"exact       {verdict}" + (f" ({', '.join(result.assumptions)})" if result.assumptions else ""))
        print(f"certificate {report.message}")
        print(f"precision   {result.precision} bits" if result.mode == "certified" else "precision   exact symbolic")
    elif result.mode in ("certified", "symbolic"):
        print(f"exact       not claimed: identified on grid {result.grid} but not confirmed by a replay")
        print(f"certificate {report.message}" if report is not None else "certificate none")
    elif result.error_bound is not None and measured is not None:
        b = result.error_bound
        if "bit_queries" in result.details:
            print(f"bits        {result.details['bit_queries']} threshold bits for {result.queries} value queries "
                  f"(full-range bisection: {result.details['full_range_bits']}; prior misses: "
                  f"{result.details['prior_misses']}; each value to ±{result.details['epsilon']})")
        print(f"bound       certified ‖ΔW‖_F <= {b.W_frobenius:.3g}, max |ΔW_ij| <= {b.W_max:.3g}, "
              f"‖Δv‖ <= {b.v_norm:.3g} ({'; '.join(result.assumptions)})")
        verdict = "yes" if _within_bound(measured, b) else "NO: the bound does not hold"
        print(f"measured    ‖ΔW‖_F = {measured['W_frobenius']:.3g}, max |ΔW_ij| = {measured['W_max']:.3g}, "
              f"‖Δv‖ = {measured['v_norm']:.3g} against the model file; within the bound: {verdict}")
    elif result.error_estimate is not None:
        print(f"error       estimated <= {result.error_estimate:.3g}")
    else:
        W, _ = model.to_numpy()
        Wh, _ = result.model.to_numpy()
        err = float(np.linalg.norm(Wh - W) / max(np.linalg.norm(W), 1e-300))
        print(f"error       relative Frobenius error {err:.3g} against the model file (solver {result.details['status']})")
    print(f"seconds     {result.seconds['total']:.3f}")
    fmt = format_rational if result.exact else (lambda x: f"{float(x):.17g}")
    print("W =")
    for row in result.model.W:
        print("  [" + ", ".join(fmt(x) for x in row) + "]")
    print("v = [" + ", ".join(fmt(x) for x in result.model.v) + "]")
    if "factors" in result.details:
        print("W = Kᵀ Q with canonical factors (Q in reduced row echelon form):")
        for name in ("K", "Q"):
            for i, row in enumerate(result.details["factors"][name]):
                print(f"  {name}[{i}] = [" + ", ".join(row) + "]")


def _cmd_counterexample(args) -> int:
    import random

    from proofs.multihead import construct, prove_equivalent

    if args.model is not None:
        if args.d is not None or args.heads is not None:
            raise InvalidArgument("--model: the model file fixes d and H; do not pass --d or --heads with it")
        a = load_model(args.model)
        if not isinstance(a, MultiHead):
            raise InvalidArgument(f"{args.model}: expected a multi-head model, got a {type(a).__name__}")
    elif args.d is None or args.heads is None:
        raise InvalidArgument("counterexample: give --d and --heads for a random model, or --model FILE")
    else:
        a = MultiHead.random(args.d, args.heads, seed=args.seed)
    if a.H > MAX_HEADS or a.d > 16:
        raise InvalidArgument(f"counterexample: the symbolic proof supports d <= 16 and H <= {MAX_HEADS}, got d={a.d}, H={a.H}")
    with elapsed("proving", quiet=args.quiet):
        b = construct(a, args.kind, seed=args.seed + 1)
        proof = prove_equivalent(a, b)
    rng = random.Random(args.seed)
    evaluations = []
    for k in range(args.inputs):
        N = 1 + rng.randrange(6)
        X = [[Fraction(rng.randint(-6, 6), rng.randint(1, 4)) for _ in range(a.d)] for _ in range(N)]
        fa, fb = a.exact(X), b.exact(X)
        evaluations.append({
            "X": [[format_rational(x) for x in row] for row in X],
            "f_A": fa.ball(128).str(25, radius=False),
            "f_B": fb.ball(128).str(25, radius=False),
            "equal": fa == fb,
        })
    if args.json:
        print(json.dumps({"kind": args.kind, "A": a.to_json(), "B": b.to_json(), "proof": proof.to_json(),
                          "evaluations": evaluations}, indent=1))
    else:
        for name, m in (("A", a), (f"B ({args.kind})", b)):
            print(f"Model {name}: d={m.d}, H={m.H}")
            for h, head in enumerate(m.heads):
                W = "; ".join(", ".join(format_rational(x) for x in row) for row in head.W)
                print(f"  head {h + 1}: W = [{W}]  v = [{', '.join(format_rational(x) for x in head.v)}]")
        print(f"\n{proof.name}: {'PROVED' if proof.verified else 'NOT PROVED'}: {proof.statement}")
        for i, step in enumerate(proof.steps, 1):
            print(f"  {i}. {step}")
        if evaluations:
            print("\nExact evaluation on random inputs:")
        for e in evaluations:
            verdict = "equal (decided exactly)" if e["equal"] else "DIFFERENT"
            print(f"  N={len(e['X'])}: f_A = {e['f_A']}…  f_B = {e['f_B']}…  {verdict}")
    return 0 if proof.verified and all(e["equal"] for e in evaluations) else EXIT_FAIL


def _cmd_certify(args) -> int:
    cert = load_certificate(args.file)
    with terminal_reporter(quiet=args.quiet):
        report = cert.check()
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(report.message)
    return 0 if report.holds else EXIT_FAIL


def _cmd_verify(args) -> int:
    from .verify.session import VerifyOptions, run_session

    if args.quick and args.budget not in (None, "quick"):
        raise InvalidArgument(f"--quick is --budget quick; it contradicts --budget {args.budget}")
    return run_session(VerifyOptions(
        targets=tuple(args.targets), theorems=tuple(args.theorem or ()),
        budget="quick" if args.quick else args.budget or "standard", max_d=args.max_d, tasks=tuple(args.task or ()),
        jobs=args.jobs, scheduler=args.scheduler, scheduler_timeout=args.scheduler_timeout, report=args.report,
        plots=args.plots, resume=args.resume, json=args.json, progress=not args.quiet, list=args.list,
    ))


_COMMANDS = {
    "random": _cmd_random,
    "learn": _cmd_learn,
    "counterexample": _cmd_counterexample,
    "certify": _cmd_certify,
    "verify": _cmd_verify,
    "corpus": _cmd_corpus,
}


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except NotIdentifiable as e:
        return _error(args, "not identifiable", e)
    except (ExactAttentionError, ValueError, OSError, ImportError, OverflowError, RecursionError, MemoryError) as e:
        return _error(args, "error", e)
    except KeyboardInterrupt:
        print("exact-attention: interrupted", file=sys.stderr)
        return 130


def _error(args, kind: str, e: BaseException) -> int:
    """One line on stderr; with ``--json``, also ``{"row": "error", "error": ..., "status": 2}`` on stdout,
    so that a reader of the JSON stream sees the run end (every command with ``--json``)."""
    message = _one_line(e)
    print(f"exact-attention: {kind}: {message}", file=sys.stderr)
    if getattr(args, "json", False):
        text = message if kind == "error" else f"{kind}: {message}"
        print(json.dumps({"row": "error", "error": text, "status": EXIT_ERROR}), flush=True)
    return EXIT_ERROR


#: Library messages name Python keywords; on the command line they name the flags.
_FLAGS = (
    (re.compile(r"\bmode='(\w+)'"), r"--mode \1"),
    (re.compile(r"\bgrid='([\w:]+)'"), r"--grid \1"),
    (re.compile(r"\bmax_prec=(\d+)"), r"--max-prec \1"),
    (re.compile(r"\bmax_prec\b"), "--max-prec"),
    (re.compile(r"\bw_bound\b"), "--w-bound"),
    (re.compile(r"\bchecks=(\d+)"), r"--checks \1"),
    (re.compile(r"\bmax_heads=(?=[\w-])"), "--max-heads "),
    (re.compile(r"\bmax_heads="), "--max-heads"),
    (re.compile(r"\bheads=(?=[\w-])"), "--heads "),
    (re.compile(r"\bheads="), "--heads"),
)


def _as_flags(text: str) -> str:
    """A library message with its Python keyword hints rewritten as command-line flags.

    >>> _as_flags("not certified at 64 bits and max_prec=128; raise max_prec or use mode='symbolic'")
    'not certified at 64 bits and --max-prec 128; raise --max-prec or use --mode symbolic'
    """
    for pattern, repl in _FLAGS:
        text = pattern.sub(repl, text)
    return text


def _one_line(e: BaseException, limit: int = 300) -> str:
    text = _as_flags(" ".join(str(e).split()))
    prefix_room = 40  # "exact-attention: error: " and the like
    room = limit - prefix_room
    return text if len(text) <= room else text[: room - 1] + "…"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


def _covers(scope: str) -> str:
    """A report's scope ``" (…)"`` without its outer parentheses (inner ones kept)."""
    scope = scope.strip()
    return scope[1:-1] if scope.startswith("(") and scope.endswith(")") else scope
