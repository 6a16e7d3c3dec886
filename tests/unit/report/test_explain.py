"""Explanations: a witness in words, and the reasons an infeasible target is out of reach, one sentence each,
tied to the solver constraint it came from."""
from __future__ import annotations

import dataclasses
import random
import re

import pytest
from support.generators import random_case

import infoflow_smt as ifs
from infoflow_smt.lang import catalogue
from infoflow_smt.model.program import Action, Mode, Op, Program
from infoflow_smt.model.vocabulary import GOAL, INPUT, OUTPUT, budget
from infoflow_smt.report.explain import Reason, _budgets, describe_program, innermost_first


def test_explanations_read_as_sentences():
    v = ifs.decide("intrinsic_dimension:D=3", ifs.Architecture(heads=(2, 3), embed_dim=32, input_dim=2))
    text = " ".join(map(str, v.explanation))
    assert "Layer 1 gives each input position 2 heads" in text and "3 selections" in text
    v = ifs.decide("intrinsic_dimension:D=3", ifs.Architecture(heads=(3, 2), embed_dim=32, input_dim=2))
    text = " ".join(map(str, v.explanation))
    assert "Layer 2 gives the output token 2 heads" in text
    v = ifs.decide("min_pairwise_dot", ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2))
    text = " ".join(map(str, v.explanation))
    assert "chain of 2 dependent selections" in text and "has 1 layer." in text
    assert "(s)" not in text and "R_F" not in text
    assert all(r.constraint for r in v.explanation)


def test_a_program_in_words_names_what_each_head_selects():
    program = Program((Action(1, 1, "input", Op(Mode.RETRIEVE, "g0.t")),
                       Action(2, 1, "output", Op(Mode.RETRIEVE, "g0.s"))), layers=2)
    lines = describe_program(program, catalogue.get("min_pairwise_dot"))
    assert lines[0] == ("layer 1, head 1, at every input position: retrieves the position that wins the min over "
                        "t of dot(x[s], x[t]), for each s (max-position retrieval)")
    assert lines[1].startswith("layer 2, head 1, at the output token: retrieves the position that wins the min "
                               "over s of")
    assert describe_program(Program(()), catalogue.get("min_pairwise_dot")) == ["no head does anything"]


def test_without_positions_the_one_reason_is_positional():
    """A target that tells positions apart is out of reach at any cost: no cost sentence may follow."""
    verdict = ifs.decide("specific_positions", ifs.Architecture(heads=(1,), input_dim=2, positional=False))
    assert [r.constraint for r in verdict.explanation] == ["positional"]
    assert "no program computes it at any cost" in str(verdict.explanation[0])


def test_operations_ruled_out_by_their_cost_are_named_with_it():
    verdict = ifs.decide("kth_largest:k=2", ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2))
    reasons = {r.constraint: str(r) for r in verdict.explanation}
    assert set(reasons) == {"goal", "level"}
    assert "global aggregation costs exponent T/4 - 1" in reasons["level"]
    assert "k-th largest retrieval costs exponent T/9 - 1/3" in reasons["level"]


def test_a_reason_is_a_frozen_sentence():
    reason = Reason("goal", "The output token must know it.")
    assert str(reason) == "The output token must know it."
    with pytest.raises(dataclasses.FrozenInstanceError):
        reason.sentence = "other"


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


@pytest.mark.parametrize("embed_dim, heads, noted", [(4, (1, 1), True), (8, (1, 1), False), (8, (2, 1), True),
                                                     (32, (1, 1), False)])
def test_a_head_narrower_than_its_score_rank_is_noted(embed_dim, heads, noted):
    """min_pairwise_dot at d = 8 ranks by dot(x[s], x[t]), rank 8: a head of E / h < 8 dimensions is noted."""
    arch = ifs.Architecture(heads=heads, embed_dim=embed_dim, input_dim=8)
    verdict = ifs.decide("min_pairwise_dot", arch)
    assert verdict.status is ifs.Status.FEASIBLE
    notes = [r for r in verdict.explanation if r.constraint == "rank"]
    assert bool(notes) == noted
    if noted:
        width = embed_dim // heads[0]
        assert f"heads are {width} wide" in notes[0].sentence and "rank 8" in notes[0].sentence


def test_a_score_of_unbounded_rank_gets_no_rank_note():
    arch = ifs.Architecture(heads=(1, 1), embed_dim=2, input_dim=8)
    verdict = ifs.decide("min(f2(x[s], x[t]) for s in T for t in T)", arch)
    assert not [r for r in verdict.explanation if r.constraint == "rank"]


# ---- selections, innermost first (issue 23) -------------------------------------------------------------
INDUCTION = "f1(x[argmax(dot(x[t], x[argmax(dot(x[u], x[T]) for u in T)]) for t in T)])"


def _reads_before_readers(tree, order: list[str]) -> list[tuple[str, str]]:
    """The pairs (reader, read) where the reader is listed first: none in an innermost-first listing."""
    place = {n: i for i, n in enumerate(order)}
    return [(a, b) for a, b in tree.edges if a in place and b in place and place[a] < place[b]]


def test_the_nested_hop_is_listed_before_the_hop_that_reads_it():
    tree = ifs.parse_target(INDUCTION).tree()
    order = innermost_first(tree)
    assert [tree.nodes[n]["var"] for n in order] == ["u", "t"]


@pytest.mark.parametrize("index", range(0, 300, 50))
def test_every_selection_comes_after_every_selection_it_reads(index: int):
    """Random targets (a third of them nest a selection inside another's score), any nesting."""
    for case in map(random_case, range(index, index + 50)):
        tree = ifs.parse_target(case.text).tree()
        order = innermost_first(tree)
        expected = {n for n, d in tree.nodes(data=True) if d["kind"] not in ("output", "fixed") and not d["hosted"]}
        assert len(order) == len(set(order)) and set(order) == expected, str(case)
        assert _reads_before_readers(tree, order) == [], str(case)


# ---- budgets in layer order --------------------------------------------------------------------------------
def test_budget_reasons_follow_the_layer_numbers_past_nine():
    """Twelve layers, a core naming the budgets of layers 2, 10 and 11: layer 2 is said first (sorted as
    text, "budget:10:out" came before "budget:2:out")."""
    target = ifs.parse_target("max(f1(x[t]) for t in T) + max(f2(x[t]) for t in T)")
    tree = target.tree()
    sels = [n for n, kind in tree.nodes(data="kind") if kind == "top1"]
    arch = ifs.Architecture(heads=(1,) * 12, input_dim=2)
    core = {budget(10, OUTPUT), budget(2, OUTPUT), budget(11, INPUT), budget(2, INPUT), GOAL}
    reasons = _budgets(tree, sels, arch, core)
    assert [r.constraint for r in reasons] == ["budget:2:in", "budget:2:out", "budget:10:out", "budget:11:in"]
    assert reasons[1].sentence.startswith("Layer 2 gives the output token 1 head")


# ---- answers at every position ------------------------------------------------------------------------
def test_a_per_position_answer_is_explained_at_the_input_positions():
    verdict = ifs.decide("max(dot(x[o], x[t]) for t in T) + max(f1(x[t]) for t in T)",
                         ifs.Architecture(heads=(1,), embed_dim=32, input_dim=2))
    text = " ".join(map(str, verdict.explanation))
    assert verdict.status is ifs.Status.INFEASIBLE
    assert "every input position must know what its own answer depends on" in text
    assert "2 selections can only be made at the input positions" in text and "output token must" not in text
