"""``experiments.confirm``: a decided case checked against trained networks, within a budget.

The budget here is a few seconds, so the NMSE figures mean little; the tests check what confirm promises:
the neighbours it picks, that it keeps to its budget, that the threshold is fixed and stated, the table
and its JSON, and that a target text no catalogue entry has works.
"""
from __future__ import annotations

import json
import time

import pytest

pytest.importorskip("torch")

import experiments
import infoflow_smt as ifs
from experiments.confirmation import DEFAULT_THRESHOLD, neighbours

TEXT = "max(f1(x[t]) + f2(x[t]) for t in T)"   # no catalogue entry has this target


def test_neighbours_of_a_two_layer_verdict() -> None:
    v = ifs.decide("intrinsic_dimension:D=2", ifs.Architecture((2, 2), 16, 4), seq_len=16)
    rows = neighbours(v, 16)
    roles = [(role, tuple(n.architecture.heads), n.status.value) for role, n in rows]
    assert roles[0] == ("decided", (2, 2), "feasible")
    assert roles[1][0].startswith("one head fewer, layer ") and roles[1][2] == "infeasible"
    assert roles[1][1] in ((1, 2), (2, 1))
    assert roles[2] == ("one layer fewer", (2,), "infeasible")


def test_an_infeasible_verdict_gets_a_stronger_neighbour() -> None:
    v = ifs.decide("linear_max_sum:D=3", ifs.Architecture((2,), 16, 4), seq_len=16)
    rows = neighbours(v, 16)
    assert [tuple(n.architecture.heads) for _, n in rows] == [(2,), (1,), (3,)]
    assert rows[-1][0] == "one head more per layer" and rows[-1][1].status is ifs.Status.FEASIBLE


def test_confirm_a_target_text_within_its_budget() -> None:
    v = ifs.decide(TEXT, ifs.Architecture((1, 1), 8, 2), seq_len=6)
    start = time.perf_counter()
    result = experiments.confirm(v, budget="6s")
    wall = time.perf_counter() - start
    assert wall < 6 + 4, f"budget 6 s, took {wall:.1f} s"          # the deadline stops training at once
    assert [r.heads for r in result.rows] == [(1, 1), (1,)]
    assert result.target == v.target.text and result.seq_len == 6 and result.threshold == DEFAULT_THRESHOLD
    assert all(r.steps >= 20 and r.nmse == r.nmse for r in result.rows)
    text = str(result)
    assert "threshold fixed before training: efficient = best validation NMSE < 0.01" in text
    assert "decided" in text and "one layer fewer" in text and "agreement:" in text
    doc = json.loads(json.dumps(result.to_json()))  # JSON-ready
    assert doc["threshold"] == DEFAULT_THRESHOLD and doc["budget_s"] == 6.0
    assert [row["heads"] for row in doc["rows"]] == [[1, 1], [1]]
    assert {"status", "exponent", "nmse", "agree", "measured_efficient"} <= set(doc["rows"][0])


def test_confirm_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from experiments.__main__ import main

    code = main(["confirm", TEXT, "--heads", "1", "--embed-dim", "8", "--input-dim", "2", "--seq-len", "6",
                 "--budget", "3s", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and doc["rows"][0]["heads"] == [1] and doc["seq_len"] == 6
