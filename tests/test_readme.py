"""The README's promises: its first Python example runs as written."""

import importlib.util
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    runnable = [b for b in blocks if "my_model_fn" not in b]  # that one shows a user's own function
    assert len(runnable) >= 3, "README lost its python examples"
    if importlib.util.find_spec("torch") is None:  # the torch example needs the torch extra
        runnable = [b for b in runnable if "import torch" not in b]
    for block in runnable:
        exec(compile(block, "README.md", "exec"), {})  # our own README, not user input


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    assert "pip install . && exact-attention verify" in text
    assert 'pip install ".[test,cs,torch,cluster,plot]" && python -m pytest -q' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test,cs,torch,cluster,plot]"' in ci and "python -m pytest -q" in ci


def test_readme_counterexample_transcript_is_current(capsys):
    from exact.cli import main

    text = README.read_text()
    command = "$ exact-attention counterexample --d 2 --heads 2 --seed 1 --kind split"
    start = text.index("    " + command) + len("    " + command) + 1
    block = []
    for line in text[start:].splitlines():
        if line and not line.startswith("    "):
            break
        block.append(line[4:])
    while block and not block[-1]:
        block.pop()
    assert main(["counterexample", "--d", "2", "--heads", "2", "--seed", "1", "--kind", "split"]) == 0
    assert capsys.readouterr().out.rstrip("\n").splitlines() == block
