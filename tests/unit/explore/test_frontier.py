"""decide_all: the minimal efficient architectures of a target at every number of layers and heads, with the
bounds past which nothing changes, checked against deciding cell by cell."""
from __future__ import annotations

import json

import pytest

import infoflow_smt as ifs


@pytest.mark.parametrize("spec, shapes", [
    ("min_pairwise_dot", ((2, 1),)),
    ("triangle_center", ()),
    ("intrinsic_dimension:D=3", ((2, 3), (3, 2), (4, 1))),
    ("linear_max_sum:D=3", ((1, 3), (2, 1))),
    ("kth_largest:k=2", ()),
])
def test_decide_all_frontiers(spec, shapes):
    frontier = ifs.decide_all(spec)
    assert frontier.shapes == shapes, str(frontier)
    assert frontier.head_bound >= 1 and frontier.layer_bound >= max((L for L, _ in shapes), default=1)
    assert frontier.explanation and all(s.endswith(".") for s in frontier.explanation)


def test_decide_all_agrees_with_every_cell_inside_its_bounds():
    """Every cell of the bounded grid, decided one by one, gets the status the frontier implies; one
    step past the bounds changes nothing."""
    frontier = ifs.decide_all("intrinsic_dimension:D=2")
    for L in range(1, frontier.layer_bound + 2):
        for h in range(1, frontier.head_bound + 2):
            verdict = ifs.decide("intrinsic_dimension:D=2", ifs.Architecture(heads=(h,) * L, input_dim=2))
            efficient = any(L >= l2 and h >= h2 for l2, h2 in frontier.shapes)
            assert verdict.feasible == efficient, (L, h)


def test_decide_all_with_a_width_per_head():
    frontier = ifs.decide_all("intrinsic_dimension:D=2", head_dim=8)
    assert frontier.width == "E=8*h" and frontier.shapes == ((2, 2), (3, 1))


def test_the_frontier_as_text_and_json():
    frontier = ifs.decide_all("min_pairwise_dot")
    assert str(frontier).splitlines()[0] == (
        "min(dot(x[s], x[t]) for s in T for t in T) at E=32, d=2: efficient exactly from 2 layers of 1 head on")
    record = json.loads(json.dumps(frontier.to_json()))
    assert record["frontier"] == [[2, 1]] and record["none"] is False and record["exponents"] == ["1"]
    assert record["grid"]["2,1"] == "feasible" and record["grid"]["1,1"] == "infeasible"
    none = ifs.decide_all("kth_largest:k=2")
    assert none.none and none.to_json()["frontier"] == [] and "inefficient for every number" in str(none)


# ---- cells the solver could not decide: carried, said, and never read as infeasible ---------------------
def _undecided_in_layer_1(monkeypatch) -> None:
    """Questions.decide answers UNKNOWN (its deadline already passed) on every one-layer architecture."""
    from infoflow_smt.deadline import Deadline
    from infoflow_smt.explore import frontier
    from infoflow_smt.smt.solver import forget_recent

    forget_recent()   # a recent answer would be reused whatever the deadline
    real = frontier.Questions.decide

    def decide(self, arch, deadline):
        return real(self, arch, Deadline(1e-9) if arch.layers == 1 else deadline)

    monkeypatch.setattr(frontier.Questions, "decide", decide)


def test_an_undecided_cell_is_carried_and_the_frontier_is_then_a_bound(monkeypatch) -> None:
    full = ifs.decide_all("linear_max_sum:D=2")
    assert full.complete and full.shapes == ((1, 2), (2, 1)) and full.to_json()["undecided"] == []
    _undecided_in_layer_1(monkeypatch)
    part = ifs.decide_all("linear_max_sum:D=2")
    H = full.head_bound
    # the walk asks one head first, then the most heads: both undecided, the row is left there
    assert not part.complete and part.undecided == ((1, 1), (1, H)) and part.shapes == ((2, 1),)
    assert all(part.grid[(1, h)] == "unknown" for h in range(1, H + 1))   # never read as infeasible
    assert all(part.grid[cell] == full.grid[cell] for cell in full.grid if cell[0] > 1)
    doc = part.to_json()
    assert doc["complete"] is False and doc["undecided"] == [[1, 1], [1, H]]
    assert str(part).startswith(f"incomplete: 2 cells undecided by the deadline (1 layer of 1 head, 1 layer of {H} heads)")


def test_the_frontier_command_exits_3_on_an_undecided_cell(monkeypatch, capsys) -> None:
    from infoflow_smt import cli

    _undecided_in_layer_1(monkeypatch)
    assert cli.main(["frontier", "linear_max_sum:D=2", "--json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["complete"] is False and len(doc["undecided"]) == 2


def test_the_notebook_view_shows_an_undecided_cell_as_unknown(monkeypatch) -> None:
    _undecided_in_layer_1(monkeypatch)
    view = ifs.decide_all("linear_max_sum:D=2")._repr_html_()
    assert "incomplete:" in view and "?</td>" in view


# ---- under a causal mask: every cell asks what decide asks -------------------------------------------------------
@pytest.mark.parametrize("spec", ["min_pairwise_dot", "min(bilinear(A1, x[s], x[t]) for s in T for t in T)",
                                  "linear_max_sum:D=4"])
def test_a_causal_frontier_agrees_with_decide_cell_by_cell(spec):
    frontier = ifs.decide_all(spec, causal=True)
    assert frontier.causal and frontier.to_json()["causal"] and ", causal:" in str(frontier)
    for L in range(1, frontier.layer_bound + 2):
        for h in range(1, frontier.head_bound + 2):
            status = frontier.grid[(min(L, frontier.layer_bound), min(h, frontier.head_bound))]
            verdict = ifs.decide(spec, ifs.Architecture(heads=(h,) * L, input_dim=frontier.input_dim, causal=True))
            if status != "unknown":   # inferred unknown: beside a cell the mask leaves open
                assert verdict.status.value == status, (L, h)


def test_a_causal_frontier_says_which_no_the_mask_leaves_open():
    subsets = "max(f1(x[t]) for t in S1) + max(f2(x[t]) for t in S2) + max(f3(x[t]) for t in S3) + max(f4(x[t]) for t in S4)"
    frontier = ifs.decide_all(subsets, causal=True)
    assert not frontier.complete and (2, 1) in frontier.undecided
    assert str(frontier).startswith("incomplete: 2 cells undecided because, under the causal mask, infeasible is "
                                    "not established there (2 layers of 1 head, 3 layers of 1 head)")
    assert all(why.startswith("under the causal mask") for why in frontier.to_json()["undecided_why"])


def test_minimize_under_a_causal_mask():
    text = "min(bilinear(A1, x[s], x[t]) for s in T for t in T)"   # t after s needs a head of its own
    front = ifs.minimize(text, max_layers=3, max_heads=3, input_dim=2, causal=True)
    assert [(v.architecture.layers, v.architecture.heads[0]) for v in front] == [(2, 2), (3, 1)]
    assert all(v.architecture.causal and v.status is ifs.decide(text, v.architecture).status for v in front)
    unmasked = ifs.minimize(text, max_layers=3, max_heads=3, input_dim=2)
    assert [(v.architecture.layers, v.architecture.heads[0]) for v in unmasked] == [(2, 1)]
