"""Answers in Jupyter: ``Verdict``, ``Frontier``, ``Sweep`` and ``CheckReport`` show an HTML summary, with
their picture inline where there is one, and escape every text that comes from the answer."""
from __future__ import annotations

import base64
import re
import subprocess
import sys

import pytest

import infoflow_smt as ifs
from infoflow_smt.model.program import Action, Mode, Op, Program
from infoflow_smt.report import notebook


def images(page: str) -> list[bytes]:
    return [base64.b64decode(data) for data in re.findall(r'src="data:image/png;base64,([^"]+)"', page)]


@pytest.fixture(scope="module")
def two_layers():
    return ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), input_dim=2))


def test_a_feasible_verdict_shows_its_witness_and_its_flow_diagram(two_layers):
    page = two_layers._repr_html_()
    assert ">FEASIBLE</b>" in page and "best cost exponent: <code>1</code>" in page
    assert "witness, replayed:" in page and "layer 2, head 1, at the output token" in page
    [png] = images(page)
    assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_an_infeasible_verdict_shows_why_and_its_cheapest_program():
    page = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1,), input_dim=2))._repr_html_()
    assert ">INFEASIBLE</b>" in page and "<p>why:</p>" in page and "cheapest program (not efficient)" in page
    assert len(images(page)) == 1


def test_a_verdict_at_one_length_says_what_its_exponent_is():
    page = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1,), input_dim=2), seq_len=8)._repr_html_()
    assert "best cost exponent at T = 8: <code>0</code>" in page
    assert "at one length: at T = 8 every cost is a number" in page


def test_an_unknown_verdict_has_no_picture_and_says_why():
    verdict = ifs.decide("triangle_center", ifs.Architecture(heads=(8, 8, 8), embed_dim=64, input_dim=2),
                         timeout=0.001)
    assert verdict.status is ifs.Status.UNKNOWN
    page = verdict._repr_html_()
    assert ">UNKNOWN</b>" in page and "note: the deadline of 0.001 s" in page and images(page) == []
    assert "best cost exponent" not in page


def test_target_text_is_escaped():
    verdict = ifs.decide("max(f1(x[t]) for t in T) * 2 + F0(x[1])", ifs.Architecture(heads=(2,), input_dim=2,
                                                                                  positional=True))
    assert "&lt;" not in str(verdict) and "<code>" in verdict._repr_html_()
    assert notebook.table(["a"], [["<b>&"]]) == "<table><tr><th>a</th></tr><tr><td style='text-align:left'>" \
                                                "&lt;b&gt;&amp;</td></tr></table>"
    assert notebook.table(["a"], [[notebook.Markup("<b>x</b>")]]).count("<b>x</b>") == 1


def test_a_frontier_shows_its_grid_with_the_frontier_outlined():
    frontier = ifs.decide_all("intrinsic_dimension:D=2")
    page = frontier._repr_html_()
    assert "efficient exactly from 2 layers of 2 heads, 3 layers of 1 head on" in page
    outlined = re.findall(r"<td style='border:2px solid black;[^']*'>(\w+)</td>", page)
    assert outlined == ["yes", "yes"]     # (2, 2) and (3, 1)
    assert page.count("<tr>") == 1 + frontier.layer_bound and "Heads: one class of positions" in page


def test_a_sweep_shows_a_phase_diagram_and_every_cell(tmp_path):
    archs = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    sweep = ifs.sweep(["max_retrieval", "min_pairwise_dot"], archs, cache=False, workers=1)
    page = sweep._repr_html_()
    assert page.startswith("<div><p>8 cells: ") and len(images(page)) == 2
    assert page.count(">FEASIBLE</b>") + page.count(">INFEASIBLE</b>") == 8


def test_a_check_report_shows_ok_or_its_failures(two_layers):
    report = ifs.check(two_layers.witness, two_layers.target, two_layers.architecture, seq_len=8, samples=20)
    assert report._repr_html_() == "<p><b style='color:#1b7837'>OK</b>: 20 random inputs of length 8 computed " \
                                   "exactly</p>"
    half = Program((Action(2, 1, "output", Op(Mode.RETRIEVE, "g0.s")),), layers=2)   # skips the first selection
    wrong = ifs.check(half, two_layers.target, two_layers.architecture, seq_len=8, samples=20)
    assert not wrong.ok
    page = wrong._repr_html_()
    assert page.startswith("<p><b style='color:#b2182b'>FAILED</b> on length 8") and page.count("<li>") >= 1


def test_no_picture_when_there_is_nothing_to_draw():
    def refuse(path):
        raise ifs.InvalidSpecError("nothing to draw", "plot")
    assert notebook.picture(refuse) == ""


def test_matplotlib_is_loaded_only_to_draw():
    """In a fresh interpreter (earlier tests have drawn): importing the notebook views draws nothing."""
    script = ("import sys, infoflow_smt as ifs\n"
              "from infoflow_smt.report import notebook, verdict\n"
              "assert 'matplotlib' not in sys.modules\nprint('ok')")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert done.stdout.strip() == "ok", done.stderr


def test_the_views_name_the_setting_and_the_selections():
    """A masked, rank-aware verdict says so, as does a masked sweep's summary and each of its cells; a chain of
    selections shows by its names with their definitions."""
    masked = ifs.decide("match2:prefix=true", ifs.Architecture(heads=(1,), causal=True))
    page = notebook.verdict_html(masked)
    assert "<b>causal mask</b>" in page and "rank rule" not in page
    plain = notebook.verdict_html(ifs.decide("max_retrieval", ifs.Architecture(heads=(1,))))
    assert "causal mask" not in plain and "where" not in plain
    chain = notebook.verdict_html(ifs.decide("k_hop_induction:k=3", ifs.Architecture(heads=(1, 1, 1))))
    assert "<code>x[p3]</code>" in chain and "where <code>p1 = argmax(" in chain
    sweep = ifs.sweep(["max_retrieval"], [ifs.Architecture(heads=(1,)), ifs.Architecture(heads=(1,), causal=True)],
                      cache=False, workers=1)
    page = notebook.sweep_html(sweep)
    assert "; causal mask (some cells)</p>" in page and "<td style='text-align:left'>causal mask</td>" in page
