"""Pictures: a witness as an information-flow diagram, and a sweep as a phase diagram (PNG, SVG or PDF).

``plot_flow(verdict, path)``: positions by layers. Each column is a layer (0: the tokens as they come in),
each row a class of positions (every input position, each fixed position a head treats apart, the output
token); an arrow is one head, from where its information comes to where it lands, coloured by mode and
labelled with what it selects or gathers. The reader's last box (the output token; position T, read there
with positional encoding; every input position, for an answer at every position) is ringed and lists what
the target's value depends on. For an inefficient answer the cheapest program is drawn and each operation whose cost
grows with ``T`` is dashed: that is the step that fails to be efficient. The caption (the title) states the
target, the verdict and its exponent (typeset), the heads, ``E``, ``d``, the positional encoding, and the causal
mask, the readout at the last position and the rank rule when they are on; the arrows are not listed again under
the picture. Fixed positions that do the same work (a dense witness's workers) are one row, their arrows labelled
once with how many positions they stand for.

``phase_diagram(sweep, path)``: layers by heads, each cell coloured by its verdict, with its exponent
typeset; cells inferred by monotonicity are hatched (their exponent is a bound); each panel's title names its
setting as the flow's caption does.

matplotlib draws (Agg, no display), networkx lays the flow graph out; no system binary is needed.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import networkx as nx

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.files import as_path, plain_file, replacing
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.lang.language import fixed_to_text
from infoflow_smt.lang.node_text import named_target
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.model import cost, readout
from infoflow_smt.model.program import Mode, Offset, position_text, program_cost, where_text
from infoflow_smt.model.status import Status
from infoflow_smt.report import setting
from infoflow_smt.report.explain import describe_node
from infoflow_smt.words import printable

# Okabe and Ito's palette: told apart with every common colour-vision deficiency, and in greyscale print
COLOURS = {Mode.RETRIEVE: "#0072B2", Mode.KTH: "#E69F00", Mode.AGGREGATE: "#D55E00", Mode.POSITIONS: "#009E73",
           Mode.AVERAGE: "#CC79A7", Mode.COLLECT: "#56B4E9"}
OTHER_COLOUR = "#666666"   # a mode without a colour of its own
VERDICT_COLOURS = {"feasible": "#56B4E9", "infeasible": "#E69F00", "unknown": "#DDDDDD"}
FRONTIER_COLOUR = "#000000"
FORMATS = (".png", ".svg", ".pdf")   # the suffix chooses: PNG for screens, SVG and PDF (vector) for papers


def _path(path) -> Path:
    path = as_path(path, "plot")
    if path.suffix.lower() not in FORMATS:
        raise InvalidSpecError(f"a picture is written as PNG, SVG or PDF: {path} ends in {path.suffix or 'nothing'}",
                               "plot")
    return plain_file(path, "plot")


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _rows(program, reader="output") -> list:
    fixed = {a.where for a in program.actions if not isinstance(a.where, str)} | (
        set() if isinstance(reader, str) else {reader})
    return ["input"] + sorted(fixed, key=fixed_to_text) + ["output"]


@dataclass(frozen=True)
class Positions:
    """A row standing for fixed positions that do the same work (a dense witness: workers at positions 1..8),
    drawn once, its arrows labelled once with how many positions they stand for."""

    members: tuple[FixedIndex, ...]

    def __str__(self) -> str:
        return f"input positions {_numbers([fixed_to_text(m) for m in self.members])}"


def _grouped(program, rows: list, reader, tree) -> tuple[list, dict]:
    """``rows`` with the fixed positions whose heads do the same work (the same modes, heads and kind of
    selection or gather, layer by layer) merged into one ``Positions`` row; and each fixed position's row."""
    work: dict = {}
    for row in rows:
        if isinstance(row, FixedIndex) and row != reader:
            actions = sorted((a for a in program.actions if a.where == row), key=lambda a: (a.layer, a.head))
            work.setdefault(tuple((a.layer, a.head, _arrow_label(a, tree)) for a in actions), []).append(row)
    row_of = {row: row for row in rows}
    for members in work.values():
        if len(members) > 1:
            group = Positions(tuple(members))
            row_of.update(dict.fromkeys(members, group))
    merged = list(dict.fromkeys(row_of[row] for row in rows))
    return merged, row_of


