"""The whole command line run hostilely, and the count of promises kept (issue 40).

Every command (``infoflow`` and its subcommands, ``python -m proofs``, ``python -m experiments compile``) with bad
numbers, bad paths (FIFOs, devices, links, folders, the input file itself), readers that leave early, signals,
short deadlines and hostile names: the probes are data in tests/support/hostile_cases.py (``COMMAND_LINE``), each
run in its own process under a time and a memory limit by tests/support/hostile_probe.py, which checks what
docs/cli.md and docs/claims.md promise of it (the exit code, the wall time, one line on stderr and no traceback,
nothing raw on stdout, no file overwritten that the probe did not name).

    python benchmarks/hostile_cli.py [--jobs 2] [--only TEXT] [--quick]

Prints a line per broken promise (``--all-lines``: per probe), then ``N of M promises kept``; the exit code is 0
when every promise is kept, 1 otherwise.
"""
from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.hostile_cases import COMMAND_LINE  # after the path to tests/ is set
from support.hostile_probe import line_of, run, scratch


def _probe(probe):
    with tempfile.TemporaryDirectory(prefix="hostile-") as folder:
        scratch(Path(folder))
        return run(probe, Path(folder), ROOT)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="probes run at once (default 2: timed probes share "
                        "the cores, so more jobs than cores can break a deadline that holds alone)")
    parser.add_argument("--only", default="", help="run only the probes whose name holds this text")
    parser.add_argument("--quick", action="store_true", help="only the probes the test suite runs")
    parser.add_argument("--all-lines", action="store_true", help="a line for every probe, kept or not")
    args = parser.parse_args()
    probes = [p for p in COMMAND_LINE if args.only in p.name and (p.quick or not args.quick)]
    started = time.perf_counter()
    # deadlines and signals run alone, after the others: a probe beside them would share their cores
    timed = [p for p in probes if p.signal is not None or p.seconds < 15]
    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        outcomes = list(pool.map(_probe, [p for p in probes if p not in timed]))
    outcomes += [_probe(p) for p in timed]
    for outcome in outcomes:
        if args.all_lines or not outcome.kept:
            print(line_of(outcome))
    kept = sum(o.kept for o in outcomes)
    machine = platform.processor() or platform.machine()
    print(f"{kept} of {len(outcomes)} promises kept ({time.perf_counter() - started:.0f} s; {machine}, "
          f"Python {platform.python_version()})")
    return 0 if kept == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
