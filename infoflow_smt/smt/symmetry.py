"""Interchangeable groups, and the order that takes their permutations out of a question.

Two groups of a target are *interchangeable* when renaming one into the other maps the encoding onto itself:
each has one variable order, their nodes match position by position in that order (kind, rank, domain, how
many variables they bind, whether their score reads nothing, and what they read, a node of their own group
by its position, a fixed position or offset as itself), neither is read by any node outside it, and the goal
reads both alike (the output token must know each). ``intrinsic_dimension:D`` has ``D`` of them.

Why ordering them keeps the encoding exact. Let ``σ`` swap two interchangeable groups ``A`` and ``B``
everywhere: in every fact, operation and source name that names one of their nodes. Every constraint
family of the encoder is written from the nodes' shapes and the classes alone (``_Builder``), and the goal
and the head budgets are symmetric in the nodes, so ``σ`` maps the constraint set onto itself and the
assumption literals (heads, layers, levels, tracked constraints: none names a group) to themselves. So
``σ`` maps every model to a model of the same assumptions. Let ``key(G)`` be the vector of group ``G``'s
``know`` facts, layer by layer, class by class, node position by position, over every layer of the encoding.
Sorting the groups of one interchangeable class by ``key`` in non-increasing lexicographic order is a
composition of such swaps, so for every model there is a model, under the same assumptions, whose adjacent
groups satisfy ``key(A) >=lex key(B)``. Hence the encoding with those constraints is satisfiable under a set
of assumptions if and only if the one without them is; its unsat cores are cores of the one without them
(the constraints are untracked); its models are models of the one without them, so every witness is a
program of the model (section 5 of docs/model.md) and replays as before. The lexicographic constraint is
written with one "still tied" literal per position (``tie``), position after position, so a layer adds its
own lines and a grown encoding equals a fresh one (``tests/properties/test_growth.py``).
"""
from __future__ import annotations

import itertools

from infoflow_smt.smt.nodes import Need, NodeInfo


def adjacent_pairs(nodes: dict[str, NodeInfo], outer: dict[str, dict], goal_needs: tuple[Need, ...],
                   related: set[str] = frozenset()) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
    """Each interchangeable class of groups, sorted by name, as pairs of neighbours: (the node keys of
    one group, those of the next), node by node in order. ``goal_needs``: what the output token must hold
    (``encoder.goal_needs``)."""
    readers = _read_from_outside(nodes) | set(related)   # a group one selection elsewhere is not renamed alone
    goal = {n.what for n in goal_needs if n.kind == "group"}
    classes: dict[tuple, list[tuple[str, ...]]] = {}
    for gid in sorted(outer):
        if gid in readers or gid not in goal:
            continue
        found = _shape(nodes, outer, gid)
        if found is not None:
            shape, keys = found
            classes.setdefault(shape, []).append(keys)
    return [(a, b) for groups in classes.values() for a, b in itertools.pairwise(groups)]


def _read_from_outside(nodes: dict[str, NodeInfo]) -> set[str]:
    """The groups some node of another group reads."""
    found = set()
    for info in nodes.values():
        r = info.reads
        for need in (*r.selector, *r.candidate, *r.either):
            other = need.what if need.kind == "group" else (
                nodes[need.what].group if need.kind == "node" and need.what in nodes else None)
            if other is not None and other != info.group:
                found.add(other)
    return found


def _shape(nodes: dict[str, NodeInfo], outer: dict[str, dict], gid: str) -> tuple[tuple, tuple[str, ...]] | None:
    """A group's nodes in order and their shape with the group's own names left out; None when it has
    several orders or reads another group."""
    per_order = outer[gid]
    if len(per_order) != 1:
        return None
    order = next(iter(per_order))
    keys = tuple(k for var in order for k, i in nodes.items()
                 if i.group == gid and i.order == order and i.node == f"{gid}.{var}")
    if len(keys) != len(order):
        return None
    position = {k: j for j, k in enumerate(keys)}

    def needs(found: tuple[Need, ...]) -> tuple | None:
        out = []
        for need in found:
            if need.kind == "node":
                if need.what not in position:
                    return None
                out.append(("node", position[need.what]))
            elif need.kind == "group":
                return None
            else:
                out.append((need.kind, repr(need.what)))
        return tuple(out)

    shape = []
    for k in keys:
        i, r = nodes[k], nodes[k].reads
        sides = [needs(r.selector), needs(r.candidate), needs(r.either)]
        if any(s is None for s in sides):
            return None
        shape.append((i.kind, i.k, repr(i.domain), len(i.bound), i.constant, *sides, r.both))
    return tuple(shape), keys
