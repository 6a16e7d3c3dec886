"""Witness programs: their JSON round trip, their structural checks, and their cost (the worst action's)."""
from __future__ import annotations

import dataclasses

import pytest
import sympy

from infoflow_smt.lang import catalogue
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.program import Action, Mode, Offset, Op, Program, program_cost, validate
from infoflow_smt.symbols import T

# min_pairwise_dot in two layers (paper 1, Theorem 1): each input position s retrieves its partner, the
# output token retrieves the best s
DEPTH_SEPARATION = Program((Action(1, 1, "input", Op(Mode.RETRIEVE, "g0.t")),
                            Action(2, 1, "output", Op(Mode.RETRIEVE, "g0.s"))), layers=2)
POSITIONAL = Program((Action(1, 1, "input", Op(Mode.POSITIONS, positions=(Offset(-1), FixedIndex(0, True)))),
                      Action(1, 1, FixedIndex(2), Op(Mode.IDLE)),
                      Action(1, 2, "output", Op(Mode.AGGREGATE))), order=(("g0", ("s", "t")),), layers=1)


@pytest.mark.parametrize("program", [DEPTH_SEPARATION, POSITIONAL], ids=["retrievals", "positions"])
def test_json_round_trip(program):
    assert Program.from_json(program.to_json()) == program


def test_a_program_is_a_frozen_record_that_counts_its_working_heads():
    assert DEPTH_SEPARATION.operations == 2 and POSITIONAL.operations == 2  # an idle head is free
    assert POSITIONAL.order_map == {"g0": ("s", "t")}
    assert DEPTH_SEPARATION.action_for(2, 1, "output").op.node == "g0.s"
    assert DEPTH_SEPARATION.action_for(2, 1, "input") is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEPTH_SEPARATION.layers = 3


def test_str_reads_one_action_per_line():
    assert str(DEPTH_SEPARATION).splitlines() == [
        "layer 1, head 1, at every input position: max-position retrieval of g0.t",
        "layer 2, head 1, at the output token: max-position retrieval of g0.s"]
    assert "specific-position aggregation of {p-1, T}" in str(POSITIONAL)
    assert "variable orders: g0: s > t" in str(POSITIONAL)
    assert str(Program(())) == "(no head does anything)"


def test_a_program_that_fits_has_no_problem():
    assert validate(DEPTH_SEPARATION, Architecture(heads=(1, 1))) == []
    assert validate(POSITIONAL, Architecture(heads=(2,), positional=True)) == []


@pytest.mark.parametrize("program, arch, problem", [
    (DEPTH_SEPARATION, Architecture(heads=(1,)), "layer 2 does not exist (the architecture has 1)"),
    (Program((Action(1, 2, "input", Op(Mode.AGGREGATE)),)), Architecture(heads=(1,)), "layer 1 has 1 heads"),
    (Program((Action(1, 1, "input", Op(Mode.AGGREGATE)), Action(1, 1, "input", Op(Mode.AVERAGE)))),
     Architecture(heads=(1,)), "head used twice at the same positions"),
    (POSITIONAL, Architecture(heads=(2,)), "needs positional encoding"),
    (Program((Action(1, 1, "output", Op(Mode.POSITIONS, positions=(Offset(-1),))),)),
     Architecture(heads=(1,), positional=True), "offsets are relative to an input position"),
])
def test_structural_problems_are_named(program, arch, problem):
    assert any(problem in p for p in validate(program, arch)), validate(program, arch)


def test_the_cost_is_the_worst_actions():
    target = catalogue.get("min_pairwise_dot")
    tree = comparison_tree(target, DEPTH_SEPARATION.order_map)
    arch = Architecture(heads=(1, 1), embed_dim=32, input_dim=2)
    exponent, shares = program_cost(DEPTH_SEPARATION, tree, arch)
    assert exponent == 1 and [s for _, s in shares] == [1, 1]
    aggregating = Program((Action(1, 1, "output", Op(Mode.AGGREGATE)),), layers=1)
    exponent, shares = program_cost(aggregating, tree, Architecture(heads=(1,), embed_dim=32, input_dim=2))
    assert exponent == T / 16 - 1                          # decoding T tokens of dimension 2 from width 32
    both = Program(DEPTH_SEPARATION.actions + (Action(2, 2, "output", Op(Mode.AGGREGATE)),), layers=2)
    exponent, shares = program_cost(both, tree, Architecture(heads=(1, 2), embed_dim=32, input_dim=2))
    assert exponent == T / 8 - 1 and len(shares) == 3      # a head of layer 2 works in 32/2 dimensions
    assert program_cost(Program(()), tree, arch) == (sympy.Integer(0), ())


def test_positions_gathered_are_decoded_at_their_count():
    """Aggregating x[1] and x[2] gathers 2 tokens of dimension 2: at width 8, 2 * 2 / 8 - 1 = -1/2, clamped
    at 0; at width 2, 2 * 2 / 2 - 1 = 1."""
    tree = comparison_tree(catalogue.get("specific_positions"))
    program = Program((Action(1, 1, "output", Op(Mode.POSITIONS, positions=(FixedIndex(1), FixedIndex(2)))),))
    assert program_cost(program, tree, Architecture(heads=(1,), embed_dim=8, input_dim=2, positional=True))[0] == 0
    assert program_cost(program, tree, Architecture(heads=(1,), embed_dim=2, input_dim=2, positional=True))[0] == 1


def test_a_printed_witness_says_what_each_head_selects_not_the_node_names():
    import infoflow_smt as ifs
    verdict = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1, 1), input_dim=2))
    text = str(verdict.witness)
    assert "g0." not in text and "max-position retrieval of min(dot(x[s], x[t]) for t in T)" in text
    plain = Program.from_json(verdict.witness.to_json())   # the names are words, not identity
    assert plain == verdict.witness and "g0.t" in str(plain) and str(plain.named(verdict.target)) == text
