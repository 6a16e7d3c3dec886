"""The pytest plugin: claims files collected as tests, one item per claim; a true claim passes, a false one
fails with a readable report, an unknown one is skipped (never passed), a bad file is a collection error."""
from __future__ import annotations

import tomllib

import pytest
from support.claim_files import FALSE, MIXED, TRUE, UNKNOWN
from support.paths import ROOT

pytest_plugins = ("pytester",)


@pytest.fixture
def claims_pytest(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """Runs pytest in-process with the plugin loaded by name (not by the installed entry point, which an
    editable install of another tree may lack)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_inprocess("-p", "infoflow_smt.pytest_plugin", "-p", "no:cacheprovider", "-ra",
                                            *args)
    return run


def test_each_claim_is_an_item_with_its_outcome(pytester, claims_pytest):
    pytester.makefile(".toml", claims_mixed=MIXED)
    result = claims_pytest("-v")
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*claims_mixed.toml::two layers suffice PASSED*",
                                 "*claims_mixed.toml::one layer suffices FAILED*",
                                 "*SKIPPED*unknown: unknown (the deadline of 0.001 s*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_false_claim_fails_with_what_was_claimed_and_why(pytester, claims_pytest):
    pytester.makefile(".toml", claims_false=FALSE)
    result = claims_pytest()
    result.stdout.fnmatch_lines(["*false: one layer suffices",
                                 "*claimed: min_pairwise_dot is feasible on 1 layer of 1 head, E=16, d=2*",
                                 "*prover:  infeasible, exponent T/8 - 1",
                                 "*- claimed feasible, the prover says infeasible",
                                 "*why:*"])
    assert "Traceback" not in result.stdout.str()


def test_unknown_alone_is_not_a_pass(pytester, claims_pytest):
    pytester.makefile(".toml", claims_hard=UNKNOWN)
    result = claims_pytest()
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.OK   # a skip: listed by -ra, exit 0; `infoflow check` exits 3


def test_only_matching_names_are_collected_unless_named(pytester, claims_pytest):
    pytester.makefile(".toml", other=TRUE, pyproject="[tool.x]\n")
    claims_pytest().assert_outcomes()   # neither other.toml nor pyproject.toml is a claims file by name
    claims_pytest("other.toml").assert_outcomes(passed=1)


def test_the_ini_option_names_other_patterns(pytester, claims_pytest):
    pytester.makefile(".toml", theorems=TRUE)
    pytester.makeini("[pytest]\ninfoflow_claims = theorems*.toml\n")
    claims_pytest().assert_outcomes(passed=1)


def test_a_bad_file_is_one_collection_error_naming_every_problem(pytester, claims_pytest):
    pytester.makefile(".toml", claims_bad='[[claim]]\nname = "a"\ntarget = "nosuch"\nheads = [1]\nexpect = "no"\n')
    result = claims_pytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED   # a collection error stops the run
    result.stdout.fnmatch_lines(["*bad claims file*claims_bad.toml:*", "*expect = 'no'*",
                                 "*unknown catalogue target 'nosuch'*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf", "1e308"])
def test_a_bad_timeout_in_the_ini_file_is_one_usage_error(pytester, claims_pytest, value):
    """Read once when pytest starts (it failed every claim with a traceback)."""
    pytester.makefile(".toml", claims_true=TRUE)
    pytester.makeini(f"[pytest]\ninfoflow_claims_timeout = {value}\n")
    result = claims_pytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if "infoflow_claims_timeout" in line]
    assert len(errors) == 1 and value in errors[0] and "Traceback" not in result.stderr.str()


def test_an_incomplete_frontier_is_a_skip_never_a_pass(pytester, claims_pytest):
    """An every-architecture claim whose frontier the deadline left incomplete (a false one here: the frontier of
    intrinsic_dimension:D=8 has five points) is unknown."""
    pytester.makefile(".toml", claims_cut='[[claim]]\nname = "cut"\ntarget = "intrinsic_dimension:D=8"\n'
                      'architecture = "every"\nexpect = "feasible"\nfrontier = [[2, 8], [3, 4], [4, 3]]\n'
                      'timeout = 0.01\n')
    result = claims_pytest()
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*unknown: unknown (*"])


def test_the_papers_claims_hold_through_the_plugin(claims_pytest):
    """docs/claims.toml, the example file, run in CI through pytest."""
    result = claims_pytest(str(ROOT / "docs" / "claims.toml"))
    result.assert_outcomes(passed=20)


def test_the_plugin_is_registered_as_a_pytest11_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["entry-points"]["pytest11"] == {"infoflow_claims": "infoflow_smt.pytest_plugin"}


def test_the_plugin_checks_a_claim_in_its_decoder_setting(pytester, claims_pytest):
    from support.claim_files import DECODER
    pytester.makefile(".toml", claims_decoder=DECODER)
    claims_pytest().assert_outcomes(passed=4)
    pytester.makefile(".toml", claims_decoder=DECODER.replace("causal = true\n", ""))
    result = claims_pytest()
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*claimed: match2 is infeasible on 1 layer of 1 head*",
                                 "*prover:  feasible, exponent 1"])
