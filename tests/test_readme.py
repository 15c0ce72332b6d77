"""The README's promises: its first Python example runs as written."""

import importlib.util
import re
from pathlib import Path

import pytest

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


def _block_after(text: str, command: str) -> list[str]:
    start = text.index("    " + command) + len("    " + command) + 1
    block = []
    for line in text[start:].splitlines():
        if not line.startswith("    ") or line.startswith("    $"):
            break
        block.append(line[4:])
    return block


def test_readme_learn_transcript_is_what_a_user_sees(tmp_path, capsys, monkeypatch):
    """The transcript of ``learn single-head`` is the command's output, but for the seconds line."""
    from exact.cli import main

    monkeypatch.chdir(tmp_path)
    text = README.read_text()
    assert main(["random", "single-head", "--d", "2", "--seed", "1", "--output", "head.json"]) == 0
    capsys.readouterr()
    assert main(["learn", "single-head", "--model", "head.json"]) == 0
    got = capsys.readouterr().out.rstrip("\n").splitlines()
    want = _block_after(text, "$ exact-attention learn single-head --model head.json")
    assert [line for line in got if not line.startswith("seconds")] == [
        line for line in want if not line.startswith("seconds")]


@pytest.mark.parametrize("d", [2, 3])
def test_readme_noisy_and_threshold_commands_run_on_the_readme_models(tmp_path, capsys, monkeypatch, d):
    """The noisy examples' w-bound really bounds ‖W‖_F of the head.json files the README generates."""
    import shlex

    from exact.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["random", "single-head", "--d", str(d), "--seed", "1", "--output", "head.json"]) == 0
    lines = [line.strip() for line in README.read_text().splitlines()
             if line.strip().startswith("exact-attention learn single-head --model head.json --")]
    assert len(lines) >= 2
    for line in lines:
        argv = [a for a in shlex.split(line)[1:] if not a.startswith("[")]
        argv = argv[: next((i for i, a in enumerate(argv) if a.endswith("]")), len(argv))]
        capsys.readouterr()
        assert main(argv + ["--quiet"]) == 0, (line, capsys.readouterr())
