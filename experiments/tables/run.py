"""Run a profile: plan its jobs, skip finished runs, train the rest in batched jobs, record every run.

A job is one (table, T): one dataset, and every (architecture, seed) of the table trained together in one
batched job (see trainer.py). After a job each of its runs is committed to the store at once, so an
interrupted profile resumes at the first unfinished job and loses no finished run.

>>> plan(get_profile("smoke"))[0].seq_len
4
"""
from __future__ import annotations

import dataclasses
import os
import platform
import time
from dataclasses import dataclass

import numpy as np
import torch

from experiments.tables.profiles import Profile, Table, get_profile
from experiments.tables.store import ResultStore, RunRecord, config_key, store_path
from experiments.training.data import default_distribution, make_dataset
from experiments.training.devices import configure_threads, default_workers, device_name, pick_device
from experiments.training.trainer import train_models
from infoflow_smt.machine import cpu_model
from infoflow_smt.processes import worker_pool


@dataclass(frozen=True)
class Job:
    """Every (heads, E, seed) of one table at one sequence length."""

    table: Table
    seq_len: int
    runs: tuple[tuple[tuple[int, ...], int, int], ...]   # (heads, embed_dim, seed)


@dataclass(frozen=True)
class RunSummary:
    profile: str
    path: str | None
    trained: int        # runs trained by this call
    skipped: int        # runs found finished in the store
    jobs_run: int       # batched jobs actually trained
    wall_s: float


def plan(profile: Profile) -> list[Job]:
    """The profile's jobs, in table order then T order (then seed or architecture order, ``Table.split``)."""
    if any(t.split not in ("T", "seed", "arch") for t in profile.tables):
        raise ValueError(f"Table.split must be T, seed or arch; got {[t.split for t in profile.tables]}")
    jobs = []
    for table in profile.tables:
        runs = [(tuple(h), E, s) for h, E in table.archs for s in table.seeds]
        if table.split == "seed":
            groups = [[r for r in runs if r[2] == s] for s in table.seeds]
        elif table.split == "arch":
            groups = [[r for r in runs if (r[0], r[1]) == (tuple(h), E)] for h, E in table.archs]
        else:
            groups = [runs]
        jobs += [Job(table, T, tuple(g)) for T in table.seq_lens for g in groups]
    return jobs


# A run's key is its identity: everything that changes the trained network. A field that joins the model or
# training configuration after runs were stored is hashed only away from the value those runs trained with
# (their behaviour before the field existed), so a stored run keeps its key and the profile still reports
# it. Every new field is declared here with that value (tests/measure/test_experiments_stores.py reads the
# committed stores and fails naming an undeclared field).
ADDED_FIELDS: dict[str, dict[str, object]] = {
    "model": {"token_embedding": "mlp", "ffn_gated": False, "causal": False},
    "train": {},
}


def run_config(table: Table, heads: tuple[int, ...], embed_dim: int, seq_len: int, seed: int) -> dict:
    """The full configuration of one run: everything that changes its result (hashed into its key)."""
    model = dataclasses.asdict(table.model_config(heads, embed_dim, seq_len))
    model.pop("output_dim")  # follows from the target, which is already in the config
    return {"target": table.target, "target_seed": table.target_seed, "data_seed": table.data_seed,
            "distribution": default_distribution(table.target).value, "input_dim": table.input_dim,
            "seq_len": seq_len, "model": _identity(model, ADDED_FIELDS["model"]),
            "train": _identity(dataclasses.asdict(table.train), ADDED_FIELDS["train"]), "seed": seed}


def _identity(config: dict, added: dict[str, object]) -> dict:
    """``config`` less every added field that holds the value runs had before it existed."""
    return {name: value for name, value in config.items() if not (name in added and value == added[name])}


def current_keys(profile: str | Profile) -> set[str]:
    """The keys of every run the profile plans now. A stored run whose key is not among them was trained
    with an earlier recipe or architecture of the profile: kept in the store, but no longer its result."""
    return {config_key(run_config(job.table, heads, E, job.seq_len, seed))
            for job in plan(get_profile(profile)) for heads, E, seed in job.runs}


def versions() -> dict[str, str]:
    import infoflow_smt

    return {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
            "infoflow_smt": getattr(infoflow_smt, "__version__", "unknown")}


def hardware(device: torch.device, workers: int = 1) -> dict[str, object]:
    """Where a run trained: device, CPU model and count, torch threads per process, worker processes."""
    return {"device": device.type, "device_name": device_name(device), "cpu_model": cpu_model(),
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "worker_processes": workers, "platform": platform.platform()}


