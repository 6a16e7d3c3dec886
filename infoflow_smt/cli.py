"""The ``infoflow`` command (``python -m infoflow_smt`` is the same command; with no arguments it runs the demo).

    infoflow decide TARGET --heads 2,2 [--embed-dim 32] [--input-dim 2] [--positional] [--causal] [--seq-len N]
                           [--timeout S] [--json] [--plot FILE] [--train [--budget 60]]
    infoflow explain TARGET --heads ...            what the target needs and why the answer is what it is
    infoflow minimize TARGET --max-layers 4 --max-heads 8
    infoflow frontier TARGET                       every (L, h) at once: decide_all
    infoflow sweep TARGET... --layers 1..6 --heads 1..8 [--plot FILE] [--workers N] [--backend ray]
                   [--cell-timeout S]
    infoflow catalogue [NAME]                      infoflow export-smtlib TARGET --heads ... --output FILE
    infoflow check FILE [--junit-xml OUT] [--timeout S]   a file of claims (docs/claims.md)
    infoflow prove [--all | NAME] [--json] [--report FILE]
    infoflow experiment run|validate|report|confirm ...
    infoflow compile TARGET --heads 2,2 [--beta 4,16,64,256] [--seq-len 8,32,128,512] [--ffn exact|mlp] [--json]

TARGET is a catalogue name with parameters (``intrinsic_dimension:D=3``) or target text. Exit codes: 0
feasible, proved or done; 1 infeasible or disproved; 2 bad input (one line on stderr naming the problem and
the fix, never a traceback); 3 unknown; 4 internal error (a bug: one line, the traceback under ``--debug``);
130 interrupted; 143 terminated (SIGTERM). The codes, the one-line errors and the bounded numbers are the
policy every entry point shares (infoflow_smt.command). ``--json`` prints one JSON document whose schema is in
docs/cli.md. ``main(argv)`` returns the exit code, so tests and other tools call it in-process.
"""
from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import sympy

from infoflow_smt.command import SECONDS, WHOLE, BadInput, Bound, Exit, Parser, answer, console
from infoflow_smt.deadline import Deadline, interrupts_remembered
from infoflow_smt.files import output_file, write_atomic
from infoflow_smt.limits import MAX_DIGITS, MAX_HEADS, MAX_INPUT_DIM, MAX_LAYERS, MAX_WORKERS
from infoflow_smt.report import setting
from infoflow_smt.symbols import T
from infoflow_smt.words import printable

PROG = "infoflow"
# commands with their own parser, registered by the package that holds them (proofs/commands.py,
# experiments/commands.py) and imported only when asked for (_delegated)
DELEGATED = ("prove", "experiment", "compile")


_Parser = Parser   # the command-line policy (infoflow_smt.command): errors are one line, never argparse's exit
INTERNAL_ERROR = Exit.INTERNAL   # exit code of a bug (1 means infeasible, 3 unknown: a script must not read either)


# ---- reading option values --------------------------------------------------------------------------
# every number is read once, by a Bound (infoflow_smt.command), within the limit the code can honour
LAYERS = Bound(int, 1, MAX_LAYERS, "infoflow_smt.limits.MAX_LAYERS")
HEADS = Bound(int, 1, MAX_HEADS, "infoflow_smt.limits.MAX_HEADS")
INPUT_DIM = Bound(int, 1, MAX_INPUT_DIM, "infoflow_smt.limits.MAX_INPUT_DIM")
SEQ_LEN = Bound(int, 2, WHOLE.high, WHOLE.limit)
WORKERS = Bound(int, 1, MAX_WORKERS, "infoflow_smt.limits.MAX_WORKERS")


def heads_per_layer(text: str) -> tuple[int, ...]:
    """``"2,2"`` -> ``(2, 2)``: one count per layer."""
    pieces = text.split(",")
    if len(pieces) > MAX_LAYERS:
        raise argparse.ArgumentTypeError(f"{len(pieces)} layers is over the limit of {MAX_LAYERS} "
                                         "(infoflow_smt.limits.MAX_LAYERS)")
    try:
        return tuple(HEADS.value(p) for p in pieces)
    except ValueError as err:
        raise argparse.ArgumentTypeError(
            f"{err}: give whole numbers >= 1, one per layer, separated by commas (e.g. --heads 2,2)") from None


