"""Causal (decoder-only) architectures: solver, enumerator and interpreter agree on a fixed set of random
targets (``support.generators.causal_case``), and what the model cannot yet decide exactly under the mask is
refused alike by the solver and the brute force, in one line."""
from __future__ import annotations

import pytest
from support.generators import causal_case
from test_differential import UNCONFIRMED, disagreements

import infoflow_smt as ifs
from infoflow_smt.lang import causal
from infoflow_smt.verify.enumerator import brute_force_decide

CASES = [causal_case(i) for i in range(40)]
BUDGET_S = 20  # the enumeration's budget per case; a case past it is left unconfirmed (its witness replays)


def _refused(case) -> list[str]:
    try:
        causal.check_supported(ifs.parse_target(case.text))
    except ifs.InvalidSpecError as refusal:
        return [p.message for p in refusal.problems]
    return []


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"causal{c.index}")
def test_solver_enumerator_interpreter_agree_under_a_causal_mask(case) -> None:
    if _refused(case):
        with pytest.raises(ifs.InvalidSpecError, match="under a causal mask") as caught:
            ifs.decide(case.text, case.arch)
        assert "\n" not in str(caught.value) or len(_refused(case)) > 1
        with pytest.raises(ifs.InvalidSpecError, match="under a causal mask"):
            brute_force_decide(case.text, case.arch, budget_s=BUDGET_S)
        return
    problems = disagreements(case, BUDGET_S)
    assert [p for p in problems if p != UNCONFIRMED] == []
    if UNCONFIRMED in problems:
        pytest.skip(f"the enumeration ran past {BUDGET_S} s: {case}")


def test_the_causal_cases_are_varied() -> None:
    refused = [c for c in CASES if _refused(c)]
    decided = [ifs.decide(c.text, c.arch).status for c in CASES if c not in refused]
    assert refused and ifs.Status.FEASIBLE in decided and ifs.Status.INFEASIBLE in decided


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
