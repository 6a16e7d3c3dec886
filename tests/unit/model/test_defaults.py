"""One set of defaults for one question (docs/api.md, "Defaults"): what an architecture leaves out is the target's,
by the same rule from Python and from the command line."""
from __future__ import annotations

import dataclasses

import pytest

import infoflow_smt as ifs
from infoflow_smt import cli
from infoflow_smt.model.defaults import settings, settled


@pytest.mark.parametrize(("spec", "expected"), [
    ("min_pairwise_dot", {"input_dim": 2, "readout": "output", "positional": False}),
    ("max(x[t] for t in T)", {"input_dim": 1, "readout": "output", "positional": False}),   # tokens as numbers
    ("induction_head", {"input_dim": 2, "readout": "output", "positional": True}),
    ("hop_k:k=3", {"input_dim": 2, "readout": "last", "positional": True}),               # the paper's readout
    ("match2:prefix=true", {"input_dim": 2, "readout": "output", "positional": True}),
])
def test_the_target_settles_what_is_left_out(spec, expected):
    assert settings(ifs.catalogue.parse_spec(spec)) == expected


def test_the_mask_and_the_readout_change_what_tells_positions_apart():
    prefix = ifs.catalogue.parse_spec("match2:prefix=true")
    assert settings(prefix, causal=True)["positional"] is False          # the mask tells o what comes before it
    at_last = ifs.parse_target("max(F0(x[T], x[t]) for t in T)")
    assert settings(at_last)["positional"] is True and settings(at_last, readout="last")["positional"] is False


def test_what_is_given_is_kept():
    arch = ifs.Architecture(heads=(1,), input_dim=3, positional=False, readout="output")
    assert not arch.unset and settled(arch, ifs.catalogue.parse_spec("hop_k")) is arch
    left = ifs.Architecture(heads=(1, 1))
    assert left.unset == {"input_dim", "positional", "readout"}
    assert (left.input_dim, left.positional, left.readout) == (1, False, "output")   # what they read until settled
    assert not settled(left, ifs.catalogue.parse_spec("induction_head")).unset
    assert left.with_heads((2, 2)).unset == left.unset


def test_python_and_the_command_line_ask_the_same_question():
    """The issue's two examples: d = 2 and T/4 - 1 for min_pairwise_dot on (4,); positions for the induction
    head on (1, 1), FEASIBLE from both."""
    for spec, heads in (("min_pairwise_dot", (4,)), ("induction_head", (1, 1)), ("hop_k", (1, 1, 1))):
        target = ifs.catalogue.parse_spec(spec)
        from_python = ifs.decide(spec, ifs.Architecture(heads=heads))
        args = cli.build_parser().parse_args(["decide", spec, "--heads", ",".join(map(str, heads))])
        assert from_python.architecture == cli._architecture(args, target)
    assert str(ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(4,))).exponent) == "T/4 - 1"
    assert ifs.decide("induction_head", ifs.Architecture(heads=(1, 1))).feasible


def test_an_explicit_value_is_never_replaced():
    verdict = ifs.decide("induction_head", ifs.Architecture(heads=(1, 1), positional=False, input_dim=2))
    assert verdict.status is ifs.Status.INFEASIBLE and str(verdict.exponent) == "oo"
    assert dataclasses.replace(ifs.Architecture(heads=(1,)), heads=(2,)).unset == frozenset()  # replace gives values
