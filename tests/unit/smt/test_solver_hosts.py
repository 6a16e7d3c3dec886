"""Every "no" earned (issue 37): selections made by a host for itself, fixed positions that work for themselves,
one selection at several hosts. Each example was derived by hand from docs/model.md's rules; the witness the
solver gives is replayed by the interpreter (``ifs.decide`` raises when it fails)."""
from __future__ import annotations

import math

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.trees import comparison_tree, hosted_nodes
from infoflow_smt.model.program import Mode, Offset


def _arch(heads, **switches) -> ifs.Architecture:
    return ifs.Architecture(heads=tuple(heads), embed_dim=32, input_dim=2, **switches)


def test_pointer_doubling_follows_three_hops_on_three_layers():
    verdict = ifs.decide(ifs.catalogue.get("k_hop_induction", k=3), _arch((1, 1, 1), positional=True))
    assert verdict.status is ifs.Status.FEASIBLE and verdict.exponent == 1
    tree = comparison_tree(verdict.target, verdict.witness.order_map)
    made_for_themselves = [a for a in verdict.witness.actions
                           if a.where == "input" and a.op.mode is Mode.RETRIEVE and a.op.node in hosted_nodes(tree)]
    assert made_for_themselves   # every position makes the next hop from itself


@pytest.mark.parametrize("k", range(1, 8))
def test_k_hops_take_the_logarithmic_depth_of_pointer_doubling(k):
    """L layers of one head follow 2**(L-1) - 1 hops: the frontier is ceil(log2(k + 1)) + 1 layers."""
    layers = math.ceil(math.log2(k + 1)) + 1
    target = ifs.catalogue.get("k_hop_induction", k=k)
    assert ifs.decide(target, _arch((1,) * layers, positional=True)).status is ifs.Status.FEASIBLE
    assert ifs.decide(target, _arch((1,) * (layers - 1), positional=True)).status is ifs.Status.INFEASIBLE


@pytest.mark.parametrize("position", ["1", "3", "5", "T", "T-1"])
def test_a_fixed_position_the_target_names_makes_its_own_selections(position):
    """Position P holds x[P] from the start: it makes both selections in layer 1 and the output token gathers
    it in layer 2, wherever P is."""
    text = f"max(bilinear(A1, x[{position}], x[t]) for t in T) + max(bilinear(A2, x[{position}], x[t]) for t in T)"
    verdict = ifs.decide(text, _arch((2, 1), positional=True))
    assert verdict.status is ifs.Status.FEASIBLE, verdict


def test_under_the_mask_position_t_works_for_itself():
    text = "max(bilinear(A1, x[T], x[t]) for t in T) + max(bilinear(A2, x[T], x[t]) for t in T)"
    assert ifs.decide(text, _arch((2, 1), positional=True, causal=True)).status is ifs.Status.FEASIBLE


def test_one_selection_at_two_hosts_is_made_once():
    text = "min(dot(x[a], x[b]) for a in T for b in T) + max(min(dot(x[a], x[b]) for b in T) for a in T)"
    verdict = ifs.decide(text, _arch((1, 2)))
    assert verdict.status is ifs.Status.FEASIBLE
    assert sum(a.where == "input" for a in verdict.witness.actions) == 1
    assert ifs.decide(text, _arch((1, 1))).status is ifs.Status.INFEASIBLE   # the output token needs two heads


# ---- metamorphic laws that would have caught these --------------------------------------------------------
@pytest.mark.parametrize("first, second", [("1", "3"), ("2", "5"), ("3", "T"), ("T", "T-1"), ("2", "T-2")])
def test_renaming_the_fixed_positions_a_target_names_keeps_its_verdict(first, second):
    """Without the mask and with no offsets among them, which fixed positions a target names is a spelling."""
    text = "max(bilinear(A1, x[{p}], x[t]) for t in T) + max(f1(x[{p}], x[t]) for t in T) + dot(x[{p}], x[{p}])"
    for heads in ((2, 1), (1, 1), (1, 2)):
        arch = _arch(heads, positional=True)
        a, b = (ifs.decide(text.format(p=p), arch) for p in (first, second))
        assert (a.status, a.exponent) == (b.status, b.exponent), (heads, a, b)


@pytest.mark.parametrize("heads", [(1, 1), (1, 2), (2, 1), (2, 2)])
def test_writing_a_selection_at_a_second_host_keeps_the_verdict(heads):
    """The inner selection of a joint minimum written again as a reduction of its own, read by a second term:
    the verdict is that of the target where the second term reads the joint minimum's own inner selection."""
    inner = "max(min(dot(x[a], x[b]) for b in T) for a in T)"
    alone = ifs.decide(inner, _arch(heads))
    both = ifs.decide(f"min(dot(x[a], x[b]) for a in T for b in T) + {inner}", _arch(heads))
    joint = ifs.decide("min(dot(x[a], x[b]) for a in T for b in T)", _arch(heads))
    expected = ifs.Status.FEASIBLE if heads[0] >= 1 and heads[1] >= 2 else ifs.Status.INFEASIBLE
    assert alone.status is joint.status is ifs.Status.FEASIBLE
    assert both.status is expected


