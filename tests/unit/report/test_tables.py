"""Tables in every format: csv reads back through the csv module, markdown has one row per line under its
header and rule, latex is a tabular with one escaped row per line, and text is never cut without a terminal."""
from __future__ import annotations

import csv
import io
import re

import pytest

from infoflow_smt.report.tables import Table, TableFormat, csv_cell, latex_escape, terminal_width

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
    assert [re.sub(r"\\(.)", r"\1", c.replace("\0", "|")) for c in cells] == list(HOSTILE.rows[0])


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


# ---- names a user wrote: one line of printable text, then escaped for the format ---------------------------------
# a target's spelling with a comment: a newline, LaTeX that runs a shell, a terminal escape sequence, a formula
SPEC = "max(f1(x[t]) for t in T)  # a note\n\\immediate\\write18{rm -rf ~}\n\\input{/etc/passwd} \x1b[2J\x07 $\\frac{$"
NAMED = Table.of(["target", "L"], [[SPEC, 1], ["=HYPERLINK(\"http://x\")", 2], ["-1", 3]], title=f"{SPEC}: efficient?")


def test_latex_keeps_a_multi_line_title_inside_its_comment():
    lines = NAMED.render("latex").splitlines()
    assert lines[0].startswith("% ") and lines[1] == r"\begin{tabular}{ll}"
    body = "\n".join(lines[1:])
    # outside the comment no control sequence but the tabular's own and the escapes survives
    assert set(re.findall(r"\\[a-zA-Z0-9]+", body)) == {
        r"\begin", r"\hline", r"\end", r"\textbackslash", r"\textasciitilde"}
    assert "\x1b" not in NAMED.render("latex") and "write18" in lines[5]


def test_csv_cells_are_text_a_spreadsheet_does_not_run():
    rows = list(csv.reader(io.StringIO(NAMED.render("csv"))))
    assert len(rows) == 4 and rows[2][0] == "'=HYPERLINK(\"http://x\")" and rows[3][0] == "-1"
    assert "\x1b" not in NAMED.render("csv") and "\n" not in rows[1][0]
    assert csv_cell("+max(x[t] for t in T)") == "'+max(x[t] for t in T)" and csv_cell("@a") == "'@a"


def test_markdown_and_text_hold_no_control_character():
    for form in ("markdown", "text"):
        text = NAMED.render(form, None)
        assert not any(ord(c) < 32 and c != "\n" for c in text), form
        assert len(text.splitlines()) == {"markdown": 7, "text": 6}[form], text
    assert "\\x1b[2J" in NAMED.render("text", None)   # shown as the characters it is, not obeyed
