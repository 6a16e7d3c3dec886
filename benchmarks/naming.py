"""What naming a verdict's program costs as a chain of selections grows (issue 39: "a program's name linear in
its text"; ``infoflow_smt/lang/node_text.py``).

    python benchmarks/naming.py [--repeat 3] [--chains 8,16,24,32]

A chain of k selections is k-hop induction written out for any k (the catalogue stops at 16): each hop reads
the token the hop before found, ``x[argmax(dot(x[t2-1], x[argmax(...)]) for t2 in range(2, T+1))]``. For each
k the comparison tree is built first (not timed: it is the solver's, whatever the naming costs), then one
naming of a verdict is timed from cold, every text the tree keeps forgotten first:

``named_ms``     a program that retrieves every selection of the chain, named as a verdict names its witness
                 (``Program.named``: each selection spelt out in full, as ``str(program)`` prints it), its steps
                 in words (``describe_program``: selections read by name, ``x[p7]``) and the definitions of the
                 names (``node_text.named_target``).
``chars``        the characters those texts hold in all.
``ratio``        ``named_ms`` over its value at the first k of the run (k = 8), beside ``chars``' ratio: naming
                 is linear in its text when the two ratios stay alike. The spelt-out names hold about ``k**2``
                 characters (hop k's text spells the k - 1 hops inside it), so both grow about 16x from k = 8 to 32.

Times are the best of ``--repeat`` passes. Before the texts were kept (each nested selection spelt anew at every
level of the chain), the same naming took about 2**k: 1.3 s at k = 16, 16.8 s at k = 20 and over 420 s at k = 24.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

from infoflow_smt.lang import node_text
from infoflow_smt.lang.target import parse_target
from infoflow_smt.lang.trees import comparison_tree, selection_nodes
from infoflow_smt.model.program import Action, Mode, Op, Program
from infoflow_smt.report.explain import describe_program


def chain(k: int) -> str:
    """k dependent selections, each reading the token the one before found (k-hop induction)."""
    text = "x[T]"
    for hop in range(1, k + 1):
        text = f"x[argmax(dot(x[t{hop}-1], {text}) for t{hop} in range(2, T+1))]"
    return text


def naming(target, program: Program) -> int:
    """One naming from cold: the characters it wrote."""
    node_text._KEPT.clear()
    named = program.named(target)
    steps = describe_program(named, target)
    definitions = node_text.named_target(target)[1]
    return (sum(len(text) for _, text in named.names) + sum(map(len, steps))
            + sum(len(text) for _, text, _ in definitions))


def measure(k: int, repeat: int) -> tuple[float, int]:
    target = parse_target(chain(k))
    tree = comparison_tree(target)
    hops = sorted(selection_nodes(tree), key=lambda n: -int(n.split(".")[0][1:]))   # innermost first
    program = Program(tuple(Action(layer, 1, "output", Op(Mode.RETRIEVE, node))
                            for layer, node in enumerate(hops, start=1)), layers=len(hops))
    best, chars = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        chars = naming(target, program)
        best = min(best, time.perf_counter() - start)
    return best, chars


def _machine() -> str:
    """The processor, its cores and the load the figures were measured under."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            name = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{name}, {os.cpu_count()} cores{load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--chains", default="8,16,24,32", help="the chain lengths k (the first is the baseline)")
    args = parser.parse_args()
    print(f"naming a verdict's program, chains of k selections; {_machine()}, Python {platform.python_version()}, "
          f"best of {args.repeat}")
    print(f"{'k':>4} {'named_ms':>10} {'chars':>8} {'ratio':>7} {'chars ratio':>12}")
    base = None
    for k in (int(p) for p in args.chains.split(",")):
        seconds, chars = measure(k, args.repeat)
        base = base or (seconds, chars)
        print(f"{k:>4} {seconds * 1000:>10.2f} {chars:>8} {seconds / base[0]:>7.2f} {chars / base[1]:>12.2f}")


if __name__ == "__main__":
    main()
