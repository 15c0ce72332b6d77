"""Mutation testing for the exactness-deciding modules, with cosmic-ray: do the tests notice a change?

Run from the repository root after ``pip install ".[mutation]"`` (**not part of CI**, and
ignored by pytest's collection through ``conftest.py``)::

    python tests/mutation.py exact/certify.py [more modules] [--tests tests/test_certificates.py ...]
        [--jobs 2] [--timeout 120] [--limit N] [--seed S] [--json out.jsonl] [--list]
        [--only TEXT ...]    # e.g. --only ffn.py:412  (re-check survivors after a fix)

`cosmic-ray <https://cosmic-ray.readthedocs.io>`_ enumerates the mutants of each module
(its ``core`` operators: arithmetic and comparison operators, boolean operators and
``not``, number and boolean constants, ``break``/``continue``, exception handlers, ...) and
runs a test command against each one.  This script adds what a run over this repository
needs:

* **Isolation.** cosmic-ray rewrites the module on disk while a mutant is tested, so the
  repository (``exact/``, ``proofs/``, ``tests/``, ``docs/``, ``conftest.py``,
  ``pyproject.toml``, ``README.md``, ``benchmarks/``) is copied into a private temporary
  directory, once per job, and cosmic-ray runs there.  pytest runs with that copy as its
  working directory and on ``PYTHONPATH``, so the copy's ``exact`` shadows the installed one
  (checked before any mutant runs).  The working tree is only ever read.
* **A seeded sample.** ``--limit N`` keeps N of a module's mutants, drawn with ``--seed``
  from cosmic-ray's session, so a run is reproducible and its size is chosen.
* **The module's own tests.** Each module is tested against its own test files
  (:data:`DEFAULT_TESTS`, or ``--tests``) plus its doctests, with hypothesis derandomized
  and without its shrink phase (a failing example kills the mutant either way).
* **Jobs.** The sampled mutants are split over ``--jobs`` copies, each with its own
  cosmic-ray session, run side by side.

A mutant is *killed* when the tests fail or error, *timed out* (counted as killed in the
score, as cosmic-ray does), *incompetent* when the mutated module cannot even be imported
(left out of the score), and it *survived* when the tests pass.  Survivors are printed with
their diff, for a human to judge: a gap in the tests, or an equivalent mutant.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import random
import shlex
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COPIED = ["exact", "proofs", "tests", "docs", "conftest.py", "pyproject.toml", "README.md", "benchmarks"]
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")

_LEARNERS = ["tests/test_theorem_4_1_single_head.py", "tests/test_theorem_5_1_low_rank.py"]
_CERT = ["tests/test_certificates.py", "tests/test_certificate_guards.py", "tests/test_oracles.py", *_LEARNERS,
         "tests/test_no_false_exact.py"]
_FFN = ["tests/test_ffn.py", "tests/test_ffn_hidden.py", "tests/test_ffn_attack.py", "tests/test_ffn_biases_model.py"]
_MULTI = ["tests/test_kkg26_multihead.py", "tests/test_kkg26_float.py", "tests/test_kkg_block.py",
          "tests/test_multi_head_biases.py", "tests/test_multi_head_sweep.py"]
_NOISY = ["tests/test_theorem_6_1_noisy.py", "tests/test_noisy_refine.py"]
#: Each module's own tests (its doctests are always added).  Listed files that do not exist
#: are skipped; a module with none left gets every test file that names it.  ``--tests`` overrides.
DEFAULT_TESTS = {
    "exact/numbers.py": ["tests/test_numbers.py"],
    "exact/grids.py": ["tests/test_grids.py"],
    "exact/expfield.py": ["tests/test_expfield.py"],
    "exact/certify.py": _CERT,
    "exact/identify.py": [*_CERT, "tests/test_identify.py"],
    "exact/arith/certified.py": [*_CERT, "tests/test_identify.py"],
    "exact/learn/single_head.py": ["tests/test_theorem_4_1_single_head.py", "tests/test_no_false_exact.py"],
    "exact/learn/low_rank.py": ["tests/test_theorem_5_1_low_rank.py", "tests/test_no_false_exact.py"],
    "exact/learn/driver.py": [*_LEARNERS, "tests/test_certificates.py", "tests/test_driver.py"],
    "exact/learn/ffn.py": _FFN,
    "exact/learn/ffn_path.py": _FFN,
    "exact/learn/ffn_orient.py": _FFN,
    "exact/learn/ffn_count.py": _FFN,
    "exact/learn/transformer.py": ["tests/test_transformer.py", "tests/test_ffn_hidden.py", "tests/test_ffn_attack.py",
                                   "tests/test_native_block.py"],
    "exact/learn/multi_head.py": _MULTI,
    "exact/learn/kkg_block.py": _MULTI,
    "exact/learn/multi_head_float.py": _MULTI,
    "exact/learn/multi_head_sweep.py": _MULTI,
    "exact/learn/multi_head_lines.py": _MULTI,
    "exact/learn/noisy.py": _NOISY,
    "exact/learn/noisy_frame.py": _NOISY,
    "exact/learn/noisy_refine.py": _NOISY,
    "exact/corpus/judge.py": ["tests/test_corpus.py"],
    "exact/oracles.py": ["tests/test_oracles.py", "tests/test_reference_vectors.py"],
    "exact/io.py": ["tests/test_input_files.py", "tests/test_certificates.py"],
    "exact/cli.py": ["tests/test_cli.py", "tests/test_cli_options.py", "tests/test_cli_ux.py"],
}

_PLUGIN = "_mutation_hypothesis"  # loaded with -p in the copies: no shrinking, no database, derandomized
_PLUGIN_SOURCE = """try:
    from hypothesis import Phase, settings
