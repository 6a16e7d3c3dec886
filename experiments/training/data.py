"""Seeded synthetic data for a target: the papers' input distributions, labels from ``Target.evaluate``.

The labels come from the very ``evaluate`` the solver's target defines, so an experiment measures the
function the solver reasons about, not a re-implementation of it. Everything is numpy (no torch here):
the trainer converts to tensors.

>>> ds = make_dataset("linear_max_sum:D=2", seq_len=8, input_dim=2, n_train=16, n_val=8, seed=1)
>>> ds.X_train.shape, ds.y_train.shape, ds.target_seed
((16, 8, 2), (16,), 0)
"""
from __future__ import annotations

import enum
import hashlib
import time
from dataclasses import dataclass
from typing import Any

import numpy as np


class Distribution(enum.Enum):
    """Token distributions used by the papers' synthetic experiments."""

    GAUSSIAN = "gaussian"                    # x ~ N(0, I_d): paper 2 Sec. 6.1, paper 1 Exp. 1 and 4
    CLAMPED_GAUSSIAN = "clamped_gaussian"    # x ~ N(0, 2 I_d), norm clamped to [0.2, 4]: paper 1 Exp. 2
    NEAREST_MARGIN = "nearest_margin"        # N(0, I_d), one example near the query x[T], the rest kept away


# Catalogue names whose task is posed on a non-default distribution: triangle center's paper
# (shared/reference/papers.md 3.5, Exp. 2, outside this repository); nearest neighbour with a
# margin (``sample_inputs``).
_DISTRIBUTION_BY_NAME: dict[str, Distribution] = {"triangle_center": Distribution.CLAMPED_GAUSSIAN,
                                                  "nearest_neighbor": Distribution.NEAREST_MARGIN}

CLAMP_VARIANCE = 2.0        # N(0, 2 I) before clamping (paper 1 Exp. 2)
CLAMP_NORM = (0.2, 4.0)     # every token's Euclidean norm is pushed into this interval (paper 1 Exp. 2)
# nearest neighbour with a margin: the query is one example plus N(0, NOISE^2 I), every other example lies at
# least RADIUS from it, so the nearest and the next squared distance differ by at least RADIUS^2 - a few NOISE^2
MARGIN_NOISE, MARGIN_RADIUS = 0.05, 0.5


def resolve_target(target: Any, seed: int = 0) -> Any:
    """A ``Target`` from a catalogue spec / target text, or the ``Target`` itself if one is given.

    Unknown specs raise the catalogue's ``InvalidSpecError`` / ``KeyError`` (the CLI turns them into exit 2).
    """
    if isinstance(target, str):
        from infoflow_smt.lang import catalogue  # lazy: the catalogue is not needed to import this module

        target = catalogue.parse_spec(target, seed=seed)
    if not hasattr(target, "evaluate"):
        raise TypeError(f"expected a target spec string or a Target, got {type(target).__name__}")
    if getattr(target, "per_position", False):
        from infoflow_smt.errors import InvalidSpecError
        raise InvalidSpecError("the experiments' models read one answer at the output token; a target with an "
                               "answer at every position (it names o) is not supported there yet", "target")
    return target


def target_label(target: Any) -> str:
    """The spec as the CLI takes it (``intrinsic_dimension:D=2``), or the target text for raw targets."""
    if isinstance(target, str):
        return target
    return target.name if getattr(target, "name", None) else str(target.text)


def default_distribution(target: Any) -> Distribution:
    """The paper's distribution for a catalogue target (by the name before ``:``), Gaussian otherwise."""
    base = target_label(target).split(":", 1)[0].strip()
    return _DISTRIBUTION_BY_NAME.get(base, Distribution.GAUSSIAN)


