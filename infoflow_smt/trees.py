"""Comparison trees: the selections a target needs, who depends on whom, and the target's measures.

A target's reductions are first gathered into *groups*: a reduction over several variables at once, or
same-kind ``min``/``max`` reductions nested directly, form one joint group. Choosing a variable order for a
group splits it into nested single-variable nodes. The comparison tree is a ``networkx.DiGraph`` whose nodes
are those single-variable nodes plus one node per fixed position read, and an ``"output"`` root; an edge
``parent -> child`` means the parent's score (or the output) reads the child's result.

Node attribute keys (``tree.nodes[n][key]``):

``kind``      ``"top1"`` (min/max/argmin/argmax), ``"kth"``, ``"aggregate"`` (sum/mean), ``"fixed"``, ``"output"``
``var``       the free variable the node selects over (``None`` for fixed and output nodes)
``bound``     frozenset of enclosing variables the node's score depends on
``sense``     ``"min" "max" "argmin" "argmax" "kth" "sum" "mean"``
``k``         the rank for ``kth`` nodes (1 otherwise)
``domain``    the ``expr`` Domain of ``var``
``group``     the group id (``"g0"``, ...); ``inner`` the next node of the same group (or ``None``)
``score``     the expression the node compares: for the innermost node of a group the body (reductions
              inside replaced by ``GroupRef``), for an outer node ``NodeRef`` of the next node in
``key_terms`` / ``query_terms``  the additive terms ``(sign, term)`` of the score that do / do not depend
              on ``var`` (terms that do not depend on ``var`` take no part in the comparison)
``position``  for fixed nodes, the ``FixedIndex`` read

Graph attributes: ``tree.graph["order"]`` (group id -> variable order), ``tree.graph["output"]`` (the
target's expression with every top-level reduction replaced by a ``GroupRef``).
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import networkx as nx
import sympy

from . import expr as ex
from .symbols import T

SELECTION_KINDS = ("top1", "kth")


@dataclass(frozen=True)
class GroupRef:
    """Stands, inside a score, for the value (or, under ``x[...]``, the selected position) of a group's
    outermost node under the chosen order."""

    group: str


@dataclass(frozen=True)
class NodeRef:
    """The score of an outer node of a joint group: the value of the next node in, at the same bindings."""

    node: str


@dataclass(frozen=True)
class Group:
    """A joint reduction: one or more variables reduced together with one kind."""

    id: str
    kind: ex.ReduceKind
    variables: tuple[str, ...]          # in textual order
    domains: tuple[ex.Domain, ...]      # aligned with variables
    body: object                        # the innermost body, nested groups replaced by GroupRef
    k: int = 1

    def domain_of(self, var: str) -> ex.Domain:
        return self.domains[self.variables.index(var)]

    @property
    def orders(self) -> tuple[tuple[str, ...], ...]:
        """Every admissible variable order (outermost first); a single-variable group has one."""
        return tuple(itertools.permutations(self.variables))


# ---- free variables and reads --------------------------------------------------------------------
def free_variables(e, groups: Mapping[str, Group]) -> frozenset[str]:
    """Index variables an expression (possibly holding GroupRefs) depends on."""
    if isinstance(e, ex.Content):
        return _index_variables(e.index, groups)
    if isinstance(e, GroupRef):
        g = groups[e.group]
        return free_variables(g.body, groups) - set(g.variables)
    if isinstance(e, ex.Call):
        return frozenset().union(*(free_variables(a, groups) for a in e.args))
    if isinstance(e, ex.BinOp):
        return free_variables(e.left, groups) | free_variables(e.right, groups)
    if isinstance(e, ex.Neg):
        return free_variables(e.operand, groups)
    return frozenset()


def _index_variables(index, groups) -> frozenset[str]:
    if isinstance(index, ex.VarIndex):
        return frozenset({index.name})
    if isinstance(index, ex.OffsetIndex):
        return frozenset({index.name})
    if isinstance(index, GroupRef):
        return free_variables(index, groups)
    return frozenset()


def additive_terms(e, sign: int = 1) -> list[tuple[int, object]]:
    """Split a score into its top-level additive terms, each with its sign (+1 or -1)."""
    if isinstance(e, ex.BinOp) and e.op in "+-":
        return additive_terms(e.left, sign) + additive_terms(e.right, sign if e.op == "+" else -sign)
    if isinstance(e, ex.Neg):
        return additive_terms(e.operand, -sign)
    return [(sign, e)]


def walk(e) -> Iterator[object]:
    """Every sub-expression of a score, not descending into referenced groups."""
    yield e
    if isinstance(e, ex.Content) and not isinstance(e.index, (ex.VarIndex, ex.FixedIndex, ex.OffsetIndex)):
        yield from walk(e.index)
    elif isinstance(e, ex.Call):
        for a in e.args:
            yield from walk(a)
    elif isinstance(e, ex.BinOp):
        yield from walk(e.left)
        yield from walk(e.right)
    elif isinstance(e, ex.Neg):
        yield from walk(e.operand)


# ---- groups --------------------------------------------------------------------------------------
def collect_groups(expression) -> tuple[object, dict[str, Group]]:
    """Replace every reduction by a GroupRef; return the rewritten expression and the groups by id."""
    groups: dict[str, Group] = {}

    def rewrite(e):
        if isinstance(e, ex.Reduce):
            gid = f"g{len(groups)}"
            groups[gid] = None  # reserve the id in preorder
            bindings = list(e.bindings)
            body = e.body
            merges = e.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX)
            while merges and isinstance(body, ex.Reduce) and body.kind is e.kind:
                bindings.extend(body.bindings)
                body = body.body
            groups[gid] = Group(id=gid, kind=e.kind, variables=tuple(b.var for b in bindings),
                                domains=tuple(b.domain for b in bindings), body=rewrite(body), k=e.k or 1)
            return GroupRef(gid)
        if isinstance(e, ex.Content):
            return ex.Content(rewrite(e.index)) if isinstance(e.index, ex.Reduce) else e
        if isinstance(e, ex.Call):
            return ex.Call(e.name, tuple(rewrite(a) for a in e.args))
        if isinstance(e, ex.BinOp):
            return ex.BinOp(e.op, rewrite(e.left), rewrite(e.right))
        if isinstance(e, ex.Neg):
            return ex.Neg(rewrite(e.operand))
        return e

    output = rewrite(expression)
    return output, groups


def _expression(target):
    return target.expr if hasattr(target, "expr") else target


def default_order(groups: Mapping[str, Group]) -> dict[str, tuple[str, ...]]:
    return {gid: g.variables for gid, g in groups.items()}


def all_orders(target) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every combination of admissible variable orders, one per joint group."""
    _, groups = collect_groups(_expression(target))
    ids = list(groups)
    for combo in itertools.product(*(groups[g].orders for g in ids)):
        yield dict(zip(ids, combo))


