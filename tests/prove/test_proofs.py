"""The proof scripts (proofs/): every known result holds, mismatches are reported, the CLI keeps its contract.

The proofs run once (a module fixture) and serve both the "every proof holds" test and the JSON schema
test; the CLI's exit codes are checked on a stand-in proof that does not hold, its bad-input handling in a
subprocess (one line on stderr, no traceback), and one real proof end to end.
"""
from __future__ import annotations

import doctest
import importlib
import json
import re
import subprocess
import sys

import pytest
import sympy
from support.paths import ROOT

import infoflow_smt as ifs
import proofs
from proofs import cli, harness, head_count, literature, render
from proofs.result import Evidence, ProofResult

PROOF_MODULES = [f"proofs.{name}" for name in proofs.ALL]


@pytest.fixture(scope="module")
def results() -> tuple[ProofResult, ...]:
    return proofs.prove_all()


def test_every_proof_holds(results):
    assert [r.name for r in results] == list(proofs.ALL)
    failing = [r for r in results if not r.holds]
    assert not failing, "\n".join(render.text(failing))
    for r in results:
        one_sentence = r.statement.endswith(".") and not re.search(r"[.;]\s+[A-Z]", r.statement)
        assert one_sentence, r.statement
        assert "Paper" in r.statement and any(w in r.statement for w in ("Theorem", "Experiment", "Conjecture"))
        assert r.general is not None and r.general.holds and r.general.frontiers, r.name
        assert len({e.architecture for e in r.evidence}) >= 3, f"{r.name}: tried on too few architectures"
        for e in r.evidence:
            if e.obtained_status == "feasible":
                assert e.replayed is True, (r.name, e)
            if e.obtained_status == "infeasible":
                assert e.explanation and all(s.endswith(".") for s in e.explanation), (r.name, e)


def test_json_document_schema(results):
    document = json.loads(render.json_document(results))
    assert isinstance(document, list) and [p["name"] for p in document] == list(proofs.ALL)
    for proof in document:
        assert tuple(proof) == render.SCHEMA_KEYS
        assert isinstance(proof["holds"], bool) and isinstance(proof["seconds"], float)
        assert proof["general"]["holds"] is True and proof["general"]["frontiers"]
        for frontier in proof["general"]["frontiers"]:
            assert {"frontier", "head_bound", "layer_bound", "explanation"} <= set(frontier)
        for ev in proof["instances"]:
            assert tuple(ev) == render.EVIDENCE_KEYS
            assert isinstance(ev["obtained_exponent"], str) and isinstance(ev["explanation"], list)
            sympy.sympify(ev["obtained_exponent"])  # sympy's str reads back


def test_a_mismatch_is_reported_not_hidden():
    arch = ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2)
    wrong = harness.observe("max_retrieval", arch, "infeasible", harness.linear())
    assert not wrong.matches and "status feasible, expected infeasible" in wrong.detail
    assert "exponent 1, expected linear in T" in wrong.detail
    broken = harness.observe("no_such_target", arch, "feasible", harness.exactly(1))
    assert broken.obtained_status == "error" and "InvalidSpecError" in broken.detail
    result = harness.run_proof("demo", "A statement.", lambda: [wrong])
    assert not result.holds and result.mismatches == (wrong,)
    assert not harness.run_proof("empty", "A statement.", list).holds  # no evidence proves nothing


def _failing_proof() -> ProofResult:
    ev = Evidence("max_retrieval", "heads=(1,), E=8, d=2", "infeasible", "feasible", "linear in T",
                  sympy.Integer(1), True, matches=False, detail="status feasible, expected infeasible")
    return ProofResult("failing", "A statement that does not hold.", False, (ev,), 0.1)


