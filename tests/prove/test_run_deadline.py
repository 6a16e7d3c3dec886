"""A proof run asks no question once its deadline has passed: the questions left are unknown at once, so the
run ends at its deadline and the proof is unknown, never disproved (prove --all --timeout 0.5 took 7.6 s)."""
from __future__ import annotations

import time

import pytest

import infoflow_smt as ifs
import proofs
from proofs import harness


def test_no_question_is_asked_past_the_run_deadline(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a question asked past the deadline")
    monkeypatch.setattr(ifs, "decide", refuse)
    monkeypatch.setattr(ifs, "decide_all", refuse)
    monkeypatch.setattr(ifs, "minimize", refuse)
    with harness.within(1e-6):
        time.sleep(0.01)
        evidence = harness.observe("max_retrieval", ifs.Architecture(heads=(1,), input_dim=2), "feasible",
                                   harness.exactly(1))
        claim = harness.general_claim("any", [harness.FrontierCheck("max_retrieval", {}, shapes=((1, 1),))])
        pareto = proofs.intrinsic_dimension.pareto_evidence(2, 32, 2)
    assert evidence.obtained_status == "unknown" and evidence.detail == harness.UNASKED
    assert claim.unknown and not claim.holds and pareto.obtained_status == "unknown"


@pytest.mark.parametrize("name", ["depth_separation", "intrinsic_dimension"])
def test_a_proof_cut_short_is_unknown_not_disproved(name):
    with harness.within(1e-6):
        time.sleep(0.01)
        result = proofs.ALL[name]()
    assert not result.holds and result.unknown, result
