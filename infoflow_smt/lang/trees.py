"""Comparison trees: the selections a target needs, who reads whom, and the target's measures.

The tree is built from the target's normal form (``normal_form.py``), where every reduction is canonical:
one selection written twice is one sub-expression. Its reductions are gathered into *groups* (one per
distinct reduction; a reduction over several variables is one joint group), and a variable order for a
group turns it into single-variable nodes:

* a joint ``min``/``max`` becomes an **elimination tree**: the innermost variable's node compares the terms
  that read it; each next variable's node compares the terms that read it and the values of the earlier
  nodes whose scores read it (``min_{s,t,u} <x_s,x_t> + x_s^T A x_u`` in the order ``s, t, u``: the nodes
  ``u`` and ``t`` each compare one term for each ``s``, the node ``s`` compares the sum of their values).
  Every term of a node's score depends on the node's variable: nothing is compared that does not take
  part in the comparison (docs/model.md, section 2). Orders that give the same tree are one order;
* any other reduction (a single variable, or a joint ``sum``/``mean``) becomes a chain: the innermost
  node reduces the body, each outer node the value of the next node in.

The graph is a ``networkx.DiGraph`` with one node per single-variable selection or aggregate, one per
fixed position read, and the root ``"output"``; an edge ``parent -> child`` means that the parent's score
(or the output) reads the child's result. A group read in several places has several parents.

Node attribute keys (``tree.nodes[n][key]``):

``kind``      ``"top1"`` (min/max/argmin/argmax), ``"kth"``, ``"aggregate"`` (sum/mean), ``"fixed"``, ``"output"``
``var``       the variable the node selects over (``None`` for fixed and output nodes)
``bound``     frozenset of enclosing variables the node's score depends on: the position that makes the
              selection plays them (its own value depends on nothing else)
``sense``     ``"min" "max" "argmin" "argmax" "kth" "sum" "mean"``
``k``         the rank for ``kth`` nodes (1 otherwise)
``domain``    the ``expr`` Domain of ``var``
``group``     the group id (``"g0"``, ...)
``score``     the expression the node compares (reductions inside replaced by ``GroupRef``, the values of
              the same group's earlier nodes by ``NodeRef``)
``terms``     the additive terms ``(sign, term)`` of ``score``
``position``  for fixed nodes, the ``FixedIndex`` read
``hosted``    whether the node is a hosted form (below)

Graph attributes: ``tree.graph["order"]`` (group id -> variable order, outermost first),
``tree.graph["output"]`` (the target with every top-level reduction replaced by a ``GroupRef``),
``tree.graph["groups"]`` (group id -> ``Group``), ``tree.graph["hosted"]`` (the ids of the groups the tree adds
beside the target's own: hosted, prefix and moved forms),
``tree.graph["hostings"]`` (node -> the ``Hosting`` s that say which other node it is at which host),
``tree.graph["prefixes"]`` (a selection that binds no variable -> its prefix form's node, below),
``tree.graph["moved"]`` (a winner read ahead of its candidates -> the moved selection's node and by how much).
Trees are cached: treat them as read-only.

**Hosted groups** (``hosting.py``). A selection that reads the token of another selection's winner is its
hosted form made at that winner (a function of the host, whose position is the variable ``@``). The tree
holds a group for each such form, and for the forms those need in turn, after the target's own groups: their
nodes bind ``@``, no node reads them, and input positions make them for themselves; a retrieval of the winner
then brings what the winner made (pointer doubling). ``hostings`` relate each node to the nodes it *is*: at a
host (``Hosting.winner``) or at its own bound variable (two nodes of one hosted form, ``Hosting.own``). The
measures of a target read the tree without the hosted groups.

**Prefix forms** (a question under the causal mask: ``Target.prefixes``). A selection that binds no variable
and ranges over a suffix of the sequence has a prefix form, the same selection over the positions up to the
host's (``range(1, @+1)``), which every input position can make under the mask; at the position past the
last winner the prefix form is the whole selection. A prefix collection (``Mode.COLLECT``) retrieves that
position by the sum of the prefix values, which grows along the sequence until it is whole.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

import networkx as nx
import sympy

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang import hosting
from infoflow_smt.lang.language import fixed_to_text
from infoflow_smt.lang.normal_form import over_neighbours
from infoflow_smt.symbols import T

SELECTION_KINDS = ("top1", "kth")
_JOINT = (ex.ReduceKind.MIN, ex.ReduceKind.MAX)


@dataclass(frozen=True)
class GroupRef:
    """Stands, inside a score, for the value (or, under ``x[...]``, the selected position) of a group's
    outermost node under the chosen order."""

    group: str


@dataclass(frozen=True)
class NodeRef:
    """Stands, inside a score, for the value of another node of the same group, at the same bindings."""

    node: str


@dataclass(frozen=True)
class Hosting:
    """What a node is elsewhere: node ``node`` with its variable ``variable`` bound to the position of a
    host. The host is the position playing this node's own bound variable ``own`` (two nodes of one hosted
    form are one selection at each position), or the winner of node ``winner`` (this node reads that winner's
    token where ``node`` reads its host's: ``node`` made at the winner is this node), or the fixed position
    ``fixed`` whose token this node reads (``node`` made by that position for itself is this node). Two nodes
    that bind no variable and make one selection name each other with no host (``variable`` None)."""

    node: str
    variable: str | None
    own: str | None = None
    winner: str | None = None
    fixed: ex.FixedIndex | None = None


@dataclass(frozen=True)
class Group:
    """A reduction: one or more variables reduced together with one kind."""

    id: str
    kind: ex.ReduceKind
    variables: tuple[str, ...]          # in textual order
    domains: tuple[ex.Domain, ...]      # aligned with variables
    body: object                        # the body, nested reductions replaced by GroupRef
    k: int = 1

    def domain_of(self, var: str) -> ex.Domain:
        return self.domains[self.variables.index(var)]

    @property
    def bounds(self) -> frozenset[str]:
        """The enclosing variables its ranges are bounded by (``s`` for ``for t in range(1, s)``)."""
        return frozenset().union(*(ex.domain_variables(d) for d in self.domains)) - set(self.variables)

    def holds_order(self, order: tuple[str, ...]) -> bool:
        """Whether ``order`` (outermost first) eliminates a variable before the variables its range reads:
        ``t in range(1, s)`` is a set of positions only once ``s`` is held, so ``s`` must be outer."""
        return all(ex.domain_variables(self.domain_of(v)) & set(self.variables) <= set(order[:i])
                   for i, v in enumerate(order))

    @property
    def orders(self) -> tuple[tuple[str, ...], ...]:
        """Every variable order (outermost first) that ``holds_order``; a single-variable group has one."""
        return tuple(o for o in itertools.permutations(self.variables) if self.holds_order(o))


# ---- free variables and reads --------------------------------------------------------------------
def free_variables(e, groups: Mapping[str, Group]) -> frozenset[str]:
    """Index variables an expression (possibly holding GroupRefs) depends on."""
    if isinstance(e, ex.Content):
        return _index_variables(e.index, groups)
    if isinstance(e, GroupRef):
        g = groups[e.group]
        return (free_variables(g.body, groups) - set(g.variables)) | g.bounds
    if isinstance(e, ex.Call):
        return frozenset().union(*(free_variables(a, groups) for a in e.args))
    if isinstance(e, ex.BinOp):
        return free_variables(e.left, groups) | free_variables(e.right, groups)
    if isinstance(e, ex.Neg):
        return free_variables(e.operand, groups)
    return frozenset()


def _index_variables(index, groups) -> frozenset[str]:
    if isinstance(index, (ex.VarIndex, ex.OffsetIndex)):
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


def _sum(terms: list[tuple[int, object]]) -> object:
    result = None
    for sign, term in terms:
        if result is None:
            result = ex.Neg(term) if sign < 0 else term
        else:
            result = ex.BinOp("+" if sign > 0 else "-", result, term)
    return ex.Num(0.0) if result is None else result


# ---- groups --------------------------------------------------------------------------------------
def collect_groups(expression) -> tuple[object, dict[str, Group]]:
    """Replace every reduction by a GroupRef (equal reductions by the same one); return the rewritten
    expression and the groups by id, numbered in preorder."""
    collector = _Collector()
    output = collector.rewrite(expression)
    return output, collector.sorted_groups()


class _Collector:
    """Groups of reductions, numbered as they are met; equal reductions are one group."""

    def __init__(self) -> None:
        self.groups: dict[str, Group] = {}
        self.seen: dict[ex.Reduce, str] = {}

    def rewrite(self, e):
        if isinstance(e, ex.Reduce):
            if e in self.seen:
                return GroupRef(self.seen[e])
            gid = self.seen[e] = f"g{len(self.seen)}"
            self.groups[gid] = Group(id=gid, kind=e.kind, variables=e.variables,
                                     domains=tuple(b.domain for b in e.bindings), body=self.rewrite(e.body), k=e.k or 1)
            return GroupRef(gid)
        return ex.map_children(e, self.rewrite)

    def sorted_groups(self) -> dict[str, Group]:
        return dict(sorted(self.groups.items(), key=lambda item: int(item[0][1:])))


def _expression(target):
    """The normal form the tree is built from (a bare ``Expr`` is normalized here)."""
    if hasattr(target, "normal_form"):
        return target.normal_form
    from infoflow_smt.lang.normal_form import normalize
    return normalize(target.expr if hasattr(target, "expr") else target)


def default_order(groups: Mapping[str, Group]) -> dict[str, tuple[str, ...]]:
    return {gid: g.variables for gid, g in groups.items()}


def all_orders(target) -> Iterator[dict[str, tuple[str, ...]]]:
    """Every combination of variable orders, one per joint group (what an exhaustive search tries)."""
    _, groups = collect_groups(_expression(target))
    ids = list(groups)
    for combo in itertools.product(*(groups[g].orders for g in ids)):
        yield dict(zip(ids, combo))


def useful_orders(target) -> dict[str, tuple[tuple[str, ...], ...]]:
    """Per group, the variable orders worth searching: one per distinct elimination tree in which every
    node binds at most one enclosing variable (``_admissible_orders``).

    A node that binds two variables can be made only by a position holding every position, which can
    then compute the whole group whatever the order; so orders with such a node add nothing, and a group
    with no other order keeps its textual one.

    >>> from infoflow_smt import parse_target
    >>> useful_orders(parse_target("min(dot(x[s], x[t]) + bilinear(A1, x[s], x[u]) for s in T for t in T for u in T)"))
    {'g0': (('s', 'u', 't'), ('t', 's', 'u'), ('u', 's', 't'))}
    """
    return dict(_useful_orders(_expression(target)))


@lru_cache(maxsize=256)
def _useful_orders(expression) -> tuple[tuple[str, tuple[tuple[str, ...], ...]], ...]:
    _, groups = collect_groups(expression)
    return tuple((gid, _admissible_orders(g, groups) or (g.variables,)) for gid, g in groups.items())


def _admissible_orders(group: Group, groups: Mapping[str, Group], width: int = 1) -> tuple[tuple[str, ...], ...]:
    """The variable orders (outermost first) whose nodes bind at most ``width`` variables, one per distinct
    elimination tree: a depth-first search over the variables still to eliminate (innermost first) and
    the open factors (node, the variables its value depends on); equal states are expanded once."""
    if group.kind not in _JOINT or len(group.variables) == 1:
        return (group.variables,)
    term_vars = [free_variables(t, groups) for _, t in additive_terms(group.body)]
    found: dict[object, tuple[str, ...]] = {}
    seen: set = set()

    def search(remaining: frozenset, factors: frozenset, eliminated: tuple[str, ...]) -> None:
        if (remaining, factors) in seen:
            return
        seen.add((remaining, factors))
        if not remaining:
            found.setdefault(factors, eliminated[::-1])
            return
        for v in sorted(remaining):
            if any(v in ex.domain_variables(group.domain_of(u)) for u in remaining - {v}):
                continue  # a range bounded by v needs v held: v is eliminated after it (``holds_order``)
            own = frozenset(i for i, vs in enumerate(term_vars) if v in vs and not vs & set(eliminated))
            children = frozenset(f for f in factors if v in f[1])
            depends = frozenset().union(*(term_vars[i] for i in own), *(f[1] for f in children),
                                        ex.domain_variables(group.domain_of(v)))
            if len(depends - {v}) <= width:
                node = ((v, own, frozenset(f[0] for f in children)), depends - {v})
                search(remaining - {v}, (factors - children) | {node}, eliminated + (v,))

    search(frozenset(group.variables), frozenset(), ())
    return tuple(found[key] for key in sorted(found, key=lambda k: found[k]))


def _narrowest(group: Group, groups: Mapping[str, Group]) -> tuple[int, tuple[str, ...]]:
    """The fewest variables a node of ``group`` must bind under the best order, and that order."""
    for width in range(len(group.variables) + len(free_variables(group.body, groups)) + 1):
        orders = _admissible_orders(group, groups, width)
        if orders:
            return width, orders[0]
    return len(group.variables), group.variables  # pragma: no cover - the widest width always has orders


def canonical_order(target) -> dict[str, tuple[str, ...]]:
    """Per group, an order with the narrowest nodes: the tree the measures are read from."""
    _, groups = collect_groups(_expression(target))
    return {gid: _narrowest(g, groups)[1] for gid, g in groups.items()}


# ---- the tree ------------------------------------------------------------------------------------
_SENSE = {ex.ReduceKind.MIN: "min", ex.ReduceKind.MAX: "max", ex.ReduceKind.ARGMIN: "argmin",
          ex.ReduceKind.ARGMAX: "argmax", ex.ReduceKind.KTH_LARGEST: "kth", ex.ReduceKind.SUM: "sum",
          ex.ReduceKind.MEAN: "mean"}


def node_id(group: str, var: str) -> str:
    return f"{group}.{var}"


def comparison_tree(target, order: Mapping[str, tuple[str, ...]] | None = None, hosted: bool = True) -> nx.DiGraph:
    """The comparison tree of ``target`` under a variable order (the textual order by default); with the
    hosted groups (module docstring) unless ``hosted=False``.

    >>> from infoflow_smt import parse_target
    >>> tree = comparison_tree(parse_target("min(dot(x[s], x[t]) for s in T for t in T)"))
    >>> sorted(tree.nodes), sorted(tree.nodes["g0.t"]["bound"])
    (['g0.s', 'g0.t', 'output'], ['s'])
    """
    prefixes = hosted and getattr(target, "prefixes", False)
    return _tree(_expression(target), tuple(sorted((order or {}).items())), hosted, prefixes)


@lru_cache(maxsize=1024)
def _tree(expression, order: tuple, hosted: bool = True, prefixes: bool = False) -> nx.DiGraph:
    collector = _Collector()
    output = collector.rewrite(expression)
    own = set(collector.groups)
    for form in _hosted_forms(expression) if hosted else ():
        collector.rewrite(form)
    prefix_of = {}   # a selection's reduction -> its prefix form's (``_prefix_form``)
    for reduction in _prefix_forms(expression) if prefixes else ():
        prefix_of[reduction] = collector.rewrite(_prefix_form(reduction)).group
    moved = {}       # a winner read ahead of its candidates -> (the moved selection's group, by how much)
    for reduction, (form, m) in _moved_winners(expression, output, masked=prefixes) if hosted else ():
        moved[reduction] = (collector.rewrite(form).group, m)
    groups = collector.sorted_groups()
    chosen = default_order(groups)
    for gid, vars_ in order:
        if gid not in groups or sorted(vars_) != sorted(groups[gid].variables):
            raise InvalidSpecError(f"order {gid}={vars_!r} is not a permutation of a group's variables", "variable order")
        if not groups[gid].holds_order(tuple(vars_)):
            raise InvalidSpecError(f"order {gid}={vars_!r} puts a variable outside the one its range is bounded by",
                                   "variable order")
        chosen[gid] = tuple(vars_)
    tree = nx.DiGraph(order=chosen, output=output, groups=groups, hosted=frozenset(groups) - own, hostings={},
                      prefixes={}, moved={})
    tree.add_node("output", kind="output", var=None, bound=frozenset(), sense=None, k=1, domain=None,
                  group=None, score=output, terms=(), position=None, hosted=False)
    for gid, g in groups.items():
        if g.kind in _JOINT and len(g.variables) > 1:
            _add_elimination(tree, g, chosen[gid], groups)
        else:
            _add_chain(tree, g, chosen[gid], groups)
    for n in list(tree.nodes):
        for sub in walk(tree.nodes[n]["score"]) if tree.nodes[n]["kind"] != "fixed" else ():
            ref = sub.index if isinstance(sub, ex.Content) else sub
            if isinstance(ref, NodeRef):
                tree.add_edge(n, ref.node)
            elif isinstance(ref, GroupRef):
                tree.add_edge(n, node_id(ref.group, chosen[ref.group][0]))
            elif isinstance(ref, ex.FixedIndex):
                fixed = f"fixed:{fixed_to_text(ref)}"
                tree.add_node(fixed, kind="fixed", var=None, bound=frozenset(), sense=None, k=1, domain=None,
                              group=None, score=None, terms=(), position=ref, hosted=False)
                tree.add_edge(n, fixed)
    if hosted and (tree.graph["hosted"] or _repeats(tree)):
        tree.graph["hostings"] = _hostings(tree)
    if prefix_of or moved:
        by_reduction = {group_expression(tree, g): g for g in tree.graph["groups"]}
        tree.graph["moved"] = {outermost(tree, by_reduction[r]): (outermost(tree, g), m) for r, (g, m) in moved.items()
                               if r in by_reduction}
        tree.graph["prefixes"] = {outermost(tree, by_reduction[r]): outermost(tree, g) for r, g in prefix_of.items()
                                  if r in by_reduction}
    return tree


def _kind(g: Group) -> str:
    if g.kind in (ex.ReduceKind.SUM, ex.ReduceKind.MEAN):
        return "aggregate"
    return "kth" if g.kind is ex.ReduceKind.KTH_LARGEST and g.k >= 2 else "top1"  # kth_largest(1) is max


def _add_node(tree: nx.DiGraph, g: Group, var: str, bound: frozenset, terms: list) -> None:
    tree.add_node(node_id(g.id, var), kind=_kind(g), var=var, bound=frozenset(bound), sense=_SENSE[g.kind],
                  k=g.k, domain=g.domain_of(var), group=g.id, score=_sum(terms), terms=tuple(terms),
                  position=None, hosted=hosting.HOST in bound)


def _add_chain(tree: nx.DiGraph, g: Group, order: tuple[str, ...], groups) -> None:
    """The innermost node reduces the body, each outer one the value of the next node in."""
    body_free = free_variables(g.body, groups) | g.bounds  # a bounded range is made for each binding
    for i, var in enumerate(order):
        terms = [(1, NodeRef(node_id(g.id, order[i + 1])))] if i + 1 < len(order) else additive_terms(g.body)
        _add_node(tree, g, var, body_free - set(order[i:]), terms)


def _add_elimination(tree: nx.DiGraph, g: Group, order: tuple[str, ...], groups) -> None:
    """A joint min/max as an elimination tree (module docstring), innermost variable first."""
    terms = additive_terms(g.body)
    reads = [free_variables(t, groups) for _, t in terms]
    unused = set(range(len(terms)))
    factors: list[tuple[str, frozenset[str]]] = []   # open nodes and what their values depend on
    for var in reversed(order):
        own = sorted(i for i in unused if var in reads[i])
        children = [f for f in factors if var in f[1]]
        depends = frozenset().union(*(reads[i] for i in own), *(f[1] for f in children),
                                    ex.domain_variables(g.domain_of(var))) - {var}
        _add_node(tree, g, var, depends, [terms[i] for i in own] + [(1, NodeRef(c)) for c, _ in children])
        factors = [f for f in factors if f not in children] + [(node_id(g.id, var), depends)]
        unused -= set(own)
    if unused or len(factors) != 1:
        raise ValueError(f"group {g.id} is not connected (terms over disjoint variables): build the tree from "
                         "the target's normal form")


def outermost(tree: nx.DiGraph, group: str) -> str:
    return node_id(group, tree.graph["order"][group][0])


def selection_nodes(tree: nx.DiGraph) -> list[str]:
    """The target's own selection nodes (not the hosted, prefix or moved forms the tree adds beside them)."""
    extra = tree.graph["hosted"]
    return [n for n, d in tree.nodes(data=True) if d["kind"] in SELECTION_KINDS and not d["hosted"]
            and d["group"] not in extra]


def hosted_nodes(tree: nx.DiGraph) -> list[str]:
    """The nodes of the hosted groups: selections input positions make for themselves (module docstring)."""
    return [n for n, d in tree.nodes(data=True) if d["hosted"]]


# ---- hosts ---------------------------------------------------------------------------------------
_KINDS = {"min": ex.ReduceKind.MIN, "max": ex.ReduceKind.MAX, "argmin": ex.ReduceKind.ARGMIN,
          "argmax": ex.ReduceKind.ARGMAX, "kth": ex.ReduceKind.KTH_LARGEST, "sum": ex.ReduceKind.SUM,
          "mean": ex.ReduceKind.MEAN}


def node_expression(tree: nx.DiGraph, node: str) -> ex.Reduce:
    """A node as a reduction of the target language: its own variable over its domain, its score with every
    reference spelt out (``min(dot(x[a], x[b]) for b in T)`` for the inner node of a joint minimum)."""
    found = tree.graph.setdefault("expressions", {})
    if node not in found:
        d = tree.nodes[node]
        kind = _KINDS[d["sense"]]
        found[node] = ex.Reduce(kind, _spelt(tree, d["score"]), (ex.Binding(d["var"], d["domain"]),),
                                d["k"] if kind is ex.ReduceKind.KTH_LARGEST else None)
    return found[node]


def group_expression(tree: nx.DiGraph, group: str) -> ex.Reduce:
    """A group as the reduction it was in the target (its references spelt out)."""
    g = tree.graph["groups"][group]
    return ex.Reduce(g.kind, _spelt(tree, g.body), tuple(ex.Binding(v, d) for v, d in zip(g.variables, g.domains)),
                     g.k if g.kind is ex.ReduceKind.KTH_LARGEST else None)


def _spelt(tree: nx.DiGraph, e):
    if isinstance(e, GroupRef):
        return group_expression(tree, e.group)
    if isinstance(e, NodeRef):
        return node_expression(tree, e.node)
    if isinstance(e, ex.Content) and isinstance(e.index, GroupRef):
        return ex.Content(group_expression(tree, e.index.group))
    return ex.map_children(e, lambda c: _spelt(tree, c))


@lru_cache(maxsize=256)
def _hosted_forms(expression) -> tuple[ex.Reduce, ...]:
    """The hosted forms the selections of ``expression`` need at winner hosts (``hosting.closure``), over
    the nodes of every useful variable order."""
    _, groups = collect_groups(expression)
    if not any(isinstance(e, ex.Content) and isinstance(e.index, GroupRef) for g in groups.values() for e in walk(g.body)):
        return ()   # no selection reads a winner's token: no winner hosts one
    useful = dict(_useful_orders(expression))
    selections = []
    for r in range(max((len(o) for o in useful.values()), default=0)):
        order = tuple(sorted((gid, orders[r]) for gid, orders in useful.items() if len(orders) > r))
        tree = _tree(expression, order, False)
        selections += [(node_expression(tree, n), tree.nodes[n]["bound"]) for n in selection_nodes(tree)]
    return hosting.closure(selections)


def _prefix_forms(expression) -> list[ex.Reduce]:
    """The selections of ``expression`` that bind no variable and range over a suffix of the sequence (every
    position, or ``range(a, T+1)``): under the causal mask each input position can make one over its prefix
    (``_prefix_form``), and position T's is the whole one."""
    _, groups = collect_groups(expression)
    found = []
    for g in groups.values():
        if g.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX, ex.ReduceKind.ARGMIN, ex.ReduceKind.ARGMAX) and \
                len(g.variables) == 1 and not free_variables(g.body, groups) - set(g.variables) and _suffix(g.domains[0]):
            found.append(_group_reduction(groups, g))
    return found


