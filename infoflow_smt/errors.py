"""The project's exception tree: one root, input errors are also ValueErrors."""
from __future__ import annotations

from dataclasses import dataclass


class InfoflowError(Exception):
    """Root of every error infoflow_smt raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input: what, and where (a character offset into the text, if any)."""

    message: str
    position: int | None = None

    def __str__(self) -> str:
        return self.message if self.position is None else f"at column {self.position}: {self.message}"


class InvalidSpecError(InfoflowError, ValueError):
    """A target text or an architecture is malformed; lists every problem found, not just the first."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...] | str, subject: str | None = None):
        if isinstance(problems, str):
            problems = (Problem(problems),)
        self.problems: tuple[Problem, ...] = tuple(problems)
        self.subject = subject
        head = f"invalid {subject}: " if subject else "invalid specification: "
        super().__init__(head + "; ".join(str(p) for p in self.problems))


class WitnessCheckError(InfoflowError):
    """A witness program the solver produced failed its replay by the interpreter: always a bug."""

    def __init__(self, message: str, report=None):
        self.report = report
        super().__init__(message)


class SolverUnknownError(InfoflowError):
    """The solver could not decide, and the caller asked for a definite answer."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"solver returned unknown: {reason}")