except ImportError:
    pass
else:
    settings.register_profile("mutation", phases=[Phase.explicit, Phase.generate], database=None, derandomize=True,
                              deadline=None, max_examples=50)
    settings.load_profile("mutation")
"""


def select_tests(module: str, given: list[str] | None) -> list[str]:
    """The test files a module's mutants run against (see :data:`DEFAULT_TESTS`)."""
    if given:
        return given
    chosen = [t for t in DEFAULT_TESTS.get(module, []) if (ROOT / t).exists()]
    if chosen:
        return chosen
    dotted = module.removesuffix(".py").replace("/", ".")
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py") if dotted in p.read_text())


def make_copy(dest: Path) -> Path:
    """A private copy of the repository, in which cosmic-ray may rewrite modules."""
    dest.mkdir(parents=True)
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=IGNORED)
        elif src.exists():
            shutil.copy2(src, dest / name)
    (dest / f"{_PLUGIN}.py").write_text(_PLUGIN_SOURCE)
    return dest


def _argv(module: str, tests: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", _PLUGIN, "--doctest-modules",
            "-m", "not slow", *tests, module]


def _command(module: str, tests: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in _argv(module, tests))


def _config(copy: Path, module: str, tests: list[str], timeout: float) -> Path:
    path = copy / "cosmic-ray.toml"
    path.write_text(
        "[cosmic-ray]\n"
        f"module-path = {json.dumps(module)}\n"
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f"test-command = {json.dumps(_command(module, tests))}\n"
        "\n[cosmic-ray.distributor]\nname = \"local\"\n"
    )
    return path