# ---- the tree ------------------------------------------------------------------------------------
_SENSE = {ex.ReduceKind.MIN: "min", ex.ReduceKind.MAX: "max", ex.ReduceKind.ARGMIN: "argmin",
          ex.ReduceKind.ARGMAX: "argmax", ex.ReduceKind.KTH_LARGEST: "kth", ex.ReduceKind.SUM: "sum",
          ex.ReduceKind.MEAN: "mean"}


def node_id(group: str, var: str) -> str:
    return f"{group}.{var}"


def comparison_tree(target, order: Mapping[str, tuple[str, ...]] | None = None) -> nx.DiGraph:
    """The comparison tree of ``target`` under a variable order (the textual order by default).

    >>> from infoflow_smt import parse_target
    >>> tree = comparison_tree(parse_target("min(dot(x[s], x[t]) for s in T for t in T)"))
    >>> sorted(tree.nodes), sorted(tree.nodes["g0.t"]["bound"])
    (['g0.s', 'g0.t', 'output'], ['s'])
    """
    output, groups = collect_groups(_expression(target))
    chosen = default_order(groups)
    for gid, vars_ in (order or {}).items():
        if gid not in groups or sorted(vars_) != sorted(groups[gid].variables):
            raise ValueError(f"order {gid}={vars_!r} is not a permutation of a group's variables")
        chosen[gid] = tuple(vars_)
    tree = nx.DiGraph(order=chosen, output=output, groups=groups)
    tree.add_node("output", kind="output", var=None, bound=frozenset(), sense=None, k=1, domain=None,
                  group=None, inner=None, score=output, key_terms=(), query_terms=(), position=None)
    for gid, g in groups.items():
        vars_ = chosen[gid]
        # kth_largest(1, ...) is the largest: a top-1 selection
        kind = {"sum": "aggregate", "mean": "aggregate", "kth": "kth" if g.k >= 2 else "top1"}.get(
            _SENSE[g.kind], "top1")
        for i, var in enumerate(vars_):
            inner = node_id(gid, vars_[i + 1]) if i + 1 < len(vars_) else None
            score = NodeRef(inner) if inner else g.body
            body_free = free_variables(g.body, groups)
            bound = frozenset(body_free - set(vars_[i:]))
            terms = additive_terms(g.body) if inner is None else [(1, score)]
            depends = [var in (free_variables(t, groups) if inner is None else body_free) for _, t in terms]
            tree.add_node(node_id(gid, var), kind=kind, var=var, bound=bound, sense=_SENSE[g.kind], k=g.k,
                          domain=g.domain_of(var), group=gid, inner=inner, score=score,
                          key_terms=tuple(t for t, d in zip(terms, depends) if d),
                          query_terms=tuple(t for t, d in zip(terms, depends) if not d), position=None)
            if inner:
                tree.add_edge(node_id(gid, var), inner)
    for n in list(tree.nodes):
        data = tree.nodes[n]
        if data["kind"] == "output" or data["inner"] is None:
            for sub in walk(data["score"]):
                ref = sub.index if isinstance(sub, ex.Content) else sub
                if isinstance(ref, GroupRef):
                    tree.add_edge(n, node_id(ref.group, chosen[ref.group][0]))
                elif isinstance(ref, ex.FixedIndex):
                    fixed = f"fixed:{fixed_text(ref)}"
                    tree.add_node(fixed, kind="fixed", var=None, bound=frozenset(), sense=None, k=1,
                                  domain=None, group=None, inner=None, score=None, key_terms=(),
                                  query_terms=(), position=ref)
                    tree.add_edge(n, fixed)
    return tree


