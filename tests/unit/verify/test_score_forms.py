"""The spellings a selection is made in (``verify/score_forms.py``): each keeps the reduction's value."""
from __future__ import annotations

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.evaluate import evaluate_expr
from infoflow_smt.lang.expr import Binding, Reduce, ReduceKind
from infoflow_smt.lang.language import parse_target_expr, to_text
from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify import score_forms

X = np.random.default_rng(2).standard_normal((4, 9, 2))


def _same_value(a, b) -> bool:
    realization = Realization(0)
    return bool(np.allclose(evaluate_expr(a, X, realization), evaluate_expr(b, X, realization)))


@pytest.mark.parametrize("text", ["min(dot(x[s], x[t]) + f1(x[s]) for s in T for t in T)",
                                  "max(bilinear(A1, x[s], x[t]) + f2(x[t], x[u]) for s in T for t in T for u in T)",
                                  "sum(dot(x[s], x[t]) for s in T for t in S1)"])
def test_every_nested_spelling_keeps_the_value(text: str) -> None:
    joint = parse_target_expr(text)
    found = score_forms.forms(joint)
    assert found and all(_same_value(form, joint) for form in found)


def test_a_range_bounded_by_another_variable_is_nested_inside_it() -> None:
    found = score_forms.forms(parse_target_expr("min(dot(x[s], x[t]) for s in T for t in range(1, s))"))
    assert [to_text(f) for f in found] == ["min(min(dot(x[s], x[t]) for t in range(1, s)) for s in T)"]


@pytest.mark.parametrize("text", ["min(dot(x[s], x[t]) for s in T for t in T)",
                                  "max(bilinear(A1, x[s], x[t]) for s in T for t in T)"])
def test_under_the_mask_a_pair_is_read_from_its_later_member(text: str) -> None:
    joint = parse_target_expr(text)
    later = score_forms.forms(joint, causal=True)[-1]
    assert "range(1, s+1)" in to_text(later) and _same_value(later, joint)


def test_a_selection_reindexed_by_an_offset_has_the_same_winner_moved() -> None:
    r = parse_target_expr("argmax(f1(x[t+1]) for t in range(1, T))")
    body, domain = score_forms.reindexed(r.body, "t", r.bindings[0].domain, 1)
    assert to_text(body) == "f1(x[t])" and to_text(ifs.parse_target("max(f1(x[t]) for t in range(2, T+1))").expr) \
        == to_text(Reduce(ReduceKind.MAX, body, (Binding("t", domain),)))
    moved = Reduce(r.kind, body, (Binding("t", domain),))
    realization = Realization(0)
    assert np.array_equal(evaluate_expr(moved, X, realization), evaluate_expr(r, X, realization) + 1)
    everywhere = parse_target_expr("max(f1(x[t]) for t in T)").bindings[0].domain
    assert score_forms.reindexed(r.body, "t", everywhere, 1) is None   # t = T would leave the sequence


def test_a_sum_splits_into_linear_parts_and_a_product_of_two_per_position_values_does_not() -> None:
    summed = parse_target_expr("max(sum(dot(x[s], x[t]) - f1(x[s]) * f1(x[t]) + f1(x[s]) for t in T) for s in T)").body
    parts = score_forms.linear_parts(summed.body, "t")
    assert [p.shape for p in parts] == [score_forms.Shape.DOT, score_forms.Shape.SCALED, score_forms.Shape.CONSTANT]
    joint = parse_target_expr("max(sum(f1(x[s] + x[t]) for t in T) for s in T)").body
    assert score_forms.linear_parts(joint.body, "t") is None
    assert [to_text(a) for a in score_forms.atoms(parse_target_expr("dot(x[1], x[argmax(f1(x[t]) for t in T)]) + 2"))] \
        == ["x[1]", "x[argmax(f1(x[t]) for t in T)]"]
