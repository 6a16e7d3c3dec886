"""The ``>>>`` examples in the package's docstrings (and in proofs/ and experiments/) run and show true output.

Each module is one test, so a failure names the module; doctest's own report (the example, what it printed,
what it should have printed) is in the captured output. A second check makes sure no example is written
where doctest cannot find it (a comment, a string that is not a docstring): such an example would never run.
"""
from __future__ import annotations

import doctest
import importlib
import re

import pytest
from support.paths import ROOT

PACKAGES = ("infoflow_smt", "proofs", "experiments")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# A proof module's own example re-runs the whole proof (``prove_head_count().holds``): seconds each, and the
# same statement tests/prove/test_proofs.py asserts; those examples are left to that test.
WHOLE_PROOF = re.compile(r"\.holds\b")
PROMPT = re.compile(r"^\s*>>> ", re.MULTILINE)


def module_names() -> list[str]:
    """Every importable module of the packages; a ``__main__`` runs a program when imported, so none."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__main__":
                continue
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def source(name: str):
    """The file of module ``name``: a package's is its ``__init__.py``."""
    path = ROOT.joinpath(*name.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def load(name: str):
    if name.split(".")[0] == "experiments":
        pytest.importorskip("torch", reason="experiments/ needs torch (pip install -e .[experiments])")
    return importlib.import_module(name)


def doctests(module) -> list[doctest.DocTest]:
    return [test for test in doctest.DocTestFinder().find(module) if test.examples]


@pytest.mark.parametrize("name", module_names())
def test_docstring_examples_run(name: str) -> None:
    module = load(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in doctests(module):
        if name.startswith("proofs") and any(WHOLE_PROOF.search(e.source) for e in test.examples):
            continue
        runner.run(test)
    results = runner.summarize(verbose=False)
    assert results.failed == 0, f"{results.failed} of {results.attempted} examples of {name} failed (output above)"


@pytest.mark.parametrize("name", module_names())
def test_every_example_is_where_doctest_finds_it(name: str) -> None:
    module = load(name)
    written = len(PROMPT.findall(source(name).read_text()))
    found = sum(len(test.examples) for test in doctests(module))
    assert found == written, f"{name}: {written} '>>>' lines, doctest finds {found} examples"


def test_the_package_has_examples() -> None:
    """The two tests above pass vacuously if no module is found or no example in them."""
    modules = [importlib.import_module(n) for n in module_names() if n.startswith("infoflow_smt")]
    assert len(modules) > 30
    assert sum(len(doctests(m)) for m in modules) > 30
