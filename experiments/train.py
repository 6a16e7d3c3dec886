"""Training: AdamW + cosine schedule, many models in one batched job, validation NMSE.

``train_models`` takes one dataset (one target, T and d) and any number of (ModelConfig, seed) pairs, groups
them by ``ModelConfig.batch_key`` and trains every group as one ``BatchedTransformer`` (heads, widths and
hidden sizes padded and masked, see model.py). Each model keeps its own init and its own minibatch stream
(both drawn from its seed), its own loss term and its own AdamW state (AdamW is elementwise, so a stacked
parameter is M independent optimizers), so a model's trajectory does not depend on its batch mates.

NMSE = MSE / Var(target) on the validation set (pooled over components for vector targets), i.e. 1 - R^2;
we keep the best over the evaluations of a run (paper 1 reports the best validation NMSE).

Threads: on CPU ``configure_threads`` sets torch to ONE intra-op thread by default (``--threads N`` to
change). Measured on the 2-core project machine: these models' ops are small (a 6-model step is ~200
kernels of well under a millisecond), so OpenMP's fork/join costs more than a second core gains, and when
anything else runs on the machine the spinning OpenMP barrier collapses (a GELU 10x, a whole training step
3.4x slower with 2 threads than with 1). Inter-op threads: 1 (there is no inter-op parallelism to use).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .data import Dataset
from .model import BatchedTransformer, ModelConfig

DEFAULT_CPU_THREADS = 1   # measured, see the module docstring
_INDEX_CHUNK = 256        # steps of minibatch indices drawn (and copied to the device) at once


@dataclass(frozen=True)
class TrainConfig:
    """Optimization and data sizes. Paper 1: AdamW, lr 1e-3, wd 1e-2, cosine; the rest is not stated."""

    steps: int = 2000              # optimizer steps (papers: not stated; see papers.md 6.12)
    batch_size: int = 256          # papers.md 6.12 suggestion
    lr: float = 1e-3               # paper 1
    weight_decay: float = 1e-2     # paper 1
    warmup_steps: int = 0          # linear warmup before the cosine decay (0: plain cosine, as paper 1)
    eval_every: int = 250          # steps between validation NMSE evaluations (the last step is always one)
    n_train: int = 8000            # paper 2: 8 000 train / 2 000 validation sequences per T
    n_val: int = 2000
    dtype: str = "float32"         # float64 only for tests that compare batched with unbatched runs


@dataclass(frozen=True)
class RunMetrics:
    """What one (config, seed) training produced."""

    nmse_best: float        # best validation NMSE over the evaluations
    nmse_final: float       # validation NMSE after the last step
    train_loss: float       # last minibatch MSE, in units of the standardized target
    steps: int
    wall_s: float           # job wall time / models in the job (amortized)
    job_wall_s: float       # wall time of the batched job this model trained in
    models_in_job: int
    history: tuple[float, ...] = ()   # validation NMSE at every evaluation (learning curve)


def configure_threads(threads: int | None = None) -> int:
    """Set torch's CPU threads (default 1, see the module docstring); returns the count."""
    n = threads or DEFAULT_CPU_THREADS
    torch.set_num_threads(n)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only settable before the first parallel op; harmless to keep the current value
        pass
    return n


def pick_device(requested: str | None = None) -> torch.device:
    """``cuda`` when present (or requested), else ``cpu``; asking for cuda without one is an error."""
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda requested but torch.cuda.is_available() is False")
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_model()


def cpu_model() -> str:
    """The CPU model from /proc/cpuinfo (the platform string elsewhere)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _lr_factor(step: int, cfg: TrainConfig) -> float:
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def _nmse(model: BatchedTransformer, X: torch.Tensor, y: np.ndarray, mean: np.ndarray, std: np.ndarray,
          chunk: int) -> np.ndarray:
    """Validation NMSE of every model in the batch, in the target's own units (float64 reduction)."""
    M = len(model.configs)
    preds = []
    with torch.no_grad():
        for start in range(0, X.shape[0], chunk):
            xb = X[start:start + chunk].unsqueeze(0).expand(M, -1, -1, -1)
            preds.append(model(xb).double().cpu().numpy())
    pred = np.concatenate(preds, axis=1) * std + mean            # (M, n_val, k)
    yv = y.reshape(len(y), -1)
    return ((pred - yv) ** 2).sum(axis=(1, 2)) / ((yv - yv.mean(0)) ** 2).sum()


