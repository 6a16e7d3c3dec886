"""Causal (decoder-only) architectures: solver, enumerator and interpreter agree on a fixed set of random
targets (``support.generators.causal_case``; with an answer at every position, ``causal_per_position_case``; read at
the last position, ``causal_last_token_case``), and what the model cannot yet decide exactly under the mask is
refused alike by the solver and the brute force, in one line."""
from __future__ import annotations

import numpy as np
import pytest
from support.generators import causal_case, causal_last_token_case, causal_per_position_case
from test_differential import UNCONFIRMED, disagreements

import infoflow_smt as ifs
from infoflow_smt.lang import causal
from infoflow_smt.model import readout
from infoflow_smt.verify.enumerator import brute_force_decide

CASES = [causal_case(i) for i in range(40)]
PER_POSITION_CASES = [causal_per_position_case(i) for i in range(24)]   # an answer at every position
LAST_TOKEN_CASES = [causal_last_token_case(i) for i in range(24)]       # read at position T, no positions
BUDGET_S = 20  # the enumeration's budget per case; a case past it is left unconfirmed (its witness replays)


def _refused(case) -> list[str]:
    try:
        asked = readout.question(ifs.parse_target(case.text), case.arch)
        if asked.per_position:  # the evaluation refuses an answer asked nowhere, or an empty range it reads
            asked.evaluate(np.zeros((1, 8, case.arch.input_dim)))
        causal.check_supported(asked)
    except ifs.InvalidSpecError as refusal:
        return [p.message for p in refusal.problems]
    return []


def _gist(refusal: str) -> str:
    """A refusal without the length it was found at (the solver and the brute force ask at their own)."""
    return refusal.split(" (seq_len=")[0]


@pytest.mark.parametrize("case", CASES + PER_POSITION_CASES + LAST_TOKEN_CASES,
                         ids=[f"causal{c.index}" for c in CASES] + [f"per_position{c.index}" for c in PER_POSITION_CASES]
                         + [f"last{c.index}" for c in LAST_TOKEN_CASES])
def test_solver_enumerator_interpreter_agree_under_a_causal_mask(case) -> None:
    if _refused(case):
        with pytest.raises(ifs.InvalidSpecError) as caught:
            ifs.decide(case.text, case.arch)
        assert _gist(_refused(case)[-1]) in str(caught.value)
        assert "\n" not in str(caught.value) or len(_refused(case)) > 1
        with pytest.raises(ifs.InvalidSpecError) as caught:
            brute_force_decide(case.text, case.arch, budget_s=BUDGET_S)
        assert _gist(_refused(case)[-1]) in str(caught.value)
        return
    problems = disagreements(case, BUDGET_S)
    assert [p for p in problems if p != UNCONFIRMED] == []
    if UNCONFIRMED in problems:
        pytest.skip(f"the enumeration ran past {BUDGET_S} s: {case}")


@pytest.mark.parametrize("cases", [CASES, PER_POSITION_CASES, LAST_TOKEN_CASES], ids=["output", "per_position", "last"])
def test_the_causal_cases_are_varied(cases) -> None:
    refused = [c for c in cases if _refused(c)]
    decided = [ifs.decide(c.text, c.arch).status for c in cases if c not in refused]
    assert ifs.Status.FEASIBLE in decided and ifs.Status.INFEASIBLE in decided
    assert len(refused) < len(cases) / 3 and (refused or cases is not CASES)


def test_the_per_position_cases_read_o_and_some_read_after_it() -> None:
    targets = [ifs.parse_target(c.text) for c in PER_POSITION_CASES]
    assert all(t.per_position for t in targets)
    assert any("range(1, o+1)" in c.text for c in PER_POSITION_CASES)
    assert any(" in T" in c.text for c in PER_POSITION_CASES) and any(c.arch.positional for c in PER_POSITION_CASES)


@pytest.mark.parametrize("case", LAST_TOKEN_CASES, ids=lambda c: f"last{c.index}")
def test_under_the_mask_position_p_answers_for_the_sequence_cut_at_p(case) -> None:
    """The question read at the last position is, at every position p, the target on x[1..p]: the truncation
    argument of docs/model.md ("Causal mask") checked on numbers, apart from the three checkers above (which
    share the rewritten question)."""
    if _refused(case):
        return
    target = ifs.parse_target(case.text)
    asked = readout.question(target, case.arch)
    X = np.random.default_rng(case.index).standard_normal((3, 7, case.arch.input_dim))
    every = asked.evaluate(X)
    with np.errstate(all="ignore"):
        for p in range(1, 8):
            if asked.answered(7)[p - 1]:
                np.testing.assert_allclose(every[:, p - 1], target.evaluate(X[:, :p]), rtol=1e-9, atol=1e-12)
            else:  # position p is asked nothing exactly where the target has no value at length p
                assert np.isnan(every[:, p - 1]).all()
                with pytest.raises(ifs.InvalidSpecError):
                    target.evaluate(X[:, :p])


# spellings of one function: under the mask they get one verdict (the rewrite reads the function, not the text)
SPELLINGS = [
    ["min(dot(x[s], x[t]) for s in T for t in T)", "min(dot(x[t], x[s]) for t in T for s in T)",
     "min(min(dot(x[s], x[t]) for t in T) for s in T)", "min(dot(x[s], x[t]) for s in T for t in range(1, s+1))"],
    ["min(bilinear(A1, x[s], x[t]) for s in T for t in T)", "min(bilinear(A1, x[u], x[v]) for u in T for v in T)",
     "min(min(bilinear(A1, x[t], x[s]) for s in T) for t in T)"],
    ["max(f2(x[s], x[t]) + f2(x[t], x[s]) for s in T for t in T)",
     "max(f2(x[t], x[s]) + f2(x[s], x[t]) for t in T for s in T)"],
]
CAUSAL_ARCHS = [ifs.Architecture(heads=h, embed_dim=32, input_dim=2, causal=True)
                for h in [(1,), (1, 1), (2, 1), (1, 2), (1, 1, 1)]]


@pytest.mark.parametrize("texts", SPELLINGS, ids=lambda texts: texts[0])
def test_spellings_of_one_function_get_one_verdict_under_a_causal_mask(texts) -> None:
    for arch in CAUSAL_ARCHS:
        verdicts = {(v.status, str(v.exponent)) for v in (ifs.decide(t, arch) for t in texts)}
        assert len(verdicts) == 1, (arch, verdicts)
