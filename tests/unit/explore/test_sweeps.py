"""Sweeps: inference by monotonicity agrees with deciding every cell, and the cache makes a rerun decide
nothing (decide_all's frontiers and bounds: test_frontier.py)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import infoflow_smt as ifs

GRID = [ifs.Architecture(heads=(h,) * L, embed_dim=32, input_dim=2) for L in (1, 2, 3) for h in (1, 2, 3, 4)]
TARGETS = ["intrinsic_dimension:D=3", "linear_max_sum:D=3", "min_pairwise_dot", "kth_largest:k=2",
           "max(f1(x[t]) + max(f2(x[s]) for s in T) for t in T)"]


@pytest.fixture(scope="module")
def inferred():
    return ifs.sweep(TARGETS, GRID, cache=False, workers=2)


def test_inferred_cells_agree_with_deciding_every_cell(inferred):
    every = ifs.sweep(TARGETS, GRID, cache=False, workers=2, infer=False)
    assert every.inferred == 0 and inferred.inferred > 0
    for a, b in zip(inferred.cells, every.cells):
        assert a.status is b.status, (a, b)
        if a.inferred and a.bound == "at most":
            assert ifs.cost.asymptotic_key(__import__("sympy").sympify(b.exponent)) <= ifs.cost.asymptotic_key(
                __import__("sympy").sympify(a.exponent))
        if a.inferred and a.bound == "at least":  # fewer heads are wider: only sound across layers alone
            assert ifs.cost.asymptotic_key(__import__("sympy").sympify(b.exponent)) >= ifs.cost.asymptotic_key(
                __import__("sympy").sympify(a.exponent)), (a, b)
        if not a.inferred:
            assert a.exponent == b.exponent


def test_every_decided_feasible_cell_has_a_replayed_witness(inferred):
    for cell in inferred.cells:
        if cell.status is ifs.Status.FEASIBLE and not cell.inferred:
            target = ifs.catalogue.parse_spec(cell.target)
            assert ifs.check(cell.witness, target, cell.architecture, seq_len=10, samples=4, seed=3).ok


def test_the_phase_diagram_of_intrinsic_dimension_4():
    grid = [ifs.Architecture(heads=(h,) * L, embed_dim=32, input_dim=2) for L in range(1, 7) for h in range(1, 9)]
    result = ifs.sweep(["intrinsic_dimension:D=4"], grid, cache=False, workers=1)
    feasible = {(c.architecture.layers, c.architecture.heads[0]) for c in result.cells
                if c.status is ifs.Status.FEASIBLE}
    minimal = {(L, h) for L, h in feasible if (L - 1, h) not in feasible and (L, h - 1) not in feasible}
    assert minimal == {(2, 4), (3, 2), (5, 1)}
    assert result.decided + result.inferred == 48 and result.decided <= 6 + 8


def test_an_interrupted_sweep_reruns_nothing_finished(tmp_path: Path):
    cache = tmp_path / "cells.jsonl"
    script = (f"import infoflow_smt as ifs\n"
              f"grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2, 3) for h in (1, 2, 3)]\n"
              f"ifs.sweep({TARGETS!r}, grid, cache={str(cache)!r}, workers=1, infer=False)\n")
    process = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 120
    while time.time() < deadline and (not cache.exists() or len(cache.read_text().splitlines()) < 5):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done = len(cache.read_text().splitlines())
    assert done >= 5
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2, 3) for h in (1, 2, 3)]
    rerun = ifs.sweep(TARGETS, grid, cache=cache, workers=1, infer=False)
    fresh = ifs.sweep(TARGETS, grid, cache=False, workers=1, infer=False)
    assert rerun.cached >= done - 1 and rerun.decided == len(grid) * len(TARGETS) - rerun.cached
    assert [(c.status, c.exponent) for c in rerun.cells] == [(c.status, c.exponent) for c in fresh.cells]
    again = ifs.sweep(TARGETS, grid, cache=cache, workers=1, infer=False)
    assert again.decided == 0 and again.cached == len(grid) * len(TARGETS)


def test_a_corrupt_cache_line_is_skipped(tmp_path: Path):
    cache = tmp_path / "cells.jsonl"
    cache.write_text('{"model": "2", "key": "x", "status": "nonsense"}\nnot json\n{"truncated": \n')
    result = ifs.sweep(["max_retrieval"], [ifs.Architecture(heads=(1,))], cache=cache, workers=1)
    assert result.cells[0].status is ifs.Status.FEASIBLE and result.decided == 1
    assert json.loads(cache.read_text().splitlines()[-1])["status"] == "feasible"


def test_sweep_names_bad_input():
    with pytest.raises(ifs.InvalidSpecError, match="workers must be an integer >= 1, got 0"):
        ifs.sweep(["max_retrieval"], GRID, workers=0)
    with pytest.raises(ifs.InvalidSpecError, match="backend must be 'local' or 'ray'"):
        ifs.sweep(["max_retrieval"], GRID, backend="spark")
    with pytest.raises(ifs.InvalidSpecError, match="must be ifs.Architecture"):
        ifs.sweep(["max_retrieval"], [(1, 1)])


def test_an_unknown_cell_is_not_counted_as_decided():
    from infoflow_smt.explore.sweeps import Cell, Sweep
    arch = ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2)
    cells = [Cell("t", arch, ifs.Status.UNKNOWN, "", "unknown"), Cell("t", arch, ifs.Status.INFEASIBLE, "T", "exact"),
             Cell("t", arch, ifs.Status.FEASIBLE, "1", "at most", inferred_from=(2,))]
    counts = Sweep(cells)
    assert (counts.decided, counts.inferred, counts.undecided) == (1, 1, 1)
    assert counts.to_json()["decided"] == 1 and str(counts).startswith("3 cells: 1 decided, 1 inferred")


def test_a_sweep_refuses_the_last_position_readout():
    with pytest.raises(ifs.InvalidSpecError, match="readout='last' is not supported by sweeps yet"):
        ifs.sweep(["max_retrieval"], [ifs.Architecture(heads=(1,), readout="last")])


# ---- under a causal mask: each cell asks what decide asks (the masked spelling) ----------------------------------
CAUSAL_TARGETS = ["min_pairwise_dot", "min(bilinear(A1, x[s], x[t]) for s in T for t in T)",
                  "max(f2(x[s], x[t]) for s in T for t in range(1, s+1))", "linear_max_sum:D=4",
                  # selections over subsets: prefix forms of these the model does not hold, a "no" left open
                  "max(f1(x[t]) for t in S1) + max(f2(x[t]) for t in S2) + max(f3(x[t]) for t in S3)"]
CAUSAL_GRID = [ifs.Architecture(heads=heads, embed_dim=32, input_dim=1, causal=True, positional=True)
               for heads in [(1,), (2,), (4,), (1, 1), (2, 1), (1, 2), (2, 2), (1, 1, 1), (2, 2, 2)]]


@pytest.fixture(scope="module")
def causal_sweep():
    return ifs.sweep(CAUSAL_TARGETS, CAUSAL_GRID, cache=False, workers=1)


def test_a_causal_sweep_gives_the_statuses_decide_gives_cell_by_cell(causal_sweep):
    assert causal_sweep.inferred > 0 and {c.status for c in causal_sweep.cells} == set(ifs.Status)
    for cell in causal_sweep.cells:
        verdict = ifs.decide(cell.target, cell.architecture)
        assert cell.status is verdict.status, (cell, verdict)
        if not cell.inferred and cell.status is not ifs.Status.UNKNOWN:
            assert cell.exponent == str(verdict.exponent), (cell, verdict)


def test_a_no_the_mask_leaves_open_is_said_to_be_so(causal_sweep):
    gap = causal_sweep.gap()
    assert causal_sweep.undecided and "infeasible is not established" in gap and "longer --timeout" not in gap
    unknown = [c for c in causal_sweep.cells if c.status is ifs.Status.UNKNOWN]
    assert all(c.to_json()["reason_unknown"].startswith("under the causal mask") for c in unknown)


def test_masked_and_unmasked_cells_of_one_sweep_are_asked_apart(tmp_path: Path):
    plain = [ifs.Architecture(heads=h, embed_dim=32, input_dim=2) for h in [(1,), (1, 1), (2, 1)]]
    masked = [ifs.Architecture(heads=a.heads, embed_dim=32, input_dim=2, causal=True) for a in plain]
    target = "min(bilinear(A1, x[s], x[t]) for s in T for t in T)"   # (1, 1) only without the mask
    mixed = ifs.sweep([target], [a for pair in zip(plain, masked) for a in pair], cache=tmp_path / "c.jsonl",
                      workers=1)
    assert [c.architecture for c in mixed.cells] == [a for pair in zip(plain, masked) for a in pair]
    assert [c.to_json()["causal"] for c in mixed.cells] == [False, True] * 3
    statuses = [c.status.value for c in mixed.cells]
    assert statuses == ["infeasible", "infeasible", "feasible", "infeasible", "feasible", "feasible"]
    again = ifs.sweep([target], masked, cache=tmp_path / "c.jsonl", workers=1, infer=False)
    decided = [c for c in mixed.cells[1::2] if not c.inferred]   # the masked cells the mixed sweep cached
    assert again.cached == len(decided) >= 1
    fresh = ifs.sweep([target], masked, cache=tmp_path / "other.jsonl", workers=1, infer=False)
    assert [c.status for c in again.cells] == [c.status for c in fresh.cells] == [c.status for c in mixed.cells[1::2]]


def test_a_masked_key_is_not_the_unmasked_one():
    from infoflow_smt.explore.sweeps import _key
    target, settings = ifs.parse_target("max(f1(x[t]) for t in T)"), {"decode_law": "seed", "seq_len": None,
                                                                        "samples": 16}
    arch = ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2)
    masked = ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2, causal=True)
    assert _key(target, arch, settings) != _key(target, masked, settings)


def test_a_sweep_refuses_what_decide_refuses_under_the_mask():
    with pytest.raises(ifs.InvalidSpecError, match="under a causal mask"):
        ifs.sweep(["max(F0(x[s], x[t], x[u]) for s in T for t in T for u in T)"],
                  [ifs.Architecture(heads=(1,), input_dim=2, causal=True)], cache=False, workers=1)
