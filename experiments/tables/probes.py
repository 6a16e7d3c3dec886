"""What a trained network retrieves: each head's attention argmax against the selections a target needs.

Used for the two questions that a single NMSE cannot answer (docs/reproduction.md):

* ``intrinsic``: does a (D, D) network trained on ``intrinsic_dimension`` retrieve, at each position s,
  the partner t*(s) = argmax_t x_s^T A_i x_t in layer 1 (or the transposed reading, query t and key s),
  and in layer 2 the position with the largest partner score? How sharp is its attention?
* ``soft``: how sharp must that attention be? The (D, D) program with exact products but softmax
  attention at inverse temperature beta1 (layer 1) and beta2 (layer 2), read out by the best affine map;
  no training, numpy only.
* ``d3``: which of the three maxima of ``linear_max_sum:D=3`` does each retrieval of a (1, 1) network make,
  at the input positions and at the output token?

A head "matches" a candidate selection at a query when its largest attention weight sits on the
candidate's argmax. ``python -m experiments.tables.probes intrinsic|d3 [--steps N] [--seq-len T]`` trains one
network with the cpu profile's recipe for that table and prints the match table; ``soft`` prints the NMSE
grid over (beta1, beta2).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from experiments.tables.profiles import CPU, Table
from experiments.training.data import make_dataset, resolve_target
from experiments.training.devices import configure_threads
from experiments.training.network import BatchedTransformer
from experiments.training.trainer import train_batch


def attention(model: BatchedTransformer, X: np.ndarray) -> dict[str, np.ndarray]:
    """Every layer's attention weights of model 0 on ``X``: ``attn{l}`` of shape (B, H, queries, T+1)."""
    model.trace = {}
    with torch.no_grad():
        model(torch.as_tensor(X, dtype=next(model.parameters()).dtype)[None])
    out = {k: v[0].cpu().numpy() for k, v in model.trace.items() if k.startswith("attn") and "_" not in k}
    model.trace = None
    return out


def match_table(attn: np.ndarray, candidates: dict[str, np.ndarray]) -> list[tuple[int, dict[str, float], float]]:
    """Per head: (head, {candidate: share of queries whose attention argmax is the candidate's argmax},
    mean largest attention weight). ``attn`` (B, H, Q, P); each candidate (B, Q, T) of scores."""
    T = next(iter(candidates.values())).shape[-1]
    rows = []
    for head in range(attn.shape[1]):
        picked = attn[:, head, :, :T].argmax(-1)                       # (B, Q); the output token is T
        share = {name: float((picked == s.argmax(-1)).mean()) for name, s in candidates.items()}
        rows.append((head, share, float(attn[:, head].max(-1).mean())))
    return rows


def form_values(target: Any, X: np.ndarray, i: int) -> np.ndarray:
    """x_s^T A_i x_t for every pair: (B, s, t)."""
    return np.einsum("bsd,de,bte->bst", X, target.realization.matrix(f"A{i}", X.shape[-1]), X)


def intrinsic_candidates(target: Any, X: np.ndarray, D: int) -> tuple[dict, dict]:
    """Layer 1 (query s, key t) and layer 2 (query: output token, key s) selections of the (D, D) program."""
    layer1, layer2 = {}, {}
    for i in range(1, D + 1):
        S = form_values(target, X, i)
        for name, M in ((f"A{i}", S), (f"A{i}^T", np.swapaxes(S, 1, 2))):
            layer1[name] = M
            layer2[name] = M.max(-1)[:, None, :]                           # partner score of each s
    return layer1, layer2


def soft_program_nmse(target: Any, X: np.ndarray, y: np.ndarray, D: int, beta1: float,
                      beta2: float) -> float:
    """NMSE of the (D, D) program made soft: for each form i, position s averages x_s^T A_i x_t over t with
    weights softmax_t(beta1 x_s^T A_i x_t); the output token averages those values over s with weights
    softmax_s(beta2 value_s); the D averages are summed and fitted to ``y`` by the best affine map. The
    products are exact, so this isolates what soft attention alone costs."""
    def softmax(z: np.ndarray, axis: int) -> np.ndarray:
        z = z - z.max(axis, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis, keepdims=True)

    total = np.zeros(len(X))
    for i in range(1, D + 1):
        S = form_values(target, X, i)
        partner = (softmax(beta1 * S, 2) * S).sum(2)                          # (B, s)
        total += (softmax(beta2 * partner, 1) * partner).sum(1)
    design = np.stack([total, np.ones_like(total)], 1)
    residual = y - design @ np.linalg.lstsq(design, y, rcond=None)[0]
    return float((residual ** 2).mean() / y.var())


