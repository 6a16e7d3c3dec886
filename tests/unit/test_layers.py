"""The layering: the data layer imports neither z3 nor torch; z3 lives in the encoder and solver only;
torch lives under experiments/ only. And the tests mirror the layers: every module has its unit tests."""
from __future__ import annotations

import re
import subprocess
import sys

from support.paths import ROOT

PACKAGE = ROOT / "infoflow_smt"
# every module of the layers below smt (pyproject.toml's import-linter contracts name the same layers)
DATA_LAYER = sorted(
    ".".join(path.relative_to(ROOT).with_suffix("").parts)
    for layer in ("lang", "model", "verify", "report") for path in (PACKAGE / layer).glob("*.py")
) + [f"infoflow_smt.{name}" for name in ("errors", "symbols", "limits", "words", "deadline", "machine", "processes",
                                           "files")]

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
    importlib.import_module(name)
import numpy as np
import infoflow_smt as ifs
from infoflow_smt.model.program import Action, Mode, Op, Program
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


def test_z3_is_imported_by_the_smt_layer_only():
    assert _importers("z3") == {"infoflow_smt/smt/encoder.py", "infoflow_smt/smt/solver.py",
                                "infoflow_smt/smt/cancel.py", "infoflow_smt/smt/contexts.py"}


def test_torch_is_imported_under_experiments_only():
    assert all(path.startswith("experiments/") for path in _importers("torch"))


def test_the_layers_contract_holds():
    """pyproject.toml's import-linter contracts: imports run one way, z3 and torch stay in their layers."""
    result = subprocess.run(["lint-imports", "--no-cache"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


# smt/encoder.py's unit tests are being written apart from this tree's (tests/unit/smt/test_encoder.py); until
# they land the encoder is tested through the solver (tests/unit/smt/test_solver.py, tests/properties/).
BEING_WRITTEN = {"smt/encoder.py"}


def test_every_module_has_its_unit_tests():
    """``infoflow_smt/<sub>/<module>.py`` is tested in ``tests/unit/<sub>/test_<module>.py`` (a top-level
    module in ``tests/unit/test_<module>.py``); ``__main__`` is ``python -m`` of the cli (test_cli.py)."""
    modules = [path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py")
               if path.stem not in ("__init__", "__main__")]
    unit = ROOT / "tests" / "unit"
    missing = sorted(str(m) for m in modules
                     if not (unit / m.parent / f"test_{m.name}").exists() and str(m) not in BEING_WRITTEN)
    assert len(modules) >= 25 and missing == [], f"modules without tests/unit/<sub>/test_<module>.py: {missing}"
