"""The ``exact-attention`` command line.

The command line *simulates* a black box: it reads a model's parameters from a JSON
file, wraps them in an oracle that answers value queries (and counts them), and lets
a learner recover the parameters from the answers alone.  The comparison with the
file is made only at the end, to report whether the result equals it.  ``--oracle
MODULE:CALLABLE`` points a learner at a real function instead.

Subcommands::

    exact-attention random KIND --d D [--seed S] [...]                print a random model (KIND: see --help)
    exact-attention learn single-head --model FILE [--mode M] [--json]
    exact-attention learn single-head --model FILE --noise uniform:1e-6 [--learner paper|frame|refine] --w-bound WB
    exact-attention learn low-rank --model FILE [--rank R] [--method sketch|cs] [--json]
    exact-attention learn ffn --model FILE [--m M] [--json]
    exact-attention learn transformer --model FILE [--m M] [--json]
    exact-attention learn multi-head --model FILE [--heads H] [--method paper|fast]
    exact-attention counterexample --d D --heads H --seed S [--kind K]  Prop. 7.1, proved
    exact-attention certify FILE                                       re-check a certificate
    exact-attention verify [--budget B] [--jobs N] [--report F]        check the theorems' claims
    exact-attention corpus export DIR                                  reference vectors for other learners

``random`` offers every model kind of :mod:`exact.kinds`, ``learn`` every registered
learner (:mod:`exact.registry`, built-in or installed as a plug-in); their options come
from the kind's and the learner's declarations, and a result is printed as it describes
itself (:mod:`exact.learn.details`).  This module switches on no model kind and no learner.
Every error is reported as one line on stderr with exit status 2 (bad input, or a problem
without an answer); a claim, a certificate or a result that does not hold exits 1.  With
``--json``, an error is also printed on stdout as ``{"error": ..., "exit": 2}``.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys

from . import __version__, registry
from .cli_args import (EXIT_ERROR, EXIT_FAIL, GRIDS_HELP, Parser, add_option, duration, grid, int_type,
                       nonneg_number, noise, oracle_choice, seconds, size)
from .errors import ExactAttentionError, InvalidArgument, NotIdentifiable
from .io import certificate_to_json, dump_json, load_certificate, load_model, result_to_json
from .kinds import as_kind, random_recipes
from .noise import NOISE_KINDS, Adversarial, NoisyOracle
from .oracles import BaseOracle, CallableOracle, ExactOracle, FloatOracle
from .progress import elapsed, terminal_reporter

__all__ = ["main", "build_parser"]

MAX_INPUTS = 1000



def build_parser() -> Parser:
    p = Parser(
        prog="exact-attention",
        description="Learn attention parameters from black-box queries, and prove the result exact. "
        "The command line simulates the black box from a parameter file, or asks a function you name.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    _random_parser(sub)
    _corpus_parser(sub)
    _learn_parser(sub)

    ce = sub.add_parser("counterexample", help="Prop. 7.1: a different multi-head parameterisation with the same map, proved")
    ce.add_argument("--d", type=int_type(1, 16), default=None, help="token dimension of the random model (1..16)")
    ce.add_argument("--heads", type=int_type(1, 8), default=None, help="number of heads H of the random model (1..8)")
    ce.add_argument("--seed", type=int_type(0), default=0, help="seed of the model and the construction")
    ce.add_argument("--kind", choices=("split", "zero", "permute", "mixed"), default="mixed",
                    help="which non-identifiable family to build (default mixed: a random composition)")
    ce.add_argument("--model", default=None, help="start from this multi-head model file instead of a random one")
    ce.add_argument("--inputs", type=int_type(0, MAX_INPUTS), default=3,
                    help=f"random inputs to evaluate both maps on exactly (0..{MAX_INPUTS})")
    ce.add_argument("--json", action="store_true", help="print the models, the proof and the evaluations as JSON")
    ce.add_argument("--quiet", action="store_true", help="no progress indicator on stderr")

    c = sub.add_parser("certify", help="re-check a certificate file by replaying its transcript")
    c.add_argument("file", help="certificate JSON file ('-' for stdin)")
    c.add_argument("--json", action="store_true", help="print the report as JSON")
    c.add_argument("--quiet", action="store_true", help="no progress bar on stderr")

    from .verify import theorem_keys

    THEOREMS = theorem_keys()

    v = sub.add_parser("verify", help="check the theorems' claims on a built-in sweep")
    v.add_argument("targets", nargs="*", metavar="CLAIM",
                   help=f"theorems ({', '.join(THEOREMS)}) or words of claim names (case-insensitive) to run; "
                   "default: every claim")
    v.add_argument("--budget", default=None, metavar="BUDGET",
                   help="the sweep's size: quick, standard (the default, under a minute on 2 cores), full, or a "
                   "number of seconds (the full sweep, spread over every claim, no instance started after it)")
    v.add_argument("--quick", action="store_true", help="the same as --budget quick")
    v.add_argument("--max-d", type=int_type(1, 64), default=16, help="largest d of the random sweep (1..64, default 16)")
    v.add_argument("--theorem", action="append", choices=THEOREMS, help="only these theorems (repeatable; default all)")
    where = v.add_mutually_exclusive_group()
    where.add_argument("--jobs", type=int_type(1, 256), default=1,
                       help="run the claims' instances on a pool of this many local processes (default 1: sequential)")
    where.add_argument("--scheduler", default=None, metavar="ADDR",
                       help="run the instances on an existing Dask distributed cluster at this scheduler address "
                       "(e.g. tcp://10.0.0.5:8786; needs the 'cluster' extra)")
    v.add_argument("--scheduler-timeout", type=seconds, default=10.0, metavar="SECONDS",
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
    csub = c.add_subparsers(dest="corpus_command", required=True, metavar="ACTION", parser_class=Parser)
    e = csub.add_parser("export", help="write the corpus (models, queries, exact answers) into DIR")
    e.add_argument("directory", metavar="DIR", help="where to write manifest.json and one file per theorem")
    e.add_argument("--seed", type=int_type(0), default=None, help="master seed of the generator (default: fixed)")
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
    rsub = r.add_subparsers(dest="recipe", required=True, metavar="MODEL", parser_class=Parser)
    for recipe in random_recipes():
        rs = rsub.add_parser(recipe.command, help=recipe.summary, description=recipe.summary)
        rs.set_defaults(recipe=recipe)
        for opt in recipe.options:
            add_option(rs, opt, default_from_option=True)
        rs.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")


def _cmd_random(args) -> int:
    recipe = args.recipe
    model = recipe.make(**{opt.name: getattr(args, opt.name) for opt in recipe.options})
    text = dump_json(model.to_json(), args.output)
    if args.output is None:
        print(text)
    return 0


def _learn_parser(sub) -> None:
    lp = sub.add_parser("learn", help="learn a model from an oracle simulated from a model file, or from a function")
    lsub = lp.add_subparsers(dest="learn_command", required=True, metavar="MODEL", parser_class=Parser)
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
        selectors: dict[str, list] = {}
        for s in specs:
            if s.selector:
                selectors.setdefault(s.selector[0], []).append(s)
        for name, chosen in selectors.items():
            users = [s for s in specs if any(o.name == name for o in s.options)]
            lc.add_argument("--" + name.replace("_", "-"), dest=name, default=None,
                            choices=sorted({s.selector[1] for s in chosen} | {c for s in users for o in s.options
                                                                               if o.name == name for c in o.choices or ()}),
                            help="; ".join(f"{s.selector[1]}: {s.summary}" for s in chosen)
                            + "".join(f"; with --{u.switch}: {o.help}" for u in users for o in u.options if o.name == name))
        for s in specs:
            if s.switch:
                lc.add_argument("--" + s.switch, dest=s.switch, action="store_true", help=s.summary)
        lc.add_argument("--noise", type=noise, default=None,
                        help=f"add noise to the simulated oracle's answers: {', '.join(NOISE_KINDS)} "
                        "(τ exact, e.g. 1e-6 or 1/1000)")
        lc.add_argument("--noise-seed", type=int_type(0), default=None, help="seed of the noise (default 0)")
        modes = sorted({m for s in specs if s.exact for m in s.modes})
        lc.add_argument("--mode", choices=modes, default=None,
                        help="the arithmetic (default: certified for the exact oracle or with --grid, else float)")
        if "certified" in modes and any(_accepts(s.learn, "grid") for s in specs):
            lc.add_argument("--grid", type=grid, default=None,
                            help=f"certified mode: identify every parameter on this grid: {GRIDS_HELP}")
            lc.add_argument("--max-prec", type=int_type(16, 1 << 26), default=1 << 23,
                            help="certified mode: the largest working precision in bits (default 2^23)")
        lc.add_argument("--d", dest="oracle_d", type=int_type(1, 4096), default=None,
                        help="with --oracle MODULE:CALLABLE: the token dimension")
        lc.add_argument("--accuracy", type=nonneg_number, default=None,
                        help="with --oracle MODULE:CALLABLE: the accuracy its answers really meet")
        lc.add_argument("--noise-bound", type=nonneg_number, default=None,
                        help="with --oracle MODULE:CALLABLE: its answers are within this τ (a noisy learner runs)")
        lc.add_argument("--oracle", type=oracle_choice, default="exact",
                        help="how the black box answers: 'exact' reals or 'float' float64 with a rounding bound, "
                        "simulated from --model; or MODULE:CALLABLE, a real function imported by name (this RUNS "
                        "that module's code), called as fn(X) with X a numpy float64 array of shape (N, d), the "
                        "tokens as rows, the last one the query, returning a real number; with --d and --accuracy "
                        "or --noise-bound, no --model (docs/model-and-oracles.md)")
        lc.add_argument("--batched", action="store_true",
                        help="with --oracle MODULE:CALLABLE: the function takes a batch, an (n, N, d) float64 array "
                        "of equal-length sequences, and returns n answers")
        lc.add_argument("--torch", default=None, metavar="MODULE:ATTR",
                        help="a torch nn.MultiheadAttention as the black box: ATTR() (this RUNS that module's code) "
                        "returns (module, readout); results are compared with the model its weights give "
                        "(exact.native.native_model); no --model")
        lc.add_argument("--checks", type=int_type(0, 100), default=None,
                        help="verification queries after learning (random sequences of length 3–4, or random points "
                        "for a ReLU network; default: the learner's, 2, or 6 for a ReLU network, which checks 2 more "
                        "itself; 0: none, and the result says what it then assumes)")
        lc.add_argument("--check-seed", type=int_type(0), default=None,
                        help="seed of the verification queries (default: fresh)")
        seen = set(selectors)
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
                add_option(lc, opt, help=text)
        lc.add_argument("--json", action="store_true", help="print the result as JSON")
        lc.add_argument("--certificate", default=None, metavar="FILE", help="write the certificate (with transcript) here")
        lc.add_argument("--quiet", action="store_true", help="no progress bar on stderr")


# -- learn --------------------------------------------------------------------------------


def _choose(args):
    """The learner the options select: a switch (``--threshold``), a selector (``--learner frame``),
    ``--method``, the noisy default for a noisy black box, or the command's first learner."""
    specs = args.specs
    method = getattr(args, "method", None)
    noisy = args.noise is not None or args.noise_bound is not None
    spec = next((s for s in specs.values() if s.switch and getattr(args, s.switch, False)), None)
    if spec is None:
        spec = next((s for s in specs.values() if s.selector and getattr(args, s.selector[0], None) == s.selector[1]),
                    None)
        if spec is not None and method not in (None, spec.method):
            raise InvalidArgument(f"--{spec.selector[0]} {spec.selector[1]}: conflicts with --method {method}")
    elif method not in (None, spec.method) or (args.noise is not None and not spec.takes_noise):
        raise InvalidArgument(f"--{spec.switch}: learner {spec.name!r} takes neither --method nor --noise")
    if spec is None and method is not None:
        spec = specs[method]
    if spec is None and noisy:
        spec = next((s for s in specs.values() if s.noisy_default), None)
    spec = spec or next(iter(specs.values()))
    if args.noise is not None and spec.exact:
        noisy_specs = [s for s in registry.learners() if s.selector is not None]
        here = [s for s in noisy_specs if s.command == spec.command]
        where = here or noisy_specs
        pointer = ""
        selectors = [s.selector for s in where if s.selector is not None]
        if selectors:
            flag = f"--{selectors[0][0]} {'|'.join(v for _, v in selectors)}"
            pointer = (f"; learn a noisy oracle with {flag}" if here else
                       f"; noisy oracles are learned by 'learn {where[0].command} {flag}'")
        raise InvalidArgument(
            f"--noise: learner {spec.name!r} is exact and needs exact answers (or a declared grid), not noise{pointer}")
    return spec


