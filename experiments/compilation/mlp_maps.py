"""``ffn="mlp"``: each exact position-wise map of a compiled witness replaced by a GELU MLP fitted to it.

Each MLP sees the whole residual stream at a position and is fitted, on that map alone, to the exact map's
output on the streams the exact model produces for seeded inputs (the paper's distribution, ``FIT_LENGTH``
tokens): a regression on (stream row, map output) pairs, full batch, Adam with a cosine schedule. After the
last layer only the output token's row is fitted (nothing else is read there). The parameter count the cost
law talks about is then real: the MLPs' weights are most of the model's.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from experiments.training.data import default_distribution, sample_inputs

FIT_LENGTH, FIT_SAMPLES, FIT_STEPS, FIT_LR = 16, 128, 800, 1e-2


class MlpMap(nn.Module):
    """``R -> W_2 gelu(W_1 R + b_1) + b_2`` written into the columns the exact map writes."""

    def __init__(self, width: int, columns: torch.Tensor, stream_width: int):
        super().__init__()
        self.columns = columns
        self.stream_width = stream_width
        self.hidden = nn.Linear(stream_width, width, dtype=torch.float64)
        self.out = nn.Linear(width, len(columns), dtype=torch.float64)

    def forward(self, R: torch.Tensor) -> torch.Tensor:
        delta = torch.zeros_like(R)
        delta[..., self.columns] = self.out(nn.functional.gelu(self.hidden(R)))
        return delta


def fit_maps(model, width: int = 64, seed: int = 0, steps: int = FIT_STEPS) -> None:
    """Replace every exact map of ``model`` by an MLP of ``width`` hidden units fitted to it (in place)."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    X = sample_inputs(default_distribution(model.target), FIT_SAMPLES, FIT_LENGTH, model.plan.input_dim, rng)
    pairs = _map_pairs(model, torch.as_tensor(X))
    last = len(model.maps) - 1
    for i, (R, delta) in enumerate(pairs):
        if i == last:  # after the last layer only the output token's row is read
            R, delta = R[:, -1:], delta[:, -1:]
        rows, targets = R.reshape(-1, R.shape[-1]), delta.reshape(-1, delta.shape[-1])
        columns = torch.nonzero(targets.abs().amax(0) > 0).flatten()
        mlp = MlpMap(width, columns, R.shape[-1])
        if len(columns):
            _fit(mlp, rows, targets[:, columns], steps)
        model.maps[i] = mlp


def _map_pairs(model, X: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(input, output) of every map of the exact model on inputs ``X``."""
    pairs: list = []
    hooks = [m.register_forward_hook(lambda mod, args, out: pairs.append((args[0].detach(), out.detach())))
             for m in model.maps]
    try:
        with torch.no_grad():
            model.stream(X)
    finally:
        for h in hooks:
            h.remove()
    return pairs


def _fit(mlp: MlpMap, rows: torch.Tensor, targets: torch.Tensor, steps: int) -> None:
    optimizer = torch.optim.Adam(list(mlp.hidden.parameters()) + list(mlp.out.parameters()), lr=FIT_LR)
    for step in range(steps):
        for group in optimizer.param_groups:  # cosine decay to zero
            group["lr"] = FIT_LR * 0.5 * (1 + math.cos(math.pi * step / steps))
        optimizer.zero_grad()
        loss = ((mlp.out(nn.functional.gelu(mlp.hidden(rows))) - targets) ** 2).mean()
        loss.backward()
        optimizer.step()