def run_job(job: Job, profile_name: str, store: ResultStore | None, device: torch.device,
            progress: bool = False, label_workers: int = 1, workers: int = 1) -> tuple[list[RunRecord], int]:
    """Train the job's unfinished runs (all of them without a store); returns (records, number trained).

    Records come back in the job's run order, finished ones read from the store.
    """
    table, T = job.table, job.seq_len
    start = time.perf_counter()
    configs = {run: run_config(table, run[0], run[1], T, run[2]) for run in job.runs}
    keys = {run: config_key(cfg) for run, cfg in configs.items()}
    done = {r.key: r for r in store.runs(profile_name)} if store is not None else {}
    todo = [run for run in job.runs if keys[run] not in done]
    fresh: dict[str, RunRecord] = {}
    if todo:
        data = make_dataset(table.target, T, table.input_dim, table.train.n_train, table.train.n_val,
                            seed=table.data_seed, target_seed=table.target_seed, label_workers=label_workers)
        models = [table.model_config(h, E, T, data.output_dim) for h, E, _ in todo]
        metrics = train_models(data, models, [s for _, _, s in todo], table.train, device, progress=progress,
                               desc=f"{table.name} T={T} ({len(todo)} models)")
        hw, ver = hardware(device, workers), versions()
        for run, m in zip(todo, metrics):
            record = RunRecord(key=keys[run], profile=profile_name, table_name=table.name,
                               target=table.target, heads=run[0], embed_dim=run[1], seq_len=T,
                               seed=run[2], config=configs[run],
                               metrics={**dataclasses.asdict(m), "data_fingerprint": data.fingerprint(),
                                        "job_total_s": time.perf_counter() - start},  # data + training
                               versions=ver, hardware=hw, device=device.type, wall_s=m.wall_s,
                               created=time.time())
            if store is not None:
                store.add(record)  # committed now: a later interruption cannot lose it
            fresh[record.key] = record
    records = [done.get(keys[run]) or fresh[keys[run]] for run in job.runs]
    return records, len(todo)


def _train_pending(job: Job, profile_name: str, device: str, threads: int | None, label_workers: int,
                   workers: int) -> list[RunRecord]:
    """Worker entry point: train the job's (pending) runs without a store; the parent commits them."""
    if device == "cpu":
        configure_threads(threads)
    records, _ = run_job(job, profile_name, None, torch.device(device), label_workers=label_workers,
                         workers=workers)
    return records


def run_profile(profile: str | Profile, results_dir: str | os.PathLike[str] = "results",
                device: str | None = None, threads: int | None = None, progress: bool = True,
                max_jobs: int | None = None, store_file: str | None = None,
                workers: int | None = None, label_workers: int = 1) -> RunSummary:
    """Run every unfinished job of ``profile`` into ``<results_dir>/<profile>.sqlite``.

    Jobs are independent, so on CPU they run in ``workers`` processes (default: one per core, each with
    ``threads`` torch threads, default 1); the parent commits each job's runs as the job finishes.
    ``max_jobs`` trains at most that many jobs (used to simulate an interruption); ``store_file``
    overrides the SQLite path; ``label_workers`` processes label each dataset (data.label).
    """
    prof = get_profile(profile)
    dev = pick_device(device)
    if dev.type == "cpu":
        configure_threads(threads)
    path = store_file or store_path(results_dir, prof.name)
    store = ResultStore(path)
    start = time.perf_counter()
    done = store.finished_keys()
    pending: list[Job] = []
    skipped = 0
    for job in plan(prof):
        todo = tuple(run for run in job.runs
                     if config_key(run_config(job.table, run[0], run[1], job.seq_len, run[2])) not in done)
        skipped += len(job.runs) - len(todo)
        if todo:
            pending.append(dataclasses.replace(job, runs=todo))
    pending = pending[:max_jobs] if max_jobs is not None else pending
    n_workers = max(1, min(workers or default_workers(dev), len(pending)))
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(pending), desc=f"profile {prof.name} ({n_workers} workers)", unit="job")
    trained = 0

    def commit(records: list[RunRecord]) -> None:
        nonlocal trained
        for record in records:
            store.add(record)  # committed now: a later interruption cannot lose it
        trained += len(records)
        if bar is not None:
            bar.update(1)

    if n_workers == 1:
        for job in pending:
            commit(run_job(job, prof.name, None, dev, progress=progress, label_workers=label_workers)[0])
    else:
        from concurrent.futures import as_completed

        # biggest jobs first (steps x models x positions x layers; stable, so plan order breaks ties),
        # so the last worker to finish is not the one holding the biggest job
        pending.sort(key=lambda j: -j.table.train.steps * len(j.runs) * (j.seq_len + 1) * len(j.runs[0][0]))
        with worker_pool(n_workers) as pool:   # workers die with this process; Ctrl-C ends them
            futures = [pool.submit(_train_pending, job, prof.name, dev.type, threads, label_workers,
                                   n_workers) for job in pending]
            for future in as_completed(futures):
                commit(future.result())
    if bar is not None:
        bar.close()
    return RunSummary(prof.name, path, trained, skipped, len(pending), time.perf_counter() - start)
