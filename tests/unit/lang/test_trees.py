"""Comparison trees and the measures of a target."""
from __future__ import annotations

import networkx as nx
import pytest
import sympy

import infoflow_smt as ifs
from infoflow_smt.lang import catalogue, trees

T = ifs.T


def test_min_pairwise_dot_measures():
    tgt = catalogue.get("min_pairwise_dot")
    assert tgt.comparison_order == 2
    assert sympy.LT(tgt.comparison_number, T) == T**2
    assert tgt.depth == 2
    assert tgt.comparison_dimension == 1
    assert not tgt.needs_positional


def test_triangle_center_measures():
    tgt = catalogue.get("triangle_center")
    assert tgt.comparison_order == 3
    assert sympy.LT(tgt.comparison_number, T) == T**3


@pytest.mark.parametrize("D", [2, 3, 5])
def test_dimension_of_intrinsic_and_retrieval_targets(D):
    assert catalogue.get("intrinsic_dimension", D=D).comparison_dimension == D
    assert catalogue.get("intrinsic_dimension", D=D).comparison_number == D * T**2 + D * T
    assert catalogue.get("d_retrieval", D=D).comparison_dimension == D
    assert catalogue.get("d_retrieval", D=D).needs_positional
    assert not catalogue.get("d_retrieval", D=D, subsets=False).needs_positional


def test_tree_is_a_documented_digraph():
    tree = catalogue.get("min_pairwise_dot").tree()
    assert isinstance(tree, nx.DiGraph)
    inner = tree.nodes["g0.t"]
    assert inner["kind"] == "top1" and inner["var"] == "t" and inner["bound"] == frozenset({"s"})
    assert [t for _, t in inner["terms"]] == [inner["score"]]
    assert list(tree.successors("output")) == ["g0.s"] and list(tree.successors("g0.s")) == ["g0.t"]


def test_orders_change_bound_variables_not_node_names():
    tgt = ifs.parse_target("max(bilinear(A1, x[s], x[t]) for s in T for t in T)")
    a = trees.comparison_tree(tgt, {"g0": ("s", "t")})
    b = trees.comparison_tree(tgt, {"g0": ("t", "s")})
    assert a.nodes["g0.t"]["bound"] == {"s"} and b.nodes["g0.s"]["bound"] == {"t"}
    assert len(list(trees.all_orders(tgt))) == 2
    with pytest.raises(ValueError, match="not a permutation"):
        trees.comparison_tree(tgt, {"g0": ("s", "u")})


def test_nested_same_kind_reductions_form_one_joint_group():
    nested = ifs.parse_target("min(min(dot(x[s], x[t]) for t in T) for s in T)")
    _, groups = trees.collect_groups(nested.normal_form)
    assert len(groups) == 1 and groups["g0"].variables == ("s", "t")
    assert nested.tree().graph["groups"] == ifs.parse_target("min(dot(x[s], x[t]) for s in T for t in T)").tree(
    ).graph["groups"]


def test_one_selection_written_twice_is_one_group_read_twice():
    tgt = ifs.parse_target("max(min(dot(x[s], x[t]) for t in T) for s in T) + max(min(dot(x[v], x[u]) "
                           "for v in T) for u in T)")
    assert len(tgt.tree().graph["groups"]) == 2 and str(tgt.tree().graph["output"]).startswith("BinOp(op='*'")
    tgt = ifs.parse_target("max(f1(x[s]) + min(dot(x[s], x[t]) for t in T) for s in T) "
                           "+ max(min(dot(x[u], x[v]) for v in T) for u in T)")
    inner = [n for n, d in tgt.tree().nodes(data=True) if d["var"] and d["bound"]]
    assert len(inner) == 1 and len(list(tgt.tree().predecessors(inner[0]))) == 2


def test_kth_and_fixed_nodes():
    tree = ifs.parse_target("kth_largest(2, f1(x[t]) for t in T) + dot(x[1], x[T])").tree()
    kinds = {n: d["kind"] for n, d in tree.nodes(data=True)}
    assert kinds == {"output": "output", "g0.t": "kth", "fixed:1": "fixed", "fixed:T": "fixed"}
    assert tree.nodes["g0.t"]["k"] == 2


def test_every_term_of_a_score_depends_on_its_variable():
    """Terms that do not depend on a node's variable take no part in its comparison: the normal form hoists
    them out of a reduction, and an elimination tree gives each joint variable only the terms that read it."""
    for text in ("max(min(dot(x[s], x[t]) + f1(x[s]) for t in T) for s in T)",
                 "min(dot(x[s], x[t]) + dot(x[s], x[u]) + f1(x[t]) for s in T for t in T for u in T)",
                 "max(f1(x[t]) + max(f2(x[s]) for s in T) for t in T)"):
        tgt = ifs.parse_target(text)
        for order in trees.all_orders(tgt):
            tree = trees.comparison_tree(tgt, order)
            for n in trees.selection_nodes(tree):
                data = tree.nodes[n]
                groups = tree.graph["groups"]
                for _, term in data["terms"]:
                    reads = trees.free_variables(term, groups) if not isinstance(term, trees.NodeRef) else \
                        tree.nodes[term.node]["bound"]
                    assert data["var"] in reads, (text, order, n, term)


def test_elimination_tree_of_a_separable_joint_min():
    tree = ifs.parse_target("min(dot(x[s], x[t]) + bilinear(A1, x[s], x[u]) for s in T for t in T for u in T)").tree()
    assert tree.nodes["g0.t"]["bound"] == tree.nodes["g0.u"]["bound"] == {"s"}
    assert sorted(tree.successors("g0.s")) == ["g0.t", "g0.u"] and tree.nodes["g0.s"]["bound"] == frozenset()


def test_describe_lists_every_node():
    text = trees.describe(catalogue.get("intrinsic_dimension", D=2).tree())
    assert text.count("max over") == 4


# ---- ranges bounded by an index variable -------------------------------------------------------------
def test_a_node_over_a_bounded_range_binds_its_bound():
    tree = trees.comparison_tree(ifs.parse_target("sum(max(f1(x[t]) for t in range(1, s+1)) for s in T)"))
    inner = next(n for n, d in tree.nodes(data=True) if d.get("sense") == "max")
    assert tree.nodes[inner]["bound"] == frozenset({"s"})  # made for each s, though its score reads t alone


def test_a_bounded_variable_is_eliminated_inside_its_bound():
    target = ifs.parse_target("min(bilinear(A1, x[s], x[t]) for s in T for t in range(1, s))")
    assert trees.useful_orders(target) == {"g0": (("s", "t"),)}
    assert [o for order in trees.all_orders(target) for o in order.values()] == [("s", "t")]
    with pytest.raises(ifs.InvalidSpecError, match="bounded by"):
        trees.comparison_tree(target, {"g0": ("t", "s")})
