"""The ``verify`` session (exact/verify/session.py): streamed rows, interrupts, identities, typed
cases, counts against the papers' formulas, reasons for failures, output paths, resume, messages."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from exact import cli, registry
from exact.verify import THEOREMS, Claim, ClaimId, Instance, InstanceId, Verdict, claims, formulas
from exact.verify.session import VerifyOptions, run_session, select

ROOT = Path(__file__).resolve().parent.parent


def _env():
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")  # this checkout's package
    return env


def _rows(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _fake(monkeypatch, theorem: str, fake: list) -> None:
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: fake if theorem in theorems else [])


# -- E1: rows stream, on a pipe, in every local executor ----------------------------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_the_first_claim_row_arrives_on_a_pipe_while_the_run_goes_on(jobs):
    # two claims: one float instance of Theorem 4.1 first, then the non-equivalent pairs (100 proofs)
    argv = [sys.executable, "-m", "exact", "verify", "float mode error <= 1e-6", "refuted by an exact witness",
            "--quiet", "--jobs", jobs]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT)
    try:
        header, rule, first = proc.stdout.readline(), proc.stdout.readline(), proc.stdout.readline()
        running = proc.poll() is None  # the first claim's row came while the second claim still ran
        rest, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert header.startswith("claim") and set(rule.strip()) == {"-"}
    assert first.startswith("Thm 4.1: float mode error <= 1e-6") and first.rstrip().endswith("ok"), first
    assert running
    assert proc.returncode == 0, err
    assert rest.splitlines()[0].startswith("Prop 7.1: non-equivalent pairs") and rest.rstrip().endswith("2/2 claims hold")


def test_without_a_deadline_the_instances_run_claim_by_claim():
    from exact.verify.tasks import _plan, tasks_for

    entries = tasks_for(("lemmas", "kkg"), budget="quick")
    plan = _plan(entries, range(len(entries)), max_d=16, budget="quick", deadline=None)
    positions = [n for (n, _), _ in plan]
    assert positions == sorted(positions)  # so the first claim completes first
    assert [t.id for _, t in plan][:2] == [InstanceId("lemmas", 0, 0), InstanceId("lemmas", 1, 0)]


# -- E2: Ctrl-C and SIGTERM stop verify --jobs N at once, workers included -----------------------


def _group(pgid: int) -> list[int]:
    """The live (not zombie) processes of a process group, from /proc."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(entry))
    return out


def _children(pid: int) -> list[int]:
    return [p for p in _group(pid) if p != pid]