def linear_candidates(target: Any, X: np.ndarray, D: int) -> dict[str, np.ndarray]:
    """a_i . x_t for every t: the same candidates for every query."""
    return {f"a{i}": np.einsum("btd,d->bt", X, target.realization.vector(f"a{i}", X.shape[-1]))[:, None, :]
            for i in range(1, D + 1)}


def _table(name: str) -> Table:
    return next(t for t in CPU.tables if t.name == name)


def _train(table: Table, heads: tuple[int, ...], embed_dim: int, seq_len: int, steps: int | None,
           seed: int) -> tuple[BatchedTransformer, object, np.ndarray, float]:
    train = table.train if steps is None else replace(table.train, steps=steps,
                                                      warmup_steps=max(1, steps // 20))
    data = make_dataset(table.target, seq_len, table.input_dim, train.n_train, train.n_val, seed=table.data_seed)
    cfg = replace(table.model_config(heads, embed_dim, seq_len), output_dim=data.output_dim)
    model = BatchedTransformer([cfg], [seed])
    metrics = train_batch(model, data, train, [seed])[0]
    return model, resolve_target(table.target), data.X_val[:1000], metrics.nmse_best


def _print(title: str, rows: list) -> None:
    print(title)
    for head, share, sharp in rows:
        best = max(share, key=share.get)
        shares = ", ".join(f"{k} {v:.2f}" for k, v in share.items())
        print(f"  head {head + 1}: matches {best} at {share[best]:.0%} of queries ({shares}); "
              f"mean largest weight {sharp:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.tables.probes", description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=("intrinsic", "soft", "d3"))
    parser.add_argument("--steps", type=int, default=None, help="default: the cpu profile's")
    parser.add_argument("--seq-len", type=int, default=None, help="default: the cpu profile's first T")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    configure_threads(1)
    if args.case == "soft":
        table = _table("intrinsic_D2")
        T = args.seq_len or table.seq_lens[0]
        data = make_dataset(table.target, T, table.input_dim, 20_000, 1, seed=table.data_seed)
        target, betas = resolve_target(table.target), (1, 2, 4, 8, 16)
        spread = form_values(target, data.X_train, 1).std()
        print(f"intrinsic_dimension:D=2, T={T}: NMSE of the soft (2,2) program with exact products (rows "
              f"beta1, columns beta2; the values x_s^T A_1 x_t it compares have std {spread:.2f})")
        print("beta1 \\ beta2  " + "  ".join(f"{b:>7}" for b in betas))
        for b1 in betas:
            row = [soft_program_nmse(target, data.X_train, data.y_train, 2, b1, b2) for b2 in betas]
            print(f"{b1:>13}  " + "  ".join(f"{v:7.1e}" for v in row))
    elif args.case == "intrinsic":
        table = _table("intrinsic_D2")
        T = args.seq_len or table.seq_lens[0]
        model, target, X, nmse = _train(table, (2, 2), table.archs[0][1], T, args.steps, args.seed)
        attn = attention(model, X)
        layer1, layer2 = intrinsic_candidates(target, X, 2)
        print(f"intrinsic_dimension:D=2, (2,2), T={T}: validation NMSE {nmse:.2e}")
        _print("layer 1, at the input positions (partner of s):", match_table(attn["attn0"][:, :, :T], layer1))
        _print("layer 2, at the output token (position s):", match_table(attn["attn1"], layer2))
    else:
        table = _table("d3_depth")
        T = args.seq_len or table.seq_lens[0]
        model, target, X, nmse = _train(table, (1, 1), table.archs[0][1], T, args.steps, args.seed)
        attn = attention(model, X)
        cands = linear_candidates(target, X, 3)
        print(f"linear_max_sum:D=3, (1,1), T={T}: validation NMSE {nmse:.2e}")
        inputs = {k: np.repeat(v, T, axis=1) for k, v in cands.items()}
        _print("layer 1, at the input positions:", match_table(attn["attn0"][:, :, :T], inputs))
        _print("layer 1, at the output token:", match_table(attn["attn0"][:, :, T:], cands))
        _print("layer 2, at the output token:", match_table(attn["attn1"], cands))
    return 0


if __name__ == "__main__":
    sys.exit(main())
