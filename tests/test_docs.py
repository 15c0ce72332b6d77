"""The documentation's promises: every Python example in docs/ runs as written, and the
pages reference nothing outside the repository."""

import re
from pathlib import Path

import pytest

from exact import registry

DOCS = Path(__file__).resolve().parents[1] / "docs"
PAGES = sorted(DOCS.glob("*.md"))


def test_there_are_pages():
    names = {p.name for p in PAGES}
    assert {"README.md", "single-head.md", "low-rank.md", "exactness.md", "adding-a-learner.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_examples_run(page):
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    namespace: dict = {}  # one page is one session: later blocks use what earlier ones define
    try:
        for block in blocks:
            exec(compile(block, str(page.name), "exec"), namespace)  # our own docs, not user input
    finally:
        registry.unregister("diagonal-head")  # the worked example registers a learner


def test_the_plug_in_example_is_the_file_the_page_shows():
    page = (DOCS / "adding-a-learner.md").read_text()
    module = (DOCS / "examples" / "diagonal-head" / "exact_diagonal.py").read_text()
    assert "```python\n" + module + "```" in page
    assert 'diagonal-head = "exact_diagonal:SPEC"' in (DOCS / "examples" / "diagonal-head" / "pyproject.toml").read_text()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_links_stay_inside_the_repository(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith(("http://", "https://", "#")):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.is_relative_to(DOCS.parent), target
        assert path.exists(), target
    assert "SPEC.md" not in text and "SPEC §" not in text and "DESIGN.md" not in text and "/work/" not in text