def _numbers(items: list[str]) -> str:
    """``1, 2, 3, 4, 7`` as ``1..4, 7``: runs of whole numbers shortened."""
    out, run = [], []
    for item in items + [None]:
        if item is not None and item.isdigit() and run and int(item) == int(run[-1]) + 1:
            run.append(item)
            continue
        if run:
            out.append(run[0] if len(run) < 3 else f"{run[0]}..{run[-1]}")
            if len(run) == 2:
                out.append(run[1])
        run = [item] if item is not None and item.isdigit() else []
        if item is not None and not item.isdigit():
            out.append(item)
    return ", ".join(out)


def _reader(verdict):
    """The row the answer is read at: the output token, position T (read there with positional encoding), or
    every input position (an answer at every position)."""
    if getattr(verdict.target, "per_position", False):
        return "input"
    return FixedIndex(0, True) if readout.reads_at_last(verdict.target, verdict.architecture) else "output"


def _sources(action, row_of) -> list:
    """Where a head's information comes from (a row of the layer before), each row once."""
    op = action.op
    if op.mode not in (Mode.POSITIONS,):
        return ["input"]
    found = [("input" if isinstance(q, Offset) else row_of.get(q, "input")) for q in op.positions]
    return list(dict.fromkeys(found)) or ["input"]


def _is_verdict(value: object) -> bool:
    """A verdict of ``decide`` (verdict.py), known by its fields: that module draws its picture with
    this one, so this one does not import it."""
    return isinstance(getattr(value, "status", None), Status) and all(
        hasattr(value, name) for name in ("target", "architecture", "witness", "best_program", "reason_unknown"))


def plot_flow(verdict, path) -> Path:
    """Draw ``verdict``'s witness (or, when inefficient, its cheapest program) as an information-flow
    diagram and write it to ``path`` (``.png``, ``.svg`` or ``.pdf``).

    >>> import infoflow_smt as ifs, tempfile, os
    >>> v = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), input_dim=2))
    >>> os.path.getsize(ifs.plot_flow(v, os.path.join(tempfile.mkdtemp(), "flow.png"))) > 1000
    True
    """
    if not _is_verdict(verdict):
        raise InvalidSpecError(f"plot_flow draws an ifs.Verdict, got {type(verdict).__name__}", "plot")
    path = _path(path)
    program = verdict.witness if verdict.witness is not None else verdict.best_program
    if program is None:
        raise InvalidSpecError(f"there is no program to draw: {verdict.status.value}"
                               f"{' (' + verdict.reason_unknown + ')' if verdict.reason_unknown else ''}", "plot")
    _save(flow_figure(verdict, program), path)
    return path


