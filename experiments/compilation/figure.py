"""A compiled witness's attention maps on one input, beside the witness program (docs/compile.md).

    python -m experiments.compilation.figure [min_pairwise_dot] [--heads 1,1] [--seq-len 12] [--beta 64]
                                          [--out docs/images/compiled_min_pairwise_dot.png]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

import infoflow_smt as ifs
from experiments.compilation.compiling import compile as compile_witness


def attention_figure(verdict, X: np.ndarray, path: str, beta: float = 64.0) -> None:
    """One panel per head (rows: the querying positions, the output token last; columns: the keys), and the
    witness's text beside them."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model = compile_witness(verdict, beta=beta)
    weights: list = []
    with torch.no_grad():
        model.stream(torch.as_tensor(X[None]), weights)
    panels = [(layer + 1, head + 1, w[0, head].numpy()) for layer, w in enumerate(weights)
              for head in range(w.shape[1]) if model.plan.head(layer + 1, head + 1) is not None]
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(3.3 * (len(panels) + 1), 3.4))
    T = X.shape[0]
    labels = [str(p) for p in range(1, T + 1)] + ["out"]
    for ax, (layer, head, w) in zip(axes, panels):
        ax.imshow(w, cmap="Blues", vmin=0, vmax=1)
        ax.set_title(f"layer {layer}, head {head}", fontsize=9)
        ax.set_xticks(range(T + 1), labels, fontsize=6)
        ax.set_yticks(range(T + 1), labels, fontsize=6)
        ax.set_xlabel("key position", fontsize=8)
        ax.set_ylabel("query position", fontsize=8)
    text = axes[-1]
    text.axis("off")
    value = float(model(torch.as_tensor(X[None]))[0])
    truth = float(np.asarray(verdict.target.evaluate(X[None]))[0])
    body = str(verdict.witness).replace(", at ", ",\n  at ").replace(": max", ":\n  max")
    text.text(0, 1, f"witness:\n{body}\n\ncompiled output {value:.6f}\ntarget          {truth:.6f}\nbeta = {beta:g}",
              va="top", family="monospace", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", nargs="?", default="min_pairwise_dot")
    parser.add_argument("--heads", default="1,1")
    parser.add_argument("--seq-len", type=int, default=12)
    parser.add_argument("--beta", type=float, default=64.0)
    parser.add_argument("--out", default="docs/images/compiled_min_pairwise_dot.png")
    args = parser.parse_args()
    arch = ifs.Architecture(heads=tuple(int(h) for h in args.heads.split(",")), embed_dim=32, input_dim=2)
    verdict = ifs.decide(args.target, arch)
    X = np.random.default_rng(3).standard_normal((args.seq_len, 2))
    attention_figure(verdict, X, args.out, args.beta)
    print(args.out)


if __name__ == "__main__":
    main()
