"""Solver benchmarks: four figures, each printed with its instances, its target and a PASS/MISS line.

    python benchmarks/solver_bench.py [--json] [--workers 2] [--repeat 5] [--quick]

``t_independence``           decide time for the catalogue at seq_len 8, 10**6 and symbolic T: the largest
                             total over the smallest (target <= 1.5: the encoding does not grow with T).
``speedup_vs_enumerator``    every catalogue target at 3 layers of 4 heads: the solver against the exhaustive
                             enumerator (``brute_force_decide``: every program replayed, the same answer as
                             decide) on the instances it finishes (target >= 100x, the ratio of the totals;
                             every answer must agree). Rows also give the per-instance ratios, the time the
                             brute force needed for the status alone, and the state-merging search.
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

import numpy as np
import sympy

import infoflow_smt as ifs
from infoflow_smt.enumerator import brute_force_decide, enumerate_programs, program_count
from infoflow_smt.program import Program

# the catalogue with small parameters (positional encoding where the target needs it)
CATALOGUE = ("min_pairwise_dot", "max_retrieval", "kth_largest:k=2", "d_retrieval:D=3",
             "d_retrieval:D=3,subsets=false", "linear_max_sum:D=3", "intrinsic_dimension:D=3",
             "triangle_center", "specific_positions")
T_ARCHS = ((1,), (2, 2), (3, 3))
# every catalogue target at 3 layers of 4 heads, with its smallest parameters
SPEEDUP = ("min_pairwise_dot", "max_retrieval", "kth_largest:k=2", "d_retrieval:D=1",
           "d_retrieval:D=2,subsets=false", "d_retrieval:D=3", "linear_max_sum:D=1", "linear_max_sum:D=2",
           "linear_max_sum:D=3", "intrinsic_dimension:D=1", "intrinsic_dimension:D=2",
           "intrinsic_dimension:D=3", "triangle_center", "specific_positions")
SPEEDUP_HEADS = (4, 4, 4)
MAX_PROGRAMS = 10_000     # the brute force runs where it replays at most this many programs
BRUTE_BUDGET_S = 300.0    # and gives up after this long
HARD = ((7, 8), (8, 7))


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


def operations(program: Program | None) -> int | None:
    return None if program is None else program.operations


def speedup_vs_enumerator(repeat: int) -> Figure:
    """The solver against the exhaustive enumerator at 3 layers of 4 heads, on every ``SPEEDUP`` instance
    whose programs number at most ``MAX_PROGRAMS`` (the others are listed with their count, not run).

    Both answer the same question: the status, the best exponent and a cheapest program with the fewest
    operations (``brute_force_decide`` replays every efficient program and, when none passes, every program
    at any cost). Each row must agree on all three. Each row also gives, for the reader: ``status_s``, when
    the brute force knew the status alone (its first passing program), and the state-merging search
    (``enumerate_programs``, status only), which is a dynamic program rather than an enumeration.
    """
    rows, solver_total, brute_total, ratios, search_total, solver_on_search = [], 0.0, 0.0, [], 0.0, 0.0
    for spec in SPEEDUP:
        arch = architecture(spec, SPEEDUP_HEADS)
        ifs.decide(spec, arch)  # warm
        times = sorted(timed(partial(ifs.decide, spec, arch))[0] for _ in range(repeat))
        t_solver, verdict = times[len(times) // 2], ifs.decide(spec, arch)
        t_search, searched = timed(partial(enumerate_programs, spec, arch))
        search_total, solver_on_search = search_total + t_search, solver_on_search + t_solver
        row = {"target": spec, "status": verdict.status.value, "exponent": str(verdict.exponent),
               "solver_s": round(t_solver, 4), "search_s": round(t_search, 3),
               "search_ratio": round(t_search / t_solver, 1)}
        programs = program_count(spec, arch) + (0 if verdict.feasible else program_count(spec, arch,
                                                                                          efficient=False))
        if programs > MAX_PROGRAMS:
            rows.append(row | {"brute_force": f"not run: {programs} programs"})
            continue
        t_brute, brute = timed(partial(brute_force_decide, spec, arch, budget_s=BRUTE_BUDGET_S))
        if brute is None:
            rows.append(row | {"brute_force": f"not finished in {BRUTE_BUDGET_S:g} s ({programs} programs)"})
            continue
        same_exponent = (verdict.exponent == brute.exponent
                         or sympy.simplify(verdict.exponent - brute.exponent) == 0)
        agree = (verdict.feasible == brute.feasible == (searched.found is not None) and same_exponent
                 and operations(verdict.best_program) == operations(brute.program))
        solver_total, brute_total = solver_total + t_solver, brute_total + t_brute
        ratios.append(t_brute / t_solver)
        rows.append(row | {"agree": agree, "programs": brute.programs, "operations": operations(brute.program),
                           "brute_force_s": round(t_brute, 2), "ratio": round(t_brute / t_solver, 1),
                           "status_s": round(brute.status_s, 3),
                           "status_ratio": round(brute.status_s / t_solver, 1)})
    ratio = brute_total / solver_total
    geomean = float(np.exp(np.mean(np.log(ratios))))
    rows.append({"instances_run": len(ratios), "solver_total_s": round(solver_total, 3),
                 "brute_force_total_s": round(brute_total, 1), "geometric_mean_ratio": round(geomean, 1),
                 "smallest_ratio": round(min(ratios), 1),
                 "state_merging_search_ratio_of_totals": round(search_total / solver_on_search, 2)})
    passed = ratio >= 100 and all(r.get("agree", True) for r in rows)
    return Figure("speedup_vs_enumerator", ratio, ">= 100x", passed, "x", rows)


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
    figures = [t_independence(args.repeat), speedup_vs_enumerator(args.repeat),
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
