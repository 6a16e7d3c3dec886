"""A rank-r bilinear retrieval trained with heads narrower than r, as wide as r, and wider (issue 22, item 3).

``min_pairwise_dot`` (``min_{s,t} <x_s, x_t>``) on two layers of one head: in layer 1 every position ``s``
retrieves its best partner by the score ``<x_s, x_t>``, a bilinear form of rank ``d``; layer 2's retrieval
ranks by a value the candidate holds (rank 1). With tokens of dimension ``d = r = 4`` the rank rule
(``Architecture(rank_aware=True)``, docs/model.md "Head width and rank") says a head ``n = 2`` wide cannot make
layer 1's retrieval (the verdict is then infeasible), while ``n = 4`` and ``n = 8`` can; without the rule the
model says efficient at every ``n``. The networks differ only in the head width ``n`` (``ModelConfig.head_dim``,
both layers); the residual stream is ``E = 16`` for all, and everything else is the cpu profile's recipe for
this target (``profiles.confirm_setup``: linear token embedding, learned temperature, batch 128, lr 1e-2),
the schedule on wall time shared by the models of one batched job.

    python benchmarks/rank_width.py [--budget 360] [--out results/rank_2core.txt]

One torch thread. The table lists the best validation NMSE of each (n, seed), the verdicts with and without
the rule (decided at E = n, one head per layer: the head width the rule compares), and the hardware.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import torch

import infoflow_smt as ifs
from experiments.tables.profiles import confirm_setup
from experiments.training.data import make_dataset
from experiments.training.devices import configure_threads
from experiments.training.trainer import train_models


@dataclass(frozen=True)
class RankWidthConfig:
    target: str = "min_pairwise_dot"   # one rank-d retrieval (layer 1), one rank-1 retrieval (layer 2)
    input_dim: int = 4                 # d = r, the rank of layer 1's score
    head_widths: tuple[int, ...] = (2, 4, 8)   # r/2, r, 2r
    embed_dim: int = 16                # E, the residual stream, the same for every width
    seq_len: int = 8                   # T
    seeds: tuple[int, ...] = (0, 1)
    budget_s: float = 360.0            # wall time of training, all models together (one batched job)
    n_train: int = 50_000
    n_val: int = 2_000


def verdicts(cfg: RankWidthConfig, n: int) -> tuple[str, str]:
    """The model's verdict on two layers of one head ``n`` wide, without and with the rank rule."""
    out = []
    for rank_aware in (False, True):
        arch = ifs.Architecture(heads=(1, 1), embed_dim=n, input_dim=cfg.input_dim, rank_aware=rank_aware)
        v = ifs.decide(cfg.target, arch)
        out.append(f"{v.status.value} ({v.exponent})")
    return out[0], out[1]


def run(cfg: RankWidthConfig) -> list[str]:
    configure_threads(1)
    family, recipe = confirm_setup(cfg.target)
    recipe = replace(recipe, n_train=cfg.n_train, n_val=cfg.n_val, time_budget_s=cfg.budget_s, steps=10**6)
    data = make_dataset(cfg.target, cfg.seq_len, cfg.input_dim, cfg.n_train, cfg.n_val, seed=0)
    configs, seeds = [], []
    for n in cfg.head_widths:
        for seed in cfg.seeds:
            configs.append(replace(family, input_dim=cfg.input_dim, seq_len=cfg.seq_len, heads=(1, 1),
                                   embed_dim=cfg.embed_dim, head_dim=n))
            seeds.append(seed)
    started = time.perf_counter()
    metrics = train_models(data, configs, seeds, recipe)
    wall = time.perf_counter() - started
    hardware = (f"hardware: {platform.processor() or platform.machine()}, 2-core CPU shared with other jobs "
                f"(three other engineers' tests), one torch thread; torch {torch.__version__}, "
                f"Python {platform.python_version()}")
    setting = (f"target: {cfg.target}, d = {cfg.input_dim} (layer 1's score has rank {cfg.input_dim}), "
               f"T = {cfg.seq_len}, heads (1, 1), E = {cfg.embed_dim}, head width n as listed")
    recipe_line = (f"recipe: profiles.confirm_setup({cfg.target!r}) with {cfg.n_train} training sequences, "
                   f"{cfg.budget_s:g} s of wall time shared by the {len(configs)} models of one batched job")
    papers = "model (papers' law)"
    header = f"{'n':>3} {'seed':>4} {'best val NMSE':>14} {'steps':>6}  {papers:<27}model (rank rule)"
    lines = [f"command: python benchmarks/rank_width.py --budget {cfg.budget_s:g}", hardware,
             f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; training wall {wall:.0f} s",
             setting, recipe_line, "", header]
    for cfg_i, seed, m in zip(configs, seeds, metrics):
        plain, ranked = verdicts(cfg, cfg_i.head_dim)
        lines.append(f"{cfg_i.head_dim:>3} {seed:>4} {m.nmse_best:>14.3e} {m.steps:>6}  {plain:<27} {ranked}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=RankWidthConfig.budget_s, help="training seconds")
    parser.add_argument("--out", default=None, help="also write the table to this file")
    args = parser.parse_args(argv)
    lines = run(RankWidthConfig(budget_s=args.budget))
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
