"""Claims put to the prover, and ``infoflow check``: a true claim holds, a false one says why, an unknown one
is neither (exit 3), a bad file is one line (exit 2)."""
from __future__ import annotations

import dataclasses
import os
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


# ---- only complete answers are compared ------------------------------------------------------------------------
@pytest.fixture
def cut_frontier(monkeypatch):
    """decide_all answering as when the deadline passes mid-walk: intrinsic_dimension:D=2's frontier with the
    cell (1, 3) undecided, so the points found, (2, 2) and (3, 1), are only bounds."""
    full = ifs.decide_all("intrinsic_dimension:D=2")
    cut = dataclasses.replace(full, undecided=((1, 3),), grid=full.grid | {(1, 3): "unknown"},
                              undecided_why=("the deadline passed",))
    monkeypatch.setattr(claim_check, "decide_all", lambda *args, **kwargs: cut)
    return cut


def every(**table):
    return claims.parse({"claim": [{"name": "d2", "target": "intrinsic_dimension:D=2", "architecture": "every"}
                                   | table]})[0]


def test_an_incomplete_frontier_is_unknown_never_a_pass(cut_frontier):
    """A frontier the deadline left incomplete is compared with nothing (a false claim passed 3 times in 20)."""
    for claim in (every(expect="feasible", frontier=[[2, 2], [3, 1]]), every(expect="feasible"),
                  every(expect="infeasible"), every(expect="feasible", frontier=[[1, 3]])):
        result = claim_check.check(claim)
        assert result.outcome is Outcome.UNKNOWN and result.found.startswith(
            "unknown (the frontier is incomplete: (1, 3) undecided: the deadline passed)"), result
    # an undecided cell outside the claim's bounds leaves the answer within them complete
    assert claim_check.check(every(expect="infeasible", max_heads=2, max_layers=1)).outcome is Outcome.HOLDS


def test_an_incomplete_frontier_exits_3_from_the_command(cut_frontier, tmp_path, capsys):
    path = write(tmp_path, '[[claim]]\nname = "d2"\ntarget = "intrinsic_dimension:D=2"\narchitecture = "every"\n'
                           'expect = "feasible"\nfrontier = [[2, 2], [3, 1]]\n')
    code, out, _ = run(capsys, "check", str(path))
    assert code == 3 and "unknown: d2" in out and out.splitlines()[-1].endswith("0 hold, 0 false, 1 unknown")


# ---- what the file says reaches the terminal and the XML escaped ---------------------------------------------
# a claim's name can hold anything a TOML string can: escape sequences, NUL, a newline, a bidirectional override
HOSTILE = """[[claim]]
name = "two layers\\u001b[2J\\u0007\\u0000\\nrm -rf ~ \\u202e"
target = "min_pairwise_dot"
heads = [1, 1]
expect = "infeasible"
"""


def test_hostile_names_reach_neither_the_terminal_nor_the_xml_raw(tmp_path, capsys):
    path = write(tmp_path, HOSTILE)
    code, out, _ = run(capsys, "check", str(path), "--junit-xml", str(tmp_path / "out.xml"))
    assert code == 1 and not any(ord(c) < 32 and c != "\n" for c in out) and "\u202e" not in out
    assert "false: two layers\\x1b[2J\\x07\\x00 rm -rf ~ \\u202e" in out
    suite = ElementTree.parse(tmp_path / "out.xml").getroot()   # well formed: it parses
    assert suite.find("testcase").get("name").startswith("two layers\\x1b[2J\\x07\\x00\nrm")


# ---- paths: checked before any claim is put to the prover ----------------------------------------------------
def _paths(tmp_path):
    claims_file = write(tmp_path, TRUE)
    os.mkfifo(tmp_path / "fifo.xml")
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("keep me")
    os.symlink(elsewhere, tmp_path / "link.xml")
    return claims_file, {"a folder": (tmp_path, "is a folder"),
                         "a missing folder": (tmp_path / "no" / "x.xml", "does not exist"),
                         "a FIFO": (tmp_path / "fifo.xml", "not a plain file"),
                         "a symbolic link": (tmp_path / "link.xml", "is a symbolic link"),
                         "the claims file itself": (claims_file, "is the input file")}


def test_junit_xml_paths_are_refused_before_any_claim_is_checked(tmp_path, capsys, monkeypatch):
    """A FIFO hung the command, a link or the claims file itself was overwritten, all after every claim ran."""
    claims_file, refused = _paths(tmp_path)
    asked = []
    monkeypatch.setattr(claim_check, "check", lambda *args, **kwargs: asked.append(args))
    for path, says in refused.values():
        code, out, err = run(capsys, "check", str(claims_file), "--junit-xml", str(path))
        assert code == 2 and out == "" and says in err and len(err.splitlines()) == 1, (path, err)
    assert not asked and (tmp_path / "elsewhere.txt").read_text() == "keep me"
    assert claims_file.read_text() == TRUE


def test_the_claims_file_must_be_a_plain_file(tmp_path, capsys):
    os.mkfifo(tmp_path / "claims.toml")
    for path in (tmp_path / "claims.toml", "/dev/zero", tmp_path):
        code, _, err = run(capsys, "check", str(path))
        assert code == 2 and len(err.splitlines()) == 1 and ("plain file" in err or "folder" in err), err


def test_each_decoder_setting_is_checked_and_without_it_the_claim_is_false(tmp_path):
    """A claim stated for a decoder is decided with its mask, readout, rank rule and length; the same claims
    with the setting removed are false, so the setting is not ignored."""
    from support.claim_files import DECODER
    path = tmp_path / "decoder.toml"
    path.write_text(DECODER)
    report = claim_check.check_file(path)
    assert [r.outcome for r in report.results] == [Outcome.HOLDS] * 4, str(report)
    for key in ("causal = true\n", 'readout = "last"\n', "rank_aware = true\n", "seq_len = 8\n"):
        path.write_text(DECODER.replace(key, ""))
        assert Outcome.FALSE in [r.outcome for r in claim_check.check_file(path).results], key