def integer_range(text: str) -> list[int]:
    """``"1..6"``, ``"1,2,4"`` or ``"3"`` -> the whole numbers it names (each >= 1); the count is checked
    before the list is made (``1..100000000000`` is refused, not built)."""
    try:
        if len(text) > 2000 or any(len(p.strip()) > MAX_DIGITS for p in text.replace("..", ",").split(",")):
            raise ValueError(text)
        if ".." in text:
            low, high = (int(p) for p in text.split("..", 1))
            values = list(range(low, high + 1)) if high - low < 256 else []
        else:
            values = [int(p) for p in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1 or len(values) > 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give a range like 1..6 or a list like 1,2,4 of whole "
                                         "numbers >= 1 (at most 256 of them)")
    return sorted(set(values))


def width(text: str) -> int | sympy.Expr:
    """``"32"`` or an expression in ``T`` (``"2*T"``, ``"T/4 + 8"``): read with a whitelist, never executed."""
    problem = argparse.ArgumentTypeError(
        f"{text!r}: give a positive whole number (e.g. 32) or an expression in T such as 2*T")
    if len(text) > 100:
        raise problem
    try:
        tree = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise problem from None

    def value(node) -> sympy.Expr:
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return sympy.Integer(node.value)
        if isinstance(node, ast.Name) and node.id == "T":
            return T
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.Div) and right != 0:
                return left / right
            if isinstance(node.op, ast.Pow) and right.is_Rational and abs(right) <= 4:  # no huge powers
                return left ** right
        raise problem

    result = sympy.simplify(value(tree))
    if result.is_number and not (result.is_Integer and result > 0):
        raise problem
    return int(result) if result.is_Integer else result


# ---- the parser -------------------------------------------------------------------------------------------
def _architecture_options(p: argparse.ArgumentParser, heads: bool = True) -> None:
    if heads:
        p.add_argument("--heads", type=heads_per_layer, required=True, metavar="H1,H2,...",
                       help="heads in each layer, e.g. 2,2 for two layers of two heads")
    p.add_argument("--embed-dim", type=width, default=32, metavar="E",
                   help="the width: a whole number or an expression in T such as 2*T (default 32)")
    p.add_argument("--input-dim", type=INPUT_DIM, default=None, metavar="d",
                   help="dimension of each input token (default: the target's, 1 for targets that read tokens as "
                        "numbers, else 2; docs/api.md, \"Defaults\")")
    p.add_argument("--positional", action=argparse.BooleanOptionalAction, default=None,
                   help="positional encoding (default: on exactly when the target tells positions apart: fixed "
                        "positions, offsets, subsets or ranges; with --readout last, x[T] is the reader's own token)")
    p.add_argument("--causal", action="store_true",
                   help="a causal mask: each input position attends to itself and earlier positions only, the "
                        "output token to all (docs/model.md, 'Causal mask'; a constant --embed-dim)")
    p.add_argument("--rank-aware", action="store_true",
                   help="a retrieval head may rank only by a score whose bilinear rank fits its width E/h "
                        "(default: the papers' cost law, which abstracts the rank away; docs/model.md)")


def _readout_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--readout", choices=("output", "last"), default=None,
                   help="where the answer is read: the extra output token, as in paper 1, or the last input "
                        "position T, as a decoder's next-token prediction (default: where the target's catalogue "
                        "entry's paper reads it, else the output token; docs/model.md, \"Readout\")")


def _question_options(p: argparse.ArgumentParser, json_help: str = "print one JSON document (docs/cli.md)") -> None:
    p.add_argument("--seq-len", type=SEQ_LEN, default=None, metavar="T",
                   help="decide at this one sequence length instead of for all large T")
    p.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                   help="one deadline for the whole answer (default 60); what is unfinished is unknown")
    p.add_argument("--json", action="store_true", help=json_help)


