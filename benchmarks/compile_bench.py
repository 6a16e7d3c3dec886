"""Compiled witnesses against the issue-19 criteria: every catalogue target at every architecture on its
``ifs.decide_all`` frontier, compiled with exact maps and checked over beta and T, and the time of one
compile-and-check at T up to 512 (target: under 10 s).

    python benchmarks/compile_bench.py [--samples 32] [--out results/compile_2core.txt]

Prints the machine (``infoflow_smt.machine.cpu_model``, cores, load), each check's table with its verdict on
the criterion, and a summary line per criterion; ``--out`` also writes the text there.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import torch

import experiments
import infoflow_smt as ifs
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import catalogue
from infoflow_smt.machine import cpu_model

BETAS = (4, 32, 256, 2048, 16384)  # 8x apart: d_retrieval needs beta ~ T (docs/compile.md)
SEQ_LENS = (8, 32, 128, 512)
TIME_GOAL_S = 10.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = [(f"machine: {cpu_model()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
             f"Python {platform.python_version()}, torch {torch.__version__}, 1 torch thread"),
             f"betas {BETAS}, T {SEQ_LENS}, {args.samples} inputs per T, float64", ""]
    held, total, slowest = 0, 0, 0.0
    for name in catalogue.names():
        frontier = ifs.decide_all(name)
        if frontier.none:
            lines.append(f"{name}: no efficient architecture (nothing to compile)\n")
        for verdict in frontier.points:
            total += 1
            try:
                result = experiments.check_compiled(verdict, BETAS, SEQ_LENS, args.samples)
            except CompileRefusal as refusal:
                lines.append(f"{name} on {verdict.architecture}: REFUSED {refusal}\n")
                continue
            held += result.holds
            slowest = max(slowest, result.seconds)
            lines += [str(result), f"compile and check: {result.seconds:.1f} s", ""]
            print("\n".join(lines[-3:]), flush=True)
    lines.append(f"frontier criterion: {held} of {total} frontier architectures hold")
    lines.append(f"compile and check, slowest: {slowest:.1f} s for {len(BETAS)} betas x {len(SEQ_LENS)} lengths "
                 f"(target < {TIME_GOAL_S:g} s): {'PASS' if slowest < TIME_GOAL_S else 'MISS'}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    started = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - started:.0f} s")
