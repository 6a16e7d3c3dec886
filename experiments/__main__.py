"""Command line: ``python -m experiments run|validate|report|confirm``.

  python -m experiments run --profile cpu [--results DIR] [--device cpu|cuda] [--threads N] [--workers N]
                                    [--label-workers N]
  python -m experiments validate --profile smoke [--target SPEC --heads 2,2 --embed-dim 24 --input-dim 4
                                                  --seq-len 8] [--results DIR]
  python -m experiments report --profile cpu [--results DIR] [--json] [--plots DIR] [--markdown FILE]
  python -m experiments compile TARGET --heads 2,2 [--beta 4,16,64,256] [--seq-len 8,32,128,512] [--json]
  python -m experiments confirm TARGET --heads 2,2 --embed-dim 16 --input-dim 4 [--seq-len 8,16,32]
                                    [--against 2 --against 1,1] [--budget 60s] [--threshold 1e-2] [--seeds N]
                                    [--workers N] [--json]

Each command is a function returning an exit code:
  0  done (report: every transition check holds; confirm: every judged row agrees)
  1  a failing check (report: a transition check FAILS; confirm: a row disagrees, or no row is judged)
  3  confirm: the solver could not decide the architecture (UNKNOWN: nothing is trained), or a neighbour
     (that row is not judged and the table says so)
  2  bad input, an unusable results store (corrupt, truncated, foreign) or an unwritable path:
     one line on stderr, no traceback
  130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM: one line; finished runs stay in the store and a rerun
     resumes
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNKNOWN, EXIT_INTERNAL, EXIT_SIGINT, EXIT_SIGTERM = 0, 1, 2, 3, 4, 130, 143
# the largest values the options take: each bounds what one run allocates (a network of width E on sequences
# of T tokens of dimension d, a thread or worker per unit) before anything is allocated
MAX_THREADS, MAX_WORKERS, MAX_WIDTH, MAX_INPUT, MAX_LENGTH, MAX_SEEDS = 256, 256, 4096, 1024, 4096, 64


class BadInput(Exception):
    """A user error: reported in one line, exit code 2."""


class Terminated(BaseException):
    """Raised in the main thread by the SIGTERM handler (a BaseException, like KeyboardInterrupt)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse prints usage + message; we want one line
        raise BadInput(message)


def _int_at_least(minimum: int, what: str, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        wanted = f"{what} wants an integer >= {minimum}" + (f" and <= {maximum}" if maximum else "")
        try:
            value = int(text) if len(text.strip()) <= 18 else None
        except ValueError:
            value = None
        if value is None:
            raise argparse.ArgumentTypeError(f"{wanted}, got {text[:40]!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{wanted}, got {value}")
        return value

    return parse


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a number > 0, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"wants a finite number > 0, got {text!r}")
    return value


def _heads(text: str, option: str = "--heads") -> tuple[int, ...]:
    try:
        if len(text) > 2000 or any(len(h.strip()) > 4 for h in text.split(",")):
            raise ValueError(text)
        heads = tuple(int(h) for h in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{option} wants comma-separated integers (at most 9999 each), got "
                                         f"{text[:40]!r}") from None
    if any(h < 1 for h in heads):
        raise argparse.ArgumentTypeError(f"{option} wants integers >= 1 (heads per layer), got {text!r}")
    return heads


def _against(text: str) -> tuple[int, ...]:
    return _heads(text, "--against")


def _seq_lens(text: str) -> tuple[int, ...]:
    parse = _int_at_least(2, "--seq-len", MAX_LENGTH)
    return tuple(sorted({parse(part.strip()) for part in text.split(",")}))


