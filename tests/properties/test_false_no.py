"""No INFEASIBLE verdict where the independent checker finds an efficient program (issue 37, item 2).

The solver decides a fixed set of random targets (``support.selection_chains.chain_case``, seed 0: chains of
selections, one selection at several hosts, fixed positions anywhere, offsets, with every switch); where it
answers INFEASIBLE, ``verify/flow_search.py``, whose programs are heads over what a position holds and share
nothing with the solver's comparison trees, looks for one. Each program it finds has passed the model's rules
on hundreds of fresh inputs at two lengths: the verdict is a false "no". ``benchmarks/false_no_search.py`` runs
the same over 1,000 targets.
"""
from __future__ import annotations

import pytest
from support.false_no import Tally, judge
from support.selection_chains import chain_case

CASES = [chain_case(i) for i in range(160)]
SEARCH_BUDGET_S = 5.0


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[f"chain{c.index}" for c in CASES])
def test_no_infeasible_verdict_where_the_independent_checker_finds_a_program(case) -> None:
    found = judge(case, Tally(), search_budget=SEARCH_BUDGET_S)
    assert found is None, f"a false \"no\":\n{found}"


def test_the_cases_switch_everything_and_write_every_shape() -> None:
    archs = [c.arch for c in CASES]
    assert sum(a.positional for a in archs) >= 60 and sum(not a.positional for a in archs) >= 30
    assert sum(a.causal for a in archs) >= 25 and sum(a.readout == "last" for a in archs) >= 15
    assert sum(a.rank_aware for a in archs) >= 15 and sum(a.layers == 3 for a in archs) >= 30
    texts = [c.text for c in CASES]
    assert sum("x[o]" in t for t in texts) >= 10
    assert sum(t.count("argm") >= 2 for t in texts) >= 20            # chains of selections
    assert sum(any(f"x[{p}]" in t for p in ("3", "T-1", "2")) for t in texts) >= 30   # fixed positions past 1
    assert sum("-1]" in t for t in texts) >= 30                       # offsets
    assert sum(t.startswith("F0(") or " for b in T)" in t for t in texts) >= 10   # one selection written twice
