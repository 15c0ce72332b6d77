"""The benchmark scripts still run and print well-formed JSON rows (no timing is asserted)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_single_head_benchmark_quick_prints_json_rows():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "single_head.py"), "--quick", "--no-warmup"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    kinds = {r["row"] for r in rows}
    assert {"env", "run", "ratio", "done"} <= kinds
    runs = [r for r in rows if r["row"] == "run"]
    assert {r["method"] for r in runs} == {"certified", "symbolic", "float", "peer"}
    for r in runs:
        assert r["queries"] == r["d"] ** 2 + r["d"]
        if r["method"] in ("certified", "symbolic"):
            assert r["exact"] is True and r["max_error"] == 0.0


def test_scale_benchmark_prints_runs_ratios_targets_and_one_cli_replay():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--dims", "8", "64", "--large", "--repeat", "1"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    runs = {(r["d"], r["method"]): r for r in rows if r["row"] == "run"}
    assert set(runs) == {(d, m) for d in (8, 64) for m in ("certified", "float", "low-rank")}
    for (d, method), r in runs.items():
        assert r["status"] == "ok" and r["verification_queries"] == 2
        assert r["queries"] == (d * d + d if method != "low-rank" else 2 * 8 * d - 64 + d)
        if method != "float":
            assert r["exact"] is True and r["max_error"] == 0.0
    assert [(r["exit_code"], r["full_replays"]) for r in rows if r["row"] == "cli"] == [(0, 1)]
    targets = {r["name"]: r for r in rows if r["row"] == "target"}
    # d = 8 is below the low-rank target's range; d = 64 is in it
    assert "low-rank faster than certified at d=8" not in targets and "low-rank faster than certified at d=64" in targets
    assert targets["CLI full replays per learn"]["met"] is True
    for t in targets.values():
        assert t["met"] == (t["value"] <= t["bound"])


def test_noise_benchmark_prints_validity_and_claim_rows():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "noise.py"), "--dims", "4", "--instances", "1"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    kinds = {r["row"] for r in rows}
    assert {"run", "validity", "closed_form", "adversary", "improvement", "adversary_tightness", "improvement_w8",
            "float64", "threshold"} <= kinds
    validity = [r for r in rows if r["row"] == "validity"]
    assert len(validity) == 8 and all(r["holds"] for r in validity)  # 4 noise models × 2 learners
    assert all(r["fro"] <= r["bound_fro"] for r in rows if r["row"] == "run")


def test_refine_benchmark_prints_runs_summaries_and_the_float64_rows():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "refine.py"), "--dims", "3", "--instances", "1", "--w-bounds", "8",
         "--taus", "1e-6"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    summaries = [r for r in rows if r["row"] == "summary"]
    assert len(summaries) == 2 and all(r["queries"] == {"frame": 12, "refine": 24} for r in summaries)
    assert all(r["worst_error_over_bound"] <= 1 and r["bound_ratio_min"] > 1 for r in summaries)
    for r in rows:
        if r["row"] == "run":
            assert all(r[n]["fro"] <= r[n]["bound_fro"] for n in ("frame", "refine"))
    assert {r["learner"] for r in rows if r["row"] == "float64" and r["finite"] and r["within_bound"]} == {"frame", "refine"}


def test_ffn_benchmark_prints_runs_summaries_and_transformer_rows():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ffn.py"), "--shapes", "4x4", "8x16", "--seeds", "1",
         "--transformer", "3x3"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    summaries = [r for r in rows if r["row"] == "summary"]
    assert [(r["d"], r["m"]) for r in summaries] == [(4, 4), (8, 16)]
    assert all(r["all_function_exact"] and r["within_bound"] and r["met"] for r in summaries)
    runs = [r for r in rows if r["row"] == "run"]
    assert all(r["queries"] <= r["bound"] and r["units_seen"] == r["identifiable"] for r in runs)
    (t,) = [r for r in rows if r["row"] == "transformer"]
    assert t["W_exact"] and t["ffn_exact"] and t["count_holds"]


def test_multihead_benchmark_prints_runs_ratios_and_the_median():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "multihead.py"), "--dims", "2", "3", "--heads", "2", "--seeds", "1",
         "--no-speed"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    runs = [r for r in rows if r["row"] == "run"]
    assert len(runs) == 6 and all(r["exact"] for r in runs)
    for r in runs:
        assert r["queries"] == r[f"{r['method']}_count"]
        assert r["max_length"] == 5 and r["lower_bound"] == 2 * (r["d"] ** 2 + r["d"])
    assert [r["pairs_count"] for r in runs if r["method"] == "pairs"] == [16, 33]
    ratios = [r for r in rows if r["row"] == "ratio"]
    assert [(r["d"], r["H"]) for r in ratios] == [(2, 2), (3, 2)]
    assert all(r["pairs_over_lower_queries"] == r_q for r, r_q in zip(ratios, (16 / 12, 33 / 24)))
    (median,) = [r for r in rows if r["row"] == "median"]
    assert median["instances"] == 2 and median["met"] == (median["fast_over_paper_queries"] <= 0.6)


def test_ffn_hidden_benchmark_prints_runs_and_ratios():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ffn_hidden.py"), "--networks", "4", "--widths", "2"],
        capture_output=True, text=True, check=True, timeout=300,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    runs = [r for r in rows if r["row"] == "run"]
    assert {r["way"] for r in runs} == {"plain", "interior", "m", "m+interior"}
    assert all(r["found"] + r["refused"] <= 4 for r in runs)
    assert [r["way"] for r in rows if r["row"] == "ratio"] == ["interior", "m", "m+interior"]


def test_multi_head_float_benchmark_prints_its_table_and_never_a_wrong_run():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "multi_head_float.py"), "--dims", "2", "3", "--heads", "2",
         "--seeds", "2", "--anchor-seeds", "1"],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    tables = [r for r in rows if r["row"] == "table"]
    assert [(r["d"], r["H"]) for r in tables] == [(2, 2), (3, 2)]
    assert all(r["returned"] + r["merged"] + r["refused"] + r["wrong"] == 2 and r["wrong"] == 0 for r in tables)
    for r in rows:
        if r["row"] in ("own", "anchor") and r["outcome"] == "returned":
            assert r["error"] <= r["estimate"] and r["queries"] > 0 and 0 <= r["relative"] < 1e-9
    anchors = [r for r in rows if r["row"] == "anchor"]
    assert [(r["rank"], r["d"], r["H"]) for r in anchors] == [(8, 8, 6), (2, 8, 6)]
