"""Check one decided case against trained networks, by its trend over T: ``experiments.confirm(verdict)``.

Given a ``Verdict`` of ``ifs.decide`` (any target: a catalogue entry or any target text), train the decided
architecture and its neighbours (``neighbours``) at several lengths (default T = 8, 16, 32; the same width,
recipe, number of training sequences and steps at each) and set the measured NMSE beside the solver's
verdict. The steps, in order:

1. ``neighbours``: the rows, each decided by the solver, and their exponents at every length;
2. ``schedule`` and ``run``: the budget shared out (labels, probes, the same steps at every length) and the
   rows trained in worker processes, ``seeds`` per cell (the cell keeps the best NMSE, as the papers do: the
   minimum over seeds sets expressivity apart from optimization noise; every seed's figure stays in the table);
3. the compiled witness of each feasible row (``compilation.check``): what the architecture can do, beside
   what training found;
4. ``trend``: each row judged by the rule fixed before training; ``table``: the rows as the table returned.

A feasible row stays below the threshold and flat across T. An infeasible one is judged beside its control,
the efficient row trained the same way, and only when that control meets its own test: then it rises with T
or sits above the control at the longest T; a length where the solver's exponents do not differ cannot
separate the rows and is not counted. A table that judges no row confirms nothing (``Confirmation.confirms``). A single length still works (``seq_len=16``): the table then says that one length cannot
show a trend. The recipe is ``profiles.confirm_setup``'s for the target (the cpu profile's measured recipe
where there is one), scaled to the budget.

>>> import infoflow_smt as ifs                                                       # doctest: +SKIP
>>> v = ifs.decide("max(f1(x[t]) + f2(x[t]) for t in T)", ifs.Architecture((1, 1), 16, 4))  # doctest: +SKIP
>>> print(confirm(v, budget="60s"))                                                   # doctest: +SKIP
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import cast

from experiments.compilation.check import CompiledCheck, check_compiled
from experiments.confirmation import neighbours, run, schedule
from experiments.confirmation.budget import parse_budget
from experiments.confirmation.table import NOT_COMPILED, Confirmation, ConfirmRow, judged
from experiments.confirmation.trend import DEFAULT_THRESHOLD, THRESHOLD_REASON, Cell, TrendRule
from experiments.tables.profiles import confirm_setup
from experiments.training.data import target_label
from experiments.training.devices import configure_threads, device_name, pick_device
from experiments.training.network import ModelConfig
from experiments.training.trainer import RunMetrics
from infoflow_smt.errors import InfoflowError, InvalidSpecError
from infoflow_smt.report.verdict import Verdict

__all__ = ["ConfirmRow", "Confirmation", "confirm"]

MAX_SEEDS, MAX_WORKERS = 64, 256   # a seed is one more model in every batched job
COMPILE_BETAS = (16.0, 64.0, 256.0)   # the compiled witness is reported at the largest
COMPILE_SAMPLES = 256

Checker = Callable[[Verdict, Sequence[float], Sequence[int], int], CompiledCheck]


def confirm(verdict: Verdict, budget: float | str = 60, *, seq_len: int | Sequence[int] | None = None,
            threshold: float = DEFAULT_THRESHOLD, device: str | None = None, seed: int = 0, seeds: int = 1,
            workers: int | None = None, threads: int | None = None,
            against: Sequence[Sequence[int]] = ()) -> Confirmation:
    """Train the decided architecture and its neighbours at every length within ``budget`` (seconds, or
    ``"60s"``/``"2m"``) and judge each row by its trend over T. ``seq_len``: one T or several (default: the
    verdict's T, else 8, 16, 32); ``against``: more architectures (heads per layer) to train beside them;
    ``seeds``: trainings per cell (seeds ``seed``, ``seed + 1``, ...), the cell's NMSE is their best;
    ``workers``: processes the jobs run in (default: one per CPU core for a budget of a minute or more, else
    one; one on a GPU)."""
    run.import_optimizer()
    neighbours.check_verdict(verdict)
    budget_s = parse_budget(budget)
    _check_options(seq_len, threshold, against, seed, seeds, workers)
    lengths = schedule.lengths(seq_len, verdict.seq_len)
    schedule.check_budget(budget_s, len(lengths))
    dev = pick_device(device)
    if dev.type == "cpu":
        configure_threads(threads)
    arch, rule = verdict.architecture, TrendRule(threshold=threshold)
    rows = neighbours.with_against(neighbours.neighbours(verdict, lengths[-1]), verdict, against)
    exponents = [neighbours.exponents(verdict.target, v, lengths) for _, v in rows]
    start = time.perf_counter()   # the budget is for training: deciding the neighbours is not charged to it
    model, recipe = confirm_setup(getattr(verdict.target, "name", None))
    trained, train = run.train_lengths(verdict, lengths, [v for _, v in rows], (model, recipe), budget_s, start,
                                       dev, tuple(range(seed, seed + seeds)),
                                       workers or run.default_workers(dev, budget_s), threads)
    compiled = [_compiled(v, lengths) for _, v in rows]
    planned = cast(int, train["steps"])
    cells = [tuple(_cell(T, e, text, trained[T][i], compiled[i][1].get(T), planned)
                   for T, (e, text) in zip(lengths, exponents[i])) for i in range(len(rows))]
    out, control = judged(rule, [_row(role, v, cells[i], compiled[i][0], lengths, threshold)
                                  for i, (role, v) in enumerate(rows)])
    return Confirmation(target_label(verdict.target), lengths[-1], arch.input_dim, bool(arch.positional), threshold,
                        THRESHOLD_REASON if threshold == DEFAULT_THRESHOLD else "given by the caller",
                        budget_s, time.perf_counter() - start, train, device_name(dev), out, lengths, rule,
                        control=control, model=_model_switches(model), decided_at=verdict.seq_len)


def _cell(T: int, exponent: float, text: str, runs: list[RunMetrics], compiled: float | None,
          planned: int) -> Cell:
    """One (architecture, T) from its seeds' runs: the best NMSE of them (the papers report the minimum over
    seeds, to set expressivity apart from optimization noise) and the fewest steps any of them trained."""
    nmse = tuple(float(m.nmse_best) for m in runs)
    best = min((x for x in nmse if not math.isnan(x)), default=math.nan)   # a diverged seed is not the best
    return Cell(T, exponent, best, min(m.steps for m in runs), text, compiled, planned_steps=planned,
                seed_nmse=nmse)


def _row(role: str, v: Verdict, cells: tuple[Cell, ...], compiled: str, lengths: tuple[int, ...],
         threshold: float) -> ConfirmRow:
    """One row as measured, not yet judged (``table.judged`` judges every row beside the table's control)."""
    last = cells[-1]
    E = int(v.architecture.width_at(lengths[-1]))
    return ConfirmRow(role, tuple(v.architecture.heads), E, v.status.value, str(v.exponent), last.exponent_text,
                      last.nmse, last.steps, threshold, cells, compiled=compiled)


def _model_switches(model: ModelConfig) -> dict[str, object]:
    """The model family's settings, less what each row sets (heads, widths, T, d)."""
    per_row = {"input_dim", "seq_len", "heads", "embed_dim", "output_dim", "positional"}
    return {k: v for k, v in asdict(model).items() if k not in per_row}


def compiled_checker() -> Checker | None:
    """``experiments.check_compiled`` (a witness compiled into a transformer, docs/compile.md); a caller that
    wants nothing compiled (a test of the judging alone) replaces this with one that returns None."""
    return check_compiled


def _compiled(v: Verdict, lengths: tuple[int, ...]) -> tuple[str, dict[int, float]]:
    """(how, NMSE by T) of the compiled witness at the largest beta; an infeasible row has nothing to
    compile, and without a checker (``compiled_checker``) nothing is compiled."""
    if v.status.value != "feasible":
        return f"none: {v.status.value}", {}
    check = compiled_checker()
    if check is None:
        return NOT_COMPILED, {}
    beta = max(COMPILE_BETAS)
    try:
        result = check(v, COMPILE_BETAS, lengths, COMPILE_SAMPLES)
    except InfoflowError as err:   # a refusal names the term that cannot compile (its first line)
        return f"refused: {' '.join(str(err).strip().splitlines()[0].split())}", {}
    return f"beta {beta:g}", {T: float(result.at(beta, T)) for T in lengths}


def _check_options(seq_len: object, threshold: object, against: object, seed: object = 0, seeds: object = 1,
                   workers: object = None) -> None:
    """Every problem with ``confirm``'s options at once, in one ``InvalidSpecError`` naming each value (the
    options come from callers' code, so anything may arrive: hence ``object``)."""
    problems = []
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problems.append(f"seed must be an integer >= 0, got {seed!r}")
    if not _count_ok(seeds, MAX_SEEDS):
        problems.append(f"seeds must be an integer from 1 to {MAX_SEEDS}, got {seeds!r}")
    if workers is not None and not _count_ok(workers, MAX_WORKERS):
        problems.append(f"workers must be an integer from 1 to {MAX_WORKERS}, got {workers!r}")
    if seq_len is not None and not _lengths_ok(seq_len):
        problems.append(f"seq_len must be an integer >= 2 or a non-empty list of them, got {seq_len!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            math.isfinite(threshold) and threshold > 0):
        problems.append(f"threshold must be a finite NMSE > 0, got {threshold!r}")
    if isinstance(against, (str, bytes)) or not all(
            _lengths_ok(h, minimum=1) and not isinstance(h, int) for h in _iterable(against)):
        problems.append(f"against must be a list of heads per layer such as [(2,), (1, 1)], got {against!r}")
    if problems:
        raise InvalidSpecError("; ".join(problems), subject="confirm options")


def _count_ok(value: object, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


def _iterable(value: object) -> list[object]:
    try:
        return list(value)
    except TypeError:
        return [None]


def _lengths_ok(value: object, minimum: int = 2) -> bool:
    """An integer >= minimum, or a non-empty sequence of them."""
    def one(v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= minimum

    if one(value):
        return True
    return not isinstance(value, (str, bytes, dict)) and bool(_iterable(value)) and all(map(one, _iterable(value)))
