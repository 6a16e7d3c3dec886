"""The checker's program vocabulary (``verify/flow_program.py``): heads read from text, places, words."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.expr import FixedIndex, Range, free_variables
from infoflow_smt.verify import flow_program as fp


def test_a_retrieval_reads_p_as_the_selecting_position() -> None:
    head = fp.retrieval("dot(x[t-1], x[p])", "t", "range(2, T+1)", largest=False)
    assert head.mode is fp.Mode.RETRIEVE and head.variable == "t" and not head.largest
    assert isinstance(head.domain, Range)
    assert head.describe() == "retrieves the argmin over t in range(2, T+1) of dot(x[t-1], x[p])"
    assert free_variables(head.body) == {fp.SELF, "t"}


def test_every_mode_says_what_it_does() -> None:
    assert fp.gathering(-1, "T", "3", "p+2").describe() == "gathers x[p-1], x[T], x[3], x[p+2]"
    assert fp.averaging("f1(x[t])").describe() == "averages f1(x[t]) over t in T"
    assert fp.kth_retrieval(2, "f1(x[t])").describe() == "retrieves the 2-th largest over t in T of f1(x[t])"
    assert fp.aggregation().describe() == "aggregates every position it sees"
    assert not fp.aggregation().is_efficient and not fp.kth_retrieval(2, "f1(x[t])").is_efficient


def test_a_gathered_source_is_a_position_or_an_offset() -> None:
    assert fp.gathering("T-1").sources == (FixedIndex(1, True),)
    with pytest.raises(ifs.InvalidSpecError, match="a gathered source is a fixed position or an offset, got 'q-1'"):
        fp.gathering("q-1")


def test_a_program_lists_its_places_and_leaves_the_rest_idle() -> None:
    prog = fp.program({fp.at(3): [fp.gathering(1)], fp.INPUTS: []}, {fp.OUTPUT: [fp.gathering("3")]})
    assert prog.positions == (FixedIndex(3),)
    assert prog.heads(1, fp.INPUTS) == () and prog.heads(2, fp.OUTPUT) == (fp.gathering("3"),)
    assert prog.describe().splitlines() == ["layer 1, head 1, at position 3: gathers x[p+1]",
                                            "layer 2, head 1, at the output token: gathers x[3]"]
    assert fp.program().describe() == "every head idle"