def fixed_text(index: ex.FixedIndex) -> str:
    if not index.from_end:
        return str(index.position)
    return "T" if index.position == 0 else f"T-{index.position}"


def outermost(tree: nx.DiGraph, group: str) -> str:
    return node_id(group, tree.graph["order"][group][0])


def selection_nodes(tree: nx.DiGraph) -> list[str]:
    return [n for n, k in tree.nodes(data="kind") if k in SELECTION_KINDS]


# ---- measures ------------------------------------------------------------------------------------
def _domain_size(domain) -> sympy.Expr:
    if isinstance(domain, ex.Subset):
        return T / 2  # realization.subset_mask keeps half of the positions
    if isinstance(domain, ex.Range):
        def bound(i: ex.FixedIndex):
            return T - i.position if i.from_end else sympy.Integer(i.position)
        return sympy.Max(bound(domain.stop) - bound(domain.start), 0)
    return T


def _per_order(target, measure, combine=min):
    orders = list(itertools.islice(all_orders(target), 257))
    if len(orders) > 256:
        orders = [None]
    return combine(measure(comparison_tree(target, o)) for o in orders)


def comparison_order(target) -> int:
    """beta': the most index variables one comparison must see at once (bound variables + the free one),
    under the best variable order. 2 for ``min_{s,t} <x_s, x_t>``, 3 for the triangle center."""
    def measure(tree):
        return max((len(d["bound"]) + 1 for _, d in tree.nodes(data=True) if d["kind"] in SELECTION_KINDS),
                   default=0)
    return _per_order(target, measure)


