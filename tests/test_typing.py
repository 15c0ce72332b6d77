"""mypy runs clean on the ``exact`` package (configuration in pyproject.toml)."""

from pathlib import Path

import pytest

api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra")

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_is_clean_on_exact():
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"), "--no-incremental", str(ROOT / "exact")])
    assert status == 0, out + err
    assert "Success: no issues found" in out
