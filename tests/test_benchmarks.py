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
