"""Claims put to the prover, and ``infoflow check``: a true claim holds, a false one says why, an unknown one
is neither (exit 3), a bad file is one line (exit 2)."""
from __future__ import annotations

from xml.etree import ElementTree

import pytest
import sympy
from support.claim_files import MIXED, TRUE, UNKNOWN
from support.paths import ROOT

import infoflow_smt as ifs
from infoflow_smt import claim_check, claims, cli
from infoflow_smt.claim_check import Outcome

T = ifs.T



def write(tmp_path, text: str, name: str = "claims_mixed.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_true_false_and_unknown_claims(tmp_path):
    report = claim_check.check_file(write(tmp_path, MIXED))
    true, false, unknown = report.results
    assert true.outcome is Outcome.HOLDS and true.found == "feasible, exponent 1" and not true.mismatches
    assert false.outcome is Outcome.FALSE
    assert false.mismatches == ("claimed feasible, the prover says infeasible",
                                "claimed exponent bounded, the best exponent is T/8 - 1")
    assert unknown.outcome is Outcome.UNKNOWN and unknown.found.startswith("unknown (the deadline of 0.001 s")
    assert report.exit_code == 1 and report.count(Outcome.UNKNOWN) == 1
    assert report.summary().endswith("3 claims: 1 hold, 1 false, 1 unknown")


def test_a_false_claim_reads_as_claim_answer_and_reasons(tmp_path):
    [_, false, _] = claim_check.check_file(write(tmp_path, MIXED)).results
    text = str(false)
    assert text.startswith("false: one layer suffices\n  claimed: min_pairwise_dot is feasible on 1 layer of 1 head")
    assert "  prover:  infeasible, exponent T/8 - 1" in text
    assert "why:" in text and "chain of 2 dependent selections" in text   # the prover's reasons


def test_every_architecture_claims_compare_verdict_frontier_and_exponent():
    [claim] = claims.parse({"claim": [{"name": "d2", "target": "intrinsic_dimension:D=2", "architecture": "every",
                                       "expect": "feasible", "frontier": [[2, 2]], "exponent": "T"}]})
    result = claim_check.check(claim)
    assert result.outcome is Outcome.FALSE and result.found == "feasible, frontier (2, 2), (3, 1)"
    assert result.mismatches[0] == "claimed frontier (2, 2), the frontier is (2, 2), (3, 1)"
    assert "claimed exponent T, 2 layers of 2 heads has 1" in result.mismatches
    bounded = claims.parse({"claim": [{"name": "d2", "target": "intrinsic_dimension:D=2", "architecture": "every",
                                       "max_layers": 1, "expect": "infeasible", "frontier": []}]})[0]
    assert claim_check.check(bounded).outcome is Outcome.HOLDS


def test_the_exponent_words():
    assert claim_check.exponent_matches("bounded", sympy.Integer(0))
    assert not claim_check.exponent_matches("bounded", T / 8 - 1)
    assert claim_check.exponent_matches("grows", T / 8 - 1) and not claim_check.exponent_matches("grows", sympy.oo)
    assert claim_check.exponent_matches(sympy.oo, sympy.oo) and not claim_check.exponent_matches(T, sympy.oo)
    assert claim_check.exponent_matches((T - 3) / 9, T / 9 - sympy.Rational(1, 3))


def test_junit_xml_and_html(tmp_path):
    report = claim_check.check_file(write(tmp_path, MIXED))
    suite = ElementTree.fromstring(report.junit_xml())
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = suite.findall("testcase")
    assert [c.find("failure") is not None for c in cases] == [False, True, False]
    assert cases[2].find("skipped").get("message").startswith("unknown: ")
    page = report._repr_html_()
    assert "<table>" in page and "one layer suffices" in page and "1 false" in page


# ---- infoflow check ----------------------------------------------------------------------------------------
def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_exit_codes(tmp_path, capsys):
    code, out, _ = run(capsys, "check", str(write(tmp_path, TRUE)))
    assert code == 0 and out.splitlines()[-1].endswith("1 claims: 1 hold, 0 false, 0 unknown")
    code, out, _ = run(capsys, "check", str(write(tmp_path, MIXED)))
    assert code == 1 and "false: one layer suffices" in out and "unknown: the triangle center" in out
    code, out, _ = run(capsys, "check", str(write(tmp_path, TRUE + UNKNOWN)))
    assert code == 3 and out.splitlines()[-1].endswith("1 hold, 0 false, 1 unknown")


def test_check_timeout_applies_where_a_claim_sets_none(tmp_path, capsys):
    hard = UNKNOWN.replace("timeout = 0.001\n", "")
    code, out, _ = run(capsys, "check", str(write(tmp_path, hard)), "--timeout", "0.001")
    assert code == 3 and "unknown" in out


def test_check_writes_junit_xml(tmp_path, capsys):
    out_file = tmp_path / "out.xml"
    code, _, _ = run(capsys, "check", str(write(tmp_path, MIXED)), "--junit-xml", str(out_file))
    assert code == 1 and ElementTree.parse(out_file).getroot().get("failures") == "1"


@pytest.mark.parametrize(("text", "named"), [
    ('[[claim]]\nname = "a"\ntarget = "min_pairwise_dott"\nheads = [1]\nexpect = "feasible"\n',
     "unknown catalogue target 'min_pairwise_dott'"),
    ('[[claim]]\nname = "a"\ntarget = "max_retrieval"\nhead = [1]\nexpect = "feasible"\n', "unknown key 'head'"),
    ("[[claim]\n", "is not TOML"),
])
def test_check_bad_input_is_one_line_and_exit_2(tmp_path, capsys, text, named):
    code, out, err = run(capsys, "check", str(write(tmp_path, text)))
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and named in err


def test_check_bad_junit_path_and_missing_file(tmp_path, capsys):
    code, _, err = run(capsys, "check", str(write(tmp_path, TRUE)), "--junit-xml", str(tmp_path / "no" / "x"))
    assert code == 2 and "--junit-xml" in err
    code, _, err = run(capsys, "check", str(tmp_path / "missing.toml"))
    assert code == 2 and "cannot read" in err


def test_the_papers_claims_hold(capsys):
    """docs/claims.toml, the example file, run in CI through the command."""
    code, out, _ = run(capsys, "check", str(ROOT / "docs" / "claims.toml"))
    assert code == 0, out
    assert out.splitlines()[-1].endswith("0 false, 0 unknown")
