"""The deadline of each cell a sweep asks: fair shares of what is left, or a deadline per cell capped by the
whole; the questions a target may still need and those queued behind it for a worker."""
from __future__ import annotations

import math
import time

import pytest

from infoflow_smt.explore.cell_deadlines import CellDeadlines, questions_left, queued_behind, whole_end
from infoflow_smt.model.architecture import Architecture


def _grid(layers, heads):
    return [Architecture(heads=(h,) * L, input_dim=2) for L in layers for h in heads]


def test_without_inference_every_cell_is_a_question():
    grid = _grid(range(1, 6), (1, 2, 3))
    assert questions_left(grid, infer=False) == 15


def test_with_inference_the_walk_asks_about_a_row_and_a_column_each_but_never_more_than_the_cells():
    assert questions_left(_grid(range(1, 11), (1, 2)), infer=True) == 12
    # two cells: the walk cannot ask more questions than there are cells
    assert questions_left(_grid((1, 2), (1,)), infer=True) == 2
    assert questions_left([], infer=True) == 0


def test_the_questions_queued_behind_a_target_are_those_of_the_targets_a_worker_takes_later():
    assert queued_behind([12, 12, 4], workers=2) == [2.0, 0.0, 0.0]
    assert queued_behind([5, 6, 7], workers=1) == [13.0, 7.0, 0.0]
    assert queued_behind([5, 6], workers=0) == [6.0, 0.0]     # no workers counts as one


def test_a_fair_share_divides_what_is_left_by_the_questions_to_come():
    end = time.time() + 60
    alone = CellDeadlines(end=end, cell=None).seconds(12)
    assert 4.9 < alone <= 5.0
    queued = CellDeadlines(end=end, cell=None, queued=8).seconds(12)
    assert 2.9 < queued <= 3.0
    # the last question gets all that is left, and zero questions left count as one
    assert 59 < CellDeadlines(end=end, cell=None).seconds(0) <= 60
    assert CellDeadlines(end=end, cell=None).fair


def test_a_deadline_per_cell_is_capped_by_what_is_left_of_the_whole():
    assert CellDeadlines(end=time.time() + 60, cell=2.5).seconds(12) == 2.5
    capped = CellDeadlines(end=time.time() + 1, cell=2.5).seconds(12)
    assert 0.9 < capped <= 1.0
    assert CellDeadlines(end=math.inf, cell=2.5).seconds(100) == 2.5
    assert not CellDeadlines(end=math.inf, cell=2.5).fair


def test_a_passed_deadline_is_seen():
    assert CellDeadlines(end=time.time() - 1, cell=None).passed
    assert not CellDeadlines(end=time.time() + 60, cell=None).passed


@pytest.mark.parametrize("timeout, cell, expect_inf", [(None, 3.0, True), (10.0, 3.0, False), (10.0, None, False)])
def test_the_whole_deadline_is_none_only_for_a_deadline_per_cell_alone(timeout, cell, expect_inf):
    end = whole_end(100.0, timeout, cell)
    assert math.isinf(end) is expect_inf
    if not expect_inf:
        assert end == pytest.approx(110.0)
