"""The command ``infoflow`` hands over to the proofs: ``infoflow prove ...`` (``proofs.cli.main``).

``infoflow_smt.cli`` imports this module when the command is asked for, never on ``import infoflow_smt``, by an
import statement the contracts in pyproject.toml see: the command line sits above the proofs, and the proofs
above the rest of infoflow_smt.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from proofs.cli import main as prove


class Command(Protocol):
    """A command's ``main``: its exit code for ``argv``; ``prog`` is the command as the user typed it."""

    def __call__(self, argv: Sequence[str] | None = None, prog: str = ...) -> int: ...


COMMANDS: dict[str, Command] = {"prove": prove}
