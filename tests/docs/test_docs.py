"""The documentation stays true: every relative link resolves (file and heading), every path the pages and
the code's docstrings and comments cite exists (or says it is outside the repository), and the Python
examples of docs/api.md run as written."""
from __future__ import annotations

import functools
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
    for source in (path for folder in ("infoflow_smt", "proofs", "experiments") for path in (ROOT / folder).rglob("*.py")):
        cited |= set(re.findall(r"docs/([\w-]+\.md)", source.read_text()))
    assert cited and all((ROOT / "docs" / name).exists() for name in cited), cited


# A cited path: one under a top-level folder of the repository (a folder too: ``results/gpu_h200/``), any
# ``folder/name.ext``, or a bare ``name.md`` / ``name.py``; not the tail of a longer path, a URL or ``~/...``.
_FOLDERS = r"(?:docs|results|tests|benchmarks|experiments|proofs|infoflow_smt|shared)/[\w./*-]*"
_NESTED = r"(?:[\w-]+/)+[\w-]+\.(?:md|py|sh|txt|toml|sqlite|png|json|jsonl|csv|smt2)\b"
_BARE = r"[\w-]+\.(?:md|py)\b"
CITED_PATH = re.compile(rf"(?<![\w./~$:-])({_FOLDERS}|{_NESTED}|{_BARE})")
# The one way to cite a file that is not in the repository (the project's design notes and paper summaries
# live beside it, in shared/): its full path under shared/, and say so right after it.
OUTSIDE = "outside this repository"
CITING = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), ROOT / "experiments" / "README.md",
                 *(path for folder in ("infoflow_smt", "proofs", "experiments", "benchmarks")
                   for path in (ROOT / folder).rglob("*.py"))])


@functools.cache
def repository_names() -> frozenset[str]:
    """Every file and folder name in the repository, for bare citations (``trees.py``, ``model.md``)."""
    return frozenset(p.name for p in ROOT.rglob("*") if not any(part.startswith(".") or part == "__pycache__"
                                                                for part in p.relative_to(ROOT).parts))


def dangling(text: str, folder: Path, names: frozenset[str]) -> list[str]:
    """``line: path`` for each path cited in ``text`` that is neither in the repository (from its root or
    from ``folder``) nor marked as outside it."""
    found = []
    for match in CITED_PATH.finditer(text):
        cited = match.group(1).rstrip(".")
        if "*" in cited:  # a pattern (``results/confirm_*.txt``): something must match it
            exists = any(ROOT.glob(cited)) or any(folder.glob(cited))
        elif "/" in cited:
            exists = (ROOT / cited).exists() or (folder / cited).exists()
        else:
            exists = cited in names
        marked = cited.startswith("shared/") and OUTSIDE in " ".join(
            text[match.end():match.end() + 80].replace("#", " ").split())
        if not (exists or marked):
            found.append(f"line {text.count(chr(10), 0, match.start()) + 1}: {cited}")
    return found


@pytest.mark.parametrize("source", CITING, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_cited_exists(source):
    problems = dangling(source.read_text(), source.parent, repository_names())
    assert not problems, f"{source.relative_to(ROOT)} cites paths that do not exist: {problems}"


def test_the_path_check_finds_what_it_should():
    names = repository_names()
    assert {"model.md", "trees.py", "test_docs.py"} <= names
    text = ("see docs/model.md, tests/support/, results/, model.md and trees.py; https://x.org/docs/gone.md,\n"
            "~/.cache/gone.py and $HOME/gone.md are not the repository's; the notes (shared/design/model.md,\n"
            "outside this repository); docs/design/model.md, style.md, reference/papers.md, results/gone/.\n"
            "A bare name is not marked by a path beside it: calibration.md (shared/x/calibration.md, outside\n"
            "this repository); shared/design/gone.md is not marked either.")
    assert dangling(text, ROOT, names) == ["line 3: docs/design/model.md", "line 3: style.md",
                                           "line 3: reference/papers.md", "line 3: results/gone/",
                                           "line 4: calibration.md", "line 5: shared/design/gone.md"]
    assert len(CITING) > 40


def test_api_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "api.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", text, re.DOTALL):
        exec(compile(block, "docs/api.md", "exec"), {})  # noqa: S102 - the project's own example
    assert "Status.FEASIBLE 1" in capsys.readouterr().out
