"""Target: the parsed function with its seed and name, what it delegates to trees, and its input checks."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import catalogue, trees
from infoflow_smt.lang.target import parse_target


def test_parse_target():
    target = parse_target("max( f1(x[t]) for t in T )", seed=5, name="mine")
    assert str(target) == target.text == "max(f1(x[t]) for t in T)"
    assert target.seed == 5 and target.realization.seed == 5 and target.name == "mine"
    assert target == parse_target("max(f1(x[t]) for t in T)", seed=5, name="mine")
    with pytest.raises(dataclasses.FrozenInstanceError):
        target.seed = 3
    with pytest.raises(InvalidSpecError, match="target text must be a str, got bytes"):
        parse_target(b"x[1]")
    with pytest.raises(InvalidSpecError, match="seed must be an integer, got 1.5"):
        parse_target("x[1]", seed=1.5)


@pytest.mark.parametrize("attribute, function", [
    ("comparison_order", "comparison_order"), ("comparison_dimension", "comparison_dimension"),
    ("comparison_number", "comparison_number"), ("depth", "depth"), ("needs_positional", "needs_positional"),
])
def test_measures_are_delegated_to_trees(attribute, function, monkeypatch):
    target = catalogue.get("min_pairwise_dot")
    monkeypatch.setattr(trees, function, lambda t: ("measured", t))
    assert getattr(target, attribute) == ("measured", target)


def test_tree_is_delegated_to_trees(monkeypatch):
    target = catalogue.get("min_pairwise_dot")
    monkeypatch.setattr(trees, "comparison_tree", lambda t, order=None: ("tree", t, order))
    assert target.tree({"g0": ("t", "s")}) == ("tree", target, {"g0": ("t", "s")})


@pytest.mark.parametrize("text, shortest", [
    ("max(f1(x[t]) for t in T)", 2),
    ("x[3]", 4),
    ("kth_largest(3, f1(x[t]) for t in T)", 4),
    ("max(f1(x[t-2]) for t in T)", 4),
])
def test_shortest_length_is_past_every_fixed_position_rank_and_offset(text, shortest):
    assert parse_target(text).shortest_length == shortest


def test_evaluate_checks_its_input_and_lists_every_problem():
    target = parse_target("max(f1(x[t]) for t in T)")
    assert target.evaluate(np.zeros((3, 4, 2))).shape == (3,)
    with pytest.raises(InvalidSpecError, match="X must be a numpy array, got list"):
        target.evaluate([[[1.0]]])
    with pytest.raises(InvalidSpecError, match=r"shape \(batch, T, d\), got shape \(4, 2\)"):
        target.evaluate(np.zeros((4, 2)))
    with pytest.raises(InvalidSpecError, match="non-finite"):
        target.evaluate(np.full((1, 3, 2), np.nan))


def test_work_counts_the_index_tuples_one_evaluation_visits():
    assert parse_target("max(f1(x[t]) for t in T)").work(8) == 8
    # a joint min is evaluated nested: the inner min over t for each s (64 tuples), then the min over s (8)
    assert parse_target("min(dot(x[s], x[t]) for s in T for t in T)").work(8) == 72
    assert parse_target("x[3]").work(8) == 0


# ---- answers at every position -------------------------------------------------------------------------
def test_a_target_naming_o_answers_at_every_position():
    every = parse_target("max(F0(x[o], x[t]) for t in T)")
    last = parse_target("max(F0(x[T], x[t]) for t in T)")
    X = np.random.default_rng(0).standard_normal((3, 6, 2))
    values = every.evaluate(X)
    assert every.per_position and not last.per_position and values.shape == (3, 6)
    assert np.allclose(values[:, -1], last.evaluate(X))  # position T's own answer is the one read at T
    first = parse_target("max(F0(x[1], x[t]) for t in T)").evaluate(X)
    assert np.allclose(values[:, 0], first)
    assert parse_target("x[o] + x[o-1]").evaluate(X).shape == (3, 6, 2)
    assert np.allclose(parse_target("x[o-1]").evaluate(X)[:, 0], 0.0)  # before the sequence: padding


def test_no_answer_is_asked_where_the_answers_own_range_is_empty():
    """``range(1, o)`` (earlier than me) has no candidate at ``o = 1``: position 1 is asked nothing and its
    entry is NaN; the others are the target's values there (docs/model.md, "Answers at every position")."""
    earlier = parse_target("max(F0(x[o], x[t]) for t in range(1, o))")
    X = np.random.default_rng(0).standard_normal((3, 6, 2))
    values = earlier.evaluate(X)
    assert earlier.answered(6).tolist() == [False] + [True] * 5 and np.isnan(values[:, 0]).all()
    at_4 = parse_target("max(F0(x[4], x[t]) for t in range(1, 4))").evaluate(X)
    assert np.allclose(values[:, 3], at_4)
    kth = parse_target("kth_largest(2, F0(x[o], x[t]) for t in range(1, o+1))")
    assert kth.answered(4).tolist() == [False, True, True, True]  # k candidates from o = 2 on
    pairs = parse_target("min(dot(x[s], x[t]) + f1(x[o]) for s in range(1, o) for t in range(1, s))")
    assert pairs.answered(4).tolist() == [False, False, True, True]  # the first pair is (2, 1), at o = 3
    assert parse_target("max(F0(x[o], x[t]) for t in T)").answered(3).all()


@pytest.mark.parametrize("text, match", [
    ("max(F0(x[o], x[t]) for t in range(o, o))", "asks no position for an answer"),
    # an empty range inside another reduction's body is refused as before: the answer at o = 1 reads it
    ("max(F0(x[o], x[s]) + min(dot(x[s], x[t]) for t in range(1, o)) for s in T)", "0 candidates at o=1"),
])
def test_an_answer_defined_nowhere_or_reading_an_empty_range_is_refused(text, match):
    with pytest.raises(InvalidSpecError, match=match):
        parse_target(text).evaluate(np.ones((1, 4, 2)))


def test_a_per_position_target_counts_its_work_for_every_position():
    assert parse_target("max(dot(x[o], x[t]) for t in T)").work(8) == 8 * parse_target(
        "max(dot(x[1], x[t]) for t in T)").work(8)
