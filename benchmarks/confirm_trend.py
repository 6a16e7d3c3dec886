"""Issue 19's confirm-by-trend tables on this machine: each decided case trained at T = 8, 16, 32.

Each case is ``python -m experiments confirm`` with the arguments printed in its file; this script runs one
case (or all three, one after another: each trains in one process per core, two seeds per cell) and writes
``results/confirm_*.txt``, one per target (the exact command, the hardware, the verdict and the table) and ``.json``
(``Confirmation.to_json()``). The rule is fixed in ``experiments.confirmation.trend`` before any of these ran.
``readme`` runs README.md's confirm example as typed there (one seed, the default worker processes) at the
budget the README names, into ``results/confirm_readme.*``: the measurement behind that budget.

``--rejudge`` trains nothing: it reads a case's committed ``.json``, judges its measured cells by the rule of
today (``Confirmation.judged_again``) and rewrites both files, the run's header kept with a line saying so and
the earlier judgement kept in the JSON (``judged_before``). Exit 0 when the table confirms its verdict (a row
judged, every judged row agrees), else 1.

    python benchmarks/confirm_trend.py intrinsic|min_pairwise_dot|triangle|all [--budget 14m] [--results DIR]
    python benchmarks/confirm_trend.py readme [--budget 3m]   # README.md's example as typed there
    python benchmarks/confirm_trend.py CASE|all --rejudge [--results DIR]
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import torch

import experiments
import infoflow_smt as ifs
from experiments.__main__ import build_parser
from experiments.confirmation.table import Confirmation
from infoflow_smt.machine import cpu_model

# name -> the confirm command line's arguments (after ``confirm``); d and E chosen so that T = 16 and 32
# separate by the solver's exponent (T d / E - 1 = 3 and 7 against 1) and T = 8 does not (1 against 1)
CASES = {
    "intrinsic": ["intrinsic_dimension:D=2", "--heads", "2,2", "--embed-dim", "16", "--input-dim", "4",
                  "--seq-len", "8,16,32"],
    "min_pairwise_dot": ["min_pairwise_dot", "--heads", "1,1", "--embed-dim", "16", "--input-dim", "4",
                         "--seq-len", "8,16,32", "--against", "1", "--against", "2"],
    "triangle": ["triangle_center", "--heads", "2,2", "--embed-dim", "24", "--input-dim", "2",
                 "--seq-len", "8,16,32"],
    # the README's example as a user runs it (one seed, the default workers), at the budget the README names
    "readme": ["min_pairwise_dot", "--heads", "1,1", "--embed-dim", "16", "--input-dim", "2", "--seq-len", "8,16,32"],
}
SEEDS = 2   # per cell, the best kept: the papers' protocol; one seed left a (2, 2) stalled at 1.4e-2 in 1 run of 3
BUDGETS = {"readme": "3m"}   # the README's example at the budget README.md names; the others 14m
TRAINED = ("intrinsic", "min_pairwise_dot", "triangle")   # "all": the committed tables docs/reproduction.md quotes


def stem(name: str, results: str) -> str:
    """The files' path less its suffix: the target's name after ``confirm_`` (the README's example: ``readme``)."""
    return os.path.join(results, "confirm_readme" if name == "readme" else f"confirm_{CASES[name][0].split(':')[0]}")


def run_case(name: str, budget: str, results: str) -> int:
    extra = [] if name == "readme" else ["--threads", "1", "--seeds", str(SEEDS)]   # the README's as typed there
    argv = ["confirm", *CASES[name], "--budget", budget, *extra]
    args = build_parser().parse_args(argv)
    arch = ifs.Architecture(heads=args.heads, embed_dim=args.embed_dim, input_dim=args.input_dim,
                            positional=args.positional)
    load, start = os.getloadavg()[0], time.perf_counter()   # the load others put on the machine, at the start
    verdict = ifs.decide(args.target, arch)
    result = experiments.confirm(verdict, budget=budget, seq_len=args.seq_len, threads=1, seeds=args.seeds,
                                 against=args.against or ())
    wall = time.perf_counter() - start
    header = [f"command: python -m experiments {' '.join(argv)}",
              f"   (run as: python benchmarks/confirm_trend.py {name} --budget {budget})",
              (f"hardware: {cpu_model()}, {os.cpu_count()} cores (load average {load:.1f} at the start), "
               f"{result.recipe['workers']} training processes of one torch thread; torch {torch.__version__}, "
               f"Python {platform.python_version()}"),
              (f"date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; wall {wall:.0f} s "
              f"(deciding included)"), ""]
    with open(f"{stem(name, results)}.txt", "w", encoding="utf-8") as out:
        out.write("\n".join([*header, str(verdict), "", str(result), ""]))
    with open(f"{stem(name, results)}.json", "w", encoding="utf-8") as out:
        json.dump({"command": header[0][len("command: "):], "hardware": cpu_model(), "wall_s": wall,
                   "confirmation": result.to_json()}, out, indent=1)
    print("\n".join(header) + str(result), flush=True)
    return 0 if result.confirms else 1


def rejudge_case(name: str, results: str) -> int:
    """The committed run of ``name`` judged again by today's rule; nothing is trained (module docstring)."""
    path = stem(name, results)
    with open(f"{path}.json", encoding="utf-8") as fh:
        doc = json.load(fh)
    with open(f"{path}.txt", encoding="utf-8") as fh:
        text = fh.read()
    before = Confirmation.from_json(doc["confirmation"])
    after = before.judged_again()
    when = f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    note = (f"judged again: {when}, by the rule of experiments/confirmation/trend.py on this run's measured cells "
            f"(nothing retrained); the earlier judgement: {_agreement(before)} (judged_before in the .json)")
    head = text[:text.index(f"\nconfirm {before.target} at T = ") + 1]
    head = "\n".join(line for line in head.split("\n") if not line.startswith("judged again: "))
    lines = head.rstrip("\n").split("\n")
    lines.insert(next(i for i, line in enumerate(lines) if line.startswith("date: ")) + 1, note)
    with open(f"{path}.txt", "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n\n" + str(after) + "\n")
    doc.setdefault("judged_before", {"agreement": list(before.agreement),
                                     "rows": [{"heads": list(r.heads), "agree": r.agree, "reason": r.judgement.reason}
                                              for r in before.rows]})
    doc.update(confirmation=after.to_json(), judged_again=when)
    with open(f"{path}.json", "w", encoding="utf-8") as out:
        json.dump(doc, out, indent=1)
    print(f"{name}: {_agreement(before)} before, {_agreement(after)} now", flush=True)
    return 0 if after.confirms else 1


def _agreement(table: Confirmation) -> str:
    good, total = table.agreement
    return f"{good}/{total} judged rows agree" + ("" if total else " (nothing judged)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=[*CASES, "all"])
    parser.add_argument("--budget", help="default: 14m, or 3m for the README's example")
    parser.add_argument("--results", default="results")
    parser.add_argument("--rejudge", action="store_true", help="judge the committed runs again; train nothing")
    args = parser.parse_args()
    names = list(TRAINED) if args.case == "all" else [args.case]
    if args.rejudge:
        return max(rejudge_case(name, args.results) for name in names)
    os.makedirs(args.results, exist_ok=True)   # before training: a missing folder must not lose a run's tables
    return max(run_case(name, args.budget or BUDGETS.get(name, "14m"), args.results) for name in names)


if __name__ == "__main__":
    sys.exit(main())
