"""Tables as text a person reads, or as CSV, Markdown or LaTeX a paper or a spreadsheet takes whole.

A table is data (headers, rows, a title); each format is one short function. The text form is drawn by rich
at the terminal's width on a terminal, and at the table's own width anywhere else: a table written to a file
or a pipe is never cut (rich shortens cells to "..." when its console is narrower than the table).

Cells and titles come from users (a target's spelling, comments and all): each is first made one line of
printable text (``words.printable``: no newline ends a LaTeX comment or a Markdown row, no escape sequence
reaches a terminal), then escaped for its format: LaTeX's special characters, Markdown's, and in CSV a leading
``= + - @`` that a spreadsheet would read as a formula (``'`` before it, as OWASP advises; numbers stay).
"""
from __future__ import annotations

import csv
import io
import shutil
from dataclasses import dataclass
from enum import Enum
from typing import TextIO

from infoflow_smt.words import printable


class TableFormat(str, Enum):
    """How a table is written: ``text`` for people, the others for papers and spreadsheets."""

    TEXT = "text"
    CSV = "csv"
    MARKDOWN = "markdown"
    LATEX = "latex"


@dataclass(frozen=True)
class Table:
    """Headers, rows of cells (already text) and an optional title (a caption in LaTeX, a comment elsewhere)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    title: str = ""
    prose: bool = False     # the last column is sentences: in a file it wraps at 120 columns like a page

    def __post_init__(self) -> None:   # every cell and the title one line of printable text (module docstring)
        object.__setattr__(self, "headers", tuple(map(_line, self.headers)))
        object.__setattr__(self, "rows", tuple(tuple(map(_line, row)) for row in self.rows))
        object.__setattr__(self, "title", _line(self.title))

    @classmethod
    def of(cls, headers, rows, title: str = "", prose: bool = False) -> Table:
        return cls(tuple(headers), tuple(tuple(row) for row in rows), title, prose)

    def render(self, form: TableFormat | str = TableFormat.TEXT, terminal_width: int | None = None) -> str:
        """The table in ``form``; ``terminal_width`` is the width text may wrap at (None: never wrap).

        >>> print(Table.of(["L", "h"], [[1, 2]]).render("csv"), end="")
        L,h
        1,2
        """
        writers = {TableFormat.TEXT: lambda t: _text(t, terminal_width), TableFormat.CSV: _csv,
                   TableFormat.MARKDOWN: _markdown, TableFormat.LATEX: _latex}
        return writers[TableFormat(form)](self)


def _line(value) -> str:
    return printable(value, None)


def terminal_width(stream: TextIO) -> int | None:
    """The width text tables wrap at: the terminal's, or None (whole lines) in a file or a pipe."""
    isatty = getattr(stream, "isatty", None)
    return shutil.get_terminal_size((120, 24)).columns if isatty and isatty() else None


def _text(table: Table, width: int | None) -> str:
    from rich import box
    from rich.console import Console
    from rich.table import Table as RichTable
    from rich.text import Text
    drawn = RichTable(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)
    for i, header in enumerate(table.headers):   # the last column wraps; the others keep their cells whole
        drawn.add_column(header, no_wrap=i < len(table.headers) - 1)
    for row in table.rows:
        drawn.add_row(*(Text(cell) for cell in row))   # Text: brackets in x[t] are not rich markup
    console = Console(file=io.StringIO(), width=width or _whole_width(table), highlight=False, markup=False,
                      emoji=False)
    with console.capture() as captured:
        console.print(drawn)
    # the title is a line of its own: rich would centre or wrap it to the table's width
    lines = [table.title.rstrip()] * bool(table.title) + [line.rstrip() for line in captured.get().splitlines()]
    return "\n".join(lines) + "\n"


def _whole_width(table: Table) -> int:
    """No terminal: wide enough for every cell, so nothing is shortened to "..." (a prose column still wraps)."""
    widths = [max([len(h), *(len(r[i]) for r in table.rows)]) + 2 for i, h in enumerate(table.headers)]
    if table.prose:
        return max(PAGE, sum(widths[:-1]) + 20)
    return max(sum(widths), 20)


PAGE = 120   # the width a prose column wraps at in a file


def _csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(map(csv_cell, table.headers))
    writer.writerows(map(csv_cell, row) for row in table.rows)
    return out.getvalue()


def csv_cell(text: str) -> str:
    """A cell a spreadsheet shows as text: one that starts like a formula (``=``, ``+``, ``-``, ``@``) and is
    not a number gets a ``'`` before it.

    >>> csv_cell("=HYPERLINK(1)"), csv_cell("-1"), csv_cell("T/8 - 1")
    ("'=HYPERLINK(1)", '-1', 'T/8 - 1')
    """
    if text[:1] in ("=", "+", "-", "@"):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text


def _markdown(table: Table) -> str:
    def row(cells) -> str:
        return "| " + " | ".join(map(_markdown_escape, cells)) + " |"
    lines = [f"**{_markdown_escape(table.title)}**", ""] if table.title else []
    lines += [row(table.headers), "|" + "|".join("---" for _ in table.headers) + "|"]
    lines += [row(r) for r in table.rows]
    return "\n".join(lines) + "\n"


def _markdown_escape(text: str) -> str:
    return "".join("\\" + c if c in "\\`*_[]<>|" else c for c in text)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}"}


def latex_escape(text: str) -> str:
    """Text as LaTeX typesets it literally (target texts hold _, ^, { and })."""
    return "".join(_LATEX_SPECIAL.get(c, c) for c in text)


def _latex(table: Table) -> str:
    # a tabular, not a table float: the paper places it and writes its own \caption (the title is a comment,
    # one line: Table.of made it so, and nothing after a newline could be read as LaTeX)
    lines = [f"% {table.title}"] * bool(table.title)
    lines += [r"\begin{tabular}{" + "l" * len(table.headers) + "}", r"\hline",
              " & ".join(map(latex_escape, table.headers)) + r" \\", r"\hline"]
    lines += [" & ".join(map(latex_escape, row)) + r" \\" for row in table.rows]
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
