"""Check one decided case against trained networks: ``experiments.confirm(verdict, budget=60)``.

Given a ``Verdict`` of ``ifs.decide`` (any target: a catalogue entry or any target text), train the decided
architecture and its neighbours, within a wall-time budget, and set the measured NMSE beside the solver's
verdict for each:

* the decided architecture;
* one head fewer in the limiting layer: of the layers with more than one head, the one where losing a head
  costs most by the solver (infeasible before feasible, then the larger exponent at this T; ties: the
  later layer);
* one layer fewer: the layer with the fewest heads removed (the strongest shallower network);
* when the verdict is infeasible, also one head more in every layer, so the table holds a stronger network.

Agreement rule, fixed before any training and printed with the table: a network is *measured efficient*
when its best validation NMSE is below ``threshold`` (default ``DEFAULT_THRESHOLD``); *predicted efficient*
when the solver says FEASIBLE; UNKNOWN verdicts are shown, never counted.

The recipe is the profiles' recipe (``profiles.CONFIRM_RECIPE``) scaled to the budget: labels get about a
sixth of it; the rest is split between the batched jobs (one per depth) in proportion to their models, and
each job runs a 5% warm-up and a cosine to zero on wall time (``TrainConfig.time_budget_s``), so however
fast the steps are the schedule ends with the budget; a hard deadline at the budget's end is a safety net.

>>> import infoflow_smt as ifs                                                       # doctest: +SKIP
>>> v = ifs.decide("max(f1(x[t]) + f2(x[t]) for t in T)", ifs.Architecture((1, 1), 16, 4))  # doctest: +SKIP
>>> print(confirm(v, budget="60s"))                                                   # doctest: +SKIP
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

from .budget import parse_budget
from .data import make_dataset, target_label
from .profiles import CONFIRM_MODEL, CONFIRM_RECIPE
from .train import TrainConfig, configure_threads, device_name, pick_device, train_models

DEFAULT_THRESHOLD = 1e-2
THRESHOLD_REASON = ("1e-2: the cpu profile's threshold; the papers' inefficient rows stay >= 1e-2 at short T, "
                    "and an efficient network that cannot beat 1e-2 has not learned its retrievals")
DEFAULT_SEQ_LEN = 16      # T when the verdict is for all large T (seq_len None)
_LABEL_SHARE = 1 / 6      # of the budget, for the training labels
_MIN_TRAIN, _MAX_TRAIN = 2000, 100_000
_MAX_STEPS = 10**7        # a wall-time schedule ends on time; this only bounds it
_EVAL_RESERVE_S = 0.3     # the final evaluation after a job's time is up


@dataclass(frozen=True)
class ConfirmRow:
    role: str                   # decided | one head fewer in layer l | one layer fewer | one head more
    heads: tuple[int, ...]
    embed_dim: int
    status: str                 # the solver's answer for this architecture
    exponent: str               # its best cost exponent (an expression in T)
    exponent_at_T: str          # the same at the trained T
    nmse: float                 # best validation NMSE
    steps: int
    threshold: float

    @property
    def predicted_efficient(self) -> bool | None:
        return None if self.status == "unknown" else self.status == "feasible"

    @property
    def measured_efficient(self) -> bool:
        return self.nmse < self.threshold

    @property
    def agree(self) -> bool | None:
        p = self.predicted_efficient
        return None if p is None else p == self.measured_efficient


@dataclass(frozen=True)
class Confirmation:
    """The agreement table of ``confirm``; ``str()`` prints it, ``to_json()`` gives one JSON-ready record."""

    target: str
    seq_len: int
    input_dim: int
    positional: bool
    threshold: float
    threshold_reason: str
    budget_s: float
    wall_s: float
    recipe: dict[str, Any]
    device: str
    rows: tuple[ConfirmRow, ...]

    @property
    def agreement(self) -> tuple[int, int]:
        """(agreeing rows, decided rows)."""
        decided = [r.agree for r in self.rows if r.agree is not None]
        return sum(decided), len(decided)

    def to_json(self) -> dict[str, Any]:
        """One JSON-ready record, as ``Verdict.to_json`` (``json.dumps`` it to print)."""
        doc = asdict(self)
        for row, r in zip(doc["rows"], self.rows):
            row.update(heads=list(r.heads), predicted_efficient=r.predicted_efficient,
                       measured_efficient=r.measured_efficient, agree=r.agree)
        doc["agreement"] = list(self.agreement)
        return doc

    def __str__(self) -> str:
        r = self.recipe
        lines = [(f"confirm {self.target} at T={self.seq_len}, d={self.input_dim}"
                  f"{', positional' if self.positional else ''} on {self.device}"),
                 f"threshold fixed before training: efficient = best validation NMSE < {self.threshold:g}",
                 (f"recipe: AdamW lr {r['lr']:g} wd {r['weight_decay']:g}, batch {r['batch_size']}, "
                  f"{r['n_train']} training sequences; 5% warm-up and cosine to 0 on wall time, "
                  f"{r['time_budget_s']:.0f} s of training shared by the jobs in proportion to their models; "
                  f"budget {self.budget_s:.0f} s, used {self.wall_s:.0f} s"),
                 (f"{'role':<24} {'heads':<8} {'E':>4} {'solver':<10} {'exponent':<12} {'at T':<7} "
                  f"{'NMSE':>9} {'steps':>6} {'efficient':<9} agree")]
        for row in self.rows:
            agree = "?" if row.agree is None else ("yes" if row.agree else "NO")
            lines.append(f"{row.role:<24} {','.join(map(str, row.heads)):<8} {row.embed_dim:>4} "
                         f"{row.status:<10} {row.exponent[:12]:<12} {row.exponent_at_T[:7]:<7} {row.nmse:>9.2e} "
                         f"{row.steps:>6} {'yes' if row.measured_efficient else 'no':<9} {agree}")
        good, total = self.agreement
        lines.append(f"agreement: {good}/{total} decided rows")
        return "\n".join(lines)


def _check_verdict(verdict: Any) -> None:
    import infoflow_smt as ifs

    if not isinstance(verdict, ifs.Verdict):
        raise ifs.InvalidSpecError(f"confirm needs a Verdict from ifs.decide, got {type(verdict).__name__} "
                                   f"{str(verdict)[:60]!r}", subject="verdict")


def _decide(target: Any, arch: Any, seq_len: int | None) -> Any:
    import infoflow_smt as ifs

    return ifs.decide(target, arch, seq_len=seq_len)


def _severity(verdict: Any, seq_len: int) -> tuple[int, float]:
    """How bad losing a head is, by the solver: infeasible > unknown > feasible, then the exponent at T."""
    import infoflow_smt as ifs

    rank = {"infeasible": 2, "unknown": 1, "feasible": 0}[verdict.status.value]
    value = verdict.exponent.subs(ifs.T, seq_len)
    return rank, float(value) if value.is_number and value.is_finite else math.inf


def neighbours(verdict: Any, seq_len: int) -> list[tuple[str, Any]]:
    """(role, decided verdict) for the decided architecture and its neighbours (module docstring)."""
    arch, heads = verdict.architecture, tuple(verdict.architecture.heads)
    rows = [("decided", verdict)]
    fewer = [(f"one head fewer, layer {l + 1}", heads[:l] + (h - 1,) + heads[l + 1:])
             for l, h in enumerate(heads) if h > 1]
    decided = [(role, _decide(verdict.target, arch.with_heads(h), verdict.seq_len)) for role, h in fewer]
    if decided:
        rows.append(max(reversed(decided), key=lambda rv: _severity(rv[1], seq_len)))
    if len(heads) > 1:
        drop = min(range(len(heads)), key=lambda l: heads[l])
        rows.append(("one layer fewer", _decide(verdict.target, arch.with_heads(heads[:drop] + heads[drop + 1:]),
                                                verdict.seq_len)))
    if verdict.status.value == "infeasible":
        rows.append(("one head more per layer",
                     _decide(verdict.target, arch.with_heads(tuple(h + 1 for h in heads)), verdict.seq_len)))
    return rows


def confirm(verdict: Any, budget: float | str = 60, *, seq_len: int | None = None,
            threshold: float = DEFAULT_THRESHOLD, device: str | None = None, seed: int = 0,
            threads: int | None = None) -> Confirmation:
    """Train the decided architecture and its neighbours within ``budget`` (seconds, or ``"60s"``/``"2m"``)
    and report the agreement table. ``seq_len``: the T to train at (default: the verdict's, else 16)."""
    start = time.perf_counter()
    _check_verdict(verdict)
    budget_s = parse_budget(budget)
    _check_options(seq_len, threshold)
    T = seq_len or verdict.seq_len or DEFAULT_SEQ_LEN
    dev = pick_device(device)
    if dev.type == "cpu":
        configure_threads(threads)
    arch = verdict.architecture
    rows = neighbours(verdict, T)
    n_train = _train_size(verdict.target, T, arch.input_dim, budget_s)
    data = make_dataset(verdict.target, T, arch.input_dim, n_train, min(2000, max(200, n_train // 5)),
                        seed=seed, target_seed=int(getattr(verdict.target, "seed", 0)))
    E = int(arch.width_at(T))
    models = [replace(CONFIRM_MODEL, input_dim=arch.input_dim, seq_len=T, heads=tuple(v.architecture.heads),
                      embed_dim=E, positional=arch.positional, output_dim=data.output_dim) for _, v in rows]
    left = budget_s - (time.perf_counter() - start)
    metrics = _train_within(data, models, replace(CONFIRM_RECIPE, n_train=n_train, n_val=len(data.X_val)),
                            left, dev, seed, deadline=start + budget_s)
    train = replace(CONFIRM_RECIPE, n_train=n_train, n_val=len(data.X_val), time_budget_s=round(left, 1))
    out = []
    for (role, v), m in zip(rows, metrics):
        at_T = v.exponent.subs(_T(), T)
        out.append(ConfirmRow(role, tuple(v.architecture.heads), E, v.status.value, str(v.exponent), str(at_T),
                              m.nmse_best, m.steps, threshold))
    return Confirmation(target_label(verdict.target), T, arch.input_dim, bool(arch.positional), threshold,
                        THRESHOLD_REASON if threshold == DEFAULT_THRESHOLD else "given by the caller",
                        budget_s, time.perf_counter() - start, asdict(train), device_name(dev), tuple(out))


def _train_within(data: Any, models: list, recipe: TrainConfig, seconds: float, device: Any, seed: int,
                  deadline: float) -> list:
    """Train every model within ``seconds`` of wall time. Models of one depth share a batched job; each job
    gets a share of the time proportional to its number of models, and runs the recipe's warm-up and cosine
    on its own wall-time schedule (TrainConfig.time_budget_s), so the schedule ends with the budget however
    fast the steps turn out to be."""
    groups: dict[tuple, list[int]] = {}
    for i, cfg in enumerate(models):
        groups.setdefault(cfg.batch_key(), []).append(i)
    out: list = [None] * len(models)
    for members in groups.values():
        left = deadline - time.perf_counter() - _EVAL_RESERVE_S
        share = seconds * len(members) / len(models)
        train = replace(recipe, steps=_MAX_STEPS, warmup_steps=_MAX_STEPS // 20, time_budget_s=max(0.5, min(
            share, left)))
        for i, m in zip(members, train_models(data, [models[i] for i in members], [seed] * len(members), train,
                                              device, deadline=deadline)):
            out[i] = m
    return out


def _T() -> Any:
    import infoflow_smt as ifs

    return ifs.T


def _check_options(seq_len: Any, threshold: Any) -> None:
    import infoflow_smt as ifs

    problems = []
    if seq_len is not None and (isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 2):
        problems.append(f"seq_len must be an integer >= 2, got {seq_len!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            math.isfinite(threshold) and threshold > 0):
        problems.append(f"threshold must be a finite NMSE > 0, got {threshold!r}")
    if problems:
        raise ifs.InvalidSpecError("; ".join(problems), subject="confirm options")


def _train_size(target: Any, seq_len: int, input_dim: int, budget_s: float) -> int:
    """Training sequences whose labels take about ``_LABEL_SHARE`` of the budget (labels are timed)."""
    import numpy as np

    X = np.random.default_rng(0).standard_normal((64, seq_len, input_dim))
    start = time.perf_counter()
    target.evaluate(X)
    per_seq = max(1e-7, (time.perf_counter() - start) / 64)
    return int(min(_MAX_TRAIN, max(_MIN_TRAIN, _LABEL_SHARE * budget_s / per_seq)))
