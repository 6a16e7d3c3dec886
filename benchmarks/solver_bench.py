"""Solver benchmarks: seventeen figures, each beside a baseline measured in the same run, with a PASS/MISS line.

    python benchmarks/solver_bench.py [--json] [--workers 2] [--repeat 3] [--enumerator]
                                      [--only existing|scale|growth]

``decisions_per_second``   every catalogue target (``CATALOGUE``) on L in 1..3 layers of h in 1..4 heads, E=32,
                           d=2: checked decisions per second (every feasible witness replayed, every infeasible
                           answer with its best exponent), as a sweep deciding every cell over ``--workers``
                           processes. Baseline: the same cells, one ``ifs.decide`` call each in one process,
                           each from scratch (``solver.forget_recent`` before it; targets parsed once).
                           The two must give the same statuses and exponents. Target >= 200/s.
``phase_diagram_cells``    the phase diagram of intrinsic_dimension:D=4 over 1..6 layers by 1..8 heads (48
                           cells), in cells per second, by a sweep that infers what monotonicity gives.
                           Baseline: the same sweep deciding every cell; the inferred cells must agree with
                           it. Target >= 500 cells/s.
``hard_worst_ms``          intrinsic_dimension:D=8 at heads (7, 8) and (8, 7), E=32, d=2: the slower of the two
                           decisions, each INFEASIBLE. Baseline: the cheapest decision (max_retrieval on one
                           head), so the ratio says how many trivial questions the hardest costs. Target < 50 ms.
``t_independence``         decide time for the catalogue at seq_len 8, 10**6 and symbolic T, every decision from
                           scratch: the largest total over the smallest (target <= 1.5: the encoding does not
                           grow with T).

``decide_all_s``           ``decide_all(intrinsic_dimension:D=16)`` and D=12 (every architecture of h heads in L
                           layers): seconds. Targets < 10 s and < 2 s. Baseline: D=8, in the same run.
``infeasible_diagonal_s``  intrinsic_dimension:D on L layers of 1 head, every D <= 16 and L <= D (each
                           INFEASIBLE): the slowest decision, in seconds, D=16 at 16 layers named. Target < 1 s each.
                           Baseline: the same questions at D <= 6, where the proofs of "no" were always small.
``chain_s``                a chain of 24 dependent selections on 24 and 25 layers of 1 head: the slower decision,
                           in seconds. Target < 1 s each. Baseline: a chain of 4 on 4 layers.
``random_p99_s``           300 random targets (seeded; nesting to depth 3, fixed positions and offsets) on up to 4
                           layers of up to 3 heads, with positional encoding, at the default deadline: the 99th
                           percentile of the decision times. Target < 0.5 s, none UNKNOWN. Baseline: the median.

Growth (issue 39, ``--only growth``): questions grown in positions, hops and terms, each row its size, seconds,
status and ratio to ``reference_s`` (max_retrieval on 1 head from scratch, the best of 5 in the same run);
every question from scratch under a deadline of ``GROWTH_TIMEOUT`` (120 s), so a miss is UNKNOWN with its time.

``growth_workers_s``            linear_max_sum:D on (1, 1) with positions, D = 8, 16, 32. Target D=32 < 10 s.
``growth_subsets_s``            a sum of k subset selections (``subsets``) on (2, 2) with positions, k = 8, 16,
                                32. Target k=32 < 10 s.
``growth_frontier_hops_s``      ``decide_all(k_hop_induction:k=16)`` (``infoflow frontier``). Target < 30 s,
                                every cell decided.
``growth_masked_decide_all_s``  ``decide_all(intrinsic_dimension:D, causal=True)``, D = 4, 6, 8. Target D=8
                                < 10 s, every cell decided.
``growth_decide_all_32_s``      ``decide_all(intrinsic_dimension:D=32)``. Target < 10 s, every cell decided.
``growth_infeasible_hops_s``    k_hop_induction:k on ceil(log2(k+1)) layers of 1 head, its largest infeasible
                                depth (the frontier's depth, one layer more, asked beside it), k = 2..16.
                                Target each < 5 s and INFEASIBLE.
``growth_wide_random_s``        a seeded sum of 10 and 20 random groups (``wide_question``, like
                                ``random_question``'s) on (4, 4, 4) with positions. Target 20 terms < 10 s.
``growth_value_chain_s``        a chain of dependent selections written as a path of bilinear scores
                                (``value_chain``) of 24 on 24 and 25 layers of 1 head; 4 on 4 beside it.
                                Target < 1 s each.
``growth_hop_sweep_unknown``    the sweep of k_hop_induction:k=8 over 1..10 layers by 1..2 heads with
                                positions at the default deadline, with 1 and the default workers: its
                                unknown cells. Target 0.

``--enumerator`` adds ``speedup_vs_enumerator`` (every catalogue target at 3 layers of 4 heads: the solver
against the exhaustive enumerator; minutes). Figures only: no test asserts a time. Every run records the
machine (CPUs, Python, load average, and ``reference_loop_ms``: a fixed Python loop timed before and after,
which says how fast the machine ran); times are the best of ``--repeat`` passes, passes interleaved so
that a burst of load hits figure and baseline alike.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import numpy as np
import sympy

import infoflow_smt as ifs
from infoflow_smt.machine import cpu_model
from infoflow_smt.model.program import Program
from infoflow_smt.smt.solver import forget_recent
from infoflow_smt.verify.enumerator import brute_force_decide, enumerate_programs, program_count

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


def from_scratch(spec: str, arch: ifs.Architecture, seq_len: int | None = None):
    """``ifs.decide`` as in a fresh session: without the questions kept from earlier calls (the same question
    asked twice is answered from them)."""
    forget_recent()
    return ifs.decide(spec, arch, seq_len=seq_len)


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
            passes[name].append(sum(timed(partial(from_scratch, s, a, n))[0] for s, a in cases))
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
        from_scratch(spec, arch)  # imports and parse caches warm; each timed decision starts from scratch
        times = sorted(timed(partial(from_scratch, spec, arch))[0] for _ in range(repeat))
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


GRID = [(h,) * L for L in range(1, 4) for h in range(1, 5)]
PHASE = ("intrinsic_dimension:D=4", [(h,) * L for L in range(1, 7) for h in range(1, 9)])


def decisions_per_second(workers: int, repeat: int) -> Figure:
    specs = list(CATALOGUE)

    def swept():
        groups = {}
        for spec in specs:  # positional encoding where the target needs it: one sweep per setting
            groups.setdefault(ifs.catalogue.parse_spec(spec).needs_positional, []).append(spec)
        cells = []
        for positional, group in groups.items():
            grid = [ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, positional=positional)
                    for heads in GRID]
            cells += ifs.sweep(group, grid, infer=False, cache=False, workers=workers).cells
        return cells

    def one_by_one():  # every decision from scratch (targets parsed once, as in any session)
        return [from_scratch(spec, architecture(spec, heads)) for spec in specs for heads in GRID]

    swept()  # warm: imports, sympy caches, worker start-up is inside every pass alike
    fast, slow, cells, verdicts = [], [], None, None
    for _ in range(repeat):
        t, cells = timed(swept)
        fast.append(t)
        t, verdicts = timed(one_by_one)
        slow.append(t)
    n = len(specs) * len(GRID)
    mine = sorted((ifs.catalogue.parse_spec(c.target).text, c.architecture.heads, c.status.value, c.exponent)
                  for c in cells)
    theirs = sorted((v.target.text, v.architecture.heads, v.status.value,
                     "" if v.exponent is sympy.nan else str(v.exponent)) for v in verdicts)
    agree = mine == theirs
    rate, base = n / min(fast), n / min(slow)
    statuses = {s: sum(c.status.value == s for c in cells) for s in ("feasible", "infeasible", "unknown")}
    rows = [{"decisions": n, "workers": workers, "seconds": round(min(fast), 3), "rate": round(rate, 1),
             "statuses": statuses, "agree_with_baseline": agree},
            {"baseline": "one ifs.decide per cell, one process", "seconds": round(min(slow), 3),
             "rate": round(base, 1), "speedup": round(rate / base, 2)}]
    return Figure("decisions_per_second", rate, ">= 200/s", rate >= 200 and agree, "/s", rows)


def phase_diagram_cells(repeat: int) -> Figure:
    spec, shapes = PHASE
    grid = [architecture(spec, heads) for heads in shapes]
    run = partial(ifs.sweep, [spec], grid, cache=False, workers=1)
    run()  # warm
    fast, slow, inferred, every = [], [], None, None
    for _ in range(repeat):
        t, inferred = timed(run)
        fast.append(t)
        t, every = timed(partial(run, infer=False))
        slow.append(t)
    agree = [(c.architecture.heads, c.status) for c in inferred.cells] == [
        (c.architecture.heads, c.status) for c in every.cells]
    rate, base = len(grid) / min(fast), len(grid) / min(slow)
    rows = [{"cells": len(grid), "decided": inferred.decided, "inferred": inferred.inferred,
             "seconds": round(min(fast), 3), "rate": round(rate, 1), "agree_with_baseline": agree},
            {"baseline": "the same sweep deciding every cell", "seconds": round(min(slow), 3),
             "rate": round(base, 1), "speedup": round(rate / base, 2)}]
    return Figure("phase_diagram_cells", rate, ">= 500 cells/s", rate >= 500 and agree, " cells/s", rows)


def hard_worst_ms(repeat: int) -> Figure:
    """Each timed decision asks a target the session has not seen (a new seed: parsed, normalized and encoded
    from scratch), the figure a one-off question meets; ``warm_ms`` asks the same target again (its encoding
    and replays kept by ``decide``), what a researcher exploring one target meets."""
    seeds = iter(range(1000, 2000))

    def cold(spec: str, heads: tuple[int, ...]):
        target = ifs.catalogue.parse_spec(spec, seed=next(seeds))
        arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)
        return timed(partial(ifs.decide, target, arch))

    ifs.decide("max_retrieval", architecture("max_retrieval", (1,)))  # warm the imports
    trivial = min(cold("max_retrieval", (1,))[0] for _ in range(repeat))
    rows, worst = [], 0.0
    for heads in HARD:
        runs = [cold("intrinsic_dimension:D=8", heads) for _ in range(repeat)]
        best, verdict = min(runs, key=lambda r: r[0])
        warm = min(timed(partial(ifs.decide, verdict.target, verdict.architecture))[0] for _ in range(repeat))
        worst = max(worst, best)
        rows.append({"heads": list(heads), "status": verdict.status.value, "ms": round(1000 * best, 1),
                     "warm_ms": round(1000 * warm, 1), "solver_calls": verdict.stats.solver_calls})
    rows.append({"baseline": "max_retrieval on 1 head, also cold", "ms": round(1000 * trivial, 2),
                 "ratio": round(worst / trivial, 1)})
    ok = worst < 0.05 and all(r.get("status", "infeasible") == "infeasible" for r in rows)
    return Figure("hard_worst_ms", 1000 * worst, "< 50 ms, each INFEASIBLE", ok, " ms", rows)


# ---- questions one size up (issue 20) -----------------------------------------------------------------
SCALE_TIMEOUT = 60.0   # each scaling question's deadline (the default one): a miss shows as UNKNOWN, not a hang


def chain(n: int) -> str:
    """``n`` dependent selections: the selection over ``v{i}`` ranks by its distance to ``v{i-1}`` plus the
    next one's value, so each is made only once the one inside it is known."""
    kinds = ["min", "max"]  # alternating: nested reductions of one kind are one joint reduction
    opens = "".join(f"{kinds[i % 2]}(f1(x[v0]) + " if i == 0 else f"{kinds[i % 2]}(dot(x[v{i-1}], x[v{i}]) + "
                    for i in range(n))
    return opens + f"f1(x[v{n - 1}])" + "".join(f" for v{i} in T)" for i in reversed(range(n)))