def _moved_winners(expression, output, masked: bool) -> list[tuple[ex.Reduce, tuple[ex.Reduce, int]]]:
    """The argmin/argmax selections that bind no variable, whose candidates read only their neighbours' tokens
    (``x[t+1]``: the token before a winner, ``x[argmax(...) - 1]``, shifted; or ``x[t-1]`` with the winner's own
    token read), and whose winner the target reads only as a token at the top: each with the same comparison
    over ``t + m`` (``normal_form.over_neighbours``), where every candidate reads its own token. A retrieval of
    the moved selection, whose candidates hold the token ``m`` before their own (after it, for ``m < 0``),
    brings the one the target reads (docs/model.md, "The token beside a winner"). Under the causal mask
    (``masked``) a candidate holds no token after its own, so only ``m > 0`` moves."""
    _, groups = collect_groups(expression)
    read_at_top = {e.index.group for e in walk(output) if isinstance(e, ex.Content) and isinstance(e.index, GroupRef)}
    read_elsewhere = {ref.group for g in groups.values() for e in walk(g.body)
                      for ref in [e.index if isinstance(e, ex.Content) else e] if isinstance(ref, GroupRef)}
    refs = [e.group for e in walk(output) if isinstance(e, GroupRef)]   # a token read counts its index once more
    tokens = [e.index.group for e in walk(output) if isinstance(e, ex.Content) and isinstance(e.index, GroupRef)]
    read_elsewhere |= {g for g in refs if refs.count(g) > tokens.count(g)}
    found = []
    for gid in sorted(read_at_top - read_elsewhere):
        g = groups[gid]
        if g.kind.returns_index and len(g.variables) == 1 and not free_variables(g.body, groups) - set(g.variables):
            selection = _group_reduction(groups, g)
            moved = over_neighbours(selection)
            if moved is not None and (moved[1] > 0 or not masked):
                found.append((selection, moved))
    return found


