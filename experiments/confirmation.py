"""Check one decided case against trained networks, by its trend over T: ``experiments.confirm(verdict)``.

Given a ``Verdict`` of ``ifs.decide`` (any target: a catalogue entry or any target text), train the decided
architecture and its neighbours at several lengths (default T = 8, 16, 32; the same width and recipe at
each, and about the same number of steps) and set the measured NMSE beside the solver's verdict:

* the decided architecture;
* one head fewer in the limiting layer: of the layers with more than one head, the one where losing a head
  costs most by the solver (infeasible before feasible, then the larger exponent at the longest T; ties:
  the later layer);
* one layer fewer: the layer with the fewest heads removed (the strongest shallower network);
* when the verdict is infeasible, also one head more in every layer, so the table holds a stronger network;
* any architectures the caller adds (``against=((2,),)``).

Agreement is judged by the trend rule of ``experiments.trend`` (fixed before training, printed with the
table): a feasible row stays below the threshold and flat across T, an infeasible one rises with T or sits
above the efficient row at the longest T; a length where the solver's exponents do not differ cannot
separate the rows and is not counted. A single length still works (``seq_len=16``): the table then says
that one length cannot show a trend. Beside the trained NMSE, the compiled witness's NMSE
(``experiments.check_compiled``, when importable: what the architecture can do beside what training found).

The recipe is ``profiles.confirm_setup``'s for the target (the cpu profile's measured recipe where there is
one) scaled to the budget: labels get about a sixth of it, the rest is shared by the lengths and their
batched jobs (one per depth) in proportion to each job's probed time per step, so that every model runs
about the same number of steps at every length; each job runs a 5% warm-up and a cosine to zero on wall
time (``TrainConfig.time_budget_s``), so however fast the steps are the schedule ends with its share; a
hard deadline per length is a safety net.

>>> import infoflow_smt as ifs                                                       # doctest: +SKIP
>>> v = ifs.decide("max(f1(x[t]) + f2(x[t]) for t in T)", ifs.Architecture((1, 1), 16, 4))  # doctest: +SKIP
>>> print(confirm(v, budget="60s"))                                                   # doctest: +SKIP
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from .budget import parse_budget
from .confirm_table import NOT_COMPILED, Confirmation, ConfirmRow
from .data import make_dataset, target_label
from .profiles import confirm_setup
from .train import TrainConfig, configure_threads, device_name, pick_device, train_models
from .trend import DEFAULT_THRESHOLD, THRESHOLD_REASON, Cell, TrendRule, judge

__all__ = ["DEFAULT_SEQ_LENS", "DEFAULT_THRESHOLD", "ConfirmRow", "Confirmation", "confirm", "neighbours"]

DEFAULT_SEQ_LENS = (8, 16, 32)   # T when the verdict is for all large T (seq_len None): T doubles twice
_LABEL_SHARE = 1 / 6      # of the budget, for the training labels of all lengths
_MIN_TRAIN, _MAX_TRAIN = 2000, 100_000
_EVAL_RESERVE_S = 0.3     # the final evaluation after a job's time is up
_PROBE_STEPS = (8, 400)   # the short run, and the most the longer one takes (their difference times a step)
_PROBE_SHARE = 0.05       # of the budget, for the probes' longer runs: longer ones vary less
_EVALUATIONS = 20         # validation evaluations per training run (the best is kept)
_PLAN_SHARE = 0.7         # of the time the probes say is left: jobs ran up to 1.46x their probes (the machine slowed)
_MIN_STEPS = 20
MIN_SECONDS_PER_LENGTH = 1.0   # below this a length trains a step or two and its NMSE says nothing
COMPILE_BETAS = (16.0, 64.0, 256.0)   # the compiled witness is reported at the largest
COMPILE_SAMPLES = 256


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


def confirm(verdict: Any, budget: float | str = 60, *, seq_len: int | Sequence[int] | None = None,
            threshold: float = DEFAULT_THRESHOLD, device: str | None = None, seed: int = 0,
            threads: int | None = None, against: Sequence[Sequence[int]] = ()) -> Confirmation:
    """Train the decided architecture and its neighbours at every length within ``budget`` (seconds, or
    ``"60s"``/``"2m"``) and judge each row by its trend over T. ``seq_len``: one T or several (default: the
    verdict's T, else 8, 16, 32); ``against``: more architectures (heads per layer) to train beside them."""
    _import_optimizer()
    _check_verdict(verdict)
    budget_s = parse_budget(budget)
    _check_options(seq_len, threshold, against)
    lengths = _lengths(seq_len, verdict)
    check_budget(budget_s, len(lengths))
    dev = pick_device(device)
    if dev.type == "cpu":
        configure_threads(threads)
    arch, rule = verdict.architecture, TrendRule(threshold=threshold)
    rows = _with_against(neighbours(verdict, lengths[-1]), verdict, against)
    exponents = [[_exponent_at(v if v.seq_len == T else _decide(verdict.target, v.architecture, T), T)
                  for T in lengths] for _, v in rows]
    start = time.perf_counter()   # the budget is for training: deciding the neighbours is not charged to it
    model, recipe = confirm_setup(getattr(verdict.target, "name", None))
    trained, train = _train_lengths(verdict, lengths, [v for _, v in rows], (model, recipe), budget_s, start,
                                    dev, seed)
    compiled = [_compiled(v, lengths) for _, v in rows]
    cells = [tuple(Cell(T, e, trained[T][i].nmse_best, trained[T][i].steps, text, compiled[i][1].get(T),
                        planned_steps=train["steps"])
                   for T, (e, text) in zip(lengths, exponents[i])) for i in range(len(rows))]
    ref = next((i for i, (_, v) in enumerate(rows) if v.status.value == "feasible"), None)
    out = tuple(_row(role, v, cells[i], compiled[i][0], rule, cells[ref] if ref is not None else None, lengths)
                for i, (role, v) in enumerate(rows))
    reference = None if ref is None else f"{rows[ref][0]}, {','.join(map(str, out[ref].heads))}"
    return Confirmation(target_label(verdict.target), lengths[-1], arch.input_dim, bool(arch.positional), threshold,
                        THRESHOLD_REASON if threshold == DEFAULT_THRESHOLD else "given by the caller",
                        budget_s, time.perf_counter() - start, train, device_name(dev), out, lengths, rule,
                        reference=reference, model=_model_switches(model), decided_at=verdict.seq_len)


def minimum_budget(n_lengths: int) -> float:
    """The smallest budget that trains every length for a meaningful time (``MIN_SECONDS_PER_LENGTH``)."""
    return MIN_SECONDS_PER_LENGTH * n_lengths / (1 - _LABEL_SHARE)


def check_budget(budget_s: float, n_lengths: int) -> None:
    """Refuse a budget too small to train: a step or two would be judged as if it were a training run."""
    import infoflow_smt as ifs

    least = minimum_budget(n_lengths)
    if budget_s < least:
        raise ifs.InvalidSpecError(f"budget {budget_s:g} s is too small to train: confirm needs at least {least:.1f} s "
                                   f"for {n_lengths} length{'s' if n_lengths > 1 else ''} "
                                   f"({MIN_SECONDS_PER_LENGTH:g} s of training per length)", subject="budget")


def _import_optimizer() -> None:
    """Import what the first AdamW imports (torch._dynamo) before the budget's clock starts: it takes
    seconds, ten on a loaded 2-core machine, and a few-second budget would otherwise buy one step."""
    import torch._dynamo  # noqa: F401


def _row(role: str, v: Any, cells: tuple[Cell, ...], compiled: str, rule: TrendRule,
         reference: tuple[Cell, ...] | None, lengths: tuple[int, ...]) -> ConfirmRow:
    last = cells[-1]
    E = int(v.architecture.width_at(lengths[-1]))
    return ConfirmRow(role, tuple(v.architecture.heads), E, v.status.value, str(v.exponent), last.exponent_text,
                      last.nmse, last.steps, rule.threshold, cells, judge(rule, v.status.value, cells, reference),
                      compiled)


def _lengths(seq_len: int | Sequence[int] | None, verdict: Any) -> tuple[int, ...]:
    if seq_len is None:
        return (verdict.seq_len,) if verdict.seq_len else DEFAULT_SEQ_LENS
    return tuple(sorted(set([seq_len] if isinstance(seq_len, int) else seq_len)))


def _with_against(rows: list[tuple[str, Any]], verdict: Any, against: Sequence[Sequence[int]]) -> list:
    """The neighbours, then each asked-for architecture that is not already a row."""
    seen = {tuple(v.architecture.heads) for _, v in rows}
    for heads in against:
        if tuple(heads) not in seen:
            seen.add(tuple(heads))
            arch = verdict.architecture.with_heads(tuple(heads))
            rows.append(("asked for", _decide(verdict.target, arch, verdict.seq_len)))
    return rows


def _exponent_at(v: Any, T: int) -> tuple[float, str]:
    """The solver's best exponent at this T, as a number (inf when there is none) and as it writes it."""
    import sympy

    value = sympy.sympify(v.exponent).subs(_T(), T)
    number = float(value) if value.is_number and value.is_finite else math.inf
    return number, str(value)


def _model_switches(model: Any) -> dict[str, Any]:
    """The model family's settings, less what each row sets (heads, widths, T, d)."""
    per_row = {"input_dim", "seq_len", "heads", "embed_dim", "output_dim", "positional"}
    return {k: v for k, v in asdict(model).items() if k not in per_row}


def _train_lengths(verdict: Any, lengths: tuple[int, ...], verdicts: list, setup: tuple, budget_s: float,
                   start: float, dev: Any, seed: int) -> tuple[dict[int, list], dict[str, Any]]:
    """Labels for every length first (a sixth of the budget), then every model at every length trains the
    same number of steps: as many as the rest of the budget holds by the jobs' probed step times
    (``_probe``). The same width and recipe at each T, and a trend over T that is not the machine's cost per
    step: with equal time at each length a step at T = 32 costing twice one at T = 8 gave the longest length
    half the steps. Returns the metrics by T and the recipe as run."""
    model, recipe = setup
    arch, target = verdict.architecture, verdict.target
    data, jobs = {}, {}
    for T in lengths:
        n_train = _train_size(target, T, arch.input_dim, budget_s / len(lengths))
        data[T] = make_dataset(target, T, arch.input_dim, n_train, min(2000, max(200, n_train // 5)), seed=seed,
                               target_seed=int(getattr(target, "seed", 0)))
        models = [replace(model, input_dim=arch.input_dim, seq_len=T, heads=tuple(v.architecture.heads),
                          embed_dim=int(v.architecture.width_at(T)), positional=arch.positional,
                          output_dim=data[T].output_dim) for v in verdicts]
        jobs[T] = _jobs(models)
    run = {T: replace(recipe, n_train=len(data[T].X_train), n_val=len(data[T].X_val)) for T in lengths}
    probe_s = _PROBE_SHARE * budget_s / sum(len(j) for j in jobs.values())
    probed = {(T, key): _probe(data[T], [m for _, m in members], run[T], dev, seed, probe_s)
              for T in lengths for key, members in jobs[T].items()}
    left = budget_s - (time.perf_counter() - start)
    per_step = sum(step for step, _ in probed.values())
    fixed = _EVALUATIONS * sum(once for _, once in probed.values())
    steps = max(_MIN_STEPS, int(_PLAN_SHARE * (left - fixed) / per_step))
    end = start + budget_s - _EVAL_RESERVE_S
    metrics = _train_planned(data, jobs, run, probed, steps, len(verdicts), end, dev, seed)
    recipe_doc = asdict(replace(recipe, **_schedule(steps)))
    recipe_doc.pop("time_budget_s")
    recipe_doc.update(planned_s=round(left, 1), n_train={T: len(data[T].X_train) for T in lengths},
                      n_val={T: len(data[T].X_val) for T in lengths},
                      seconds_per_step={T: {_job_name(members): round(probed[(T, key)][0], 5)
                                            for key, members in jobs[T].items()} for T in lengths},
                      seconds_per_step_run={T: {_job_name(members): _seconds_per_step(metrics[T][members[0][0]])
                                                for members in jobs[T].values()} for T in lengths})
    return metrics, recipe_doc


def _train_planned(data: dict, jobs: dict, run: dict, probed: dict, steps: int, n_models: int, end: float,
                   dev: Any, seed: int) -> dict[int, list]:
    """Every job (``_jobs``) at every length by the plan's ``steps``, one after another; when the machine runs
    slower than the probes said the jobs still to run get fewer (``_fitted_steps``), and the budget's end
    (``end``) stops a job still running (its steps are recorded). Returns the metrics by T, in model order."""
    order = [(T, key) for T in jobs for key in jobs[T]]
    metrics: dict[int, list] = {T: [None] * n_models for T in jobs}
    spent = predicted = 0.0   # measured and probed seconds of the jobs done so far
    for n, (T, key) in enumerate(order):
        slowdown = max(1.0, spent / predicted) if predicted else 1.0
        ahead = slowdown * sum(_job_seconds(probed[job], steps) for job in order[n:])
        job_steps = _fitted_steps(steps, ahead, end - time.perf_counter())
        members, began = jobs[T][key], time.perf_counter()
        for (i, _), m in zip(members, train_models(data[T], [cfg for _, cfg in members], [seed] * len(members),
                                                   replace(run[T], **_schedule(job_steps)), dev, deadline=end)):
            metrics[T][i] = m
        spent += time.perf_counter() - began
        predicted += _job_seconds(probed[(T, key)], job_steps)
    return metrics


def _schedule(steps: int) -> dict[str, Any]:
    """A run of ``steps`` by steps, not wall time: 5 % warm-up, ``_EVALUATIONS`` evaluations."""
    return {"steps": steps, "warmup_steps": steps // 20, "eval_every": max(1, steps // _EVALUATIONS),
            "time_budget_s": 0.0}


def _job_seconds(probe: tuple[float, float], steps: int) -> float:
    """A job's predicted wall time at ``steps`` by its probe (seconds per step, per evaluation)."""
    step, once = probe
    return steps * step + _EVALUATIONS * once


def _fitted_steps(planned: int, needed_s: float, left_s: float) -> int:
    """The plan's steps, or fewer when the jobs still to run would not fit in what is left: the machine ran
    slower than its probes, and cutting every remaining job a little keeps them all judged, where the
    budget's end would stop the last one after a step or two (``trend.Cell.short`` marks a cut too deep)."""
    if needed_s <= left_s:
        return planned
    return max(_MIN_STEPS, int(planned * max(0.0, left_s) / needed_s))


def _seconds_per_step(m: Any) -> float:
    """A trained job's wall time per step, evaluations included: what the probe's figure planned for."""
    return round(m.job_wall_s / max(1, m.steps), 5)


def _jobs(models: list) -> dict[tuple, list[tuple[int, Any]]]:
    """The models that train as one batched job (one per depth), with their places in ``models``."""
    groups: dict[tuple, list[tuple[int, Any]]] = {}
    for i, cfg in enumerate(models):
        groups.setdefault(cfg.batch_key(), []).append((i, cfg))
    return groups


def _job_name(members: list[tuple[int, Any]]) -> str:
    """A job by its models' heads: ``2,2 + 2,1``."""
    return " + ".join(",".join(map(str, cfg.heads)) for _, cfg in members)


def _probe(data: Any, models: list, recipe: TrainConfig, device: Any, seed: int,
           seconds: float) -> tuple[float, float]:
    """(seconds per step, seconds per evaluation and set-up) of one batched job: from a short and a longer
    run (their difference is the steps alone; the longer one as long as ``seconds`` allow), after a run
    that warms the kernels up."""
    def run(steps: int) -> float:
        probe = replace(recipe, steps=steps, warmup_steps=0, eval_every=10**9, time_budget_s=0.0, patience=0)
        started = time.perf_counter()
        train_models(data, models, [seed] * len(models), probe, device)
        return time.perf_counter() - started

    short_steps, most = _PROBE_STEPS
    rough = run(short_steps) / short_steps   # set-up included: an overestimate
    long_steps = min(most, max(5 * short_steps, int(seconds / rough)))
    short, long = run(short_steps), run(long_steps)
    step = max(1e-6, (long - short) / (long_steps - short_steps))
    return step, max(0.0, short - short_steps * step)


def compiled_checker() -> Callable[..., Any] | None:
    """``experiments.check_compiled`` (a witness compiled into a transformer, docs/compile.md) when importable."""
    import experiments

    try:
        return experiments.check_compiled
    except (AttributeError, ImportError):
        return None


def _compiled(v: Any, lengths: tuple[int, ...]) -> tuple[str, dict[int, float]]:
    """(how, NMSE by T) of the compiled witness at the largest beta; an infeasible row has nothing to
    compile, and without ``check_compiled`` nothing is compiled."""
    import infoflow_smt as ifs

    if v.status.value != "feasible":
        return f"none: {v.status.value}", {}
    check = compiled_checker()
    if check is None:
        return NOT_COMPILED, {}
    beta = max(COMPILE_BETAS)
    try:
        result = check(v, COMPILE_BETAS, lengths, COMPILE_SAMPLES)
    except ifs.InfoflowError as err:   # a refusal names the term that cannot compile (its first line)
        return f"refused: {' '.join(str(err).strip().splitlines()[0].split())}", {}
    return f"beta {beta:g}", {T: float(result.at(beta, T)) for T in lengths}


def _T() -> Any:
    import infoflow_smt as ifs

    return ifs.T


def _check_options(seq_len: Any, threshold: Any, against: Any) -> None:
    import infoflow_smt as ifs

    problems = []
    if seq_len is not None and not _lengths_ok(seq_len):
        problems.append(f"seq_len must be an integer >= 2 or a non-empty list of them, got {seq_len!r}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not (
            math.isfinite(threshold) and threshold > 0):
        problems.append(f"threshold must be a finite NMSE > 0, got {threshold!r}")
    if isinstance(against, (str, bytes)) or not all(
            _lengths_ok(h, minimum=1) and not isinstance(h, int) for h in _iterable(against)):
        problems.append(f"against must be a list of heads per layer such as [(2,), (1, 1)], got {against!r}")
    if problems:
        raise ifs.InvalidSpecError("; ".join(problems), subject="confirm options")


def _iterable(value: Any) -> list:
    try:
        return list(value)
    except TypeError:
        return [None]


def _lengths_ok(value: Any, minimum: int = 2) -> bool:
    """An integer >= minimum, or a non-empty sequence of them."""
    def one(v: Any) -> bool:
        return isinstance(v, int) and not isinstance(v, bool) and v >= minimum

    if one(value):
        return True
    return not isinstance(value, (str, bytes, dict)) and bool(_iterable(value)) and all(map(one, _iterable(value)))


def _train_size(target: Any, seq_len: int, input_dim: int, budget_s: float) -> int:
    """Training sequences whose labels take about ``_LABEL_SHARE`` of ``budget_s`` (labels are timed)."""
    import numpy as np

    X = np.random.default_rng(0).standard_normal((64, seq_len, input_dim))
    start = time.perf_counter()
    target.evaluate(X)
    per_seq = max(1e-7, (time.perf_counter() - start) / 64)
    return int(min(_MAX_TRAIN, max(_MIN_TRAIN, _LABEL_SHARE * budget_s / per_seq)))
