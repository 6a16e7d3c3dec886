"""What the search offers (``verify/flow_menu.py``): the target's selections as written and hosted at the
selecting position, re-indexed by an offset, the averages of a sum, and one widest gathering per place."""
from __future__ import annotations

import infoflow_smt as ifs
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.verify import flow_program as fp
from infoflow_smt.verify.flow_menu import menu


def _described(heads) -> set[str]:
    return {h.describe() for h in heads}


def test_a_chain_offers_its_hop_hosted_at_every_position() -> None:
    offered = _described(menu(ifs.catalogue.get("k_hop_induction", k=2),
                              ifs.Architecture(heads=(1, 1), positional=True)).retrievals)
    assert "retrieves the argmax over t2 in range(2, T+1) of dot(x[t2-1], x[p])" in offered
    assert ("retrieves the argmax over t2 in range(2, T+1) of "
            "dot(x[t2-1], x[argmax(dot(x[t1-1], x[T]) for t1 in range(2, T+1))])") in offered


def test_a_fixed_position_and_its_neighbours_move_together() -> None:
    offered = _described(menu(ifs.parse_target("max(f2(x[T], x[T-1]) + dot(x[t], x[T]) for t in T)"),
                              ifs.Architecture(heads=(1,), positional=True)).retrievals)
    assert "retrieves the argmax over t in T of f2(x[p], x[p-1]) + dot(x[t], x[p])" in offered
    assert "retrieves the argmax over t in T of f2(x[p+1], x[p]) + dot(x[t], x[p+1])" in offered   # T-1 works


def test_an_enclosing_variable_and_the_answering_position_are_the_selecting_one() -> None:
    offered = _described(menu(ifs.parse_target("max(F0(x[o], x[t]) for t in range(1, o+1))"),
                              ifs.Architecture(heads=(1,))).retrievals)
    assert offered == {"retrieves the argmax over t in range(1, p+1) of F0(x[p], x[t])"}


def test_a_key_read_at_an_offset_is_also_offered_as_the_candidate_s_own_token() -> None:
    offered = _described(menu(ifs.parse_target("f2(x[argmax(f1(x[t]) for t in range(2, T+1)) - 1])"),
                              ifs.Architecture(heads=(1,), positional=True)).retrievals)
    assert offered == {"retrieves the argmax over t in range(1, T) of f1(x[t+1])",
                       "retrieves the argmax over t in range(2, T+1) of f1(x[t])"}


def test_a_sum_offers_the_averages_of_its_linear_parts() -> None:
    offered = menu(ifs.parse_target("max(sum(dot(x[s], x[t]) + f1(x[t]) for t in T) for s in T)"),
                   ifs.Architecture(heads=(1,)))
    assert _described(offered.averages) == {"averages x[t] over t in T", "averages f1(x[t]) over t in T"}


def test_one_gathering_per_place_takes_what_it_can_name_and_see() -> None:
    m = menu(ifs.parse_target("max(dot(x[t-1], x[5]) for t in range(2, T+1))"), ifs.Architecture(heads=(1,), positional=True))
    assert m.gathering(fp.INPUTS, 8, causal=False).sources == (-1, 1) + m.told_apart
    assert m.gathering(fp.INPUTS, 8, causal=True).sources == (-1, FixedIndex(1))
    assert FixedIndex(5) not in m.gathering(fp.at(5), 8, causal=False).sources
    assert all(isinstance(s, FixedIndex) and s.resolve(8) <= 5 for s in m.gathering(fp.at(5), 8, causal=True).sources
               if not isinstance(s, int))
    assert all(not isinstance(s, int) for s in m.gathering(fp.OUTPUT, 8, causal=False).sources)
    assert menu(ifs.parse_target("max(f1(x[t]) for t in T)"), ifs.Architecture(heads=(1,))).told_apart == ()
