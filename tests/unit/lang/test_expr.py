"""The syntax tree's pure functions: free variables, renaming, height, vector values, fixed positions."""
from __future__ import annotations

import dataclasses

import pytest

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import parse_target_expr, to_text


def parsed(text: str) -> ex.Expr:
    return parse_target_expr(text)


@pytest.mark.parametrize("text", ["max(f1(x[t]) for t in T)", "x[1] + x[T]",
                                  "min(dot(x[s], x[t]) for s in T for t in T)"])
def test_a_whole_target_reads_no_free_variable(text):
    assert ex.free_variables(parsed(text)) == frozenset()


def test_free_variables_are_those_no_inner_reduction_binds():
    joint = parsed("min(dot(x[s], x[t]) for s in T for t in T)")
    assert ex.free_variables(joint.body) == {"s", "t"}
    nested = parsed("max(f1(x[t]) + max(f2(x[s], x[t-1]) for s in T) for t in T)")
    inner = next(c for c in ex.children(nested.body) if isinstance(c, ex.Reduce))
    assert ex.free_variables(nested.body) == {"t"} and ex.free_variables(inner.body) == {"s", "t"}
    assert ex.free_variables(inner) == {"t"}  # an offset read x[t-1] counts as a read of t


def test_rename_renames_binders_and_reads_alike():
    target = parsed("max(f1(x[t]) + f2(x[t-1]) for t in T)")
    renamed = ex.rename(target, {"t": "u"})
    assert to_text(renamed) == "max(f1(x[u]) + f2(x[u-1]) for u in T)"
    assert ex.rename(target, {"v": "w"}) == target  # names it does not use stay as they are


def test_height_counts_nested_reductions():
    assert ex.height(parsed("x[1] + x[2]")) == 0
    assert ex.height(parsed("max(f1(x[t]) for t in T)")) == 1
    assert ex.height(parsed("max(f1(x[t]) + max(f2(x[s], x[t]) for s in T) for t in T)")) == 2
    assert ex.height(parsed("max(f1(x[t]) for t in T) + min(f2(x[s]) for s in T)")) == 1


def test_children_and_map_children_agree():
    target = parsed("f1(x[1]) + f2(x[2])")
    assert len(ex.children(target)) == 2
    swapped = ex.map_children(target, lambda c: ex.Neg(c))
    assert ex.children(swapped) == tuple(ex.Neg(c) for c in ex.children(target))
    assert ex.children(ex.Num(3.0)) == () and ex.map_children(ex.Num(3.0), ex.Neg) == ex.Num(3.0)


@pytest.mark.parametrize("text, vector", [
    ("x[1]", True), ("x[1] + x[2]", True), ("sum(x[t] for t in T)", True), ("f1(x[1])", False),
    ("dot(x[1], x[2])", False), ("max(f1(x[t]) for t in T)", False), ("x[argmax(f1(x[t]) for t in T)]", True),
])
def test_is_vector(text, vector):
    assert ex.is_vector(parsed(text)) is vector


def test_reads_tokens_as_numbers_only_for_selections_of_vectors():
    assert ex.reads_tokens_as_numbers(parsed("max(x[t] for t in T)"))
    assert not ex.reads_tokens_as_numbers(parsed("sum(x[t] for t in T)"))
    assert not ex.reads_tokens_as_numbers(parsed("max(f1(x[t]) for t in T)"))


def test_fixed_positions_resolve_from_either_end():
    assert ex.FixedIndex(3).resolve(10) == 3
    assert ex.FixedIndex(0, from_end=True).resolve(10) == 10   # x[T]
    assert ex.FixedIndex(2, from_end=True).resolve(10) == 8    # x[T-2]


def test_reduce_kinds_say_what_they_return():
    selections = {k for k in ex.ReduceKind if k.is_selection}
    assert selections == {ex.ReduceKind.MIN, ex.ReduceKind.MAX, ex.ReduceKind.ARGMIN, ex.ReduceKind.ARGMAX,
                          ex.ReduceKind.KTH_LARGEST}
    assert {k for k in ex.ReduceKind if k.returns_index} == {ex.ReduceKind.ARGMIN, ex.ReduceKind.ARGMAX}


def test_nodes_are_frozen_and_equal_by_value():
    a, b = parsed("max(f1(x[t]) for t in T)"), parsed("max(f1(x[t]) for t in T)")
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.kind = ex.ReduceKind.MIN