def flow_figure(verdict, program):
    """The information-flow diagram of ``program`` (``verdict``'s witness or cheapest program), unsaved."""
    plt = _pyplot()
    tree = comparison_tree(verdict.target, program.order_map)
    reader = _reader(verdict)
    rows, row_of = _grouped(program, _rows(program, reader), reader, tree)
    L = program.layers
    graph = nx.DiGraph()
    for layer in range(L + 1):
        for row in rows:
            graph.add_node((layer, row), layer=layer)
    layout = {(layer, row): (layer, rows.index(row)) for layer, row in graph.nodes}   # the output token on top
    _, shares = program_cost(program, tree, verdict.architecture)
    growing = {a for a, e in shares if not cost.is_bounded(e)}
    fig, ax = plt.subplots(figsize=(3.2 + 2.4 * L, 1.6 + 1.1 * len(rows)))
    residual = [((layer - 1, row), (layer, row)) for layer in range(1, L + 1) for row in rows]
    nx.draw_networkx_edges(graph, layout, edgelist=residual, ax=ax, edge_color="#cccccc", width=1.0, arrows=False)
    nx.draw_networkx_nodes(graph, layout, ax=ax, node_size=900, node_color="#f4f4f4", edgecolors="#555555")
    legend = _arrows(ax, graph, layout, _drawn(program, row_of), row_of, tree, growing)
    nx.draw_networkx_nodes(graph, layout, nodelist=[(L, reader)], ax=ax, node_size=1300, node_color="none",
                           edgecolors="#d4a017", linewidths=3)
    for layer in range(L + 1):
        ax.text(layer, len(rows) - 0.55, "tokens in" if layer == 0 else f"after layer {layer}", ha="center",
                fontsize=8, color="#555555")
    for row in rows:
        ax.text(-0.45, rows.index(row), str(row) if isinstance(row, Positions) else where_text(row), ha="right",
                va="center", fontsize=9)
    ax.text(L + 0.35, rows.index(reader), "\n".join(textwrap.wrap("needs: " + _needs(tree), 38)[:8]), fontsize=7,
            va="center", color="#6b4e00", parse_math=False)
    for mode, colour in legend.items():
        ax.plot([], [], color=colour, linewidth=2.2, label=mode)
    if growing:
        ax.plot([], [], color="#555555", linewidth=2.2, linestyle="dashed", label="cost grows with T")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title(flow_caption(verdict), fontsize=9)
    ax.set_xlim(-2.2, L + 1.6)
    ax.set_ylim(-0.9, len(rows) - 0.3)
    ax.axis("off")
    return fig


def _drawn(program, row_of) -> list[tuple[object, object, int]]:
    """The actions drawn, each with the row it lands in and how many positions it stands for: the actions of a
    ``Positions`` row once per layer and head (they do the same work)."""
    drawn: dict = {}
    for action in sorted(program.actions, key=lambda a: (a.layer, a.head, str(a.where))):
        if action.op.mode is Mode.IDLE:
            continue
        row = row_of.get(action.where, action.where)
        key = (action.layer, action.head, row)
        if key in drawn:
            drawn[key] = (drawn[key][0], row, drawn[key][2] + 1)
        else:
            drawn[key] = (action, row, 1)
    return list(drawn.values())


