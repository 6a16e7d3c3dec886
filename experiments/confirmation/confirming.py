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
the same number of steps at every length, each with a 5% warm-up and a cosine to zero; the budget's end
is a hard deadline. The jobs run in ``workers`` processes (default one per CPU core: these small models
gain nothing from a second thread, and two single-threaded jobs on two cores run as fast as one alone; under
a minute's budget one, as starting a process costs seconds).
With ``seeds`` > 1 each (architecture, T) trains that many times in its batched job and the cell keeps the
best validation NMSE, as the papers do (the minimum over seeds sets expressivity apart from optimization
noise); every seed's figure stays in the table.

>>> import infoflow_smt as ifs                                                       # doctest: +SKIP
>>> v = ifs.decide("max(f1(x[t]) + f2(x[t]) for t in T)", ifs.Architecture((1, 1), 16, 4))  # doctest: +SKIP
>>> print(confirm(v, budget="60s"))                                                   # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from typing import Any

from infoflow_smt.processes import worker_pool

from experiments.confirmation.budget import parse_budget
from experiments.confirmation.table import NOT_COMPILED, Confirmation, ConfirmRow
from experiments.training.data import make_dataset, target_label
from experiments.tables.profiles import confirm_setup
from experiments.tables.run import default_workers
from experiments.training.trainer import TrainConfig, configure_threads, device_name, pick_device, train_models
from experiments.confirmation.trend import DEFAULT_THRESHOLD, THRESHOLD_REASON, Cell, TrendRule, judge

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
_PROBE_ROWS = 4096        # training sequences a probe samples from (all a worker is sent to probe)
MAX_SEEDS, MAX_WORKERS = 64, 256   # a seed is one more model in every batched job
POOL_MIN_BUDGET_S = 60.0  # the least budget that trains in one process per core by default (_default_workers)
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
            threshold: float = DEFAULT_THRESHOLD, device: str | None = None, seed: int = 0, seeds: int = 1,
            workers: int | None = None, threads: int | None = None,
            against: Sequence[Sequence[int]] = ()) -> Confirmation:
    """Train the decided architecture and its neighbours at every length within ``budget`` (seconds, or
    ``"60s"``/``"2m"``) and judge each row by its trend over T. ``seq_len``: one T or several (default: the
    verdict's T, else 8, 16, 32); ``against``: more architectures (heads per layer) to train beside them;
    ``seeds``: trainings per cell (seeds ``seed``, ``seed + 1``, ...), the cell's NMSE is their best;
    ``workers``: processes the jobs run in (default: one per CPU core for a budget of a minute or more, else
    one; one on a GPU)."""
    _import_optimizer()
    _check_verdict(verdict)
    budget_s = parse_budget(budget)
    _check_options(seq_len, threshold, against, seed, seeds, workers)
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
                                    dev, tuple(range(seed, seed + seeds)), workers or _default_workers(dev, budget_s),
                                    threads)
    compiled = [_compiled(v, lengths) for _, v in rows]
    cells = [tuple(_cell(T, e, text, trained[T][i], compiled[i][1].get(T), train["steps"])
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


def _default_workers(dev: Any, budget_s: float) -> int:
    """One process per CPU core (``run.default_workers``) when the budget can spare their start: a spawned
    process imports torch for seconds (up to ten on a loaded 2-core machine), which a short budget would pay
    in steps; below ``POOL_MIN_BUDGET_S`` the jobs run here, one after another."""
    return default_workers(dev) if budget_s >= POOL_MIN_BUDGET_S else 1


def _cell(T: int, exponent: float, text: str, runs: list, compiled: float | None, planned: int) -> Cell:
    """One (architecture, T) from its seeds' runs: the best NMSE of them (the papers report the minimum over
    seeds, to set expressivity apart from optimization noise) and the fewest steps any of them trained."""
    nmse = tuple(float(m.nmse_best) for m in runs)
    best = min((x for x in nmse if not math.isnan(x)), default=math.nan)   # a diverged seed is not the best
    return Cell(T, exponent, best, min(m.steps for m in runs), text, compiled, planned_steps=planned,
                seed_nmse=nmse)


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
                   start: float, dev: Any, seeds: tuple[int, ...], workers: int,
                   threads: int | None) -> tuple[dict[int, list[list]], dict[str, Any]]:
    """Labels for every length first (a sixth of the budget), then every model at every length trains the
    same number of steps: as many as the rest of the budget holds by the jobs' probed step times
    (``_probe``), with the jobs shared among ``workers`` processes (``_shares``). The same width and recipe at
    each T, and a trend over T that is not the machine's cost per step: with equal time at each length a step
    at T = 32 costing twice one at T = 8 gave the longest length half the steps. Every seed of a model trains
    in its model's batched job. Returns the metrics by T, by model, by seed, and the recipe as run."""
    model, recipe = setup
    arch, target = verdict.architecture, verdict.target
    data, jobs = {}, {}
    for T in lengths:
        n_train = _train_size(target, T, arch.input_dim, budget_s / len(lengths))
        data[T] = make_dataset(target, T, arch.input_dim, n_train, min(2000, max(200, n_train // 5)),
                               seed=seeds[0], target_seed=int(getattr(target, "seed", 0)))
        models = [replace(model, input_dim=arch.input_dim, seq_len=T, heads=tuple(v.architecture.heads),
                          embed_dim=int(v.architecture.width_at(T)), positional=arch.positional,
                          output_dim=data[T].output_dim) for v in verdicts]
        jobs.update({(T, key): members for key, members in _jobs(models, seeds).items()})
    run = {T: replace(recipe, n_train=len(data[T].X_train), n_val=len(data[T].X_val)) for T in lengths}
    n_workers = max(1, min(workers, len(jobs)))
    probe_s = _PROBE_SHARE * budget_s * n_workers / len(jobs)   # n_workers probes run at a time
    with _pool(n_workers) as pool:
        probes = _map(pool, _probe_job, [(_probe_data(data[T]), members, run[T], dev, threads, probe_s)
                                         for (T, _), members in jobs.items()])
        probed = dict(zip(jobs, probes))
        left = budget_s - (time.perf_counter() - start)
        shares = _shares(probed, n_workers)
        steps = max(_MIN_STEPS, min(int(_PLAN_SHARE * (left - _EVALUATIONS * sum(probed[j][1] for j in share))
                                        / sum(probed[j][0] for j in share)) for share in shares))
        end = start + budget_s - _EVAL_RESERVE_S
        deadline = time.time() + end - time.perf_counter()
        done = _map(pool, _train_share, [({T: data[T] for T, _ in share}, {j: jobs[j] for j in share}, run,
                                          {j: probed[j] for j in share}, steps, deadline, dev, threads)
                                         for share in shares])
    metrics = {job: m for share in done for job, m in share.items()}
    by_model: dict[int, list[list]] = {T: [[] for _ in verdicts] for T in lengths}
    for job, members in jobs.items():
        for (i, _, _), m in zip(members, metrics[job]):
            by_model[job[0]][i].append(m)
    recipe_doc = asdict(replace(recipe, **_schedule(steps)))
    recipe_doc.pop("time_budget_s")
    recipe_doc.update(planned_s=round(left, 1), seeds=list(seeds), workers=n_workers,
                      n_train={T: len(data[T].X_train) for T in lengths},
                      n_val={T: len(data[T].X_val) for T in lengths},
                      seconds_per_step={T: {_job_name(jobs[j]): round(probed[j][0], 5) for j in jobs if j[0] == T}
                                        for T in lengths},
                      seconds_per_step_run={T: {_job_name(jobs[j]): _seconds_per_step(metrics[j][0])
                                                for j in jobs if j[0] == T} for T in lengths})
    return by_model, recipe_doc


def _shares(probed: dict[tuple, tuple[float, float]], workers: int) -> list[list[tuple]]:
    """The jobs dealt out to ``workers`` processes, the longest (per step) first to the least loaded, each
    share in the order the jobs were listed (shortest T first: what ran first is what the later jobs'
    re-planning learns the machine's speed from)."""
    order = list(probed)
    loads, shares = [0.0] * workers, [[] for _ in range(workers)]
    for job in sorted(order, key=lambda j: -probed[j][0]):
        w = loads.index(min(loads))
        loads[w] += probed[job][0]
        shares[w].append(job)
    return [sorted(share, key=order.index) for share in shares if share]


@contextlib.contextmanager
def _pool(workers: int):
    """Worker processes that die with this one, or None for one worker (the jobs then run here)."""
    if workers == 1:
        yield None
        return
    with worker_pool(workers) as pool:
        yield pool


def _map(pool: Any, function: Callable[..., Any], calls: list[tuple]) -> list:
    """``function(*call)`` for every call, in ``pool``'s processes when there is one; results in call order."""
    if pool is None:
        return [function(*call) for call in calls]
    return [future.result() for future in [pool.submit(function, *call) for call in calls]]


def _set_up(dev: Any, threads: int | None) -> None:
    """A worker's torch, as the parent's: its threads, and the optimizer's imports before anything is timed."""
    if dev.type == "cpu":
        configure_threads(threads)
    _import_optimizer()


def _probe_data(data: Any) -> Any:
    """The dataset a probe needs: a step's time does not depend on how many sequences it samples from, and
    a worker is sent only these."""
    return replace(data, X_train=data.X_train[:_PROBE_ROWS], y_train=data.y_train[:_PROBE_ROWS])


def _probe_job(data: Any, members: list, recipe: TrainConfig, dev: Any, threads: int | None,
               seconds: float) -> tuple[float, float]:
    _set_up(dev, threads)
    return _probe(data, [cfg for _, cfg, _ in members], [s for _, _, s in members], recipe, dev, seconds)


def _train_share(data: dict, jobs: dict, run: dict, probed: dict, steps: int, deadline: float, dev: Any,
                 threads: int | None) -> dict[tuple, list]:
    """One worker's jobs (``_train_planned``); ``deadline`` is a ``time.time()``: comparable across processes."""
    _set_up(dev, threads)
    return _train_planned(data, jobs, run, probed, steps, time.perf_counter() + deadline - time.time(), dev)


def _train_planned(data: dict, jobs: dict, run: dict, probed: dict, steps: int, end: float,
                   dev: Any) -> dict[tuple, list]:
    """Every job (``(T, key)``: its members, ``_jobs``) by the plan's ``steps``, one after another in the
    order given; when the machine runs slower than the probes said the jobs still to run get fewer
    (``_fitted_steps``), and the budget's end (``end``, a ``time.perf_counter()``) stops a job still running
    (its steps are recorded). Returns each job's metrics, in its members' order."""
    order = list(jobs)
    metrics: dict[tuple, list] = {}
    spent = predicted = 0.0   # measured and probed seconds of the jobs done so far
    for n, job in enumerate(order):
        slowdown = max(1.0, spent / predicted) if predicted else 1.0
        ahead = slowdown * sum(_job_seconds(probed[j], steps) for j in order[n:])
        job_steps = _fitted_steps(steps, ahead, end - time.perf_counter())
        members, began = jobs[job], time.perf_counter()
        metrics[job] = train_models(data[job[0]], [cfg for _, cfg, _ in members], [s for _, _, s in members],
                                    replace(run[job[0]], **_schedule(job_steps)), dev, deadline=end)
        spent += time.perf_counter() - began
        predicted += _job_seconds(probed[job], job_steps)
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


def _jobs(models: list, seeds: tuple[int, ...]) -> dict[tuple, list[tuple[int, Any, int]]]:
    """The (model, seed) trainings that run as one batched job (one per depth): (place in ``models``,
    config, seed) for every seed of every model."""
    groups: dict[tuple, list[tuple[int, Any, int]]] = {}
    for i, cfg in enumerate(models):
        groups.setdefault(cfg.batch_key(), []).extend((i, cfg, s) for s in seeds)
    return groups


def _job_name(members: list[tuple[int, Any, int]]) -> str:
    """A job by its models' heads: ``2,2 + 2,1`` (each once, whatever the seeds)."""
    return " + ".join(dict.fromkeys(",".join(map(str, cfg.heads)) for _, cfg, _ in members))


def _probe(data: Any, models: list, seeds: list[int], recipe: TrainConfig, device: Any,
           seconds: float) -> tuple[float, float]:
    """(seconds per step, seconds per evaluation and set-up) of one batched job: from a short and a longer
    run (their difference is the steps alone; the longer one as long as ``seconds`` allow), after a run
    that warms the kernels up."""
    def run(steps: int) -> float:
        probe = replace(recipe, steps=steps, warmup_steps=0, eval_every=10**9, time_budget_s=0.0, patience=0)
        started = time.perf_counter()
        train_models(data, models, seeds, probe, device)
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


def _check_options(seq_len: Any, threshold: Any, against: Any, seed: Any = 0, seeds: Any = 1,
                   workers: Any = None) -> None:
    import infoflow_smt as ifs

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
        raise ifs.InvalidSpecError("; ".join(problems), subject="confirm options")


def _count_ok(value: Any, most: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= most


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