def _callable_oracle(args):
    """``--oracle MODULE:CALLABLE``: import the user's function by name (running its module) and wrap it."""
    from .userload import load_callable

    if args.model is not None:
        raise InvalidArgument("--oracle MODULE:CALLABLE: the black box is that function; --model does not apply")
    if args.noise is not None or args.noise_seed is not None:
        raise InvalidArgument("--noise: a real function brings its own noise; declare it with --noise-bound")
    if args.oracle_d is None:
        raise InvalidArgument("--oracle MODULE:CALLABLE: needs --d, the token dimension")
    if (args.accuracy is None) == (args.noise_bound is None):
        raise InvalidArgument("--oracle MODULE:CALLABLE: needs exactly one of --accuracy and --noise-bound")
    fn = load_callable(args.oracle, option="--oracle")
    accuracy = args.accuracy if args.accuracy is not None else args.noise_bound
    return CallableOracle(fn, d=args.oracle_d, accuracy=accuracy, batched=args.batched)


def _torch_oracle(args, spec):
    """``--torch MODULE:ATTR``: the user's torch module as the black box, and the model its weights give."""
    from .native import torch_black_box

    for flag, value in (("--model", args.model), ("--d", args.oracle_d), ("--accuracy", args.accuracy),
                        ("--noise-bound", args.noise_bound), ("--noise", args.noise), ("--batched", args.batched or None)):
        if value is not None:
            raise InvalidArgument(f"{flag}: does not apply with --torch (the module is the black box, and brings "
                                  "its own rounding bound)")
    if args.oracle != "exact":
        raise InvalidArgument("--oracle: does not apply with --torch")
    oracle, truth = torch_black_box(args.torch)
    try:
        truth = as_kind(truth, spec.model_kind)
    except InvalidArgument:
        raise InvalidArgument(f"--torch: learner {spec.name!r} learns {spec.model_kind} models, and this module "
                              f"is a {truth.kind}") from None
    return truth, oracle


