"""Training throughput: optimizer steps per second before and after the step was made faster.

"Before" is the reference step (experiments/training/step.py: every parameter masked in every forward and backward,
AdamW's per-parameter loop), the step this module had until the fast one replaced it; "after" is the fast
step (unmasked forward, fused AdamW, padding masks applied once per step) and, on CUDA, the same step
recorded once as a CUDA graph and replayed. Each mode trains the same models on the same data for the same
number of steps; each is timed twice, alternating, and the faster of the two is kept (this machine's
timings vary by 10-20% from run to run).

Two workloads:
  tiny   one model, paper 2's one-layer network with h = 4 (E = 32) at T = 8, batch 16: launch-bound, where
         per-step overhead is all there is;
  batch  paper 1 Exp. 1's 15 configurations (D = 2..6, (D,D), (D-1,D), (D,D-1)) as one batched job.
Then, for the batch workload, batched against one-model-at-a-time training with the fast step.

On CPU: T = 8, batch 16 (reduced; printed). ``--device cuda`` uses paper 1's T = 64 and batch 256.

    python benchmarks/train_bench.py [--device cuda] [--steps N] [--threads N]
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch

from experiments.training.data import make_dataset
from experiments.training.devices import configure_threads, device_name, pick_device
from experiments.training.network import ModelConfig
from experiments.training.trainer import TrainConfig, train_models


def paper1_configs(seq_len: int, embed_dim: int = 32) -> list[ModelConfig]:
    """Paper 1 Exp. 1: D = 2..6, (D,D), (D-1,D), (D,D-1)."""
    return [ModelConfig(input_dim=4, seq_len=seq_len, heads=h, embed_dim=embed_dim, residual=True)
            for D in range(2, 7) for h in ((D, D), (D - 1, D), (D, D - 1))]


def tiny_config(seq_len: int) -> list[ModelConfig]:
    return [ModelConfig(input_dim=4, seq_len=seq_len, heads=(4,), embed_dim=32, head_dim=8, cls_as_key=False)]


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _best_time(fns: dict[str, Callable[[], object]], repeats: int = 2) -> dict[str, float]:
    """The faster of ``repeats`` timings of each function, the functions alternating."""
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for key, fn in fns.items():
            _sync()
            start = time.perf_counter()
            fn()
            _sync()
            best[key] = min(best[key], time.perf_counter() - start)
    return best


def _modes(device: torch.device) -> list[str]:
    return ["reference", "fast"] + (["graph"] if device.type == "cuda" else [])


def bench_steps(name: str, cfgs: list[ModelConfig], T: int, batch: int, steps: int, device: torch.device) -> None:
    """Steps per second of each step implementation on one workload."""
    train = TrainConfig(steps=steps, batch_size=batch, eval_every=steps, n_train=8 * batch, n_val=64)
    data = make_dataset("intrinsic_dimension:D=2", T, 4, train.n_train, train.n_val, seed=0)
    seeds = list(range(len(cfgs)))
    warm = TrainConfig(steps=3, batch_size=batch, eval_every=3, n_train=train.n_train, n_val=64)
    for mode in _modes(device):
        train_models(data, cfgs, seeds, warm, device, step=mode)
    times = _best_time({m: (lambda m=m: train_models(data, cfgs, seeds, train, device, step=m))
                        for m in _modes(device)})
    before = steps / times["reference"]
    print(f"{name}: {len(cfgs)} model(s), T={T}, batch {batch}, {steps} steps")
    for mode, t in times.items():
        label = "before" if mode == "reference" else "after "
        print(f"  {label} {mode:<9}: {steps / t:8.1f} steps/s  ({t:.2f} s)  x{steps / t / before:.2f}")


def bench_batching(cfgs: list[ModelConfig], T: int, batch: int, steps: int, device: torch.device) -> None:
    """The batched job against one model at a time, both with the fast step."""
    train = TrainConfig(steps=steps, batch_size=batch, eval_every=steps, n_train=8 * batch, n_val=64)
    data = make_dataset("intrinsic_dimension:D=2", T, 4, train.n_train, train.n_val, seed=0)
    seeds = list(range(len(cfgs)))
    times = _best_time({"batched": lambda: train_models(data, cfgs, seeds, train, device),
                        "sequential": lambda: [train_models(data, [c], [s], train, device)
                                               for c, s in zip(cfgs, seeds)]}, repeats=1)
    samples = len(cfgs) * steps * batch
    print(f"batching: {len(cfgs)} configurations, {steps} steps each")
    for mode, t in times.items():
        print(f"  {mode:<10}: {samples / t:10.0f} samples/s  ({t:.2f} s)")
    print(f"  throughput ratio batched / sequential: {times['sequential'] / times['batched']:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None)
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps per timing (cpu 60, cuda 300)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default 1, see experiments/training/devices.py)")
    args = parser.parse_args(argv)
    try:
        device = pick_device(args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    gpu = device.type == "cuda"
    threads = configure_threads(args.threads) if not gpu else torch.get_num_threads()
    T, batch, steps = (64, 256, args.steps or 300) if gpu else (8, 16, args.steps or 60)
    print(f"device: {device.type} ({device_name(device)}), torch {torch.__version__}, threads {threads}"
          + ("" if gpu else "; CPU sizes reduced: T=8, batch 16 (paper: T=64)"))
    bench_steps("tiny", tiny_config(T), T, batch, steps * 2, device)
    bench_steps("batch", paper1_configs(T), T, batch, steps, device)
    bench_batching(paper1_configs(T), T, batch, steps // 2, device)
    if not gpu:
        print("GPU: not measured here (no CUDA device); run with --device cuda on a GPU machine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
