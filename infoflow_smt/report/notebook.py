"""What an answer shows in Jupyter: an HTML summary with its picture inline (``_repr_html_`` of ``Verdict``,
``Frontier`` and ``Sweep`` call these).

Pictures are drawn by infoflow_smt/report/plots.py into a temporary file and inlined as base64 PNG, so a
notebook saved with its outputs carries them; matplotlib is imported only when a picture is drawn. Each view
names the question's setting (the causal mask, the readout at the last position, the rank rule:
``report.setting``) and, where selections read each other's winners, the target by its names with their
definitions. Every text that comes from the answer (targets as the user wrote them, reasons, names) is escaped:
one line of printable text (``words.printable``: no control character or escape sequence), then HTML-escaped.
"""
from __future__ import annotations

import base64
import html
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.node_text import named_target
from infoflow_smt.report import setting
from infoflow_smt.report.explain import describe_program
from infoflow_smt.words import printable

STATUS_COLOURS = {"feasible": "#1b7837", "infeasible": "#b2182b", "unknown": "#777777"}


def picture(draw: Callable[[Path], object]) -> str:
    """``draw(path)`` writes a PNG; the ``<img>`` that shows it inline, or "" when there is nothing to draw."""
    with tempfile.TemporaryDirectory(prefix="infoflow_smt-") as folder:
        path = Path(folder) / "picture.png"
        try:
            draw(path)
        except InvalidSpecError:   # no program to draw, no uniform cells: the summary says what there is
            return ""
        data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img style="max-width:100%" src="data:image/png;base64,{data}"/>'


def status(value: str) -> str:
    return f'<b style="color:{STATUS_COLOURS.get(value, "#000")}">{html.escape(value.upper())}</b>'


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table of escaped cells (a cell already marked up is passed as ``Markup``)."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{_cell(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


class Markup(str):
    """Text that is already HTML (a status badge): ``table`` leaves it unescaped."""


def _cell(value: object) -> str:
    return value if isinstance(value, Markup) else _text(value)


def _text(value: object) -> str:
    """``value`` as HTML text: one line of printable characters, escaped."""
    return html.escape(printable(value, None))


def verdict_html(verdict) -> str:
    """A verdict: status, target, architecture, exponent, the witness (or the reasons) and its flow diagram."""
    from infoflow_smt.report.plots import plot_flow

    arch = verdict.architecture
    named = named_target(verdict.target) if hasattr(verdict.target, "normal_form") else None
    shown = named[0] if named else str(verdict.target)
    lines = [f"{status(verdict.status.value)}: <code>{html.escape(shown)}</code>"]
    lines += [f"{'where' if i == 0 else '&nbsp;' * 5} <code>{_text(f'{n} = {t}')}</code>"
              + (" (each input position for itself)" if hosted else "") for i, (n, t, hosted) in enumerate(named[1])
              ] if named else []
    on = setting.words(arch)
    lines.append(f"architecture: {html.escape(arch.shape)}, E={html.escape(str(arch.embed_dim))}, "
                 f"d={arch.input_dim}{', positional encoding' if arch.positional else ''}"
                 + "".join(f", <b>{html.escape(w)}</b>" for w in on))
    if verdict.status.value != "unknown":
        at = "" if verdict.seq_len is None else f" at T = {verdict.seq_len}"
        lines.append(f"best cost exponent{at}: <code>{html.escape(str(verdict.exponent))}</code>")
        if verdict.one_length is not None:
            lines.append(f"at one length: {html.escape(verdict.one_length)}")
    parts = ["<br/>".join(lines)]
    program = verdict.witness if verdict.witness is not None else verdict.best_program
    if program is not None:
        title = "witness, replayed" if verdict.witness is not None else "cheapest program (not efficient), replayed"
        parts.append(f"<p>{title}:</p>" + _items(describe_program(program, verdict.target)))
    if verdict.explanation:
        parts.append(f"<p>{'why' if verdict.status.value != 'feasible' else 'note'}:</p>"
                     + _items(str(r) for r in verdict.explanation))
    if verdict.reason_unknown:
        parts.append(f"<p>note: {html.escape(verdict.reason_unknown)}</p>")
    parts.append(picture(lambda path: plot_flow(verdict, path)))
    return "<div>" + "".join(parts) + "</div>"


def frontier_html(frontier) -> str:
    """A frontier: its sentence, the bounded grid (frontier cells outlined) and the reasons it is general."""
    head = html.escape(str(frontier).splitlines()[0])
    layers = sorted({L for L, _ in frontier.grid})
    heads = sorted({h for _, h in frontier.grid})
    on_frontier = set(frontier.shapes)
    rows = []
    for L in layers:
        cells = []
        for h in heads:
            value = frontier.grid[(L, h)]
            border = "border:2px solid black;" if (L, h) in on_frontier else ""
            cells.append(f"<td style='{border}background:{_light(value)}'>{_ANSWER.get(value, '?')}"
                         "</td>")
        rows.append(f"<tr><th>{L}</th>{''.join(cells)}</tr>")
    grid = (f"<table><tr><th>L \\ h</th>{''.join(f'<th>{h}</th>' for h in heads)}</tr>{''.join(rows)}</table>"
            "<p>efficient? on L layers of h heads (outlined: the frontier; beyond the grid every cell takes the "
            "verdict of its edge)</p>")
    return f"<div><p>{head}</p>{grid}{_items(frontier.explanation)}</div>"


def sweep_html(sweep) -> str:
    """A sweep: the count of cells, a phase diagram per target, and every cell."""
    from infoflow_smt.report.plots import phase_diagram

    on = setting.line(c.architecture for c in sweep.cells)
    summary = (f"{len(sweep.cells)} cells: {sweep.decided} decided, {sweep.inferred} inferred by monotonicity, "
               f"{sweep.cached} from the cache" + (f"; {on}" if on else ""))
    pictures = "".join(picture(lambda path, t=t: phase_diagram(sweep, path, t))
                       for t in dict.fromkeys(c.target for c in sweep.cells))
    rows = [(c.target, ",".join(map(str, c.architecture.heads)), setting.line([c.architecture]) or "-",
             Markup(status(c.status.value)), c.exponent or "-", c.bound,
             "inferred" if c.inferred else "cached" if c.cached else "decided") for c in sweep.cells]
    cells = table(("target", "heads", "setting", "verdict", "exponent", "exponent is", "how"), rows)
    return f"<div><p>{html.escape(summary)}</p>{pictures}<details><summary>cells</summary>{cells}</details></div>"


_ANSWER = {"feasible": "yes", "infeasible": "no"}   # else "?": a cell the solver could not decide


def _light(value: str) -> str:
    return {"feasible": "#d9f0d3", "infeasible": "#f4cfc9"}.get(value, "#eeeeee")


def _items(texts: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{_text(t)}</li>" for t in texts) + "</ul>"