def one_head(spec: str, layers: int) -> ifs.Architecture:
    return ifs.Architecture(heads=(1,) * layers, embed_dim=32, input_dim=2)


def decide_all_s(repeat: int) -> Figure:
    """``decide_all`` at D=12 and D=16 (from scratch: ``forget_recent`` before each), baseline D=8."""
    def run(D: int):
        forget_recent()
        return timed(partial(ifs.decide_all, f"intrinsic_dimension:D={D}", timeout=SCALE_TIMEOUT * 5))

    run(2)  # warm the imports
    rows, ok = [], True
    for D, bound in ((8, None), (12, 2.0), (16, 10.0)):
        try:
            best, frontier = min((run(D) for _ in range(repeat)), key=lambda r: r[0])
            shapes = [list(s) for s in frontier.shapes]
        except ifs.SolverUnknownError as err:
            best, shapes = float("inf"), f"unknown: {err}"
        ok &= bound is None or best < bound
        rows.append({"D": D, "seconds": round(best, 3), "frontier": shapes} | (
            {"target": f"< {bound:g} s"} if bound else {"baseline": "D=8, the same run"}))
    return Figure("decide_all_s", rows[-1]["seconds"], "D=16 < 10 s, D=12 < 2 s", ok, " s", rows)


def infeasible_diagonal_s(repeat: int) -> Figure:
    """intrinsic_dimension:D on L layers of 1 head for every D <= 16, L <= D: the slowest decision."""
    def worst(dims) -> tuple[float, list[dict], bool]:
        slowest, rows, every = 0.0, [], True
        for D in dims:
            times = []
            for L in range(1, D + 1):
                spec = f"intrinsic_dimension:D={D}"
                t, verdict = min((timed(partial(from_scratch_timeout, spec, one_head(spec, L)))
                                  for _ in range(repeat)), key=lambda r: r[0])
                every &= verdict.status is ifs.Status.INFEASIBLE
                times.append(t)
            slowest = max(slowest, max(times))
            rows.append({"D": D, "layers": f"1..{D}", "slowest_s": round(max(times), 4),
                         "at_L=D_s": round(times[-1], 4)})
        return slowest, rows, every

    from_scratch_timeout("max_retrieval", one_head("max_retrieval", 1))  # warm
    base, _, _ = worst(range(1, 7))
    value, rows, every = worst(range(1, 17))
    rows.append({"baseline": "the same questions at D <= 6", "slowest_s": round(base, 4)})
    return Figure("infeasible_diagonal_s", value, "< 1 s each, each INFEASIBLE", value < 1 and every, " s", rows)


