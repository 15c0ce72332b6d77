"""The ``exact-attention`` command line.

Subcommands::

    exact-attention random single-head --d D --seed S [--grid G]     print a model JSON
    exact-attention random low-rank --d D --rank R --seed S
    exact-attention learn single-head --model FILE [--mode M] [--json]
    exact-attention learn low-rank --model FILE [--rank R] [--method sketch|cs] [--json]
    exact-attention counterexample --d D --heads H --seed S [--kind K]  Prop. 7.1, proved
    exact-attention certify FILE                                       re-check a certificate
    exact-attention verify [--quick] [--json]                          check the theorems' claims

Every error is reported as one line on stderr with a non-zero exit status; no
traceback reaches the user for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from fractions import Fraction

import numpy as np

from .errors import ExactAttentionError, NotIdentifiable
from .grids import parse_grid
from .io import certificate_to_json, dump_json, load_certificate, load_model, result_to_json
from .learn import learn_low_rank, learn_low_rank_cs, learn_single_head, low_rank_query_count
from .learn.low_rank_cs import DEFAULT_C
from .models import SingleHead
from .numbers import format_rational, to_fraction
from .oracles import ExactOracle, FloatOracle
from .verify import THEOREMS

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
    rl = rsub.add_parser("low-rank", help="a random single head with rank(W) <= RANK")
    rl.add_argument("--d", type=int, required=True, help="token dimension")
    rl.add_argument("--rank", type=int, required=True, help="rank bound r (W = A B, A d×r, B r×d)")
    rl.add_argument("--seed", type=int, default=0)
    rl.add_argument("--grid", default="rational:7", help="grid of the factors' entries")
    rl.add_argument("--bound", default="2", help="magnitude of the factors' entries")
    rl.add_argument("--v-zeros", type=int, default=0, help="how many entries of v are zero")
    rl.add_argument("--output", "-o", default=None, help="write to this file instead of stdout")

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
    ll = lsub.add_parser("low-rank", help="rank(W) <= r: exact sketch (2rd − r² + d queries) or compressed sensing")
    ll.add_argument("--model", required=True, help="model JSON file ('-' for stdin)")
    ll.add_argument("--rank", type=int, default=None, help="rank bound r (sketch: omit to find it)")
    ll.add_argument("--method", choices=("sketch", "cs"), default="sketch")
    ll.add_argument("--mode", choices=("certified", "symbolic"), default=None, help="sketch method only")
    ll.add_argument("--C", type=float, default=DEFAULT_C, help="cs: m = ceil(C·2rd) projections")
    ll.add_argument("--m", type=int, default=None, help="cs: number of projections (overrides --C)")
    ll.add_argument("--seed", type=int, default=None,
                    help="seed of the sketches / Gaussian probes (default: a fresh sketch seed, reported; 0 for cs)")
    ll.add_argument("--json", action="store_true", help="print the result as JSON")
    ll.add_argument("--certificate", default=None, metavar="FILE", help="write the certificate (sketch method)")

    ce = sub.add_parser("counterexample", help="Prop. 7.1: a different multi-head parameterisation with the same map, proved")
    ce.add_argument("--d", type=int, default=None, help="token dimension of the random model")
    ce.add_argument("--heads", type=int, default=None, help="number of heads H of the random model")
    ce.add_argument("--seed", type=int, default=0)
    ce.add_argument("--kind", choices=("split", "zero", "permute", "mixed"), default="mixed")
    ce.add_argument("--model", default=None, help="start from this multi-head model file instead of a random one")
    ce.add_argument("--inputs", type=int, default=3, help="random inputs to evaluate both maps on exactly")
    ce.add_argument("--json", action="store_true")

    c = sub.add_parser("certify", help="re-check a certificate file by replaying its transcript")
    c.add_argument("file")
    c.add_argument("--json", action="store_true")

    v = sub.add_parser("verify", help="check the theorems' claims on a built-in sweep")
    v.add_argument("--quick", action="store_true", help="a smaller sweep: symbolic mode only up to d = 8, no 1e6 entries")
    v.add_argument("--max-d", type=int, default=16, help="largest d of the random sweep (default 16)")
    v.add_argument("--theorem", action="append", choices=THEOREMS, help="only these theorems (repeatable; default all)")
    v.add_argument("--json", action="store_true", help="print JSON rows instead of a table")
    v.add_argument("--no-progress", action="store_true", help="no progress line on stderr")
    return p


def _cmd_random(args) -> int:
    parse_grid(args.grid)
    model = SingleHead.random(
        args.d, seed=args.seed, grid=args.grid, bound=to_fraction(args.bound, name="--bound"),
        v_zeros=args.v_zeros, rank=args.rank,
    )  # "low-rank" is a single head drawn with rank(W) <= --rank
    text = dump_json(model.to_json(), args.output)
    if args.output is None:
        print(text)
    return 0


def _cmd_learn(args) -> int:
    model = load_model(args.model)
    if not isinstance(model, SingleHead):
        raise ExactAttentionError(f"{args.model}: expected a single-head model, got a {type(model).__name__}")
    if args.model_kind == "single-head":
        oracle = ExactOracle(model) if args.oracle == "exact" else FloatOracle(model)
        w_bound = to_fraction(args.w_bound, name="--w-bound")
        result = learn_single_head(oracle, mode=args.mode, grid=args.grid, w_bound=w_bound)
        claim = f"d²+d = {model.d ** 2 + model.d}"
    elif args.method == "cs":
        if args.rank is None:
            raise ExactAttentionError("--rank: the compressed-sensing learner needs the rank bound r")
        oracle = ExactOracle(model)
        result = learn_low_rank_cs(oracle, rank=args.rank, m=args.m, C=args.C, seed=args.seed or 0)
        claim = f"d + m = {model.d} + {result.details['m']}"
    else:
        oracle = ExactOracle(model)
        result = learn_low_rank(oracle, rank=args.rank, mode=args.mode, seed=args.seed)
        r = result.details["rank"]
        if args.rank is None:
            claim = f"2rd − r² + 2d − r = {low_rank_query_count(model.d, r, rank_known=False)} with the found r = {r}"
        elif r == args.rank:
            claim = f"2rd − r² + d = {low_rank_query_count(model.d, r)}"
        else:  # the true rank is below the given bound: fewer row queries were needed
            claim = f"d + d·r + r'(d − r) = {model.d + model.d * args.rank + r * (model.d - args.rank)} with r = {args.rank}, found r' = {r}"
    if args.certificate:
        if result.certificate is None:
            raise ExactAttentionError(
                "--certificate: approximate results (float mode, compressed sensing) carry no certificate; "
                "use an exact mode (with --grid G for a float oracle)"
            )
        dump_json(certificate_to_json(result.certificate), args.certificate)
    if args.json:
        print(json.dumps(result_to_json(result), indent=1))
        return 0
    return _print_result(result, model, claim)


def _print_result(result, model, claim: str) -> int:
    same = result.model == model
    print(f"mode        {result.mode}" + (f" (grid {result.grid})" if result.grid else ""))
    print(f"queries     {result.queries} ({claim}), longest sequence {result.max_length}")
    if "rank" in result.details:
        known = "within the given bound" if result.details["rank_known"] else "found by exact rank tests"
        print(f"rank        {result.details['rank']} ({known}; sketch seed {result.details['seed']})")
    if result.exact:
        print(f"exact       {'yes: equal to the model' if same else 'NO: differs from the model'}")
        print(f"certificate {result.certificate.check().message}")
        print(f"precision   {result.precision} bits" if result.mode == "certified" else "precision   exact symbolic")
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
    return 0 if (same or not result.exact) else EXIT_FAIL


def _cmd_counterexample(args) -> int:
    import random

    from proofs.multihead import construct, prove_equivalent

    from .multihead import MultiHead

    if args.model is not None:
        if args.d is not None or args.heads is not None:
            raise ExactAttentionError("--model: the model file fixes d and H; do not pass --d or --heads with it")
        a = load_model(args.model)
        if not isinstance(a, MultiHead):
            raise ExactAttentionError(f"{args.model}: expected a multi-head model, got a {type(a).__name__}")
    elif args.d is None or args.heads is None:
        raise ExactAttentionError("counterexample: give --d and --heads for a random model, or --model FILE")
    else:
        a = MultiHead.random(args.d, args.heads, seed=args.seed)
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
        print("\nExact evaluation on random inputs:")
        for e in evaluations:
            verdict = "equal (decided exactly)" if e["equal"] else "DIFFERENT"
            print(f"  N={len(e['X'])}: f_A = {e['f_A']}…  f_B = {e['f_B']}…  {verdict}")
    return 0 if proof.verified and all(e["equal"] for e in evaluations) else EXIT_FAIL


def _cmd_certify(args) -> int:
    cert = load_certificate(args.file)
    report = cert.check()
    if args.json:
        print(json.dumps({"holds": report.holds, "kind": report.kind, "checked": report.checked,
                          "failed": report.failed, "failures": list(report.failures), "reason": report.reason,
                          "message": report.message}))
    else:
        print(report.message)
    return 0 if report.holds else EXIT_FAIL


def _cmd_verify(args) -> int:
    from .verify import claims, format_table, run_claims

    chosen = claims(args.theorem or THEOREMS, max_d=args.max_d, quick=args.quick)
    reports = run_claims(chosen, progress=False if args.no_progress else None)
    if args.json:
        for r in reports:
            print(json.dumps(r.to_json()))
    else:
        print(format_table(reports))
        held = sum(r.holds for r in reports)
        skipped = sum(bool(r.skipped) for r in reports)
        print(f"\n{held}/{len(reports) - skipped} claims hold" + (f" ({skipped} skipped)" if skipped else ""))
    return 0 if all(r.holds or r.skipped for r in reports) else EXIT_FAIL


_COMMANDS = {
    "random": _cmd_random,
    "learn": _cmd_learn,
    "counterexample": _cmd_counterexample,
    "certify": _cmd_certify,
    "verify": _cmd_verify,
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
        print(f"exact-attention: not identifiable: {e}", file=sys.stderr)
        return EXIT_ERROR
    except (ExactAttentionError, ValueError, OSError, ImportError, OverflowError) as e:
        print(f"exact-attention: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("exact-attention: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
