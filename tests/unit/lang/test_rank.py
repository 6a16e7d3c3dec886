"""The rank a head needs for a selection's score (infoflow_smt/lang/rank.py): the exact rank of its bilinear
form, on scores of every kind the rule names. ``tests/unit/verify/test_rank_measure.py`` and
``tests/properties/test_rank_aware.py`` hold the count to the rank measured on numbers."""
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
    # forms and separable terms share dimensions through a shared vector or factor
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


# Forms that share dimensions in no one vector (issue 37's examples), and products of forms.
@pytest.mark.parametrize("text, d, rank", [
    # the form I + a1 a2^T: rank d, not d + 1
    ("min(dot(x[s], x[t]) + dot(a1, x[s]) * dot(a2, x[t]) for s in T for t in T)", 8, 8),
    # the normal form writes four dots, whose block matrix [[I, I], [I, I]] has rank d, not 2d
    ("min(dot(x[s] + x[s-1], x[t] + x[t-1]) for s in range(2, T+1) for t in range(2, T+1))", 8, 8),
    ("min(dot(x[s], x[t]) + dot(x[s], x[t-1]) + dot(x[s-1], x[t]) for s in range(2, T+1) for t in range(2, T+1))",
     3, 6),
    # a product of forms is their tensor product: dot**2 is the symmetric square, d (d + 1) / 2
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 1, 1),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 2, 3),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 4, 10),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", 8, 36),
    ("min(dot(x[s], x[t])**3 for s in T for t in T)", 3, 10),
    ("min(bilinear(A1, x[s], x[t])**2 for s in T for t in T)", 4, 10),
    ("min(dot(x[s], x[t]) * bilinear(A1, x[s], x[t]) for s in T for t in T)", 3, 6),
    ("min(f1(x[s]) * f2(x[t]) + dot(x[s], x[t])**2 for s in T for t in T)", 3, 7),
    # Lagrange's identity: |x|^2 |y|^2 - <x, y>^2 is the sum of the d (d - 1) / 2 squares (x_i y_j - x_j y_i)^2,
    # whose diagonal monomials x_i^2 y_j^2 add d: the exact coefficients count, not only which terms appear
    ("min(dot(x[s], x[s]) * dot(x[t], x[t]) - dot(x[s], x[t])**2 for s in T for t in T)", 3, 6),
])
def test_the_rank_of_the_bilinear_form(text, d, rank):
    assert _ranks(text, d)["g0.t"] == rank


@pytest.mark.parametrize("text", [
    "min(f2(x[s], x[t])**2 for s in T for t in T)",                     # a function of both sides, squared
    "min(dot(x[s], x[t])**0.5 for s in T for t in T)",                  # a fractional power of a form
    "min(dot(x[s], x[t]) * f1(x[s] + x[t]) for s in T for t in T)",
    "min(dot(x[s], x[t]) / dot(x[s], x[t-1]) for s in T for t in range(2, T+1))",  # a quotient of forms
])
def test_a_function_of_both_sides_that_is_no_polynomial_has_no_bounded_rank(text):
    # the inner selection has none; the outer one compares a value the candidate holds
    assert sorted(_ranks(text, 3).values(), key=repr) == [1, None]


def test_one_side_quotients_norms_and_fixed_positions_are_that_sides_features():
    assert _ranks("min(dot(x[s], x[t]) / f1(x[t]) for s in T for t in T)", 3)["g0.s"] == 3
    assert _ranks("max(dot(x[T], x[t]) * dot(x[T-1], x[t]) for t in T)", 3) == {"g0.t": 6}
    assert _ranks("max(dot(x[T], x[t]) * norm(x[t]) + norm(x[T]) * f1(x[t]) for t in T)", 3) == {"g0.t": 4}
    assert _ranks("max(norm(x[T] - x[t]) for t in T)", 3) == {"g0.t": None}
    assert _ranks("max(norm(x[T] - x[t])**4 for t in T)", 2) == _ranks("max(dot(x[T] - x[t], x[T] - x[t])**2 "
                                                                          "for t in T)", 2) == {"g0.t": 8}


def test_a_score_too_large_to_count_is_no_bounded_rank():
    """dot(x[s], x[t])**6 at d = 32 expands past MAX_TERMS monomials: refused at once, not expanded."""
    assert _ranks("min(dot(x[s], x[t])**6 for s in T for t in T)", 32)["g0.t"] is None
