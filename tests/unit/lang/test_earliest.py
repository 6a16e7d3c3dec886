"""The first layer a node can be known (infoflow_smt/lang/earliest.py)."""
from __future__ import annotations

import math

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.earliest import earliest_layers
from infoflow_smt.lang.trees import comparison_tree, outermost


@pytest.mark.parametrize("k", range(1, 17))
def test_pointer_doubling_reaches_k_hops_after_logarithmic_layers(k):
    tree = comparison_tree(ifs.catalogue.get("k_hop_induction", k=k))
    assert earliest_layers(tree)[outermost(tree, "g0")] == math.ceil(math.log2(k + 1)) + 1


@pytest.mark.parametrize("text, layers", [
    ("max(f1(x[t]) for t in T)", 1),
    ("min(dot(x[s], x[t]) for s in T for t in T)", 2),
    ("x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]", 2),      # the candidates gather x[t-1] first
    # each link made by every position for itself in layer 1, copied with the winner of the link before
    ("max(f1(x[s], x[argmax(f2(x[t], x[argmax(f3(x[u]) for u in T)]) for t in T)]) for s in T)", 2),
    # the inner selection is made for each s: nothing hosts it at a winner, one link a layer
    ("max(f1(x[s], x[argmax(f2(x[t], x[s]) for t in T)]) for s in T)", 2),
    ("max(f1(x[s], x[argmax(f2(x[t], x[s], x[argmax(f3(x[u], x[s]) for u in T)]) for t in T)]) for s in T)", 3),
])
def test_a_chain_takes_one_layer_a_link_unless_hosted_at_winners(text, layers):
    tree = comparison_tree(ifs.parse_target(text))
    assert earliest_layers(tree)[outermost(tree, "g0")] == layers


def test_the_solver_never_answers_before_the_earliest_layer():
    """A bound is a bound: one layer before it the target is inefficient, at it efficient (one head each)."""
    for k in (3, 5):
        target = ifs.catalogue.get("k_hop_induction", k=k)
        tree = comparison_tree(target)
        first = int(earliest_layers(tree)[outermost(tree, "g0")])
        arch = lambda L: ifs.Architecture(heads=(1,) * L, embed_dim=32, input_dim=2, positional=True)
        assert ifs.decide(target, arch(first - 1)).status is ifs.Status.INFEASIBLE
        assert ifs.decide(target, arch(first)).status is ifs.Status.FEASIBLE


def _every_order_combination(target, groups) -> float:
    """``first_known`` by brute force: every combination of every group's useful orders."""
    import itertools

    from infoflow_smt.lang.trees import useful_orders

    per_group = useful_orders(target)
    best = math.inf
    for combo in itertools.product(*per_group.values()):
        tree = comparison_tree(target, dict(zip(per_group, combo)))
        best = min(best, max([1.0] + [earliest_layers(tree)[outermost(tree, g)] for g in groups]))
    return best


def test_the_best_orders_group_by_group_are_the_best_combination():
    """Per group over its own and its dependencies' orders, independent groups sharing trees, equals the
    minimum over every combination of orders, on random targets (up to 256 combinations each) and on groups
    whose best orders differ."""
    import random

    from support.generators import random_target

    from infoflow_smt.lang.earliest import first_known
    from infoflow_smt.lang.trees import useful_orders
    from infoflow_smt.smt.encoder import goal_needs

    rng = random.Random(7)
    texts = [random_target(rng, positional=True) for _ in range(150)]
    texts += [("min(dot(x[s], x[t]) + bilinear(A1, x[s], x[u]) for s in T for t in T for u in T) "
               "+ max(max(f1(x[s], x[argmax(f2(x[t], x[s]) for t in T)]) for s in T) for u in T)"),
              ifs.catalogue.get("intrinsic_dimension", D=4).text]
    tried = 0
    for text in texts:
        target = ifs.parse_target(text)
        if math.prod(len(o) for o in useful_orders(target).values()) > 256:
            continue
        groups = [r.what for r in goal_needs(target) if r.kind == "group"]
        assert first_known(target, groups) == _every_order_combination(target, groups), text
        tried += 1
    assert tried >= 100
