"""Hosted forms (infoflow_smt/lang/hosting.py) and the tree's hostings (trees.Hosting)."""
from __future__ import annotations

import pytest

import infoflow_smt as ifs
from infoflow_smt.lang import hosting, trees
from infoflow_smt.lang.language import parse_target_expr, to_text


def test_a_selection_reading_a_winner_is_its_form_hosted_there():
    chain = parse_target_expr("argmax(dot(x[t-1], x[argmax(f1(x[u]) for u in T)]) for t in range(2, T+1))")
    ((index, form),) = hosting.winner_forms(chain, frozenset())
    assert to_text(index) == "argmax(f1(x[u]) for u in T)"
    assert to_text(form) == "argmax(dot(x[t-1], x[@]) for t in range(2, T+1))"


def test_a_winner_that_reads_the_selections_own_candidate_hosts_nothing():
    # x[argmax(f(x[u], x[t]))] depends on the candidate t: another winner for each candidate, no host
    e = parse_target_expr("max(dot(x[t], x[argmax(f1(x[u], x[t]) for u in T)]) for t in T)")
    assert hosting.winner_forms(e, frozenset()) == []


def test_the_canonical_form_ignores_the_names_and_the_spelling():
    a = hosting.variable_form(parse_target_expr("min(dot(x[b], x[o]) for b in T)"), frozenset({"o"}))
    b = hosting.variable_form(parse_target_expr("min(dot(x[o], x[c]) for c in T)"), frozenset({"o"}))
    assert hosting.canonical(a) == hosting.canonical(b)
    c = hosting.variable_form(parse_target_expr("max(dot(x[o], x[c]) for c in T)"), frozenset({"o"}))
    assert hosting.canonical(a) != hosting.canonical(c)


def test_a_chain_of_hops_needs_one_hosted_form_per_length():
    """k-hop induction: every link is the same selection, so the chain's hosted forms are the chains of one
    to k-1 links made from the host; the last link's winner, read only as a token, has its moved selection
    besides (over the token before each candidate's: ``m = -1``)."""
    for k in (2, 3, 5):
        tree = trees.comparison_tree(ifs.catalogue.get("k_hop_induction", k=k))
        assert len(trees.hosted_nodes(tree)) == k - 1
        assert all(tree.nodes[n]["bound"] == {hosting.HOST} for n in trees.hosted_nodes(tree))
        ((last, (moved, m)),) = tree.graph["moved"].items()
        assert m == -1 and last in trees.selection_nodes(tree) and moved not in trees.hosted_nodes(tree)
        # no hosted node is read by a node of the target, and the measures read the target alone
        assert not any(tree.has_edge(n, h) for n in trees.selection_nodes(tree) for h in trees.hosted_nodes(tree))


def test_each_hop_is_the_first_link_made_at_the_hop_before():
    tree = trees.comparison_tree(ifs.catalogue.get("k_hop_induction", k=3))
    (first,) = [n for n in trees.hosted_nodes(tree) if not list(tree.successors(n))]
    hops = {n: n for n in trees.selection_nodes(tree)}
    second = next(n for n in hops if any(h.node == first and h.winner for h in tree.graph["hostings"].get(n, ())))
    made_at = next(h.winner for h in tree.graph["hostings"][second] if h.node == first)
    assert tree.has_edge(second, made_at)   # the hop reads the token of the winner that hosts it


def test_one_selection_written_in_two_places_is_one_selection():
    target = ifs.parse_target("min(dot(x[a], x[b]) for a in T for b in T) + max(min(dot(x[a], x[b]) for b in T) for a in T)")
    tree = trees.comparison_tree(target)
    pairs = {(n, h.node) for n, hs in tree.graph["hostings"].items() for h in hs if h.own}
    assert len(pairs) == 2 and all((b, a) in pairs for a, b in pairs)
    assert all(tree.nodes[a]["group"] != tree.nodes[b]["group"] for a, b in pairs)


@pytest.mark.parametrize("text", [
    "max(f1(x[t]) for t in T)", "min(dot(x[s], x[t]) for s in T for t in T)",
    "x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]",
])
def test_targets_without_hosts_have_none(text):
    tree = trees.comparison_tree(ifs.parse_target(text))
    assert not trees.hosted_nodes(tree) and not tree.graph["hostings"]
    # a winner read only as its token (the induction head's) has its moved selection: the one group added
    assert set(tree.graph["hosted"]) == {tree.nodes[w]["group"] for w, _ in tree.graph["moved"].values()}


def test_the_measures_read_the_target_alone():
    target = ifs.catalogue.get("k_hop_induction", k=4)
    assert target.depth == 5 and target.comparison_dimension == 1