def train_models(data: Dataset, configs: list[ModelConfig], seeds: list[int], train: TrainConfig,
                 device: torch.device | str = "cpu", progress: bool = False,
                 desc: str = "") -> list[RunMetrics]:
    """Train every (config, seed) on ``data``; models that can share a batch train as one job.

    Returns metrics in the order of ``configs``.
    """
    if len(configs) != len(seeds):
        raise ValueError("one seed per config")
    groups: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(configs):
        groups.setdefault(cfg.batch_key(), []).append(i)
    out: list[RunMetrics | None] = [None] * len(configs)
    for members in groups.values():
        metrics = _train_group(data, [configs[i] for i in members], [seeds[i] for i in members], train,
                               torch.device(device), progress, desc)
        for i, m in zip(members, metrics):
            out[i] = m
    return [m for m in out if m is not None]


def _train_group(data: Dataset, configs: list[ModelConfig], seeds: list[int], train: TrainConfig,
                 device: torch.device, progress: bool, desc: str) -> list[RunMetrics]:
    dtype = getattr(torch, train.dtype)
    start = time.perf_counter()
    model = BatchedTransformer(configs, seeds, dtype=dtype).to(device)
    # Standardize the labels for optimization only (an affine change: the function class is unchanged).
    y_train = data.y_train.reshape(len(data.y_train), -1)
    mean, std = y_train.mean(0), y_train.std(0) + 1e-12
    X = torch.as_tensor(data.X_train, dtype=dtype, device=device)
    Y = torch.as_tensor((y_train - mean) / std, dtype=dtype, device=device)
    X_val = torch.as_tensor(data.X_val, dtype=dtype, device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, train))
    # Each model's minibatch stream is its own, seeded apart from its init (offset so the streams differ).
    gens = [torch.Generator().manual_seed(1_000_003 + int(s)) for s in seeds]
    n = X.shape[0]
    chunk = max(1, min(len(data.X_val), 4 * train.batch_size))
    best = np.full(len(configs), np.inf)
    nmse = best.copy()
    history: list[np.ndarray] = []
    loss_per_model = torch.zeros(len(configs))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=train.steps, desc=desc or "train", leave=False, mininterval=1.0)
    for step in range(train.steps):
        if step % _INDEX_CHUNK == 0:
            # minibatch indices for the next steps in one host->device copy: a copy per step would make the
            # host wait for the device every step (launch-bound GPU jobs would lose their overlap)
            rows = min(_INDEX_CHUNK, train.steps - step)
            block = torch.stack([torch.randint(n, (rows, train.batch_size), generator=g) for g in gens], 1)
            block = block.to(device)
        idx = block[step % _INDEX_CHUNK]                         # (M, B)
        pred = model(X[idx])                                     # (M, B, k)
        loss_per_model = ((pred - Y[idx]) ** 2).mean(dim=(1, 2))
        opt.zero_grad(set_to_none=True)
        loss_per_model.sum().backward()   # a sum: each model's gradient is its own loss's gradient
        opt.step()
        sched.step()
        if (step + 1) % train.eval_every == 0 or step + 1 == train.steps:
            nmse = _nmse(model, X_val, data.y_val, mean, std, chunk)
            best = np.minimum(best, nmse)
            history.append(nmse)
            if bar is not None:
                bar.set_postfix(nmse_min=f"{best.min():.2e}")
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    wall = time.perf_counter() - start
    losses = loss_per_model.detach().double().cpu().numpy()
    return [RunMetrics(nmse_best=float(best[i]), nmse_final=float(nmse[i]), train_loss=float(losses[i]),
                       steps=train.steps, wall_s=wall / len(configs), job_wall_s=wall,
                       models_in_job=len(configs), history=tuple(float(h[i]) for h in history))
            for i in range(len(configs))]
