"""The claim machinery behind ``exact-attention verify``."""

import json
import sys

import pytest

from exact import cli


def _claim_rows(text: str) -> list:
    """The claim rows of ``verify --json`` output (each follows its instances' rows)."""
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert all(r["row"] in ("instance", "claim") for r in rows)
    return [r for r in rows if r["row"] == "claim"]
from exact.verify import THEOREMS, Claim, ClaimReport, Instance, Verdict, claims, format_table, run_claims


def _ok(case):
    return Verdict(True, True, note="fine")


def test_a_claim_with_a_missing_dependency_is_skipped_not_held():
    (report,) = run_claims([Claim("needs x", (Instance("a", None),), _ok, requires="no_such_module_xyz")], progress=False)
    assert report.skipped == "no_such_module_xyz is not installed"
    assert not report.holds and report.status == "skipped"
    assert "SKIPPED needs x: no_such_module_xyz is not installed" in format_table([report])


def test_a_claim_on_no_instance_does_not_hold():
    (report,) = run_claims([Claim("vacuous", (), _ok)], progress=False)
    assert report.instances == 0 and not report.holds and report.status == "FAIL"


def test_a_crashing_instance_is_a_reported_failure():
    def boom(case):
        raise RuntimeError("kaput")

    (report,) = run_claims([Claim("crash", (Instance("a", None), Instance("b", None)), boom)], progress=False)
    assert not report.holds and report.exact == 0
    assert [f.reason for f in report.failures] == ["RuntimeError: kaput"] * 2
    assert "FAIL crash / a: RuntimeError: kaput" in format_table([report])


def test_a_check_that_returns_no_verdict_is_a_failure():
    (report,) = run_claims([Claim("old style", (Instance("a", None),), lambda case: (True, True, "ok"))],
                           progress=False)
    assert not report.holds and report.failures[0].reason == "TypeError: the check returned a tuple, not a Verdict"


def test_claims_without_counts_show_a_dash_and_ignore_the_count():
    def no_count(case):
        return Verdict(True, False, note="n/a")

    (report,) = run_claims([Claim("proof", (Instance("a", None),), no_count, counts=False)], progress=False)
    assert report.holds and report.count == 1
    table = format_table([report])
    assert "—" in table.splitlines()[2]


def test_claims_selection():
    names = [c.name for c in claims(("5.1",), budget="quick")]
    assert names and all(n.startswith("Thm 5.1") for n in names)
    with pytest.raises(ValueError, match="theorem: expected some of 4.1, biases, 5.1, 6.1, 7.1, kkg, ffn, transformer, lemmas, got 9.9"):
        claims(("9.9",))
    with pytest.raises(ValueError, match="budget: expected one of quick, standard, full, got 'huge'"):
        claims(("4.1",), budget="huge")
    assert THEOREMS == ("4.1", "biases", "5.1", "6.1", "7.1", "kkg", "ffn", "transformer", "lemmas")
    names = [c.name for c in claims(("ffn", "transformer"), budget="quick")]
    assert any(n.startswith("FFN: exact") for n in names) and any(n.startswith("Transformer: exact") for n in names)
    assert not any(n.startswith("FFN") for n in (c.name for c in claims(("transformer",), budget="quick")))
    lemmas = [c.name for c in claims(("lemmas",), budget="quick")]
    assert [n.split(":")[0] for n in lemmas] == ["Logit primitive", "Oddness of attention", "Transformer odd part",
                                                 "Token copy", "Lemma A.1", "Biases", "Transformer inversion",
                                                 "Theorem 4.1 decoding", "Proposition 7.1",
                                                 "Pair line"]
    noisy = [c.name for c in claims(("6.1",), budget="quick")]
    assert any("App. B threshold" in n for n in noisy) and sum("certified bound" in n for n in noisy) == 10
    assert any(n.startswith("Thm 6.1 refine (2x queries)") for n in noisy)


