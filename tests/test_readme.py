"""The README's promises: its first Python example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_api_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    exec(compile(blocks[0], "README.md", "exec"), {})  # our own README, not user input


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    assert "pip install . && exact-attention verify" in text
    assert 'pip install ".[test,cs]" && python -m pytest -q' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test,cs]"' in ci and "python -m pytest -q" in ci