def _simulated_oracle(args, spec):
    """The black box simulated from ``--model``: the model (as the learner's kind) and its oracle."""
    for flag, value in (("--d", args.oracle_d), ("--accuracy", args.accuracy), ("--noise-bound", args.noise_bound),
                        ("--batched", args.batched or None)):
        if value is not None:
            raise InvalidArgument(f"{flag}: applies only with --oracle MODULE:CALLABLE")
    if args.model is None:
        raise InvalidArgument("--model: the model file to simulate is required (or --oracle MODULE:CALLABLE)")
    model = load_model(args.model)
    try:
        model = as_kind(model, spec.model_kind)
    except InvalidArgument:
        raise InvalidArgument(f"{args.model}: learner {spec.name!r} learns {spec.model_kind} models, got a "
                              f"{getattr(model, 'kind', type(model).__name__)}") from None
    oracle: BaseOracle = ExactOracle(model) if args.oracle == "exact" else FloatOracle(model)
    if args.noise is not None:
        noise_model = args.noise
        adversary = spec.load_adversary()
        if isinstance(noise_model, Adversarial) and noise_model.strategy is None and adversary is not None:
            # the simulated black box's adversary knows the model and the learner it faces
            options = {o.name: getattr(args, o.name) for o in spec.options if getattr(args, o.name, None) is not None}
            noise_model = Adversarial(noise_model.tau, adversary(model, tau=noise_model.tau, **options))
        oracle = NoisyOracle(oracle, noise_model, seed=0 if args.noise_seed is None else args.noise_seed)
    elif args.noise_seed is not None:
        raise InvalidArgument("--noise-seed: applies only with --noise")
    return model, oracle