def _format_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--format", choices=("text", "csv", "markdown", "latex"), default="text",
                   help=f"write {what} as text (default), csv, markdown or latex (a tabular); never cut to "
                        "the terminal in a file or a pipe")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Decide, with an SMT solver, which transformer architectures "
                     "compute a target efficiently (InfoFlow). Exit codes: 0 feasible/proved, 1 infeasible/"
                     "disproved, 2 bad input, 3 unknown, 4 internal error (--debug anywhere shows its "
                     "traceback), 130 interrupted, 143 terminated.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("decide", help="decide one architecture: a replayed witness or the reasons it fails")
    p.add_argument("target", metavar="TARGET", help="catalogue name (intrinsic_dimension:D=3) or target text")
    _architecture_options(p)
    _readout_option(p)
    _question_options(p)
    p.add_argument("--plot", metavar="FILE", help="draw the information flow (.png, or .svg or .pdf for a paper)")
    p.add_argument("--train", action="store_true",
                   help="also train the architecture and its neighbours (needs the experiments extra)")
    p.add_argument("--budget", default="60", metavar="SECONDS", help="training budget for --train (default 60)")

    p = sub.add_parser("explain", help="what the target needs, and why an architecture does or does not reach it")
    p.add_argument("target", metavar="TARGET")
    _architecture_options(p)
    _readout_option(p)
    _question_options(p)

    p = sub.add_parser("minimize", help="the Pareto-minimal architectures (layers, heads, exponent)")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("--max-layers", type=LAYERS, default=4, metavar="L")
    p.add_argument("--max-heads", type=HEADS, default=8, metavar="H")
    _architecture_options(p, heads=False)
    _question_options(p)
    _format_option(p, "the table")

    p = sub.add_parser("frontier", help="every (L, h) at once: the minimal efficient architectures, or none")
    p.add_argument("target", metavar="TARGET")
    p.add_argument("--head-dim", type=WHOLE, default=None, metavar="n",
                   help="a width that grows with the heads, E = n*h (instead of --embed-dim)")
    _architecture_options(p, heads=False)
    p.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS")
    p.add_argument("--json", action="store_true", help="print one JSON document (docs/cli.md)")
    _format_option(p, "the minimal architectures as a table instead of the sentences")

    p = sub.add_parser("sweep", help="a grid of targets by architectures: cached, resumable, with a phase diagram")
    p.add_argument("targets", nargs="+", metavar="TARGET")
    p.add_argument("--layers", type=integer_range, default=[1, 2, 3], metavar="RANGE", help="e.g. 1..6")
    p.add_argument("--heads", type=integer_range, default=[1, 2, 3, 4], metavar="RANGE",
                   help="heads in every layer, e.g. 1..8")
    _architecture_options(p, heads=False)
    _question_options(p)
    p.add_argument("--cell-timeout", type=SECONDS, default=None, metavar="SECONDS",
                   help="a deadline for each cell the solver is asked (default: each gets a fair share of what is "
                        "left of --timeout, and a cell that ran out of it is asked once more at the end); given "
                        "without --timeout, the sweep has no whole deadline")
    p.add_argument("--plot", metavar="FILE", help="draw the phase diagram (.png, .svg or .pdf; one per target: "
                   "FILE, FILE-2, ... when there are several)")
    p.add_argument("--cache", metavar="FILE", help="the results cache (default ~/.cache/infoflow_smt/sweeps.jsonl)")
    p.add_argument("--no-cache", action="store_true", help="decide every cell again and keep nothing")
    p.add_argument("--no-infer", action="store_true", help="decide every cell instead of inferring by monotonicity")
    p.add_argument("--workers", type=WORKERS, default=None, metavar="N", help="processes (default: cores)")
    p.add_argument("--backend", choices=("local", "ray"), default="local")
    p.add_argument("--address", default=None, metavar="ADDR", help="the Ray cluster (default: a local one)")
    _format_option(p, "the phase tables")

    p = sub.add_parser("catalogue", help="the named targets and their parameters")
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("export-smtlib", help="write the question as an SMT-LIB 2 script for any solver")
    p.add_argument("target", metavar="TARGET")
    _architecture_options(p)
    p.add_argument("--output", "-o", required=True, metavar="FILE")
    p.add_argument("--overwrite", action="store_true", help="replace FILE if it exists")
    p.add_argument("--any-cost", action="store_true", help="ask for any program, efficient or not")
    p.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                   help="a deadline for the encoding (default 60); past it nothing is written, exit 3")

    p = sub.add_parser("check", help="check a TOML file of claims (docs/claims.md): exit 0 all hold, 1 some "
                       "claim is false, 3 some unknown and none false")
    p.add_argument("file", metavar="FILE", help="the claims file (TOML)")
    p.add_argument("--junit-xml", metavar="OUT", help="also write the results as JUnit XML to OUT")
    p.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                   help="the deadline of each claim that sets none (default 60); what is unfinished is unknown")

    sub.add_parser("prove", help="reproduce the papers' theorems (python -m proofs; see `infoflow prove --help`)",
                   add_help=False)
    sub.add_parser("experiment", help="train real transformers (run|validate|report|confirm; needs the "
                   "experiments extra)", add_help=False)
    sub.add_parser("compile", help="compile a feasible witness into softmax-transformer weights and check its "
                   "NMSE over beta and T (needs the experiments extra)", add_help=False)
    return parser


