"""Ranges bounded by an index variable (``for t in range(1, s)``): solver, enumerator and interpreter agree
on a fixed set of random targets (``support.generators.bounded_case``), and the evaluation the three are
checked against is the definition, index tuple by index tuple."""
from __future__ import annotations

import pytest
from support.generators import bounded_case
from test_differential import UNCONFIRMED, disagreements

CASES = [bounded_case(i) for i in range(24)]
BUDGET_S = 20  # the enumeration's budget per case; a case past it is left unconfirmed (its witness replays)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"bounded{c.index}")
def test_solver_enumerator_interpreter_agree_on_bounded_ranges(case) -> None:
    problems = disagreements(case, BUDGET_S)
    assert [p for p in problems if p != UNCONFIRMED] == []
    if UNCONFIRMED in problems:
        pytest.skip(f"the enumeration ran past {BUDGET_S} s: {case}")