def _suffix(domain: ex.Domain) -> bool:
    return isinstance(domain, ex.AllPositions) or (
        isinstance(domain, ex.Range) and not ex.domain_variables(domain) and not domain.start.from_end
        and domain.stop == ex.FixedIndex(-1, True))


def _group_reduction(groups: Mapping[str, Group], g: Group) -> ex.Reduce:
    def spelt(e):
        if isinstance(e, GroupRef):
            return _group_reduction(groups, groups[e.group])
        if isinstance(e, ex.Content) and isinstance(e.index, GroupRef):
            return ex.Content(_group_reduction(groups, groups[e.index.group]))
        return ex.map_children(e, spelt)
    return ex.Reduce(g.kind, spelt(g.body), tuple(ex.Binding(v, d) for v, d in zip(g.variables, g.domains)),
                     g.k if g.kind is ex.ReduceKind.KTH_LARGEST else None)


def _prefix_form(selection: ex.Reduce) -> ex.Reduce:
    """``selection`` over the positions up to its host's, ``@`` (``range(a, @+1)``): the prefix form."""
    (binding,) = selection.bindings
    start = binding.domain.start if isinstance(binding.domain, ex.Range) else ex.FixedIndex(1)
    return ex.Reduce(selection.kind, selection.body,
                     (ex.Binding(binding.var, ex.Range(start, ex.OffsetIndex(hosting.HOST, 1))),), selection.k)