# ---- shared steps -----------------------------------------------------------------------------------------
def _target(spec: str):
    from infoflow_smt.lang.catalogue import parse_spec
    return parse_spec(spec)


def _settings(args, target) -> dict:
    """The token dimension, readout and positional encoding asked: each as given, or the target's, by the rule
    ``ifs.decide`` applies to what an ``Architecture`` leaves out (``model.defaults``). The commands without
    ``--readout`` ask at the output token."""
    from infoflow_smt.model.defaults import settings
    return settings(target, causal=args.causal, input_dim=args.input_dim, positional=args.positional,
                    readout=getattr(args, "readout", "output"))


def _input_dim(args, target) -> int:
    return _settings(args, target)["input_dim"]


def _positional(args, target) -> bool:
    return _settings(args, target)["positional"]


def _architecture(args, target, heads=None):
    from infoflow_smt.model.architecture import Architecture
    arch = Architecture(heads=heads or args.heads, embed_dim=args.embed_dim, input_dim=args.input_dim,
                        positional=args.positional, causal=args.causal, rank_aware=args.rank_aware,
                        readout=getattr(args, "readout", None))
    from infoflow_smt.model.defaults import settled
    return settled(arch, target)


def _writable(path: str, option: str, inputs=()) -> Path:
    """A picture's path, checked before any solving (a typo costs nothing): a plain file or a new name in a
    writable folder, not a link nor one of the command's ``inputs`` (infoflow_smt.files.output_file)."""
    out = Path(path)
    if out.suffix.lower() not in (".png", ".svg", ".pdf"):
        raise BadInput(f"{option} {printable(path)}: give a .png, .svg or .pdf file name")
    return output_file(out, option, inputs=inputs)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], title: str = "", prose: bool = False):
    from infoflow_smt.report.tables import Table
    return Table.of(headers, rows, title, prose)


def _print_table(table, form: str = "text") -> None:
    """A table in the asked format; as text, whole lines in a file or a pipe (nothing cut to "...")."""
    from infoflow_smt.report.tables import terminal_width
    sys.stdout.write(table.render(form, terminal_width(sys.stdout)))


def _print_json(document) -> None:
    print(json.dumps(document, indent=2, sort_keys=False))