@pytest.mark.parametrize("text, spelt", [
    ("max(f1(x[t]) for t in T)", "-min(-f1(x[t]) for t in T)"),
    ("k_hop_induction:k=3", None),
])
def test_max_spelt_as_minus_min_of_minus_keeps_the_verdict(text, spelt):
    target = ifs.catalogue.parse_spec(text)
    if spelt is None:   # every hop's argmax as the argmin of the negated score
        spelt = target.text.replace("argmax(dot(", "argmin(-dot(")
    for heads in ((1,), (1, 1), (1, 1, 1)):
        arch = _arch(heads, positional=True)
        a, b = ifs.decide(target, arch), ifs.decide(spelt, arch)
        assert (a.status, a.exponent) == (b.status, b.exponent), (heads, a, b)


# ---- found by the independent checker (infoflow_smt/verify/flow_search.py) against the solver -------------------
def test_a_value_and_a_winner_of_one_score_are_one_selection():
    """``max(...)`` and ``x[argmax(...)]`` of one score: one retrieval serves both (checker case s0 #773)."""
    text = "max(dot(x[v], x[2]) for v in T) + f1(x[argmax(dot(x[w], x[2]) for w in T)])"
    for causal in (False, True):
        assert ifs.decide(text, _arch((1, 1), positional=True, causal=causal)).status is ifs.Status.FEASIBLE


def test_a_selection_over_its_candidates_neighbours_is_one_over_the_neighbours():
    """``max(f1(x[t-1]) ... for t in range(2, T+1))`` is the same selection over ``range(1, T)`` (normal form
    rule 11): each candidate reads its own token, so no layer gathers the one before it (checker case s0 #339)."""
    text = "max(f1(x[t-1]) + dot(x[t-1], x[1]) for t in range(2, T+1)) + min(dot(x[u], x[1]) for u in T)"
    assert ifs.decide(text, _arch((2, 1), positional=True)).status is ifs.Status.FEASIBLE
    assert ifs.decide("sum(f1(x[s-1]) for s in range(2, T+1))", _arch((1,), positional=True)).exponent == 1


def test_a_fixed_position_that_may_win_its_own_retrieval_makes_the_copied_form_itself():
    """Read at position T: T retrieves w, whose own layer-1 selection is the target's; where w is T itself,
    T makes that selection for itself in the same layer (checker case s0 #162)."""
    text = "dot(a2, x[argmax(f1(x[u]) + dot(x[u], x[argmin(bilinear(A1, x[1], x[t]) for t in T)]) for u in T)])"
    arch = ifs.Architecture(heads=(1, 2), embed_dim=32, input_dim=3, positional=True, readout="last")
    assert ifs.decide(text, arch).status is ifs.Status.FEASIBLE


def test_under_the_mask_the_token_before_a_winner_is_what_the_winner_gathered():
    """x[argmax(...) - 1] is the shifted selection over range(1, T), whose candidates read the token after
    their own, which the mask hides; the same comparison over range(2, T+1), each candidate reading its own
    token, brings the token before the winner once every position gathered it: a previous-token head, then the
    output token's retrieval (issue 37)."""
    text = "f2(x[argmax(f1(x[t]) for t in range(2, T+1)) - 1])"
    assert ifs.decide(text, _arch((1, 1), positional=True, causal=True)).status is ifs.Status.FEASIBLE
    assert ifs.decide(text, _arch((1,), positional=True, causal=True)).status is ifs.Status.INFEASIBLE


@pytest.mark.parametrize("text", [
    # the independent checker's false "no"s (results/false_no_search_2core.txt, seed 1, cases 230 and 965)
    "f2(x[argmin(bilinear(A1, x[argmax(dot(x[t], x[T]) for t in T)], x[u-1]) for u in range(2, T+1))])",
    "min(dot(x[v-1], x[T]) for v in range(2, T+1)) + f1(x[argmax(f1(x[w-1]) + dot(x[w-1], x[T]) for w in range(2, T+1))])",
])
def test_read_at_the_last_position_the_winner_whose_score_reads_the_token_before_it(text):
    """Position T must make the selection and is one of its candidates, so its one head cannot also gather
    x[T-1]; the same comparison over range(1, T), each candidate having gathered the token after its own,
    brings the winner's own token (the moved selection, m = -1): two layers of one head."""
    assert ifs.decide(text, _arch((1, 1), positional=True, readout="last")).status is ifs.Status.FEASIBLE
    assert ifs.decide(text, _arch((1,), positional=True, readout="last")).status is ifs.Status.INFEASIBLE



def test_a_witness_gathers_no_source_it_can_do_without():
    """Pointer doubling's layer 1 gathers x[T] and x[p-1]: the moved form of the last hop would also have
    every position gather x[p+1], which no operation of the witness reads (``_Session.fewest_sources``)."""
    verdict = ifs.decide(ifs.catalogue.get("k_hop_induction", k=3), _arch((1, 1, 1), positional=True))
    gathered = [a.op.positions for a in verdict.witness.actions if a.op.mode is Mode.POSITIONS]
    assert gathered and all(Offset(1) not in positions for positions in gathered)
