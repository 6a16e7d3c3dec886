"""The deadline of each cell a sweep asks: one hard cell cannot starve the others.

A sweep asks the solver one question per cell it cannot infer (``explore.sweeps``), one target's cells one
after another in one process. Each question gets its own deadline, by one of two rules:

- *A deadline per cell* (``cell_timeout``): every question gets that many seconds, and never more than what
  is left of the whole sweep's deadline when it has one.
- *Fair shares* (the default, no ``cell_timeout``): the whole deadline is split as the sweep goes. A question
  asked with ``left`` seconds to go, when its target may still need ``n`` questions (itself included) and
  ``q`` more wait for the same worker behind it, gets ``left / (n + q)``. What a quick question leaves unspent
  is shared by the questions after it, and the last one gets all that is left. A cell whose question ran out
  of its share is asked once more, after every other cell of its target, with its fair share of what is left
  then (``explore.sweeps``): a hard cell takes no more than its share from the cells after it, and still gets
  the time they leave.

``n`` is what the walk along the frontier usually asks: about one question per row (layer count) and per
column (head count) of the grid, never more than the cells left (every cell left, without inference). ``q``
counts the questions of the targets that start only once a worker is free: ``n`` of each target queued behind
the first ``workers``, spread over the workers.

>>> from infoflow_smt.model.architecture import Architecture
>>> grid = [Architecture(heads=(h,) * L, input_dim=2) for L in range(1, 11) for h in (1, 2)]
>>> questions_left(grid, infer=True), questions_left(grid, infer=False)
(12, 20)
>>> queued_behind([12, 12, 4], workers=2)
[2.0, 0.0, 0.0]
>>> shares = CellDeadlines(end=time.time() + 60, cell=None)
>>> round(shares.seconds(12))          # a fair share: 60 s over 12 questions
5
>>> CellDeadlines(end=time.time() + 60, cell=2.5).seconds(12)
2.5
"""
from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from infoflow_smt.deadline import seconds
from infoflow_smt.model.architecture import Architecture


@dataclass(frozen=True)
class CellDeadlines:
    """How one target's questions spend the sweep's time (module docstring)."""

    end: float              # the whole sweep's deadline as ``time.time()``; ``math.inf``: none (a cell's only)
    cell: float | None      # seconds per question (``cell_timeout``); None: fair shares of what is left
    queued: float = 0.0     # questions waiting behind this target for its worker (fair shares only)

    @property
    def passed(self) -> bool:
        return time.time() >= self.end

    @property
    def fair(self) -> bool:
        """Whether the whole deadline is shared (then a cell that ran out of its share is asked again)."""
        return self.cell is None

    def seconds(self, questions_left: int) -> float:
        """The seconds the next question gets, when ``questions_left`` may still be asked (itself included)."""
        left = self.end - time.time()
        if self.cell is not None:
            return min(self.cell, left)
        return left / (max(questions_left, 1) + self.queued)


def questions_left(archs: Sequence[Architecture], infer: bool) -> int:
    """About how many questions deciding ``archs`` takes: every cell without inference, else one per row
    and per column of the grid (the walk along the frontier), never more than the cells."""
    if not infer:
        return len(archs)
    rows = {a.layers for a in archs}
    columns = {max(a.heads) for a in archs}
    return min(len(archs), len(rows) + len(columns))


def queued_behind(questions: Sequence[int], workers: int) -> list[float]:
    """For each target, in the order the workers take them, the questions that wait for a worker behind it:
    those of the targets from ``workers`` places later on, shared by the ``workers`` workers."""
    workers = max(workers, 1)
    return [sum(questions[i + workers:]) / workers for i in range(len(questions))]


def whole_end(started: float, timeout: float | None, cell: float | None) -> float:
    """The whole sweep's deadline: ``timeout`` seconds from ``started``; with a deadline per cell and no
    ``timeout`` there is none (each question is bounded by its own)."""
    if timeout is None and cell is not None:
        return math.inf
    return started + seconds(timeout)
