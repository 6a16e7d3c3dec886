"""Solver benchmarks: four figures, each printed with its instances, its target and a PASS/MISS line.

    python benchmarks/solver_bench.py [--json] [--workers 2] [--repeat 5] [--quick]

``t_independence``           decide time for the catalogue at seq_len 8, 10**6 and symbolic T: the largest
                             total over the smallest (target <= 1.5: the encoding does not grow with T).
``speedup_vs_enumerator``    solver time against the brute-force enumerator on instances it finishes, up to
                             3 layers of 4 heads (target >= 100x, the ratio of the totals). Each row also
                             gives the enumerator over every operation set, the naive brute force (every
                             program replayed until one passes, ``NAIVE_BUDGET_S`` at most: a lower bound
                             when it does not finish), and an estimate for replaying the whole vocabulary.
``decisions_per_second``     every catalogue target on 32 architectures (L in 1..4, h in 1..8), every witness
                             replayed, spread over ``--workers`` processes (target >= 20/s on 2 cores). The
                             wall-clock rate is the figure; ``rate_if_unshared`` divides by CPU time instead,
                             for a machine that other work also uses.
``hard_infeasible_seconds``  intrinsic_dimension:D=8 at heads (7, 8) and (8, 7), E=32, d=4: each proved
                             INFEASIBLE (target < 2 s each).

Figures only: no test asserts a time. Every run records the machine (CPUs, Python, load average).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial

import infoflow_smt as ifs
from infoflow_smt.enumerator import enumerate_naively, enumerate_programs, program_count
from infoflow_smt.program import Program

# the catalogue with small parameters (positional encoding where the target needs it)
CATALOGUE = ("min_pairwise_dot", "max_retrieval", "kth_largest:k=2", "d_retrieval:D=3",
             "d_retrieval:D=3,subsets=false", "linear_max_sum:D=3", "intrinsic_dimension:D=3",
             "triangle_center", "specific_positions")
T_ARCHS = ((1,), (2, 2), (3, 3))
SPEEDUP = (("min_pairwise_dot", (1, 1)), ("intrinsic_dimension:D=2", (2, 2)),
           ("intrinsic_dimension:D=3", (3, 3)), ("intrinsic_dimension:D=3", (2, 3)),
           ("linear_max_sum:D=4", (4,)), ("kth_largest:k=2", (2, 2)),
           ("min_pairwise_dot", (4, 4, 4)), ("intrinsic_dimension:D=3", (4, 4, 4)),
           ("linear_max_sum:D=4", (4, 4, 4)), ("triangle_center", (4, 4, 4)))
HARD = ((7, 8), (8, 7))
NAIVE_BUDGET_S = 20.0  # seconds the naive brute force may run on one instance


@dataclass
class Figure:
    name: str
    value: float
    target: str
    passed: bool
    unit: str = ""
    rows: list[dict] = field(default_factory=list)

    def line(self) -> str:
        verdict = "PASS" if self.passed else "MISS"
        return f"{verdict} {self.name} = {self.value:.3g}{self.unit} (target {self.target})"


def architecture(spec: str, heads: tuple[int, ...], embed_dim=32, input_dim: int = 2) -> ifs.Architecture:
    positional = ifs.catalogue.parse_spec(spec).needs_positional
    return ifs.Architecture(heads=heads, embed_dim=embed_dim, input_dim=input_dim, positional=positional)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def t_independence(repeat: int) -> Figure:
    """The catalogue at seq_len 8, 10**6 and symbolic T: the best of ``repeat`` totals per setting."""
    settings = {"8": 8, "10**6": 10**6, "T": None}
    cases = [(spec, architecture(spec, heads)) for spec in CATALOGUE for heads in T_ARCHS]
    for spec, arch in cases:  # warm the caches (sympy limits, parsing) for every setting alike
        for n in settings.values():
            ifs.decide(spec, arch, seq_len=n)
    passes: dict[str, list[float]] = {name: [] for name in settings}
    for _ in range(repeat):  # settings interleaved, so that a burst of load hits them alike
        for name, n in settings.items():
            passes[name].append(sum(timed(partial(ifs.decide, s, a, seq_len=n))[0] for s, a in cases))
    totals = {name: min(times) for name, times in passes.items()}
    ratio = max(totals.values()) / min(totals.values())
    rows = [{"seq_len": name, "decisions": len(cases), "seconds": round(t, 3)} for name, t in totals.items()]
    return Figure("t_independence", ratio, "<= 1.5", ratio <= 1.5, "x", rows)


def speedup_vs_enumerator() -> Figure:
    """Solver against the enumerator (merged states, maximal sets), against the same search over every
    operation set, and against an estimate of the naive enumeration: every program of the vocabulary
    (``program_count``) replayed once, at the time one replay of the found program takes."""
    rows, solver_total, enum_total = [], 0.0, 0.0
    for spec, heads in SPEEDUP:
        arch = architecture(spec, heads)
        ifs.decide(spec, arch)  # warm
        t_solver, verdict = timed(partial(ifs.decide, spec, arch))
        t_enum, found = timed(partial(enumerate_programs, spec, arch))
        t_every, every = timed(partial(enumerate_programs, spec, arch, maximal=False, simplify=False))
        programs = program_count(spec, arch)
        # one replay: of the found program, else of an idle one (most programs fail early, as it does)
        replay = found.found or Program((), layers=arch.layers)
        target = ifs.catalogue.parse_spec(spec)
        t_one, _ = timed(partial(ifs.check, replay, target, arch, seq_len=found.seq_len, samples=4))
        # brute force without merging: every program replayed until one passes (a lower bound on its time
        # when it does not finish within NAIVE_BUDGET_S)
        t_naive, naive = timed(partial(enumerate_naively, spec, arch, budget_s=NAIVE_BUDGET_S))
        agree = verdict.feasible == (found.found is not None) == (every.found is not None)
        if naive is not None:
            agree = agree and verdict.feasible == (naive.found is not None)
        solver_total, enum_total = solver_total + t_solver, enum_total + t_enum
        rows.append({"target": spec, "heads": list(heads), "status": verdict.status.value, "agree": agree,
                     "solver_s": round(t_solver, 4), "enumerator_s": round(t_enum, 4),
                     "ratio": round(t_enum / t_solver, 2), "explored": found.explored,
                     "every_set_s": round(t_every, 3), "every_set_ratio": round(t_every / t_solver, 1),
                     "naive_s": round(t_naive, 3) if naive is not None else f">{NAIVE_BUDGET_S:g}",
                     "naive_ratio": (f"{t_naive / t_solver:.3g}" if naive is not None
                                     else f">{NAIVE_BUDGET_S / t_solver:.3g}"),
                     "naive_programs": programs,
                     "naive_ratio_estimate": f"{programs * t_one / t_solver:.2g}"})
    ratio = enum_total / solver_total
    return Figure("speedup_vs_enumerator", ratio, ">= 100x", ratio >= 100 and all(r["agree"] for r in rows),
                  "x", rows)


def _decide_one(job: tuple[str, tuple[int, ...]]) -> tuple[str, float, float]:
    """(status, wall seconds, CPU seconds: the CPU time, unlike the wall, ignores other load)."""
    spec, heads = job
    cpu = time.process_time()
    seconds, verdict = timed(partial(ifs.decide, spec, architecture(spec, heads)))
    return verdict.status.value, seconds, time.process_time() - cpu


def decisions_per_second(workers: int, quick: bool) -> Figure:
    layers, widths = (range(1, 3), range(1, 5)) if quick else (range(1, 5), range(1, 9))
    jobs = [(spec, (h,) * L) for spec in CATALOGUE for L in layers for h in widths]
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        list(pool.map(_decide_one, [("max_retrieval", (1,))] * workers))  # start and warm every worker
        wall, results = timed(lambda: list(pool.map(_decide_one, jobs)))
    rate = len(jobs) / wall
    slowest = sorted(zip((r[1] for r in results), jobs), reverse=True)[:5]
    cpu = sum(r[2] for r in results)
    rows = [{"decisions": len(jobs), "workers": workers, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
             "rate_if_unshared": round(len(jobs) * workers / cpu, 1),
             "statuses": {s: sum(r[0] == s for r in results) for s in ("feasible", "infeasible", "unknown")}}]
    rows += [{"slowest": spec, "heads": list(heads), "seconds": round(t, 2)} for t, (spec, heads) in slowest]
    return Figure("decisions_per_second", rate, ">= 20/s", rate >= 20, "/s", rows)


def hard_infeasible_seconds() -> Figure:
    rows = []
    for heads in HARD:
        arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=4)
        seconds, verdict = timed(partial(ifs.decide, "intrinsic_dimension:D=8", arch))
        rows.append({"heads": list(heads), "status": verdict.status.value, "seconds": round(seconds, 3),
                     "solver_calls": verdict.stats.solver_calls})
    worst = max(r["seconds"] for r in rows)
    ok = worst < 2 and all(r["status"] == "infeasible" for r in rows)
    return Figure("hard_infeasible_seconds", worst, "< 2 s each, INFEASIBLE", ok, " s", rows)


def main(argv: list[str] | None = None) -> int:
    """Run the four figures; print them (or ``--json``); exit 0 (figures are not assertions)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--workers", type=int, default=2, help="processes for decisions_per_second")
    parser.add_argument("--repeat", type=int, default=5, help="timed passes for t_independence (best kept)")
    parser.add_argument("--quick", action="store_true", help="a smaller grid for decisions_per_second")
    args = parser.parse_args(argv)
    figures = [t_independence(args.repeat), speedup_vs_enumerator(),
               decisions_per_second(args.workers, args.quick), hard_infeasible_seconds()]
    machine = {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": platform.platform(),
               "load_average": list(os.getloadavg())}
    if args.json:
        print(json.dumps({"machine": machine, "figures": [asdict(f) for f in figures]}, indent=2))
        return 0
    print(f"machine: {machine}")
    for f in figures:
        print(f"\n== {f.name}: {f.value:.3g}{f.unit} (target {f.target})")
        for row in f.rows:
            print("   " + ", ".join(f"{k}={v}" for k, v in row.items()))
    print()
    for f in figures:
        print(f.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
