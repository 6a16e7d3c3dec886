"""The encoding's vocabulary (infoflow_smt/model/vocabulary.py): classes of positions and tracked constraints."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.model.vocabulary import (
    GOAL,
    INPUT,
    LAST,
    OUTPUT,
    Constraint,
    Family,
    PositionClass,
    budget,
)
from infoflow_smt.smt import encoder


@pytest.mark.parametrize("cls, text, where", [
    (INPUT, "in", "input"), (OUTPUT, "out", "output"), (LAST, "aT", FixedIndex(0, True)),
    (PositionClass.fixed(FixedIndex(3)), "a3", FixedIndex(3)),
    (PositionClass.fixed(FixedIndex(1, True)), "aT-1", FixedIndex(1, True)),
])
def test_a_class_is_one_value_with_one_text_and_one_place_in_a_program(cls, text, where):
    assert str(cls) == text and cls.where == where
    assert cls.anchor is (cls.position is not None)


def test_classes_sort_inputs_anchors_then_the_output_token():
    order = [OUTPUT, PositionClass.fixed(FixedIndex(0, True)), PositionClass.fixed(FixedIndex(2)), INPUT]
    assert [str(c) for c in sorted(order)] == ["in", "a2", "aT", "out"]


def test_the_output_token_is_no_fixed_position():
    with pytest.raises(ValueError, match="output token"):
        PositionClass(position=FixedIndex(1), output=True)


def test_a_constraint_is_read_by_its_fields_and_named_by_its_text():
    assert str(budget(10, OUTPUT)) == "budget:10:out" and budget(10, OUTPUT).layer == 10
    assert str(Constraint(Family.RANK, layer=2, node="g0.t", rank=8)) == "rank:2:g0.t:8"
    assert str(GOAL) == "goal" and GOAL.family is Family.GOAL


def test_the_encoding_tracks_typed_constraints_over_typed_classes():
    arch = ifs.Architecture(heads=(1, 1), embed_dim=8, input_dim=2, positional=True)
    enc = encoder.encode(ifs.parse_target("max(bilinear(A1, x[3], x[t]) for t in T)"), arch)
    assert all(isinstance(c, Constraint) for c in enc.tracked)
    assert {c.where for c in enc.tracked if c.family is Family.BUDGET} == set(enc.classes)
    assert PositionClass.fixed(FixedIndex(3)) in enc.anchors   # the position the target names
