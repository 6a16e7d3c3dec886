"""Command line: ``python -m experiments run|validate|report``.

  python -m experiments run --profile cpu [--results DIR] [--device cpu|cuda] [--threads N] [--workers N]
                                    [--label-workers N]
  python -m experiments validate --profile smoke [--target SPEC --heads 2,2 --embed-dim 24 --input-dim 4
                                                  --seq-len 8] [--results DIR]
  python -m experiments report --profile cpu [--results DIR] [--json] [--plots DIR] [--markdown FILE]

Each command is a function returning an exit code. Bad input (unknown profile, unknown target spec,
malformed option) prints one line on stderr and exits 2, without a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn


class BadInput(Exception):
    """A user error: reported in one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage + message; we want one line
        raise BadInput(message)


def _heads(text: str) -> tuple[int, ...]:
    try:
        heads = tuple(int(h) for h in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--heads wants comma-separated integers, got {text!r}") from None
    return heads


def cmd_run(args: argparse.Namespace) -> int:
    """Train every unfinished run of the profile into <results>/<profile>.sqlite."""
    from .run import run_profile

    summary = run_profile(args.profile, args.results, device=args.device, threads=args.threads,
                          progress=not args.quiet, workers=args.workers, label_workers=args.label_workers)
    print(f"profile {summary.profile}: trained {summary.trained} runs, skipped {summary.skipped} finished, "
          f"{summary.wall_s:.1f} s -> {summary.path}")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    """Decide and train; print the agreement table(s)."""
    from .profiles import get_profile
    from .validate import validate, validate_table

    prof = get_profile(args.profile)
    if args.target:
        import infoflow_smt as ifs

        if not args.heads:
            raise BadInput("--target needs --heads (one or more, e.g. --heads 1 --heads 2)")
        archs = [ifs.Architecture(heads=h, embed_dim=args.embed_dim, input_dim=args.input_dim,
                                  positional=args.positional) for h in args.heads]
        print(validate(args.target, archs, args.seq_len, prof, device=args.device, results_dir=args.results))
        return 0
    for table in prof.tables:
        for T in table.seq_lens:
            print(validate_table(table, T, prof, device=args.device, results_dir=args.results))
            print()
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    """Print the profile's table (or one JSON document), the transition checks; write plots."""
    from . import report
    from .profiles import get_profile
    from .store import ResultStore, store_path

    prof = get_profile(args.profile)
    path = store_path(args.results, prof.name)
    if not os.path.exists(path):
        raise BadInput(f"no results for profile {prof.name!r} at {path}; run it first")
    records = ResultStore(path).runs(prof.name)
    rows = report.summarize(records)
    plot_dir = args.plots or os.path.join(args.results, f"{prof.name}_plots")
    plots = report.plot(rows, plot_dir) if not args.no_plots else []
    if args.markdown:
        report.write_markdown(rows, records, prof.name, args.markdown)
    if args.json:
        print(report.to_json(rows))
        return 0
    print(report.format_table(rows))
    print(f"\nhardware: {report.hardware_line(records)}")
    for ok, text in report.run_checks(rows):
        print(f"{'holds' if ok else 'FAILS'}: {text}")
    for p in plots:
        print(f"plot: {p}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m experiments", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--profile", default="smoke", help="smoke | cpu | paper")
    common.add_argument("--results", default="results",
                        help="directory of <profile>.sqlite (default results/)")
    common.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when present")
    p = sub.add_parser("run", parents=[common], help=cmd_run.__doc__)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: usable cores)")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel job processes (default: one per CPU core on cpu, 1 on cuda)")
    p.add_argument("--label-workers", type=int, default=1,
                   help="processes evaluating each dataset's labels (O(T^3) targets at large T)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("validate", parents=[common], help=cmd_validate.__doc__)
    p.add_argument("--target",
                   help="catalogue spec or target text (ad-hoc validation instead of the profile)")
    p.add_argument("--heads", type=_heads, action="append", help="e.g. 2,2; repeat for several architectures")
    p.add_argument("--embed-dim", type=int, default=32)
    p.add_argument("--input-dim", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=8)
    p.add_argument("--positional", action="store_true")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("report", parents=[common], help=cmd_report.__doc__)
    p.add_argument("--json", action="store_true", help="print one JSON document (a list of configurations)")
    p.add_argument("--plots", default=None, help="plot directory (default <results>/<profile>_plots)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--markdown", default=None, help="also write the report as Markdown to this file")
    p.set_defaults(func=cmd_report)
    return parser


def _check_inputs(args: argparse.Namespace) -> None:
    """Reject bad input before any work starts (so a later KeyError is a bug, not a user error)."""
    from .profiles import get_profile

    try:
        get_profile(args.profile)
    except KeyError as exc:
        raise BadInput(exc.args[0]) from None
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise BadInput("--device cuda requested but no CUDA device is available")
    if getattr(args, "target", None):
        from .data import resolve_target

        try:
            resolve_target(args.target)
        except (KeyError, ValueError) as exc:  # InvalidSpecError is a ValueError
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            raise BadInput(f"unknown target {args.target!r}: {' '.join(str(message).split())}") from None


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        _check_inputs(args)
        return args.func(args)
    except BadInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
