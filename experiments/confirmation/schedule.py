"""How ``confirm`` spends its budget: the lengths, the labels' share, the probes, and the steps every model
trains. Pure arithmetic on seconds and steps (no torch: ``run`` trains by it).

The budget is for training alone. Labels get about a sixth of it (``LABEL_SHARE``); a short probe of every
batched job then measures its seconds per step and per evaluation (``PROBE_SHARE`` of the budget for their
longer runs: longer ones vary less); the rest is shared by the jobs, dealt out to the worker processes
(``shares``), so that every model trains the same number of steps at every length (``planned_steps``) on as
many training sequences (``train_size``). With equal time per length a step at T = 32, dearer than one at
T = 8, would leave the longest length the fewest steps (with an equal share of label time, the fewest
sequences), and the trend over T would measure the machine instead of the architecture. The plan takes
``PLAN_SHARE`` of what the probes say the budget holds, since a job can run slower than its probe on a machine
whose load changes; when it does anyway, the jobs still to run get a few fewer steps each
(``fitted_steps``), where the budget's end would otherwise stop the last one after a step or two.

>>> shares({(8, "a"): (0.01, 0.1), (8, "b"): (0.02, 0.1), (16, "a"): (0.03, 0.1)}, 2)
[[(16, 'a')], [(8, 'a'), (8, 'b')]]
>>> fitted_steps(1000, needed_s=20.0, left_s=10.0)
500
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.target import Target

DEFAULT_SEQ_LENS = (8, 16, 32)   # T when the verdict is for all large T (seq_len None): T doubles twice
LABEL_SHARE = 1 / 6       # of the budget, for the training labels of all lengths
MIN_TRAIN, MAX_TRAIN = 2000, 100_000   # training sequences per length
EVAL_RESERVE_S = 0.3      # the final evaluation after a job's time is up
PROBE_STEPS = (8, 400)    # the short run, and the most the longer one takes (their difference times a step)
PROBE_SHARE = 0.05        # of the budget, for the probes' longer runs: longer ones vary less
EVALUATIONS = 20          # validation evaluations per training run (the best is kept)
PLAN_SHARE = 0.7          # of the time the probes say is left: a job may run slower than its probe
MIN_STEPS = 20
MIN_SECONDS_PER_LENGTH = 1.0   # below this a length trains a step or two and its NMSE says nothing

JobKey = tuple[int, tuple]       # (T, the models' batch key): one batched job
Probe = tuple[float, float]      # a job's seconds per step, and per evaluation and set-up


def lengths(seq_len: int | Sequence[int] | None, decided_at: int | None) -> tuple[int, ...]:
    """The lengths to train, shortest first: those asked for, else the verdict's T, else ``DEFAULT_SEQ_LENS``."""
    if seq_len is None:
        return (decided_at,) if decided_at else DEFAULT_SEQ_LENS
    return tuple(sorted(set([seq_len] if isinstance(seq_len, int) else seq_len)))


def minimum_budget(n_lengths: int) -> float:
    """The smallest budget that trains every length for a meaningful time (``MIN_SECONDS_PER_LENGTH``)."""
    return MIN_SECONDS_PER_LENGTH * n_lengths / (1 - LABEL_SHARE)


def check_budget(budget_s: float, n_lengths: int) -> None:
    """Refuse a budget too small to train: a step or two would be judged as if it were a training run."""
    least = minimum_budget(n_lengths)
    if budget_s < least:
        raise InvalidSpecError(f"budget {budget_s:g} s is too small to train: confirm needs at least {least:.1f} s "
                               f"for {n_lengths} length{'s' if n_lengths > 1 else ''} "
                               f"({MIN_SECONDS_PER_LENGTH:g} s of training per length)", subject="budget")


def train_size(target: Target, seq_lens: Sequence[int], input_dim: int, budget_s: float) -> int:
    """Training sequences per length, the same at every length, whose labels take about ``LABEL_SHARE`` of
    ``budget_s`` in all (labels are timed at each length). One count for every length: a length with fewer
    sequences than another would train a different problem, and the trend over T would measure the data."""
    per_seq = 0.0
    for T in seq_lens:
        X = np.random.default_rng(0).standard_normal((64, T, input_dim))
        start = time.perf_counter()
        target.evaluate(X)
        per_seq += max(1e-7, (time.perf_counter() - start) / 64)
    return int(min(MAX_TRAIN, max(MIN_TRAIN, LABEL_SHARE * budget_s / per_seq)))


def probe_seconds(budget_s: float, workers: int, jobs: int) -> float:
    """How long each job's longer probe may run: ``PROBE_SHARE`` of the budget, ``workers`` at a time."""
    return PROBE_SHARE * budget_s * workers / jobs


def shares(probed: dict[JobKey, Probe], workers: int) -> list[list[JobKey]]:
    """The jobs dealt out to ``workers`` processes, the longest (per step) first to the least loaded, each
    share in the order the jobs were listed (shortest T first: what ran first is what the later jobs'
    re-planning learns the machine's speed from)."""
    order = list(probed)
    loads: list[float] = [0.0] * workers
    dealt: list[list[JobKey]] = [[] for _ in range(workers)]
    for job in sorted(order, key=lambda j: -probed[j][0]):
        w = loads.index(min(loads))
        loads[w] += probed[job][0]
        dealt[w].append(job)
    return [sorted(share, key=order.index) for share in dealt if share]


def planned_steps(probed: dict[JobKey, Probe], dealt: list[list[JobKey]], left_s: float) -> int:
    """The steps every model trains: as many as the slowest share's jobs fit in ``PLAN_SHARE`` of the
    ``left_s`` seconds, their evaluations counted (at least ``MIN_STEPS``)."""
    return max(MIN_STEPS, min(int(PLAN_SHARE * (left_s - EVALUATIONS * sum(probed[j][1] for j in share))
                                  / sum(probed[j][0] for j in share)) for share in dealt))


def schedule(steps: int) -> dict[str, int | float]:
    """A run of ``steps`` by steps, not wall time: 5 % warm-up, ``EVALUATIONS`` evaluations (the fields of
    ``TrainConfig`` it sets)."""
    return {"steps": steps, "warmup_steps": steps // 20, "eval_every": max(1, steps // EVALUATIONS),
            "time_budget_s": 0.0}


def job_seconds(probe: Probe, steps: int) -> float:
    """A job's predicted wall time at ``steps`` by its probe (seconds per step, per evaluation)."""
    step, once = probe
    return steps * step + EVALUATIONS * once


def fitted_steps(planned: int, needed_s: float, left_s: float) -> int:
    """The plan's steps, or fewer when the jobs still to run would not fit in what is left: the machine ran
    slower than its probes, and cutting every remaining job a little keeps them all judged, where the
    budget's end would stop the last one after a step or two (``trend.Cell.short`` marks a cut too deep)."""
    if needed_s <= left_s:
        return planned
    return max(MIN_STEPS, int(planned * max(0.0, left_s) / needed_s))
