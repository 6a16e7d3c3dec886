"""Training: AdamW + cosine schedule, many models in one batched job, validation NMSE.

``train_models`` takes one dataset (one target, T and d) and any number of (ModelConfig, seed) pairs, groups
them by ``ModelConfig.batch_key`` and trains every group as one ``BatchedTransformer`` (heads, widths and
hidden sizes padded and masked, see network.py). Each model keeps its own init and its own minibatch stream
(both drawn from its seed), its own loss term and its own AdamW state (AdamW is elementwise, so a stacked
parameter is M independent optimizers), so a model's trajectory does not depend on its batch mates.

NMSE = MSE / Var(target) on the validation set (pooled over components for vector targets), i.e. 1 - R^2;
we keep the best over the evaluations of a run (paper 1 reports the best validation NMSE).

The device and threads a job runs on: devices.py.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from experiments.training.data import Dataset
from experiments.training.network import BatchedTransformer, ModelConfig
from experiments.training.step import make_step

_INDEX_CHUNK = 256        # steps of minibatch indices drawn (and copied to the device) at once


@dataclass(frozen=True)
class TrainConfig:
    """Optimization and data sizes. Paper 1: AdamW, lr 1e-3, wd 1e-2, cosine; the rest is not stated.

    The schedule: linear warm-up to ``lr`` over ``warmup_steps``, then cosine to zero at ``steps``. Early
    stopping (``patience`` > 0): a model stops when its validation NMSE has not improved by a factor
    ``1 - min_delta`` over ``patience`` evaluations; a batched job ends when all its models have stopped.
    The recipes the profiles use, and the measurements that chose them, are in profiles.py.
    """

    steps: int = 2000              # optimizer steps; the cosine reaches zero here (papers: not stated)
    batch_size: int = 256          # suggested in shared/reference/papers.md 6.12, outside this repository
    lr: float = 1e-3               # peak learning rate (paper 1)
    weight_decay: float = 1e-2     # paper 1
    warmup_steps: int = 0          # linear warm-up before the cosine decay (0: plain cosine, as paper 1)
    eval_every: int = 250          # steps between validation NMSE evaluations (the last step is always one)
    patience: int = 0              # evaluations without improvement before a model stops; 0: never early
    min_delta: float = 0.05        # relative NMSE improvement that counts as progress for ``patience``
    n_train: int = 8000            # paper 2: 8 000 train / 2 000 validation sequences per T
    n_val: int = 2000
    dtype: str = "float32"         # float64 only for tests that compare batched with unbatched runs
    time_budget_s: float = 0.0     # > 0: the schedule runs on wall time (confirm's budgets): warm-up and
                                   # cosine over this many seconds of the loop, 20 evaluations spread over
                                   # it, ``steps`` an upper bound. 0: by steps (the profiles: reproducible)


@dataclass(frozen=True)
class RunMetrics:
    """What one (config, seed) training produced."""

    nmse_best: float        # best validation NMSE over the evaluations (up to the model's own stop)
    nmse_final: float       # validation NMSE at the model's last evaluation
    train_loss: float       # mean minibatch MSE over the last evaluation interval, standardized target units
    steps: int              # steps the model trained before it stopped (its metrics are frozen there)
    wall_s: float           # job wall time / models in the job (amortized)
    job_wall_s: float       # wall time of the batched job this model trained in
    models_in_job: int
    history: tuple[float, ...] = ()        # validation NMSE at every evaluation (learning curve)
    history_steps: tuple[int, ...] = ()    # the step of each evaluation
    train_history: tuple[float, ...] = ()  # mean training MSE (standardized) over each evaluation interval
    best_step: int = 0                     # step of the best validation NMSE
    stop_reason: str = "schedule"          # schedule (all steps) | plateau | deadline | budget (wall time)
    step_kind: str = "fast"                # which step implementation trained it (step.py)


_TIMED_EVALS = 20   # evaluations over a wall-time schedule


def lr_factor(step: int, cfg: TrainConfig, fraction: float | None = None) -> float:
    """Multiplier of the peak lr at ``step`` (0-based): linear warm-up, then cosine to zero at ``steps``.

    ``fraction`` (wall-time schedules): the share of ``time_budget_s`` spent, in place of step / steps; the
    warm-up then takes the same share of the budget as ``warmup_steps`` of ``steps``.
    """
    if fraction is None:
        if step < cfg.warmup_steps:
            return (step + 1) / cfg.warmup_steps
        progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    else:
        warm = cfg.warmup_steps / max(1, cfg.steps)
        if fraction < warm:
            return max(fraction / warm, 1e-3)
        progress = (fraction - warm) / max(1e-9, 1 - warm)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


class _Validation:
    """Validation NMSE of every model, computed on the device; the host reads it only when it must."""

    def __init__(self, data: Dataset, mean: np.ndarray, std: np.ndarray, dtype: torch.dtype,
                 device: torch.device, chunk: int):
        self.X = torch.as_tensor(data.X_val, dtype=dtype, device=device)
        y = torch.as_tensor(data.y_val.reshape(len(data.y_val), -1), dtype=torch.float64, device=device)
        self.y, self.chunk = y, chunk
        self.mean = torch.as_tensor(mean, dtype=torch.float64, device=device)
        self.std = torch.as_tensor(std, dtype=torch.float64, device=device)
        self.var_sum = ((y - y.mean(0)) ** 2).sum()

    @torch.no_grad()
    def nmse(self, model: BatchedTransformer) -> torch.Tensor:
        """(M,) NMSE = sum of squared errors / sum of squared deviations, in the target's units (float64)."""
        M = len(model.configs)
        sse = torch.zeros(M, dtype=torch.float64, device=self.X.device)
        for start in range(0, self.X.shape[0], self.chunk):
            xb = self.X[start:start + self.chunk].unsqueeze(0).expand(M, -1, -1, -1)
            pred = model(xb).double() * self.std + self.mean                 # (M, chunk, k)
            sse += ((pred - self.y[start:start + self.chunk]) ** 2).sum(dim=(1, 2))
        return sse / self.var_sum


