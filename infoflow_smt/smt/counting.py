"""Necessary conditions counted before the solver: "no efficient program" in microseconds, where it is sound.

A proof of "no" from z3 grows with the permutations of a question (interchangeable selections assigned to
layers and heads in every way); two counts settle the common cases from the encoding's structure alone. Both
hold only when no position can hold every position (``all``): a global aggregation, the one source of
``all`` (``encoder._Builder.update_all``: every other gain copies an ``all`` that is already there), costs an
excluded level. Both read the nodes the goal needs, closed under what each needed node reads, when every
group among them has one variable order (with several the needs depend on the solver's choice; z3 decides).

Depth (``INITIAL``). A non-constant node is first known after the layer of an operation that makes it
(``update_know``: before, only copies of it, and layer 0 knows only constant nodes), and that operation needs
what the node's score reads held after the layer before (``ready``, ``averaged``). So a node whose reads nest
``k`` deep is known no earlier than after layer ``k + 1`` (its *release*), and a node the goal needs after
layer ``L`` through a chain of ``u`` readers must be made by layer ``L - u`` (its *deadline*).

Heads at the input positions (``budget(l, INPUT)``). A node that binds a variable is known at an input
position only by that position's own retrieval (its knowledge travels with no copy, ``update_know``), and a
reader that reads it on the candidates' side needs every candidate, the class ``in`` among them
(``every_candidate``), to know it; without anchors a selector-side read is the class ``in``'s own too. Each
such node is a unit job at ``in`` between its release and its reader's deadline minus one (for a target with an
answer at every position, a node the answer reads for the answering position is one too, due by the last
layer: ``in`` answers, and knows it only by its own retrieval), and ``in`` runs at
most ``h_l`` operations in layer ``l`` (the head budget). Unit jobs with integer windows fit the layers'
capacities if and only if every window ``[a, b]`` of layers holds no more jobs that must run inside it than it
has heads (Hall's condition for interval neighbourhoods); a window that holds more is the shortfall.

Neither holds where a retrieval's copy brings a selection that no head made at the copier (``Hosts.copies``:
pointer doubling makes a chain of ``k`` selections in about ``log2 k`` layers): then z3 decides. Two names of
one selection (``Hosts.same``) are one job.

Each condition returns the tracked constraints its count used, named as an unsat core names them, so that
``report.explain`` says why in the same sentences as for z3's answer.
"""
from __future__ import annotations

from dataclasses import dataclass

from infoflow_smt.lang.earliest import earliest_layers
from infoflow_smt.lang.trees import comparison_tree, outermost, useful_orders
from infoflow_smt.model.program import Mode
from infoflow_smt.model.vocabulary import GOAL, INITIAL, LEVEL, Constraint, budget
from infoflow_smt.smt.encoder import IN, Encoding, NodeInfo, goal_needs

SELECTIONS = ("top1", "kth")


@dataclass(frozen=True)
class Shortfall:
    """Why no efficient program exists: the tracked constraints the count used (``core``, as an unsat core
    names them), and the count in words for a reader of the code (the explanation comes from ``core``)."""

    core: frozenset[Constraint]
    count: str


@dataclass(frozen=True)
class Job:
    """A selection that the class ``in`` must make with a head of its own between two layers."""

    node: str
    release: int
    deadline: int


def shortfall(enc: Encoding, heads: tuple[int, ...], allowed: list[int], anchored: bool | None = None
              ) -> Shortfall | None:
    """A count that proves no program on ``heads`` (heads per layer) uses only the cost levels ``allowed``
    (indices into ``enc.levels``), with or without anchors when ``anchored`` (default: whether ``enc`` has
    anchors); None when neither count applies or both fit.

    >>> import infoflow_smt as ifs
    >>> from infoflow_smt.smt import encoder
    >>> arch = ifs.Architecture(heads=(1, 1, 1), embed_dim=32, input_dim=2)
    >>> enc = encoder.encode(ifs.catalogue.get("intrinsic_dimension", D=3), arch)
    >>> from infoflow_smt.model import cost
    >>> bounded = [i for i, level in enumerate(enc.levels) if cost.is_bounded(level)]
    >>> shortfall(enc, (1, 1, 1), bounded).count
    'layers 1..2 give the input positions 2 heads for 3 selections'
    """
    if _aggregates(enc, allowed):
        return None
    if enc.hosts.copies:  # a copy brings a selection with no head of its own: only the depth with copies counts
        return _doubled_depth(enc, len(heads))
    needed = _needed(enc)
    if needed is None:
        return None
    release = _releases(enc, needed)
    deadline = _deadlines(enc, needed, len(heads))
    late = [n for n in needed if release[n] > deadline[n]]
    if late:
        return Shortfall(frozenset({INITIAL, GOAL, LEVEL}),
                         f"{late[0]} is known after layer {release[late[0]]} at the earliest, "
                         f"needed by layer {deadline[late[0]]}")
    anchored = bool(enc.anchors) if anchored is None else anchored
    return _crowded_window(_jobs(enc, needed, release, deadline, anchored), heads)


def _doubled_depth(enc: Encoding, layers: int) -> Shortfall | None:
    """The depth count where retrievals copy what their winners made for themselves (``earliest.py``): a node
    the goal needs that no program knows by the last layer. None when a group has several orders."""
    useful = useful_orders(enc.target)
    if any(len(orders) > 1 for orders in useful.values()):
        return None
    tree = comparison_tree(enc.target, {gid: orders[0] for gid, orders in useful.items()})
    first = earliest_layers(tree)
    for need in goal_needs(enc.target):
        node = outermost(tree, need.what) if need.kind == "group" else None
        if node is not None and first[node] > layers:
            return Shortfall(frozenset({INITIAL, GOAL, LEVEL}),
                             f"{node} is known after layer {first[node]} at the earliest, even copied with winners")
    return None


