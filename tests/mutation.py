"""Mutation testing for the exactness-deciding modules: do the tests notice a one-node change?

Run from the repository root (standard library + pytest only; **not part of CI**, and
ignored by pytest's collection through ``conftest.py``)::

    python tests/mutation.py exact/numbers.py [more modules] [--tests tests/test_numbers.py ...]
        [--jobs 2] [--timeout 120] [--limit N] [--seed S] [--json out.jsonl] [--list]
        [--only ID-TEXT ...]    # e.g. --only :309: negate-if  (re-check survivors after a fix)

Each module is parsed with :mod:`ast`; a *mutant* changes exactly one node:

* arithmetic ``+``↔``-``, ``*``↔``/``, ``//``↔``/``, ``<<``↔``>>`` (also in ``x += ...``);
* comparisons ``<``↔``<=``, ``>``↔``>=``, ``==``↔``!=``, ``in``↔``not in``, ``is``↔``is not``;
* ``and``↔``or``; ``not (...)`` around the condition of ``if``/``while``/ternary/``assert``
  and around a returned comparison or boolean expression; dropping a unary ``not`` or ``-``;
* constants ``0``↔``1``, integer ``n``→``n+1``, ``True``↔``False``;
* ``return expr``→``return None`` (``return None`` itself is kept), ``raise ...``→``pass``,
  ``break``↔``continue``.

Its id is ``module:line:col:kind`` (col is ast's 0-based offset; ``#n`` disambiguates).

**Isolation.** The repository (``exact/``, ``proofs/``, ``tests/``, ``conftest.py``,
``pyproject.toml``, and ``README.md``/``benchmarks/`` when present) is copied once into a
private temporary directory, and that snapshot once more per worker.  A mutant is written
into a worker's copy only; pytest runs with ``cwd`` and ``PYTHONPATH`` set to the copy, so
the copy's ``exact`` shadows the editable install (checked per worker, and by a sanity
mutant per module that must be killed), and with ``PYTHONDONTWRITEBYTECODE`` so no stale
``.pyc`` can hide a mutant.  The working tree is only ever read.  Hypothesis runs
without its shrink phase and example database, derandomized (a plugin written into the
copies): a failing example kills the mutant either way, shrinking it cost up to 30 s, and
every mutant meets the same examples.

A mutant is *killed* when the selected tests (plus the module's own doctests) fail, error,
or fail to import; a *timeout* also counts as killed in the score; it *survived* when they
pass.  Survivors are printed with the mutated line, for a human to judge: a surviving
mutant is either a gap in the tests or an equivalent mutant (no behaviour can change).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["exact", "proofs", "tests", "conftest.py", "pyproject.toml", "README.md", "benchmarks"]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")

_LEARNERS = ["tests/test_theorem_4_1_single_head.py", "tests/test_theorem_5_1_low_rank.py"]
_CERT = ["tests/test_certificates.py", "tests/test_oracles.py", *_LEARNERS, "tests/test_no_false_exact.py"]
#: Default test selection per module (the module's own doctests are always added).  Listed
#: files that no longer exist are skipped; a module with none left gets every test file that
#: names it (``exact.x.y``) or is named after it or its subpackage, else all of ``tests/``.  ``--tests`` overrides.
DEFAULT_TESTS = {
    "exact/numbers.py": ["tests/test_numbers.py"],
    "exact/grids.py": ["tests/test_grids.py"],
    "exact/expfield.py": ["tests/test_expfield.py"],
    "exact/certify.py": _CERT,
    "exact/identify.py": [*_CERT, "tests/test_identify.py"],
    "exact/arith/certified.py": [*_CERT, "tests/test_identify.py"],
    "exact/arith/symbolic.py": [*_LEARNERS, "tests/test_oracles.py"],
    "exact/arith/floating.py": _LEARNERS,
    "exact/learn/single_head.py": ["tests/test_theorem_4_1_single_head.py", "tests/test_no_false_exact.py",
                                   "tests/test_identify.py"],
    "exact/learn/low_rank.py": ["tests/test_theorem_5_1_low_rank.py", "tests/test_no_false_exact.py"],
    "exact/learn/low_rank_cs.py": ["tests/test_theorem_5_1_low_rank.py"],
    "exact/learn/driver.py": [*_LEARNERS, "tests/test_certificates.py", "tests/test_driver.py",
                              "tests/test_adversarial_inputs.py", "tests/test_no_false_exact.py"],
    "exact/learn/_common.py": _LEARNERS,
    "exact/learn/result.py": [*_LEARNERS, "tests/test_certificates.py"],
    "exact/oracles.py": ["tests/test_oracles.py", "tests/test_reference_vectors.py"],
    "exact/models.py": ["tests/test_sequences_models.py", "tests/test_reference_vectors.py"],
    "exact/sequences.py": ["tests/test_sequences_models.py"],
    "exact/canonical.py": ["tests/test_canonical.py"],
    "exact/multihead.py": ["tests/test_proposition_7_1_multihead.py", "tests/test_proofs_multihead.py"],
    "exact/io.py": ["tests/test_input_files.py", "tests/test_certificates.py"],
    "exact/cli.py": ["tests/test_cli.py", "tests/test_cli_options.py"],
    "proofs/multihead.py": ["tests/test_proofs_multihead.py"],
}

_BINOP = {ast.Add: [ast.Sub], ast.Sub: [ast.Add], ast.Mult: [ast.Div], ast.Div: [ast.Mult, ast.FloorDiv],
          ast.FloorDiv: [ast.Div], ast.LShift: [ast.RShift], ast.RShift: [ast.LShift]}
_CMPOP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
          ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
_BOOLOP = {ast.And: ast.Or, ast.Or: ast.And}
_NEGATED = {ast.If: "if", ast.While: "while", ast.IfExp: "ifexp", ast.Assert: "assert"}
_PLUGIN = "_mutation_hypothesis"  # loaded with -p in the copies: no shrinking, no database
_PLUGIN_SOURCE = """try:
    from hypothesis import Phase, settings