def from_scratch_timeout(spec, arch):
    forget_recent()
    return ifs.decide(spec, arch, timeout=SCALE_TIMEOUT)


def chain_s(repeat: int) -> Figure:
    """A chain of 24 dependent selections on 24 and 25 layers of 1 head; baseline a chain of 4 on 4."""
    rows, worst = [], 0.0
    for n, L in ((4, 4), (24, 24), (24, 25)):
        text = chain(n)
        t, verdict = min((timed(partial(from_scratch_timeout, text, one_head(text, L))) for _ in range(repeat)),
                         key=lambda r: r[0])
        if n == 24:
            worst = max(worst, t)
        rows.append({"chain": n, "layers": L, "status": verdict.status.value, "seconds": round(t, 4)}
                    | ({"baseline": "a chain of 4"} if n == 4 else {}))
    known = all(r["status"] != "unknown" for r in rows)
    return Figure("chain_s", worst, "< 1 s each", worst < 1 and known, " s", rows)


def random_group(rng: np.random.Generator, depth: int, outer: str | None, used: int) -> str:
    """A random reduction nesting up to ``depth`` deep, whose scores read their own variable ``v{used}``, the
    enclosing one ``outer``, fixed positions x[1], x[2], x[T] and offsets x[v-1]."""
    v = f"v{used}"
    terms = [f"f1(x[{v}])"]
    if outer is not None:
        terms.append(f"dot(x[{outer}], x[{v}])")
    extra = rng.choice(["", "x[1]", "x[2]", "x[T]", "offset", "pair"])
    if extra == "offset":
        terms.append(f"f2(x[{v}], x[{v}-1])")
    elif extra == "pair":
        terms.append(f"bilinear(A1, x[{v}], x[{outer or v}])")
    elif extra:
        terms.append(f"dot(x[{v}], {extra})")
    if depth > 1 and rng.random() < 0.7:
        terms.append(random_group(rng, depth - 1, v, used + 1))
    kind = rng.choice(["min", "max", "max", "kth"])
    domain = "range(2, T+1)" if extra == "offset" else "T"
    body = " + ".join(terms)
    if kind == "kth":
        return f"kth_largest(2, {body} for {v} in {domain})"
    return f"{kind}({body} for {v} in {domain})"