def _env(copy: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HYPOTHESIS_PROFILE")}
    env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1")
    return env


def _cosmic(copy: Path, *args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["cosmic-ray", *args], cwd=copy, env=_env(copy), capture_output=True, text=True,
                          timeout=timeout)


def _jobs(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as c:
        return list(c.execute("select job_id, module_path, operator_name, occurrence, start_pos_row, start_pos_col "
                              "from mutation_specs order by module_path, start_pos_row, start_pos_col, operator_name, "
                              "occurrence"))


def _keep(db: Path, keep: set) -> None:
    with sqlite3.connect(db) as c:
        drop = [(j,) for (j,) in c.execute("select job_id from work_items") if j not in keep]
        c.executemany("delete from mutation_specs where job_id = ?", drop)
        c.executemany("delete from work_items where job_id = ?", drop)


def _results(db: Path) -> dict:
    with sqlite3.connect(db) as c:
        return {j: (w, t, d) for j, w, t, d in c.execute(
            "select job_id, worker_outcome, test_outcome, diff from work_results")}


def _label(row) -> str:
    _, module, op, occ, line, col = row
    return f"{module}:{line}:{col}:{op.removeprefix('core/')}#{occ}"


def run_module(module: str, args, base: Path) -> list[dict]:
    tests = select_tests(module, args.tests)
    work = [make_copy(base / f"{Path(module).stem}-{k}") for k in range(max(1, args.jobs))]
    timeout = args.timeout or 120.0
    for copy in work:
        _config(copy, module, tests, timeout)
    db = work[0] / "session.sqlite"
    out = _cosmic(work[0], "init", "cosmic-ray.toml", db.name)
    if out.returncode:
        raise SystemExit(f"cosmic-ray init failed for {module}: {out.stderr[-500:]}")
    rows = _jobs(db)
    if args.only:
        rows = [r for r in rows if any(text in _label(r) for text in args.only)]
    if args.limit is not None and len(rows) > args.limit:
        rows = sorted(random.Random(args.seed).sample(rows, args.limit), key=lambda r: r[1:])
    if args.list:
        for r in rows:
            print(_label(r))
        return []
    clean = subprocess.run(_argv(module, tests), cwd=work[0], env=_env(work[0]), capture_output=True,
                           text=True, timeout=timeout * 4)
    check = subprocess.run([sys.executable, "-c", "import exact; print(exact.__file__)"], cwd=work[0],
                           env=_env(work[0]), capture_output=True, text=True)
    if clean.returncode or not check.stdout.strip().startswith(str(work[0])):
        raise SystemExit(f"{module}: the unmutated tests do not pass in the copy, or the copy's exact is not the one "
                         f"imported:\n{clean.stdout[-800:]}{check.stdout}")
    shards = [rows[k::len(work)] for k in range(len(work))]
    dbs = []
    for copy, shard in zip(work, shards):
        shard_db = copy / "shard.sqlite"
        shutil.copy2(db, shard_db)
        _keep(shard_db, {r[0] for r in shard})
        dbs.append(shard_db)
    with concurrent.futures.ThreadPoolExecutor(len(work)) as pool:
        list(pool.map(lambda pair: _cosmic(pair[0], "exec", "cosmic-ray.toml", pair[1].name),
                      [(copy, shard_db) for copy, shard_db in zip(work, dbs) if _jobs(shard_db)]))
    found: dict = {}
    for shard_db in dbs:
        found.update(_results(shard_db))
    report = []
    for r in rows:
        worker, test, diff = found.get(r[0], ("missing", None, ""))
        worker, test = (str(x).lower().rsplit(".", 1)[-1] for x in (worker, test))  # "WorkerOutcome.NORMAL" or "normal"
        if worker == "normal" and test == "killed":
            outcome = "killed"
        elif worker == "normal" and test == "survived":
            outcome = "survived"
        elif worker == "normal" and test == "incompetent":
            outcome = "incompetent"
        elif worker == "timeout":
            outcome = "timeout"
        else:
            outcome = f"error ({worker})"
        report.append({"module": module, "id": _label(r), "outcome": outcome, "diff": diff or ""})
    return report


def summary(rows: list[dict]) -> dict:
    """Killed (timeouts included) over killed plus survived, per module."""
    out: dict = {}
    for row in rows:
        s = out.setdefault(row["module"], {"killed": 0, "timeout": 0, "survived": 0, "incompetent": 0, "error": 0})
        key = row["outcome"] if row["outcome"] in s else "error"
        s[key] += 1
    for s in out.values():
        scored = s["killed"] + s["timeout"] + s["survived"]
        s["score"] = (s["killed"] + s["timeout"]) / scored if scored else None
    return out


def write_json(args, rows: list[dict], seconds: float) -> None:
    """The run as benchmark-style JSON rows: ``env``, one ``run`` row per mutant, a ``summary`` row per
    module, then ``done``."""
    version = subprocess.run(["cosmic-ray", "--version"], capture_output=True, text=True).stdout.strip()
    head = {"bench": "mutation"}
    out = [{**head, "row": "env", "python": sys.version.split()[0], "cosmic_ray": version, "seed": args.seed,
            "limit": args.limit, "timeout": args.timeout or 120.0, "jobs": args.jobs,
            "tests": {m: select_tests(m, args.tests) for m in args.modules}}]
    out += [{**head, "row": "run", **row} for row in rows]
    out += [{**head, "row": "summary", "module": m, **s} for m, s in summary(rows).items()]
    out.append({**head, "row": "done", "seconds": round(seconds, 1)})
    with open(args.json, "w") as fh:
        for row in out:
            fh.write(json.dumps(row) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("modules", nargs="+", help="module paths relative to the repository root, e.g. exact/numbers.py")
    ap.add_argument("--tests", nargs="+", help="test paths to run instead of the default selection")
    ap.add_argument("--jobs", type=int, default=2, help="copies running mutants side by side (default 2)")
    ap.add_argument("--timeout", type=float, help="seconds per mutant (default 120)")
    ap.add_argument("--limit", type=int, help="test only N mutants per module, sampled with --seed")
    ap.add_argument("--seed", type=int, default=0, help="seed of the --limit sample (default 0)")
    ap.add_argument("--json", type=Path, help="write one JSON row per mutant to this file")
    ap.add_argument("--list", action="store_true", help="print the mutants without running them")
    ap.add_argument("--only", nargs="+", metavar="TEXT", help="only mutants whose id contains one of these")
    args = ap.parse_args(argv)
    if shutil.which("cosmic-ray") is None:
        raise SystemExit("cosmic-ray is not installed: pip install \".[mutation]\"")
    rows: list[dict] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        for module in args.modules:
            got = run_module(module, args, Path(tmp))
            rows += got
            for row in got:
                if row["outcome"] != "killed":
                    print(f"{row['outcome']:>12}  {row['id']}")
                    if row["outcome"] == "survived":
                        print("".join("      " + line + "\n" for line in row["diff"].splitlines()
                                      if line.startswith(("+", "-")) and not line.startswith(("+++", "---"))))
    if args.json:
        write_json(args, rows, time.perf_counter() - started)
    if not args.list:
        for module, s in summary(rows).items():
            score = "n/a" if s["score"] is None else f"{100 * s['score']:.0f}%"
            print(f"{module}: {score} ({s['killed']} killed, {s['timeout']} timed out, {s['survived']} survived, "
                  f"{s['incompetent']} incompetent, {s['error']} errors)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