except ImportError:
    pass
else:
    settings.register_profile("mutation", phases=[Phase.explicit, Phase.generate], database=None, derandomize=True)
    settings.load_profile("mutation")
"""
_ACTIVE: set[subprocess.Popen] = set()  # pytest processes running now, each its own process group
_STOP = threading.Event()
_SKIPPED_FIELDS = {"annotation", "returns", "type_comment"}  # annotations are never evaluated here


@dataclass
class Mutant:
    id: str
    module: str
    line: int
    col: int
    kind: str
    before: str  # the original source line
    after: str  # the mutated source line(s)
    source: str = ""  # the whole mutated module


def _new(node, **changes):
    """A shallow copy of ``node`` with some fields replaced."""
    fields = {f: getattr(node, f) for f in node._fields if hasattr(node, f)}
    return ast.copy_location(type(node)(**{**fields, **changes}), node)


def _mutations(parent, field, node):
    """Yield ``(kind, replacement)`` for every mutation of ``node``, the child ``parent.field``."""
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        for op in _BINOP.get(type(node.op), []):
            yield f"{type(node.op).__name__}->{op.__name__}", _new(node, op=op())
    elif isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _CMPOP:
                swapped = _CMPOP[type(op)]
                ops = node.ops[:i] + [swapped()] + node.ops[i + 1:]
                at = f"@{i}" if len(node.ops) > 1 else ""
                yield f"{type(op).__name__}->{swapped.__name__}{at}", _new(node, ops=ops)
    elif isinstance(node, ast.BoolOp):
        swapped = _BOOLOP[type(node.op)]
        yield f"{type(node.op).__name__}->{swapped.__name__}", _new(node, op=swapped())
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        yield ("drop-not" if isinstance(node.op, ast.Not) else "drop-neg"), node.operand
    elif isinstance(node, ast.Constant) and type(node.value) in (bool, int):
        v = node.value
        new = (not v) if isinstance(v, bool) else {0: 1, 1: 0}.get(v, v + 1)
        yield f"const:{v!r}->{new!r}", ast.copy_location(ast.Constant(new), node)
    elif isinstance(node, ast.Raise):
        yield "raise->pass", ast.copy_location(ast.Pass(), node)
    elif isinstance(node, (ast.Break, ast.Continue)):
        other = ast.Continue if isinstance(node, ast.Break) else ast.Break
        yield f"{type(node).__name__.lower()}->{other.__name__.lower()}", ast.copy_location(other(), node)
    # mutations of a whole condition or returned value, spliced over that expression only
    negated = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)  # drop-not covers it
    if field == "test" and type(parent) in _NEGATED and not negated:
        yield f"negate-{_NEGATED[type(parent)]}", ast.copy_location(ast.UnaryOp(ast.Not(), node), node)
    if field == "value" and isinstance(parent, ast.Return):
        if not (isinstance(node, ast.Constant) and node.value is None):
            yield "return->None", ast.copy_location(ast.Constant(None), node)
        if isinstance(node, (ast.Compare, ast.BoolOp)):
            yield "negate-return", ast.copy_location(ast.UnaryOp(ast.Not(), node), node)


def _children(node):
    """``(field, index, child)`` for each AST child, outside annotations."""
    for field, value in ast.iter_fields(node):
        if field in _SKIPPED_FIELDS:
            continue
        if isinstance(value, ast.AST):
            yield field, None, value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, ast.AST):
                    yield field, i, item


def _set(parent, field, index, child):
    if index is None:
        setattr(parent, field, child)
    else:
        getattr(parent, field)[index] = child


def _splice(source: bytes, node, replacement) -> str:
    """Replace ``node``'s source span (ast offsets are UTF-8 bytes) by ``replacement`` unparsed."""
    lines = source.splitlines(keepends=True)
    start = sum(len(x) for x in lines[: node.lineno - 1]) + node.col_offset
    end = sum(len(x) for x in lines[: node.end_lineno - 1]) + node.end_col_offset
    text = ast.unparse(replacement)
    if isinstance(replacement, ast.expr) and not isinstance(replacement, (ast.Name, ast.Constant)):
        text = f"({text})"  # the replacement keeps its meaning whatever surrounds it
    return (source[:start] + text.encode() + source[end:]).decode()