def random_question(rng: np.random.Generator) -> tuple[str, ifs.Architecture]:
    """A random target (1-3 groups, each a ``random_group`` nesting up to 3 deep) on up to 4 layers of up to
    3 heads, with positional encoding."""
    groups = [random_group(rng, int(rng.integers(1, 4)), None, 10 * g) for g in range(int(rng.integers(1, 4)))]
    text = groups[0] if len(groups) == 1 else f"F0({', '.join(groups)})"
    heads = tuple(int(h) for h in rng.integers(1, 4, size=int(rng.integers(1, 5))))
    return text, ifs.Architecture(heads=heads, embed_dim=32, input_dim=2, positional=True)


def random_p99_s(count: int = 300) -> Figure:
    """The 99th percentile of ``count`` random questions' decision times (each from scratch, at the default
    deadline); baseline their median."""
    rng = np.random.default_rng(20)
    questions = [random_question(rng) for _ in range(count)]
    from_scratch(*questions[0])  # warm
    times, statuses, slowest = [], {}, []
    for text, arch in questions:
        try:
            t, verdict = timed(partial(from_scratch, text, arch))
            status = verdict.status.value
        except ifs.WitnessCheckError:  # a bug, counted and named (the figure then misses)
            t, status = float("inf"), "witness check failed"
        times.append(t)
        statuses[status] = statuses.get(status, 0) + 1
        slowest.append((t, text, arch.heads))
    p99, median = float(np.percentile(times, 99)), float(np.median(times))
    rows = [{"questions": count, "p99_s": round(p99, 4), "max_s": round(max(times), 4), "statuses": statuses},
            {"baseline": "the median", "median_s": round(median, 4), "ratio": round(p99 / median, 1)}]
    rows += [{"slow_s": round(t, 3), "heads": list(h), "target": text} for t, text, h in
             sorted(slowest, key=lambda r: r[0])[-3:]]
    ok = p99 < 0.5 and set(statuses) <= {"feasible", "infeasible"}
    return Figure("random_p99_s", p99, "< 0.5 s, none unknown", ok, " s", rows)


