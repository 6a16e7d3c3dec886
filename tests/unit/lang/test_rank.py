"""The rank a head needs for a selection's score (lang/rank.py), on scores of every kind the rule names."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.rank import score_rank
from infoflow_smt.lang.trees import comparison_tree, selection_nodes


def _ranks(text: str, d: int) -> dict[str, int | None]:
    tree = comparison_tree(ifs.parse_target(text))
    return {n: score_rank(tree, n, d) for n in selection_nodes(tree)}


@pytest.mark.parametrize("text, expected", [
    # the inner selection compares a form of rank d; the outer one compares a value the candidate holds
    ("min(dot(x[s], x[t]) for s in T for t in T)", {"g0.t": 8, "g0.s": 1}),
    ("max(f1(x[t]) for t in T)", {"g0.t": 1}),
    ("max(dot(a1, x[t]) + f1(x[t]) for t in T)", {"g0.t": 1}),            # candidate-only terms share one
    ("max(bilinear(A1, x[s], x[t]) + dot(x[t], x[s]) for s in T for t in T)", {"g0.t": 8, "g0.s": 1}),
    ("max(bilinear(A1, x[s], x[t]) + f1(x[t]) + f2(x[s]) for s in T for t in T)", {"g0.t": 9, "g0.s": 1}),
    ("max(f1(x[s]) * f2(x[t]) + f3(x[s]) * f1(x[t]) for s in T for t in T)", {"g0.t": 2, "g0.s": 1}),
    ("max(f2(x[s], x[t]) for s in T for t in T)", {"g0.t": None, "g0.s": 1}),
    ("max(f1(x[s] + x[t]) for s in T for t in T)", {"g0.t": None, "g0.s": 1}),
    ("x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]", {"g0.t": 8}),  # x[T] is held by the selector
    # forms and separable terms share dimensions through a shared vector or factor (a minimum vertex cover)
    ("min(dot(x[s], x[t]) + dot(x[s-1], x[t-1]) for s in range(2, T+1) for t in range(2, T+1))",
     {"g0.t": 16, "g0.s": 1}),
    ("min(dot(x[s], x[t]) + bilinear(A1, x[s], x[t-1]) for s in T for t in range(2, T+1))",
     {"g0.t": 8, "g0.s": 1}),
    ("max(f1(x[s]) * f2(x[t]) + f3(x[s]) * f2(x[t]) for s in T for t in T)", {"g0.t": 1, "g0.s": 1}),
    ("max(dot(x[t], sum(x[u] for u in T)) + f1(x[t]) for t in T)", {"g0.t": 9}),  # a form with a held sum
])
def test_score_rank(text, expected):
    assert _ranks(text, 8) == expected


def test_the_rank_of_a_form_follows_the_token_dimension():
    assert [_ranks("min(dot(x[s], x[t]) for s in T for t in T)", d)["g0.t"] for d in (1, 2, 16)] == [1, 2, 16]