class _Monitor:
    """Learning curves, best NMSE and per-model early stopping on a plateau (see TrainConfig)."""

    def __init__(self, models: int, train: TrainConfig):
        self.train = train
        self.best = np.full(models, np.inf)
        self.best_step = np.zeros(models, dtype=int)
        self.last = np.full(models, np.inf)
        self.stopped_at = np.full(models, -1)           # -1: still training
        self.reason = ["schedule"] * models
        self.since = np.zeros(models, dtype=int)          # evaluations since the last real improvement
        self.anchor = np.full(models, np.inf)             # the NMSE an improvement is measured against
        self.curve: list[tuple[int, np.ndarray, np.ndarray]] = []   # (step, val NMSE, mean train loss)

    @property
    def active(self) -> np.ndarray:
        return self.stopped_at < 0

    def record(self, step: int, nmse: np.ndarray, train_loss: np.ndarray) -> None:
        act = self.active
        self.curve.append((step, np.where(act, nmse, np.nan), np.where(act, train_loss, np.nan)))
        better = act & (nmse < self.best)
        self.best_step[better], self.best[better] = step, nmse[better]
        self.last[act] = nmse[act]
        progress = nmse < self.anchor * (1 - self.train.min_delta)
        self.anchor[act & progress] = nmse[act & progress]
        self.since[act] = np.where(progress[act], 0, self.since[act] + 1)
        if self.train.patience > 0:
            for m in np.flatnonzero(act & (self.since >= self.train.patience)):
                self.stop(int(m), step, "plateau")

    def stop(self, m: int, step: int, reason: str) -> None:
        self.stopped_at[m], self.reason[m] = step, reason

    def model_curve(self, m: int) -> tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
        rows = [(s, float(v[m]), float(t[m])) for s, v, t in self.curve if not np.isnan(v[m])]
        return tuple(r[0] for r in rows), tuple(r[1] for r in rows), tuple(r[2] for r in rows)


def train_models(data: Dataset, configs: list[ModelConfig], seeds: list[int], train: TrainConfig,
                 device: torch.device | str = "cpu", progress: bool = False, desc: str = "",
                 step: str = "auto", deadline: float | None = None) -> list[RunMetrics]:
    """Train every (config, seed) on ``data``; models that can share a batch train as one job.

    ``step`` picks the step implementation (step.py: auto, fast, reference, graph); ``deadline`` is a
    ``time.perf_counter()`` value: the first step that ends after it is evaluated and every model stops
    there. Returns metrics in the order of ``configs``.
    """
    if len(configs) != len(seeds):
        raise ValueError("one seed per config")
    groups: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(configs):
        groups.setdefault(cfg.batch_key(), []).append(i)
    out: list[RunMetrics | None] = [None] * len(configs)
    for members in groups.values():
        metrics = _train_group(data, [configs[i] for i in members], [seeds[i] for i in members], train,
                               torch.device(device), progress, desc, step, deadline)
        for i, m in zip(members, metrics):
            out[i] = m
    return [m for m in out if m is not None]


def _index_blocks(gens: list[torch.Generator], n: int, train: TrainConfig, device: torch.device):
    """Each model's minibatch indices, drawn from its own generator, ``_INDEX_CHUNK`` steps per copy.

    One host->device copy per chunk, not per step: a copy per step would make the host wait for the device.
    """
    for step in range(0, train.steps, _INDEX_CHUNK):
        rows = min(_INDEX_CHUNK, train.steps - step)
        yield torch.stack([torch.randint(n, (rows, train.batch_size), generator=g) for g in gens], 1).to(device)


def _train_group(data: Dataset, configs: list[ModelConfig], seeds: list[int], train: TrainConfig,
                 device: torch.device, progress: bool, desc: str, step_kind: str,
                 deadline: float | None) -> list[RunMetrics]:
    start = time.perf_counter()
    model = BatchedTransformer(configs, seeds, dtype=getattr(torch, train.dtype)).to(device)
    return train_batch(model, data, train, seeds, progress=progress, desc=desc, step=step_kind,
                       deadline=deadline, start=start)