def test_cli_exit_codes_and_report(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(proofs, "ALL", {"failing": _failing_proof})
    report = tmp_path / "report.md"
    assert cli.main(["--report", str(report)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("failing  DOES NOT HOLD")
    assert "MISMATCH" in out and "why: status feasible, expected infeasible" in out
    assert "| [failing](#failing) | **no** |" in report.read_text()
    assert cli.main(["failing", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)[0]["holds"] is False
    assert cli.main(["failing"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "A statement that does not hold." in lines[1] and lines[-1] == "0 of 1 proofs hold (0.1 s)."


@pytest.mark.parametrize("argv, message", [
    (["no_such_proof"], "unknown proof 'no_such_proof'"),
    (["--all", "kth_retrieval"], "not both"),
    (["--frobnicate"], "unrecognized arguments"),
    (["kth_retrieval", "--report", "/no/such/folder/report.md"], "the folder /no/such/folder does not exist"),
])
def test_cli_bad_input(argv, message, capsys):
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and message in captured.err


def test_cli_unknown_name_in_a_subprocess_names_the_known_ones():
    run = subprocess.run([sys.executable, "-m", "proofs", "no_such_proof"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120, check=False)
    assert run.returncode == 2 and run.stdout == "" and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "no_such_proof" in run.stderr
    assert all(name in run.stderr for name in proofs.ALL)


def test_cli_one_real_proof_as_json_end_to_end():
    run = subprocess.run([sys.executable, "-m", "proofs", "kth_retrieval", "--json"], capture_output=True,
                         text=True, cwd=ROOT, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    (proof,) = json.loads(run.stdout)
    assert proof["name"] == "kth_retrieval" and proof["holds"] is True
    # (3,) at E = 32: the k-th retrieval in heads of width 32/3, cheaper than aggregating at that width
    assert {ev["obtained_exponent"] for ev in proof["instances"]} >= {"T/9 - 1/3", "3*T/35 - 9/35", "1"}


def _doctests():
    """Every docstring example of the package, except the proof modules' own (they run the whole proof,
    which test_every_proof_holds already does)."""
    finder = doctest.DocTestFinder()
    names = ["proofs", "proofs.result", "proofs.harness", "proofs.render", "proofs.cli", *PROOF_MODULES]
    for name in names:
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if test.examples and not (name in PROOF_MODULES and test.name == name):
                yield test


@pytest.mark.parametrize("test", list(_doctests()), ids=lambda t: t.name)
def test_docstring_examples(test):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.failures == 0, f"{test.name}: {runner.failures} failing example(s)"


def test_json_lists_eight_results_with_their_general_claims(results):
    document = json.loads(render.json_document(results))
    assert len(document) == 8
    assert all({"name", "statement", "holds", "instances", "general"} <= set(p) for p in document)


def _result(results, name: str) -> ProofResult:
    return next(r for r in results if r.name == name)


def test_every_literature_entry_of_the_catalogue_is_set_beside_its_paper(results):
    """Each catalogue entry citing an arXiv paper has a row: the paper's claim, the citation, the model's
    verdict, and where they differ the assumption named; its instances are in the proof."""
    cited = [name for name in ifs.catalogue.names() if "arXiv" in ifs.catalogue.entry(name).source]
    assert cited and {r.name for r in literature.RESULTS} == set(cited)
    proof = _result(results, "literature")
    table = "\n".join(proof.notes)
    targets = {e.target.split(":")[0] for e in proof.evidence}
    for row in literature.RESULTS:
        assert "arXiv" in row.citation and row.claim and row.verdict and row.name in targets
        assert f"| `{row.name}` | {row.citation} |" in table
    khop = next(r for r in literature.RESULTS if r.name == "k_hop_induction")
    assert khop.agrees and "pointer doubling" in khop.verdict
    assert all(r.differs for r in literature.RESULTS if not r.agrees)  # every disagreement names its assumption
    assert proof.differences == literature.differences()                # and is printed in the terminal (render)


def test_k_hop_induction_is_decided_in_logarithmic_depth(results):
    """Pointer doubling: L layers of one head follow 2**(L-1) - 1 hops, so four and seven hops take four layers
    and three take three, one layer fewer being inefficient."""
    decided = {(e.target, e.architecture): e.obtained_status for e in _result(results, "literature").evidence}
    layers = {L: ifs.Architecture(heads=(1,) * L, embed_dim=16, input_dim=2, positional=True) for L in (2, 3, 4)}
    for k, frontier in ((3, 3), (4, 4), (7, 4)):
        assert decided[(f"k_hop_induction:k={k}", str(layers[frontier - 1]))] == "infeasible"
        assert decided[(f"k_hop_induction:k={k}", str(layers[frontier]))] == "feasible"


def test_hop_k_read_at_the_last_position_takes_the_layers_pointer_doubling_takes():
    """hop_k at the last position, as at the output token, in ceil(log2(k + 1)) + 1 layers: at k = 3 position T
    makes the next hop from itself in layer 2, which is the first hop (the form a position makes for itself, made
    at T, is the selection that reads x[T]), and in layer 3 retrieves the second, whose winner made the third for
    itself (the program the independent checker found, verify/flow_search.py)."""
    arch = lambda layers: ifs.Architecture(heads=(1,) * layers, embed_dim=16, input_dim=2, positional=True,
                                           readout="last")
    assert ifs.decide("hop_k:k=3", arch(3)).feasible
    assert not ifs.decide("hop_k:k=3", arch(2)).feasible


@pytest.mark.parametrize("length, D, heads, width, k", [
    (128, 2, 1, 2, 6.5),              # paper 2's own examples of its lower bound (papers.md, Theorem 2(2))
    (1024, 4, 3, 24, 250 / 28 - 1),   # about 7.9
    (128, 4, 3, 24, 26 / 28 - 1),     # about -0.07: vacuous at this T
])
def test_paper_2s_lower_bound_is_the_papers_k(length, D, heads, width, k):
    assert float(head_count.paper2_exponent(D, heads, width).subs(harness.T, length)) == pytest.approx(k)


def test_paper_2s_exponents_are_stated_beside_the_models(results):
    """gamma stays a symbol, as in the paper; the model's exponents are credited to paper 1's laws."""
    assert head_count.paper2_exponent(3, 3, 12) == head_count.GAMMA and head_count.GAMMA.is_Symbol
    heads = _result(results, "head_count")
    assert "paper 2 has gamma" in heads.statement and "\\gamma" in "\n".join(heads.notes)
    assert "1 + \\gamma" in "\n".join(_result(results, "decoding_cost").notes)
    assert "What a proof here shows" in render.markdown(results)


def test_the_committed_report_is_current(results):
    """docs/proofs.md is what ``python -m proofs --report docs/proofs.md`` writes (it has no timings)."""
    assert (ROOT / "docs" / "proofs.md").read_text() == render.markdown(results)


def test_a_run_out_of_time_is_unknown_not_disproved(capsys):
    """One deadline for the whole run: what is unfinished is UNKNOWN, exit 3, never a disproof."""
    assert cli.main(["depth_separation", "--timeout", "0.05"]) == 3
    out = capsys.readouterr().out
    assert "UNKNOWN" in out and "1 unknown" in out and "DOES NOT HOLD" not in out
    assert cli.main(["depth_separation", "--timeout", "-1"]) == 2


def _undecided_proof() -> ProofResult:
    ev = Evidence("triangle_center", "heads=(8, 8, 8), E=64, d=4", "infeasible", "unknown", "linear in T",
                  sympy.nan, None, matches=False, detail="status unknown, expected infeasible")
    ok = Evidence("max_retrieval", "heads=(1,), E=8, d=2", "feasible", "feasible", "1", sympy.Integer(1), True,
                  matches=True)
    return ProofResult("undecided", "A statement the solver ran out of time on.", False, (ok, ev), 0.1)


def test_an_unknown_answer_exits_3_and_names_the_questions_it_rests_on(monkeypatch, capsys):
    monkeypatch.setattr(proofs, "ALL", {"undecided": _undecided_proof, "failing": _failing_proof})
    assert cli.main(["undecided"]) == 3
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("(2 instances, 0 mismatches, 1 unknown)")
    assert any(line.startswith("  UNKNOWN   triangle_center | heads=(8, 8, 8)") for line in lines)
    assert lines[-1] == "0 of 1 proofs hold, 1 unknown: undecided (1 question ran out of time) (0.1 s)."
    assert cli.main(["undecided", "--json"]) == 3
    assert json.loads(capsys.readouterr().out)[0]["undecided"] == ["triangle_center | heads=(8, 8, 8), E=64, d=4"]
    assert cli.main(["undecided", "failing"]) == 1   # a disproof stands whatever else is undecided


def test_an_unknown_frontier_of_the_general_claim_is_named():
    check = harness.FrontierCheck("min_pairwise_dot", {"embed_dim": 16, "input_dim": 4}, ((2, 1),))
    with harness.within(0.001):
        claim = harness.general_claim("A claim.", [check])
    assert claim.unknown and not claim.holds
    assert claim.undecided == ("min_pairwise_dot {'embed_dim': 16, 'input_dim': 4}",)
    assert claim.to_dict()["undecided"] == list(claim.undecided)


def test_infoflow_prove_names_itself_in_an_error(capsys):
    from infoflow_smt import cli as infoflow_cli

    assert infoflow_cli.main(["prove", "nonexistent"]) == 2
    assert capsys.readouterr().err.startswith("infoflow prove: error: ")


def test_a_frontier_with_undecided_cells_leaves_the_general_claim_unknown(monkeypatch):
    from infoflow_smt.deadline import Deadline
    from infoflow_smt.explore import frontier
    from infoflow_smt.smt.solver import forget_recent

    forget_recent()
    real = frontier.Questions.decide
    monkeypatch.setattr(frontier.Questions, "decide",
                        lambda self, arch, deadline: real(self, arch, Deadline(1e-9) if arch.layers == 1 else deadline))
    check = harness.FrontierCheck("linear_max_sum:D=2", {"embed_dim": 16, "input_dim": 4}, ((1, 2), (2, 1)))
    claim = harness.general_claim("A claim.", [check])
    assert not claim.holds and claim.unknown and claim.undecided == ("linear_max_sum:D=2 {'embed_dim': 16, 'input_dim': 4}",)


def test_every_difference_from_a_paper_is_printed_in_the_terminal(results):
    """A difference between the model's answer and a paper's is said where the proofs are read: one line per
    difference under its proof, a count in the last line, the JSON and the report (not only with --report)."""
    differing = [r for r in results if r.differences]
    assert {r.name for r in differing} >= {"multilayer_retrieval", "head_count", "decoding_cost"}
    lines = render.text(results)
    for r in differing:
        for difference in r.differences:
            assert f"  differs from the paper: {difference}" in lines
    count = sum(len(r.differences) for r in results)
    assert f"differs from a paper's in {count} places" in lines[-1]
    assert all(d in render.markdown(results) for r in differing for d in r.differences)
    assert json.loads(render.json_document(results))[0]["differences"] == list(results[0].differences)
    agreeing = ProofResult("demo", "A statement.", True, (), 0.1)
    assert "differ" not in "\n".join(render.text([agreeing]))
