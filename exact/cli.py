"""The ``exact-attention`` command line.

Subcommands::

    exact-attention random single-head --d D --seed S [--grid G]     print a model JSON
    exact-attention learn single-head --model FILE [--mode M] [--json]
    exact-attention certify FILE                                       re-check a certificate
    exact-attention verify [--quick] [--json]                          check the theorems' claims

Every error is reported as one line on stderr with a non-zero exit status; no
traceback reaches the user for bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import ExactAttentionError, NotIdentifiable
from .grids import parse_grid
from .io import certificate_to_json, dump_json, load_certificate, load_model, result_to_json
from .learn import learn_single_head
from .models import SingleHead
from .numbers import format_rational, to_fraction
from .oracles import ExactOracle, FloatOracle

__all__ = ["main", "build_parser"]

EXIT_FAIL = 1  # a claim or certificate does not hold
EXIT_ERROR = 2  # bad input, or the problem has no answer (not identifiable, ...)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="exact-attention",
        description="Learn attention parameters from black-box queries, and prove the result exact.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    r = sub.add_parser("random", help="print a random model as JSON")
    rsub = r.add_subparsers(dest="model", required=True, metavar="MODEL")
    rs = rsub.add_parser("single-head", help="a random single softmax head")
    rs.add_argument("--d", type=int, required=True, help="token dimension")
    rs.add_argument("--seed", type=int, default=0)
    rs.add_argument("--grid", default="rational:7", help="rational:Q | float32 | bfloat16 | float16 | dyadic:k")
    rs.add_argument("--bound", default="2", help="magnitude of the entries (exact number, e.g. 1e6)")
    rs.add_argument("--v-zeros", type=int, default=0, help="how many entries of v are zero")
    rs.add_argument("--rank", type=int, default=None, help="make rank(W) <= RANK")
    rs.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")

    lp = sub.add_parser("learn", help="learn a model from an oracle built on a model file")
    lsub = lp.add_subparsers(dest="model_kind", required=True, metavar="MODEL")
    ls = lsub.add_parser("single-head", help="Theorem 4.1: d²+d queries")
    ls.add_argument("--model", required=True, help="model JSON file ('-' for stdin)")
    ls.add_argument("--mode", choices=("certified", "symbolic", "float"), default=None)
    ls.add_argument("--grid", default=None, help="certified mode: identify on this grid")
    ls.add_argument("--oracle", choices=("exact", "float"), default="exact", help="exact answers or float64 answers")
    ls.add_argument("--w-bound", default="1024", help="float mode: assumed bound on |W_ij|")
    ls.add_argument("--json", action="store_true", help="print the result as JSON")
    ls.add_argument("--certificate", default=None, metavar="FILE", help="write the certificate (with transcript) here")

    c = sub.add_parser("certify", help="re-check a certificate file by replaying its transcript")
    c.add_argument("file")
    c.add_argument("--json", action="store_true")

    v = sub.add_parser("verify", help="check the theorems' claims on a built-in sweep")
    v.add_argument("--quick", action="store_true", help="a smaller sweep: symbolic mode only up to d = 8, no 1e6 entries")
    v.add_argument("--max-d", type=int, default=16, help="largest d of the random sweep (default 16)")
    v.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    v.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    return p


def _cmd_random(args) -> int:
    parse_grid(args.grid)
    model = SingleHead.random(
        args.d, seed=args.seed, grid=args.grid, bound=to_fraction(args.bound, name="--bound"),
        v_zeros=args.v_zeros, rank=args.rank,
    )
    text = dump_json(model.to_json(), args.output)
    if args.output is None:
        print(text)
    return 0


def _cmd_learn(args) -> int:
    model = load_model(args.model)
    if not isinstance(model, SingleHead):
        raise ExactAttentionError(f"--model: expected a single-head model, got {type(model).__name__}")
    oracle = ExactOracle(model) if args.oracle == "exact" else FloatOracle(model)
    result = learn_single_head(oracle, mode=args.mode, grid=args.grid, w_bound=to_fraction(args.w_bound, name="--w-bound"))
    if args.certificate:
        if result.certificate is None:
            raise ExactAttentionError(
                "--certificate: float-mode results are approximate and carry no certificate; "
                "use --mode certified (with --grid G for a float oracle)"
            )
        dump_json(certificate_to_json(result.certificate), args.certificate)
    if args.json:
        print(json.dumps(result_to_json(result), indent=1))
        return 0
    same = result.model == model
    print(f"mode        {result.mode}" + (f" (grid {result.grid})" if result.grid else ""))
    print(f"queries     {result.queries} (d²+d = {model.d ** 2 + model.d}), longest sequence {result.max_length}")
    if result.exact:
        print(f"exact       {'yes: equal to the model' if same else 'NO: differs from the model'}")
        print(f"certificate {result.certificate.check().message}")
        print(f"precision   {result.precision} bits" if result.mode == "certified" else "precision   exact symbolic")
    else:
        print(f"error       estimated <= {result.error_estimate:.3g}")
    print(f"seconds     {result.seconds['total']:.3f}")
    print("W =")
    for row in result.model.W:
        print("  [" + ", ".join(format_rational(x) if result.exact else f"{float(x):.17g}" for x in row) + "]")
    print("v = [" + ", ".join(format_rational(x) if result.exact else f"{float(x):.17g}" for x in result.model.v) + "]")
    return 0 if (same or not result.exact) else EXIT_FAIL


def _cmd_certify(args) -> int:
    cert = load_certificate(args.file)
    report = cert.check()
    if args.json:
        print(json.dumps({"holds": report.holds, "kind": report.kind, "checked": report.checked,
                          "failed": report.failed, "failures": list(report.failures)}))
    else:
        print(report.message)
    return 0 if report.holds else EXIT_FAIL


def _cmd_verify(args) -> int:
    from .verify import format_table, run_claims, single_head_claims

    reports = run_claims(single_head_claims(max_d=args.max_d, quick=args.quick), progress=False if args.no_progress else None)
    if args.json:
        for r in reports:
            print(json.dumps(r.to_json()))
    else:
        print(format_table(reports))
        held = sum(r.holds for r in reports)
        print(f"\n{held}/{len(reports)} claims hold")
    return 0 if all(r.holds for r in reports) else EXIT_FAIL


_COMMANDS = {"random": _cmd_random, "learn": _cmd_learn, "certify": _cmd_certify, "verify": _cmd_verify}


def main(argv=None) -> int:
    """Run the command line; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except NotIdentifiable as e:
        print(f"exact-attention: not identifiable: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (ExactAttentionError, ValueError, OSError) as e:
        print(f"exact-attention: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("exact-attention: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
