"""False "no"s of the solver on random targets, found by the independent checker (issue 37, item 2).

Each target of ``chain_case(i, seed)`` (tests/support/selection_chains.py: chains of selections, one selection
at several hosts, fixed positions anywhere, offsets; positions, mask, readout and rank rule switched at random)
is decided by ``ifs.decide``; where the answer is INFEASIBLE, infoflow_smt/verify/flow_search.py looks for an
efficient program of the model in its own program space. A program it finds and confirms on fresh inputs is a
false "no". Prints the count of targets, the decisions, the searches and every false "no" with its program.

    python benchmarks/false_no_search.py --targets 1000 --seed 0 [--search-budget 10] [--decide-timeout 30]
                                         [--also-feasible]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from support.false_no import DECIDE_TIMEOUT_S, SEARCH_BUDGET_S, Tally, judge
from support.selection_chains import chain_case


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value
    return parse


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=_positive(int), default=1000, help="how many random targets (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="which set of targets (default 0)")
    parser.add_argument("--search-budget", type=_positive(float), default=SEARCH_BUDGET_S,
                        help=f"seconds the search may take per INFEASIBLE target (default {SEARCH_BUDGET_S:g})")
    parser.add_argument("--decide-timeout", type=_positive(float), default=DECIDE_TIMEOUT_S,
                        help=f"seconds ifs.decide may take per target (default {DECIDE_TIMEOUT_S:g})")
    parser.add_argument("--also-feasible", action="store_true",
                        help="search the FEASIBLE verdicts too, and count how often the checker finds a program")
    args = parser.parse_args()
    tally, started = Tally(), time.monotonic()
    try:
        for index in range(args.targets):
            case = chain_case(index, args.seed)
            try:
                found = judge(case, tally, decide_timeout=args.decide_timeout, search_budget=args.search_budget,
                              also_feasible=args.also_feasible)
            except Exception as error:  # noqa: BLE001 - a crash is a finding to report, not the end of the run
                tally.decisions["raised"] += 1
                print(f"{case}: raised {type(error).__name__}: {error}", flush=True)
                continue
            if found is not None:
                print(f"false \"no\" #{len(tally.false_noes)}: {found}", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted after {tally.targets} targets", flush=True)
        print(tally.summary())
        return 130
    print(f"seed {args.seed}: {tally.summary()}; {time.monotonic() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
