"""The first layer after which each node of a comparison tree can be known somewhere: a bound on depth that
holds with pointer doubling.

Without hosts a selection is known first after the layer of the retrieval that makes it, and that retrieval
needs what its score reads held the layer before: a node whose reads nest ``k`` deep is known after layer
``k + 1`` at the earliest. A candidate that reads its neighbour (``x[t-1]``) holds it only after a layer that
gathers it. With hosts (``trees.Hosting``) a node can also be known without a retrieval of its own:

* as another name of one selection (``Hosting.own``): as early as that name;
* copied with a winner (``Hosting.winner``): node ``n`` is the hosted node ``a`` made at the winner of node
  ``m``, so the layer that retrieves ``m`` (no earlier than ``m``'s own retrieval can run) brings ``n`` when
  the winner knew ``a`` the layer before.

The least solution of these rules (no head budget, no position holding every token) is a lower bound on the
layer any program first knows each node: k-hop induction's ``k``-th hop is ``ceil(log2(k + 1)) + 1``.

>>> import infoflow_smt as ifs
>>> from infoflow_smt.lang.trees import comparison_tree, outermost
>>> tree = comparison_tree(ifs.catalogue.get("k_hop_induction", k=7))
>>> earliest_layers(tree)[outermost(tree, "g0")]
4
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Iterable

import networkx as nx

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import comparison_tree, outermost, useful_orders, walk

UNKNOWABLE = math.inf
SEARCHED_ORDERS = 64   # the most variable orders tried for one group and the groups it depends on


def earliest_layers(tree: nx.DiGraph) -> dict[str, float]:
    """Each selection and aggregate node's first layer (module docstring); fixed positions count 0."""
    nodes = [n for n, d in tree.nodes(data=True) if d["kind"] not in ("output", "fixed")]
    known = dict.fromkeys(nodes, UNKNOWABLE) | {n: 0 for n, d in tree.nodes(data=True) if d["kind"] == "fixed"}
    gathers = {n: _reads_a_neighbour(tree.nodes[n]) for n in nodes}
    for _ in range(len(nodes) + 1):   # each round settles at least one more node of the least solution
        changed = False
        for n in nodes:
            found = min(_made(tree, n, known, gathers), _named(tree, n, known, gathers))
            if found < known[n]:
                known[n], changed = found, True
        if not changed:
            break
    return known


def _made(tree: nx.DiGraph, n: str, known: dict, gathers: dict) -> float:
    """The layer of ``n``'s own retrieval (or averaging): one after everything its score reads."""
    reads = list(tree.successors(n))
    if not reads and not gathers[n] and not _reads_tokens(tree.nodes[n]):
        return 0   # its score reads nothing: every position knows it from the start
    return 1 + max([known[r] for r in reads] + [1 if gathers[n] else 0])


def _named(tree: nx.DiGraph, n: str, known: dict, gathers: dict) -> float:
    """The layer ``n`` is first known under another name, or copied with a winner."""
    found = UNKNOWABLE
    for h in tree.graph["hostings"].get(n, ()):
        if h.winner is None:
            found = min(found, known[h.node])
        else:
            found = min(found, max(_made(tree, h.winner, known, gathers), known[h.node] + 1))
    return found


def first_known(target, groups: Iterable[str]) -> float:
    """The first layer after which every one of ``groups`` (top-level group ids) can be known somewhere, at
    the best variable orders: the largest, over the groups, of the least over the orders of the group and of
    the groups its layer depends on (what it reads, what it is another name of or copied with). A group with
    more than ``SEARCHED_ORDERS`` such orders counts 1: a bound, never above the true one. Independent groups
    share their trees: the ``i``-th tree gives each its ``i``-th order."""
    per_group = useful_orders(target)
    depends = _depends(comparison_tree(target))
    best = 1.0
    for group in groups:
        deps = sorted(depends.get(group, {group}) & per_group.keys())
        combos = math.prod(len(per_group[d]) for d in deps)
        if combos > SEARCHED_ORDERS:
            continue
        if deps == [group]:
            orders = [{g: o[min(i, len(o) - 1)] for g, o in per_group.items()} for i in range(len(per_group[group]))]
        else:
            orders = [dict(zip(deps, combo)) for combo in itertools.product(*(per_group[d] for d in deps))]
        trees = [comparison_tree(target, order) for order in orders]
        best = max(best, min(earliest_layers(tree)[outermost(tree, group)] for tree in trees))
    return best


def _depends(tree: nx.DiGraph) -> dict[str, set[str]]:
    """Each group's own and the groups whose nodes its nodes' first layers read (``_made``, ``_named``),
    transitively."""
    group_of = lambda node: node.split(".")[0]
    edges = nx.DiGraph()
    edges.add_nodes_from(tree.graph["groups"])
    for n in tree.nodes:
        if "." not in n:
            continue
        refs = list(tree.successors(n))
        for h in tree.graph.get("hostings", {}).get(n, ()):
            refs += [h.node] + ([h.winner] if h.winner is not None else [])
        edges.add_edges_from((group_of(n), group_of(r)) for r in refs if "." in r)
    return {g: {g} | nx.descendants(edges, g) for g in edges.nodes}


def _reads_a_neighbour(data: dict) -> bool:
    """Whether the node's candidates read a neighbour of theirs (``x[t-1]`` for candidate ``t``)."""
    return any(isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex) and leaf.index.name == data["var"]
               for _, term in data["terms"] for leaf in walk(term))


def _reads_tokens(data: dict) -> bool:
    return any(isinstance(leaf, ex.Content) for _, term in data["terms"] for leaf in walk(term))


__all__ = ["SEARCHED_ORDERS", "UNKNOWABLE", "earliest_layers", "first_known"]