def _kwargs(args, spec, truth) -> tuple[dict, list]:
    """The learner's keywords from the options (and, for omitted ones, from the model file), and notes on them."""
    kwargs, notes = {}, []
    given = {o.name for o in spec.options if getattr(args, o.name, None) is not None}
    for opt in spec.options:
        value = getattr(args, opt.name, None)
        if (value is None and opt.from_model is not None and truth is not None
                and not any(o.instead_of == opt.name and o.name in given for o in spec.options)):
            value = opt.from_model(truth)
            if value is not None:
                notes.append(f"{opt.flag}{'' if opt.kind == 'flag' else f' {value}'}: from {args.model}")
        if value is not None:
            kwargs[opt.name] = value
        elif opt.required:
            raise InvalidArgument(f"{opt.flag}: learner {spec.name!r} needs it ({opt.help})")
    selectors = {s.selector[0] for s in args.specs.values() if s.selector} | {s.switch for s in args.specs.values()}
    for s in args.specs.values():  # options given for another learner are an error, not silently ignored
        for opt in s.options:
            if (s is not spec and opt.name not in given and opt.name not in selectors
                    and getattr(args, opt.name, None) is not None and all(o.name != opt.name for o in spec.options)):
                raise InvalidArgument(f"{opt.flag}: applies to --method {s.method}, not {spec.method}")
    if spec.exact:
        kwargs.update(check_seed=args.check_seed)
        if args.checks is not None:
            kwargs["checks"] = args.checks
        for name in ("mode", "grid", "max_prec"):
            value = getattr(args, name, None)
            if value is not None and _accepts(spec.learn, name) and (name != "max_prec" or args.mode != "float"):
                kwargs[name] = value
    elif args.mode is not None or getattr(args, "grid", None) is not None:
        raise InvalidArgument(f"--mode/--grid: learner {spec.name!r} is approximate and takes neither")
    if args.certificate and not spec.exact:
        raise InvalidArgument(f"--certificate: learner {spec.name!r} gives approximate results, which carry no certificate")
    float_mode = args.mode == "float" or (args.mode is None and args.oracle == "float" and not getattr(args, "grid", None))
    if args.certificate and float_mode:
        raise InvalidArgument("--certificate: float mode gives approximate results, which carry no certificate; "
                              "use an exact mode (with --grid G for a float oracle)")
    return kwargs, notes


