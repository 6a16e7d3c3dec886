"""The layering: the data layer imports neither z3 nor torch; z3 lives in the encoder and solver only;
torch lives under experiments/ only."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DATA_LAYER = ["expr", "errors", "symbols", "language", "realization", "evaluate", "target", "catalogue",
              "trees", "architecture", "cost", "program", "interpreter", "verdict", "explain", "enumerator",
              "machine"]

BLOCKER = """
import sys, importlib.abc
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in ('z3', 'torch'):
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
"""


def test_data_layer_imports_and_works_with_z3_and_torch_blocked():
    script = BLOCKER + f"""
import importlib
for name in {DATA_LAYER!r}:
    importlib.import_module('infoflow_smt.' + name)
import numpy as np
import infoflow_smt as ifs
from infoflow_smt.program import Action, Mode, Op, Program
tgt = ifs.catalogue.get('min_pairwise_dot')
assert tgt.comparison_order == 2 and tgt.depth == 2
prog = Program((Action(1, 1, 'input', Op(Mode.RETRIEVE, 'g0.t')), Action(2, 1, 'output', Op(Mode.RETRIEVE, 'g0.s'))), layers=2)
assert ifs.check(prog, tgt, ifs.Architecture(heads=(1, 1), input_dim=2), seq_len=8, samples=5).ok
assert 'z3' not in sys.modules and 'torch' not in sys.modules
try:
    ifs.decide
except ImportError as err:
    assert 'blocked' in str(err)
else:
    raise AssertionError('the solver imported without z3')
print('ok')
"""
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def _importers(module: str) -> set[str]:
    pattern = re.compile(rf"^\s*(import {module}\b|from {module}\b)", re.MULTILINE)
    found = set()
    for path in list((ROOT / "infoflow_smt").rglob("*.py")) + list((ROOT / "experiments").rglob("*.py")):
        if pattern.search(path.read_text()):
            found.add(str(path.relative_to(ROOT)))
    return found


def test_z3_is_imported_by_the_encoder_and_solver_only():
    assert _importers("z3") == {"infoflow_smt/encoder.py", "infoflow_smt/solver.py"}


def test_torch_is_imported_under_experiments_only():
    assert all(path.startswith("experiments/") for path in _importers("torch"))
