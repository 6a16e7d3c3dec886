"""Interchangeable groups are ordered (``smt/symmetry.py``) without changing any answer: the encoding with the
order is satisfiable under a set of assumptions exactly when the one without is, at every cost level."""
from __future__ import annotations

import random

import pytest
from support.generators import random_architecture, random_target, twinned_target

import infoflow_smt as ifs
from infoflow_smt.smt import encoder, symmetry
from infoflow_smt.smt.encoder import goal_needs


def _pairs(text: str) -> list:
    target = ifs.catalogue.as_target(text)
    enc = encoder.encode(target, ifs.Architecture(heads=(1, 1), embed_dim=32, input_dim=2), ordered=False)
    return symmetry.adjacent_pairs(enc.nodes, enc.outer, goal_needs(target))


def test_a_min_and_a_max_that_read_alike_are_interchangeable():  # the encoding ranks both by a score
    assert len(_pairs("F0(max(f1(x[t]) for t in T), min(f1(x[t]) for t in T))")) == 1


def test_the_groups_of_intrinsic_dimension_are_interchangeable_in_neighbouring_pairs():
    pairs = _pairs("intrinsic_dimension:D=4")
    assert len(pairs) == 3
    assert [a[0].split(".")[0] for a, _ in pairs] == ["g0", "g1", "g2"]
    assert all(len(a) == len(b) == 2 for a, b in pairs)


@pytest.mark.parametrize("text", [
    "F0(max(f1(x[t]) for t in T), max(dot(x[t], x[1]) for t in T))",         # one reads a fixed position
    "F0(max(f1(x[t]) for t in T), kth_largest(2, f2(x[t], x[t]) for t in T))",  # nor a k-th largest
    # one group read inside the other's score: the two play different roles
    "max(f1(x[t]) + min(f2(x[t], x[s]) for s in T) for t in T)",
])
def test_groups_that_play_different_roles_are_not_interchangeable(text: str):
    assert _pairs(text) == []


def _levels_answers(target, arch, ordered: bool, anchors: bool) -> list:
    """The status of the question at each prefix of the cost levels (the cheapest satisfiable prefix is
    the exponent)."""
    enc = encoder.encode(target, arch, anchors=anchors, ordered=ordered)
    answers = []
    for top in range(len(enc.levels)):
        excluded = [x for i, x in enumerate(enc.excluded_levels()) if i > top]
        answers.append(str(enc.solver.check(*enc.assumptions(arch.heads), *excluded)))
    return answers


def _case(index: int):
    rng = random.Random(70_000 + index)
    positional = rng.random() < 0.3
    text = twinned_target(rng, positional) if index % 4 else random_target(rng, positional)
    arch = random_architecture(rng, positional)
    return ifs.catalogue.as_target(text), arch.with_heads(tuple(rng.randint(1, 3) for _ in arch.heads))


CASES = [_case(i) for i in range(40)]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_ordering_interchangeable_groups_changes_no_status_at_any_level(index: int):
    target, arch = CASES[index]
    for anchors in (False, True):
        assert _levels_answers(target, arch, True, anchors) == _levels_answers(target, arch, False, anchors)


def test_the_random_cases_have_interchangeable_groups():
    with_pairs = sum(bool(_pairs(t.text)) for t, _ in CASES)
    assert with_pairs >= 15, with_pairs  # the test above must mostly compare ordered encodings


@pytest.mark.parametrize("D, heads", [(3, (1, 1, 1)), (3, (1, 1, 1, 1)), (4, (2, 1, 2)), (4, (3, 3))])
def test_intrinsic_dimension_gets_the_same_answers_ordered(D: int, heads: tuple[int, ...]):
    target = ifs.catalogue.get("intrinsic_dimension", D=D)
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)
    assert _levels_answers(target, arch, True, False) == _levels_answers(target, arch, False, False)


def test_a_grown_ordered_encoding_asserts_what_a_fresh_one_asserts():
    target = ifs.catalogue.get("intrinsic_dimension", D=3)
    small = ifs.Architecture(heads=(2, 1), embed_dim=32, input_dim=2)
    grown = encoder.encode(target, small)
    assert encoder.grow(grown, small.with_heads((2, 1, 1, 2)))
    fresh = encoder.encode(target, small.with_heads((2, 1, 1, 2)))
    assert sorted(grown.text.split("\n")) == sorted(fresh.text.split("\n"))
    assert any(line.startswith("(declare-const |tie:4:") for line in fresh.text.split("\n"))


@pytest.mark.parametrize("text, heads", [
    ("linear_max_sum:D=4", (1, 1)), ("linear_max_sum:D=5", (1, 2)), ("linear_max_sum:D=6", (2, 1)),
    ("intrinsic_dimension:D=2", (2, 2)),   # twin groups and twin anchors at once: one order of the facts
    # five subsets: anchors 1 and 5 lie in the same subsets (membership goes by the position mod 4)
    (" + ".join(f"max(f{i}(x[t]) for t in S{i})" for i in range(1, 6)), (1, 1)),
])
def test_ordering_twin_anchors_changes_no_status_at_any_level(text, heads):
    """Free anchors in the same candidate sets are swapped by a renaming of positions (``twin_anchors``):
    ordering them keeps every answer, alone and beside the order of interchangeable groups."""
    target = ifs.catalogue.parse_spec(text)
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, positional=True)
    enc = encoder.encode(target, arch)
    assert enc._builder.anchor_pairs, "the case must have twin anchors"
    assert _levels_answers(target, arch, True, True) == _levels_answers(target, arch, False, True)