def _terminal_sigint():
    """Ctrl-C as a terminal delivers it: a run started in the background inherits SIGINT ignored, and
    Python then never raises KeyboardInterrupt for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(sig: int) -> tuple[float, int, list[int]]:
    """Start ``verify --jobs 2`` in its own process group, wait until its workers run instances, send
    ``sig`` to the group (as a terminal's Ctrl-C does); the seconds to exit, the status, the survivors."""
    proc = subprocess.Popen([sys.executable, "-m", "exact", "verify", "--jobs", "2", "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=ROOT,
                            start_new_session=True, preexec_fn=_terminal_sigint)
    try:
        assert proc.stdout.readline().startswith("claim")  # the header: the claims are built, the run starts
        give_up = time.monotonic() + 120
        while len(_children(proc.pid)) < 3 and time.monotonic() < give_up:  # two workers and the resource tracker
            time.sleep(0.1)
        assert len(_children(proc.pid)) >= 3, "the workers did not start"
        time.sleep(1.5)  # instances are running
        sent = time.monotonic()
        os.killpg(proc.pid, sig)
        proc.wait(timeout=120)
        seconds = time.monotonic() - sent
        give_up = time.monotonic() + 10
        while _group(proc.pid) and time.monotonic() < give_up:  # the resource tracker exits as it sees EOF
            time.sleep(0.1)
        left = _group(proc.pid)
        err = proc.stderr.read()
    finally:
        with_leftovers = _group(proc.pid)
        for pid in with_leftovers:  # never leave a process behind, even when the test fails
            os.kill(pid, signal.SIGKILL)
        proc.kill()
    assert err.startswith("exact-attention: verify: "), err
    return seconds, proc.returncode, left


linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to list a process group")


@linux_only
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupt_stops_verify_jobs_and_leaves_no_process(sig, status):
    seconds, returncode, left = _interrupt(sig)
    print(f"{signal.Signals(sig).name}: exit after {seconds:.2f} s")
    assert returncode == status and left == []


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_stops_verify_jobs_within_two_seconds(sig):
    seconds, _, left = _interrupt(sig)
    assert seconds <= 2.0 and left == []


def test_an_interrupt_in_process_prints_the_finished_claims_and_exits_130(monkeypatch, capsys):
    def check(name):
        if name == "b":
            raise KeyboardInterrupt
        return Verdict(True, True, note="ok")

    _fake(monkeypatch, "4.1", [Claim("first", (Instance("a", "a"),), check), Claim("second", (Instance("b", "b"),), check)])
    assert cli.main(["verify", "--quiet", "--json"]) == 130
    captured = capsys.readouterr()
    assert [r["claim"] for r in _rows(captured.out) if r["row"] == "claim"] == ["first"]  # for --resume
    assert captured.err == ("exact-attention: verify: interrupted after 1 of 2 claims; pass the --json rows "
                            "printed so far to --resume to go on\n")


def test_the_pool_is_stopped_when_the_reader_of_its_rows_fails(monkeypatch):
    from exact.verify import tasks

    entries = tasks.tasks_for(("lemmas",), budget="quick")
    stopped = []
    monkeypatch.setattr(tasks, "_stop", lambda pool: stopped.append(pool) or pool.shutdown(wait=True,
                                                                                             cancel_futures=True))

    def boom(report):
        raise RuntimeError("the reader went away")

    with pytest.raises(RuntimeError, match="went away"):
        tasks.run_tasks(entries, executor="pool", jobs=2, budget="quick", on_report=boom)
    assert len(stopped) == 1  # closed from the ordering layer, not left to the garbage collector


# -- C3: one identity, typed cases ------------------------------------------------------------


def test_identities_round_trip_through_rows_task_and_resume(tmp_path, capsys):
    assert cli.main(["verify", "Lemma A.1", "Token copy", "--budget", "quick", "--json", "--quiet"]) == 0
    rows = _rows(capsys.readouterr().out)
    claim_rows = [r for r in rows if r["row"] == "claim"]
    assert [r["task"] for r in claim_rows] == ["lemmas:3", "lemmas:4"]
    assert [r["task"] for r in rows if r["row"] == "instance"] == ["lemmas:3:0", "lemmas:4:0"]
    assert [o["task"] for r in claim_rows for o in r["outcomes"]] == ["lemmas:3:0", "lemmas:4:0"]
    for ident in ("lemmas:4:0", "lemmas:4"):  # what a row says is what --task takes
        assert cli.main(["verify", "--task", ident, "--budget", "quick", "--json", "--quiet"]) == 0
        (row,) = [r for r in _rows(capsys.readouterr().out) if r["row"] == "claim"]
        assert row["task"] == "lemmas:4" and row["claim"].startswith("Lemma A.1")
    saved = tmp_path / "rows.jsonl"
    saved.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert cli.main(["verify", "lemmas", "--budget", "quick", "--json", "--quiet", "--resume", str(saved)]) == 0
    again = _rows(capsys.readouterr().out)
    assert [r["task"] for r in again if r["row"] == "claim"] == [f"lemmas:{i}" for i in range(10)]
    reused = [r for r in again if r["row"] == "claim" and r["task"] in ("lemmas:3", "lemmas:4")]
    assert reused == claim_rows  # as they were, seconds included
    # a row whose identity names another claim of this sweep is refused
    forged = [dict(r, task="lemmas:0", outcomes=[dict(o, task="lemmas:0:0") for o in r["outcomes"]])
              if r["row"] == "claim" and r["task"] == "lemmas:3" else r for r in rows]
    saved.write_text("\n".join(json.dumps(r) for r in forged) + "\n")
    assert cli.main(["verify", "lemmas", "--budget", "quick", "--quiet", "--resume", str(saved)]) == 2
    err = capsys.readouterr().err
    assert "lemmas:0 is 'Logit primitive" in err and err.count("\n") == 1


def test_every_instance_has_a_typed_case():
    from exact.verify import cases

    kinds = tuple(getattr(cases, name) for name in cases.__all__)
    for budget in ("quick", "standard"):
        for c in claims(budget=budget):
            for inst in c.instances:
                assert isinstance(inst.case, kinds), (c.name, inst.name, type(inst.case))
                assert dataclasses.is_dataclass(inst.case) and type(inst.case).__dataclass_params__.frozen
    for name in cases.__all__:  # data, never code or an untyped bag
        for f in dataclasses.fields(getattr(cases, name)):
            assert f.type not in ("Any", "object") and "Callable" not in str(f.type), (name, f.name, f.type)


def test_claim_and_instance_ids_parse_strictly():
    from exact.verify.ids import parse_id

    assert parse_id("4.1:2:7") == InstanceId("4.1", 2, 7) and parse_id("kkg:1") == ClaimId("kkg", 1)
    assert str(ClaimId("4.1", 2).instance(7)) == "4.1:2:7"
    for bad in ("kkg", "kkg:", ":1", "kkg:-1", "kkg:1:x", "kkg:1:2:3", "kkg:١"):
        with pytest.raises(ValueError, match="expected THEOREM:CLAIM or THEOREM:CLAIM:INSTANCE"):
            parse_id(bad)


# -- C4: counts against the papers' formulas, stated in verify --------------------------------


def test_verify_never_takes_a_learners_own_count_as_the_formula():
    import exact.verify as package

    for path in Path(package.__file__).parent.glob("*.py"):
        assert ".query_count(" not in path.read_text(), path.name  # a call to a spec's own count


@pytest.mark.parametrize("d", [1, 2, 3, 5, 8, 16])
def test_the_learners_state_the_papers_counts(d):
    """The registry's stated counts agree with verify's independent formulas (neither is read from the other)."""
    assert registry.get("single-head").query_count(d) == formulas.SINGLE_HEAD(d=d)
    assert registry.get("single-head-biased").query_count(d) == formulas.BIASED(d=d)
    for name in ("noisy-paper", "noisy-frame", "threshold"):
        assert registry.get(name).query_count(d) == formulas.NOISY(d=d)
    assert registry.get("noisy-refine").query_count(d) == formulas.REFINE(d=d)
    for r in range(d + 1):
        assert registry.get("low-rank").query_count(d, rank=r) == formulas.LOW_RANK(d=d, r=r)
    for r in range(1, d + 1):
        for C in (0.25, 1.0, 3.5):
            assert registry.get("low-rank-cs").query_count(d, rank=r, C=C) == formulas.CS(d=d, r=r, C=C)
    for H in (1, 2, 3, 4):
        assert registry.get("multi-head").query_count(d, heads=H) == formulas.KKG_PAPER(d=d, H=H)
        assert registry.get("multi-head-fast").query_count(d, heads=H) == formulas.KKG_FAST(d=d, H=H)
    for m in (1, d, 2 * d):
        assert registry.get("ffn").query_count(d, m=m) == formulas.FFN(d=d, m=m)


def test_a_count_claim_fails_when_the_learners_count_and_the_formula_move_together(monkeypatch):
    """A learner that asks one query more and states its count one higher still fails: verify's formula
    is its own."""
    original = registry.get

    def get(name):
        spec = original(name)
        if name != "single-head":
            return spec

        def learn(oracle, **kw):
            oracle.query([[0] * oracle.d])
            r = spec.learn(oracle, **kw)
            return dataclasses.replace(r, queries=r.queries + 1)

        return dataclasses.replace(spec, learn=learn, query_count=lambda d, **c: d * d + d + 1)

    monkeypatch.setattr(registry, "get", get)
    (claim,) = [c for c in claims(("4.1",), budget="quick") if "(certified)" in c.name]
    o = claim.run_instance(2, id=InstanceId("4.1", 0, 2))
    assert o.exact and not o.count
    assert o.reason == "count: the oracle counted 7 queries, d² + d = 6"


# -- E4: a failing claim says why ---------------------------------------------------------------


def _one_more_query(monkeypatch):
    original = registry.get

    def get(name):
        spec = original(name)
        if name != "single-head":
            return spec

        def learn(oracle, **kw):
            oracle.query([[0] * oracle.d])
            return spec.learn(oracle, **kw)

        return dataclasses.replace(spec, learn=learn)

    monkeypatch.setattr(registry, "get", get)


def test_a_failing_count_shows_the_oracles_count_beside_the_formula(monkeypatch, tmp_path, capsys):
    _one_more_query(monkeypatch)
    report = tmp_path / "r.md"
    argv = ["verify", "exact W, v in d²+d queries (certified)", "--budget", "quick", "--quiet", "--report", str(report)]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert ("  FAIL Thm 4.1: exact W, v in d²+d queries (certified) / rational d=2 seed=0 [4.1:0:2]: count: the "
            "oracle counted 7 queries, d² + d = 6; the learner reported 6 (") in out
    assert "more failed instances" in out  # the table lists five, the report all
    n = len(next(c for c in claims(("4.1",), budget="quick") if "(certified)" in c.name).instances)
    text = report.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| Thm 4.1: exact W, v in d²+d queries (cert"))
    asked, formula = (int(x) for x in row.split(" | ")[4].split(" / "))
    assert asked == formula + n and f"| 0/{n} |" in row  # the queries column shows the extra queries
    assert "/ rational d=2 seed=0: count: the oracle counted 7 queries, d² + d = 6; the learner reported 6" in text


def test_a_wrong_value_is_named():
    from exact.models import SingleHead
    from exact.verify.single_head import difference

    a, b = SingleHead([[1, 2], [3, 4]], [1, 1]), SingleHead([[1, 2], [3, 5]], [1, 1])
    assert difference(a, b) == "W[1][1] is 4, the model's is 5"
    assert difference(a, SingleHead([[1, 2], [3, 4]], [1, 2])) == "v[1] is 1, the model's is 2"


# -- E5: output paths before the sweep ---------------------------------------------------------


def test_output_paths_are_checked_before_any_claim_runs(monkeypatch, tmp_path, capsys):
    ran = []
    _fake(monkeypatch, "lemmas", [Claim("c", (Instance("a", "a"),), lambda case: ran.append(case) or Verdict(True))])
    (tmp_path / "afile").write_text("")
    cases = [
        (["--report", str(tmp_path / "afile" / "r.md")], "--report: expected a file in an existing directory"),
        (["--report", str(tmp_path)], "--report: expected a file to write"),
        (["--report", str(tmp_path / "no" / "r.md")], "does not exist"),
    ]
    if Path("/proc/self").is_dir():  # a directory no file can be created in, even as root
        cases.append((["--report", "/proc/self/r.md"], "--report: expected a path that can be written"))
    for argv, words in cases:
        assert cli.main(["verify", "lemmas", "--quiet", *argv]) == 2
        captured = capsys.readouterr()
        assert words in captured.err and captured.err.count("\n") == 1 and captured.out == "", captured
    pytest.importorskip("matplotlib")
    cases = [
        (["--plots", str(tmp_path / "afile" / "sub")], "--plots: expected a directory that can be created"),
        (["--plots", str(tmp_path / "afile")], "--plots: expected a directory, got"),
    ]
    if Path("/proc/self").is_dir():
        cases.append((["--plots", "/proc/self/plots"], "--plots: expected a path that can be written"))
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        cases.append((["--plots", str(locked / "p")], "--plots: expected a path that can be written"))
    for argv, words in cases:
        assert cli.main(["verify", "lemmas", "--quiet", *argv]) == 2
        captured = capsys.readouterr()
        assert words in captured.err and captured.err.count("\n") == 1 and captured.out == "", captured
    assert ran == []
    assert not (tmp_path / "no").exists()


# -- E6: --resume on a file that is not UTF-8 ------------------------------------------------------


def test_resume_from_a_file_that_is_not_utf8_is_one_line(tmp_path, capsys):
    bad = tmp_path / "rows.jsonl"
    for data, line in ((b"\xe8\x00\xff garbage", 1), (b'{"row": "instance"}\n\xff\n', 2)):
        bad.write_bytes(data)
        assert cli.main(["verify", "lemmas", "--quiet", "--resume", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"--resume: {bad}: line {line}: expected the UTF-8 JSON rows of verify --json" in err
        assert err.count("\n") == 1
    assert cli.main(["verify", "lemmas", "--quiet", "--resume", str(tmp_path / "missing")]) == 2
    assert "--resume: cannot read" in capsys.readouterr().err


def test_resume_refuses_rows_without_an_identity(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    assert cli.main(["verify", "Lemma A.1", "--budget", "quick", "--json", "--quiet"]) == 0
    old = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    for r in old:
        r.pop("task")
    rows.write_text("\n".join(json.dumps(r) for r in old) + "\n")
    assert cli.main(["verify", "Lemma A.1", "--budget", "quick", "--quiet", "--resume", str(rows)]) == 2
    assert 'a claim row without its "task"' in capsys.readouterr().err


# -- E10: messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, words", [
    (["--scheduler-timeout", "-1"], "argument --scheduler-timeout: expected a number of seconds > 0, got -1"),
    (["--scheduler-timeout", "nan"], "argument --scheduler-timeout:"),
    (["--jobs", "2", "--scheduler", "tcp://127.0.0.1:9"], "argument --scheduler: not allowed with argument --jobs"),
])
def test_bad_executor_options_are_one_line(capsys, argv, words):
    with pytest.raises(SystemExit) as e:
        cli.main(["verify", "lemmas", "--quiet", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_the_session_refuses_two_executors():
    with pytest.raises(ValueError, match="--jobs 2 and --scheduler: one executor"):
        run_session(VerifyOptions(targets=("lemmas",), jobs=2, scheduler="tcp://127.0.0.1:9", progress=False))


def test_an_unknown_claim_names_the_close_ones_and_points_to_list(capsys):
    assert cli.main(["verify", "fast pln", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err == ("exact-attention: error: verify: no theorem or claim matches 'fast pln'; close: kkg:2 (KKG26 "
                   "(beyond): fast plan exact at its…), kkg:3 (KKG26 (beyond): fast plan median <= 0.6…), kkg:7 (KKG26 "
                   "with biases (beyond): fast plan e…); 'exact-attention verify --list' lists the claims\n")
    assert cli.main(["verify", "kgg", "--quiet"]) == 2
    assert "close: 'kkg'" in capsys.readouterr().err


def test_long_claim_names_are_not_cut(monkeypatch, capsys):
    long = "a claim whose name runs on " + "and on " * 12 + "to its end"
    _fake(monkeypatch, "kkg", [Claim("short", (Instance("a", 1),), lambda c: Verdict(True)),
                               Claim(long, (Instance("a", 1),), lambda c: Verdict(True))])
    assert cli.main(["verify", "--quiet"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(long) > 90 and lines[3].startswith(long + "  ") and lines[3].endswith("ok")
    assert lines[2].rindex("ok") == lines[3].rindex("ok")  # one column width for every row
    assert lines[0].split() == ["claim", "instances", "exact", "count", "seconds"]


# -- E11: --list, and JSON errors ----------------------------------------------------------------


def test_list_prints_the_selection_and_runs_nothing(monkeypatch, capsys):
    assert cli.main(["verify", "kkg", "--list", "--budget", "quick"]) == 0
    lines = capsys.readouterr().out.splitlines()
    quick = claims(("kkg",), budget="quick")
    assert lines[0].split() == ["task", "instances", "claim"] and len(lines) == 1 + len(quick)
    assert lines[1].split(None, 2) == ["kkg:0", str(len(quick[0].instances)), quick[0].name]
    assert cli.main(["verify", "--list", "--json"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert [r["task"] for r in rows] == [str(e.id) for e in select(VerifyOptions(), "standard")]
    assert {r["theorem"] for r in rows} == set(THEOREMS) and all(r["row"] == "list" for r in rows)


def test_json_mode_prints_an_error_object_on_stdout_too(capsys):
    assert cli.main(["verify", "no-such-claim", "--json", "--quiet"]) == 2
    captured = capsys.readouterr()
    (row,) = _rows(captured.out)
    assert row["row"] == "error" and row["status"] == 2 and row["error"].startswith("verify: no theorem or claim")
    assert captured.err == f"exact-attention: error: {row['error']}\n"
    assert cli.main(["verify", "lemmas", "--budget", "huge", "--json"]) == 2
    (row,) = _rows(capsys.readouterr().out)
    assert row["error"].startswith("budget: expected quick, standard, full or a positive number of seconds")


# -- the session as a library ----------------------------------------------------------------


def test_run_session_writes_to_the_streams_it_is_given(monkeypatch):
    import io

    _fake(monkeypatch, "4.1", [Claim("holds", (Instance("a", 1),), lambda c: Verdict(True, note="fine"))])
    out, err = io.StringIO(), io.StringIO()
    assert run_session(VerifyOptions(json=True, progress=False), out=out, err=err) == 0
    rows = _rows(out.getvalue())
    assert [r["row"] for r in rows] == ["instance", "claim"] and rows[1]["task"] == "4.1:0" and err.getvalue() == ""
    assert "run_session" in inspect.getsource(cli._cmd_verify)