# ---- the commands -----------------------------------------------------------------------------------------
def cmd_decide(args) -> int:
    from infoflow_smt.smt.solver import decide
    target = _target(args.target)
    plot = _writable(args.plot, "--plot") if args.plot else None
    arch = _architecture(args, target)
    if args.train:   # a missing extra or a bad budget is reported before the solver runs
        confirm, parse_budget = _experiments_confirm()
        budget = parse_budget(args.budget)
    verdict = decide(target, arch, seq_len=args.seq_len, timeout=args.timeout)
    document = verdict.to_json()
    if plot is not None:
        from infoflow_smt.report.plots import plot_flow
        plot_flow(verdict, plot)
        document["plot"] = str(plot)
    if args.train:
        confirmation = confirm(verdict, budget=budget)
        document["training"] = confirmation.to_json()
    if args.json:
        _print_json(document)
    else:
        print(verdict)
        if plot is not None:
            print(f"  diagram: {plot}")
        if args.train:
            print(confirmation)
    return verdict.status.exit_code


def _experiments_confirm():
    try:
        from experiments import confirm, parse_budget
    except ImportError as err:
        raise BadInput(f"--train needs the experiments extra ({err.name or err} is missing): "
                       "pip install 'infoflow_smt[experiments]'") from None
    return confirm, parse_budget


def cmd_explain(args) -> int:
    from infoflow_smt.lang.node_text import named_target, node_names
    from infoflow_smt.report.explain import describe_node, innermost_first
    from infoflow_smt.smt.solver import decide
    target = _target(args.target)
    arch = _architecture(args, target)
    verdict = decide(target, arch, seq_len=args.seq_len, timeout=args.timeout)
    tree = verdict.target.tree()  # the question decided: read at the last position, every position's answer
    called = node_names(tree)
    nodes = innermost_first(tree)
    selections = [describe_node(tree, n) for n in nodes]
    if args.json:
        _print_json({"target": target.text, "comparison_order": target.comparison_order,
                     "comparison_dimension": target.comparison_dimension,
                     "comparison_number": str(target.comparison_number), "depth": target.depth,
                     "selections": selections, "verdict": verdict.to_json()})
        return verdict.status.exit_code
    named = named_target(target)   # the selections below define the names
    print(f"target: {named[0] if named else target.text}")
    print(f"  comparison order {target.comparison_order} (selections one after another), dimension "
          f"{target.comparison_dimension} (selections side by side), number {target.comparison_number}, "
          f"depth {target.depth}")
    if selections:
        print("  selections, innermost first:")
        print("\n".join(f"    - {called[n] + ': ' if n in called else ''}{s}" for n, s in zip(nodes, selections)))
    print(verdict)
    return verdict.status.exit_code


def cmd_minimize(args) -> int:
    from infoflow_smt.smt.solver import minimize
    _one_output(args)
    target = _target(args.target)
    front = minimize(target, args.max_layers, args.max_heads, embed_dim=args.embed_dim,
                     input_dim=_input_dim(args, target), positional=_positional(args, target),
                     seq_len=args.seq_len, timeout=args.timeout, rank_aware=args.rank_aware, causal=args.causal)
    # an undecided architecture may be a missing point, or lower a listed one: the answer depends on it
    code = 3 if front.undecided else 0 if front else 1
    asked = _asked(args)
    if args.json:
        _print_json(front.to_json() | {"target": target.text, "setting": setting.to_json([asked])})
        return code
    # in csv, markdown or latex stdout holds the table alone (a file a program reads); the sentences go to stderr
    say = print if args.format == "text" else _note
    say(f"target: {target.text}")
    if not front and args.format == "text":
        print(front)
        return code
    rows = [(v.architecture.layers, v.architecture.heads[0], v.exponent,
             v.witness.operations if v.witness else "-") for v in front]
    what = "Pareto-minimal architectures" if front.complete else "Pareto-minimal among the decided architectures"
    _print_table(_table(("layers", "heads per layer", "exponent", "operations"), rows,
                        title=f"{what} ({front.tried} tried){_under(asked)}"), args.format)
    if not front:
        say(str(front))
    if front.undecided:
        say(front.gap())
    return code


