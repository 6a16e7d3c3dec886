"""Verdicts: the status and its exit code, the JSON record (docs/cli.md, "decide"), and the text a reader sees."""
from __future__ import annotations

import dataclasses
import json

import pytest
import sympy

import infoflow_smt as ifs
from infoflow_smt.report.verdict import Stats, Status, Verdict

JSON_KEYS = {"status", "target", "name", "named", "per_position", "architecture", "setting", "seq_len", "exponent",
             "witness", "best_program", "explanation", "reason_unknown", "stats"}


@pytest.mark.parametrize("status, code", [(Status.FEASIBLE, 0), (Status.INFEASIBLE, 1), (Status.UNKNOWN, 3)])
def test_exit_codes(status, code):
    """Unknown is 3, never 1: a shell script must not read 'could not tell' as 'no'."""
    assert status.exit_code == code


@pytest.fixture(scope="module")
def two_verdicts():
    return (ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2)),
            ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1,), embed_dim=16, input_dim=2)))


def test_to_json_keys_and_values(two_verdicts):
    feasible, infeasible = two_verdicts
    for verdict in two_verdicts:
        record = json.loads(json.dumps(verdict.to_json()))   # JSON-ready as it is
        assert set(record) == JSON_KEYS
        assert record["architecture"]["embed_dim"] == "16" and record["name"] == "min_pairwise_dot"
        assert record["per_position"] is False
    record = feasible.to_json()
    assert record["status"] == "feasible" and record["exponent"] == "1" and record["explanation"] == []
    assert record["witness"]["steps"] and record["best_program"] is None
    record = infeasible.to_json()
    assert record["status"] == "infeasible" and record["witness"] is None
    assert record["exponent"] == "T/8 - 1" and record["best_program"]["steps"]
    assert {e["constraint"] for e in record["explanation"]} >= {"initial", "goal"}


def test_an_unknown_verdict_has_no_exponent_in_json():
    arch = ifs.Architecture(heads=(1,))
    unknown = Verdict(Status.UNKNOWN, ifs.catalogue.get("max_retrieval"), arch, sympy.oo,
                      reason_unknown="timeout", stats=Stats(seconds=0.123456, extra={"note": "n", "big": [1]}))
    record = unknown.to_json()
    assert record["exponent"] is None and record["reason_unknown"] == "timeout"
    assert record["stats"] == {"seconds": 0.1235, "solver_calls": 0, "note": "n"}  # only plain values
    assert not unknown.feasible
    assert "best cost exponent" not in str(unknown) and "note: timeout" in str(unknown)


def test_the_text_says_what_the_exponent_means(two_verdicts):
    feasible, infeasible = two_verdicts
    assert str(feasible).startswith("FEASIBLE: min(dot(x[s], x[t]) for s in T for t in T)")
    assert "best cost exponent: 1 (for precision eps the parameter count grows as eps^-(1))" in str(feasible)
    assert "witness, replayed by the reference interpreter:" in str(feasible)
    assert "best cost exponent: T/8 - 1 (grows with T: not efficient)" in str(infeasible)
    assert "why:" in str(infeasible) and "cheapest program (not efficient), replayed:" in str(infeasible)


def test_a_verdict_at_one_length_says_what_its_status_and_exponent_mean():
    """At T = 8 the inefficient one-layer program costs 0 and the efficient two-layer one 1: the text says
    that the status is about growth in T (each operation's cost law) and the exponent a number at T = 8."""
    one, two = (ifs.decide("min_pairwise_dot", ifs.Architecture(heads=heads, input_dim=2), seq_len=8)
                for heads in ((1,), (1, 1)))
    assert one.status is Status.INFEASIBLE and one.exponent == 0 and two.exponent == 1
    text = str(one)
    assert "best cost exponent at T = 8: 0 (for precision eps the parameter count at T = 8 does not grow" in text
    assert "at one length: at T = 8 every cost is a number, so the status compares no numbers" in text
    assert "(no, every program uses an operation whose cost grows with T" in text
    assert "the cheapest program, programs ranked by their cost at T = 8" in text
    assert "(yes: the status is the one for all large T)" in str(two) and "cheapest such program" in str(two)
    assert "at one length" not in str(ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(4,), input_dim=2)))


def test_a_verdict_is_frozen(two_verdicts):
    with pytest.raises(dataclasses.FrozenInstanceError):
        two_verdicts[0].status = Status.INFEASIBLE


@pytest.mark.parametrize("text, line", [
    ("max(F0(x[o], x[t]) for t in range(1, o))", "none is asked at o = 1: a range its answer reads is empty"),
    ("kth_largest(2, F0(x[o], x[t]) for t in range(1, o))", "none is asked at o = 1, 2:"),
    ("min(F0(x[o], x[t]) for t in range(o+1, T+1))", "none is asked at o = T:"),
])
def test_the_positions_asked_nothing_are_named(text, line):
    arch = ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2, positional=True)
    assert line in str(ifs.decide(text, arch))
    assert "none is asked" not in str(ifs.decide("max(F0(x[o], x[t]) for t in T)", arch))