def train_batch(model: BatchedTransformer, data: Dataset, train: TrainConfig, seeds: list[int],
                progress: bool = False, desc: str = "", step: str = "auto", deadline: float | None = None,
                start: float | None = None) -> list[RunMetrics]:
    """Train an existing ``BatchedTransformer`` in place (``train_models`` builds one per group; the
    diagnostics build their own and look inside it afterwards). ``seeds`` seed the minibatch streams."""
    start = time.perf_counter() if start is None else start
    device, dtype = next(model.parameters()).device, next(model.parameters()).dtype
    # Standardize the labels for optimization only (an affine change: the function class is unchanged).
    y_train = data.y_train.reshape(len(data.y_train), -1)
    mean, std = y_train.mean(0), y_train.std(0) + 1e-12
    X = torch.as_tensor(data.X_train, dtype=dtype, device=device)
    Y = torch.as_tensor((y_train - mean) / std, dtype=dtype, device=device)
    val = _Validation(data, mean, std, dtype, device, max(1, min(len(data.X_val), 4 * train.batch_size)))
    # Each model's minibatch stream is its own, seeded apart from its init (offset so the streams differ).
    blocks = _index_blocks([torch.Generator().manual_seed(1_000_003 + int(s)) for s in seeds], X.shape[0],
                           train, device)
    block = next(blocks)
    step_fn, kind = make_step(step, model, X, Y, train.lr * lr_factor(0, train), train.weight_decay,
                              block[0])
    monitor = _Monitor(len(seeds), train)
    loss_sum = torch.zeros(len(seeds), dtype=torch.float64, device=device)
    bar = _progress_bar(train.steps, desc) if progress else None
    clock = _Clock(train, deadline)
    last_eval = 0
    for i in range(train.steps):
        if i and i % _INDEX_CHUNK == 0:
            block = next(blocks)
        loss_sum += step_fn(block[i % _INDEX_CHUNK], train.lr * lr_factor(i, train, clock.fraction()))
        stop = clock.stop_reason()
        if stop or clock.eval_due(i + 1):
            # the one host read of the loop: the plateau rule needs the numbers
            monitor.record(i + 1, val.nmse(model).cpu().numpy(), (loss_sum / (i + 1 - last_eval)).cpu().numpy())
            loss_sum.zero_()
            last_eval = i + 1
            for m in np.flatnonzero(monitor.active) if stop else ():
                monitor.stop(int(m), i + 1, stop)
            if bar is not None:
                bar.set_postfix(nmse_min=f"{monitor.best.min():.2e}")
            if not monitor.active.any():
                break
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    model.masked_forward = True   # the model is usable as a plain module again
    return _metrics(monitor, i + 1, time.perf_counter() - start, kind)


class _Clock:
    """When to evaluate and when to stop: by steps, or by wall time (``time_budget_s``), and a deadline."""

    def __init__(self, train: TrainConfig, deadline: float | None):
        self.train, self.deadline = train, deadline
        self.start = time.perf_counter()
        self.next_mark = 1                       # wall-time schedules: the next of _TIMED_EVALS evaluations

    def fraction(self) -> float | None:
        if self.train.time_budget_s <= 0:
            return None
        return (time.perf_counter() - self.start) / self.train.time_budget_s

    def stop_reason(self) -> str | None:
        """A clock read, never a device sync: ``budget`` or ``deadline`` once past them."""
        now = time.perf_counter()
        if self.train.time_budget_s > 0 and now - self.start >= self.train.time_budget_s:
            return "budget"
        return "deadline" if self.deadline is not None and now > self.deadline else None

    def eval_due(self, steps_done: int) -> bool:
        if steps_done == self.train.steps:
            return True
        fraction = self.fraction()
        if fraction is None:
            return steps_done % self.train.eval_every == 0
        if fraction * _TIMED_EVALS >= self.next_mark:
            self.next_mark = int(fraction * _TIMED_EVALS) + 1
            return True
        return False


def _progress_bar(total: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc or "train", leave=False, mininterval=1.0)


def _metrics(monitor: _Monitor, steps_run: int, wall: float, kind: str) -> list[RunMetrics]:
    out = []
    M = len(monitor.best)
    for m in range(M):
        steps, hist, train_hist = monitor.model_curve(m)
        stopped = int(monitor.stopped_at[m]) if monitor.stopped_at[m] >= 0 else steps_run
        out.append(RunMetrics(nmse_best=float(monitor.best[m]), nmse_final=float(monitor.last[m]),
                              train_loss=train_hist[-1] if train_hist else float("nan"), steps=stopped,
                              wall_s=wall / M, job_wall_s=wall, models_in_job=M, history=hist,
                              history_steps=steps, train_history=train_hist,
                              best_step=int(monitor.best_step[m]), stop_reason=monitor.reason[m],
                              step_kind=kind))
    return out
