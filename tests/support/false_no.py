"""The differential search for false "no"s (issue 37): the solver against the independent checker.

For each case ``ifs.decide`` answers; where it answers INFEASIBLE, ``flow_search.search`` (programs written as
heads over what a position holds, sharing no code with the solver) looks for an efficient program. A program it
finds and confirms on fresh inputs is a false "no": the model's own rules compute the target efficiently where
the solver says they cannot. FEASIBLE answers are replayed by the solver's own checkers and are not judged here.
"""
from __future__ import annotations

import collections
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import infoflow_smt as ifs
from infoflow_smt.verify.flow_search import search

DECIDE_TIMEOUT_S = 30.0
SEARCH_BUDGET_S = 10.0


@dataclass(frozen=True)
class FalseNo:
    """A case the solver calls INFEASIBLE and the program that computes it efficiently."""

    case: object
    exponent: str
    program: str

    def __str__(self) -> str:
        shown = "\n    ".join(self.program.splitlines())
        return f"{self.case}\n  solver: INFEASIBLE ({self.exponent}); a program of the model:\n    {shown}"


@dataclass
class Tally:
    """What a run saw: targets, the solver's decisions by status, and the false "no"s."""

    targets: int = 0
    decisions: collections.Counter = field(default_factory=collections.Counter)
    searched: int = 0
    exhausted: int = 0
    feasible_searched: int = 0     # FEASIBLE verdicts searched too (``also_feasible``), and where the checker
    feasible_found: int = 0        # found a program of its own: how much of the model its search covers
    false_noes: list[FalseNo] = field(default_factory=list)
    decide_seconds: float = 0.0
    search_seconds: float = 0.0

    def summary(self) -> str:
        statuses = ", ".join(f"{status} {count}" for status, count in sorted(self.decisions.items()))
        return (f"targets {self.targets}; decisions: {statuses}; INFEASIBLE searched {self.searched} "
                f"({self.exhausted} exhaustively); false \"no\"s {len(self.false_noes)}; "
                + (f"FEASIBLE searched {self.feasible_searched}, a program found for {self.feasible_found}; "
                   if self.feasible_searched else "") +
                f"decide {self.decide_seconds:.1f} s, search {self.search_seconds:.1f} s")


def judge(case, tally: Tally, *, decide_timeout: float = DECIDE_TIMEOUT_S, search_budget: float = SEARCH_BUDGET_S,
          also_feasible: bool = False) -> FalseNo | None:
    """Decide ``case`` (with ``text`` and ``arch``), search where the answer is INFEASIBLE (and, with
    ``also_feasible``, where it is FEASIBLE, to count how often the checker finds a program of its own), and
    count both."""
    tally.targets += 1
    started = time.monotonic()
    try:
        verdict = ifs.decide(case.text, case.arch, timeout=decide_timeout)
    except ifs.InvalidSpecError:
        tally.decisions["refused"] += 1
        return None
    finally:
        tally.decide_seconds += time.monotonic() - started
    tally.decisions[verdict.status.value] += 1
    searched = verdict.status is ifs.Status.INFEASIBLE or (also_feasible and verdict.status is ifs.Status.FEASIBLE)
    if not searched:
        return None
    started = time.monotonic()
    try:
        found = search(ifs.parse_target(case.text), case.arch, budget_s=search_budget)
    finally:
        tally.search_seconds += time.monotonic() - started
    if verdict.status is ifs.Status.FEASIBLE:
        tally.feasible_searched += 1
        tally.feasible_found += found.program is not None
        return None
    tally.searched += 1
    tally.exhausted += found.exhausted
    if found.program is None:
        return None
    false_no = FalseNo(case, str(verdict.exponent), found.program.describe())
    tally.false_noes.append(false_no)
    return false_no


def false_noes(cases: Iterable, **budgets) -> Tally:
    """Judge every case; the tally lists the false "no"s."""
    tally = Tally()
    for case in cases:
        judge(case, tally, **budgets)
    return tally
