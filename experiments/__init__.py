"""Experiments: train real transformers on the solver's targets and compare with its verdicts.

The only part of the project that imports torch. One folder per stage; ``training`` is below the other three,
and ``confirmation`` also sets the compiled witness (``compilation``) beside its trained networks:

* ``training``      seeded data, the papers' transformer (a batch of models in one forward), an optimizer
                    step, the trainer (warm-up, cosine, early stopping, validation NMSE)
* ``tables``        profiles of the papers' tables: run, stored, reported beside the papers' figures, and
                    validated against ``ifs.decide``
* ``confirmation``  one decided case: the architecture and its neighbours trained at several lengths within a
                    budget, judged by their trend over T
* ``compilation``   a feasible witness as explicit softmax-transformer weights, and its NMSE over beta and T
                    (docs/compile.md)

Command line: ``python -m experiments run|validate|report|confirm|compile`` (see ``--help``).
Python: ``experiments.confirm(verdict, budget=60)``, ``experiments.parse_budget("2m")``,
``experiments.compile(verdict, beta=64)``, ``experiments.check_compiled(verdict, betas, seq_lens, samples)``.
"""
from __future__ import annotations

from typing import Any

__all__ = ["CompiledCheck", "Confirmation", "check_compiled", "compile", "confirm", "parse_budget"]


def __getattr__(name: str) -> Any:
    """Lazy: ``import experiments`` stays light; torch loads on first use of ``confirm``."""
    if name in ("confirm", "Confirmation"):
        from experiments.confirmation import confirming as module

        return getattr(module, name)
    if name == "compile":
        from experiments.compilation.compiling import compile as compile_witness

        return compile_witness
    if name in ("check_compiled", "CompiledCheck"):
        from experiments.compilation import check

        return getattr(check, name)
    if name == "parse_budget":
        from experiments.confirmation.budget import parse_budget

        return parse_budget
    raise AttributeError(f"module 'experiments' has no attribute {name!r}")
