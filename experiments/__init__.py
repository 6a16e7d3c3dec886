"""Experiments: train real transformers on the solver's targets and compare with its verdicts.

The only part of the project that imports torch. One concern per module, in pipeline order:

* ``data``     seeded inputs with the papers' distributions, labels from ``Target.evaluate``
* ``model``    the papers' transformer, as a batch of models sharing one forward pass
* ``step``     one optimizer step: reference, fast (fused), CUDA graph
* ``train``    the recipe (warm-up, cosine, early stopping), batched jobs, validation NMSE, learning curves
* ``profiles`` smoke / cpu / paper: tables of target, T, architectures, recipes, and the checks they must pass
* ``store``    SQLite record of every run (config, seed, versions, hardware, metrics), checked on open
* ``run``      plans a profile's jobs, skips finished runs, trains the rest (``infoflow_smt.processes``: workers that die with their parent)
* ``validate`` ``ifs.decide`` versus trained NMSE over a profile's tables: the agreement table
* ``confirm``  one decided case: the architecture and its neighbours, trained at several lengths within a
               budget and judged by their trend over T (``trend``: the rule; ``confirm_table``: the table)
* ``witness_plan``, ``compiler``, ``compiled_check``  a feasible witness as explicit softmax-transformer weights,
  and its NMSE over beta and T (docs/compile.md)
* ``report``   tables, JSON, checks; ``plots`` NMSE against T and heads beside ``paper_figures``, curves

Command line: ``python -m experiments run|validate|report|confirm`` (``python -m experiments --help``).
Python: ``experiments.confirm(verdict, budget=60)``, ``experiments.parse_budget("2m")``,
``experiments.compile(verdict, beta=64)``, ``experiments.check_compiled(verdict, betas, seq_lens, samples)``.
"""
from __future__ import annotations

from typing import Any

__all__ = ["CompiledCheck", "Confirmation", "check_compiled", "compile", "confirm", "parse_budget"]


def __getattr__(name: str) -> Any:
    """Lazy: ``import experiments`` stays light; torch loads on first use of ``confirm``."""
    if name in ("confirm", "Confirmation"):
        from . import confirmation as module

        return getattr(module, name)
    if name == "compile":
        from .compiler import compile as compile_witness

        return compile_witness
    if name in ("check_compiled", "CompiledCheck"):
        from . import compiled_check

        return getattr(compiled_check, name)
    if name == "parse_budget":
        from .budget import parse_budget

        return parse_budget
    raise AttributeError(f"module 'experiments' has no attribute {name!r}")
