"""The independent checker's semantics (``verify/flows.py``): programs written as heads over what a position
holds pass where the model's rules compute the target, and are refused, with the reason, where a read is not
held, a selection is not known, the mask or positions forbid a head, or the answer is not reached."""
from __future__ import annotations

import infoflow_smt as ifs
from infoflow_smt.verify import flow_program as fp
from infoflow_smt.verify import flows

K_HOP = ifs.catalogue.get("k_hop_induction", k=3)
POSITIONAL = ifs.Architecture(heads=(1, 1, 1), input_dim=2, positional=True)
FIRST_HOP = "argmax(dot(x[u-1], x[T]) for u in range(2, T+1))"


def doubling(layer1=None, layer2_output=True) -> fp.FlowProgram:
    """Pointer doubling for 3 hops on 3 layers of one head (issue 37, item 1)."""
    layer1 = {fp.INPUTS: [fp.gathering(-1)], fp.OUTPUT: [fp.gathering("T")]} if layer1 is None else layer1
    layer2 = {fp.INPUTS: [fp.retrieval("dot(x[t-1], x[p])", "t", "range(2, T+1)")]}
    if layer2_output:
        layer2[fp.OUTPUT] = [fp.retrieval("dot(x[t-1], x[T])", "t", "range(2, T+1)")]
    layer3 = {fp.OUTPUT: [fp.retrieval(f"dot(x[t-1], x[{FIRST_HOP}])", "t", "range(2, T+1)")]}
    return fp.program(layer1, layer2, layer3)


def test_pointer_doubling_computes_three_hops_on_three_layers() -> None:
    assert flows.check(doubling(), K_HOP, POSITIONAL).passed
    four_hops = flows.check(doubling(), ifs.catalogue.get("k_hop_induction", k=4), POSITIONAL)
    assert not four_hops.passed and "cannot compute the target" in four_hops.problems[0]


def test_a_read_the_candidate_does_not_hold_is_refused() -> None:
    checked = flows.check(doubling(layer1={fp.OUTPUT: [fp.gathering("T")]}), K_HOP, POSITIONAL)
    assert not checked.passed
    assert "does not hold x[t-1]" in checked.problems[0] and "key side" in checked.problems[0]


def test_a_selection_the_position_does_not_know_is_refused() -> None:
    checked = flows.check(doubling(layer2_output=False), K_HOP, POSITIONAL)
    assert not checked.passed
    assert f"does not hold x[{FIRST_HOP}]" in checked.problems[0] and "query side" in checked.problems[0]


def test_a_program_that_stops_short_is_refused() -> None:
    target = ifs.catalogue.get("min_pairwise_dot")
    arch = ifs.Architecture(heads=(1, 1), input_dim=2)
    inputs_only = fp.program({fp.INPUTS: [fp.retrieval("dot(x[p], x[t])", largest=False)]})
    checked = flows.check(inputs_only, target, arch)
    assert not checked.passed and "the output token cannot compute the target" in checked.problems[0]
    assert checked.counterexample is not None and checked.counterexample.shape == (8, 2)


def test_what_the_architecture_has_not_is_refused() -> None:
    two_heads = fp.program({fp.OUTPUT: [fp.aggregation(), fp.aggregation()]})
    checked = flows.check(two_heads, ifs.catalogue.get("min_pairwise_dot"), ifs.Architecture(heads=(1,), input_dim=2))
    assert "layer 1 gives the output token 2 heads of 1" in checked.problems[0]
    told = fp.program({fp.at(3): [fp.gathering(-1)]})
    checked = flows.check(told, ifs.catalogue.get("min_pairwise_dot"), ifs.Architecture(heads=(1,), input_dim=2))
    assert "position 3 is told apart without positional encoding" in checked.problems


def test_without_positions_a_head_neither_gathers_nor_ranks_part_of_the_sequence() -> None:
    plain = ifs.Architecture(heads=(1, 1, 1), input_dim=2)
    assert "needs positional encoding" in flows.check(doubling(), K_HOP, plain).problems[0]
    ranged = fp.program({fp.OUTPUT: [fp.retrieval("f1(x[t])", "t", "range(2, T+1)")]})
    checked = flows.check(ranged, ifs.parse_target("f2(x[argmax(f1(x[t]) for t in range(2, T+1))])"),
                          ifs.Architecture(heads=(1,), input_dim=2))
    assert "ranks every position it sees" in checked.problems[0]


def test_under_the_mask_an_input_position_sees_only_its_prefix() -> None:
    target = ifs.parse_target("f2(x[argmax(f1(x[t]) for t in range(2, T+1)) - 1])")
    arch = ifs.Architecture(heads=(1, 1), input_dim=2, positional=True, causal=True)
    previous = fp.program({fp.INPUTS: [fp.gathering(-1)]}, {fp.OUTPUT: [fp.retrieval("f1(x[t])", "t", "range(2, T+1)")]})
    assert flows.check(previous, target, arch).passed
    following = fp.program({fp.INPUTS: [fp.gathering(1)]}, {fp.OUTPUT: [fp.retrieval("f1(x[t+1])", "t", "range(1, T)")]})
    assert "cannot gather position" in flows.check(following, target, arch).problems[0]
    averaged = fp.program({fp.INPUTS: [fp.averaging("f1(x[t])")]})
    assert "does not aggregate its prefix" in flows.check(averaged, target, arch).problems[0]


def test_the_rank_rule_holds_a_retrieval_to_its_head_width() -> None:
    target = ifs.parse_target("max(dot(x[t], x[T]) for t in T)")
    gather_then_retrieve = fp.program({fp.OUTPUT: [fp.gathering("T")]}, {fp.OUTPUT: [fp.retrieval("dot(x[t], x[T])")]})
    wide = ifs.Architecture(heads=(1, 1), input_dim=4, embed_dim=4, positional=True, rank_aware=True)
    assert flows.check(gather_then_retrieve, target, wide).passed
    narrow = ifs.Architecture(heads=(1, 2), input_dim=4, embed_dim=4, positional=True, rank_aware=True)
    assert "rank 4, more than a head 2 wide holds" in flows.check(gather_then_retrieve, target, narrow).problems[0]


def test_an_answer_at_every_position_and_one_read_at_the_last_position() -> None:
    each = fp.program({fp.INPUTS: [fp.retrieval("F0(x[p], x[t])")]})
    arch = ifs.Architecture(heads=(1,), input_dim=2)
    assert flows.check(each, ifs.parse_target("max(F0(x[o], x[t]) for t in T)"), arch).passed
    last = ifs.Architecture(heads=(1,), input_dim=2, readout="last")
    assert flows.check(each, ifs.parse_target("max(F0(x[T], x[t]) for t in T)"), last).passed
    output = ifs.Architecture(heads=(1,), input_dim=2)
    assert not flows.check(each, ifs.parse_target("max(F0(x[T], x[t]) for t in T)"), output).passed


def test_an_average_is_learned_by_one_head_and_read_through_its_linear_parts() -> None:
    target = ifs.parse_target("max(f1(x[s]) + sum(dot(x[s], x[t]) for t in T) for s in T)")
    arch = ifs.Architecture(heads=(1, 1), input_dim=2)
    best = fp.retrieval("f1(x[s]) + sum(dot(x[s], x[t]) for t in T)", "s")
    assert flows.check(fp.program({fp.INPUTS: [fp.averaging("x[t]")]}, {fp.OUTPUT: [best]}), target, arch).passed
    unaveraged = flows.check(fp.program({}, {fp.OUTPUT: [best]}), target, arch)
    assert "does not hold sum(dot(x[s], x[t]) for t in T)" in unaveraged.problems[0]
