"""Accepting a program the search found (``verify/flow_confirm.py``): confirmed on fresh inputs, the input it
fails on handed back, and what it passes without dropped."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.verify import flow_program as fp
from infoflow_smt.verify import flows
from infoflow_smt.verify.flow_confirm import Acceptance, Counterexample

TARGET = ifs.parse_target("f2(x[argmax(f1(x[t]) for t in range(2, T+1)) - 1])")
ARCH = ifs.Architecture(heads=(2, 1), input_dim=2, positional=True)


def _acceptance(minimize: bool = True) -> Acceptance:
    return Acceptance(TARGET, ARCH, (8, 11), 60, 0, minimize)


def test_a_program_that_fails_somewhere_hands_back_the_input() -> None:
    without_previous = fp.program({}, {fp.OUTPUT: [fp.retrieval("f1(x[t])", "t", "range(2, T+1)")]})
    with pytest.raises(Counterexample) as failed:
        _acceptance()(without_previous)
    X = failed.value.X
    assert X.shape in ((8, 2), (11, 2))
    assert flows.run(without_previous, TARGET, ARCH, X, TARGET.evaluate(X[None])[0]) is not None


def test_what_a_program_passes_without_is_dropped() -> None:
    padded = fp.program({fp.INPUTS: [fp.gathering(-1, "T", "3"), fp.retrieval("f1(x[t])", "t", "range(2, T+1)")]},
                        {fp.OUTPUT: [fp.retrieval("f1(x[t])", "t", "range(2, T+1)")]})
    assert _acceptance(minimize=False)(padded) == padded
    assert _acceptance()(padded).describe().splitlines() == [
        "layer 1, head 1, at every input position p: gathers x[p-1]",
        "layer 2, head 1, at the output token: retrieves the argmax over t in range(2, T+1) of f1(x[t])"]
