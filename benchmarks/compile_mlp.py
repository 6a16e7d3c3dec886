"""Compiled witnesses with ``ffn="mlp"`` (issue 19): NMSE against the MLP width, and the fitted exponent of
the parameter count against 1/NMSE printed beside the solver's exponent.

    python benchmarks/compile_mlp.py [--out results/compile_mlp_2core.txt]
"""
from __future__ import annotations

import argparse
import math
import os

import numpy as np
import torch

import experiments
import infoflow_smt as ifs
from infoflow_smt.machine import cpu_model

CASES = (("min_pairwise_dot", (1, 1)), ("intrinsic_dimension:D=2", (2, 2)))
WIDTHS = (8, 32, 128)
BETA, SEQ_LEN, SAMPLES = 1024.0, 16, 64


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    lines = [(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; beta {BETA:g}, T = {SEQ_LEN} (the fitting length), "
             f"{SAMPLES} inputs; each map a GELU MLP fitted on the exact model's streams"), ""]
    for spec, heads in CASES:
        verdict = ifs.decide(spec, ifs.Architecture(heads=heads, embed_dim=32, input_dim=2))
        rows = []
        for width in WIDTHS:
            result = experiments.check_compiled(verdict, (BETA,), (SEQ_LEN,), SAMPLES, ffn="mlp", mlp_width=width)
            rows.append((width, result.parameters, result.nmse[0][0], result.seconds))
        x = np.log([1 / r[2] for r in rows])
        y = np.log([r[1] for r in rows])
        fitted = float(np.polyfit(x, y, 1)[0]) if np.ptp(x) > 0 else math.nan
        lines.append(f"{spec} on {verdict.architecture}")
        lines.append(f"{'width':>7} {'parameters':>11} {'NMSE':>10} {'seconds':>8}")
        lines += [f"{w:>7} {p:>11} {e:>10.3g} {s:>8.1f}" for w, p, e, s in rows]
        lines.append(f"fitted: parameters ~ (1/NMSE)^{fitted:.2f}; the solver's exponent (parameters ~ eps^-a): "
                     f"{verdict.exponent}")
        lines.append("")
        print("\n".join(lines[-len(rows) - 4:]), flush=True)
    text = "\n".join(lines)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