# ---- questions grown in positions, hops and terms (issue 39) ------------------------------------------------
GROWTH_TIMEOUT = 120.0   # each question's deadline: a miss shows as UNKNOWN with the time it took, never a hang
REFERENCE = ("max_retrieval", (1,))   # the fixed small decision every growth figure is a ratio to


def reference_s(repeat: int) -> float:
    """max_retrieval on 1 head, from scratch: the best of ``max(repeat, 5)`` decisions, in seconds."""
    spec, heads = REFERENCE
    from_scratch(spec, architecture(spec, heads))  # warm the imports
    return min(timed(partial(from_scratch, spec, architecture(spec, heads)))[0] for _ in range(max(repeat, 5)))


def grown(ask: Callable[[], tuple[str, str]], repeat: int) -> tuple[float, str, str]:
    """The best of ``repeat`` passes of ``ask`` (from scratch: ``forget_recent`` before each), which returns
    (status, note); a pass that comes back UNKNOWN is not repeated. Returns (seconds, status, note)."""
    best = None
    for _ in range(repeat):
        forget_recent()
        t, (status, note) = timed(ask)
        best = (t, status, note) if best is None or t < best[0] else best
        if status == "unknown":
            break
    return best


def _decision(text: str, arch: ifs.Architecture) -> Callable[[], tuple[str, str]]:
    def ask():
        verdict = ifs.decide(text, arch, timeout=GROWTH_TIMEOUT)
        return verdict.status.value, verdict.reason_unknown or ""
    return ask


def _frontier(text: str, **options) -> Callable[[], tuple[str, str]]:
    """``decide_all``: its status is "complete" (every cell decided), else "unknown" and why."""
    def ask():
        try:
            frontier = ifs.decide_all(text, timeout=GROWTH_TIMEOUT, **options)
        except ifs.SolverUnknownError as err:
            return "unknown", str(err)
        shapes = ", ".join(f"{L}x{h}" for L, h in frontier.shapes) or "none"
        if not frontier.complete:
            return "unknown", f"{len(frontier.undecided)} cells undecided ({'; '.join(frontier.undecided_why)})"
        return "complete", f"frontier {shapes}"
    return ask


DECIDED = ("feasible", "infeasible", "complete")   # a status that answers (decide's, or decide_all's whole grid)


