"""The two pages that name experiments/' modules name the tree as it is: the README's "How it works" rows for
experiments and experiments/README.md's stages. Every module they name exists, and every module of
experiments/ (its ``__init__.py`` files aside) is named; each stage's row names only modules of its folder."""
from __future__ import annotations

import re
from pathlib import Path

from support.paths import ROOT

PACKAGE = ROOT / "experiments"
STAGES = ("training", "tables", "confirmation", "compilation")
MODULE = re.compile(r"`((?:\w+/)*\w+\.py)`")


def present() -> set[str]:
    """Every module of experiments/, relative to it (``training/data.py``, ``__main__.py``)."""
    return {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if path.name != "__init__.py"}


def section(page: Path, heading: str) -> str:
    return page.read_text().split(heading, 1)[1].split("\n## ", 1)[0]


def readme_rows() -> dict[str, set[str]]:
    """The README's rows for experiments: folder (``experiments/training/``) -> the modules the row names,
    each relative to experiments/."""
    rows = {}
    for line in section(ROOT / "README.md", "## How it works").splitlines():
        folder = re.match(r"\|[^|]*\| `experiments/((?:\w+/)?)`:", line)
        if folder:
            names = MODULE.findall(line.split("|")[2])
            rows[f"experiments/{folder.group(1)}"] = {folder.group(1) + name for name in names}
    return rows


def stage_rows() -> list[tuple[str, set[str]]]:
    """experiments/README.md's stage table: (stage, the modules its row names)."""
    rows = []
    for line in section(PACKAGE / "README.md", "## Stages").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] in STAGES:
            rows.append((cells[0], set(MODULE.findall(cells[1]))))
    return rows


def test_the_readme_names_every_experiments_module_and_no_other() -> None:
    rows = readme_rows()
    assert set(rows) == {f"experiments/{stage}/" for stage in STAGES} | {"experiments/"}
    named = set().union(*rows.values())
    assert sum(map(len, rows.values())) == len(named)          # each module in one row
    assert named == present(), (f"named, not in the tree: {sorted(named - present())}; "
                                f"in the tree, not named: {sorted(present() - named)}")


def test_the_experiments_readme_stages_name_every_module_and_no_other() -> None:
    rows = stage_rows()
    assert {stage for stage, _ in rows} == set(STAGES)
    for stage, names in rows:
        assert names and all(name.startswith(f"{stage}/") for name in names), (stage, names)
    top = set(MODULE.findall(section(PACKAGE / "README.md", "## Stages").split("| stage |", 1)[0]))
    named = set().union(*(names for _, names in rows)) | top
    assert named == present(), (f"named, not in the tree: {sorted(named - present())}; "
                                f"in the tree, not named: {sorted(present() - named)}")


def test_the_stages_are_the_folders() -> None:
    assert {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").exists()} == set(STAGES)
