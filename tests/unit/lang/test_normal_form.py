"""The normal form: each rewrite it knows gives one spelling for one function, and keeps the value.

One case per rule of the module docstring: two spellings of one function must normalize to the same
expression, and both must evaluate to the same numbers. Distinct functions must stay distinct.
"""
from __future__ import annotations

import numpy as np
import pytest

from infoflow_smt.lang.language import parse_target_expr, to_text
from infoflow_smt.lang.normal_form import normalize
from infoflow_smt.lang.target import parse_target

SAME_FUNCTION = [
    # rule, a spelling, and the canonical one
    ("1 arithmetic cancels", "max(f1(x[t]) + f2(x[t]) - f2(x[t]) for t in T)", "max(f1(x[t]) for t in T)"),
    ("1 norm squared is a dot", "norm(x[1] + x[2])**2", "dot(x[1] + x[2], x[1] + x[2])"),
    ("2 nested selections join", "min(min(dot(x[s], x[t]) for t in T) for s in T)",
     "min(dot(x[s], x[t]) for s in T for t in T)"),
    ("3 constant terms leave", "min(f1(x[t]) + f2(x[1]) for t in T)", "min(f1(x[t]) for t in T) + f2(x[1])"),
    ("4 disjoint terms split", "min(f1(x[a]) + f2(x[b]) for a in T for b in T)",
     "min(f1(x[a]) for a in T) + min(f2(x[b]) for b in T)"),
    ("5 a scale leaves", "min(2 * f1(x[t]) for t in T)", "2 * min(f1(x[t]) for t in T)"),
    ("5 a sign flips the direction", "-max(-f1(x[t]) for t in T)", "min(f1(x[t]) for t in T)"),
    ("6 a selection over ties is its value", "max(f1(x[2]) for t in T)", "f1(x[2])"),
    ("7 one selection written twice", "max(f1(x[t]) for t in T) + max(f1(x[s]) for s in T)",
     "2 * max(f1(x[t]) for t in T)"),
    ("7 dot is symmetric", "min(dot(x[t], x[s]) for s in T for t in T)",
     "min(dot(x[s], x[t]) for s in T for t in T)"),
    ("8 a sum goes inside a dot", "sum(dot(x[t], x[1]) for t in T)", "dot(sum(x[t] for t in T), x[1])"),
    ("terms are ordered", "x[2] + x[1]", "x[1] + x[2]"),
]


@pytest.mark.parametrize("rule, text, canonical", SAME_FUNCTION, ids=[c[0] for c in SAME_FUNCTION])
def test_a_rewrite_gives_the_same_normal_form(rule, text, canonical):
    assert normalize(parse_target_expr(text)) == normalize(parse_target_expr(canonical))


@pytest.mark.parametrize("rule, text, canonical", SAME_FUNCTION, ids=[c[0] for c in SAME_FUNCTION])
def test_both_spellings_compute_the_same_values(rule, text, canonical):
    X = np.random.default_rng(7).normal(size=(4, 6, 3))
    np.testing.assert_allclose(parse_target(text).evaluate(X), parse_target(canonical).evaluate(X), rtol=1e-9,
                               atol=1e-9)


@pytest.mark.parametrize("one, other", [
    ("max(f1(x[t]) for t in T)", "min(f1(x[t]) for t in T)"),
    ("max(f1(x[t]) for t in T)", "max(f2(x[t]) for t in T)"),
    ("min(dot(x[s], x[t]) for s in T for t in T)", "min(dot(x[s], x[s]) for s in T)"),
    ("kth_largest(2, f1(x[t]) for t in T)", "kth_largest(3, f1(x[t]) for t in T)"),
])
def test_distinct_functions_keep_distinct_normal_forms(one, other):
    assert normalize(parse_target_expr(one)) != normalize(parse_target_expr(other))


@pytest.mark.parametrize("text", [c[1] for c in SAME_FUNCTION])
def test_normalizing_twice_changes_nothing(text):
    once = normalize(parse_target_expr(text))
    assert normalize(once) == once


def test_the_users_variable_names_are_kept():
    text = to_text(normalize(parse_target_expr("max(f1(x[u]) + max(f2(x[v]) for v in T) for u in T)")))
    assert text == "max(f1(x[u]) for u in T) + max(f2(x[u]) for u in T)"