def _repeats(tree: nx.DiGraph) -> set[str]:
    """The selections that bind at most one variable and could be one selection with a selection of another
    group (same ``_shape``); within a group the normal form already makes a selection once (its rule 9)."""
    groups: dict[tuple, set[str]] = {}
    for n, d in tree.nodes(data=True):
        if d["kind"] in SELECTION_KINDS and len(d["bound"]) <= 1:
            groups.setdefault(_shape(tree, n), set()).add(n)
    return {n for members in groups.values() if len({tree.nodes[m]["group"] for m in members}) > 1 for n in members}


def _shape(tree: nx.DiGraph, node: str) -> tuple:
    """What two nodes of one hosted form share, cheap to compare (normalizing is not): kind, rank, range at its
    host, how many nodes it reads through its score, and the calls and reads of its own terms."""
    d = tree.nodes[node]
    leaves = sorted(e.name if isinstance(e, ex.Call) else type(e).__name__ for _, t in d["terms"] for e in walk(t)
                    if isinstance(e, (ex.Call, ex.Content, ex.Param, ex.Num)))
    sense = {"argmin": "min", "argmax": "max"}.get(d["sense"], d["sense"])   # a value and its winner alike
    return (sense, d["k"], len(d["bound"]), repr(ex.rename_domain(d["domain"], dict.fromkeys(d["bound"], hosting.HOST))),
            len(nx.descendants(tree, node)), tuple(leaves))


