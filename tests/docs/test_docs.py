"""The documentation stays true: every relative link resolves (file and heading), and the Python examples of
docs/api.md run as written."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.paths import ROOT

PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("experiments/*.md"),
                *ROOT.glob("results/*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    headings = {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.MULTILINE)}
    return headings | set(re.findall(r'<a (?:id|name)="([^"]+)"', text))  # explicit anchors (docs/proofs.md)


def links(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    for match in LINK.finditer(text):
        target = match.group(1) or match.group(2)
        if not re.match(r"[a-z]+:", target):
            yield target


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    for target in links(page):
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        assert destination.exists(), f"{page.name}: {target} does not exist"
        if anchor and destination.suffix == ".md":
            assert anchor in anchors(destination), f"{page.name}: no heading #{anchor} in {destination.name}"


def test_every_docs_page_cited_in_the_code_exists():
    cited = set()
    for source in [*ROOT.glob("infoflow_smt/*.py"), *ROOT.glob("proofs/*.py"), *ROOT.glob("experiments/*.py")]:
        cited |= set(re.findall(r"docs/([\w-]+\.md)", source.read_text()))
    assert cited and all((ROOT / "docs" / name).exists() for name in cited), cited


def test_api_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "api.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        exec(compile(block, "docs/api.md", "exec"), {})  # noqa: S102 - the project's own example
    assert "Status.FEASIBLE 1" in capsys.readouterr().out
