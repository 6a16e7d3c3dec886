"""Command line: ``python -m proofs [--all | NAME ...] [--json] [--report FILE] [--explain]``.

With no name (or ``--all``) every proof runs. The default output is one line per proof (name, holds,
seconds) followed by its evidence; ``--json`` prints one JSON document instead (schema: ``proofs.render``);
``--report FILE`` also writes a Markdown report; ``--timeout S`` is one deadline for the whole run. Exit
codes: 0 when every requested proof holds, 1 when one does not, 3 when none is disproved but one is unknown
(a question ran out of time: the text marks those questions UNKNOWN and the summary names the proof, the JSON
lists them under ``undecided``), 2 on bad input (an unknown proof name, a malformed option, a report path whose folder does
not exist, a FIFO or a link), reported in one line on stderr, without a traceback; 4 on a bug (one line, the
traceback under ``--debug``); 130 on Ctrl-C. A reader that stops early (``| head``) leaves the exit code as it
was (``infoflow_smt.command``).

``main`` is a plain function returning the exit code, so ``infoflow prove`` can call it.

>>> main(["no_such_proof"])
2
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import proofs
from infoflow_smt.command import SECONDS, BadInput, Exit, Parser, answer
from infoflow_smt.files import output_file, write_atomic
from infoflow_smt.words import printable

from . import harness, render

PROG = "python -m proofs"


def _parser(prog: str = PROG) -> argparse.ArgumentParser:
    parser = Parser(prog=prog,
                    description="Decide the known results of the InfoFlow papers (and of the literature) inside the "
                                "model with infoflow_smt. "
                                "Exit 0 when every requested proof holds, 1 when one does not, 2 on bad input, 3 "
                                "when none is disproved but one is unknown.")
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"proofs to run: {', '.join(proofs.ALL)}")
    parser.add_argument("--all", action="store_true", help="run every proof (the default without NAME)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--report", metavar="FILE", help="also write a Markdown report to FILE")
    parser.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                        help="one deadline for the whole run (default: each question its own, 60 s); what is "
                             "unfinished then is unknown (exit 3), never disproved")
    parser.add_argument("--explain", action="store_true",
                        help="print the solver's reasons under every inefficient answer, not only mismatches")
    return parser


def _requested(args: argparse.Namespace) -> list[str]:
    if args.all and args.names:
        raise BadInput(f"give --all or proof names, not both (got --all and {printable(', '.join(args.names))})")
    try:
        proofs.check_names(args.names)
    except proofs.UnknownProofError as err:
        raise BadInput(str(err)) from None
    return list(dict.fromkeys(args.names)) or list(proofs.ALL)  # keep order, drop repeats


def _report_path(args: argparse.Namespace) -> Path | None:
    """Checked before any proof runs, so a typo does not cost a full run (infoflow_smt.files.output_file: not a
    folder, a FIFO, a link, nor in a missing folder)."""
    return None if args.report is None else output_file(args.report, "--report")


def run(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """Parse ``argv``, run the proofs, print them; raises ``BadInput`` for bad input."""
    args = _parser(prog).parse_args(argv)
    names = _requested(args)
    report = _report_path(args)
    with harness.within(args.timeout):
        results = [proofs.ALL[name]() for name in names]
    if args.json:
        print(render.json_document(results))
    else:
        print("\n".join(render.text(results, explain=args.explain)))
    if report is not None:
        write_atomic(report, render.markdown(results), "--report")
    if all(result.holds for result in results):
        return Exit.OK
    return Exit.UNKNOWN if all(result.holds or result.unknown for result in results) else Exit.NO


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command: its exit code, every error one line on stderr (infoflow_smt.command.answer). ``prog``: the
    command as the user typed it (``infoflow prove``), so an error names what they ran."""
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    return answer(lambda: run(argv, prog), prog, debug=debug)
