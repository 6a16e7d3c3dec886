"""Tables in every format: csv reads back through the csv module, markdown has one row per line under its
header and rule, latex is a tabular with one escaped row per line, and text is never cut without a terminal."""
from __future__ import annotations

import csv
import io

import pytest

from infoflow_smt.report.tables import Table, TableFormat, latex_escape, terminal_width

HOSTILE = Table.of(["target", "L", "h"], [["x[t] | y_1, 50% {a}", 1, 2], ['say "no", & ~^', 3, 16]],
                   title="a title_with | marks")


def test_csv_reads_back_cell_for_cell():
    rows = list(csv.reader(io.StringIO(HOSTILE.render("csv"))))
    assert rows == [list(HOSTILE.headers), *map(list, HOSTILE.rows)]


def test_markdown_is_a_pipe_table_with_escaped_bars():
    lines = HOSTILE.render("markdown").splitlines()
    assert lines[0].startswith("**") and lines[1] == ""
    header, rule, *body = lines[2:]
    assert header == "| target | L | h |" and rule == "|---|---|---|"
    assert len(body) == 2 and all(line.startswith("| ") and line.endswith(" |") for line in body)
    cells = [c.strip() for c in body[0][2:-2].replace("\\|", "\0").split(" | ")]
    assert [c.replace("\0", "|") for c in cells] == list(HOSTILE.rows[0])


def test_latex_is_a_tabular_with_escaped_cells():
    text = HOSTILE.render(TableFormat.LATEX)
    lines = text.splitlines()
    assert lines[0] == "% a title_with | marks"
    assert lines[1] == r"\begin{tabular}{lll}" and lines[-1] == r"\end{tabular}"
    rows = [line for line in lines if line.endswith(r"\\")]
    assert len(rows) == 3 and rows[1] == r"x[t] | y\_1, 50\% \{a\} & 1 & 2 \\"
    assert all(line.count(" & ") == 2 for line in rows)


@pytest.mark.parametrize(("text", "typeset"), [("a_b", r"a\_b"), ("x^2", r"x\textasciicircum{}2"),
                                               ("{}", r"\{\}"), ("\\", r"\textbackslash{}")])
def test_latex_escape(text, typeset):
    assert latex_escape(text) == typeset


def test_a_wide_text_table_without_a_terminal_is_whole():
    heads = range(1, 17)
    table = Table.of(["L \\ h", *heads], [[L, *(f"no >=T/16-1*{h}" for h in heads)] for L in (1, 2)],
                     title="a long title " * 20)
    text = table.render("text", terminal_width(io.StringIO()))
    lines = text.splitlines()
    assert lines[0] == table.title.rstrip() and "..." not in text and "…" not in text
    assert all(line.split()[0] in {"L", "1", "2"} for line in lines[1:] if line and line[0] != "─")
    assert all(f"no >=T/16-1*{h}" in lines[-1] for h in heads)


def test_on_a_narrow_terminal_text_wraps_instead():
    table = Table.of(["L", "what"], [[1, "word " * 40]])
    assert max(map(len, table.render("text", 40).splitlines())) <= 40
