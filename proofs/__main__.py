"""``python -m proofs``: see ``proofs.cli``; run as every command of the project is (``infoflow_smt.command``)."""
from __future__ import annotations

from infoflow_smt.command import console

from .cli import PROG, main

console(main, PROG)
