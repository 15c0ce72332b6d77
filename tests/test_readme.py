"""The README's promises: its first Python example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    runnable = [b for b in blocks if "my_model_fn" not in b]  # that one shows a user's own function
    assert len(runnable) >= 3, "README lost its python examples"
    for block in runnable:
        exec(compile(block, "README.md", "exec"), {})  # our own README, not user input


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    assert "pip install . && exact-attention verify" in text
    assert 'pip install ".[test,cs]" && python -m pytest -q' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test,cs]"' in ci and "python -m pytest -q" in ci