def growth_figure(name: str, sizes: list[tuple[dict, Callable]], reference: float, repeat: int,
                  judged: Callable[[dict], bool], bound: float, target: str, expected=DECIDED) -> Figure:
    """One row per size (its seconds, status and ratio to the reference decision); the figure's value is the
    slowest judged row, which passes when it is under ``bound`` seconds with an expected status."""
    rows, passed, value = [], True, 0.0
    for size, ask in sizes:
        t, status, note = grown(ask, repeat)
        row = size | {"seconds": round(t, 3), "status": status, "ratio": round(t / reference)}
        rows.append(row | ({"note": note} if note else {}))
        if judged(size):
            value = max(value, t)
            passed &= t < bound and status in expected
    rows.append({"reference": f"{REFERENCE[0]} on {REFERENCE[1]}, from scratch", "seconds": round(reference, 4)})
    return Figure(name, value, target, passed, " s", rows)


def growth_figures(repeat: int) -> list[Figure]:
    """The growth figures of issue 39's "Done when", each beside ``reference_s`` measured in the same run."""
    reference = reference_s(repeat)
    figures = [
        growth_figure("growth_workers_s", [
            ({"target": f"linear_max_sum:D={D}", "heads": "1,1 positional"},
             _decision(f"linear_max_sum:D={D}", ifs.Architecture(heads=(1, 1), positional=True)))
            for D in (8, 16, 32)], reference, repeat, lambda r: r["target"].endswith("=32"), 10.0, "D=32 < 10 s"),
        growth_figure("growth_subsets_s", [
            ({"subsets": k, "heads": "2,2 positional"}, _decision(subsets(k), ifs.Architecture(
                heads=(2, 2), input_dim=2, positional=True))) for k in (8, 16, 32)],
            reference, repeat, lambda r: r["subsets"] == 32, 10.0, "k=32 < 10 s"),
        growth_figure("growth_frontier_hops_s", [({"decide_all": "k_hop_induction:k=16"},
                                                  _frontier("k_hop_induction:k=16"))],
                      reference, repeat, lambda r: True, 30.0, "< 30 s, complete"),
        growth_figure("growth_masked_decide_all_s", [
            ({"decide_all": f"intrinsic_dimension:D={D}", "causal": True},
             _frontier(f"intrinsic_dimension:D={D}", causal=True)) for D in (4, 6, 8)],
            reference, repeat, lambda r: r["decide_all"].endswith("=8"), 10.0, "D=8 < 10 s, complete"),
        growth_figure("growth_decide_all_32_s", [({"decide_all": "intrinsic_dimension:D=32"},
                                                  _frontier("intrinsic_dimension:D=32"))],
                      reference, repeat, lambda r: True, 10.0, "< 10 s, complete"),
        infeasible_hops(reference, repeat),
        growth_figure("growth_wide_random_s", [
            ({"terms": n, "seed": 39, "heads": "4,4,4 positional"}, _decision(wide_question(n), ifs.Architecture(
                heads=(4, 4, 4), input_dim=2, positional=True))) for n in (10, 20)],
            reference, repeat, lambda r: r["terms"] == 20, 10.0, "20 terms < 10 s"),
        growth_figure("growth_value_chain_s", [
            ({"chain": n, "layers": L}, _decision(value_chain(n), ifs.Architecture(heads=(1,) * L)))
            for n, L in ((4, 4), (24, 24), (24, 25))], reference, repeat, lambda r: r["chain"] == 24, 1.0,
            "< 1 s each"),
        hop_sweep_unknown(reference),
    ]
    return figures


def subsets(k: int) -> str:
    """A sum of ``k`` subset selections: interchangeable work for interchangeable positions."""
    return " + ".join(f"min(f{i}(x[t]) for t in S{i})" for i in range(1, k + 1))


def wide_question(terms: int, seed: int = 39) -> str:
    """A sum of ``terms`` random groups (``random_group``, nesting up to 3 deep), seeded."""
    rng = np.random.default_rng(seed)
    return " + ".join(random_group(rng, int(rng.integers(1, 4)), None, 10 * g) for g in range(terms))


def value_chain(n: int) -> str:
    """A chain of dependent selections written as a path of bilinear scores (issue 39's spelling): the
    selection over ``v{i+1}`` ranks by its score with ``v{i}`` plus the next one's value."""
    return ("max(bilinear(A1, x[v0], x[v1]) + "
            + "".join(f"max(bilinear(A1, x[v{i}], x[v{i + 1}]) + " for i in range(1, n - 1))
            + f"f1(x[v{n - 1}])" + "".join(f" for v{i + 1} in T)" for i in reversed(range(1, n - 1)))
            + " for v0 in T for v1 in T)")