def test_cli_exit_code_counts_skipped_claims_as_not_failing(monkeypatch, capsys):
    fake = [
        Claim("holds", (Instance("a", None),), _ok),
        Claim("skipped", (Instance("a", None),), _ok, requires="no_such_module_xyz"),
    ]
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: fake if "4.1" in theorems else [])
    assert cli.main(["verify", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("1/1 claims hold (1 skipped)")
    assert cli.main(["verify", "--no-progress", "--json"]) == 0
    rows = _claim_rows(capsys.readouterr().out)
    assert [r["skipped"] for r in rows] == [None, "no_such_module_xyz is not installed"]


def test_cli_exit_code_is_1_when_a_claim_fails(monkeypatch, capsys):
    bad = [Claim("fails", (Instance("a", None),), lambda case: Verdict(False, True, "wrong"))]
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: bad if "4.1" in theorems else [])
    assert cli.main(["verify", "--no-progress"]) == 1
    assert "0/1 claims hold" in capsys.readouterr().out


def test_report_json_is_plain():
    r = ClaimReport("c", 1, 1, 1, 0.5, outcomes=())
    assert json.loads(json.dumps(r.to_json()))["holds"] is True


# -- a missing optional dependency (cvxpy, the cs extra) ---------------------------------------


def _hide_cvxpy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # as without the extra: find_spec finds nothing


def test_the_compressed_sensing_claim_requires_cvxpy():
    cs, phase = [c for c in claims(("5.1",), budget="quick") if c.requires is not None]
    assert cs.requires == phase.requires == "cvxpy" and cs.name.startswith("Thm 5.1 CS learner")
    assert phase.name.startswith("Thm 5.1 CS phase transition")


def test_without_cvxpy_the_real_cs_claim_is_skipped_and_verify_exits_0(monkeypatch, capsys):
    _hide_cvxpy(monkeypatch)
    assert cli.main(["verify", "--quick", "--theorem", "5.1", "--json", "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    rows = _claim_rows(captured.out)
    skipped = [r for r in rows if r["skipped"]]
    assert [(r["claim"][:20], r["skipped"], r["holds"]) for r in skipped] == [
        ("Thm 5.1 CS learner: ", "cvxpy is not installed", False),
        ("Thm 5.1 CS phase tra", "cvxpy is not installed", False),
    ]
    assert skipped[0]["outcomes"] == [] and skipped[0]["exact"] == skipped[0]["count"] == 0  # nothing was run
    held = [r for r in rows if not r["skipped"]]
    assert len(held) == 6 and all(r["holds"] for r in held)
    # the table lists it too, and the footer counts it apart
    assert cli.main(["verify", "--quick", "--theorem", "5.1", "--quiet"]) == 0
    lines = capsys.readouterr().out.rstrip("\n").splitlines()
    assert "  SKIPPED Thm 5.1 CS learner: rel. error <= 1e-6 at C = 3.5: cvxpy is not installed" in lines
    assert lines[-1] == "6/6 claims hold (2 skipped)"


def test_tasks_pickle_and_a_process_pool_gives_the_sequential_rows(capsys):
    import pickle

    from exact.verify import InstanceId
    from exact.verify.tasks import Task, run_task

    task = Task(InstanceId("kkg", 0, 0), max_d=16, budget="quick")
    assert pickle.loads(pickle.dumps(task)) == task
    outcome = run_task(task)
    assert outcome.exact and outcome.id == task.id
    with pytest.raises(ValueError, match="task: kkg:99:0 names no claim instance of this sweep"):
        run_task(Task(InstanceId("kkg", 99, 0), budget="quick"))

    def rows(argv):
        assert cli.main(["verify", "--theorem", "kkg", "--quick", "--json", "--quiet", *argv]) == 0
        out = _claim_rows(capsys.readouterr().out)
        return [(r["claim"], r["instances"], r["exact"], r["count"], r["holds"],
                 [(o["instance"], o["exact"], o["count"]) for o in r["outcomes"]]) for r in out]

    sequential = rows([])
    assert sequential and rows(["--jobs", "2"]) == sequential  # the same rows, apart from the seconds


def test_claims_are_addressed_by_theorem_or_name_and_unknown_names_list_the_known_ones(capsys):
    assert cli.main(["verify", "kkg", "median", "--quick", "--json", "--quiet"]) == 0
    names = [r["claim"] for r in _claim_rows(capsys.readouterr().out)]
    assert names and all(n.startswith("KKG26") for n in names)  # "median" is a kkg claim: no duplicate
    assert cli.main(["verify", "refuted by an exact witness", "--quick", "--json", "--quiet"]) == 0
    (row,) = _claim_rows(capsys.readouterr().out)
    assert row["claim"].startswith("Prop 7.1") and row["holds"]
    assert cli.main(["verify", "no-such-claim", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "no theorem or claim matches 'no-such-claim'" in err and "verify --list" in err
    assert err.count("\n") == 1  # one line, not the list of every claim


def test_report_lists_failures_with_a_command_that_reruns_exactly_that_instance(monkeypatch, tmp_path, capsys):
    seen = []

    def check(name):
        seen.append(name)
        return Verdict(name != "b", True, f"why {name}", f"note {name}")

    fake = [Claim("mixed", (Instance("a", "a"), Instance("b", "b"), Instance("c", "c")), check)]
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: fake if "kkg" in theorems else [])
    report = tmp_path / "report.md"
    assert cli.main(["verify", "--quiet", "--report", str(report)]) == 1
    text = report.read_text()
    assert "## [KKG26]" in text and "| mixed | 3 | 2/3 | 3/3 |" in text and "**0/1 claims hold**" in text
    assert "- **mixed** / b: why b (note b)" in text and "`exact-attention verify --task kkg:0:1`" in text
    capsys.readouterr()
    seen.clear()
    assert cli.main(["verify", "--quiet", "--task", "kkg:0:1"]) == 1 and seen == ["b"]  # that instance only
    assert cli.main(["verify", "--quiet", "--task", "kkg:0:2"]) == 0 and seen == ["b", "c"]
    assert cli.main(["verify", "--quiet", "--task", "kkg:0"]) == 1 and seen == ["b", "c", "a", "b", "c"]  # a claim
    for bad in ("kkg", "kkg:x:1", "kkg:0:9", "kkg:1", "nope:0:0", "kkg:0:1:2"):
        assert cli.main(["verify", "--quiet", "--task", bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("exact-attention: error: --task:") and err.count("\n") == 1, err


def test_resume_reuses_finished_rows_and_a_corrupt_file_is_one_line_exit_2(monkeypatch, tmp_path, capsys):
    ran = []

    def check(name):
        ran.append(name)
        return Verdict(True, True, note="ok")

    fake = [Claim("first", (Instance("a", "a"),), check), Claim("second", (Instance("b", "b"),), check)]
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: fake if "4.1" in theorems else [])
    assert cli.main(["verify", "--quiet", "--json"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [json.loads(r)["row"] for r in rows] == ["instance", "claim", "instance", "claim"]
    partial = tmp_path / "rows.jsonl"
    partial.write_text("\n".join(rows[:3]) + "\n")  # interrupted: the first claim done, one row of the second
    ran.clear()
    assert cli.main(["verify", "--quiet", "--json", "--resume", str(partial)]) == 0
    resumed = capsys.readouterr().out.splitlines()
    assert ran == ["b"] and resumed[:2] == rows[:2]  # the finished claim's rows are reused as they were
    assert [r["claim"] for r in _claim_rows("\n".join(resumed))] == ["first", "second"]
    for text in ("not json\n", '{"claim": "first"}\n', "[1, 2]\n"):
        partial.write_text(text)
        assert cli.main(["verify", "--quiet", "--resume", str(partial)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("exact-attention: error: --resume:") and err.count("\n") == 1


def test_a_dask_local_cluster_gives_the_sequential_rows(capsys):
    distributed = pytest.importorskip("distributed")

    def rows(argv):
        assert cli.main(["verify", "kkg", "--quick", "--json", "--quiet", *argv]) == 0
        out = _claim_rows(capsys.readouterr().out)
        return [(r["claim"], r["instances"], r["exact"], r["count"], r["holds"],
                 [(o["instance"], o["exact"], o["count"]) for o in r["outcomes"]]) for r in out]

    sequential = rows([])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        assert rows(["--scheduler", cluster.scheduler_address]) == sequential  # bit for bit apart from seconds


def test_a_scheduler_that_does_not_answer_is_a_clear_error_within_the_timeout(capsys):
    import time

    pytest.importorskip("distributed")
    t = time.perf_counter()
    assert cli.main(["verify", "kkg", "--quick", "--quiet", "--scheduler", "tcp://127.0.0.1:9",
                     "--scheduler-timeout", "2"]) == 2
    assert time.perf_counter() - t < 30
    err = capsys.readouterr().err
    assert "no Dask scheduler answers at 'tcp://127.0.0.1:9' within 2 s" in err and err.count("\n") == 1


# -- budgets, reports, plots --------------------------------------------------------------


def test_budgets_parse_and_size_the_sweeps():
    from exact.verify.budget import parse_budget

    assert parse_budget("full") == "full" and parse_budget("30") == 30.0
    for bad in ("0", "-3", "nan", "inf", "fast", ""):
        with pytest.raises(ValueError, match="budget: expected quick, standard, full or a positive number"):
            parse_budget(bad)
    sizes = {b: sum(len(c.instances) for c in claims(budget=b)) for b in ("quick", "standard", "full")}
    assert sizes["quick"] < sizes["standard"] < sizes["full"]
    for b in ("quick", "standard", "full"):  # instance names are unique per claim: reproducers rely on it
        for c in claims(budget=b):
            names = [i.name for i in c.instances]
            assert len(set(names)) == len(names), (b, c.name)
        assert [c.name for c in claims(budget=b)] == [c.name for c in claims()]  # the same claims at every budget


@pytest.mark.parametrize("argv, words", [
    (["--budget", "huge"], "budget: expected quick, standard, full or a positive number of seconds, got 'huge'"),
    (["--quick", "--budget", "full"], "--quick is --budget quick; it contradicts --budget full"),
])
def test_verify_bad_budget_is_one_line_exit_2(capsys, argv, words):
    assert cli.main(["verify", "lemmas", "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_time_budget_spreads_over_the_claims_and_reports_what_did_not_run(capsys):
    assert cli.main(["verify", "lemmas", "kkg", "--budget", "3", "--json", "--quiet"]) == 0
    rows = _claim_rows(capsys.readouterr().out)
    full = {c.name: len(c.instances) for th in ("lemmas", "kkg") for c in claims((th,), budget="full")}
    assert [r["claim"] for r in rows] == list(full)
    for r in rows:
        if r["skipped"]:
            assert r["skipped"] == "no instance started within the time budget" and not r["holds"]
        else:
            assert r["holds"] and r["instances"] + r["unrun"] == full[r["claim"]]
    assert any(not r["skipped"] for r in rows)  # something ran ...
    assert any(r["unrun"] or r["skipped"] for r in rows)  # ... and the full sweep (minutes) was cut short


def test_report_and_plots_are_written_and_valid(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    report, plots = tmp_path / "report.md", tmp_path / "plots"
    argv = ["verify", "phase transition", "paper, uniform", "FFN: exact", "canonical form exactly", "--budget", "quick",
            "--quiet", "--report", str(report), "--plots", str(plots)]
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    text = report.read_text()
    for title in ("## Theorem 5.1", "## Theorem 6.1", "## [KKG26]", "## Exact ReLU FFN", "## Failures"):
        assert title in text
    assert "| claim | instances | exact | count | queries / formula | seconds | status |" in text
    row = next(line for line in text.splitlines() if line.startswith("| KKG26: canonical form exactly"))
    asked, _, formula = row.split(" | ")[4].partition(" / ")
    assert asked == formula and int(asked) > 0  # the paper plan asks exactly its count
    for name in ("phase.png", "noise.png", "ffn.png", "multihead.png"):
        data = (plots / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name
        assert f"plot: {plots / name}" in err


def test_plots_without_matplotlib_fail_before_any_work(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["verify", "lemmas", "--quiet", "--plots", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "pip install 'exact-attention[plot]'" in captured.err and "Logit" not in captured.out


def test_a_failed_instance_in_the_report_has_its_reproducer(monkeypatch, tmp_path, capsys):
    bad = [Claim("fails on the second", (Instance("a", "a"), Instance("b", "b")),
                 lambda name: Verdict(name == "a", True, "wrong"))]
    monkeypatch.setattr("exact.verify.claims", lambda theorems, **k: bad if "kkg" in theorems else [])
    assert cli.main(["verify", "kkg", "--budget", "quick", "--quiet", "--report", str(tmp_path / "r.md")]) == 1
    text = (tmp_path / "r.md").read_text()
    assert "- **fails on the second** / b: wrong" in text
    assert "reproduce: `exact-attention verify --task kkg:0:1 --budget quick`" in text


def test_a_time_budget_that_runs_nothing_is_not_a_pass(capsys):
    assert cli.main(["verify", "lemmas", "--budget", "1e-9", "--quiet"]) == 1
    assert "no instance started within the time budget; nothing was checked" in capsys.readouterr().err


def test_resume_refuses_rows_of_another_sweep_or_contradictory_rows(tmp_path, capsys):
    rows = tmp_path / "rows.jsonl"
    assert cli.main(["verify", "Lemma A.1", "--budget", "quick", "--json", "--quiet"]) == 0
    rows.write_text(capsys.readouterr().out)
    assert cli.main(["verify", "Lemma A.1", "--budget", "full", "--quiet", "--resume", str(rows)]) == 2
    assert "this run is budget 'full'" in capsys.readouterr().err
    forged = [json.loads(line) for line in rows.read_text().splitlines()]
    for row in forged:
        if row["row"] == "claim":
            row["outcomes"][0]["exact"] = False
    rows.write_text("\n".join(json.dumps(r) for r in forged) + "\n")
    assert cli.main(["verify", "Lemma A.1", "--budget", "quick", "--quiet", "--resume", str(rows)]) == 2
    assert "totals contradict its outcomes" in capsys.readouterr().err


def test_report_and_plots_paths_are_checked_before_the_sweep(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert cli.main(["verify", "lemmas", "--quiet", "--report", str(tmp_path / "no" / "r.md")]) == 2
    assert "--report: expected a file in an existing directory" in capsys.readouterr().err
    pytest.importorskip("matplotlib")
    assert cli.main(["verify", "lemmas", "--quiet", "--plots", str(tmp_path / "f")]) == 2
    assert "--plots:" in capsys.readouterr().err
