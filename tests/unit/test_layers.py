"""The layering: the data layer imports neither z3 nor torch; z3 lives in the encoder and solver only;
torch lives under experiments/ only, and the command line hands commands over to experiments/ and proofs/
without loading them. And the tests mirror the layers: every module has its unit tests. (Circles of imports
and private names read across modules: test_imports.py.)"""
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
    packages = ("infoflow_smt", "experiments", "proofs")
    paths = [path for package in packages for path in (ROOT / package).rglob("*.py")]
    return {str(path.relative_to(ROOT)) for path in paths if pattern.search(path.read_text())}


def test_z3_is_imported_by_the_smt_layer_only():
    assert _importers("z3") == {"infoflow_smt/smt/encoder.py", "infoflow_smt/smt/solver.py",
                                "infoflow_smt/smt/cancel.py", "infoflow_smt/smt/contexts.py"}


def test_torch_is_imported_under_experiments_only():
    assert all(path.startswith("experiments/") for path in _importers("torch"))


def test_the_command_line_loads_the_delegated_commands_only_when_asked():
    """``infoflow prove / experiment / compile`` are registered in proofs/commands.py and experiments/commands.py,
    imported by the command line when asked for: importing it loads neither package, and no registry loads
    torch."""
    script = """
import sys
import infoflow_smt, infoflow_smt.cli as cli
assert not {'torch', 'experiments', 'proofs'} & set(sys.modules), sorted(sys.modules)
mains = {name: cli._delegated(name) for name in cli.DELEGATED}
assert [m.__module__ for m in mains.values()] == ['proofs.cli', 'experiments.__main__',
                                                  'experiments.compilation.command']
assert 'torch' not in sys.modules
print('ok')
"""
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_the_layers_contract_holds():
    """pyproject.toml's import-linter contracts: imports run one way, z3 and torch stay in their layers."""
    result = subprocess.run(["lint-imports", "--no-cache"], check=False, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_module_has_its_unit_tests():
    """``infoflow_smt/<sub>/<module>.py`` is tested in ``tests/unit/<sub>/test_<module>.py`` (a top-level
    module in ``tests/unit/test_<module>.py``); ``__main__`` is ``python -m`` of the cli (test_cli.py)."""
    modules = [path.relative_to(PACKAGE) for path in PACKAGE.rglob("*.py")
               if path.stem not in ("__init__", "__main__")]
    unit = ROOT / "tests" / "unit"
    missing = sorted(str(m) for m in modules if not (unit / m.parent / f"test_{m.name}").exists())
    assert len(modules) >= 25 and missing == [], f"modules without tests/unit/<sub>/test_<module>.py: {missing}"
