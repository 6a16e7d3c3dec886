"""The three answers: one enum for every answer type (Verdict, brute force, sweep cells, claims)."""
from __future__ import annotations

import infoflow_smt as ifs
from infoflow_smt.model.status import Status
from infoflow_smt.report import verdict


def test_one_status_enum_everywhere():
    assert ifs.Status is Status is verdict.Status
    assert [s.value for s in Status] == ["feasible", "infeasible", "unknown"]


def test_exit_codes_never_read_unknown_as_infeasible():
    assert (Status.FEASIBLE.exit_code, Status.INFEASIBLE.exit_code, Status.UNKNOWN.exit_code) == (0, 1, 3)
