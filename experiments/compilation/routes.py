"""Which position a class knows as a selection's winner, and by which route (no torch): as the reference
interpreter looks a selection up (infoflow_smt/verify/interpreter.py, ``ScalarReplay.hosted``), under each of its
names (``trees.Hosting``): made at the position playing its own variable, by the winner of another selection
for itself, by a fixed position for itself, or under another name for no binding; and a winner read ahead of
its candidates (``tree.graph["moved"]``) as the token ``m`` before the moved selection's winner.

A route is a tuple of steps (``facts.Step``): ``()`` the position itself, ``("g0.s",)`` the winner it retrieved
for ``g0.s``, ``(Gathered(FixedIndex(3)),)`` position 3, gathered.
"""
from __future__ import annotations

from collections.abc import Iterator

from experiments.compilation.facts import Gathered, Kind
from infoflow_smt.model.program import Offset


def known_routes(locations: dict) -> frozenset[tuple]:
    """The routes to the positions a class holding ``locations`` knows: every prefix of a held fact's route (a
    retrieval that brought something from a winner knows that winner), and ``(node,)`` for a selection it made."""
    found = {f.route[:i] for f in locations for i in range(1, len(f.route) + 1)}
    found |= {(f.node,) for f in locations if f.kind is Kind.KEY}
    return frozenset(found)


def winner_route(tree, routes: frozenset, node: str, env: dict, c, open_: set | None = None) -> tuple | None:
    """The route to the winner of ``node`` at ``env``'s binding (variable -> route) as class ``c``, which knows
    ``routes``, knows it; None where it does not."""
    bound = tree.nodes[node]["bound"]
    if bound:
        var = next(iter(bound))
        if var in env and (route := (*env[var], node)) in routes:
            return route
    else:
        known = sorted((r for r in routes if r[-1] == node), key=lambda r: (len(r), str(r)))
        if known:
            return known[0]
    open_ = set() if open_ is None else open_
    mark = (node, tuple(sorted((v, env.get(v)) for v in bound)))
    if mark in open_:
        return None   # a name met again while it is looked up: a chain naming itself
    open_.add(mark)
    try:
        moved = tree.graph.get("moved", {}).get(node)
        if moved is not None:
            ahead = winner_route(tree, routes, moved[0], {}, c, open_)
            if ahead is not None and (route := (*ahead, Gathered(Offset(-moved[1])))) in routes:
                return route
        for other, at in other_names(tree, routes, node, env, c, open_):
            found = winner_route(tree, routes, other, at, c, open_)
            if found is not None:
                return found
        return None
    finally:
        open_.discard(mark)


def other_names(tree, routes: frozenset, node: str, env: dict, c, open_: set) -> Iterator[tuple[str, dict]]:
    """``node`` at ``env`` under its other names (``trees.Hosting``) whose host class ``c`` knows: each as (the
    other node, its binding)."""
    for h in tree.graph.get("hostings", {}).get(node, ()):
        if h.winner is not None:
            host = winner_route(tree, routes, h.winner, {v: env[v] for v in tree.nodes[h.winner]["bound"] if v in env},
                                c, open_)
        elif h.own is not None:
            host = env.get(h.own)
        elif getattr(h, "fixed", None) is not None:
            host = () if c == h.fixed else ((Gathered(h.fixed),) if (Gathered(h.fixed),) in routes else None)
        else:   # one selection under two names, made for no binding
            host = ()
        if host is not None:
            yield h.node, ({h.variable: host} if h.variable else {})


def knows(tree, locations: dict, node: str, c) -> bool:
    """Whether a class holding ``locations`` knows the selection or aggregate ``node`` (made for itself where the
    node binds a variable): its value, its average, or its winner under any name."""
    if any(f.node == node and f.kind in (Kind.VALUE, Kind.AVERAGE) for f in locations):
        return True
    own = {v: () for v in tree.nodes[node]["bound"]}
    return winner_route(tree, known_routes(locations), node, own, c) is not None

