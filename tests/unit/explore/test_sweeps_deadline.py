"""A sweep's deadlines: no question starts once the whole deadline has passed (the cells left are unknown at
once), and each cell gets a deadline of its own (``cell_timeout``, or a fair share of the whole), so one hard
cell cannot starve the others; an unknown cell names the seconds it had."""
from __future__ import annotations

import time

import pytest

import infoflow_smt as ifs
from infoflow_smt.explore import sweeps
from infoflow_smt.report.verdict import Status


def test_no_cell_is_asked_past_the_deadline(monkeypatch):
    asked = []
    decide = sweeps.Questions.decide
    monkeypatch.setattr(sweeps.Questions, "decide", lambda self, arch, deadline: asked.append(arch)
                        or decide(self, arch, deadline))
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2, 3) for h in (1, 2, 3)]
    job = sweeps._Job(ifs.catalogue.parse_spec("intrinsic_dimension:D=3"), "intrinsic_dimension:D=3", grid,
                      {"decode_law": "seed", "seq_len": None, "samples": 8}, None,
                      deadlines=sweeps.CellDeadlines(time.time() - 1, None))
    cells = sweeps._run_job(job)
    assert asked == [] and all(c.status is Status.UNKNOWN and c.reason_unknown == sweeps._LATE for c in cells)


def test_a_sweep_cut_short_says_so_and_keeps_nothing(tmp_path):
    cache = tmp_path / "cache.jsonl"
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    result = ifs.sweep(["intrinsic_dimension:D=10"], grid, timeout=1e-6, cache=cache, workers=1)
    assert result.undecided == len(grid) and not result.to_json()["complete"]
    assert not cache.exists() or cache.read_text() == ""


# ---- a deadline per cell (issue 39, item 4) ---------------------------------------------------------------------
# 32 subset selections on two layers with positions: more than a second to encode and solve on the 2-core
# machine (unknown at 5 s), while one layer answers "no" at once; max_retrieval is decided in a fraction of a
# second. Should the solver ever answer the hard cells in a second, these tests need a harder question.
HARD = " + ".join(f"min(f{i}(x[t]) for t in S{i})" for i in range(1, 33))
GRID = [ifs.Architecture(heads=(h,) * L, input_dim=2, positional=True) for L in (1, 2) for h in (1, 2)]


def _easy_decided_hard_unknown(result, most: float) -> list:
    easy = [c for c in result.cells if c.target == "max_retrieval"]
    assert len(easy) == 4 and all(c.status is Status.FEASIBLE for c in easy), result
    hard = [c for c in result.cells if c.target == HARD and c.architecture.layers == 2]
    assert hard and all(c.status is Status.UNKNOWN and c.ran_out for c in hard), result
    assert all(0 < c.allowed <= most + 1e-9 for c in hard), [c.allowed for c in hard]
    return hard


def test_a_deadline_per_cell_lets_the_easy_cells_be_decided_after_a_hard_one():
    """The hard target runs first, in the same process: one deadline for the whole sweep let it take all."""
    result = ifs.sweep([HARD, "max_retrieval"], GRID, cell_timeout=1, cache=False, workers=1)
    hard = _easy_decided_hard_unknown(result, 1.0)
    assert all(c.allowed == 1.0 and c.to_json()["allowed_seconds"] == 1.0 for c in hard)
    assert "unknown after 1 s allowed" in str(result) and "--cell-timeout SECONDS above 1" in result.gap()


def test_without_a_deadline_per_cell_the_whole_one_is_shared():
    """The default rule: the hard cells get their fair share of the 4 s, and the easy target still gets its."""
    started = time.time()
    result = ifs.sweep([HARD, "max_retrieval"], GRID, timeout=4, cache=False, workers=1)
    _easy_decided_hard_unknown(result, 4.0)
    assert time.time() - started < 4 + 2


def test_a_cell_that_ran_out_of_its_share_is_asked_again_with_what_is_left(monkeypatch):
    """Under fair shares, a cell cut short is asked once more at the end, with more time, and its time in all
    is both questions' (the first answer here is cut at a millisecond, as a hard question would be)."""
    asked, decide = [], sweeps.Questions.decide
    first = ifs.Architecture(heads=(2,), input_dim=2)

    def cut_once(self, arch, deadline):
        asked.append((arch, deadline.seconds))
        cut = arch == first and sum(a == first for a, _ in asked) == 1
        return decide(self, arch, sweeps.Deadline(1e-6) if cut else deadline)
    monkeypatch.setattr(sweeps.Questions, "decide", cut_once)
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    result = ifs.sweep(["min_pairwise_dot"], grid, timeout=30, cache=False, workers=1)
    times = [s for a, s in asked if a == first]
    assert len(times) == 2 and times[1] > times[0], asked
    cell = next(c for c in result.cells if c.architecture.heads == (2,))
    assert cell.status is Status.INFEASIBLE and not cell.inferred and abs(cell.allowed - sum(times)) < 1e-6
    assert result.undecided == 0


def test_a_sweep_with_a_deadline_per_cell_alone_has_no_whole_deadline():
    from infoflow_smt.explore import cell_deadlines
    assert cell_deadlines.whole_end(0.0, None, 5.0) == float("inf")
    assert cell_deadlines.whole_end(0.0, None, None) == 60.0 and cell_deadlines.whole_end(0.0, 3, 5.0) == 3.0
    assert cell_deadlines.CellDeadlines(float("inf"), 5.0).seconds(100) == 5.0


@pytest.mark.parametrize("value", [0, -1, "abc", float("nan"), float("inf"), True, 1e306])
def test_a_bad_deadline_per_cell_is_refused_before_any_work(value):
    with pytest.raises(ifs.InvalidSpecError, match=r"cell_timeout must be a positive number of seconds"):
        ifs.sweep(["max_retrieval"], GRID, cell_timeout=value, cache=False, workers=1)
