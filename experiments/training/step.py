"""One optimizer step of a batched job, three ways: reference, fast, and CUDA-graph replay.

All three compute the same update (each model's own MSE, summed so that each model's gradient is its own
loss's gradient; AdamW; the learning rate the schedule gives) and return the per-model minibatch loss as a
device tensor, never a Python number: nothing in a step waits for the device.

* ``reference`` is the plain step: every parameter multiplied by its 0/1 padding mask in every forward (and
  so in every backward), and AdamW's default implementation (a loop over parameters on CPU, ``foreach`` on
  CUDA). It is the baseline ``benchmarks/train_bench.py`` sets the fast step against, and a test checks that
  the fast step trains to the same numbers in float64.
* ``fast`` runs the forward without masks and zeroes the padded entries once after the optimizer step
  (``BatchedTransformer.enforce_masks``: one fused multiply), with the fused AdamW kernel (one kernel over
  all parameters instead of a dozen per parameter). Padded entries are zero whenever a forward runs, so
  true entries get the same gradients and updates as in the reference step.
* ``graph`` (CUDA only) records the fast step once in a CUDA graph and replays it: one launch per step
  instead of a few hundred, for the launch-bound tiny models of these experiments. The minibatch indices
  and the learning rate live in static device tensors that the host overwrites before each replay. If
  recording fails the job falls back to ``fast`` and says so once (stderr).

``benchmarks/train_bench.py`` prints each step's speed. ``torch.compile`` is not used: on CPU compiling a
step takes longer than many of these jobs train, and the compiled step is no faster than ``fast``.
"""
from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from experiments.training.network import BatchedTransformer

STEP_KINDS = ("reference", "fast", "graph")

Step = Callable[[torch.Tensor, float], torch.Tensor]   # (indices (M, B), lr) -> per-model loss (M,)


def _loss(model: BatchedTransformer, X: torch.Tensor, Y: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """Per-model minibatch MSE (M,): model m reads rows ``idx[m]`` of the shared training set."""
    pred = model(X[idx])                                   # (M, B, k)
    return ((pred - Y[idx]) ** 2).mean(dim=(1, 2))


def reference_step(model: BatchedTransformer, X: torch.Tensor, Y: torch.Tensor, lr: float,
                   weight_decay: float) -> Step:
    """Masked forward, AdamW's default implementation (the pre-optimization step)."""
    model.masked_forward = True
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)   # torch's default kernel

    def step(idx: torch.Tensor, lr_now: float) -> torch.Tensor:
        opt.param_groups[0]["lr"] = lr_now
        loss = _loss(model, X, Y, idx)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        return loss.detach()

    return step


def _fused_adamw(model: BatchedTransformer, lr: float | torch.Tensor, weight_decay: float,
                 capturable: bool = False) -> torch.optim.AdamW:
    try:
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, fused=True,
                                 capturable=capturable)
    except (RuntimeError, TypeError, ValueError):   # a dtype or device without the fused kernel
        return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, foreach=True,
                                 capturable=capturable)


def fast_step(model: BatchedTransformer, X: torch.Tensor, Y: torch.Tensor, lr: float,
              weight_decay: float) -> Step:
    """Unmasked forward, fused AdamW, padded entries zeroed once per step."""
    model.masked_forward = False
    model.enforce_masks()
    opt = _fused_adamw(model, lr, weight_decay)

    def step(idx: torch.Tensor, lr_now: float) -> torch.Tensor:
        opt.param_groups[0]["lr"] = lr_now
        loss = _loss(model, X, Y, idx)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        model.enforce_masks()
        return loss.detach()

    return step


def graph_step(model: BatchedTransformer, X: torch.Tensor, Y: torch.Tensor, lr: float,
               weight_decay: float, example_idx: torch.Tensor) -> Step:
    """The fast step recorded once as a CUDA graph (PyTorch's whole-network capture recipe).

    The three warm-up steps that the recipe needs before recording run on ``example_idx`` (the job's first
    minibatch) at ``lr = 0``: AdamW then moves no weight (its decoupled weight decay is scaled by lr too),
    so the job's trajectory starts from the initial weights as in the other step kinds; only Adam's moment
    estimates have seen that minibatch three extra times.
    """
    model.masked_forward = False
    model.enforce_masks()
    lr_t = torch.tensor(0.0, device=X.device)
    opt = _fused_adamw(model, lr_t, weight_decay, capturable=True)
    static_idx = example_idx.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            _loss(model, X, Y, static_idx).sum().backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = _loss(model, X, Y, static_idx)
        static_loss.sum().backward()
        opt.step()
        model.enforce_masks()

    def step(idx: torch.Tensor, lr_now: float) -> torch.Tensor:
        static_idx.copy_(idx, non_blocking=True)
        lr_t.fill_(lr_now)
        graph.replay()
        return static_loss.detach().clone()

    return step


def make_step(kind: str, model: BatchedTransformer, X: torch.Tensor, Y: torch.Tensor, lr: float,
              weight_decay: float, example_idx: torch.Tensor) -> tuple[Step, str]:
    """The step of ``kind`` (``auto``: graph on CUDA, fast elsewhere); returns (step, the kind used)."""
    if kind == "auto":
        kind = "graph" if X.device.type == "cuda" else "fast"
    if kind not in STEP_KINDS:
        raise ValueError(f"unknown step kind {kind!r}; known: auto, {', '.join(STEP_KINDS)}")
    if kind == "reference":
        return reference_step(model, X, Y, lr, weight_decay), kind
    if kind == "graph":
        if X.device.type != "cuda":
            raise ValueError("the graph step needs a CUDA device")
        try:
            return graph_step(model, X, Y, lr, weight_decay, example_idx), kind
        except RuntimeError as exc:   # e.g. an op that cannot be captured on this torch build
            print(f"experiments: CUDA graph capture failed ({' '.join(str(exc).split())[:160]}); "
                  "using the fast eager step", file=sys.stderr)
    return fast_step(model, X, Y, lr, weight_decay), "fast"
