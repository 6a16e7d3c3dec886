"""The rank count's cost (``infoflow_smt/lang/rank.py``): the exact rank of each score's bilinear form,
against the count by vertex cover it replaced (issue 37, item 5), in the same run.

    python benchmarks/rank_count.py [--repeat 3]

``count_ms``         every selection of every tree the encoder builds (every useful order) of the catalogue
                     targets below, at token dimensions 2, 8 and 32: milliseconds for all of them, the count's
                     cache emptied before each pass. Baseline: the vertex-cover count (``vertex_cover_rank``,
                     kept here as it was) on the same nodes. The ratio is what the exact count costs more.
``decide_rank_aware_s``  the same targets decided under the rank rule (``rank_aware=True``) on 1 and 2 layers of 1
                     and 2 heads at E = 8, d = 2, each from scratch: seconds in all. Baseline: the same decisions
                     with the vertex-cover count put in the encoder's place. The ratio is what the whole
                     decision costs more.

Figures only, no target: the count runs once per node of an encoding (cached across encodings of one target).
Times are the best of ``--repeat`` passes, figure and baseline interleaved.
"""
from __future__ import annotations

import argparse
import platform
import time

import networkx as nx

import infoflow_smt as ifs
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang import rank
from infoflow_smt.lang.trees import (
    GroupRef,
    NodeRef,
    comparison_tree,
    free_variables,
    needs_positional,
    selection_nodes,
    useful_orders,
    walk,
)
from infoflow_smt.smt import encoder
from infoflow_smt.smt.solver import forget_recent

CATALOGUE = ("min_pairwise_dot", "max_retrieval", "kth_largest:k=2", "d_retrieval:D=3", "linear_max_sum:D=3",
             "intrinsic_dimension:D=3", "triangle_center", "specific_positions", "induction_head",
             "k_hop_induction:k=2", "nearest_neighbor")
DIMENSIONS = (2, 8, 32)
ARCHS = ((1,), (2,), (1, 1), (2, 1), (2, 2))


# ---- the baseline: the count by minimum vertex cover, as infoflow_smt/lang/rank.py had it -------------------
def vertex_cover_rank(tree: nx.DiGraph, node: str, input_dim: int) -> int | None:
    info = tree.nodes[node]
    candidate, selector, groups = info["var"], info["bound"], tree.graph["groups"]

    def reads(e):
        if isinstance(e, NodeRef):
            return tree.nodes[e.node]["bound"] | {tree.nodes[e.node]["var"]}
        return free_variables(e, groups)

    def held(e):
        fixed = isinstance(e, ex.Content) and isinstance(e.index, ex.FixedIndex)
        return isinstance(e, (GroupRef, NodeRef)) or fixed

    def sides(e):
        found = set()
        for sub in walk(e):
            if candidate in reads(sub):
                found.add("c")
            elif reads(sub) & selector or held(sub):
                found.add("s")
        return found

    def factors(e):
        if isinstance(e, ex.BinOp) and e.op == "*":
            return factors(e.left) + factors(e.right)
        return factors(e.operand) if isinstance(e, ex.Neg) else [e]

    def form(term):
        parts = factors(term)
        calls = [f for f in parts if isinstance(f, ex.Call) and f.name in ("dot", "bilinear")]
        if len(calls) != 1:
            return None
        scales = [f for f in parts if f is not calls[0] and not isinstance(f, ex.Num)]
        if any(len(sides(f)) > 1 for f in scales):
            return None
        vectors = calls[0].args[1:] if calls[0].name == "bilinear" else calls[0].args
        if len(vectors) != 2 or any(isinstance(a, ex.Param) for a in vectors):
            return None
        where = [frozenset(sides(a)) for a in vectors]
        if set(where) != {frozenset("c"), frozenset("s")}:
            return None
        s_vec, c_vec = vectors if where[0] == {"s"} else tuple(reversed(vectors))
        return tuple((repr(v), tuple(sorted(repr(f) for f in scales if sides(f) == {side})))
                     for v, side in ((s_vec, "s"), (c_vec, "c")))

    forms, separable = [], []
    for _, term in info["terms"]:
        if "c" not in sides(term):
            continue
        parts = [f for f in factors(term) if not isinstance(f, ex.Num)]
        if form(term) is not None:
            forms.append(form(term))
        elif all(len(sides(f)) <= 1 for f in parts):
            separable.append(tuple(tuple(sorted(repr(f) for f in parts if sides(f) == {side})) for side in "sc"))
        else:
            return None
    return input_dim * _cover(forms) + _cover(separable)


def _cover(edges) -> int:
    graph = nx.Graph()
    tops = {("s", u) for u, _ in edges}
    graph.add_nodes_from(tops)
    graph.add_edges_from((("s", u), ("c", v)) for u, v in edges)
    return len(nx.bipartite.hopcroft_karp_matching(graph, top_nodes=tops)) // 2


# ---- the figures ------------------------------------------------------------------------------------------
def encoded_nodes() -> list[tuple[nx.DiGraph, str]]:
    """Every selection node of every tree the encoder builds for the catalogue targets (one per useful order)."""
    found = []
    for name in CATALOGUE:
        target = ifs.catalogue.as_target(name)
        useful = useful_orders(target)
        for r in range(max((len(o) for o in useful.values()), default=0)):
            tree = comparison_tree(target, {gid: orders[r] for gid, orders in useful.items() if len(orders) > r})
            found += [(tree, node) for node in selection_nodes(tree)]
    return found


def time_counts(count, nodes) -> float:
    rank._rank.cache_clear()
    started = time.perf_counter()
    for d in DIMENSIONS:
        for tree, node in nodes:
            count(tree, node, d)
    return time.perf_counter() - started


def time_decisions(count) -> float:
    encoder.score_rank = count
    started = time.perf_counter()
    for name in CATALOGUE:
        target = ifs.catalogue.as_target(name)
        for heads in ARCHS:
            forget_recent()
            rank._rank.cache_clear()
            ifs.decide(target, ifs.Architecture(heads=heads, embed_dim=8, input_dim=2, rank_aware=True,
                                                positional=needs_positional(target)))
    encoder.score_rank = rank.score_rank
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    nodes = encoded_nodes()
    count, cover, decide, decide_cover = [], [], [], []
    for _ in range(repeat):
        count.append(time_counts(rank.score_rank, nodes))
        cover.append(time_counts(vertex_cover_rank, nodes))
        decide.append(time_decisions(rank.score_rank))
        decide_cover.append(time_decisions(vertex_cover_rank))
    print(f"machine: {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print(f"count_ms             {1e3 * min(count):8.1f}  baseline (vertex cover) {1e3 * min(cover):8.1f}  "
          f"ratio {min(count) / min(cover):.2f}  ({len(nodes)} nodes x d in {DIMENSIONS})")
    print(f"decide_rank_aware_s  {min(decide):8.2f}  baseline (vertex cover) {min(decide_cover):8.2f}  "
          f"ratio {min(decide) / min(decide_cover):.2f}  ({len(CATALOGUE)} targets x {len(ARCHS)} architectures)")


if __name__ == "__main__":
    main()