def _cmd_learn(args) -> int:
    spec = _choose(args)
    with terminal_reporter(quiet=args.quiet, label=f"learn {spec.name}"):  # one line for the whole run
        if args.torch is not None:
            truth, oracle = _torch_oracle(args, spec)
        elif ":" in args.oracle:
            truth, oracle = None, _callable_oracle(args)
        else:
            truth, oracle = _simulated_oracle(args, spec)
        kwargs, notes = _kwargs(args, spec, truth)
        _announce(spec, oracle.d, kwargs, quiet=args.quiet)
        result = spec.learn(oracle, **kwargs)
        report = result.report
        if result.certificate is not None and report is None:
            report = result.certificate.check()
        if args.certificate:
            if result.certificate is None:
                raise InvalidArgument("--certificate: approximate results (float mode) carry no certificate; "
                                      "use an exact mode (with --grid G for a float oracle)")
            dump_json(certificate_to_json(result.certificate), args.certificate)
        comparison = result.details.compare(result, truth) if truth is not None else None
    ok = report is None or report.holds
    if comparison is not None:
        ok = ok and (comparison.same or not result.exact) and comparison.within
    if args.json:
        out = result_to_json(result)
        if comparison is not None:
            out.update(comparison.to_json())
        if report is not None:
            out["certificate"] = {"kind": report.kind, "holds": report.holds, "covers": _covers(report.scope),
                                  "message": report.message}
        if args.certificate:
            out["certificate_file"] = args.certificate
        print(json.dumps(out, indent=1))
    else:
        source = args.torch or (args.model if truth is not None else args.oracle)
        print(f"learner     {result.learner}, {result.queries + result.verification_queries} queries of {source}"
              + "".join(f"; {n}" for n in notes))
        for line in result.describe(report=report, comparison=comparison):
            print(line)
        if args.certificate:
            print(f"wrote       {args.certificate}")
    return 0 if ok else EXIT_FAIL