def _arrows(ax, graph, layout, drawn, row_of, tree, growing) -> dict:
    """One arrow per head and source row, coloured by mode, dashed where its cost grows with T, labelled once;
    returns the legend (mode -> colour)."""
    legend = {}
    for k, (action, row, count) in enumerate(drawn):
        colour = COLOURS.get(action.op.mode, OTHER_COLOUR)
        for source in _sources(action, row_of):
            edge = ((action.layer - 1, source), (action.layer, row))
            bend = 0.15 * ((k % 3) - 1) + (0.25 if source == row else 0)
            nx.draw_networkx_edges(graph, layout, edgelist=[edge], ax=ax, edge_color=colour, width=2.2,
                                   style="dashed" if action in growing else "solid", arrowsize=16,
                                   connectionstyle=f"arc3,rad={bend}", node_size=900)
            (x0, y0), (x1, y1) = layout[edge[0]], layout[edge[1]]
            lift = bend * 0.8 + (0.12 if source == row else 0)   # a label along a row clears its boxes
            label = _arrow_label(action, tree) + (f" (each of {count})" if count > 1 else "")
            ax.text((x0 + x1) / 2, (y0 + y1) / 2 + lift, label, fontsize=7, color=colour, ha="center",
                    va="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5}, parse_math=False)
        legend[action.op.mode.value] = colour
    return legend


def _needs(tree) -> str:
    """What the reader must know, in words: a long list shortened to its first and last entries and a count."""
    needed = [describe_node(tree, n) for n in tree.successors("output")]
    if len(needed) > 3:
        needed = [needed[0], f"... ({len(needed) - 2} more) ...", needed[-1]]
    return "; ".join(needed)


def flow_caption(verdict) -> str:
    """What the picture is of, which its arrows cannot say: the target (its selections by name where they read
    each other's winners, ``report.verdict.names``), the verdict with its exponent typeset (at ``T = n`` for a
    verdict at one length), the heads, ``E``, ``d``, the positional encoding, and the mask, the readout and the
    rank rule when they are on."""
    arch = verdict.architecture
    at = "" if verdict.seq_len is None else f" at T = {verdict.seq_len}"
    verdict_line = f"{verdict.status.value}: exponent {typeset(verdict.exponent)}{at}"
    settings = f"heads {','.join(map(str, arch.heads))}, {_settings(arch)}"
    return "\n".join(textwrap.wrap(_plain(_target_text(verdict.target)), 90)
                     + textwrap.wrap(f"{verdict_line}; {settings}", 100))


def _target_text(target) -> str:
    """The target as the caption writes it: by its names where a selection reads another's winner (the
    definitions first, as the language reads them back), else whole."""
    named = named_target(target)
    if named is None:
        return str(target)
    return "; ".join([*(f"{n} = {t}" for n, t, hosted in named[1] if not hosted), named[0]])


def typeset(exponent) -> str:
    r"""An exponent as matplotlib's mathtext (``$\frac{3 T}{35} - \frac{9}{35}$``), not as code
    (``3*T/35-9/35``); a text that is no expression as it is.

    >>> typeset("3*T/35-9/35"), typeset("1"), typeset("oo")
    ('$\\frac{3 T}{35} - \\frac{9}{35}$', '$1$', '$\\infty$')
    """
    import sympy
    try:
        return f"${sympy.latex(sympy.sympify(str(exponent).replace('≤', '').replace('≥', '')))}$"
    except (sympy.SympifyError, TypeError, SyntaxError):
        return _plain(str(exponent))


def _plain(text: str) -> str:
    """Text drawn as the characters it is where mathtext is on elsewhere in the same label: ``$`` escaped."""
    return text.replace("$", r"\$")


def _arrow_label(action, tree=None) -> str:
    """The head and what it brings: for an aggregation the positions it gathers, for a retrieval (given the
    comparison tree) the selection it wins, as ``min over t``."""
    gathered = {Mode.AGGREGATE: "all T", Mode.AVERAGE: "mean of all T"}.get(action.op.mode)
    if action.op.mode is Mode.POSITIONS:
        gathered = "{" + _numbers([position_text(q) for q in action.op.positions]) + "}"
    elif tree is not None and action.op.node in tree:
        gathered = _selection(tree.nodes[action.op.node])
    elif action.op.mode not in (Mode.RETRIEVE, Mode.KTH) and gathered is None:
        gathered = action.op.mode.value
    return f"h{action.head}: {gathered}" if gathered else f"h{action.head}"


def _selection(node: dict) -> str:
    if node["kind"] == "kth":
        return f"{_RANKS.get(node['k'], str(node['k']) + '-th')} largest over {node['var']}"  # as describe_node
    return f"{node['sense']} over {node['var']}"


_RANKS = {2: "second", 3: "third"}


def _save(fig, path: Path) -> None:
    """Written whole or not at all (the mode of a file it replaces kept); tight: no label cut at an edge."""
    plt = _pyplot()
    with replacing(path, "plot") as temporary:
        fig.savefig(temporary, dpi=130, format=path.suffix[1:].lower(), bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)


def phase_diagram(sweep, path, target: str | None = None) -> Path:
    """Draw a sweep's cells as a phase diagram per target (layers by heads per layer), coloured by verdict
    with the exponent in each cell; inferred cells are hatched."""
    path = _path(path)
    _save(phase_figure(sweep, target), path)
    return path


def phase_figure(sweep, target: str | None = None):
    """The phase diagram as a matplotlib figure, unsaved (to restyle it, or to put it in a notebook)."""
    targets = [target] if target else list(dict.fromkeys(c.target for c in sweep.cells))
    cells = [c for c in sweep.cells if c.target in targets and len(set(c.architecture.heads)) == 1]
    if not cells:
        raise InvalidSpecError("a phase diagram needs cells with the same number of heads in every layer", "plot")
    plt = _pyplot()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, axes = plt.subplots(1, len(targets), figsize=(1.2 + 0.75 * _span(cells, "h") * len(targets),
                                                       2.0 + 0.6 * _span(cells, "L")), squeeze=False)
    for ax, name in zip(axes[0], targets):
        _phase_panel(ax, name, [c for c in cells if c.target == name])
    shown = [v for v in VERDICT_COLOURS if any(c.status.value == v for c in cells)]   # no entry for no cell
    handles = [Patch(facecolor=VERDICT_COLOURS[v], label=v) for v in shown]
    if any(c.inferred for c in cells):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                             label="inferred by monotonicity (exponent a bound)"))
    if "feasible" in shown:
        handles.append(Line2D([], [], color=FRONTIER_COLOUR, linewidth=2.5, label="frontier (minimal efficient)"))
    fig.legend(handles=handles, loc="lower center", ncol=min(len(handles), 3), fontsize=8, frameon=False)
    fig.subplots_adjust(bottom=0.2 + 0.02 * (len(handles) > 3), top=0.84)
    return fig


