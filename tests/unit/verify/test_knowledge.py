"""What one position computes (``verify/knowledge.py``): contents it holds, selections it knows or can make
from what it holds, sums through the averages it knows; nothing else."""
from __future__ import annotations

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify.ground_facts import Ground
from infoflow_smt.verify.knowledge import EMPTY, Holding, Knower, own

X = np.random.default_rng(5).standard_normal((8, 2))


def _knower(positions=(), facts=(), position=9, positional=True) -> Knower:
    holding = Holding(sum(1 << p for p in positions), sum(1 << f for f in facts))
    return Knower(Ground(X, Realization(0)), holding, position, positional=positional)


def _expr(text: str):
    return ifs.parse_target(text).expr


def test_a_token_is_read_only_where_it_is_held() -> None:
    assert np.allclose(_knower([3]).value(_expr("x[3]"), {}), X[2])
    assert _knower([4]).value(_expr("x[3]"), {}) is None
    assert np.allclose(_knower([3]).value(_expr("f1(x[3]) + dot(x[3], a1)"), {}),
                       ifs.parse_target("f1(x[3]) + dot(x[3], a1)").evaluate(X[None])[0])


def test_without_positions_a_fixed_position_is_only_the_own_token() -> None:
    assert _knower([8], position=8, positional=False).value(_expr("x[T]"), {}) is not None
    assert _knower([8], position=3, positional=False).value(_expr("x[T]"), {}) is None
    assert _knower([1, 2], position=2, positional=False).value(_expr("max(dot(x[o-1], x[t]) for t in T)"), {"o": 2}) \
        is None


def test_an_offset_past_the_sequence_reads_the_padding() -> None:
    assert np.allclose(_knower([1]).value(_expr("max(f1(x[t-1]) for t in T)").body, {"t": 1}),
                       Realization(0).function("f1", 2)(np.zeros(2)))


def test_a_selection_is_known_by_its_fact_or_by_holding_every_candidate() -> None:
    selection = _expr("max(f1(x[t]) for t in T)")
    knower = _knower()
    choice = knower.choice(selection, {})
    assert knower.value(selection, {}) is None
    told = _knower([choice.winner], [choice.fact])
    assert np.isclose(told.value(selection, {}), ifs.parse_target("max(f1(x[t]) for t in T)").evaluate(X[None])[0])
    assert _knower([choice.winner], []).value(selection, {}) is None
    assert _knower(range(1, 9)).value(selection, {}) is not None
    assert _knower(range(1, 9), positional=False).value(selection, {}) is not None
    assert _knower([choice.winner], [choice.fact], positional=False).value(_expr("argmax(f1(x[t]) for t in T)"), {}) \
        is None   # the index of the winner as a number needs positional encoding


def test_a_joint_selection_is_known_through_a_nested_spelling() -> None:
    target = _expr("min(dot(x[s], x[t]) for s in T for t in T)")
    everything = _knower(range(1, 9))
    assert np.isclose(everything.value(target, {}), ifs.parse_target("min(dot(x[s], x[t]) for s in T for t in T)")
                      .evaluate(X[None])[0])
    assert _knower([1, 2, 3]).value(target, {}) is None


def test_a_range_with_no_candidate_is_empty() -> None:
    assert _knower(range(1, 9)).value(_expr("max(f1(x[s]) + max(f1(x[t]) for t in range(1, s)) for s in T)").body,
                                      {"s": 1}) is EMPTY


@pytest.mark.parametrize("text", ["sum(dot(x[1], x[t]) for t in T)", "mean(f1(x[t]) + 2 for t in T)",
                                  "sum(bilinear(A1, x[t], x[1]) - 3 * f1(x[t]) for t in T)"])
def test_a_sum_is_known_from_the_averages_of_its_linear_parts(text: str) -> None:
    target = _expr(text)
    ground = Ground(X, Realization(0))
    knower = Knower(ground, own(1), 9, positional=True)
    assert knower.value(target, {}) is None
    facts = 0
    from infoflow_smt.verify.score_forms import linear_parts
    for part in linear_parts(target.body, "t"):
        if part.statistic is not None:
            facts |= 1 << ground.average(part.statistic, "t", tuple(range(1, 9)))[0]
    averaged = Knower(ground, Holding(own(1).positions, facts), 9, positional=True)
    assert np.isclose(averaged.value(target, {}), ifs.parse_target(text).evaluate(X[None])[0])
