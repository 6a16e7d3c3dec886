"""Facts of one input (``verify/ground_facts.py``): one selection in any spelling, at any host, re-indexed by an
offset, is one fact; different selections are different facts; ties go to the first candidate."""
from __future__ import annotations

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.expr import Reduce, children
from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify.ground_facts import Ground, bound


def _selection(text: str) -> Reduce:
    def first(e):
        if isinstance(e, Reduce):
            return e
        return next(found for c in children(e) if (found := first(c)) is not None)
    return first(ifs.parse_target(text).expr)


def _fact(ground: Ground, text: str, env=()) -> int:
    r = _selection(text)
    candidates = ground.positions(r.bindings[0].domain, dict(env))
    largest = r.kind.value in ("max", "argmax", "kth_largest")
    return ground.choice(r.body, r.variables[0], candidates, bound(dict(env), ["s"]), largest, r.k or 1).fact


@pytest.fixture
def ground() -> Ground:
    return Ground(np.random.default_rng(3).standard_normal((8, 2)), Realization(0))


@pytest.mark.parametrize("spelling", ["max(dot(x[t], x[1]) for t in T)", "-min(-dot(x[u], x[1]) for u in T)",
                                      "max(2 * dot(x[t], x[1]) + 3 for t in T)", "max(dot(x[1], x[t]) for t in T)"])
def test_one_selection_in_any_spelling_is_one_fact(ground, spelling: str) -> None:
    assert _fact(ground, spelling) == _fact(ground, "max(dot(x[t], x[1]) for t in T)")


def test_different_selections_are_different_facts(ground) -> None:
    facts = {_fact(ground, text) for text in ["max(dot(x[t], x[1]) for t in T)", "min(dot(x[t], x[1]) for t in T)",
                                              "kth_largest(2, dot(x[t], x[1]) for t in T)",
                                              "max(f1(x[t]) for t in T)"]}
    assert len(facts) == 4


def test_two_selections_that_rank_alike_by_chance_are_two_facts(ground) -> None:
    """With d = 2 the order of ``dot(x[t], q)`` depends on the direction of ``q`` alone: two selections rank
    their candidates alike on this input, and are still two facts (their scores are no scale of each other)."""
    first, second = (_selection(f"max(dot(x[t], x[{q}]) for t in T)") for q in (1, 2))
    candidates = tuple(range(1, 9))
    winners = [ground.choice(r.body, "t", candidates, ()).winner for r in (first, second)]
    assert winners[0] == winners[1]
    assert _fact(ground, "max(dot(x[t], x[1]) for t in T)") != _fact(ground, "max(dot(x[t], x[2]) for t in T)")


def test_a_selection_hosted_at_a_position_is_the_one_that_position_names(ground) -> None:
    inner = ifs.parse_target("max(max(dot(x[t], x[s]) for t in T) for s in T)").expr.body
    hosted = ground.choice(inner.body, "t", ground.positions(inner.bindings[0].domain), (("s", 3),))
    assert hosted.fact == _fact(ground, "max(dot(x[t], x[3]) for t in T)")


def test_a_selection_reindexed_by_an_offset_is_one_fact_whose_winner_moves(ground) -> None:
    assert _fact(ground, "max(f1(x[t-1]) for t in range(2, T+1))") == _fact(ground, "max(f1(x[t]) for t in range(1, T))")
    r = _selection("max(f1(x[t-1]) for t in range(2, T+1))")
    moved = _selection("max(f1(x[t]) for t in range(1, T))")
    first = ground.choice(r.body, "t", ground.positions(r.bindings[0].domain), ())
    second = ground.choice(moved.body, "t", ground.positions(moved.bindings[0].domain), ())
    assert first.winner == second.winner + 1


def test_ties_go_to_the_first_candidate_and_an_average_is_its_values(ground) -> None:
    tied = ground.choice(ifs.parse_target("max(f1(x[1]) for t in T)").expr.body, "t", (2, 3, 4), ())
    assert tied.winner == 2 and tied.candidates == (2, 3, 4)
    fact, mean = ground.average(ifs.parse_target("x[1]").expr, "t", (1, 2))
    assert np.allclose(mean, ground.X[0]) and ground.average(ifs.parse_target("x[1]").expr, "t", (1, 2))[0] == fact
