"""infoflow_smt: decide, with an SMT solver, which transformer architectures compute a target efficiently.

The public names (see docs/api.md) are loaded on first use, so ``import infoflow_smt`` stays light and the
data layer never pulls in z3: ``ifs.parse_target`` needs only numpy and sympy, ``ifs.decide`` loads z3.
"""
from __future__ import annotations

import importlib
from typing import Any

from infoflow_smt.errors import InfoflowError, InvalidSpecError, SolverUnknownError, WitnessCheckError
from infoflow_smt.symbols import T

__version__ = "0.1.0"

# public module -> where it lives
_MODULES = {
    "catalogue": "lang.catalogue",
    "cost": "model.cost",
    "trees": "lang.trees",
    "program": "model.program",
    "interpreter": "verify.interpreter",
}

# public name -> the module that defines it (imported on first access)
_LAZY = {
    "Architecture": "model.architecture",
    "Status": "report.verdict",
    "Verdict": "report.verdict",
    "Reason": "report.explain",
    "Target": "lang.target",
    "parse_target": "lang.target",
    "Program": "model.program",
    "Op": "model.program",
    "check": "verify.interpreter",
    "CheckReport": "verify.interpreter",
    "decide": "smt.solver",
    "minimize": "smt.solver",
    "ParetoFront": "smt.solver",
    "Front": "smt.solver",   # the alias docs/api.md named first
    "export_smtlib": "smt.solver",
    "forget_recent": "smt.solver",
    "decide_all": "explore.frontier",
    "Frontier": "explore.frontier",
    "sweep": "explore.sweeps",
    "plot_flow": "report.plots",
    "Sweep": "explore.sweeps",
    "Cell": "explore.sweeps",
    "enumerate_programs": "verify.enumerator",
    "brute_force_decide": "verify.enumerator",
}

__all__ = ["T", "InfoflowError", "InvalidSpecError", "SolverUnknownError", "WitnessCheckError",  # noqa: PLE0604
           *_MODULES, *_LAZY]  # the lazily imported names: strings, the keys of _MODULES and _LAZY


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        value: Any = importlib.import_module(f".{_MODULES[name]}", __name__)
    elif name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    else:
        raise AttributeError(f"module 'infoflow_smt' has no attribute {name!r}")
    globals()[name] = value
    return value