def enumerate_mutants(module: str, source: str) -> list[Mutant]:
    """Every mutant of ``module`` (a path relative to the repository root), in source order."""
    tree, raw, found = ast.parse(source), source.encode(), []
    original_lines = source.splitlines()

    def visit(node):
        for field, index, child in list(_children(node)):
            for kind, replacement in _mutations(node, field, child):
                _set(node, field, index, replacement)
                expected = ast.dump(tree)
                _set(node, field, index, child)
                text = _splice(raw, child, replacement)
                try:
                    spliced = ast.dump(ast.parse(text)) == expected
                except SyntaxError:
                    spliced = False
                if spliced:
                    last = child.end_lineno + len(text.splitlines()) - len(original_lines)
                    after = " | ".join(x.strip() for x in text.splitlines()[child.lineno - 1 : last])
                else:  # the span was not what ast said (f-strings, ...): unparse the whole module
                    _set(node, field, index, replacement)
                    text = ast.unparse(tree)
                    _set(node, field, index, child)
                    after = ast.unparse(replacement).splitlines()[0] + "   (module re-unparsed)"
                found.append(Mutant("", module, child.lineno, child.col_offset, kind,
                                    original_lines[child.lineno - 1].strip(), after, text))
            visit(child)

    visit(tree)
    found.sort(key=lambda m: (m.line, m.col))
    seen: dict[str, int] = {}
    for m in found:
        base = f"{m.module}:{m.line}:{m.col}:{m.kind}"
        seen[base] = seen.get(base, 0) + 1
        m.id = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return found


