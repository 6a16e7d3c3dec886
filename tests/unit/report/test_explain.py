"""Explanations: every reason says something (report/explain.py)."""
from __future__ import annotations

import random
import re

import pytest
from support.generators import random_case

import infoflow_smt as ifs

# ---- no vacuous reason (issue 20, item 5) ---------------------------------------------------------------
CASES = 80
# "0 selections", "0 heads", "(none)", "()": a count of nothing or an empty listing
_VACUOUS = re.compile(r"(?<![\d.])0 (selection|head|layer)s?\b|\(none\)|\(\)")


def _vacuous(verdict) -> list[str]:
    return [r.sentence for r in verdict.explanation if _VACUOUS.search(r.sentence)]


def test_the_pattern_finds_the_old_sentence():
    old = ("Layer 1 gives each input position 1 head, while 0 selections can only be made at the input positions, "
           "one head each (none), and later layers need them made by then.")
    assert _VACUOUS.search(old) and not _VACUOUS.search("Layer 1 gives the output token 1 head (T/16 - 1)")


def test_the_issue_example_gives_no_vacuous_reason():
    arch = ifs.Architecture(heads=(1, 1), embed_dim=32, input_dim=2)
    verdict = ifs.decide("linear_max_sum:D=4", arch)
    assert verdict.status is ifs.Status.INFEASIBLE and verdict.explanation
    assert _vacuous(verdict) == [], str(verdict)
    assert any(r.constraint == "budget:1:in" and "hand on" in r.sentence for r in verdict.explanation)


@pytest.mark.parametrize("index", range(CASES))
def test_random_infeasible_cases_give_no_vacuous_reason(index: int):
    case = random_case(index)
    verdict = ifs.decide(case.text, case.arch)
    if verdict.status is ifs.Status.INFEASIBLE:
        assert verdict.explanation, str(case)
        assert _vacuous(verdict) == [], f"{case}\n{verdict}"


def _many_selections(index: int) -> tuple[str, ifs.Architecture]:
    """Selections with no bound variable only (the shape whose input budget once listed none), on few heads."""
    rng = random.Random(index)
    parts = [f"{rng.choice(['min', 'max'])}(f{i + 1}(x[t]) for t in T)" for i in range(rng.randint(2, 6))]
    heads = tuple(rng.choice([1, 1, 2]) for _ in range(rng.choice([1, 2, 2, 3])))
    return " + ".join(parts), ifs.Architecture(heads=heads, embed_dim=32, input_dim=2)


@pytest.mark.parametrize("index", range(30))
def test_selections_over_all_positions_give_no_vacuous_reason(index: int):
    text, arch = _many_selections(index)
    verdict = ifs.decide(text, arch)
    if verdict.status is ifs.Status.INFEASIBLE:
        assert verdict.explanation and _vacuous(verdict) == [], f"{text} on {arch}\n{verdict}"
