"""The first step of compiling: the verdict's witness, and the comparison tree it computes, checked against the
architecture it is to be written for (docs/compile.md, "What does not compile").

A verdict with no witness (infeasible, unknown) is refused (``CompileRefusal``); so is what the compiler does not
write at all (an answer at every position, an answer read at position ``T``). A witness that does not fit the
architecture it is compiled for (the heads, layers, positions or mask of a verdict edited by hand, or of another
architecture) is bad input: ``InvalidSpecError`` in one line naming the mismatch, from the reference interpreter's
own check (``infoflow_smt.check``: the program's structure against the architecture, then a replay on a few
inputs), before any weight is written.
"""
from __future__ import annotations

import networkx as nx
import numpy as np

import infoflow_smt as ifs
from infoflow_smt.errors import CompileRefusal, InvalidSpecError
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.model.program import Program

CHECK_SAMPLES = 6   # inputs the witness is replayed on against the architecture, before compiling


def witness(verdict, ffn: str = "exact") -> tuple[Program, nx.DiGraph]:
    """The program to compile and the comparison tree it computes; what cannot be compiled at all is refused
    (``CompileRefusal``), a witness that does not fit its architecture is ``InvalidSpecError``, and an unknown
    ``ffn`` is a ``ValueError``."""
    if not getattr(verdict, "feasible", False) or verdict.witness is None:
        best = getattr(verdict, "best_program", None)
        cheapest = f"; its cheapest program is:\n{best}" if best is not None else ""
        raise CompileRefusal("infeasible", str(getattr(verdict, "target", verdict)),
                             f"the verdict is {getattr(verdict.status, 'value', verdict.status)}: there is no "
                             f"witness to compile{cheapest}")
    if ffn not in ("exact", "mlp"):
        raise ValueError(f"ffn must be 'exact' or 'mlp', got {ffn!r}")
    target, arch = verdict.target, verdict.architecture
    if getattr(target, "per_position", False):
        raise CompileRefusal("mode", str(target),
                             "the compiled model reads one answer at the output token; a target with an answer at "
                             "every position (it names o) is not supported by the compiler yet")
    if getattr(arch, "readout", "output") != "output":
        raise CompileRefusal("mode", str(target), f"the compiled model reads its answer at the output token; an "
                             f"answer read at position T (readout={arch.readout!r}) is not compiled yet")
    program = verdict.witness
    mismatch = fits(program, target, arch)
    if mismatch:
        raise InvalidSpecError(f"the witness does not fit {arch}: {mismatch}", "witness")
    return program, comparison_tree(target, program.order_map)


def fits(program: Program, target, arch) -> str | None:
    """Why ``program`` does not compute ``target`` on ``arch`` (one line), or None: the interpreter's structural
    problems (heads, layers, positions, the mask's rules), else the first input its replay fails on."""
    longest = max([abs(getattr(a.where, "position", 0)) for a in program.actions] + [0])
    rng = np.random.default_rng(0)
    inputs = rng.standard_normal((CHECK_SAMPLES, max(8, 2 * longest + 4), arch.input_dim))
    try:
        report = ifs.check(program, target, arch, inputs=inputs, max_failures=1)
    except InvalidSpecError as err:
        return str(err)
    if report.ok:
        return None
    if report.problems:
        return "; ".join(report.problems)
    failure = report.failures[0]
    return f"its replay fails on an input of length {failure.inputs.shape[0]}: {failure.reason}"
