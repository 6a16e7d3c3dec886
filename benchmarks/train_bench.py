"""Batched versus one-after-another training of paper 1 Exp. 1's 15 configurations.

The 15 configurations: D in 2..6 times heads (D,D), (D-1,D), (D,D-1); d = 4, E = 32, two layers, residual
on, no PE / LN (paper 1 Exp. 1). Both modes run the same number of optimizer steps per model on the same
data; the batched mode trains all 15 as one BatchedTransformer (heads padded and masked), the sequential
mode trains 15 single models in a row. Prints samples/second for both and the ratio.

On CPU the defaults are reduced (T = 8, batch 16, 40 steps; printed). Why so small: on 2 CPU cores a
training step is compute-bound as soon as a model's own work exceeds the ~5 ms of fixed per-step cost
(kernel dispatch, autograd, optimizer), and batching only removes that fixed cost. Measured on the project
machine: ratio 3.5 at T = 8, batch 16; 1.8 at T = 16, batch 64 (``--seq-len 16 --batch 64``).
``--device cuda`` defaults to the paper's T = 64 with batch 256, where every step is launch-bound
(measured on one H200: ratio 11, 275 000 samples/s batched).

    python benchmarks/train_bench.py [--device cuda] [--steps N] [--seq-len T] [--batch B] [--threads N]
"""
from __future__ import annotations

import argparse
import sys
import time

import torch

from experiments.data import make_dataset
from experiments.model import ModelConfig
from experiments.train import TrainConfig, configure_threads, device_name, pick_device, train_models


def configs(seq_len: int, embed_dim: int = 32) -> list[ModelConfig]:
    """Paper 1 Exp. 1: D = 2..6, (D,D), (D-1,D), (D,D-1)."""
    return [ModelConfig(input_dim=4, seq_len=seq_len, heads=h, embed_dim=embed_dim, residual=True)
            for D in range(2, 7) for h in ((D, D), (D - 1, D), (D, D - 1))]


def _timed(fn) -> float:
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default=None)
    parser.add_argument("--steps", type=int, default=None,
                        help="optimizer steps per model (cpu 40, cuda 200)")
    parser.add_argument("--seq-len", type=int, default=None, help="T (cpu 8, cuda 64 as the paper)")
    parser.add_argument("--batch", type=int, default=None, help="minibatch per model (cpu 16, cuda 256)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default 1, see experiments/train.py)")
    args = parser.parse_args(argv)
    try:
        device = pick_device(args.device)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    gpu = device.type == "cuda"
    threads = configure_threads(args.threads) if not gpu else torch.get_num_threads()
    T = args.seq_len or (64 if gpu else 8)
    batch = args.batch or (256 if gpu else 16)
    steps = args.steps or (200 if gpu else 40)
    cfgs = configs(T)
    seeds = list(range(len(cfgs)))
    # Evaluation only at the last step, on a small validation set: the benchmark measures training.
    train = TrainConfig(steps=steps, batch_size=batch, eval_every=steps, n_train=4 * batch, n_val=64)
    data = make_dataset("intrinsic_dimension:D=2", T, 4, train.n_train, train.n_val, seed=0)
    reduced = "" if gpu else " (reduced for CPU; paper: T=64)"
    print(f"device: {device.type} ({device_name(device)}), torch {torch.__version__}, threads {threads}")
    print(f"{len(cfgs)} configurations of paper 1 Exp. 1, T={T}{reduced}, batch {batch}, {steps} steps each")
    train_models(data, cfgs[:2], seeds[:2], TrainConfig(steps=2, batch_size=batch, eval_every=2,
                                                        n_train=train.n_train, n_val=64), device)  # warm-up
    t_batched = _timed(lambda: train_models(data, cfgs, seeds, train, device))
    t_seq = _timed(lambda: [train_models(data, [c], [s], train, device) for c, s in zip(cfgs, seeds)])
    samples = len(cfgs) * steps * batch
    print(f"batched    : {samples / t_batched:12.0f} samples/s  ({t_batched:.2f} s)")
    print(f"sequential : {samples / t_seq:12.0f} samples/s  ({t_seq:.2f} s)")
    print(f"throughput ratio batched / sequential: {t_seq / t_batched:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
