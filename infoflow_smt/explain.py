"""Explanations: the named constraints of an unsat core, phrased for a reader of the paper.

The solver tracks a few constraints by name (``initial``, ``goal``, ``budget:<layer>:<in|out>``,
``positional``, ``level:<exponent>``); an unsat core is a subset of those names. Each name becomes one
sentence, with the numbers (heads, selections, costs) read off the comparison tree and the architecture.
"""
from __future__ import annotations

import networkx as nx
import sympy

from . import cost
from .trees import comparison_tree, fixed_text, selection_nodes
from .verdict import Reason


def describe_node(tree, node: str) -> str:
    d = tree.nodes[node]
    rank = "" if d["k"] == 1 else f" (rank {d['k']})"
    bound = f" for each {', '.join(sorted(d['bound']))}" if d["bound"] else ""
    return f"{node} = {d['sense']}{rank} over {d['var']}{bound}"


def _listing(tree, nodes) -> str:
    return "; ".join(describe_node(tree, n) for n in nodes)


def explain(target, arch, core: set[str], excluded_costs: dict[str, sympy.Expr]) -> tuple[Reason, ...]:
    """Reasons for an unsat core. ``excluded_costs`` names the operations ruled out by their cost."""
    tree = comparison_tree(target)
    sels = selection_nodes(tree)
    at_inputs = [n for n in sels if len(tree.nodes[n]["bound"]) == 1]
    at_output = [n for n in sels if not tree.nodes[n]["bound"]]
    too_wide = [n for n in sels if len(tree.nodes[n]["bound"]) >= 2]
    if "positional" in core and "goal" in core and target.needs_positional:
        # no program computes the target at any cost: no cost sentence may follow (it would contradict)
        return (Reason("positional", (
            "The architecture has no positional encoding, and the target tells positions apart (fixed "
            "positions, offsets or subsets): without positions the model is permutation-invariant, so no "
            "program computes it at any cost.")),)
    reasons: list[Reason] = []
    if too_wide:
        beta = max(len(tree.nodes[n]["bound"]) + 1 for n in too_wide)
        reasons.append(Reason("goal", (
            f"The target has comparison order {beta}: {_listing(tree, too_wide)} must compare candidates "
            f"while {beta - 1} other positions are held fixed, but a token plays only one position, so no "
            f"retrieval can make that selection; only a token holding every position can.")))
    chain = nx.dag_longest_path(tree.subgraph(sels))[::-1] if sels else []
    if "initial" in core and len(chain) > arch.layers:  # depth is the obstacle only when the chain is longer
        reasons.append(Reason("initial", (
            f"Before layer 1 each input position holds only its own token and the output token nothing; "
            f"the target needs a chain of {len(chain)} dependent selection(s) ({' then '.join(chain)}), "
            f"each made from what earlier layers gathered, and the architecture has {arch.layers} layer(s).")))
    for name in sorted(n for n in core if n.startswith("budget:")):
        _, layer, where = name.split(":")
        h = arch.heads[int(layer) - 1]
        if where == "in":
            reasons.append(Reason(name, (
                f"Layer {layer} gives each input position {h} head(s), while the target has "
                f"{len(at_inputs)} selection(s) only input positions can make, one per head "
                f"({_listing(tree, at_inputs) or 'none'}), and later layers need them made by then.")))
        else:
            reasons.append(Reason(name, (
                f"Layer {layer} gives the output token {h} head(s), while the target has "
                f"{len(at_output)} selection(s) over all positions that must reach the output, one per head "
                f"({_listing(tree, at_output) or 'none'}).")))
    if "goal" in core and not too_wide:
        fixed = [f"x[{fixed_text(tree.nodes[n]['position'])}]" for n in tree.successors("output")
                 if tree.nodes[n]["kind"] == "fixed"]
        needed = [n for n in tree.successors("output") if tree.nodes[n]["kind"] != "fixed"]
        parts = ([_listing(tree, needed)] if needed else []) + fixed
        reasons.append(Reason("goal", (
            f"After layer {arch.layers} the output token must hold the required set R_F: "
            f"{'; '.join(parts) or 'every position'}, with what their scores read.")))
    if excluded_costs:
        costs = ", ".join(f"{what} costs {expr}" for what, expr in sorted(excluded_costs.items()))
        reasons.append(Reason("level", (
            f"The operations that could close the gap cost too much: {costs}, which grow(s) with T "
            f"(paper 1, Theorems 2 and 3), so they are not efficient.")))
    return tuple(reasons)


def growing_costs(arch, law: cost.DecodeLaw, has_kth: bool) -> dict[str, sympy.Expr]:
    """The operations whose cost grows with ``T`` on ``arch`` (the ones an efficient program avoids)."""
    from .symbols import T

    out = {}
    aggregation = cost.decode(T, arch.input_dim, arch.width, law)
    if not cost.is_bounded(aggregation):
        out["global aggregation"] = aggregation
    if has_kth:
        worst = cost.kth_retrieval(2, arch.head_dim(1))
        if not cost.is_bounded(worst):
            out["k-th largest retrieval"] = worst
    return out
