"""The demo run with no arguments: the depth-separation target, infeasible on one layer, feasible and
replayed on two."""
from __future__ import annotations

from infoflow_smt.demo import demo


def test_the_demo_decides_one_layer_and_two(capsys):
    assert demo() == 0
    out = capsys.readouterr().out
    assert out.startswith("target: min(dot(x[s], x[t]) for s in T for t in T)\n")
    assert "comparison order 2, dimension 1, number T**2 + T, depth 2" in out
    one, two = out.split("INFEASIBLE: ", 1)[1].split("FEASIBLE: ", 1)
    assert "1 layer of 4 heads" in one and "replay:" not in one
    assert "2 layers of 1 head" in two and "replay: " in two and "solver calls" in two