def _accepts(fn, name: str) -> bool:
    """Whether the learner function takes the keyword ``name`` (the command line offers what it takes)."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


#: Measured costs per query of a certified exact learn (oracle, identification, replay and
#: transcript together; see benchmarks/single_head.py), used to announce long runs and to
#: refuse runs that would not fit in memory.
SECONDS_PER_QUERY = {"certified": 3e-5, "symbolic": 3e-3, "float": 2e-5}
BYTES_PER_QUERY = 2000
MAX_LEARN_BYTES = 8e9


def _announce(spec, d: int, kwargs: dict, *, quiet: bool) -> None:
    """Refuse a learn that would not fit in memory; announce one that takes more than ten seconds."""
    options = {o.name for o in spec.options}
    try:
        n = int(spec.query_count(d, **{k: v for k, v in kwargs.items() if k in options}))
    except (TypeError, ValueError, ExactAttentionError):
        return
    mode = kwargs.get("mode") or "certified"
    secs, nbytes = n * SECONDS_PER_QUERY.get(mode, 3e-5), n * BYTES_PER_QUERY
    if nbytes > MAX_LEARN_BYTES:
        raise InvalidArgument(
            f"{spec.name}: d = {d} needs {n:.3g} queries, about {size(nbytes)} of transcript and {duration(secs)}; "
            f"the limit is {size(MAX_LEARN_BYTES)} (use the Python API to run it anyway)"
        )
    if secs > 10 and not quiet:
        print(f"exact-attention: {spec.name}, d = {d}: {n} queries, about {duration(secs)} and {size(nbytes)}",
              file=sys.stderr)


# -- counterexample, certify, verify -------------------------------------------------------


def _cmd_counterexample(args) -> int:
    from .counterexample import as_multi_head, counterexample, random_model

    if args.model is not None:
        if args.d is not None or args.heads is not None:
            raise InvalidArgument("--model: the model file fixes d and H; do not pass --d or --heads with it")
        a = as_multi_head(load_model(args.model), where=args.model)
    elif args.d is None or args.heads is None:
        raise InvalidArgument("counterexample: give --d and --heads for a random model, or --model FILE")
    else:
        a = random_model(args.d, args.heads, seed=args.seed)
    with elapsed("proving", quiet=args.quiet):
        result = counterexample(a, kind=args.kind, seed=args.seed, inputs=args.inputs)
    if args.json:
        print(json.dumps(result.to_json(), indent=1))
    else:
        print("\n".join(result.rows()))
    return 0 if result.holds else EXIT_FAIL


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
    (re.compile(r"Fraction\((-?\d+), 1\)"), r"\1"),
    (re.compile(r"Fraction\((-?\d+), (\d+)\)"), r"\1/\2"),
)


def _as_flags(text: str) -> str:
    """A library message with its Python keyword hints rewritten as command-line flags (and
    ``Fraction(p, q)`` as ``p/q``).

    >>> _as_flags("not certified at 64 bits and max_prec=128; raise max_prec or use mode='symbolic'")
    'not certified at 64 bits and --max-prec 128; raise --max-prec or use --mode symbolic'
    >>> _as_flags("m: expected a non-negative number, got Fraction(-1, 1)")
    'm: expected a non-negative number, got -1'
    """
    for pattern, repl in _FLAGS:
        text = pattern.sub(repl, text)
    return text


def _one_line(e: BaseException, limit: int = 300) -> str:
    text = _as_flags(" ".join(str(e).split()))
    prefix_room = 40  # "exact-attention: error: " and the like
    room = limit - prefix_room
    return text if len(text) <= room else text[: room - 1] + "…"


def _covers(scope: str) -> str:
    """A report's scope ``" (…)"`` without its outer parentheses (inner ones kept)."""
    scope = scope.strip()
    return scope[1:-1] if scope.startswith("(") and scope.endswith(")") else scope


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
