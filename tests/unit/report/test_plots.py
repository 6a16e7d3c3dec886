"""Pictures: a witness's flow and a sweep's phase diagram are written as PNG or SVG; a bad path is refused
before anything is drawn."""
from __future__ import annotations

from pathlib import Path

import pytest

import infoflow_smt as ifs
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
    ("flow.txt", "a picture is written as PNG or SVG: .*flow.txt ends in .txt"),
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
