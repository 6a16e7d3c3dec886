"""InfoFlow programs as SMT constraints (z3): one of the two modules that import z3.

The encoding does not grow with ``T``. Without positional encoding all input positions are interchangeable,
so the state of the model is the state of *position classes*: ``in`` (every input position, playing the
bound variable of whatever node it makes), ``out`` (the output token) and, with positional encoding, the
*anchors* ``a1..aK`` (fixed positions whose heads may override the inputs'). For each class ``c`` and layer
``l`` Boolean facts, each defined by an equality, so that a model is a program of ``docs/model.md`` and
conversely:

``all[c,l]``      the class holds every input position;
``know[c,l,n]``   it knows node ``n``: a selection's chosen position at the binding it plays (and, by
                  holding the winner's holdings, what the node's score read there), an aggregate's value;
``xfix[c,l,q]``   it holds the content of fixed position ``q``;
``xoff[c,l,k]``   (inputs) it holds the content of its neighbour at offset ``k``.

A selection ranks its candidates by a score whose every term depends on the candidate (the comparison
tree's nodes, ``trees.py``). What the score reads is split by who reads it (``_reads``): the selecting
position (reads tied to the variable it plays), every candidate (reads tied to the node's variable), or
either (reads tied to no variable: the selector, or every candidate). A selection's value is computed later
by whoever needs it, from knowing the selection; nothing else is required where it is made.

Heads are *counted*, not named: at most ``h_l`` operations per class and layer, one of each kind, except
specific-position aggregation, whose heads split the sources into disjoint blocks in one canonical order.
The number of heads of each layer is chosen by an assumption literal (``heads``), so one encoding serves
every head count up to the one it was built for. Each operation carries a cost level; the solver asks
with levels as assumptions, so that an unsat core names the tracked constraints that clash.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy
import z3

from . import cost
from . import expr as ex
from .program import Action, Mode, Offset, Op, Program
from .realization import Realization
from .symbols import T
from .trees import (
    GroupRef,
    NodeRef,
    comparison_tree,
    needs_positional,
    outermost,
    position_reads,
    useful_orders,
    walk,
)
from .trees import free_variables as tree_free_variables

IN, OUT = "in", "out"
SELECTOR, CANDIDATE, EITHER, BOTH = "selector", "candidate", "either", "both"
_FAR = 10_000  # a sequence length at which a fixed anchor's membership of a domain is settled


@dataclass(frozen=True)
class Need:
    """One thing a position must hold or know: ``("fixed", q)``, ``("offset", k)``, ``("node", key)``
    (a node of the same order), ``("group", gid)`` (a group's outermost node, under its chosen order)."""

    kind: str
    what: object


@dataclass(frozen=True)
class Reads:
    """What evaluating a score reads, by who must hold it (module docstring)."""

    selector: tuple[Need, ...] = ()
    candidate: tuple[Need, ...] = ()
    either: tuple[Need, ...] = ()
    both: bool = False  # a read ties both sides' variables: only candidates holding everything can rank

    @property
    def empty(self) -> bool:
        return not (self.selector or self.candidate or self.either or self.both)


@dataclass(frozen=True)
class NodeInfo:
    """One single-variable node of one group under one variable order."""

    key: str                    # unique: group|order|var
    node: str                   # the tree's node id (g0.t)
    group: str
    order: tuple[str, ...]
    kind: str                   # top1, kth, aggregate
    bound: frozenset[str]
    k: int
    domain: ex.Domain
    reads: Reads                # ranking its candidates (a selection), or one token's value (an aggregate)
    constant: bool              # its score reads nothing: known everywhere from the start

    @property
    def restricted(self) -> bool:  # candidates restricted to a subset or range: positions tell them apart
        return not isinstance(self.domain, ex.AllPositions)


@dataclass
class Encoding:
    """The constraints of one question and the variables the solver reads back."""

    target: object
    arch: object
    ctx: z3.Context
    solver: z3.Solver
    nodes: dict[str, NodeInfo]
    outer: dict[str, dict[tuple[str, ...], str]]            # group -> order -> key of its outermost node
    classes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    ops: dict[tuple[int, str, str], z3.BoolRef] = field(default_factory=dict)   # (layer, class, op) -> var
    op_cost: dict[tuple[int, str, str], dict[int, sympy.Expr]] = field(default_factory=dict)  # by heads
    order_vars: dict[str, dict[tuple[str, ...], z3.BoolRef]] = field(default_factory=dict)
    # (layer, class, "POSITIONS#j") -> source -> chosen: the j-th specific-position head's sources
    sources: dict[tuple[int, str, str], dict[object, z3.BoolRef]] = field(default_factory=dict)
    # every specific-position head a class runs itself: (acts, size gathered, gathers a whole sequence)
    gathers: list[tuple[z3.BoolRef, z3.ArithRef, z3.BoolRef]] = field(default_factory=list)
    gather_cap: z3.ArithRef | None = None  # bounds every gathered size when the levels order sizes
    gather_limits: list[int | None] = field(default_factory=list)  # per level: the largest size costing
                                                                   # no more (None: grows with T)
    gather_floor: int = 0  # the largest size whose decoding costs nothing (exponents are clamped at 0)
    tracked: dict[str, z3.BoolRef] = field(default_factory=dict)  # constraint name -> assumption literal
    heads: dict[tuple[int, int], z3.BoolRef] = field(default_factory=dict)  # (layer, h) -> "h heads"
    max_heads: tuple[int, ...] = ()
    levels: list[sympy.Expr] = field(default_factory=list)
    level_vars: list[z3.BoolRef] = field(default_factory=list)
    fixed: tuple = ()
    offsets: tuple = ()
    anchors: dict[str, ex.FixedIndex] = field(default_factory=dict)   # class name -> its fixed position
    kept: dict[tuple[int, str, str], z3.BoolRef] = field(default_factory=dict)  # anchor keeps an input op
    state: dict[str, dict] = field(default_factory=dict)  # "all", "know", "xfix", "xoff" -> vars

    def head_assumptions(self, heads: tuple[int, ...]) -> list[z3.BoolRef]:
        """The literals that select ``heads[l]`` heads in each layer (each at most ``max_heads[l]``)."""
        return [self.heads[(layer, h)] for layer, h in enumerate(heads, start=1)]


# ---- reading what a score needs ---------------------------------------------------------------------
def _reads(tree, terms, players: dict[str, str], key_of) -> Reads:
    """Split the reads of ``terms`` by who makes them: ``players`` says which side plays each variable."""
    found: dict[str, list[Need]] = {SELECTOR: [], CANDIDATE: [], EITHER: [], BOTH: []}

    def side(variables) -> str:
        sides = {players[v] for v in variables}
        return EITHER if not sides else (sides.pop() if len(sides) == 1 else BOTH)

    for _, term in terms:
        for leaf in walk(term):
            ref = leaf.index if isinstance(leaf, ex.Content) else leaf
            if isinstance(ref, ex.OffsetIndex):
                need, where = Need("offset", ref.offset), side({ref.name})
            elif isinstance(ref, ex.FixedIndex):
                need, where = Need("fixed", ref), EITHER
            elif isinstance(ref, NodeRef):
                need, where = Need("node", key_of(ref.node)), side(tree.nodes[ref.node]["bound"])
            elif isinstance(ref, GroupRef):
                need, where = Need("group", ref.group), side(tree.nodes[outermost(tree, ref.group)]["bound"])
            else:
                continue
            if need not in found[where]:
                found[where].append(need)
    return Reads(tuple(found[SELECTOR]), tuple(found[CANDIDATE]), tuple(found[EITHER]), bool(found[BOTH]))


def _key(group: str, order: tuple[str, ...], var: str) -> str:
    return f"{group}.{'-'.join(order) if len(order) > 1 else ''}.{var}"


def _node_infos(target) -> tuple[dict[str, NodeInfo], dict[str, dict[tuple[str, ...], str]]]:
    infos: dict[str, NodeInfo] = {}
    outer: dict[str, dict[tuple[str, ...], str]] = {}
    for gid, orders in useful_orders(target).items():
        outer[gid] = {}
        for order in orders:
            tree = comparison_tree(target, {gid: order})
            for i, var in enumerate(order):
                data = tree.nodes[f"{gid}.{var}"]
                players = {var: CANDIDATE} | {b: SELECTOR for b in data["bound"]}
                reads = _reads(tree, data["terms"], players,
                               lambda n, gid=gid, order=order: _key(gid, order, n.split(".", 1)[1]))
                score_free = tree_free_variables(data["score"], tree.graph["groups"])
                key = _key(gid, order, var)
                infos[key] = NodeInfo(key, f"{gid}.{var}", gid, order, data["kind"], data["bound"], data["k"],
                                      data["domain"], reads, constant=reads.empty and not score_free)
                if i == 0:
                    outer[gid][order] = key
    return infos, outer


# Builders that stay inside standard SMT-LIB (no empty and/or, no pseudo-Boolean extensions) when the
# encoding is exported; z3's native cardinality constraints are used otherwise, as they solve faster.
def conj(items, ctx: z3.Context) -> z3.BoolRef:
    items = list(items)
    return z3.BoolVal(True, ctx) if not items else items[0] if len(items) == 1 else z3.And(items)


def disj(items, ctx: z3.Context) -> z3.BoolRef:
    items = list(items)
    return z3.BoolVal(False, ctx) if not items else items[0] if len(items) == 1 else z3.Or(items)


def total(terms, ctx: z3.Context) -> z3.ArithRef:
    terms = list(terms)
    return z3.IntVal(0, ctx) if not terms else terms[0] if len(terms) == 1 else z3.Sum(terms)


def at_most(literals, bound: int, portable: bool, ctx: z3.Context) -> z3.BoolRef:
    literals = list(literals)
    if len(literals) <= bound:
        return z3.BoolVal(True, ctx)
    if portable:
        return z3.Sum([z3.If(b, z3.IntVal(1, ctx), z3.IntVal(0, ctx)) for b in literals]) <= bound
    return z3.PbLe([(b, 1) for b in literals], bound)


def exactly_one(literals, portable: bool, ctx: z3.Context) -> z3.BoolRef:
    literals = list(literals)
    if len(literals) == 1:
        return literals[0]
    if portable:
        return z3.Sum([z3.If(b, z3.IntVal(1, ctx), z3.IntVal(0, ctx)) for b in literals]) == 1
    return z3.PbEq([(b, 1) for b in literals], 1)


def _in_domain(q: ex.FixedIndex, domain: ex.Domain) -> bool:
    """Whether fixed position ``q`` (near the start) is a candidate of ``domain`` for every large ``T``."""
    return bool(q.resolve(_FAR) in Realization().domain_positions(domain, _FAR))


def _ref_name(q) -> str:
    return f"off{q.offset}" if isinstance(q, Offset) else str(q)


# ---- the encoding -----------------------------------------------------------------------------------
def encode(target, arch, law: cost.DecodeLaw = cost.DecodeLaw.SEED, seq_len: int | None = None,
           anchors: bool = True, portable: bool = False, max_heads: tuple[int, ...] | None = None) -> Encoding:
    """Build the constraints for ``target`` on ``arch`` (heads up to ``max_heads``, default ``arch.heads``);
    the solver adds the level and head assumptions.

    ``anchors=False`` leaves out the fixed positions that may override heads: a smaller encoding whose
    programs are programs of the full one (the solver tries it first and falls back when it says no)."""
    return _Builder(target, arch, law, seq_len, anchors, portable, max_heads or arch.heads).build()


class _Builder:
    """One encoding, built by named constraint families in ``build``."""

    def __init__(self, target, arch, law, seq_len, anchors, portable, max_heads):
        infos, outer = _node_infos(target)
        self.ctx = z3.Context()
        self.enc = Encoding(target, arch, self.ctx, z3.Solver(ctx=self.ctx), infos, outer,
                            max_heads=tuple(max_heads))
        self.law, self.seq_len, self.portable = law, seq_len, portable
        self.use_anchors = anchors
        self.pe = arch.positional
        self.positional_ok = self.bool("allow:positional")

    # ---- z3 in this encoding's context ----------------------------------------------------------------
    def bool(self, name: str) -> z3.BoolRef:
        return z3.Bool(name, self.ctx)

    def true(self) -> z3.BoolRef:
        return z3.BoolVal(True, self.ctx)

    def false(self) -> z3.BoolRef:
        return z3.BoolVal(False, self.ctx)

    def conj(self, items) -> z3.BoolRef:
        return conj(items, self.ctx)

    def disj(self, items) -> z3.BoolRef:
        return disj(items, self.ctx)

    def add(self, formula) -> None:
        self.enc.solver.add(formula)

    def track(self, name: str, formula) -> None:
        lit = self.enc.tracked.setdefault(name, self.bool(f"track:{name}"))
        self.add(z3.Implies(lit, formula))

    # ---- the families, in order -------------------------------------------------------------------------
    def build(self) -> Encoding:
        self.orders()
        self.position_classes()
        self.state_variables()
        self.initial_state()
        for layer in range(1, self.enc.arch.layers + 1):
            self.operations(layer)
            self.update_rules(layer)
        if self.enc.sources:
            self.sizes()
        self.goal()
        self.costs()
        return self.enc

    def orders(self) -> None:
        """Exactly one variable order (one elimination tree) per group."""
        enc = self.enc
        for gid, per_order in enc.outer.items():
            enc.order_vars[gid] = {o: self.bool(f"ord:{gid}:{','.join(o)}") for o in per_order}
            self.add(exactly_one(enc.order_vars[gid].values(), self.portable, self.ctx))

    def position_classes(self) -> None:
        """``in``, the anchors 1..K (positional encoding, two layers or more; K = the groups with a
        selection that binds no variable, the only work a fixed position can do for a generic input), and
        ``out``; the fixed positions and offsets a specific-position head may gather."""
        enc = self.enc
        enc.fixed, enc.offsets = position_reads(comparison_tree(enc.target))
        n_free = len({i.group for i in enc.nodes.values() if not i.bound and i.kind in ("top1", "kth")})
        if self.use_anchors and self.pe and enc.arch.layers >= 2:
            enc.anchors = {f"a{q}": ex.FixedIndex(q) for q in range(1, n_free + 1)}
        enc.inputs = [IN] + list(enc.anchors)
        enc.classes = enc.inputs + [OUT]
        self.fixed_sources = sorted(set(enc.fixed) | set(enc.anchors.values()), key=str)
        self.source_class = {q: next((a for a, p in enc.anchors.items() if p == q), IN) for q in self.fixed_sources}

    def state_variables(self) -> None:
        enc, L = self.enc, self.enc.arch.layers
        layers = range(L + 1)
        enc.state["all"] = {(c, l): self.bool(f"all:{c}:{l}") for c in enc.classes for l in layers}
        enc.state["know"] = {(c, l, n): self.bool(f"know:{c}:{l}:{n}")
                             for c in enc.classes for l in layers for n in enc.nodes}
        enc.state["xfix"] = {(c, l, q): self.bool(f"xfix:{c}:{l}:{q}")
                             for c in enc.classes for l in layers for q in enc.fixed}
        enc.state["xoff"] = {(c, l, k): self.bool(f"xoff:{c}:{l}:{k}")
                             for c in enc.inputs for l in layers for k in enc.offsets}

    def initial_state(self) -> None:
        """Layer 0: an input position holds its own token (an anchor is its fixed position), the output
        token nothing; a node whose score reads nothing (a count, a choice among ties) is known to all."""
        enc, s = self.enc, self.enc.state
        initial = [z3.Not(s["all"][(c, 0)]) for c in enc.classes]
        initial += [v == (self.admissible(enc.nodes[n], c) and enc.nodes[n].constant)
                    for (c, l, n), v in s["know"].items() if l == 0]
        initial += [v == (c in enc.anchors and enc.anchors[c] == q) for (c, l, q), v in s["xfix"].items() if l == 0]
        initial += [z3.Not(v) for (c, l, k), v in s["xoff"].items() if l == 0]
        self.track("initial", self.conj(initial))
        if not self.pe:  # an assumption, so that an unsat core can say when positions were the obstacle
            self.enc.tracked["positional"] = z3.Not(self.positional_ok)

    # ---- what a class holds ---------------------------------------------------------------------------
    def admissible(self, info: NodeInfo, c: str) -> bool:
        """Whether class ``c`` can know node ``info`` at a binding it plays: the output token plays no
        variable, an input position one."""
        return len(info.bound) <= (0 if c == OUT else 1)

    def holds(self, c: str, l: int, need: Need) -> z3.BoolRef:
        s = self.enc.state
        if need.kind == "fixed":
            return s["xfix"][(c, l, need.what)]
        if need.kind == "offset":
            return s["xoff"][(c, l, need.what)] if c != OUT else self.false()
        if need.kind == "node":
            return s["know"][(c, l, need.what)]
        return self.disj([z3.And(v, s["know"][(c, l, self.enc.outer[need.what][o])])
                          for o, v in self.enc.order_vars[need.what].items()])

    def candidates(self, info: NodeInfo) -> list[str]:
        """The input classes among a node's candidates (an anchor outside a subset is not one)."""
        return [IN] + [a for a, q in self.enc.anchors.items() if _in_domain(q, info.domain)]

    def every_candidate(self, info: NodeInfo, l: int, needs, both: bool = False) -> z3.BoolRef:
        """Every candidate class holds ``needs`` after layer ``l`` (or holds every position)."""
        s = self.enc.state
        return self.conj([z3.Or(s["all"][(k, l)], self.false() if both else
                                self.conj([self.holds(k, l, nd) for nd in needs]))
                          for k in self.candidates(info)])

    def ready(self, info: NodeInfo, c: str, l: int) -> z3.BoolRef:
        """Can class ``c`` make selection ``info`` with a retrieval head in layer ``l``?"""
        s, r, before = self.enc.state, info.reads, l - 1
        selector = z3.Or(s["all"][(c, before)], self.conj([self.holds(c, before, nd) for nd in r.selector]))
        either = self.conj([z3.Or(self.holds(c, before, nd), self.every_candidate(info, before, [nd]))
                            for nd in r.either])
        gate = self.positional_ok if info.restricted else self.true()
        return self.conj([selector, self.every_candidate(info, before, r.candidate, r.both), either, gate])

    def averaged(self, info: NodeInfo, l: int) -> z3.BoolRef:
        """Can an averaging head in layer ``l`` learn aggregate ``info``: every position computes its
        per-token value from what it holds?"""
        r = info.reads
        gate = self.positional_ok if info.restricted else self.true()
        return z3.And(self.every_candidate(info, l - 1, r.candidate + r.either, r.both or bool(r.selector)), gate)

    def common(self, info_or_none, l: int, fact) -> z3.BoolRef:
        """A fact every candidate has: what a retrieval gains whoever wins."""
        classes = self.enc.inputs if info_or_none is None else self.candidates(info_or_none)
        return self.conj([fact(k, l) for k in classes])

    # ---- the operations of one layer ------------------------------------------------------------------
    def references(self, c: str) -> list:
        """What a specific-position head at ``c`` may gather: fixed positions (the anchors too) and, at an
        input position, offsets from it."""
        return list(self.fixed_sources) + ([Offset(k) for k in self.enc.offsets] if c != OUT else [])

    def operations(self, l: int) -> None:
        """The operation variables of layer ``l`` at every class: retrievals of the nodes it can make, one
        global aggregation, one global averaging, specific-position slots; at most ``h`` heads each."""
        enc = self.enc
        self.effective: dict[tuple[str, str], z3.BoolRef] = {}  # (class, op) -> the op acts there
        H = enc.max_heads[l - 1]
        for h in range(1, H + 1):
            enc.heads.setdefault((l, h), self.bool(f"heads:{l}:{h}"))
        for c in [IN, OUT] + enc.inputs[1:]:
            names = [(f"{'KTH' if i.kind == 'kth' else 'RETRIEVE'}:{key}", i)
                     for key, i in enc.nodes.items() if i.kind in ("top1", "kth") and self.admissible(i, c)]
            names += [("AGGREGATE", None)]
            if any(i.kind == "aggregate" and not i.bound and not i.constant for i in enc.nodes.values()):
                names += [("AVERAGE", None)]
            refs = self.references(c)
            slots = [f"POSITIONS#{j}" for j in range(1, min(H, len(refs)) + 1)]
            used = [self.operation(l, c, name, info) for name, info in names + [(s, None) for s in slots]]
            used += [self.enc.kept[(l, c, n)] for n, _ in names + [(s, None) for s in slots]
                     if (l, c, n) in self.enc.kept]
            self.slots(l, c, slots, refs)
            for h in range(1, H + 1):
                self.track(f"budget:{l}:{c}", z3.Implies(enc.heads[(l, h)], at_most(used, h, self.portable, self.ctx)))

    def operation(self, l: int, c: str, name: str, info: NodeInfo | None) -> z3.BoolRef:
        """One operation variable, its preconditions and cost, and (at an anchor) the inputs' head it keeps."""
        enc = self.enc
        var = self.bool(f"op:{l}:{c}:{name}")
        enc.ops[(l, c, name)] = var
        enc.op_cost[(l, c, name)] = self.cost_of(l, name, info)
        if info is not None:
            self.add(z3.Implies(var, z3.And(enc.order_vars[info.group][info.order], self.ready(info, c, l))))
        if name.startswith("POSITIONS"):
            enc.sources[(l, c, name)] = {q: self.bool(f"src:{l}:{c}:{name[10:]}:{_ref_name(q)}")
                                         for q in self.references(c)}
        acts = var
        if c in enc.anchors and (l, IN, name) in enc.ops:
            keep = self.bool(f"keep:{l}:{c}:{name}")  # an anchor keeps the inputs' op unless it overrides
            enc.kept[(l, c, name)] = keep
            self.add(z3.Implies(keep, enc.ops[(l, IN, name)]))
            acts = z3.Or(var, keep)
        self.effective[(c, name)] = acts
        return var

    def cost_of(self, l: int, name: str, info: NodeInfo | None) -> dict[int, sympy.Expr]:
        """The operation's cost exponent for each head count of layer ``l`` (only k-th retrieval depends
        on it, through the per-head width ``n = E / h``)."""
        arch, heads = self.enc.arch, range(1, self.enc.max_heads[l - 1] + 1)
        if name.startswith("KTH"):
            return {h: cost.kth_retrieval(info.k, arch.width / h) for h in heads}
        if name.startswith(("RETRIEVE", "AVERAGE")):
            return {h: cost.retrieval() for h in heads}
        if name == "AGGREGATE":
            return {h: cost.decode(T, arch.input_dim, arch.width, self.law) for h in heads}
        return {}  # specific-position heads: by the size they gather (``costs``)

    def slots(self, l: int, c: str, slots: list[str], refs: list) -> None:
        """Specific-position heads: each gathers a block of sources, blocks disjoint and in one order."""
        enc = self.enc
        for j, name in enumerate(slots):
            srcs = enc.sources[(l, c, name)]
            self.add(enc.ops[(l, c, name)] == self.disj(srcs.values()))
            self.add(z3.Implies(enc.ops[(l, c, name)], self.positional_ok))
            if j:  # one canonical partition: each block starts after the previous block's first source
                before = enc.sources[(l, c, slots[j - 1])]
                for i, q in enumerate(refs):
                    self.add(z3.Implies(srcs[q], self.disj([before[p] for p in refs[:i]])))
        for q in refs:  # a source in one block at most: a second copy gathers nothing new
            self.add(at_most([enc.sources[(l, c, name)][q] for name in slots], 1, self.portable, self.ctx))

    def member_sets(self, l: int, c: str) -> list[tuple[str | None, dict]]:
        """The specific-position heads acting at ``c`` in layer ``l``, each with its sources: the class's
        own (with the head's name), and at an anchor the inputs' heads it keeps (``None``)."""
        enc = self.enc
        own = [(name, srcs) for (ll, cc, name), srcs in enc.sources.items() if ll == l and cc == c]
        kept = [(None, {q: z3.And(enc.kept[(l, c, name)], v) for q, v in srcs.items()})
                for (ll, cc, name), srcs in enc.sources.items() if ll == l and cc == IN and (l, c, name) in enc.kept]
        return own + kept

    # ---- what each class holds after the layer ------------------------------------------------------
    def update_rules(self, l: int) -> None:
        """Each fact after layer ``l``: what it was, or what this layer's operations brought."""
        for c in self.enc.classes:
            acting = {name: v for (cc, name), v in self.effective.items() if cc == c}
            gathered = self.member_sets(l, c)
            chosen = {q: self.disj([m[q] for _, m in gathered]) for q in self.references(c)}
            self.update_all(c, l, acting, chosen)
            for key, info in self.enc.nodes.items():
                self.update_know(c, l, key, info, acting, chosen)
            self.update_positions(c, l, acting, chosen)

    def winners(self, acting: dict) -> list[tuple[z3.BoolRef, NodeInfo]]:
        """The retrievals acting at a class, each with its node (whose candidates may win)."""
        return [(v, self.enc.nodes[name.split(":", 1)[1]]) for name, v in acting.items()
                if name.startswith(("RETRIEVE", "KTH"))]

    def update_all(self, c: str, l: int, acting: dict, chosen: dict) -> None:
        s = self.enc.state
        gains = [s["all"][(c, l - 1)], acting["AGGREGATE"]]
        gains += [z3.And(v, self.common(i, l - 1, lambda k, ll: s["all"][(k, ll)])) for v, i in self.winners(acting)]
        gains += [z3.And(v, s["all"][(self.source_class[q], l - 1)]) for q, v in chosen.items()
                  if not isinstance(q, Offset)]
        gains += [z3.And(v, s["all"][(IN, l - 1)]) for q, v in chosen.items() if isinstance(q, Offset)]
        self.add(s["all"][(c, l)] == self.disj(gains))

    def update_know(self, c: str, l: int, key: str, info: NodeInfo, acting: dict, chosen: dict) -> None:
        s = self.enc.state
        if not self.admissible(info, c):
            self.add(z3.Not(s["know"][(c, l, key)]))
            return
        gains = [s["know"][(c, l - 1, key)], s["all"][(c, l)]]
        if info.kind == "aggregate":
            if not info.bound and "AVERAGE" in acting:
                gains.append(z3.And(acting["AVERAGE"], self.averaged(info, l)))
        else:
            op = acting.get(f"{'KTH' if info.kind == 'kth' else 'RETRIEVE'}:{key}")
            gains += [op] if op is not None else []
        if not info.bound:  # binding-free knowledge travels with any copy of a position's holdings
            gains += [z3.And(v, self.common(i, l - 1, lambda k, ll: s["know"][(k, ll, key)]))
                      for v, i in self.winners(acting)]
            gains += [z3.And(v, s["know"][(self.source_class[q], l - 1, key)]) for q, v in chosen.items()
                      if not isinstance(q, Offset)]
            gains += [z3.And(v, s["know"][(IN, l - 1, key)]) for q, v in chosen.items() if isinstance(q, Offset)]
        self.add(s["know"][(c, l, key)] == self.disj(gains))

    def update_positions(self, c: str, l: int, acting: dict, chosen: dict) -> None:
        s = self.enc.state
        for q in self.enc.fixed:
            gains = [s["xfix"][(c, l - 1, q)], s["all"][(c, l)], chosen.get(q, self.false())]
            gains += [z3.And(v, self.common(i, l - 1, lambda k, ll, q=q: s["xfix"][(k, ll, q)]))
                      for v, i in self.winners(acting)]
            gains += [z3.And(v, s["xfix"][(self.source_class[p], l - 1, q)]) for p, v in chosen.items()
                      if not isinstance(p, Offset)]
            self.add(s["xfix"][(c, l, q)] == self.disj(gains))
        if c != OUT:
            for k in self.enc.offsets:
                self.add(s["xoff"][(c, l, k)] == z3.Or(s["xoff"][(c, l - 1, k)], s["all"][(c, l)], chosen[Offset(k)]))

    # ---- sizes, the goal, the costs -------------------------------------------------------------------
    def sizes(self) -> None:
        """``size[c,l]``: ``|I(c, l)|`` as ``program.set_sizes`` counts it (an upper bound: each gain in full,
        a retrieval gaining the largest input class), and ``whole[c,l]``: that count is ``T``. Only encodings
        with specific-position heads need them, whose cost is the decoding of what they gather."""
        enc, ctx = self.enc, self.ctx
        size = {(c, 0): z3.IntVal(0 if c == OUT else 1, ctx) for c in enc.classes}
        whole = {(c, 0): self.false() for c in enc.classes}
        for l in range(1, enc.arch.layers + 1):
            widest = size[(enc.inputs[0], l - 1)]
            for k in enc.inputs[1:]:
                widest = z3.If(size[(k, l - 1)] > widest, size[(k, l - 1)], widest)
            any_whole = self.disj([whole[(k, l - 1)] for k in enc.inputs])
            for c in enc.classes:
                gains, wholes = [], [self.acts(l, c, "AGGREGATE")]
                for name in sorted({n for (ll, cc, n) in [*enc.ops, *enc.kept] if ll == l and cc == c}):
                    if name.startswith(("RETRIEVE", "KTH")):
                        gains.append(z3.If(self.acts(l, c, name), widest, z3.IntVal(0, ctx)))
                        wholes.append(z3.And(self.acts(l, c, name), any_whole))
                for name, members in self.member_sets(l, c):
                    gathered = total((z3.If(m, size[(self.source_class.get(q, IN), l - 1)], z3.IntVal(0, ctx))
                                      for q, m in members.items()), ctx)
                    everything = self.disj([z3.And(m, whole[(self.source_class.get(q, IN), l - 1)])
                                            for q, m in members.items()])
                    gains.append(gathered)
                    wholes.append(everything)
                    if name is not None:  # charged where the head is the class's own (a kept head: at the inputs)
                        enc.gathers.append((enc.ops[(l, c, name)], gathered, everything))
                size[(c, l)], whole[(c, l)] = z3.Int(f"size:{c}:{l}", ctx), self.bool(f"whole:{c}:{l}")
                self.add(size[(c, l)] == total([size[(c, l - 1)]] + gains, ctx))
                self.add(whole[(c, l)] == self.disj([whole[(c, l - 1)]] + wholes))

    def acts(self, l: int, c: str, name: str) -> z3.BoolRef:
        own, kept = self.enc.ops.get((l, c, name)), self.enc.kept.get((l, c, name))
        return self.disj([v for v in (own, kept) if v is not None])

    def goal(self) -> None:
        """After the last layer the output token computes the target from what it holds."""
        enc, L, s = self.enc, self.enc.arch.layers, self.enc.state
        tree = comparison_tree(enc.target)
        reads = _reads(tree, [(1, tree.graph["output"])], {}, lambda n: n)
        reachable = z3.Or(s["all"][(OUT, L)], self.conj([self.holds(OUT, L, nd) for nd in reads.either]))
        if needs_positional(enc.target):  # without positions even a token holding everything cannot tell them apart
            reachable = z3.And(reachable, self.positional_ok)
        self.track("goal", reachable)

    def costs(self) -> None:
        """Cost levels: every operation implies that its level (at the layer's head count) is allowed.

        A specific-position head costs the decoding of what it gathers: of a whole sequence, the global
        aggregation's level; of a bounded set, a cost that grows with the set. Then one integer
        ``gather_cap`` bounds every gathered size, and excluding a level excludes the sizes that cost as
        much: at the cheapest allowed prefix of levels the solver then lowers the cap (``solver.py``), which
        makes the exponent exact. With a width that grows with ``T`` every bounded set costs alike."""
        enc, arch, law, seq_len = self.enc, self.enc.arch, self.law, self.seq_len
        candidates = {e for by_heads in enc.op_cost.values() for e in by_heads.values()}
        everything = cost.decode(T, arch.input_dim, arch.width, law)
        width = cost.at(arch.width, seq_len)
        by_size = not width.has(T)
        bounded_gather = cost.decode(1, arch.input_dim, arch.width, law)
        if enc.gathers:
            candidates |= {everything} | (set() if by_size else {bounded_gather})
        key = (lambda e: cost.asymptotic_key(e)) if seq_len is None else (lambda e: (float(cost.at(e, seq_len)), 0.0))
        enc.levels = sorted(candidates, key=key)
        enc.level_vars = [self.bool(f"level:{i}") for i in range(len(enc.levels))]
        level_of = {e: i for i, e in enumerate(enc.levels)}
        for op, by_heads in enc.op_cost.items():
            for h, e in by_heads.items():
                self.add(z3.Implies(z3.And(enc.ops[op], enc.heads[(op[0], h)]), enc.level_vars[level_of[e]]))
        for acts, gathered, whole in enc.gathers:
            self.add(z3.Implies(z3.And(acts, whole), enc.level_vars[level_of[everything]]))
            if not by_size:
                self.add(z3.Implies(z3.And(acts, z3.Not(whole)), enc.level_vars[level_of[bounded_gather]]))
        if enc.gathers and by_size:
            self.gather_levels(enc, width, level_of)

    def gather_levels(self, enc: Encoding, width, level_of) -> None:
        """Tie the gathered sizes to the levels through one cap (``costs``)."""
        cap = enc.gather_cap = z3.Int("gather:cap", self.ctx)
        for acts, gathered, whole in enc.gathers:
            self.add(z3.Implies(z3.And(acts, z3.Not(whole)), gathered <= cap))

        def limit(value) -> sympy.Expr:  # decode(n) <= value  <=>  n <= limit(value), for value >= 0
            return (value + 1 if cost.DecodeLaw(self.law) is cost.DecodeLaw.SEED else value) * width / enc.arch.input_dim

        enc.gather_floor = int(sympy.floor(limit(0)))
        for var, level in zip(enc.level_vars, enc.levels):
            value = cost.at(level, self.seq_len)
            if value.has(T):  # grows with T: above every bounded set
                enc.gather_limits.append(None)
                continue
            enc.gather_limits.append(int(sympy.floor(limit(value))))
            self.add(z3.Implies(z3.Not(var), cap < int(sympy.ceiling(limit(value)))))


# ---- reading a program back ---------------------------------------------------------------------------
def _op(enc: Encoding, model, l: int, c: str, name: str) -> Op:
    if name == "AGGREGATE":
        return Op(Mode.AGGREGATE)
    if name == "AVERAGE":
        return Op(Mode.AVERAGE)
    if name.startswith("POSITIONS"):
        chosen = tuple(q for q, v in enc.sources[(l, c, name)].items()
                       if z3.is_true(model.eval(v, model_completion=True)))
        return Op(Mode.POSITIONS, positions=chosen)
    mode_name, key = name.split(":", 1)
    return Op(Mode[mode_name], node=enc.nodes[key].node)


def extract(enc: Encoding, model: z3.ModelRef, heads: tuple[int, ...]) -> Program:
    """The witness program of a model asked with ``heads`` heads per layer: head numbers assigned in a fixed
    order within each class; an anchor overrides the heads whose input operation it does not keep (with its
    own operation, or idle)."""
    def true(var) -> bool:
        return z3.is_true(model.eval(var, model_completion=True))

    def used(l: int, c: str) -> list[str]:
        return sorted(name for (ll, cc, name), var in enc.ops.items() if ll == l and cc == c and true(var))

    actions = []
    for l in range(1, enc.arch.layers + 1):
        heads_of_input = {}
        for c, where in ((IN, "input"), (OUT, "output")):
            for head, name in enumerate(used(l, c), start=1):
                actions.append(Action(l, head, where, _op(enc, model, l, c, name)))
                if c == IN:
                    heads_of_input[name] = head
        for c, position in enc.anchors.items():
            kept = {name for name in heads_of_input if true(enc.kept[(l, c, name)])}
            free = [heads_of_input[n] for n in sorted(heads_of_input) if n not in kept]
            free += list(range(len(heads_of_input) + 1, heads[l - 1] + 1))
            own = used(l, c)
            for head, name in zip(free, own):
                actions.append(Action(l, head, position, _op(enc, model, l, c, name)))
            for head in free[len(own):]:
                if head <= len(heads_of_input):  # a dropped input operation: this position stays idle
                    actions.append(Action(l, head, position, Op(Mode.IDLE)))
    order = []
    for gid, per_order in enc.order_vars.items():
        for o, v in per_order.items():
            if true(v) and len(o) > 1:
                order.append((gid, o))
    return Program(tuple(actions), tuple(order), enc.arch.layers)