def infeasible_hops(reference: float, repeat: int) -> Figure:
    """k_hop_induction:k on its largest infeasible depth, ceil(log2(k+1)) layers of 1 head (pointer doubling
    reaches k hops in one layer more, the frontier's depth, asked beside it), k = 2..16: each < 5 s."""
    sizes = []
    for k in range(2, 17):
        depth = math.ceil(math.log2(k + 1))
        for layers in (depth, depth + 1):
            sizes.append(({"k": k, "layers": layers, "judged": layers == depth},
                          _decision(f"k_hop_induction:k={k}", ifs.Architecture(heads=(1,) * layers))))
    return growth_figure("growth_infeasible_hops_s", sizes, reference, repeat, lambda r: r["judged"], 5.0,
                         "each < 5 s on ceil(log2(k+1)) layers, INFEASIBLE there", expected=("infeasible",))


def hop_sweep_unknown(reference: float) -> Figure:
    """The sweep of k_hop_induction:k=8 over 1..10 layers by 1..2 heads with positions at the default
    deadline (fair shares per cell), with one worker and the default workers: its unknown cells (target 0)."""
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2, positional=True) for L in range(1, 11) for h in (1, 2)]
    rows, unknown = [], 0
    for workers in (1, None):
        forget_recent()
        t, result = timed(partial(ifs.sweep, ["k_hop_induction:k=8"], grid, cache=False, workers=workers))
        unknown += result.undecided
        rows.append({"workers": workers or "default", "cells": len(grid), "decided": result.decided,
                     "inferred": result.inferred, "unknown": result.undecided, "seconds": round(t, 3),
                     "ratio": round(t / reference)})
    rows.append({"reference": f"{REFERENCE[0]} on {REFERENCE[1]}, from scratch", "seconds": round(reference, 4)})
    return Figure("growth_hop_sweep_unknown", unknown, "0 unknown cells at the default deadline", unknown == 0,
                  " cells", rows)


def reference_loop_ms() -> float:
    """A fixed pure-Python loop, best of 5, in ms: how fast this machine runs Python right now. Shared
    machines drift between states about 1.4x apart for minutes at a time; printed before and after the
    figures, it says which state an absolute figure (ms, cells/s) was measured in."""
    def loop() -> float:
        started, total = time.perf_counter(), 0
        for i in range(300_000):
            total += i * i % 7
        return time.perf_counter() - started
    return round(1000 * min(loop() for _ in range(5)), 1)


def commit() -> str:
    """The code measured: the commit, and the package's files that differ from it in the working tree."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, check=False,
                              cwd=os.path.dirname(os.path.abspath(__file__)))
        return done.stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    changed = [line[3:] for line in git("status", "--porcelain", "--untracked-files=no").splitlines()
               if line[3:].startswith("infoflow_smt/")]
    return head + (f" with uncommitted changes to {', '.join(changed)}" if changed else "")


def main(argv: list[str] | None = None) -> int:
    """Run the figures (all but the enumerator's by default); print them (or ``--json``); exit 0 (figures are
    not assertions)."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--workers", type=int, default=2, help="processes for decisions_per_second")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes per figure (the best is kept)")
    parser.add_argument("--enumerator", action="store_true", help="also the speedup against the enumerator")
    parser.add_argument("--only", choices=("existing", "scale", "growth"), help="only the first four figures, "
                        "only the four of questions one size up, or only the growth figures (issue 39)")
    args = parser.parse_args(argv)
    loop_before, load_before = reference_loop_ms(), list(os.getloadavg())
    figures = []
    if args.only in (None, "existing"):
        figures += [decisions_per_second(args.workers, args.repeat), phase_diagram_cells(args.repeat),
                    hard_worst_ms(args.repeat), t_independence(args.repeat)]
    if args.only in (None, "scale"):
        figures += [decide_all_s(args.repeat), infeasible_diagonal_s(args.repeat), chain_s(args.repeat),
                    random_p99_s()]
    if args.only in (None, "growth"):
        figures += growth_figures(args.repeat)
    if args.enumerator:
        figures.append(speedup_vs_enumerator(args.repeat))
    machine = {"cpu": cpu_model(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
               "platform": platform.platform(), "commit": commit(), "load_average_at_start": load_before,
               "load_average": list(os.getloadavg()),
               "reference_loop_ms": [loop_before, reference_loop_ms()]}
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