def _asked(args):
    """The setting every architecture of ``minimize`` and ``frontier`` is asked in (one head of one layer)."""
    from infoflow_smt.model.architecture import Architecture
    return Architecture(heads=(1,), causal=args.causal, rank_aware=args.rank_aware, readout="output")


def _under(*archs) -> str:
    """A table's title's tail naming the mask and the rank rule when they are on (``report.setting``)."""
    on = setting.line(archs)
    return f"; {on}" if on else ""


def _note(line: str) -> None:
    print(line, file=sys.stderr)


def _one_output(args) -> None:
    if args.json and args.format != "text":
        raise BadInput(f"give --json or --format {args.format}, not both")


def cmd_frontier(args) -> int:
    from infoflow_smt.explore.frontier import decide_all
    _one_output(args)
    target = _target(args.target)
    frontier = decide_all(target, embed_dim=args.embed_dim, head_dim=args.head_dim,
                          input_dim=_input_dim(args, target), positional=args.positional, timeout=args.timeout,
                          rank_aware=args.rank_aware, causal=args.causal)
    if args.json:
        _print_json(frontier.to_json() | {"setting": setting.to_json([_asked(args)])})
    elif args.format == "text":
        print(frontier)
    else:
        rows = [(v.architecture.layers, v.architecture.heads[0], v.exponent,
                 v.witness.operations if v.witness else "-") for v in frontier.points]
        _print_table(_table(("layers", "heads per layer", "exponent", "operations"), rows,
                            title=str(frontier).splitlines()[0] + _under(_asked(args))), args.format)
    if not frontier.complete:   # the answer rests on cells the solver could not decide
        return 3
    return 1 if frontier.none else 0


def cmd_sweep(args) -> int:
    from infoflow_smt.explore.sweeps import sweep
    from infoflow_smt.model.architecture import Architecture
    if args.no_cache and args.cache:
        raise BadInput("give --cache FILE or --no-cache, not both")
    _one_output(args)
    targets = [_target(spec) for spec in args.targets]
    plots = [_writable(_numbered(args.plot, i), "--plot", inputs=[args.cache]) for i in range(len(targets))
             ] if args.plot else []
    cache = False if args.no_cache else args.cache
    grid = [(L, h) for L in args.layers for h in args.heads]
    cells, seconds, cache_path = [], 0.0, None
    # one deadline for every group of targets (each group is one sweep), none with --cell-timeout alone
    deadline = None if args.timeout is None and args.cell_timeout is not None else Deadline(args.timeout)
    groups = _grouped(args, targets)   # one sweep per token dimension (targets may read numbers)
    with _progress(len(grid) * len(targets)) as progress:
        for g, by_dim in enumerate(groups):
            # each group its share of what is left, by its targets: the first cannot spend the others' time
            share = None if deadline is None else max(
                deadline.left() * len(by_dim) / sum(map(len, groups[g:])), 1e-3)
            specs = [args.targets[i] for i in by_dim]
            first = targets[by_dim[0]]
            dim, positional = _input_dim(args, first), _positional(args, first)   # once: each reads the tree
            archs = [Architecture(heads=(h,) * L, embed_dim=args.embed_dim, input_dim=dim, positional=positional,
                                  rank_aware=args.rank_aware, causal=args.causal)
                     for L, h in grid]
            offset = len(cells)
            result = sweep(specs, archs, timeout=share, cell_timeout=args.cell_timeout, cache=cache,
                           workers=args.workers, backend=args.backend, address=args.address,
                           infer=not args.no_infer, seq_len=args.seq_len,
                           progress=lambda done, _total, o=offset: progress(o + done))
            cells += result.cells
            seconds += result.seconds
            cache_path = result.cache_path
    from infoflow_smt.explore.sweeps import Sweep
    result = Sweep(cells, seconds, cache_path)
    for i, spec in enumerate(args.targets if plots else []):
        result.plot(plots[i], target=spec)
    unknown = result.undecided > 0
    if args.json:
        _print_json(result.to_json() | {"plots": [str(p) for p in plots],
                                        "setting": setting.to_json(c.architecture for c in cells)})
        return 3 if unknown else 0
    say = print if args.format == "text" else _note   # csv, markdown, latex: the tables alone on stdout
    if args.format == "csv":   # one tidy table (a row per cell) a spreadsheet or pandas reads at once
        _print_table(_cell_table(cells), "csv")
    else:
        for i, spec in enumerate(dict.fromkeys(args.targets)):
            if i:
                print()   # a blank line between two targets' tables (two markdown tables would merge)
            _print_table(_phase_table(spec, [c for c in cells if c.target == spec], args.layers, args.heads),
                         args.format)
    say(f"{len(cells)} cells: {result.decided} decided, {result.inferred} inferred by monotonicity (marked *), "
        f"{result.cached} from the cache" + (f" ({cache_path})" if cache_path else "")
        + (f", {result.undecided} unknown (marked ?, with the seconds each had)" if result.undecided else ""))
    if result.undecided:
        say(result.gap())
    for path in plots:
        say(f"phase diagram: {path}")
    return 3 if unknown else 0


