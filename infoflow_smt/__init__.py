"""infoflow_smt: decide, with an SMT solver, which transformer architectures compute a target efficiently.

The public names (see docs/api.md) are loaded on first use, so ``import infoflow_smt`` stays light and the
data layer never pulls in z3: ``ifs.parse_target`` needs only numpy and sympy, ``ifs.decide`` loads z3.
"""
from __future__ import annotations

import importlib
from typing import Any

from .errors import InfoflowError, InvalidSpecError, SolverUnknownError, WitnessCheckError
from .symbols import T

__version__ = "0.1.0"

# public name -> module that defines it (imported on first access)
_LAZY = {
    "Architecture": "architecture",
    "Status": "verdict",
    "Verdict": "verdict",
    "Reason": "verdict",
    "Target": "target",
    "parse_target": "target",
    "catalogue": None,  # a module
    "cost": None,
    "trees": None,
    "program": None,
    "interpreter": None,
    "Program": "program",
    "Op": "program",
    "check": "interpreter",
    "CheckReport": "interpreter",
    "decide": "solver",
    "minimize": "solver",
    "Front": "solver",
    "export_smtlib": "solver",
    "decide_all": "frontier",
    "Frontier": "frontier",
    "sweep": "sweeps",
    "plot_flow": "plots",
    "Sweep": "sweeps",
    "Cell": "sweeps",
    "enumerate_programs": "enumerator",
    "brute_force_decide": "enumerator",
}

__all__ = ["T", "InfoflowError", "InvalidSpecError", "SolverUnknownError", "WitnessCheckError",  # noqa: PLE0604
           *_LAZY]  # the lazily imported names: strings, the keys of _LAZY


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'infoflow_smt' has no attribute {name!r}")
    module_name = _LAZY[name]
    if module_name is None:
        value = importlib.import_module(f".{name}", __name__)
    else:
        value = getattr(importlib.import_module(f".{module_name}", __name__), name)
    globals()[name] = value
    return value