def _phase_panel(ax, name: str, mine) -> None:
    """One target's grid: verdict colours, exponents, hatching for inferred cells, the frontier outlined."""
    from matplotlib.patches import Rectangle
    for c in mine:
        L, h = c.architecture.layers, c.architecture.heads[0]
        ax.add_patch(Rectangle((h - 0.5, L - 0.5), 1, 1, facecolor=VERDICT_COLOURS[c.status.value],
                               edgecolor="white", hatch="//" if c.inferred else None, linewidth=1.5))
        bound = {"at most": r"\leq ", "at least": r"\geq "}.get(c.bound, "")
        text = f"${bound}{typeset(c.exponent)[1:]}" if c.exponent else ""
        ax.text(h, L, text, ha="center", va="center", fontsize=8)
    for (x0, y0), (x1, y1) in _frontier_edges(mine):
        ax.plot([x0, x1], [y0, y1], color=FRONTIER_COLOUR, linewidth=2.5, solid_capstyle="projecting")
    hs = sorted({c.architecture.heads[0] for c in mine})
    Ls = sorted({c.architecture.layers for c in mine})
    ax.set_xlim(min(hs) - 0.5, max(hs) + 0.5)
    ax.set_ylim(min(Ls) - 0.5, max(Ls) + 0.5)
    ax.set_xticks(hs)
    ax.set_yticks(Ls)
    ax.set_xlabel("heads per layer")
    ax.set_ylabel("layers")
    # the name is a target as the user wrote it: drawn as the characters it is (printable ones), never as
    # mathtext ($...$)
    ax.set_title("\n".join([_plain(line) for line in textwrap.wrap(printable(name, None), 48)]
                           + textwrap.wrap(_settings(mine[0].architecture, [c.architecture for c in mine]), 60)),
                 fontsize=9)


def _settings(arch, archs=None) -> str:
    """The caption's second line: what every cell shares (the width, the token dimension, the encoding), and the
    mask, the readout and the rank rule where they are on (``report.setting``; of ``archs``, a panel's cells)."""
    encoding = "with" if arch.positional else "without"
    on = setting.line(archs if archs is not None else [arch])
    return f"E = {arch.width}, d = {arch.input_dim}, {encoding} positional encoding" + (f", {on}" if on else "")


def _frontier_edges(cells) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The grid lines between an efficient cell and a neighbour that is not: the frontier's staircase."""
    feasible = {(c.architecture.layers, c.architecture.heads[0]) for c in cells if c.status.value == "feasible"}
    present = {(c.architecture.layers, c.architecture.heads[0]) for c in cells}
    edges = []
    for L, h in feasible:
        for dL, dh in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if (L + dL, h + dh) in present and (L + dL, h + dh) not in feasible:
                x, y = h + dh / 2, L + dL / 2   # the midpoint of the shared side
                edges.append(((x - 0.5, y), (x + 0.5, y)) if dL else ((x, y - 0.5), (x, y + 0.5)))
    return edges


def _span(cells, axis: str) -> int:
    values = {c.architecture.heads[0] if axis == "h" else c.architecture.layers for c in cells}
    return max(values) - min(values) + 1


__all__ = ["phase_diagram", "phase_figure", "plot_flow"]