def _hostings(tree: nx.DiGraph) -> dict[str, tuple[Hosting, ...]]:
    """Each selection node's ``Hosting`` s (module docstring): the hosted groups' nodes are found by their
    forms (``hosting.canonical``)."""
    outer = {group_expression(tree, g): outermost(tree, g) for g in tree.graph["groups"]}
    forms = {hosting.canonical(node_expression(tree, n)): n for n in hosted_nodes(tree)}
    found: dict[str, list[Hosting]] = {}
    same: dict[str, list[tuple[str, str]]] = {}
    repeated = _repeats(tree)
    for n, d in tree.nodes(data=True):
        if d["kind"] not in SELECTION_KINDS:
            continue
        expression = node_expression(tree, n)
        own = hosting.variable_form(expression, d["bound"]) if d["bound"] else expression
        if own is not None and n in repeated:   # a form no node of another group has names nothing else
            same.setdefault(hosting.canonical(own), []).append((n, next(iter(d["bound"]), None)))
        for index, form in hosting.winner_forms(expression, d["bound"]):
            made = forms.get(hosting.canonical(form))
            if made is not None and made != n and index in outer:
                found.setdefault(n, []).append(Hosting(made, hosting.HOST, winner=outer[index]))
        for position, form in hosting.fixed_forms(expression, d["bound"]) if forms else ():
            made = forms.get(hosting.canonical(form))
            if made is not None:   # the hosted form made at position P is this selection
                found.setdefault(n, []).append(Hosting(made, hosting.HOST, fixed=position))
    for members in same.values():
        for n, variable in members:
            found.setdefault(n, []).extend(Hosting(m, v, own=variable) for m, v in members if m != n)
    return {n: tuple(h) for n, h in found.items() if h}


