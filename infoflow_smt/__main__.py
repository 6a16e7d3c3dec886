"""``python -m infoflow_smt ARGS`` is the ``infoflow`` command (infoflow_smt.cli). With no arguments it runs
the demo: it decides the depth-separation target (paper 1, Theorem 1) for a one-layer and a two-layer
architecture and prints both verdicts, each witness replayed."""
from __future__ import annotations

import sys

import infoflow_smt as ifs


def demo() -> int:
    target = ifs.catalogue.get("min_pairwise_dot")
    print(f"target: {target.text}")
    print(f"  comparison order {target.comparison_order}, dimension {target.comparison_dimension}, "
          f"number {target.comparison_number}, depth {target.depth}")
    print(ifs.trees.describe(target.tree()))
    print()
    for heads in ((4,), (1, 1)):
        arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)
        verdict = ifs.decide(target, arch)
        print(verdict)
        if verdict.witness is not None:
            report = ifs.check(verdict.witness, target, arch, seq_len=16, samples=100, seed=1)
            print(f"  replay: {report}")
        print(f"  ({verdict.stats.seconds:.2f} s, {verdict.stats.solver_calls} solver calls)")
        print()
    return 0


def main(argv: list[str] | None = None) -> int:
    from .cli import main as command
    return command(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    from .cli import entry
    entry()
