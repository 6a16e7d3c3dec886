"""Command line: ``python -m proofs [--all | NAME ...] [--json] [--report FILE] [--explain]``.

With no name (or ``--all``) every proof runs. The default output is one line per proof (name, holds,
seconds) followed by its evidence; ``--json`` prints one JSON document instead (schema: ``proofs.render``);
``--report FILE`` also writes a Markdown report; ``--timeout S`` is one deadline for the whole run. Exit
codes: 0 when every requested proof holds, 1 when one does not, 3 when none is disproved but one is unknown
(a question ran out of time: the text marks those questions UNKNOWN and the summary names the proof, the JSON
lists them under ``undecided``), 2 on bad input (an unknown proof name, a malformed option, a report path whose folder does
not exist), reported in one line on stderr, without a traceback.

``main`` is a plain function returning the exit code, so ``infoflow prove`` can call it.

>>> main(["no_such_proof"])
2
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import proofs
from infoflow_smt import InvalidSpecError

from . import harness, render


class BadInput(Exception):
    """A user error: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage and exits; we want one line and code 2
        raise BadInput(message)


PROG = "python -m proofs"


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = _Parser(prog=prog,
                     description="Decide the known results of the InfoFlow papers (and of the literature) inside the "
                                 "model with infoflow_smt. "
                                 "Exit 0 when every requested proof holds, 1 when one does not, 2 on bad input.")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"proofs to run: {', '.join(proofs.ALL)}")
    parser.add_argument("--all", action="store_true", help="run every proof (the default without NAME)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--report", metavar="FILE", help="also write a Markdown report to FILE")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="one deadline for the whole run (default: each question its own, 60 s); what is "
                             "unfinished then is unknown (exit 3), never disproved")
    parser.add_argument("--explain", action="store_true",
                        help="print the solver's reasons under every inefficient answer, not only mismatches")
    return parser


def _requested(args: argparse.Namespace) -> list[str]:
    if args.all and args.names:
        raise BadInput(f"give --all or proof names, not both (got --all and {', '.join(args.names)})")
    try:
        proofs.check_names(args.names)
    except proofs.UnknownProofError as err:
        raise BadInput(str(err)) from None
    return list(dict.fromkeys(args.names)) or list(proofs.ALL)  # keep order, drop repeats


def _report_path(args: argparse.Namespace) -> Path | None:
    """Checked before any proof runs, so a typo does not cost a full run."""
    if args.report is None:
        return None
    path = Path(args.report)
    if path.is_dir() or not path.parent.is_dir():
        raise BadInput(f"--report {args.report}: not a file in an existing folder")
    return path


def run(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Parse ``argv``, run the proofs, print them; raises ``BadInput`` for bad input."""
    args = _parser(prog).parse_args(argv)
    names = _requested(args)
    report = _report_path(args)
    try:
        with harness.within(args.timeout):
            results = [proofs.ALL[name]() for name in names]
    except InvalidSpecError as err:  # a timeout that is not a positive finite number
        raise BadInput(f"--timeout {args.timeout}: {err}") from None
    if args.json:
        print(render.json_document(results))
    else:
        print("\n".join(render.text(results, explain=args.explain)))
    if report is not None:
        try:
            report.write_text(render.markdown(results))
        except OSError as err:
            raise BadInput(f"--report {args.report}: {err.strerror or err}") from None
    if all(result.holds for result in results):
        return 0
    return 3 if all(result.holds or result.unknown for result in results) else 1


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command: its exit code (bad input: one line on stderr, code 2). ``prog``: the command as the user
    typed it (``infoflow prove``), so an error names what they ran."""
    try:
        return run(argv, prog)
    except BadInput as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        return 2
