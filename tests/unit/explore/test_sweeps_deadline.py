"""A sweep asks no question once its deadline has passed: the cells left are unknown at once (a 2-worker sweep
with --timeout 1 went on asking each of them with a millisecond's deadline)."""
from __future__ import annotations

import time

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
                      {"decode_law": "seed", "seq_len": None, "samples": 8}, None, end=time.time() - 1)
    cells = sweeps._run_job(job)
    assert asked == [] and all(c.status is Status.UNKNOWN and c.reason_unknown == sweeps._LATE for c in cells)


def test_a_sweep_cut_short_says_so_and_keeps_nothing(tmp_path):
    cache = tmp_path / "cache.jsonl"
    grid = [ifs.Architecture(heads=(h,) * L, input_dim=2) for L in (1, 2) for h in (1, 2)]
    result = ifs.sweep(["intrinsic_dimension:D=10"], grid, timeout=1e-6, cache=cache, workers=1)
    assert result.undecided == len(grid) and not result.to_json()["complete"]
    assert not cache.exists() or cache.read_text() == ""
