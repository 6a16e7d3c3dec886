"""The training ``confirm`` judges: every row at every length, by the plan of ``schedule``, in worker processes.

Labels for every length first (as many sequences at every length), then one batched job per (T, depth):
every model (and every seed of it) of that depth trains in it. Each job is probed (a short and a longer
run: their difference is the steps alone), the jobs are dealt out to ``workers`` processes, and every model
trains the same number of steps at every length, each with a 5 % warm-up and a cosine to zero; the budget's
end is a hard deadline. The jobs run in ``workers`` processes (default one per CPU core: these small models
gain nothing from a second thread, and two single-threaded jobs on two cores run as fast as one alone; under
``POOL_MIN_BUDGET_S``, one: a spawned process spends seconds importing torch, which a short budget would
pay in steps).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from dataclasses import asdict, replace
from typing import TypeVar

import torch

from experiments.confirmation import schedule
from experiments.confirmation.schedule import JobKey, Probe
from experiments.training import devices
from experiments.training.data import Dataset, make_dataset
from experiments.training.network import ModelConfig
from experiments.training.trainer import RunMetrics, TrainConfig, train_models
from infoflow_smt.processes import worker_pool
from infoflow_smt.report.verdict import Verdict

POOL_MIN_BUDGET_S = 60.0  # the least budget that trains in one process per core by default (default_workers)
PROBE_ROWS = 4096         # training sequences a probe samples from (all a worker is sent to probe)

Member = tuple[int, ModelConfig, int]   # (the model's place among the rows, its config, a seed)
Result = TypeVar("Result")


def import_optimizer() -> None:
    """Import what the first AdamW imports (torch._dynamo) before the budget's clock starts: it takes
    seconds on a loaded machine, and a few-second budget would otherwise buy one step."""
    import torch._dynamo  # noqa: F401


def default_workers(dev: torch.device, budget_s: float) -> int:
    """One process per CPU core (``devices.default_workers``) when the budget can spare their start: a spawned
    process imports torch for seconds, which a short budget would pay in steps; below ``POOL_MIN_BUDGET_S``
    the jobs run here, one after another."""
    return devices.default_workers(dev) if budget_s >= POOL_MIN_BUDGET_S else 1


def train_lengths(verdict: Verdict, lengths: tuple[int, ...], verdicts: list[Verdict],
                  setup: tuple[ModelConfig, TrainConfig], budget_s: float, start: float, dev: torch.device,
                  seeds: tuple[int, ...], workers: int,
                  threads: int | None) -> tuple[dict[int, list[list[RunMetrics]]], dict[str, object]]:
    """Labels for every length first (``schedule.LABEL_SHARE`` of the budget), then every model at every length
    trains the same number of steps: as many as the rest of the budget holds by the jobs' probed step times
    (``_probe``), with the jobs shared among ``workers`` processes (``schedule.shares``). Returns the metrics
    by T, by model, by seed, and the recipe as run."""
    model, recipe = setup
    arch, target = verdict.architecture, verdict.target
    data: dict[int, Dataset] = {}
    jobs: dict[JobKey, list[Member]] = {}
    n_train = schedule.train_size(target, lengths, arch.input_dim, budget_s)   # the same at every length
    for T in lengths:
        data[T] = make_dataset(target, T, arch.input_dim, n_train, min(2000, max(200, n_train // 5)),
                               seed=seeds[0], target_seed=int(getattr(target, "seed", 0)))
        models = [replace(model, input_dim=arch.input_dim, seq_len=T, heads=tuple(v.architecture.heads),
                          embed_dim=int(v.architecture.width_at(T)), positional=arch.positional,
                          output_dim=data[T].output_dim) for v in verdicts]
        jobs.update({(T, key): members for key, members in _jobs(models, seeds).items()})
    run = {T: replace(recipe, n_train=len(data[T].X_train), n_val=len(data[T].X_val)) for T in lengths}
    n_workers = max(1, min(workers, len(jobs)))
    probe_s = schedule.probe_seconds(budget_s, n_workers, len(jobs))
    with _pool(n_workers) as pool:
        probes = _map(pool, _probe_job, [(_probe_data(data[T]), members, run[T], dev, threads, probe_s)
                                         for (T, _), members in jobs.items()])
        probed = dict(zip(jobs, probes))
        left = budget_s - (time.perf_counter() - start)
        dealt = schedule.shares(probed, n_workers)
        steps = schedule.planned_steps(probed, dealt, left)
        end = start + budget_s - schedule.EVAL_RESERVE_S
        deadline = time.time() + end - time.perf_counter()
        done = _map(pool, _train_share, [({T: data[T] for T, _ in share}, {j: jobs[j] for j in share}, run,
                                          {j: probed[j] for j in share}, steps, deadline, dev, threads)
                                         for share in dealt])
    metrics = {job: m for share in done for job, m in share.items()}
    by_model: dict[int, list[list[RunMetrics]]] = {T: [[] for _ in verdicts] for T in lengths}
    for job, members in jobs.items():
        for (i, _, _), m in zip(members, metrics[job]):
            by_model[job[0]][i].append(m)
    recipe_doc: dict[str, object] = asdict(replace(recipe, **schedule.schedule(steps)))
    recipe_doc.pop("time_budget_s")
    recipe_doc.update(planned_s=round(left, 1), seeds=list(seeds), workers=n_workers,
                      n_train={T: len(data[T].X_train) for T in lengths},
                      n_val={T: len(data[T].X_val) for T in lengths},
                      seconds_per_step={T: {_job_name(jobs[j]): round(probed[j][0], 5) for j in jobs if j[0] == T}
                                        for T in lengths},
                      seconds_per_step_run={T: {_job_name(jobs[j]): _seconds_per_step(metrics[j][0])
                                                for j in jobs if j[0] == T} for T in lengths})
    return by_model, recipe_doc


@contextlib.contextmanager
def _pool(workers: int) -> Iterator[Executor | None]:
    """Worker processes that die with this one, or None for one worker (the jobs then run here)."""
    if workers == 1:
        yield None
        return
    with worker_pool(workers) as pool:
        yield pool


def _map(pool: Executor | None, function: Callable[..., Result], calls: list[tuple]) -> list[Result]:
    """``function(*call)`` for every call, in ``pool``'s processes when there is one; results in call order."""
    if pool is None:
        return [function(*call) for call in calls]
    return [future.result() for future in [pool.submit(function, *call) for call in calls]]