def _aggregates(enc: Encoding, allowed: list[int]) -> bool:
    """Whether a global aggregation (the source of ``all``) is within the ``allowed`` levels."""
    levels = {enc.levels[i] for i in allowed}
    return any(e in levels for (_, _, name), by_heads in enc.op_cost.items() if name.mode is Mode.AGGREGATE
               for e in by_heads.values())


def _needed(enc: Encoding) -> set[str] | None:
    """The non-constant nodes the goal needs, closed under reads; None when a group among them has several
    orders (or the goal reads a node the encoding does not hold)."""
    found: set[str] = set()
    todo = list(goal_needs(enc.target))
    while todo:
        need = todo.pop()
        key = _node_of(enc, need)
        if key is None:
            if need.kind in ("node", "group"):
                return None
            continue
        if key in found:
            continue
        found.add(key)
        reads = enc.nodes[key].reads
        todo += [*reads.selector, *reads.candidate, *reads.either]
    return {k for k in found if not enc.nodes[k].constant}


def _node_of(enc: Encoding, need) -> str | None:
    """The node key a need names: a node, or a group's outermost node under its only order."""
    if need.kind == "node":
        return need.what if need.what in enc.nodes else None
    if need.kind == "group":
        per_order = enc.outer.get(need.what, {})
        return next(iter(per_order.values())) if len(per_order) == 1 else None
    return None


def _node_reads(enc: Encoding, info: NodeInfo) -> list[str]:
    r = info.reads
    return [k for k in (_node_of(enc, n) for n in (*r.selector, *r.candidate, *r.either)) if k is not None]


def _releases(enc: Encoding, needed: set[str]) -> dict[str, int]:
    """The first layer after which each needed node can be known (1 + the deepest of its reads)."""
    release: dict[str, int] = {}
    for key in needed:
        _release(enc, needed, key, release)
    return release


def _release(enc: Encoding, needed: set[str], key: str, release: dict[str, int]) -> int:
    """``key``'s entry of ``_releases``, memoized in ``release`` (a function of its own: a nested one that
    calls itself is a reference cycle, which kept each encoding alive until the next garbage collection)."""
    if key not in needed:
        return 0  # constant: known from the start
    if key not in release:
        release[key] = 1 + max((_release(enc, needed, k, release) for k in _node_reads(enc, enc.nodes[key])),
                               default=0)
    return release[key]


def _deadlines(enc: Encoding, needed: set[str], layers: int) -> dict[str, int]:
    """The last layer by which each needed node must be made: the goal's after layer ``layers``, a read one
    layer before the earliest deadline of its readers."""
    goal = {_node_of(enc, n) for n in goal_needs(enc.target)}
    deadline = {k: layers if k in goal else layers + 1 for k in needed}
    for _ in range(len(needed)):  # longest paths in an acyclic graph: at most one pass per node
        changed = False
        for key in needed:
            for read in _node_reads(enc, enc.nodes[key]):
                if read in needed and deadline[key] - 1 < deadline[read]:
                    deadline[read], changed = deadline[key] - 1, True
        if not changed:
            break
    return deadline


def _jobs(enc: Encoding, needed: set[str], release: dict, deadline: dict, anchored: bool) -> list[Job]:
    """The selections the class ``in`` must make itself: bound ones its readers read on the candidates'
    side (or, without anchors, on either side that a position of ``in`` plays)."""
    due: dict[str, int] = {}
    for key in needed:
        r = enc.nodes[key].reads
        sides = [*r.candidate] + ([] if anchored else [*r.selector])
        for need in sides:
            read = _node_of(enc, need)
            info = enc.nodes.get(read) if read is not None else None
            if info is None or read not in needed or info.kind not in SELECTIONS or len(info.bound) != 1:
                continue
            # only these readers force the class ``in``: a reader on another side may be an anchor's
            due[read] = min(due.get(read, deadline[key] - 1), deadline[key] - 1)
    if enc.target.per_position:  # every input position answers: what its answer reads for it, it makes itself
        for need in goal_needs(enc.target):
            read = _node_of(enc, need)
            info = enc.nodes.get(read) if read is not None else None
            if info is not None and read in needed and info.kind in SELECTIONS and len(info.bound) == 1:
                due[read] = min(due.get(read, deadline[read]), deadline[read])
    # one selection under several names (``Hosts.same``) is one job, due by the earliest of its names' deadlines
    one: dict[tuple[str, ...], Job] = {}
    for k, d in due.items():
        name = min(_same(enc, k))
        found = one.get(name)
        if found is None or d < found.deadline:
            one[name] = Job(k, release[k], d)
    return list(one.values())


def _same(enc: Encoding, key: str) -> tuple[str, ...]:
    """The names of the selection ``key`` is (``Hosts.same``): itself and those paired with it."""
    names = {key}
    for a, b in enc.hosts.same:
        if key in (a, b):
            names |= {a, b}
    return tuple(sorted(names))


def _crowded_window(jobs: list[Job], heads: tuple[int, ...]) -> Shortfall | None:
    """A window of layers that must hold more of ``jobs`` than ``in`` has heads in it (Hall's condition)."""
    layers = len(heads)
    for a in range(1, layers + 1):
        for b in range(a, layers + 1):
            inside = [j for j in jobs if j.release >= a and j.deadline <= b]
            capacity = sum(heads[a - 1:b])
            if len(inside) > capacity:
                core = frozenset({budget(l, IN) for l in range(a, b + 1)} | {GOAL, LEVEL})
                return Shortfall(core, f"layers {a}..{b} give the input positions {capacity} heads for "
                                       f"{len(inside)} selections")
    return None