def cmd_run(args: argparse.Namespace) -> int:
    """Train every unfinished run of the profile into <results>/<profile>.sqlite."""
    from experiments.tables.run import run_profile

    summary = run_profile(args.profile, args.results, device=args.device, threads=args.threads,
                          progress=not args.quiet, workers=args.workers, label_workers=args.label_workers)
    print(f"profile {summary.profile}: trained {summary.trained} runs, skipped {summary.skipped} finished, "
          f"{summary.wall_s:.1f} s -> {summary.path}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    """Decide and train; print the agreement table(s)."""
    from experiments.tables.profiles import get_profile
    from experiments.tables.validation import table_views, validate, validate_table

    prof = get_profile(args.profile)
    if args.target:
        import infoflow_smt as ifs

        if not args.heads:
            raise BadInput("--target needs --heads (one or more, e.g. --heads 1 --heads 2)")
        archs = [ifs.Architecture(heads=h, embed_dim=args.embed_dim, input_dim=args.input_dim,
                                  positional=args.positional) for h in args.heads]
        print(validate(args.target, archs, args.seq_len, prof, device=args.device, results_dir=args.results))
        return EXIT_OK
    for table, T in table_views(prof):
        print(validate_table(table, T, prof, device=args.device, results_dir=args.results))
        print()
    return EXIT_OK


def cmd_report(args: argparse.Namespace) -> int:
    """Print the profile's table (or one JSON document), the transition checks; write plots."""
    from experiments.tables import summary
    from experiments.tables.profiles import get_profile
    from experiments.tables.run import current_keys
    from experiments.tables.store import ResultStore, store_path

    prof = get_profile(args.profile)
    path = store_path(args.results, prof.name)
    if not os.path.exists(path):
        raise BadInput(f"no results for profile {prof.name!r} at {path}; run it first")
    stored = ResultStore(path).runs(prof.name)
    current = current_keys(prof)
    records = [r for r in stored if r.key in current]
    if not records:
        raise BadInput(f"none of the {len(stored)} runs stored for profile {prof.name!r} at {path} has the "
                       f"profile's current configuration; run it first")
    if len(records) < len(stored):   # a changed recipe: its old runs would otherwise mix into the rows
        print(f"note: {len(stored) - len(records)} stored runs of an earlier configuration of profile "
              f"{prof.name!r} are left out", file=sys.stderr)
    rows = summary.summarize(records)
    plot_dir = args.plots or os.path.join(args.results, f"{prof.name}_plots")
    plots = summary.plot(rows, plot_dir, records) if not args.no_plots else []
    if args.markdown:
        summary.write_markdown(rows, records, prof, args.markdown, plots)
    checks = summary.run_checks(rows, prof.name)
    failed = any(not ok for ok, _ in checks)
    if args.json:
        print(summary.to_json(rows, prof, checks))
        return EXIT_FAILED if failed else EXIT_OK
    if prof.name == "smoke":
        print(summary.SMOKE_NOTE)
    print(summary.format_table(rows))
    print(f"\nhardware: {summary.hardware_line(records)}")
    for ok, text in checks:
        print(f"{'holds' if ok else 'FAILS'}: {text}")
    for p in plots:
        print(f"plot: {p}")
    return EXIT_FAILED if failed else EXIT_OK


def cmd_confirm(args: argparse.Namespace) -> int:
    """Decide TARGET on one architecture, train it and its neighbours within --budget, print the table."""
    import infoflow_smt as ifs
    from experiments.confirmation.confirming import confirm

    arch = ifs.Architecture(heads=args.heads, embed_dim=args.embed_dim, input_dim=args.input_dim,
                            positional=args.positional)
    one = args.seq_len[0] if args.seq_len and len(args.seq_len) == 1 else None
    verdict = ifs.decide(args.target, arch, seq_len=one)
    if verdict.status.value == "unknown":   # no prediction to set training against: say so, train nothing
        print(json.dumps(verdict.to_json(), indent=1) if args.json else
              f"{verdict}\n\nnothing to confirm: the solver could not decide this architecture (unknown)")
        return EXIT_UNKNOWN
    result = confirm(verdict, budget=args.budget, seq_len=args.seq_len, threshold=args.threshold,
                     device=args.device, threads=args.threads, workers=args.workers, seeds=args.seeds,
                     against=args.against or ())
    print(json.dumps(result.to_json(), indent=1) if args.json else f"{verdict}\n\n{result}")
    if not result.confirms:   # a row disagrees, or no row could be judged: nothing confirmed
        return EXIT_FAILED
    return EXIT_UNKNOWN if result.undecided else EXIT_OK


PROG = "python -m experiments"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The parser; ``prog`` is the command as the user typed it (``infoflow experiment`` through the infoflow
    command), which every usage line and the description name."""
    parser = _Parser(prog=prog, description=__doc__.split("\n\n")[0].replace(PROG, prog))
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--profile", default="smoke", help="smoke | cpu | depth | workers | causal | paper")
    common.add_argument("--results", default="results",
                        help="directory of <profile>.sqlite (default results/)")
    common.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda when present")
    p = sub.add_parser("run", parents=[common], help=cmd_run.__doc__)
    p.add_argument("--threads", type=_int_at_least(1, "--threads", MAX_THREADS), default=None,
                   help="torch CPU threads per process (default 1)")
    p.add_argument("--workers", type=_int_at_least(1, "--workers", MAX_WORKERS), default=None,
                   help="parallel job processes (default: one per CPU core on cpu, 1 on cuda)")
    p.add_argument("--label-workers", type=_int_at_least(1, "--label-workers", MAX_WORKERS), default=1,
                   help="processes evaluating each dataset's labels (O(T^3) targets at large T)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=cmd_run)
    p = sub.add_parser("validate", parents=[common], help=cmd_validate.__doc__)
    p.add_argument("--target",
                   help="catalogue spec or target text (ad-hoc validation instead of the profile)")
    p.add_argument("--heads", type=_heads, action="append", help="e.g. 2,2; repeat for several architectures")
    _arch_options(p)
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("report", parents=[common], help=cmd_report.__doc__)
    p.add_argument("--json", action="store_true", help="print one JSON document (configurations and checks)")
    p.add_argument("--plots", default=None, help="plot directory (default <results>/<profile>_plots)")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--markdown", default=None, help="also write the report as Markdown to this file")
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("confirm", help=cmd_confirm.__doc__)
    p.add_argument("target", help="catalogue spec (intrinsic_dimension:D=2) or target text")
    p.add_argument("--heads", type=_heads, required=True, help="heads per layer, e.g. 2,2")
    _arch_options(p, seq_len=None, lengths=True)
    p.add_argument("--against", type=_against, action="append",
                   help="another architecture to train beside the neighbours, e.g. 2; repeat for several")
    p.add_argument("--budget", default="60s", help="wall time for the training: 60, 60s, 2m (default 60s)")
    p.add_argument("--threshold", type=_positive_float, default=None,
                   help="efficient = NMSE below this, fixed before training (default 1e-2)")
    p.add_argument("--device", choices=("cpu", "cuda"), default=None)
    p.add_argument("--threads", type=_int_at_least(1, "--threads", MAX_THREADS), default=None)
    p.add_argument("--workers", type=_int_at_least(1, "--workers", MAX_WORKERS), default=None,
                   help="processes the training jobs run in (default: one per CPU core on cpu, 1 on cuda)")
    p.add_argument("--seeds", type=_int_at_least(1, "--seeds", MAX_SEEDS), default=1,
                   help="trainings per architecture and T; a cell's NMSE is their best (default 1)")
    p.add_argument("--json", action="store_true", help="print the table as one JSON document")
    p.set_defaults(func=cmd_confirm)
    return parser


def _arch_options(p: argparse.ArgumentParser, seq_len: int | None = 8, lengths: bool = False) -> None:
    p.add_argument("--embed-dim", type=_int_at_least(1, "--embed-dim", MAX_WIDTH), default=32)
    p.add_argument("--input-dim", type=_int_at_least(1, "--input-dim", MAX_INPUT), default=4)
    if lengths:   # confirm: several T, judged by the trend (default 8,16,32; one T cannot show a trend)
        p.add_argument("--seq-len", type=_seq_lens, default=seq_len,
                       help="one T or several, e.g. 8,16,32 (default: 8,16,32)")
    else:
        p.add_argument("--seq-len", type=_int_at_least(2, "--seq-len", MAX_LENGTH), default=seq_len)
    p.add_argument("--positional", action="store_true")


def _check_inputs(args: argparse.Namespace) -> None:
    """Reject bad input before any work starts (so a later KeyError is a bug, not a user error)."""
    from experiments.tables.profiles import get_profile

    if hasattr(args, "profile"):
        try:
            get_profile(args.profile)
        except KeyError as exc:
            raise BadInput(exc.args[0]) from None
        if os.path.exists(args.results) and not os.path.isdir(args.results):
            raise BadInput(f"--results {args.results} is a file, not a directory")
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise BadInput("--device cuda requested but no CUDA device is available")
    if getattr(args, "target", None):
        _check_target(args.target)
    if getattr(args, "threshold", None) is None and args.command == "confirm":
        from experiments.confirmation.trend import DEFAULT_THRESHOLD

        args.threshold = DEFAULT_THRESHOLD
    if args.command == "confirm":
        from experiments.confirmation.budget import parse_budget
        from experiments.confirmation.schedule import DEFAULT_SEQ_LENS, check_budget

        args.budget = parse_budget(args.budget)
        check_budget(args.budget, len(args.seq_len or DEFAULT_SEQ_LENS))
    for option in ("markdown", "plots"):
        if getattr(args, option, None):
            _check_writable(getattr(args, option), f"--{option}", directory=option == "plots")


def _check_target(target: str) -> None:
    from experiments.training.data import resolve_target

    try:
        resolve_target(target)
    except (KeyError, ValueError) as exc:  # InvalidSpecError is a ValueError
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        raise BadInput(f"unknown target {target!r}: {' '.join(str(message).split())}") from None


def _check_writable(path: str, option: str, directory: bool) -> None:
    """The output path can be written: an existing directory (plots) or a file in a writable directory."""
    if directory and os.path.exists(path) and not os.path.isdir(path):
        raise BadInput(f"{option} {path} is a file, not a directory")
    if not directory and os.path.isdir(path):
        raise BadInput(f"{option} {path} is a directory, not a file")
    parent = path if directory and os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput(f"{option} {path}: {parent} is not a writable directory")


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command's exit code; ``prog``: the command as the user typed it (``infoflow experiment``)."""
    import infoflow_smt
    from experiments.tables.store import StoreError

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv   # anywhere: the traceback of an internal error
    argv = [a for a in argv if a != "--debug"]
    if argv[:1] == ["compile"]:  # its own parser: compilation.command (the infoflow CLI delegates there too)
        from experiments.compilation import command
        return command.main(argv[1:], prog=f"{prog} compile")
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    command = None
    try:
        args = build_parser(prog).parse_args(argv)
        command = args.command
        _check_inputs(args)
        return args.func(args)
    except (BadInput, StoreError, infoflow_smt.InvalidSpecError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:   # an output path that became unwritable, a full disk
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error: cannot write{where}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"interrupted (Ctrl-C){_INTERRUPTED.get(command, '')}", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print(f"terminated (SIGTERM){_INTERRUPTED.get(command, '')}", file=sys.stderr)
        return EXIT_SIGTERM
    except ImportError as exc:   # an extra missing past the first import (torch, matplotlib)
        print(f"error: this command needs the experiments extra ({exc.name or exc} is missing): "
              "pip install 'infoflow_smt[experiments]'", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - anything else is a bug: one line and its own code, not 1 (failed)
        if debug:
            import traceback
            traceback.print_exception(exc, file=sys.stderr)
        print(f"internal error (a bug, please report it; --debug shows the traceback): {type(exc).__name__}: "
              f"{' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)


_INTERRUPTED = {"run": ": finished runs are kept in the store; rerun the command to resume",
                "validate": ": finished runs are kept in the store; rerun the command to resume",
                "confirm": ": nothing is stored; rerun with the same budget"}


if __name__ == "__main__":   # run as every command is (infoflow_smt.command): a reader that leaves keeps the code
    from infoflow_smt.command import console
    console(main, PROG)