def sample_inputs(dist: Distribution, n: int, seq_len: int, input_dim: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``n`` sequences of ``seq_len`` tokens in ``R^input_dim`` (float64, shape (n, T, d))."""
    if dist is Distribution.GAUSSIAN:
        return rng.standard_normal((n, seq_len, input_dim))
    if dist is Distribution.CLAMPED_GAUSSIAN:
        x = rng.standard_normal((n, seq_len, input_dim)) * np.sqrt(CLAMP_VARIANCE)
        norm = np.linalg.norm(x, axis=-1, keepdims=True)
        lo, hi = CLAMP_NORM
        # rescale along the ray rather than clip coordinates: keeps the direction, the norm lands in [lo, hi]
        return x * (np.clip(norm, lo, hi) / np.maximum(norm, 1e-12))
    if dist is Distribution.NEAREST_MARGIN:
        return _with_margin(rng.standard_normal((n, seq_len, input_dim)), rng)
    raise ValueError(f"unknown distribution {dist!r}")


def _with_margin(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Gaussian tokens made a nearest-neighbour question with a margin (the catalogue's ``nearest_neighbor``:
    the examples are ``x[1..T-2]``, each followed by its label, the query is ``x[T]``). The query is one
    example, drawn uniformly, plus ``N(0, MARGIN_NOISE^2 I)``; every other example is redrawn from N(0, I)
    until it lies at least ``MARGIN_RADIUS`` from the query. On plain Gaussian tokens the nearest of T
    examples in d = 2 lies at a squared distance about 1/T and so does the next, so the margin between them
    shrinks like 1/T (docs/compile.md); the nearest-neighbour literature poses the task with a margin that
    does not shrink (Li et al. 2024, arXiv 2411.10830, keep every other example at least delta from the
    query). Sequences shorter than 3 have no example and are left as drawn."""
    n, seq_len, _ = x.shape
    if seq_len < 3:
        return x
    rows = np.arange(n)
    nearest = rng.integers(0, seq_len - 2, size=n)
    x[:, -1] = x[rows, nearest] + MARGIN_NOISE * rng.standard_normal(x[:, -1].shape)
    examples = x[:, : seq_len - 2]                    # a view: redrawn in place
    others = np.arange(seq_len - 2)[None, :] != nearest[:, None]
    while True:
        close = others & (np.linalg.norm(examples - x[:, -1:], axis=-1) < MARGIN_RADIUS)
        if not close.any():
            return x
        examples[close] = rng.standard_normal((int(close.sum()), x.shape[-1]))


@dataclass(frozen=True, eq=False)
class Dataset:
    """Train/validation arrays with the provenance needed to regenerate them bit for bit."""

    X_train: np.ndarray   # (n_train, T, d)
    y_train: np.ndarray   # (n_train,) scalar targets or (n_train, k) vector targets
    X_val: np.ndarray
    y_val: np.ndarray
    target: str           # spec or text, as the CLI takes it
    target_seed: int      # fixes the target's random matrices / functions
    data_seed: int        # fixes the inputs
    distribution: Distribution

    @property
    def seq_len(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def output_dim(self) -> int:
        return 1 if self.y_train.ndim == 1 else int(self.y_train.shape[1])

    def fingerprint(self) -> str:
        """A short hash of the data, recorded with each run so a changed target definition is visible."""
        h = hashlib.sha256()
        for a in (self.X_train, self.y_train, self.X_val, self.y_val):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()[:16]


def _evaluate_chunk(args: tuple[str, int, np.ndarray]) -> np.ndarray:
    spec, seed, X = args
    return np.asarray(resolve_target(spec, seed=seed).evaluate(X), dtype=np.float64)


_POOL_WORTH_S = 5.0   # a process pool takes seconds to start: only worth it for labels slower than this


def label(tgt: Any, X: np.ndarray, workers: int = 1) -> np.ndarray:
    """``tgt.evaluate(X)``, split over ``workers`` processes when the labels are slow.

    Why: the reference evaluation of an order-3 target costs O(T^3) per sequence (triangle center at
    T = 64), so a paper-sized dataset needs the machine's cores.
    The first sequences are timed serially; the pool starts only if the rest would take longer than
    ``_POOL_WORTH_S``. Each worker rebuilds the target from its spec and seed, and the target is
    evaluated sequence by sequence, so the labels are the same either way.
    """
    probe = min(len(X), 16)
    start = time.perf_counter()
    head = np.asarray(tgt.evaluate(X[:probe]), dtype=np.float64)
    projected = (time.perf_counter() - start) / max(probe, 1) * (len(X) - probe)
    rest = X[probe:]
    if len(rest) == 0:
        return head
    if workers <= 1 or projected < _POOL_WORTH_S or len(rest) < 2 * workers:
        return np.concatenate([head, np.asarray(tgt.evaluate(rest), dtype=np.float64)])
    from infoflow_smt.processes import worker_pool

    chunks = np.array_split(rest, 4 * workers)  # several chunks per worker: evens out uneven progress
    spec, seed = target_label(tgt), int(getattr(tgt, "seed", 0))
    with worker_pool(workers) as pool:
        parts = list(pool.map(_evaluate_chunk, [(spec, seed, c) for c in chunks]))
    return np.concatenate([head, *parts])


def make_dataset(target: Any, seq_len: int, input_dim: int, n_train: int, n_val: int, seed: int = 0,
                 target_seed: int = 0, distribution: Distribution | None = None,
                 label_workers: int = 1) -> Dataset:
    """Sample inputs with ``seed`` and label them with ``target.evaluate``.

    ``target_seed`` is passed to the catalogue when ``target`` is a spec string (a ``Target`` object keeps
    its own ``.seed``). The validation set is drawn from an independent stream of the same seed, so
    growing ``n_train`` does not change the validation inputs. ``label_workers`` > 1 evaluates the
    labels in that many processes (same labels, see ``label``).
    """
    tgt = resolve_target(target, seed=target_seed)
    dist = distribution if distribution is not None else default_distribution(tgt)
    train_rng, val_rng = (np.random.default_rng([seed, stream]) for stream in (0, 1))
    X_train = sample_inputs(dist, n_train, seq_len, input_dim, train_rng)
    X_val = sample_inputs(dist, n_val, seq_len, input_dim, val_rng)
    y = label(tgt, np.concatenate([X_train, X_val]), label_workers)   # one pool for both splits
    y_train, y_val = y[:n_train], y[n_train:]
    if y_train.shape[0] != n_train or y_train.ndim not in (1, 2):
        raise ValueError(f"target {target_label(tgt)!r} returned labels of shape {y_train.shape}; "
                         f"expected ({n_train},) or ({n_train}, k)")
    return Dataset(X_train, y_train, X_val, y_val, target=target_label(tgt),
                   target_seed=int(getattr(tgt, "seed", target_seed)), data_seed=seed, distribution=dist)
