"""Pictures: a witness's flow and a sweep's phase diagram are written as PNG or SVG; a bad path is refused
before anything is drawn."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import infoflow_smt as ifs
from infoflow_smt.report import plots
from infoflow_smt.report.plots import phase_diagram, plot_flow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def feasible():
    return ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), input_dim=2))


def test_flow_is_written_as_png_and_svg(feasible, tmp_path: Path):
    png = plot_flow(feasible, tmp_path / "flow.png")
    assert png == tmp_path / "flow.png" and png.read_bytes().startswith(PNG)
    svg = plot_flow(feasible, tmp_path / "flow.svg")
    assert b"<svg" in svg.read_bytes()[:2000]


@pytest.mark.parametrize("name, message", [
    ("flow.txt", "a picture is written as PNG, SVG or PDF: .*flow.txt ends in .txt"),
    ("flow", "ends in nothing"),
    ("missing/flow.png", "the folder .*missing does not exist"),
])
def test_a_bad_path_is_refused_and_nothing_written(feasible, tmp_path: Path, name, message):
    with pytest.raises(ifs.InvalidSpecError, match=message):
        plot_flow(feasible, tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_phase_diagram_of_a_sweep(tmp_path: Path):
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    sweep = ifs.sweep(["min_pairwise_dot"], grid, cache=False, workers=1)
    path = phase_diagram(sweep, tmp_path / "phase.png")
    assert path.read_bytes().startswith(PNG) and path.stat().st_size > 1000


def test_a_phase_diagram_needs_uniform_layers(tmp_path: Path):
    sweep = ifs.sweep(["min_pairwise_dot"], [ifs.Architecture(heads=(2, 1), input_dim=2)], cache=False, workers=1)
    with pytest.raises(ifs.InvalidSpecError, match="same number of heads in every layer"):
        phase_diagram(sweep, tmp_path / "phase.png")
    assert not (tmp_path / "phase.png").exists()


def _cell(L: int, h: int, status: str, inferred: bool = False):
    from infoflow_smt.explore.sweeps import Cell
    arch = ifs.Architecture(heads=(h,) * L, embed_dim=16, input_dim=3)
    return Cell("min_pairwise_dot", arch, ifs.Status(status), "1" if status == "feasible" else "T/16",
                "at most" if inferred else "exact", inferred_from=(h,) if inferred else None)


def _texts(fig) -> list[str]:
    texts = [t.get_text() for t in fig.texts]
    texts += [t.get_text() for ax in fig.axes for t in (ax.title, *ax.texts)]
    return texts + [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def test_the_phase_caption_states_target_width_dimension_and_encoding():
    from infoflow_smt.explore.sweeps import Sweep
    from infoflow_smt.report.plots import phase_figure
    fig = phase_figure(Sweep([_cell(1, 1, "infeasible"), _cell(2, 1, "feasible"), _cell(2, 2, "feasible", True)]))
    texts = _texts(fig)
    assert "min_pairwise_dot\nE = 16, d = 3, without positional encoding" in texts
    assert not any("cells" in t and "decided" in t for t in texts)   # no bookkeeping title
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "unknown" not in legend and {"feasible", "infeasible", "frontier (minimal efficient)"} <= set(legend)


def test_the_frontier_is_the_staircase_between_efficient_cells_and_the_others():
    from infoflow_smt.report.plots import _frontier_edges
    cells = [_cell(1, 1, "infeasible"), _cell(1, 2, "infeasible"), _cell(2, 1, "infeasible"),
             _cell(2, 2, "feasible")]
    edges = sorted(_frontier_edges(cells))
    # (L=2, h=2) is efficient: its lower side (against L=1) and its left side (against h=1) are outlined
    assert edges == [((1.5, 1.5), (1.5, 2.5)), ((1.5, 1.5), (2.5, 1.5))]
    assert _frontier_edges([_cell(1, 1, "feasible")]) == []


def test_an_unknown_cell_has_its_legend_entry(tmp_path: Path):
    from infoflow_smt.explore.sweeps import Cell, Sweep
    from infoflow_smt.report.plots import phase_figure
    unknown = Cell("t", ifs.Architecture(heads=(1,), input_dim=2), ifs.Status.UNKNOWN, "", "unknown")
    legend = [t.get_text() for t in phase_figure(Sweep([unknown])).legends[0].get_texts()]
    assert legend == ["unknown"]


def test_pictures_for_papers_are_vector_pdf_too(feasible, tmp_path: Path):
    pdf = plot_flow(feasible, tmp_path / "flow.pdf")
    assert pdf.read_bytes().startswith(b"%PDF")


def test_aggregation_arrows_name_the_positions_they_gather():
    from infoflow_smt.model.program import Action, Mode, Offset, Op
    from infoflow_smt.report.plots import _arrow_label
    assert _arrow_label(Action(1, 1, "output", Op(Mode.AGGREGATE))) == "h1: all T"
    assert _arrow_label(Action(1, 2, "input", Op(Mode.POSITIONS, positions=(Offset(-1),)))) == "h2: {p-1}"
    assert _arrow_label(Action(2, 1, "output", Op(Mode.RETRIEVE, "n0"))) == "h1"


def _drawn(verdict, monkeypatch, tmp_path: Path) -> list[str]:
    """Every text of ``verdict``'s flow figure (the figure caught before it is written)."""
    from infoflow_smt.report import plots
    figures = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figures.append(fig))
    plot_flow(verdict, tmp_path / "flow.png")
    legends = [t.get_text() for ax in figures[0].axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    return _texts(figures[0]) + legends


def test_the_flow_caption_states_target_verdict_and_settings_and_lists_no_arrow(feasible, monkeypatch, tmp_path):
    texts = _drawn(feasible, monkeypatch, tmp_path)
    caption = ("min(dot(x[s], x[t]) for s in T for t in T)\n"
               "feasible: exponent $1$; heads 1,1, E = 32, d = 2, without positional encoding")
    assert caption in texts
    assert {"h1: min over t", "h1: min over s"} <= set(texts)      # the arrows say what each head selects ...
    assert not any("in layer" in t or "h1" in t and t not in ("h1: min over t", "h1: min over s") for t in texts)
    assert len([t for t in texts if "min over t" in t]) == 1        # ... once: no caption lists them again


def test_the_flow_caption_of_an_answer_at_one_length_says_the_length(monkeypatch, tmp_path):
    at_8 = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1,), input_dim=2), seq_len=8)
    texts = _drawn(at_8, monkeypatch, tmp_path)
    assert any(t.endswith("infeasible: exponent $0$ at T = 8; heads 1, E = 32, d = 2, without positional encoding")
               for t in texts)
    assert "h1: all T" in texts and "cost grows with T" in texts     # the dashed arrow, in the legend


