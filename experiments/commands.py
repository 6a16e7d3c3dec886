"""The commands ``infoflow`` hands over to the experiments: ``infoflow experiment`` and ``infoflow compile``.

Each is ``main(argv, prog) -> exit code`` with a parser of its own (``prog``: the command as the user typed
it, which its usage lines and errors name). ``infoflow_smt.cli`` imports this module when one of them is
asked for, never on ``import infoflow_smt``, by an import statement the contracts in pyproject.toml see: the
command line sits above the experiments, and the experiments above the rest of infoflow_smt. Importing it
loads no torch: each command imports what it needs when it runs.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from experiments.__main__ import main as experiment
from experiments.compilation.command import main as compile_witness


class Command(Protocol):
    """A command's ``main``: its exit code for ``argv``; ``prog`` is the command as the user typed it."""

    def __call__(self, argv: Sequence[str] | None = None, prog: str = ...) -> int: ...


COMMANDS: dict[str, Command] = {"experiment": experiment, "compile": compile_witness}
