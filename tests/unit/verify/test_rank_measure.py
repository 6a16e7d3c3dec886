"""``verify.rank_measure``: a score's rank measured on numbers, and the checkers' rank rule built on it."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.rank import score_rank
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.verify.rank_measure import measured_rank, narrow_retrievals, too_narrow


@pytest.mark.parametrize(("text", "node", "d", "rank"), [
    ("max(dot(x[T], x[t]) for t in T)", "g0.t", 6, 6),                       # one form: d
    ("max(dot(x[T], x[t]) + f1(x[t]) for t in T)", "g0.t", 3, 4),            # and a candidate-only term
    ("max(f1(x[t]) for t in T)", "g0.t", 5, 1),
    ("min(dot(x[s], x[t]) + dot(x[s-1], x[t-1]) for s in range(2, T+1) for t in range(2, T+1))",
     "g0.t", 2, 4),                                                           # two forms, no shared vector
    ("min(dot(x[s], x[t]) + bilinear(A1, x[s], x[t-1]) for s in T for t in range(2, T+1))", "g0.t", 3, 3),
    ("min(f1(x[s] + x[t]) for s in T for t in T)", "g0.t", 2, None),          # no bounded rank
    ("min(dot(x[s], x[t]) * f1(x[t]) for s in T for t in T)", "g0.t", 3, 3),  # a form of scaled vectors
    ("min(dot(x[s], x[t]) * f1(x[t]) + dot(x[s], x[t]) for s in T for t in T)", "g0.t", 3, 3),
    ("min(dot(x[s], x[t]) * f1(x[s]) + dot(x[s], x[t]) for s in T for t in T)", "g0.t", 3, 3),
    ("min(dot(x[s], x[t]) * f1(x[s] + x[t]) for s in T for t in T)", "g0.t", 2, None),
    # issue 37's examples: the form I + a1 a2^T, the block matrix [[I, I], [I, I]], a product of forms
    ("min(dot(x[s], x[t]) + dot(a1, x[s]) * dot(a2, x[t]) for s in T for t in T)", "g0.t", 4, 4),
    ("min(dot(x[s] + x[s-1], x[t] + x[t-1]) for s in range(2, T+1) for t in range(2, T+1))", "g0.t", 3, 3),
    ("min(dot(x[s], x[t])**2 for s in T for t in T)", "g0.t", 9, 45),    # above half the first grid: a wider one
    # a function of both sides beside a product of forms that dwarfs it at the sharp scale: read term by term
    ("min(f2(x[s], x[t]) + dot(x[s], x[t])**3 for s in T for t in T)", "g0.t", 2, None),
])
def test_measured_ranks(text: str, node: str, d: int, rank: int | None) -> None:
    target = ifs.parse_target(text)
    tree = comparison_tree(target, {"g0": ("s", "t")}) if "s in" in text else comparison_tree(target)
    assert measured_rank(tree, node, target.realization, d) == rank
    assert score_rank(tree, node, d) == rank  # the encoder's count, which shares nothing with the measure


def test_rows_and_columns_far_apart_in_size_are_balanced_before_the_rank_is_read() -> None:
    """The output token's selection over t compares terms whose columns span a thousandfold in size (powers
    of x[t]); balanced, the function of both sides, f1(x[1] + x[t]), shows; unbalanced, the measure reads 10."""
    target = ifs.parse_target("min(f2(x[T], x[t-1]) * dot(x[s-1], x[t-1]) - 3*(dot(x[t] + 2*x[t-1], x[t]) "
                              "* f1(x[1] + x[t]) * dot(x[1] + x[s-1], x[t]))**2 for s in range(2, T+1) "
                              "for t in range(2, T+1))")
    tree = comparison_tree(target, {"g0": ("t", "s")})
    assert measured_rank(tree, "g0.t", target.realization, 1) is None
    assert score_rank(tree, "g0.t", 1) is None


def test_a_head_narrower_than_the_rank_is_named_and_a_wide_one_is_not() -> None:
    arch = ifs.Architecture(heads=(2, 1), embed_dim=8, input_dim=8, rank_aware=True)
    assert "a head 4 wide (E / h = 8 / 2) cannot hold its rank-8 score" == too_narrow(8, arch, 1)
    assert too_narrow(8, arch, 2) is None
    assert "no bounded rank" in too_narrow(None, arch, 2)
    growing = ifs.Architecture(heads=(4,), embed_dim=ifs.T, input_dim=8, rank_aware=True)
    assert too_narrow(8, growing, 1) is None   # E = T: every head is wide enough for large T


def test_check_refuses_a_narrow_head_under_the_rule_and_only_there() -> None:
    """The interpreter enforces the rule itself: the papers' witness at E = 4 < d = 8 replays without the rule
    and is refused with it, before any input is drawn."""
    papers = ifs.Architecture(heads=(1, 1), embed_dim=4, input_dim=8)
    witness = ifs.decide("min_pairwise_dot", papers).witness
    assert ifs.check(witness, "min_pairwise_dot", papers, seq_len=8, samples=3).ok
    ranked = ifs.Architecture(heads=(1, 1), embed_dim=4, input_dim=8, rank_aware=True)
    report = ifs.check(witness, "min_pairwise_dot", ranked, seq_len=8, samples=3)
    assert not report.ok and "cannot hold its rank-8 score" in str(report)
    tree = comparison_tree(ifs.catalogue.get("min_pairwise_dot"), witness.order_map)
    assert narrow_retrievals(witness, tree, papers, ifs.catalogue.get("min_pairwise_dot").realization) == []