# ---- measures ------------------------------------------------------------------------------------
def _domain_size(domain) -> sympy.Expr:
    if isinstance(domain, ex.Subset):
        return T / 2  # realization.subset_mask keeps half of the positions
    if isinstance(domain, ex.Range) and ex.domain_variables(domain):
        return T  # a range bounded by a variable: at most every position
    if isinstance(domain, ex.Range):
        def bound(i: ex.FixedIndex):
            return T - i.position if i.from_end else sympy.Integer(i.position)
        return sympy.Max(bound(domain.stop) - bound(domain.start), 0)
    return T


def _useful_trees(target, limit: int = 256) -> list[nx.DiGraph]:
    """The trees of the first ``limit`` combinations of useful orders."""
    per_group = useful_orders(target)
    combos = itertools.islice(itertools.product(*per_group.values()), limit)
    return [comparison_tree(target, dict(zip(per_group, combo)), hosted=False) for combo in combos]


def comparison_order(target) -> int:
    """beta': the most index variables one comparison must see at once (bound variables + the free one),
    under the best variable order. 2 for ``min_{s,t} <x_s, x_t>``, 3 for the triangle center."""
    tree = comparison_tree(target, canonical_order(target), hosted=False)
    return max((len(d["bound"]) + 1 for _, d in tree.nodes(data=True) if d["kind"] in SELECTION_KINDS),
               default=0)


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
    token playing one bound variable; a stage is a node's height in the tree. The best useful order."""
    def measure(tree):
        stage = stages(tree)
        counts: dict[tuple[int, int], int] = {}
        for n in selection_nodes(tree):
            key = (min(len(tree.nodes[n]["bound"]), 2), stage[n])
            counts[key] = counts.get(key, 0) + 1
        return max(counts.values(), default=0)
    return min(measure(tree) for tree in _useful_trees(target))


