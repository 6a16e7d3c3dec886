"""``infoflow compile`` (and ``python -m experiments compile``): compile a decided witness and check it.

  infoflow compile TARGET --heads 2,2 [--embed-dim E] [--input-dim d] [--[no-]positional] [--causal]
                          [--beta 4,16,64,256]
                          [--seq-len 8,32,128,512] [--samples N] [--ffn exact|mlp] [--distribution NAME]
                          [--save model.pt] [--plot errors.png] [--timeout S] [--json]

The architecture's defaults are ``infoflow decide``'s: ``--input-dim`` 1 for a target that reads tokens as numbers,
else 2; positions on exactly when the target tells positions apart (under ``--causal``, as the mask leaves them).
Prints the verdict, the residual stream's slot allocation and the NMSE table. Exit codes (the command-line
policy of infoflow_smt.command): 0 the criterion holds (docs/compile.md), 1 it does not or the witness cannot
compile (the reason names the term; an infeasible verdict names its cheapest program), 2 bad input (one line, no
traceback: every number within the limits of ``experiments.compilation.check``, the --save and --plot paths
checked before any work), 3 the solver did not decide the architecture by --timeout (reason "unknown": nothing
is compiled), 130 interrupted.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from experiments.training.data import Distribution
from infoflow_smt.command import SECONDS, BadInput, Bound, Exit, Parser, answer
from infoflow_smt.files import output_file, replacing
from infoflow_smt.limits import (
    MAX_BETA,
    MAX_COMPILE_LENGTH,
    MAX_COMPILE_POSITIONS,
    MAX_COMPILE_WIDTH,
    MAX_HEADS,
    MAX_INPUT_DIM,
    MAX_SAMPLES,
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_UNKNOWN = Exit.OK, Exit.NO, Exit.BAD_INPUT, Exit.UNKNOWN
DISTRIBUTIONS = [d.value for d in Distribution]

# The --json document (tests validate it with jsonschema).
SCHEMA = {
    "type": "object",
    "required": ["verdict", "compiled"],
    "properties": {
        "verdict": {"type": "string"},
        "compiled": {"type": "boolean"},
        "refusal": {"type": "object", "required": ["reason", "term", "message"],
                    "properties": {"reason": {"type": "string"}, "term": {"type": "string"},
                                   "message": {"type": "string"}}},
        "check": {"type": "object",
                  "required": ["betas", "seq_lens", "nmse", "slopes", "smallest_beta", "parameters", "holds",
                               "allocation", "distribution"],
                  "properties": {"betas": {"type": "array", "items": {"type": "number"}},
                                 "seq_lens": {"type": "array", "items": {"type": "integer"}},
                                 "nmse": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
                                 "slopes": {"type": "array", "items": {"type": ["number", "null"]}},
                                 "smallest_beta": {"type": "array", "items": {"type": ["number", "null"]}},
                                 "parameters": {"type": "integer"}, "holds": {"type": "boolean"},
                                 "allocation": {"type": "string"},
                                 "distribution": {"enum": DISTRIBUTIONS}}},
    },
}


# each number read once, within what the check can honour (infoflow_smt.limits)
HEADS = Bound(int, 1, MAX_HEADS, "infoflow_smt.limits.MAX_HEADS")
WIDTH = Bound(int, 1, MAX_COMPILE_WIDTH, "infoflow_smt.limits.MAX_COMPILE_WIDTH")
INPUT_DIM = Bound(int, 1, MAX_INPUT_DIM, "infoflow_smt.limits.MAX_INPUT_DIM")
BETA = Bound(float, 0, MAX_BETA, "infoflow_smt.limits.MAX_BETA", above=True)
SEQ_LEN = Bound(int, 2, MAX_COMPILE_LENGTH, "infoflow_smt.limits.MAX_COMPILE_LENGTH")
SAMPLES = Bound(int, 2, MAX_SAMPLES, "infoflow_smt.limits.MAX_SAMPLES")
PICTURES = (".png", ".svg", ".pdf")


PROG = "infoflow compile"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("target", help="catalogue spec (intrinsic_dimension:D=2) or target text")
    p.add_argument("--heads", type=HEADS.several(), required=True, help="heads per layer, e.g. 2,2")
    p.add_argument("--embed-dim", type=WIDTH, default=32)
    p.add_argument("--input-dim", type=INPUT_DIM, default=None, metavar="d",
                   help="dimension of each input token (default: 1 for targets that read tokens as numbers, else 2)")
    p.add_argument("--positional", action=argparse.BooleanOptionalAction, default=None,
                   help="positional encoding (default: on exactly when the target tells positions apart, as for "
                        "infoflow decide)")
    p.add_argument("--causal", action="store_true",
                   help="a causal mask: each input position attends to itself and earlier positions only")
    p.add_argument("--beta", type=BETA.several(increasing=True), default=(4.0, 16.0, 64.0, 256.0))
    p.add_argument("--seq-len", type=SEQ_LEN.several(increasing=True), default=(8, 32, 128, 512))
    p.add_argument("--samples", type=SAMPLES, default=None,
                   help="inputs per T (default: 64, 256 for a target that reads a selected token)")
    p.add_argument("--ffn", choices=("exact", "mlp"), default="exact")
    p.add_argument("--distribution", choices=DISTRIBUTIONS, default=None,
                   help="the inputs' distribution (default: the one the target's task is posed on: "
                        "clamped_gaussian for triangle_center, nearest_margin for nearest_neighbor, else gaussian)")
    p.add_argument("--save", default=None, help="write the model at the largest beta (torch.save)")
    p.add_argument("--plot", default=None, help="write NMSE against beta, one line per T (.png, .svg or .pdf)")
    p.add_argument("--timeout", type=SECONDS, default=None, metavar="SECONDS",
                   help="the deadline of the decision (default 60); past it nothing is compiled, exit 3")
    p.add_argument("--json", action="store_true")
    return p


def run(argv: Sequence[str], prog: str = PROG) -> int:
    args = build_parser(prog).parse_args(list(argv))   # bad input costs no torch import
    if (args.samples or 256) * max(args.seq_len) > MAX_COMPILE_POSITIONS:
        raise BadInput(f"--samples {args.samples or 256} at --seq-len {max(args.seq_len)} draws "
                       f"{(args.samples or 256) * max(args.seq_len)} positions, over the limit of "
                       f"{MAX_COMPILE_POSITIONS} (infoflow_smt.limits.MAX_COMPILE_POSITIONS)")
    save = output_file(args.save, "--save") if args.save else None
    if args.plot and not args.plot.lower().endswith(PICTURES):
        raise BadInput(f"--plot {args.plot}: give a .png, .svg or .pdf file name")
    plot = output_file(args.plot, "--plot", inputs=[save]) if args.plot else None

    import infoflow_smt as ifs
    from infoflow_smt.errors import CompileRefusal

    target = ifs.catalogue.parse_spec(args.target)
    arch = ifs.Architecture(heads=args.heads, embed_dim=args.embed_dim, input_dim=_input_dim(args, target),
                            positional=_positional(args, target), causal=args.causal)
    verdict = ifs.decide(target, arch, timeout=args.timeout)   # decided before torch is imported
    try:
        if verdict.status is ifs.Status.UNKNOWN:
            raise CompileRefusal.undecided(str(verdict.target))
        import torch

        from experiments.compilation.check import check_compiled
        torch.set_num_threads(1)
        result = check_compiled(verdict, args.beta, args.seq_len, args.samples, ffn=args.ffn,
                                distribution=args.distribution)
    except CompileRefusal as refusal:
        doc = {"verdict": verdict.status.value, "compiled": False,
               "refusal": {"reason": refusal.reason, "term": refusal.term, "message": str(refusal)}}
        print(json.dumps(doc, indent=1) if args.json else f"{verdict}\n\n{refusal}")
        return EXIT_UNKNOWN if refusal.reason == "unknown" else EXIT_FAILED
    from experiments.compilation.compiling import compile as compile_witness
    if save is not None:
        with replacing(save, "--save") as temporary:
            torch.save(compile_witness(verdict, beta=args.beta[-1], ffn=args.ffn).state_dict(), temporary)
    if plot is not None:
        with replacing(plot, "--plot") as temporary:
            _plot(result, temporary, plot.suffix[1:].lower())
    if args.json:
        print(json.dumps({"verdict": verdict.status.value, "compiled": True, "check": result.to_json()}, indent=1))
    else:
        print(f"{verdict}\n\n{result.allocation}\n\n{result}")
    return EXIT_OK if result.holds else EXIT_FAILED


def _input_dim(args, target) -> int:
    """``--input-dim``, else ``infoflow decide``'s default: 1 for a target that reads tokens as numbers, else 2."""
    return target.token_dim if args.input_dim is None else args.input_dim


def _positional(args, target) -> bool:
    """``--[no-]positional``, else ``infoflow decide``'s default: on exactly when the target tells positions apart
    (under a causal mask, a range ``range(1, s+1)`` at ``s`` is the mask's and needs no position)."""
    if args.positional is not None:
        return args.positional
    if args.causal:
        from infoflow_smt.lang.trees import needs_positional
        return bool(needs_positional(target, True))
    return bool(target.needs_positional)


def _plot(result, path, form: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for j, T in enumerate(result.seq_lens):
        ax.loglog(result.betas, [max(row[j], 1e-18) for row in result.nmse], marker="o", label=f"T = {T}")
    ax.set_xlabel("beta (inverse temperature)")
    ax.set_ylabel("NMSE")
    ax.set_title(f"{result.target} on {result.architecture}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format=form)
    plt.close(fig)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command's exit code, every error one line (infoflow_smt.command.answer); ``prog``: the command as the
    user typed it, which usage lines name."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    return answer(lambda: _run(argv, prog), prog, debug=debug)


def _run(argv: list[str], prog: str) -> int:
    try:
        return run(argv, prog)
    except KeyError as err:   # a name the data module does not know (an unknown target)
        raise BadInput(" ".join(str(err.args[0] if err.args else err).split())) from None
