"""The judge of "no" against wrong verdicts: the committed ``confirm`` runs judged again with every verdict
flipped (``Confirmation.judged_again``). Nothing trains here: the cells are the committed runs' own
(``results/confirm_*.json``), so a wrong verdict is set against real networks.

A flipped verdict must disagree: a feasible row claimed infeasible learned the target (below the threshold
at every T), an infeasible row claimed feasible did not. The rule before had two of these agree (a feasible
row whose error rose with T, read as a "yes" to infeasible) and judged infeasible rows by the gap to an
efficient row whatever that row had learned.
"""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from support.paths import ROOT

from experiments.confirmation.table import Confirmation
from experiments.confirmation.trend import Cell, TrendRule, judge

RESULTS = sorted(p for p in (ROOT / "results").glob("confirm_*.json") if p.stem != "confirm_readme")
README_RUN = ROOT / "results" / "confirm_readme.json"   # README.md's example at the budget it names
FLIP = {"feasible": "infeasible", "infeasible": "feasible"}


def committed(path: Path) -> Confirmation:
    return Confirmation.from_json(json.loads(path.read_text())["confirmation"])


def by_seed(table: Confirmation, seed: int) -> Confirmation:
    """The table as if only the ``seed``-th seed had trained: each cell that seed's NMSE."""
    return replace(table, rows=tuple(replace(r, cells=tuple(replace(c, nmse=c.seed_nmse[seed]) for c in r.cells))
                                     for r in table.rows))


def test_the_committed_runs_are_there() -> None:
    assert [p.name for p in RESULTS] == ["confirm_intrinsic_dimension.json", "confirm_min_pairwise_dot.json",
                                         "confirm_triangle_center.json"]


@pytest.mark.parametrize("path", [*RESULTS, README_RUN], ids=[p.stem for p in [*RESULTS, README_RUN]])
def test_the_committed_tables_are_the_rule_s_judgement_of_their_cells(path: Path) -> None:
    table = committed(path)
    again = table.judged_again()
    assert [r.judgement for r in again.rows] == [r.judgement for r in table.rows]
    assert again.control == table.control
    assert str(again) in (ROOT / "results" / f"{path.stem}.txt").read_text()


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_every_verdict_flipped_alone_disagrees(path: Path) -> None:
    table = committed(path)
    statuses = [r.status for r in table.rows]
    for i, row in enumerate(table.rows):
        flipped = statuses[:i] + [FLIP[statuses[i]]] + statuses[i + 1:]
        judged = table.judged_again(flipped).rows[i]
        assert judged.agree is False, (path.stem, row.heads, flipped[i], judged.judgement.reason)


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_every_verdict_flipped_together_disagrees(path: Path) -> None:
    table = committed(path)
    judged = table.judged_again([FLIP[r.status] for r in table.rows])
    assert [r.agree for r in judged.rows] == [False] * len(table.rows), [r.judgement.reason for r in judged.rows]
    assert not judged.confirms


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
@pytest.mark.parametrize("seed", [0, 1])
def test_no_flipped_verdict_agrees_on_any_single_seed(path: Path, seed: int) -> None:
    """One seed alone stalls sometimes (the intrinsic (2, 2) network's seed 0 at T = 32, 1.4e-2): its row is
    then no evidence either way, and neither it nor the rows it controls may count as a "yes"."""
    table = by_seed(committed(path), seed)
    statuses = [r.status for r in table.rows]
    for i in range(len(statuses)):
        flipped = statuses[:i] + [FLIP[statuses[i]]] + statuses[i + 1:]
        assert table.judged_again(flipped).rows[i].agree is not True
    assert all(r.agree is not True for r in table.judged_again([FLIP[s] for s in statuses]).rows)


def test_the_two_cases_the_old_rule_passed_now_disagree_or_are_not_judged() -> None:
    rule = TrendRule()
    # a (1, 1) row whose error rose 12.3x over T and stayed below the threshold: it learned the target
    risen = (Cell(8, 1, 1e-4), Cell(16, 1, 4e-4), Cell(32, 1, 1.23e-3))
    assert judge(rule, "infeasible", risen, None).agree is False
    # the committed intrinsic (2, 2) network of seed 0: 4.3e-4 at T = 8, 1.4e-2 at T = 32 (33x)
    intrinsic = by_seed(committed(ROOT / "results" / "confirm_intrinsic_dimension.json"), 0)
    decided = intrinsic.rows[0]
    assert decided.heads == (2, 2) and decided.cells[-1].nmse / decided.cells[0].nmse == pytest.approx(33, abs=0.5)
    flipped = intrinsic.judged_again(["infeasible", "infeasible", "infeasible"]).rows[0]
    assert flipped.agree is None and "no efficient row" in flipped.judgement.reason
    # and beside it, the rows it would control are not judged: it failed its own test
    seed0 = intrinsic.judged_again()
    assert seed0.rows[0].agree is False
    assert [r.agree for r in seed0.rows[1:]] == [None, None]
    assert all("its control did not meet its own test" in r.judgement.reason for r in seed0.rows[1:])


def test_a_table_without_a_control_judges_nothing_and_confirms_nothing() -> None:
    triangle = committed(ROOT / "results" / "confirm_triangle_center.json")
    assert triangle.control is None and triangle.agreement == (0, 0) and not triangle.confirms
    assert "nothing judged" in str(triangle)
    assert triangle.recipe["n_train"] == {"8": 100000, "16": 100000, "32": 28303}   # the run before equal data


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_docs_quote_the_committed_tables(path: Path) -> None:
    assert committed(path).to_markdown() in (ROOT / "docs" / "reproduction.md").read_text()


def test_the_readme_names_a_budget_its_committed_run_judged_at() -> None:
    """README.md's confirm example names the budget that judges it; the committed run at that budget
    (``benchmarks/confirm_trend.py readme``) judged a row, and README.md quotes that run's figures."""
    doc = json.loads(README_RUN.read_text())
    run = Confirmation.from_json(doc["confirmation"])
    readme = (ROOT / "README.md").read_text()
    assert doc["command"].endswith(f"--budget {run.budget_s / 60:g}m") and f"--budget {run.budget_s / 60:g}m`" in readme
    good, total = run.agreement
    assert total >= 1 and good == total and run.rows[0].agree is True
    decided, one_layer = run.rows
    spread = max(c.nmse for c in decided.cells) / min(c.nmse for c in decided.cells)
    short = [c for c in one_layer.cells if c.short]
    quoted = (f"trained every model {run.recipe['steps']} steps", f"{spread:.1f}x across T",
              *(f"cut to {c.steps} steps ({c.steps / c.planned_steps:.0%}" for c in short))
    for text in quoted:
        assert text.replace("%", " %") in readme, text
    flipped = run.judged_again(["infeasible", "feasible"])
    assert [r.agree for r in flipped.rows] == [False, None if short else False]