def select_tests(module: str, given: list[str] | None) -> list[str]:
    tests = given or [t for t in DEFAULT_TESTS.get(module, []) if (ROOT / t).exists()]
    if not tests:  # files that name the module, or are named after it or its subpackage
        dotted = module.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        words = {w for w in dotted.split(".")[1:] if w not in ("core", "__init__")}
        tests = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("test_*.py")
                       if dotted in p.read_text(encoding="utf-8") or any(w in p.stem for w in words)) or ["tests"]
    return [*tests, module]  # the module itself: its doctests count (--doctest-modules)


def run_pytest(copy: Path, tests: list[str], timeout: float) -> tuple[str, float, int | None, str]:
    """Run the selection in ``copy``; return ``(status, seconds, returncode, first failure)``."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(copy)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", _PLUGIN, *tests]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    _ACTIVE.add(proc)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return "timeout", time.monotonic() - start, None, ""
    except BaseException:  # Ctrl-C: leave no pytest behind
        _kill(proc)
        raise
    finally:
        _ACTIVE.discard(proc)
    seconds = time.monotonic() - start
    failure = next((line for line in out.splitlines() if line.startswith(("FAILED ", "ERROR "))), "")
    if proc.returncode == 0:
        return "survived", seconds, 0, ""
    last = out.strip().splitlines()[-1] if out.strip() else ""
    return "killed", seconds, proc.returncode, failure or last


def _kill(proc: subprocess.Popen) -> None:
    """Kill the process group of one pytest run started by :func:`run_pytest`, and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def make_copy(src: Path, dest: Path) -> Path:
    dest.mkdir(parents=True)
    for name in COPIED:
        if (src / name).is_dir():
            shutil.copytree(src / name, dest / name, ignore=IGNORED)
        elif (src / name).exists():
            shutil.copy2(src / name, dest / name)
    (dest / f"{_PLUGIN}.py").write_text(_PLUGIN_SOURCE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(dest), PYTHONDONTWRITEBYTECODE="1")
    where = subprocess.run([sys.executable, "-c", "import exact, proofs; print(exact.__file__); print(proofs.__file__)"],
                           cwd=dest, env=env, capture_output=True, text=True, check=True).stdout.split()
    if not all(Path(w).resolve().is_relative_to(dest.resolve()) for w in where):
        sys.exit(f"mutation: the copy does not shadow the installed package (imported {where})")
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("modules", nargs="+", help="module paths relative to the repository root, e.g. exact/numbers.py")
    ap.add_argument("--tests", nargs="+", help="test paths to run instead of the default selection")
    ap.add_argument("--jobs", type=int, default=2, help="parallel pytest processes (default 2)")
    ap.add_argument("--timeout", type=float, help="seconds per mutant (default: 4x the clean run, at least 30)")
    ap.add_argument("--limit", type=int, help="test only N mutants per module, sampled with --seed")
    ap.add_argument("--seed", type=int, default=0, help="seed of the --limit sample (default 0)")
    ap.add_argument("--json", type=Path, help="write one JSON row per mutant to this file")
    ap.add_argument("--list", action="store_true", help="print the mutants without running them")
    ap.add_argument("--only", nargs="+", metavar="TEXT", help="only mutants whose id contains one of these")
    args = ap.parse_args(argv)
    modules = []
    for m in args.modules:
        path = (Path.cwd() / m).resolve()
        if not path.is_file() or not path.is_relative_to(ROOT) or path.suffix != ".py":
            ap.error(f"{m}: not a Python module inside {ROOT}")
        modules.append(path.relative_to(ROOT).as_posix())

    def plan_for(root: Path) -> list[tuple[Mutant, list[str]]]:
        plan = []
        for module in modules:
            mutants = enumerate_mutants(module, (root / module).read_text(encoding="utf-8"))
            if args.only:
                mutants = [m for m in mutants if any(t in m.id for t in args.only)]
            if args.limit is not None and args.limit < len(mutants):
                chosen = set(random.Random(args.seed).sample(range(len(mutants)), args.limit))
                mutants = [m for i, m in enumerate(mutants) if i in chosen]
            plan += [(m, select_tests(module, args.tests)) for m in mutants]
        return plan

    if args.list:
        for m, _ in plan_for(ROOT):
            print(f"{m.id}\n    - {m.before}\n    + {m.after}")
        return 0

    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        snapshot = make_copy(ROOT, Path(tmp) / "w0")  # every mutant derives from this one snapshot
        plan = plan_for(snapshot)
        timeouts = {}
        for module in modules:  # the clean selection must pass; a sanity mutant must be killed
            tests = select_tests(module, args.tests)
            status, seconds, _, failure = run_pytest(snapshot, tests, args.timeout or 600)
            if status != "survived":
                print(f"mutation: the unmutated tests fail for {module} ({status}: {failure}); not starting",
                      file=sys.stderr)
                return 2
            timeouts[module] = args.timeout or max(30.0, 4 * seconds)
            path, clean = snapshot / module, (snapshot / module).read_text(encoding="utf-8")
            path.write_text(clean + '\nraise RuntimeError("mutation sanity check")\n', encoding="utf-8")
            try:
                if run_pytest(snapshot, tests, timeouts[module])[0] == "survived":
                    sys.exit(f"mutation: a module that cannot import passed its tests: {module} is not isolated")
            finally:
                path.write_text(clean, encoding="utf-8")
            print(f"# {module}: clean run {seconds:.1f}s, timeout {timeouts[module]:.0f}s, tests {' '.join(tests)}",
                  flush=True)

        free: queue.Queue[Path] = queue.Queue()
        free.put(snapshot)
        for i in range(1, max(1, args.jobs)):
            free.put(make_copy(snapshot, Path(tmp) / f"w{i}"))

        def run(item):
            m, tests = item
            copy = free.get()
            if _STOP.is_set():
                free.put(copy)
                return None
            path = copy / m.module
            clean = path.read_text(encoding="utf-8")
            try:
                path.write_text(m.source, encoding="utf-8")
                status, seconds, rc, failure = run_pytest(copy, tests, timeouts[m.module])
            finally:
                path.write_text(clean, encoding="utf-8")
                free.put(copy)
            print(f"{m.id}  {status}  {seconds:.1f}s", flush=True)
            row = asdict(m)
            del row["source"]
            return {**row, "status": status, "seconds": round(seconds, 2), "returncode": rc, "by": failure}

        with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            try:
                rows = list(pool.map(run, plan))
            except BaseException:  # Ctrl-C: stop scheduling, kill the runs in flight
                _STOP.set()
                pool.shutdown(wait=False, cancel_futures=True)
                for proc in list(_ACTIVE):
                    _kill(proc)
                raise

    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    survivors = [r for r in rows if r["status"] == "survived"]
    if survivors:
        print("\nSurviving mutants (a test gap, or an equivalent mutant):")
        for r in survivors:
            print(f"{r['id']}\n    - {r['before']}\n    + {r['after']}")
    print(f"\n{'module':<32} {'mutants':>8} {'killed':>7} {'survived':>9} {'timeouts':>9} {'score':>7}")
    for module in modules:
        mine = [r for r in rows if r["module"] == module]
        count = {s: sum(r["status"] == s for r in mine) for s in ("killed", "survived", "timeout")}
        score = 100 * (count["killed"] + count["timeout"]) / len(mine) if mine else 100.0
        print(f"{module:<32} {len(mine):>8} {count['killed']:>7} {count['survived']:>9} {count['timeout']:>9} "
              f"{score:>6.1f}%")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
