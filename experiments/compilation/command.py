"""``infoflow compile`` (and ``python -m experiments compile``): compile a decided witness and check it.

  infoflow compile TARGET --heads 2,2 [--embed-dim E] [--input-dim d] [--positional] [--causal] [--beta 4,16,64,256]
                          [--seq-len 8,32,128,512] [--samples N] [--ffn exact|mlp] [--distribution NAME]
                          [--save model.pt] [--plot errors.png] [--json]

Prints the verdict, the residual stream's slot allocation and the NMSE table. Exit codes: 0 the criterion
holds (docs/compile.md), 1 it does not or the witness cannot compile (the reason names the term; an
infeasible verdict names its cheapest program), 2 bad input (one line, no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import NoReturn

from experiments.training.data import Distribution

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
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


class BadInput(Exception):
    """A user error: one line on stderr, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise BadInput(f"{message} (see `{self.prog} --help`)")


def _numbers(kind, name: str, low: float, increasing: bool = True):
    def parse(text: str):
        try:
            values = tuple(kind(v) for v in text.split(","))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be comma-separated numbers, got {text!r}") from None
        if not values or any(not v >= low for v in values) or (increasing and list(values) != sorted(set(values))):
            order = "increasing " if increasing else ""
            raise argparse.ArgumentTypeError(f"{name} must be {order}numbers >= {low}, got {text!r}")
        return values
    return parse


PROG = "infoflow compile"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("target", help="catalogue spec (intrinsic_dimension:D=2) or target text")
    p.add_argument("--heads", type=_numbers(int, "--heads", 1, increasing=False), required=True, help="heads per layer, e.g. 2,2")
    p.add_argument("--embed-dim", type=int, default=32)
    p.add_argument("--input-dim", type=int, default=2)
    p.add_argument("--positional", action="store_true")
    p.add_argument("--causal", action="store_true",
                   help="a causal mask: each input position attends to itself and earlier positions only")
    p.add_argument("--beta", type=_numbers(float, "--beta", 1e-9), default=(4.0, 16.0, 64.0, 256.0))
    p.add_argument("--seq-len", type=_numbers(int, "--seq-len", 2), default=(8, 32, 128, 512))
    p.add_argument("--samples", type=int, default=None,
                   help="inputs per T (default: 64, 256 for a target that reads a selected token)")
    p.add_argument("--ffn", choices=("exact", "mlp"), default="exact")
    p.add_argument("--distribution", choices=DISTRIBUTIONS, default=None,
                   help="the inputs' distribution (default: the one the target's task is posed on: "
                        "clamped_gaussian for triangle_center, nearest_margin for nearest_neighbor, else gaussian)")
    p.add_argument("--save", default=None, help="write the model at the largest beta (torch.save)")
    p.add_argument("--plot", default=None, help="write NMSE against beta, one line per T")
    p.add_argument("--json", action="store_true")
    return p


def run(argv: Sequence[str], prog: str = PROG) -> int:
    import infoflow_smt as ifs
    import torch
    from experiments.compilation.check import check_compiled
    from experiments.compilation.compiling import compile as compile_witness
    from infoflow_smt.errors import CompileRefusal

    args = build_parser(prog).parse_args(list(argv))
    if (args.samples is not None and args.samples < 2) or args.embed_dim < 1 or args.input_dim < 1:
        raise BadInput(f"--samples must be >= 2, --embed-dim and --input-dim >= 1 (got {args.samples}, "
                       f"{args.embed_dim}, {args.input_dim})")
    torch.set_num_threads(1)
    arch = ifs.Architecture(heads=args.heads, embed_dim=args.embed_dim, input_dim=args.input_dim,
                            positional=args.positional, causal=args.causal)
    verdict = ifs.decide(args.target, arch)
    try:
        result = check_compiled(verdict, args.beta, args.seq_len, args.samples, ffn=args.ffn,
                                distribution=args.distribution)
    except CompileRefusal as refusal:
        doc = {"verdict": verdict.status.value, "compiled": False,
               "refusal": {"reason": refusal.reason, "term": refusal.term, "message": str(refusal)}}
        print(json.dumps(doc, indent=1) if args.json else f"{verdict}\n\n{refusal}")
        return EXIT_FAILED
    if args.save:
        torch.save(compile_witness(verdict, beta=args.beta[-1], ffn=args.ffn).state_dict(), args.save)
    if args.plot:
        _plot(result, args.plot)
    if args.json:
        print(json.dumps({"verdict": verdict.status.value, "compiled": True, "check": result.to_json()}, indent=1))
    else:
        print(f"{verdict}\n\n{result.allocation}\n\n{result}")
    return EXIT_OK if result.holds else EXIT_FAILED


def _plot(result, path: str) -> None:
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
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None, prog: str = PROG) -> int:
    """The command's exit code; ``prog``: the command as the user typed it, which usage lines name."""
    import infoflow_smt

    try:
        return run(sys.argv[1:] if argv is None else argv, prog)
    except (BadInput, infoflow_smt.InvalidSpecError, KeyError) as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as exc:
        print(f"error: cannot write {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