def _cell_table(cells):
    rows = [(c.target, c.architecture.layers, c.architecture.heads[0], c.status.value, c.exponent or "-",
             c.bound, "inferred" if c.inferred else "cached" if c.cached else "decided",
             setting.line([c.architecture]) or "-") for c in cells]
    return _table(("target", "layers", "heads per layer", "verdict", "exponent", "bound", "how", "setting"), rows)


def _numbered(path: str, i: int) -> str:
    if i == 0:
        return path
    p = Path(path)
    return str(p.with_name(f"{p.stem}-{i + 1}{p.suffix}"))


def _grouped(args, targets) -> list[list[int]]:
    groups: dict[tuple, list[int]] = {}
    for i, target in enumerate(targets):
        groups.setdefault((_input_dim(args, target), _positional(args, target)), []).append(i)
    return list(groups.values())


def _phase_table(spec: str, cells, layers, heads):
    marks = {"feasible": "yes", "infeasible": "no", "unknown": "?"}
    by_shape = {(c.architecture.layers, c.architecture.heads[0]): c for c in cells}
    rows = []
    for L in layers:
        row = [str(L)]
        for h in heads:
            c = by_shape[(L, h)]
            bound = {"at most": "<=", "at least": ">="}.get(c.bound, "")
            exponent = f" {bound}{c.exponent.replace(' ', '')}" if c.exponent else ""
            had = f"({c.allowed:.3g}s)" if c.ran_out else ""   # an unknown cell names the time it had
            row.append(f"{marks[c.status.value]}{had}{exponent}{'*' if c.inferred else ''}")
        rows.append(row)
    on = setting.line(c.architecture for c in cells)
    return _table(["L \\ h", *map(str, heads)], rows,
                  title=f"{spec}: efficient? (cost exponent) on L layers of h heads{f', {on}' if on else ''}")


class _progress:
    """A progress bar on stderr when it is a terminal; silent otherwise (pipes, tests, CI logs)."""

    def __init__(self, total: int):
        self.total, self.bar = total, None

    def __enter__(self):
        from rich.console import Console
        console = Console(stderr=True)
        if console.is_terminal:
            from rich.progress import Progress
            self.bar = Progress(console=console, transient=True)
            self.bar.start()
            self.task = self.bar.add_task("deciding cells", total=self.total)
        return self.update

    def update(self, done: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=done)

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()


def cmd_catalogue(args) -> int:
    from infoflow_smt.lang import catalogue
    if args.name:
        if args.json:
            _print_json(catalogue.entry(args.name).to_json())
        else:
            print(catalogue.describe(args.name))
        return 0
    entries = [catalogue.entry(name) for name in catalogue.names()]
    if args.json:
        _print_json({"targets": [e.to_json() for e in entries]})
        return 0
    rows = [(e.name, e.signature or "-", e.summary) for e in entries]
    _print_table(_table(("name", "parameters (defaults)", "what it computes"), rows, prose=True))
    print("Use a name with parameters as TARGET, e.g. intrinsic_dimension:D=3; `infoflow catalogue NAME` for "
          "its text and source.")
    return 0