def comparison_number(target) -> sympy.Expr:
    """How many index tuples the target compares: for each selection node, its candidates times the
    bindings of its bound variables; a polynomial in ``T`` (``T**2 + T`` for ``min_{s,t} <x_s, x_t>``)."""
    tree = comparison_tree(target, canonical_order(target), hosted=False)
    domains: dict[str, list] = {}
    for _, d in tree.nodes(data=True):
        if d["var"]:
            domains.setdefault(d["var"], []).append(d["domain"])
    total = sympy.Integer(0)
    for n in selection_nodes(tree):
        data = tree.nodes[n]
        count = _domain_size(data["domain"])
        for b in data["bound"]:  # a variable's name may serve several reductions: count the widest
            count *= max((_domain_size(d) for d in domains.get(b, [ex.AllPositions()])),
                         key=lambda size: size.subs(T, 1000))
        total += count
    return sympy.expand(total)


def depth(target) -> int:
    """The longest chain of dependent selection, aggregate and fixed-position nodes."""
    tree = comparison_tree(target, canonical_order(target), hosted=False)
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


def needs_positional(target, causal: bool = False) -> bool:
    """Whether the target tells positions apart (fixed positions, offsets, subsets, ranges); under a causal
    mask, ``range(1, s+1)`` does not: the mask tells position ``s`` what comes at or before it."""
    output, groups = collect_groups(_expression(target))
    scores = [output] + [g.body for g in groups.values()]
    for score in scores:
        for sub in walk(score):
            if isinstance(sub, ex.Content) and isinstance(sub.index, (ex.FixedIndex, ex.OffsetIndex)):
                return True
    return any(not isinstance(d, ex.AllPositions) and not (causal and any(ex.masked_prefix(d, v) for v in ex.domain_variables(d)))
               for g in groups.values() for d in g.domains)


def describe(tree: nx.DiGraph) -> str:
    """A readable listing of the tree, one node a line, children indented."""
    lines: list[str] = []

    def visit(n: str, indent: int) -> None:
        d = tree.nodes[n]
        if d["kind"] == "output":
            label = "output"
        elif d["kind"] == "fixed":
            label = f"{n}: fixed position x[{fixed_to_text(d['position'])}]"
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
    "Hosting",
    "NodeRef",
    "additive_terms",
    "all_orders",
    "canonical_order",
    "collect_groups",
    "comparison_dimension",
    "comparison_number",
    "comparison_order",
    "comparison_tree",
    "depth",
    "describe",
    "free_variables",
    "group_expression",
    "hosted_nodes",
    "needs_positional",
    "node_expression",
    "node_id",
    "outermost",
    "selection_nodes",
    "stages",
    "useful_orders",
]
