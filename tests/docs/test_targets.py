"""Every target text the documentation shows parses: what a page offers as a target is one the tool takes.

A target text is an inline code span, or a quoted string in a code block, that reads a token (``x[``). A
fragment (``x[s] * x[t]``, ``x[t-1]``) has index variables no reduction binds; it is parsed inside a
reduction over them, so a fragment of a construct the parser refuses (a comparison) fails here too.
"""
from __future__ import annotations

import re

import pytest
from support.paths import ROOT

import infoflow_smt as ifs

PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("experiments/*.md")])
BLOCK = re.compile(r"```.*?```", re.DOTALL)
SPAN = re.compile(r"`([^`\n]+)`")
QUOTED = re.compile(r"\"([^\"\n]*(?<!\w)x\[[^\"\n]*)\"|'([^'\n]*(?<!\w)x\[[^'\n]*)'")
READS = re.compile(r"(?<!\w)x\[")
UNBOUND = re.compile(r"unbound index variable '(\w+)'")


def target_texts(text: str) -> list[str]:
    blocks = BLOCK.findall(text)
    found = [s for s in SPAN.findall(BLOCK.sub("", text)) if READS.search(s)]
    found += [a or b for block in blocks for a, b in QUOTED.findall(block)]
    return [t.strip().strip("\"'") for t in found]


def problem(text: str) -> str | None:
    """Why ``text`` (a target or a fragment of one) does not parse, or None."""
    try:
        ifs.parse_target(text)
        return None
    except ifs.InvalidSpecError as err:
        free = sorted({m.group(1) for p in err.problems for m in [UNBOUND.search(p.message)] if m})
        if not free or not all(UNBOUND.search(p.message) for p in err.problems):  # more than unbound indices
            return str(err)
    wrapped = f"max({text} {' '.join(f'for {v} in T' for v in free)})"
    try:
        ifs.parse_target(wrapped)
        return None
    except ifs.InvalidSpecError as err:
        return f"{err} (as the fragment of {wrapped})"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_target_text_in_the_docs_parses(page):
    texts = target_texts(page.read_text())
    problems = [f"{t}: {why}" for t in dict.fromkeys(texts) for why in [problem(t)] if why]
    assert not problems, f"{page.relative_to(ROOT)} shows target texts the parser refuses: {problems}"


def test_the_notebook_and_the_claims_file_targets_parse():
    import nbformat

    from infoflow_smt import claims
    notebook = nbformat.read(ROOT / "docs" / "tutorial.ipynb", as_version=4)
    texts = [t for cell in notebook.cells
             for t in target_texts(cell.source if cell.cell_type == "markdown" else f"```\n{cell.source}\n```")]
    assert texts and not [t for t in texts if problem(t)]
    assert claims.load(ROOT / "docs" / "claims.toml")   # every target of the file parses, or load raises


def test_the_check_finds_what_it_should():
    text = ("Read `x[s] * x[t]` and `x[1]`, not `x[t] > 0` nor `f1(x[t]) > 0`.\n"
            "```python\nifs.parse_target(\"max(f1(x[t]) for t in T)\")\nnote = 'max(x[t] if x[t] else 0 for t in T)'\n```")
    texts = target_texts(text)
    assert texts == ["x[s] * x[t]", "x[1]", "x[t] > 0", "f1(x[t]) > 0", "max(f1(x[t]) for t in T)",
                     "max(x[t] if x[t] else 0 for t in T)"]
    assert [problem(t) is None for t in texts] == [True, True, False, False, True, False]
    assert "comparison" in problem("x[t] > 0")