def test_a_retrieval_arrow_names_the_selection_it_wins():
    from infoflow_smt.lang import catalogue
    from infoflow_smt.lang.trees import comparison_tree
    from infoflow_smt.model.program import Action, Mode, Op
    from infoflow_smt.report.plots import _arrow_label
    tree = comparison_tree(catalogue.parse_spec("kth_largest:k=3"))
    [node] = [n for n, kind in tree.nodes(data="kind") if kind == "kth"]
    assert _arrow_label(Action(1, 2, "output", Op(Mode.KTH, node)), tree) == "h2: third largest over t"


def test_the_ringed_reader_is_where_the_answer_is_read():
    from infoflow_smt.lang.expr import FixedIndex
    from infoflow_smt.report.plots import _reader
    arch = ifs.Architecture(heads=(1,), embed_dim=16, input_dim=2, positional=True, readout="last")
    assert _reader(ifs.decide("max(F0(x[T], x[t]) for t in T)", arch)) == FixedIndex(0, True)
    assert _reader(ifs.decide("max(F0(x[o], x[t]) for t in T)", dataclasses.replace(arch, positional=False))) == "input"
    assert _reader(ifs.decide("max(f1(x[t]) for t in T)", dataclasses.replace(arch, readout="output"))) == "output"


def test_positions_that_do_the_same_work_are_one_row_labelled_once(monkeypatch, tmp_path):
    """linear_max_sum:D=8 on (1, 1) with positions: seven fixed positions each retrieve one maximum; they are one
    row, its arrow labelled once with how many it stands for, and the output's gather of them one arrow."""
    verdict = ifs.decide("linear_max_sum:D=8", ifs.Architecture(heads=(1, 1), positional=True))
    workers = sorted(a.where.position for a in verdict.witness.actions if not isinstance(a.where, str))
    n = len(workers)
    assert n >= 7 and workers == list(range(1, n + 1))   # the witness's workers: positions 1..n (n = 7 or 8)
    texts = _drawn(verdict, monkeypatch, tmp_path)
    assert f"input positions 1..{n}" in texts and not any(t.startswith("input position 3") for t in texts)
    assert texts.count(f"h1: max over t (each of {n})") == 1 and texts.count(f"h1: {{1..{n}}}") == 1


def test_exponents_are_typeset_and_the_setting_is_in_the_caption(monkeypatch, tmp_path):
    verdict = ifs.decide("match2:prefix=true", ifs.Architecture(heads=(1,), causal=True, rank_aware=True))
    caption = plots.flow_caption(verdict).replace("\n", " ")
    assert caption.endswith("causal mask, rank rule") and "exponent $\\frac{T}{16} - 1$" in caption
    assert plots.typeset("3*T/35-9/35") == r"$\frac{3 T}{35} - \frac{9}{35}$"
    sweep = ifs.sweep(["min_pairwise_dot"], [ifs.Architecture(heads=(h,) * L, causal=True) for L in (1, 2)
                                              for h in (1, 2)], cache=False, workers=1)
    figure = plots.phase_figure(sweep)
    title = figure.axes[0].get_title()
    assert "causal mask" in title
    assert any(t.get_text().startswith("$") and "frac" in t.get_text() for t in figure.axes[0].texts)


def test_a_chain_is_captioned_by_its_names():
    verdict = ifs.decide("k_hop_induction:k=3", ifs.Architecture(heads=(1, 1, 1)))
    caption = plots.flow_caption(verdict)
    assert caption.startswith("p1 = argmax(") and "x[p3]" in caption and caption.count("argmax") == 3