def stages(tree: nx.DiGraph) -> dict[str, int]:
    """Stage of each non-output node: 1 for nodes that read no other node, else 1 + the latest child."""
    stage: dict[str, int] = {}
    for n in reversed(list(nx.topological_sort(tree))):
        if n != "output":
            stage[n] = 1 + max((stage[c] for c in tree.successors(n)), default=0)
    return stage


def comparison_dimension(target) -> int:
    """beta1: the most distinct selections one location must make in one stage (``D`` for the
    intrinsic-dimension targets). A location is the output token (nodes with no bound variable) or an input
    token playing one bound variable; a stage is a node's height in the tree."""
    def measure(tree):
        stage = stages(tree)
        counts: dict[tuple[int, int], int] = {}
        for n in selection_nodes(tree):
            key = (min(len(tree.nodes[n]["bound"]), 2), stage[n])
            counts[key] = counts.get(key, 0) + 1
        return max(counts.values(), default=0)
    return _per_order(target, measure)


def comparison_number(target) -> sympy.Expr:
    """How many index tuples the target compares: for each selection node, its candidates times the
    bindings of its bound variables; a polynomial in ``T`` (``T**2 + T`` for ``min_{s,t} <x_s, x_t>``)."""
    tree = comparison_tree(target)
    domains = {d["var"]: d["domain"] for _, d in tree.nodes(data=True) if d["var"]}
    total = sympy.Integer(0)
    for n in selection_nodes(tree):
        data = tree.nodes[n]
        count = _domain_size(data["domain"])
        for b in data["bound"]:
            count *= _domain_size(domains.get(b, ex.AllPositions()))
        total += count
    return sympy.expand(total)


def depth(target) -> int:
    """The longest chain of dependent selection, aggregate and fixed-position nodes."""
    tree = comparison_tree(target)
    return max(stages(tree).values(), default=0)


def position_reads(tree: nx.DiGraph) -> tuple[tuple[ex.FixedIndex, ...], tuple[int, ...]]:
    """The fixed positions and the offsets a target's scores and output read, each sorted."""
    fixed, offsets = set(), set()
    for score in [tree.graph["output"]] + [g.body for g in tree.graph["groups"].values()]:
        for leaf in walk(score):
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.FixedIndex):
                fixed.add(leaf.index)
            elif isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex):
                offsets.add(leaf.index.offset)
    return tuple(sorted(fixed, key=str)), tuple(sorted(offsets))


def needs_positional(target) -> bool:
    """Whether the target tells positions apart (fixed positions, offsets, subsets, ranges)."""
    output, groups = collect_groups(_expression(target))
    scores = [output] + [g.body for g in groups.values()]
    for score in scores:
        for sub in walk(score):
            if isinstance(sub, ex.Content) and isinstance(sub.index, (ex.FixedIndex, ex.OffsetIndex)):
                return True
    return any(not isinstance(d, ex.AllPositions) for g in groups.values() for d in g.domains)


def describe(tree: nx.DiGraph) -> str:
    """A readable listing of the tree, one node a line, children indented."""
    lines: list[str] = []

    def visit(n: str, indent: int) -> None:
        d = tree.nodes[n]
        if d["kind"] == "output":
            label = "output"
        elif d["kind"] == "fixed":
            label = f"{n}: fixed position x[{fixed_text(d['position'])}]"
        else:
            bound = ", ".join(sorted(d["bound"])) or "-"
            label = f"{n}: {d['sense']}{'' if d['k'] == 1 else d['k']} over {d['var']} ({d['kind']}; bound: {bound})"
        lines.append("  " * indent + label)
        for c in sorted(tree.successors(n)):
            visit(c, indent + 1)

    visit("output", 0)
    return "\n".join(lines)


__all__ = [
    "Group",
    "GroupRef",
    "NodeRef",
    "all_orders",
    "collect_groups",
    "comparison_dimension",
    "comparison_number",
    "comparison_order",
    "comparison_tree",
    "depth",
    "describe",
    "free_variables",
    "needs_positional",
    "node_id",
    "outermost",
    "selection_nodes",
    "stages",
]
