"""The project's exception tree: one root, input errors are also ValueErrors."""
from __future__ import annotations

from dataclasses import dataclass


class InfoflowError(Exception):
    """Root of every error infoflow_smt raises on purpose."""


class Terminated(BaseException):
    """SIGTERM, raised in the main thread by the command's handler (a BaseException, as KeyboardInterrupt is:
    no ``except Exception`` stops it)."""


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


class CompileRefusal(InfoflowError):
    """A verdict whose witness cannot be written as transformer weights (``experiments.compile``).

    ``reason`` is the class of the refusal, one of ``REASONS`` (``"score_form"``: a score that is not a sum of
    products of a host feature and a candidate feature; ``"head_width"``: a head too narrow for its query,
    key or value; ``"residual_width"``: a residual stream too narrow for its slots; ``"mode"``: an operation
    the compiler does not write; ``"unheld"``: a fact a position reads that the compiled stream does not carry
    to it; ``"infeasible"``: the verdict has no witness; ``"unknown"``: the solver did not decide the architecture,
    so there is no witness and no "no" either). ``term`` names what refused.
    """

    REASONS = ("score_form", "head_width", "residual_width", "mode", "unheld", "infeasible", "unknown")

    def __init__(self, reason: str, term: str, message: str):
        if reason not in self.REASONS:
            raise ValueError(f"unknown refusal reason {reason!r}")
        self.reason = reason
        self.term = term
        super().__init__(f"cannot compile ({reason}): {message}")

    @classmethod
    def undecided(cls, term: str) -> CompileRefusal:
        """The refusal of an unknown verdict: it has no witness, and it is no "no" either."""
        return cls("unknown", term, "the solver did not decide this architecture by its deadline, so there is no "
                                    "witness to compile (decide it again with a longer timeout)")