def cmd_export(args) -> int:
    from infoflow_smt.smt.solver import export_smtlib
    target = _target(args.target)
    output_file(args.output, "--output")
    if Path(args.output).exists() and not args.overwrite:
        raise BadInput(f"--output {printable(args.output)} exists; add --overwrite to replace it")
    path = export_smtlib(target, _architecture(args, target), args.output, efficient=not args.any_cost,
                         overwrite=args.overwrite, timeout=args.timeout)
    print(f"wrote {path}: satisfiable iff {'a' if args.any_cost else 'an efficient'} program exists")
    return 0


def cmd_check(args) -> int:
    from infoflow_smt.claim_check import check_all
    from infoflow_smt.claims import load
    claims = load(args.file)   # the file read and checked first, then where the report goes: before any proving
    junit = output_file(args.junit_xml, "--junit-xml", inputs=[args.file]) if args.junit_xml else None
    report = check_all(args.file, claims, timeout=args.timeout)
    print(report)
    if junit is not None:
        write_atomic(junit, report.junit_xml(), "--junit-xml")
    return report.exit_code


COMMANDS = {"decide": cmd_decide, "explain": cmd_explain, "minimize": cmd_minimize, "frontier": cmd_frontier,
            "sweep": cmd_sweep, "catalogue": cmd_catalogue, "export-smtlib": cmd_export,
            "check": cmd_check}


# ---- entry points -----------------------------------------------------------------------------------------
def _hint(err: Exception) -> str:
    """The fix, where the message alone does not say it."""
    subject = getattr(err, "subject", None)
    if subject == "catalogue":
        return f" (`{PROG} catalogue` lists the names)"
    if subject == "target":
        return (" (TARGET is a catalogue name such as intrinsic_dimension:D=3, or target text such as "
                "'max(f1(x[t]) for t in T)'; docs/model.md describes the text)")
    return ""


def _delegated(command: str):
    """The ``main`` of a delegated command, from its package's registry: imported here, never on ``import
    infoflow_smt``, by import statements pyproject.toml's contracts see."""
    if command == "prove":
        from proofs.commands import COMMANDS as registered
    else:
        from experiments.commands import COMMANDS as registered
    return registered[command]


def _delegate(command: str, argv: list[str]) -> int:
    try:
        command_main = _delegated(command)
    except ImportError as err:
        raise BadInput(f"`{PROG} {command}` needs the experiments extra ({err.name or err} is missing): "
                       "pip install 'infoflow_smt[experiments]'") from None
    return command_main(argv, prog=f"{PROG} {command}")   # its usage lines and errors name the command as typed


def run(argv: Sequence[str]) -> int:
    """Parse and run; raises ``BadInput`` or ``InvalidSpecError`` for bad input."""
    argv = list(argv)
    if argv and argv[0] in DELEGATED:
        return _delegate(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.command is None:
        raise BadInput(f"give a command: {', '.join([*COMMANDS, *DELEGATED])} (see `{PROG} --help`)")
    return COMMANDS[args.command](args)


def main(argv: Sequence[str] | None = None) -> int:
    """The command; returns its exit code. No arguments: the demo."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    if not argv:
        from infoflow_smt.demo import demo
        return demo()
    kept = "; finished sweep cells stay in the cache, nothing else was written" if argv[0] == "sweep" else ""
    with interrupts_remembered():   # not where SIGINT is ignored, nor off the main thread
        return answer(lambda: run(argv), PROG, debug=debug, hint=_hint, interrupted=kept)


def entry() -> None:
    """The console script (infoflow_smt.command.console): a reader that stops early (`infoflow decide ... |
    head`) leaves the exit code as it would have been; a closed or full standard output (`>&-`, `> /dev/full`)
    is one line on stderr and exit code 2; SIGTERM is exit code 143."""
    console(main, PROG)
