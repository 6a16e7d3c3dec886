"""The exported SMT-LIB 2 script, read by a second solver (cvc5): it must agree with z3 and ``decide``.

``export_smtlib(target, arch, path)`` writes the decision as a script that is satisfiable iff an efficient
program exists. cvc5 (``cvc5.Solver`` + ``cvc5.InputParser``, models off) reads the file and must answer
``sat`` exactly on FEASIBLE decisions and ``unsat`` on INFEASIBLE ones; z3 reads the same file too.

The script must be plain SMT-LIB 2.6: z3's own printer writes a dialect (``(_ pbeq ..)``, ``(_ at-most ..)``,
quoted symbols with escaped bars, a bare ``and`` for an empty conjunction, one-term sums), which cvc5 and
even z3 itself do not read back; ``export_smtlib`` builds a portable encoding for that reason.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import z3
from support.cases import SECTION5, section5_id
from support.generators import random_case

import infoflow_smt as ifs

cvc5 = pytest.importorskip("cvc5", reason="cvc5's python bindings are not installed (pip install cvc5)")

DIALECT = ("(_ pbeq", "(_ pble", "(_ pbge", "(_ at-most", "(_ at-least", "\\|")


# ---- the two solvers on a file ---------------------------------------------------------------------
def cvc5_answer(path: Path) -> str:
    """What cvc5 answers to the script's (last) check-sat: ``sat``, ``unsat`` or ``unknown``."""
    solver = cvc5.Solver(cvc5.TermManager())
    solver.setOption("produce-models", "false")
    parser = cvc5.InputParser(solver)
    parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(path))
    symbols = parser.getSymbolManager()
    answers = []
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        output = command.invoke(solver, symbols).strip()
        if output in ("sat", "unsat", "unknown"):
            answers.append(output)
    assert answers, f"cvc5 ran {path} without a check-sat answer"
    return answers[-1]


def z3_answer(path: Path) -> str:
    solver = z3.Solver()
    solver.from_file(str(path))
    return str(solver.check())


def compare(target, arch, tmp_path: Path, name: str = "decision") -> None:
    verdict = ifs.decide(target, arch)
    assert verdict.status is not ifs.Status.UNKNOWN
    want = "sat" if verdict.feasible else "unsat"
    path = ifs.export_smtlib(target, arch, tmp_path / f"{name}.smt2")
    assert z3_answer(path) == want, f"z3 on the exported script disagrees with decide: {verdict}"
    assert cvc5_answer(path) == want, f"cvc5 disagrees with z3 on {target} with {arch}: z3 says {want}"


# ---- the tests -------------------------------------------------------------------------------------
def test_export_writes_an_smtlib_script(tmp_path: Path) -> None:
    path = ifs.export_smtlib("min_pairwise_dot", ifs.Architecture(heads=(1, 1), embed_dim=8, input_dim=2),
                             tmp_path / "out.smt2")
    text = Path(path).read_text()
    assert text.rstrip().endswith("(check-sat)") and "(declare-const" in text and "(assert" in text


def test_export_is_standard_smtlib(tmp_path: Path) -> None:
    """Once z3's dialect (found by this test): read back by both solvers, with no z3-only construct."""
    arch = ifs.Architecture(heads=(1, 1), embed_dim=8, input_dim=2)
    path = ifs.export_smtlib("min_pairwise_dot", arch, tmp_path / "raw.smt2")
    text = path.read_text()
    assert [d for d in DIALECT if d in text] == []
    assert not re.search(r"[ (](and|or)\)", text) and not re.search(r"\(\+ [^ ()]+\)", text)
    assert z3_answer(path) == "sat" and cvc5_answer(path) == "sat"


@pytest.mark.parametrize("case", SECTION5, ids=section5_id)
def test_cvc5_agrees_on_section_5(case, tmp_path: Path) -> None:
    spec, arch, _ = case
    compare(ifs.catalogue.parse_spec(spec), arch, tmp_path)


RANDOM = [random_case(i) for i in range(1000, 1030)]


@pytest.mark.parametrize("case", RANDOM, ids=lambda c: f"case{c.index}")
def test_cvc5_agrees_on_random_cases(case, tmp_path: Path) -> None:
    compare(ifs.parse_target(case.text), case.arch, tmp_path)


def test_any_cost_export_is_satisfiable_when_some_program_exists(tmp_path: Path) -> None:
    """With ``efficient=False`` every cost level is allowed: sat iff the best exponent is finite."""
    for spec, arch in [("kth_largest:k=2", ifs.Architecture(heads=(1,), embed_dim=8)),
                       ("specific_positions", ifs.Architecture(heads=(1,), embed_dim=8))]:
        verdict = ifs.decide(spec, arch)
        path = ifs.export_smtlib(spec, arch, tmp_path / "any.smt2", efficient=False, overwrite=True)
        want = "unsat" if verdict.exponent.is_infinite else "sat"
        assert z3_answer(path) == want and cvc5_answer(path) == want, str(verdict)
