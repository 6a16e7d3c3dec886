"""The three answers every question can get: a closed vocabulary shared by the solver's verdicts, brute force,
sweeps and claims (the data layer holds it, so the checkers under verify/ can answer in it too)."""
from __future__ import annotations

import enum


class Status(enum.Enum):
    FEASIBLE = "feasible"      # a witness program with a cost exponent bounded in T exists (and was replayed)
    INFEASIBLE = "infeasible"  # no such program: the explanation says why
    UNKNOWN = "unknown"        # the solver could not tell (timeout, resource limit); never read as infeasible

    @property
    def exit_code(self) -> int:
        return {Status.FEASIBLE: 0, Status.INFEASIBLE: 1, Status.UNKNOWN: 3}[self]
