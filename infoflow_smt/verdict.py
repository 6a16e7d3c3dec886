"""What a decision returns: a status, the best exponent, a witness or an explanation, and statistics."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import sympy


class Status(enum.Enum):
    FEASIBLE = "feasible"      # a witness program with a cost exponent bounded in T exists (and was replayed)
    INFEASIBLE = "infeasible"  # no such program: the explanation says why
    UNKNOWN = "unknown"        # the solver could not tell (timeout, resource limit); never read as infeasible

    @property
    def exit_code(self) -> int:
        return {Status.FEASIBLE: 0, Status.INFEASIBLE: 1, Status.UNKNOWN: 3}[self]


@dataclass(frozen=True)
class Reason:
    """One reason a target is out of reach, tied to the named solver constraint it came from."""

    constraint: str   # the name of the tracked constraint in the unsat core
    sentence: str     # the same, in words a reader of the paper follows

    def __str__(self) -> str:
        return self.sentence


@dataclass(frozen=True)
class Stats:
    seconds: float = 0.0
    solver_calls: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """The answer of ``decide``: never a bare bool.

    ``exponent`` is the smallest cost exponent reachable (a sympy expression in ``T``, ``oo`` when no program
    exists at any cost); ``witness`` is the program reaching it when the status is FEASIBLE, and, when the
    status is INFEASIBLE, the cheapest (inefficient) program found, if any, is in ``best_program``.
    """

    status: Status
    target: Any
    architecture: Any
    exponent: sympy.Expr
    witness: Any = None
    explanation: tuple[Reason, ...] = ()
    stats: Stats = Stats()
    best_program: Any = None
    seq_len: int | None = None
    reason_unknown: str | None = None

    @property
    def feasible(self) -> bool:
        return self.status is Status.FEASIBLE

    def __str__(self) -> str:
        lines = [f"{self.status.value}: {self.target} with {self.architecture}"]
        lines.append(f"  best cost exponent: {self.exponent}")
        if self.witness is not None:
            lines.append("  witness:")
            lines.extend("    " + line for line in str(self.witness).splitlines())
        if self.witness is None and self.best_program is not None:
            lines.append("  cheapest program (not efficient):")
            lines.extend("    " + line for line in str(self.best_program).splitlines())
        for reason in self.explanation:
            lines.append(f"  - {reason}")
        if self.reason_unknown:
            lines.append(f"  solver reason: {self.reason_unknown}")
        return "\n".join(lines)
