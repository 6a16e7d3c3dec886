"""The demo that ``infoflow`` (and ``python -m infoflow_smt``) runs with no arguments: it decides the
depth-separation target (paper 1, Theorem 1) for a one-layer and a two-layer architecture and prints both
verdicts, each witness replayed."""
from __future__ import annotations

from infoflow_smt.lang import catalogue, trees
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.smt.solver import decide
from infoflow_smt.verify.interpreter import check


def demo() -> int:
    target = catalogue.get("min_pairwise_dot")
    print(f"target: {target.text}")
    print(f"  comparison order {target.comparison_order}, dimension {target.comparison_dimension}, "
          f"number {target.comparison_number}, depth {target.depth}")
    print(trees.describe(target.tree()))
    print()
    for heads in ((4,), (1, 1)):
        arch = Architecture(heads=heads, embed_dim=32, input_dim=2)
        verdict = decide(target, arch)
        print(verdict)
        if verdict.witness is not None:
            report = check(verdict.witness, target, arch, seq_len=16, samples=100, seed=1)
            print(f"  replay: {report}")
        print(f"  ({verdict.stats.seconds:.2f} s, {verdict.stats.solver_calls} solver calls)")
        print()
    return 0