def _set_up(dev: torch.device, threads: int | None) -> None:
    """A worker's torch, as the parent's: its threads, and the optimizer's imports before anything is timed."""
    if dev.type == "cpu":
        devices.configure_threads(threads)
    import_optimizer()


def _probe_data(data: Dataset) -> Dataset:
    """The dataset a probe needs: a step's time does not depend on how many sequences it samples from, and
    a worker is sent only these."""
    return replace(data, X_train=data.X_train[:PROBE_ROWS], y_train=data.y_train[:PROBE_ROWS])


def _probe_job(data: Dataset, members: list[Member], recipe: TrainConfig, dev: torch.device, threads: int | None,
               seconds: float) -> Probe:
    _set_up(dev, threads)
    return _probe(data, [cfg for _, cfg, _ in members], [s for _, _, s in members], recipe, dev, seconds)


def _train_share(data: dict[int, Dataset], jobs: dict[JobKey, list[Member]], run: dict[int, TrainConfig],
                 probed: dict[JobKey, Probe], steps: int, deadline: float, dev: torch.device,
                 threads: int | None) -> dict[JobKey, list[RunMetrics]]:
    """One worker's jobs (``_train_planned``); ``deadline`` is a ``time.time()``: comparable across processes."""
    _set_up(dev, threads)
    return _train_planned(data, jobs, run, probed, steps, time.perf_counter() + deadline - time.time(), dev)


def _train_planned(data: dict[int, Dataset], jobs: dict[JobKey, list[Member]], run: dict[int, TrainConfig],
                   probed: dict[JobKey, Probe], steps: int, end: float,
                   dev: torch.device) -> dict[JobKey, list[RunMetrics]]:
    """Every job (``(T, key)``: its members, ``_jobs``) by the plan's ``steps``, one after another in the
    order given; when the machine runs slower than the probes said the jobs still to run get fewer
    (``schedule.fitted_steps``), and the budget's end (``end``, a ``time.perf_counter()``) stops a job still
    running (its steps are recorded). Returns each job's metrics, in its members' order."""
    order = list(jobs)
    metrics: dict[JobKey, list[RunMetrics]] = {}
    spent = predicted = 0.0   # measured and probed seconds of the jobs done so far
    for n, job in enumerate(order):
        slowdown = max(1.0, spent / predicted) if predicted else 1.0
        ahead = slowdown * sum(schedule.job_seconds(probed[j], steps) for j in order[n:])
        job_steps = schedule.fitted_steps(steps, ahead, end - time.perf_counter())
        members, began = jobs[job], time.perf_counter()
        metrics[job] = train_models(data[job[0]], [cfg for _, cfg, _ in members], [s for _, _, s in members],
                                    replace(run[job[0]], **schedule.schedule(job_steps)), dev, deadline=end)
        spent += time.perf_counter() - began
        predicted += schedule.job_seconds(probed[job], job_steps)
    return metrics


def _seconds_per_step(m: RunMetrics) -> float:
    """A trained job's wall time per step, evaluations included: what the probe's figure planned for."""
    return round(m.job_wall_s / max(1, m.steps), 5)


def _jobs(models: list[ModelConfig], seeds: tuple[int, ...]) -> dict[tuple, list[Member]]:
    """The (model, seed) trainings that run as one batched job (one per depth): (place in ``models``,
    config, seed) for every seed of every model."""
    groups: dict[tuple, list[Member]] = {}
    for i, cfg in enumerate(models):
        groups.setdefault(cfg.batch_key(), []).extend((i, cfg, s) for s in seeds)
    return groups


def _job_name(members: list[Member]) -> str:
    """A job by its models' heads: ``2,2 + 2,1`` (each once, whatever the seeds)."""
    return " + ".join(dict.fromkeys(",".join(map(str, cfg.heads)) for _, cfg, _ in members))


def _probe(data: Dataset, models: list[ModelConfig], seeds: list[int], recipe: TrainConfig, device: torch.device,
           seconds: float) -> Probe:
    """(seconds per step, seconds per evaluation and set-up) of one batched job: from a short and a longer
    run (their difference is the steps alone; the longer one as long as ``seconds`` allow), after a run
    that warms the kernels up."""
    def run(steps: int) -> float:
        probe = replace(recipe, steps=steps, warmup_steps=0, eval_every=10**9, time_budget_s=0.0, patience=0)
        started = time.perf_counter()
        train_models(data, models, seeds, probe, device)
        return time.perf_counter() - started

    short_steps, most = schedule.PROBE_STEPS
    rough = run(short_steps) / short_steps   # set-up included: an overestimate
    long_steps = min(most, max(5 * short_steps, int(seconds / rough)))
    short, long = run(short_steps), run(long_steps)
    step = max(1e-6, (long - short) / (long_steps - short_steps))
    return step, max(0.0, short - short_steps * step)
