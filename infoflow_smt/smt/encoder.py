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
The number of layers and of heads in each layer are chosen by assumption literals, so one encoding serves
every architecture up to the one it was built for (a sweep asks one solver many questions), and ``grow``
adds layers to it in place (a sweep walks from few layers to many). Each operation
carries a cost level, also chosen by assumptions, so that an unsat core names the tracked constraints that
clash.

The constraints are written as SMT-LIB text and parsed by z3 in one call: building them with z3's Python
objects costs a hundred times more than solving them. A term that many constraints use (the widest input
class's size, what a class gathers from a source, what every candidate knows or must hold, whether some
retrieval with given candidates acts, an anchor's acting head, the number of heads acting) is a constant of
its own, defined once: copied into each use, the text would grow exponentially with the anchors. The text
is quadratic in the selections (``k`` anchors, so ``k + 2`` classes, each with an operation per selection and a
source per fixed position) but for one cubic family with a small factor: what a class's ``k`` node facts
gain from the ``k`` fixed positions it may gather, written out term by term because z3 solves the bit-mask
spelling (``bvand``) several times slower.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import sympy
import z3

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.rank import score_rank
from infoflow_smt.lang.realization import Realization
from infoflow_smt.lang.trees import (
    GroupRef,
    NodeRef,
    comparison_tree,
    needs_positional,
    outermost,
    position_reads,
    useful_orders,
    walk,
)
from infoflow_smt.lang.trees import free_variables as tree_free_variables
from infoflow_smt.model import cost, readout, vocabulary
from infoflow_smt.model.program import Action, Mode, Offset, Op, Program
from infoflow_smt.model.vocabulary import GOAL, Constraint, Family, PositionClass
from infoflow_smt.smt import symmetry
from infoflow_smt.smt.nodes import (
    GLOBAL_AGGREGATION,
    GLOBAL_AVERAGING,
    PREFIX_COLLECTION,
    Hosts,
    Need,
    NodeInfo,
    OperationName,
    Reader,
    Reads,
)
from infoflow_smt.symbols import T

IN, OUT = vocabulary.INPUT, vocabulary.OUTPUT
LAST_CLASS = vocabulary.LAST   # position T as a class of its own: the answer read there with positional encoding
TRUE, FALSE = "true", "false"
_FAR = 10_000  # a sequence length at which a fixed anchor's membership of a domain is settled ...
_PERIOD = 4    # ... up to the subsets' period (Realization.subset_mask), for a position counted from the end
_LINES_PER_PARSE = 4_000  # lines z3 parses between two checks of the deadline (a tenth of a second or so)


@dataclass
class Encoding:
    """The constraints of one family of questions and the names the solver reads back.

    Every variable is named by a string; ``var(name)`` is its z3 expression in this encoding's context."""

    target: object
    arch: object                 # the largest architecture the encoding serves
    ctx: z3.Context
    solver: z3.Solver
    nodes: dict[str, NodeInfo]
    outer: dict[str, dict[tuple[str, ...], str]]            # group -> order -> key of its outermost node
    hosts: Hosts = field(default_factory=Hosts)            # which nodes are one another elsewhere
    text: str = ""                                         # the SMT-LIB declarations and assertions
    classes: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    ops: dict[tuple[int, str, OperationName], str] = field(default_factory=dict)  # (layer, class, op) -> name
    op_cost: dict[tuple[int, str, OperationName], dict[int, sympy.Expr]] = field(default_factory=dict)  # by heads
    order_vars: dict[str, dict[tuple[str, ...], str]] = field(default_factory=dict)
    # (layer, class, the j-th specific-position head) -> source -> chosen: that head's sources
    sources: dict[tuple[int, str, OperationName], dict[object, str]] = field(default_factory=dict)
    # every specific-position head a class runs itself: (layer, acts, size gathered, whole sequence)
    gathers: list[tuple[int, str, str, str]] = field(default_factory=list)
    gather_cap: str | None = None          # bounds every gathered size (times its layer's heads: the size at width E)
    gather_limits: list[int | None] = field(default_factory=list)  # per level: the largest size costing
                                                                   # no more (None: grows with T)
    gather_floor: int = 0  # the largest size whose decoding costs nothing (exponents are clamped at 0)
    tracked: dict[Constraint, str] = field(default_factory=dict)  # constraint -> assumption literal
    heads: dict[tuple[int, int], str] = field(default_factory=dict)   # (layer, h) -> "h heads in layer"
    depth: dict[int, str] = field(default_factory=dict)               # L -> "the program has L layers"
    facts: dict[int, list[str]] = field(default_factory=dict)         # layer -> every fact after it
    widest: int = 0   # the most distinct operations one class can run in one layer: more heads add nothing
    levels: list[sympy.Expr] = field(default_factory=list)
    level_vars: list[str] = field(default_factory=list)
    fixed: tuple = ()
    offsets: tuple = ()
    anchors: dict[str, ex.FixedIndex] = field(default_factory=dict)   # class name -> its fixed position
    kept: dict[tuple[int, str, OperationName], str] = field(default_factory=dict)  # anchor keeps an input op
    _vars: dict[str, z3.ExprRef] = field(default_factory=dict, repr=False)
    _sorts: dict[str, str] = field(default_factory=dict, repr=False)
    _acting: dict[int, tuple] = field(default_factory=dict, repr=False)
    _weights: dict[tuple, z3.BitVecRef] = field(default_factory=dict, repr=False)
    _excluded: list | None = field(default=None, repr=False)
    _builder: object = field(default=None, repr=False)   # what wrote it: ``grow`` adds layers with it

    def var(self, name: str) -> z3.ExprRef:
        """The z3 constant ``name`` (declared by the encoding)."""
        found = self._vars.get(name)
        if found is None:
            found = self._vars[name] = (z3.Int if self._sorts[name] == "Int" else z3.Bool)(name, self.ctx)
        return found

    def at_most_operations(self, layers: int, bound: int) -> z3.BoolRef:
        """At most ``bound`` heads act in layers ``1..layers`` (built through z3's C API: this is asked
        again and again while a witness is minimized)."""
        if layers not in self._acting:
            names = [n for (layer, _, _), n in [*self.ops.items(), *self.kept.items()] if layer <= layers]
            literals = [self.var(n) for n in names]
            array = (z3.Ast * len(literals))(*(x.as_ast() for x in literals))
            self._acting[layers] = (literals, array)
        literals, array = self._acting[layers]
        return z3.BoolRef(z3.Z3_mk_atmost(self.ctx.ref(), len(literals), array, bound), self.ctx)

    def excluded_levels(self) -> list[z3.BoolRef]:
        """Per level, the assumption that excludes it."""
        if self._excluded is None:
            self._excluded = [z3.Not(self.var(v)) for v in self.level_vars]
        return self._excluded

    def usable_levels(self, heads: tuple[int, ...]) -> set[int]:
        """The levels (indices into ``levels``) that allowing can change an answer about ``heads``: every
        bounded one (excluding one also caps the gathered sizes, ``_Builder.gather_levels``) and those an
        operation in layers ``1..len(heads)`` costs at its layer's head count. Another level is implied
        only by an operation at a head count the question does not assume (``level_implications``), so a
        question that allows it has the models of one that does not."""
        if self.gathers and self.gather_cap is None:  # bounded gathers that cost a level of their own
            return set(range(len(self.levels)))
        costs = {by_heads[heads[layer - 1]] for (layer, _, _), by_heads in self.op_cost.items()
                 if layer <= len(heads) and heads[layer - 1] in by_heads}
        return {i for i, level in enumerate(self.levels) if level in costs or cost.is_bounded(level)}

    def acting(self, model, layers: int) -> int:
        """How many heads act in layers ``1..layers`` in ``model``."""
        names = tuple(n for (layer, _, _), n in [*self.ops.items(), *self.kept.items()] if layer <= layers)
        return sum(self.values(model, names).values())

    def values(self, model, names: tuple[str, ...]) -> dict[str, bool]:
        """The truth of many Boolean constants in ``model``, read with one evaluation: one bit each of a
        bit-vector (one call into z3 instead of one per constant; a sum of powers of two, the other way to
        pack them, writes numerals as long as the list, and its text grows with the square of it)."""
        if names not in self._weights:  # parsed, not built: z3's Python objects cost a call per term
            # the first name the second-lowest bit; a constant lowest bit, as concat takes two or more
            terms = " ".join(f"(ite |{n}| #b1 #b0)" for n in reversed(names))
            declared = "".join(f"(declare-const |{n}| Bool)" for n in names)
            parsed = z3.parse_smt2_string(f"{declared}(declare-const |bits| (_ BitVec {len(names) + 1}))"
                                          f"(assert (= |bits| (concat {terms} #b0)))", ctx=self.ctx)
            self._weights[names] = parsed[0].arg(1)
        bits = model.eval(self._weights[names], model_completion=True).as_long() >> 1
        lowest_first = format(bits, f"0{len(names)}b")[::-1]
        return {n: bit == "1" for n, bit in zip(names, lowest_first)}

    def any_of(self, literals: list[z3.BoolRef]) -> z3.BoolRef:
        """The disjunction of ``literals``, built through z3's C API (``z3.Or`` checks and converts each
        argument in Python: most of the time of ``maximal_facts`` on a large encoding)."""
        array = (z3.Ast * len(literals))(*(x.as_ast() for x in literals))
        return z3.BoolRef(z3.Z3_mk_or(self.ctx.ref(), len(literals), array), self.ctx)

    def assumptions(self, heads: tuple[int, ...], names: list[str] | None = None) -> list[z3.ExprRef]:
        """The literals of a question about ``heads`` (one entry per layer): the tracked constraints, the
        number of layers and each layer's head count."""
        literals = list(self.tracked.values()) if names is None else list(names)
        literals += [self.depth[len(heads)]] + [self.heads[(l, h)] for l, h in enumerate(heads, start=1)]
        return [self.var(n) for n in literals]


# ---- reading what a score needs ---------------------------------------------------------------------
def _reads(tree, terms, players: dict[str, Reader], key_of) -> Reads:
    """Split the reads of ``terms`` by who makes them: ``players`` says which side plays each variable."""
    found: dict[Reader, list[Need]] = {reader: [] for reader in Reader}

    def side(variables) -> Reader:
        sides = {players[v] for v in variables}
        return Reader.EITHER if not sides else (sides.pop() if len(sides) == 1 else Reader.BOTH)

    for _, term in terms:
        for leaf in walk(term):
            ref = leaf.index if isinstance(leaf, ex.Content) else leaf
            if isinstance(ref, ex.OffsetIndex):
                need, where = Need("offset", ref.offset), side({ref.name})
            elif isinstance(ref, ex.FixedIndex):
                need, where = Need("fixed", ref), Reader.EITHER
            elif isinstance(ref, NodeRef):
                need, where = Need("node", key_of(ref.node)), side(tree.nodes[ref.node]["bound"])
            elif isinstance(ref, GroupRef):
                need, where = Need("group", ref.group), side(tree.nodes[outermost(tree, ref.group)]["bound"])
            else:
                continue
            if need not in found[where]:
                found[where].append(need)
    return Reads(tuple(found[Reader.SELECTOR]), tuple(found[Reader.CANDIDATE]), tuple(found[Reader.EITHER]),
                 bool(found[Reader.BOTH]))


def goal_needs(target) -> tuple[Need, ...]:
    """What the answering position must hold after the last layer to compute ``target``: the output token
    (it plays no variable: every read is the selector's or every candidate's alike), or, for a target with
    an answer at every position, each input position, which plays the answering position ``o`` (reads tied
    to ``o`` are its own: selections made for it, offsets from it)."""
    tree = comparison_tree(target)
    reads = _reads(tree, [(1, tree.graph["output"])], {ex.ANSWER: Reader.SELECTOR}, lambda n: n)
    return reads.selector + reads.either


def answering_classes(enc: Encoding) -> list[str]:
    """The classes at which the goal is stated: the output token; for a target with an answer at every
    position, every input class (the anchors are input positions too, and must answer for themselves); read
    at the last position with positional encoding, position ``T``'s class."""
    if enc.target.per_position:
        return [c for c in enc.inputs if c not in enc.anchors or _asked(enc.target, enc.anchors[c])]
    return [LAST_CLASS] if LAST_CLASS in enc.anchors and readout.reads_at_last(enc.target, enc.arch) else [OUT]


def _asked(target, anchor: ex.FixedIndex) -> bool:
    """Whether the fixed position ``anchor`` is asked for its own answer (``Target.answered``): position 1 is
    not, for ``max(... for t in range(1, o))``, whose range is empty there; it answers nothing, and no goal is
    stated at its class. Read at a length that leaves the anchor well inside the sequence."""
    length = 2 * anchor.position + target.shortest_length + 2
    return bool(target.answered(length)[anchor.resolve(length) - 1])


def _key(group: str, order: tuple[str, ...], var: str) -> str:
    return f"{group}.{'-'.join(order) if len(order) > 1 else ''}.{var}"


def _node_infos(target, rank_dim: int | None = None
                ) -> tuple[dict[str, NodeInfo], dict[str, dict[tuple[str, ...], str]], Hosts]:
    """The nodes of every useful order of every group, and of the hosted groups (``trees.py``); of orders
    whose trees read alike (the same nodes, reads, bindings and, under the rank rule, score ranks for tokens
    of dimension ``rank_dim``, up to the names of the variables), one is kept: they are the same question.
    With them, how the nodes kept are one another elsewhere (``Hosts``)."""
    infos: dict[str, NodeInfo] = {}
    outer: dict[str, dict[tuple[str, ...], str]] = {}
    useful = useful_orders(target)
    # a group's nodes depend on its own order alone: one tree serves the r-th order of every group at once
    # (one tree per group and order made the encoding of D groups cost D trees of D groups each)
    trees = [comparison_tree(target, {gid: orders[r] for gid, orders in useful.items() if len(orders) > r})
             for r in range(max((len(o) for o in useful.values()), default=0))]
    for gid, orders in useful.items():
        outer[gid], seen = {}, set()
        for order, tree in zip(orders, trees):
            here = {key: info for key, info in _group_infos(tree, gid, order, rank_dim)}
            top = _key(gid, order, order[0])
            signature = _signature(here, top)
            if signature in seen:
                continue
            seen.add(signature)
            infos.update(here)
            outer[gid][order] = top
    for gid in sorted(trees[0].graph["hosted"] if trees else (), key=lambda g: int(g[1:])):
        order = trees[0].graph["order"][gid]
        infos.update(_group_infos(trees[0], gid, order, rank_dim))
        outer[gid] = {order: _key(gid, order, order[0])}
    return infos, outer, _hosts(trees, infos)


def _group_infos(tree, gid: str, order: tuple[str, ...], rank_dim: int | None):
    """The ``NodeInfo`` of each node of group ``gid`` under ``order`` in ``tree``, by key."""
    for var in order:
        data = tree.nodes[f"{gid}.{var}"]
        players = {var: Reader.CANDIDATE} | {b: Reader.SELECTOR for b in data["bound"]}
        reads = _reads(tree, data["terms"], players,
                       lambda n, gid=gid, order=order: _key(gid, order, n.split(".", 1)[1]))
        score_free = tree_free_variables(data["score"], tree.graph["groups"])
        key = _key(gid, order, var)
        selects = rank_dim and data["kind"] != "aggregate"
        rank = score_rank(tree, f"{gid}.{var}", rank_dim) if selects else None
        yield key, NodeInfo(key, f"{gid}.{var}", gid, order, data["kind"], data["bound"], data["k"],
                            data["domain"], reads, constant=reads.empty and not score_free, rank=rank,
                            sense=data["sense"])


def _hosts(trees, infos: dict[str, NodeInfo]) -> Hosts:
    """Each tree's hostings (``trees.Hosting``) as relations between the node keys kept, the tree's orders
    naming its nodes."""
    same, copies, prefixes, moved, fixed = set(), set(), set(), set(), set()
    for tree in trees:
        for node, (form, m) in tree.graph["moved"].items():
            n, w = _kept_key(tree, node, infos), _kept_key(tree, form, infos)
            if n is not None and w is not None:
                moved.add((n, w, m))
        for node, prefix in tree.graph["prefixes"].items():
            pair = (_kept_key(tree, node, infos), _kept_key(tree, prefix, infos))
            if None not in pair:
                prefixes.add(pair)
        for node, hostings in tree.graph["hostings"].items():
            n = _kept_key(tree, node, infos)
            for h in hostings:
                a, m = _kept_key(tree, h.node, infos), _kept_key(tree, h.winner, infos) if h.winner else None
                if n is None or a is None:
                    continue
                if h.fixed is not None:
                    fixed.add((n, a, h.fixed))
                elif h.winner is None:
                    same.add(tuple(sorted((n, a))))
                elif m is not None:
                    copies.add((m, a, n))
    return Hosts(tuple(sorted(same)), tuple(sorted(copies)), tuple(sorted(prefixes)), tuple(sorted(moved)),
                 tuple(sorted(fixed, key=str)))


def _kept_key(tree, node: str, infos: dict[str, NodeInfo]) -> str | None:
    """The key of ``tree``'s ``node`` under the tree's order, when the encoding keeps that order."""
    gid, var = node.split(".", 1)
    found = _key(gid, tree.graph["order"][gid], var)
    return found if found in infos else None


def _classes(pairs) -> dict[str, tuple[str, ...]]:
    """The classes of keys that ``pairs`` join (each pair one selection at each position), by member."""
    graph: dict[str, set[str]] = {}
    for a, b in pairs:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set()).add(a)
    found: dict[str, tuple[str, ...]] = {}
    for start in graph:
        if start in found:
            continue
        members, todo = set(), [start]
        while todo:
            k = todo.pop()
            if k not in members:
                members.add(k)
                todo += graph[k]
        for k in members:
            found[k] = tuple(sorted(members))
    return found


def _signature(infos: dict[str, NodeInfo], key: str) -> tuple:
    """A node's shape with the names of variables and nodes left out: kind, rank, domain, how many
    variables it binds, and what it reads (the nodes it reads by their own shapes)."""
    info = infos[key]

    def needs(found: tuple[Need, ...]) -> tuple:
        return tuple(sorted((_signature(infos, n.what) if n.kind == "node" else (n.kind, repr(n.what))
                             for n in found), key=repr))

    r = info.reads
    return (info.kind, info.k, repr(info.domain), len(info.bound), info.constant,
            needs(r.selector), needs(r.candidate), needs(r.either), r.both, info.rank)


# ---- SMT-LIB terms ----------------------------------------------------------------------------------------
# Formulas are SMT-LIB text; the constants TRUE and FALSE fold away where they appear (fewer, shorter lines).
def conj(items) -> str:
    items = [i for i in items if i != TRUE]
    if FALSE in items:
        return FALSE
    return TRUE if not items else items[0] if len(items) == 1 else f"(and {' '.join(items)})"


def disj(items) -> str:
    items = [i for i in items if i != FALSE]
    if TRUE in items:
        return TRUE
    return FALSE if not items else items[0] if len(items) == 1 else f"(or {' '.join(items)})"


def neg(a: str) -> str:
    return FALSE if a == TRUE else TRUE if a == FALSE else f"(not {a})"


def implies(a: str, b: str) -> str:
    if a == FALSE or b == TRUE:
        return TRUE
    return b if a == TRUE else f"(=> {a} {b})"


def smt_and(a: str, b: str) -> str:
    """The conjunction of two formulas."""
    return conj([a, b])


def smt_or(a: str, b: str) -> str:
    """The disjunction of two formulas."""
    return disj([a, b])


def total(terms) -> str:
    terms = list(terms)
    return "0" if not terms else terms[0] if len(terms) == 1 else f"(+ {' '.join(terms)})"


def at_most(literals, bound: int, portable: bool) -> str:
    """Standard SMT-LIB (a sum of 0/1 terms) when ``portable``; z3's cardinality constraint otherwise."""
    literals = [x for x in literals if x != FALSE]
    if len(literals) <= bound:
        return TRUE
    if portable:
        return f"(<= {total(f'(ite {x} 1 0)' for x in literals)} {bound})"
    return f"((_ at-most {bound}) {' '.join(literals)})"


def exactly_one(literals, portable: bool) -> str:
    literals = list(literals)
    if len(literals) == 1:
        return literals[0]
    if portable:
        return f"(= {total(f'(ite {x} 1 0)' for x in literals)} 1)"
    return f"((_ pbeq 1 {' '.join('1' for _ in literals)}) {' '.join(literals)})"


def quoted(name: str) -> str:
    """A declared name as an SMT-LIB symbol."""
    return f"|{name}|"


def _in_domain(q: ex.FixedIndex, domain: ex.Domain) -> bool:
    """Whether fixed position ``q`` is a candidate of ``domain`` at some large ``T`` (of a range bounded by a
    variable, ``range(1, s)``, at some binding of it): a program works at every ``T``, so there it must hold
    what the candidates' side reads. Near the start the answer is the same at every large ``T``; position
    ``T`` is in a subset at some lengths and not at others (``Realization.subset_mask``), so every residue
    of the subsets' period is asked."""
    envelope = ex.envelope(domain)
    return any(q.resolve(n) in Realization().domain_positions(envelope, n) for n in range(_FAR, _FAR + _PERIOD))


def anchor_positions(named: tuple[ex.FixedIndex, ...], free: int, masked: bool) -> list[ex.FixedIndex]:
    """The fixed positions that are classes of their own with positional encoding: every position the target
    names (it holds its own token from the start and may make the selections that read it: docs/model.md,
    "Fixed positions work for themselves"), and positions ``1..free``, one per group with a selection that
    binds no variable, which can work for the output token in earlier layers. Under a causal mask a position
    near the start sees too little to stand in for the others: only the named ones, which see what lies before them."""
    found = set(named) | (set() if masked else {ex.FixedIndex(q) for q in range(1, free + 1)})
    return sorted(found, key=lambda q: (q.from_end, q.position))




def _ref_name(q) -> str:
    """A source's part of an SMT name: ``off-1`` (an offset), ``p3`` (position 3), ``e0`` (position ``T - 0``)."""
    if isinstance(q, Offset):
        return f"off{q.offset}"
    return f"{'e' if q.from_end else 'p'}{q.position}"


# ---- the encoding -----------------------------------------------------------------------------------
def encode(target, arch, law: cost.DecodeLaw = cost.DecodeLaw.SEED, seq_len: int | None = None,
           anchors: bool = True, portable: bool = False, ctx: z3.Context | None = None,
           ordered: bool = True, deadline=None) -> Encoding:
    """Build the constraints for ``target`` on every architecture up to ``arch`` (as many layers, at most
    as many heads in each; the width, input dimension and positional encoding of ``arch``). Ask with
    ``Encoding.assumptions(heads)`` and the level literals.

    ``anchors=False`` leaves out the fixed positions that may override heads: a smaller encoding whose
    programs are programs of the full one (the solver tries it first and falls back when it says no).
    ``ctx``: the z3 context to build in (a new one by default; one caller at a time may use a context).
    ``ordered=False`` leaves interchangeable groups unordered (``symmetry.py``): the same answers, slower; for
    the tests that show it. ``deadline`` (a ``Deadline``): checked before each layer, raising ``OutOfTime``
    once it has passed."""
    return _Builder(target, arch, law, seq_len, anchors, portable, ctx, ordered).build(deadline)


def grow(enc: Encoding, arch, deadline=None) -> bool:
    """Extend ``enc`` in place to the larger ``arch`` (more layers, no more heads in the layers it has);
    False, leaving it unchanged, when it needs to be encoded afresh (``_Builder.grow``). Past ``deadline``
    ``OutOfTime`` is raised and ``enc`` is left half grown: drop it."""
    return enc._builder is not None and enc._builder.grow(enc, arch, deadline)


class _Builder:
    """One encoding, written by named constraint families in ``build`` (and more layers by ``grow``).

    Its tables hold SMT terms (quoted names, or ``TRUE``/``FALSE``/numerals), the encoding's tables bare
    names: ``Encoding.var`` reads them back."""

    def __init__(self, target, arch, law, seq_len, anchors, portable, ctx, ordered=True):
        infos, outer, hosts = _node_infos(target, arch.input_dim if arch.rank_aware else None)
        self.ctx = ctx or z3.Context()
        self.enc = Encoding(target, arch, self.ctx, z3.Solver(ctx=self.ctx), infos, outer, hosts)
        self.same = _classes(hosts.same)   # node key -> the keys of one selection at each position
        self.prefix_of = dict(hosts.prefixes)   # a selection -> its prefix form (a prefix collection brings it)
        self.here: dict = {}   # anchor -> node -> the names it has there (``Hosts.fixed``); set with the anchors
        self.everywhere = NodeInfo("", "", "", (), "top1", frozenset(), 1, ex.AllPositions(), Reads(), False)
        self.copies: dict[str, list[tuple[str, str, str]]] = {}   # node key -> the copies that bring it
        for triple in hosts.copies:
            self.copies.setdefault(triple[2], []).append(triple)
        self.law, self.seq_len, self.portable, self.ordered = law, seq_len, portable, ordered
        self.use_anchors = anchors
        self.pe = arch.positional
        self.mask = arch.causal  # input positions see themselves and the positions before them only
        # bounded gathers cost by their size unless the width grows with T (then so does every head's, E/h)
        self.by_size = not cost.at(arch.width, seq_len).has(T)
        self.lines: list[str] = []   # what is not yet given to the solver
        self.positional_ok = quoted(self.declare_bool("allow:positional"))
        self.causal_ok = quoted(self.declare_bool("allow:causal"))  # false under a mask (``initial_state``)
        self.fixed_sources, self.source_class = self.position_classes()
        self.candidate_classes: dict[ex.Domain, list[str]] = {}
        self.all: dict = {}   # the facts by (class, layer[, node or position]): ``state_variables``
        self.know: dict = {}
        self.xfix: dict = {}
        self.xoff: dict = {}
        # |I(c, l)| and whether it is the whole sequence (``sizes``), from the tokens as they come in
        self.size: dict[tuple[str, int], str] = {(c, 0): "0" if c == OUT else "1" for c in self.enc.classes}
        self.whole: dict[tuple[str, int], str] = {(c, 0): FALSE for c in self.enc.classes}
        self.effective: dict[tuple[int, str, OperationName], str] = {}  # (layer, class, op) -> it acts there
        self.pairs: list[tuple[tuple[str, ...], tuple[str, ...]]] = []   # neighbouring interchangeable groups
        self.ties: dict[str, str] = {}   # a pair's second group -> "still tied" after the last layer written
        self.anchor_ties: dict[PositionClass, str] = {}   # a twin anchor -> "still tied" (``ordered_anchors``)
        self.anchor_pairs: list[tuple[PositionClass, PositionClass]] | None = None   # ``twin_anchors``
        self.candidates_know: dict[tuple, str] = {}  # (domain, layer, node) -> every candidate knows it
        self.candidate_sets: dict[tuple[str, ...], int] = {}  # the classes of some domain's candidates -> a number
        self.deadline = None   # the question's, while building or growing: the builder outlives it
        self.by_layer: dict[int, tuple[dict, dict]] = {}  # a written layer's operations by class (``at_layer``)

    # ---- names and assertions ---------------------------------------------------------------------------
    def declare(self, name: str, sort: str) -> str:
        """Declare the constant ``name`` (once) and return it: ``quoted(name)`` is its SMT term."""
        if name not in self.enc._sorts:
            self.enc._sorts[name] = sort
            self.lines.append(f"(declare-const {quoted(name)} {sort})")
        return name

    def declare_bool(self, name: str) -> str:
        return self.declare(name, "Bool")

    def declare_int(self, name: str) -> str:
        return self.declare(name, "Int")

    def named_bool(self, name: str, formula: str) -> str:
        """``formula`` as a term: itself when it is a constant or a name, else a Boolean constant ``name``
        defined by it (once: a formula used in many places is written once, not copied into each)."""
        if not formula.startswith("("):
            return formula
        if name not in self.enc._sorts:
            self.declare_bool(name)
            self.add(f"(= {quoted(name)} {formula})")
        return quoted(name)

    def add(self, formula: str) -> None:
        if formula != TRUE:
            self.lines.append(f"(assert {formula})")

    def track(self, constraint: Constraint, formula: str) -> None:
        lit = self.enc.tracked.setdefault(constraint, self.declare_bool(f"track:{constraint}"))
        self.add(implies(quoted(lit), formula))

    # ---- the families, in order -------------------------------------------------------------------------
    def build(self, deadline=None) -> Encoding:
        self.deadline = deadline
        if self.ordered:
            self.pairs = symmetry.adjacent_pairs(self.enc.nodes, self.enc.outer, goal_needs(self.enc.target),
                                                 self.enc.hosts.groups(self.enc.nodes))
        self.orders()
        self.state_variables(range(self.enc.arch.layers + 1))
        self.initial_state()
        self.add_layers(range(1, self.enc.arch.layers + 1))
        if needs_positional(self.enc.target, self.mask):  # else no program at any cost
            self.track(GOAL, self.positional_ok)
        self.costs()
        self.enc.text = "\n".join(self.lines)
        self.hand_over(self.lines)
        enc = self.enc
        enc._builder, self.lines = self, []  # kept to grow the encoding; its lines are in the text
        # the encoding holds its builder and not the other way round: with no cycle between them, an encoding
        # (its z3 context, tens of MB) is freed as its last user drops it, not at the next garbage collection
        del self.enc
        self.deadline = None
        return enc

    def grow(self, enc: Encoding, arch, deadline=None) -> bool:
        """Add the layers of ``arch`` beyond those of ``enc`` (the encoding this builder wrote) to its solver
        (what a fresh encoding of ``arch`` asserts, the same lines: a sweep's walk adds a layer at a time, and
        its questions keep what z3 has learnt). False, with the encoding unchanged, when ``arch`` needs more:
        more heads in a layer the encoding has, anchors (they appear at two layers), or a cost level it lacks;
        then encode afresh."""
        self.enc = enc   # for this call only (``build``)
        try:
            return self._grow(arch, deadline)
        finally:
            del self.enc

    def _grow(self, arch, deadline) -> bool:
        enc, old = self.enc, self.enc.arch
        grows_layers = arch.layers > old.layers and all(a <= b for a, b in zip(arch.heads, old.heads))
        if not grows_layers or self.portable or (self.use_anchors and self.pe and old.layers < 2):
            return False
        if not self.needed_levels(arch) <= set(enc.levels):
            return False
        gathers, ops = len(enc.gathers), set(enc.ops)
        self.lines, enc.arch, self.deadline = [], arch, deadline
        layers = range(old.layers + 1, arch.layers + 1)
        self.state_variables(layers)
        try:  # cut short, the encoding is half grown: the solver drops it
            self.add_layers(layers)
            self.level_implications([op for op in enc.op_cost if op not in ops], enc.gathers[gathers:])
            text, lines, self.lines = "\n".join(self.lines), self.lines, []
            self.hand_over(lines)  # the solver's parser knows the names it declared before
        finally:
            self.deadline = None
        enc.text += "\n" + text
        return True

    def add_layers(self, layers: range) -> None:
        """The families of each of ``layers`` (their facts declared): its operations, what each class holds
        after it, the sizes of what it holds, and the goal at that depth."""
        for layer in layers:
            self.check_deadline(f"encoding layer {layer}")
            self.operations(layer)
            self.update_rules(layer)
            self.ordered_groups(layer)
            self.ordered_anchors(layer)
        if self.enc.sources:
            self.check_deadline("encoding the sizes")
            self.sizes(layers)
        self.goal(layers)

    def hand_over(self, lines: list[str]) -> None:
        """Give ``lines`` to the solver, a few thousand at a time with the deadline checked between them: z3
        parses a large encoding for seconds, and cannot be stopped while it does."""
        for start in range(0, len(lines), _LINES_PER_PARSE):
            self.check_deadline("encoding (handing it to z3)")
            self.enc.solver.from_string("\n".join(lines[start:start + _LINES_PER_PARSE]))

    def check_deadline(self, what: str) -> None:
        if self.deadline is not None:
            self.deadline.check(what)

    def orders(self) -> None:
        """Exactly one variable order (one elimination tree) per group."""
        enc = self.enc
        for gid, per_order in enc.outer.items():
            enc.order_vars[gid] = {o: self.declare_bool(f"ord:{gid}:{','.join(o)}") for o in per_order}
            self.add(exactly_one([quoted(v) for v in enc.order_vars[gid].values()], self.portable))

    def position_classes(self) -> tuple[list[ex.FixedIndex], dict[ex.FixedIndex, str]]:
        """``in``, the anchors (positional encoding, two layers or more: ``anchor_positions``) and ``out``;
        the fixed positions and offsets a specific-position head may gather. Returns the fixed positions a
        head may gather (the anchors too), each with the class that holds it."""
        enc = self.enc
        enc.fixed, enc.offsets = position_reads(comparison_tree(enc.target))
        # a moved selection's candidates gather the token the target reads, m before their own
        enc.offsets = tuple(sorted(set(enc.offsets) | {-m for _, _, m in enc.hosts.moved}))
        if self.use_anchors and self.pe and enc.arch.layers >= 2:
            free = len({i.group for i in enc.nodes.values() if not i.bound and i.kind in ("top1", "kth")})
            enc.anchors = {PositionClass.fixed(q): q for q in anchor_positions(enc.fixed, free, self.mask)}
        if self.pe and readout.reads_at_last(enc.target, enc.arch):  # in every encoding: the goal is stated there
            enc.anchors[LAST_CLASS] = ex.FixedIndex(0, True)
        enc.inputs = [IN] + list(enc.anchors)
        enc.classes = enc.inputs + [OUT]
        for n, a, q in enc.hosts.fixed:
            for c, position in enc.anchors.items():
                if position == q:
                    names = self.here.setdefault(c, {})
                    names.setdefault(n, set()).add(a)
                    names.setdefault(a, set()).add(n)
        fixed_sources = sorted(set(enc.fixed) | set(enc.anchors.values()), key=str)
        return fixed_sources, {q: next((a for a, p in enc.anchors.items() if p == q), IN) for q in fixed_sources}

    def sees(self, c: str, position) -> bool:
        """Whether class ``c`` sees ``position`` (a ``FixedIndex``) under the causal mask: the output token sees
        every position, an anchor those at or before its own, a generic input position only position 1 for sure."""
        if not self.mask or c == OUT:
            return True
        q = self.enc.anchors.get(c)
        at = q.resolve(_FAR) if q is not None else 1
        return position.resolve(_FAR) <= at

    def sees_domain(self, c: str, domain: ex.Domain) -> bool:
        """Whether anchor ``c`` sees every position of ``domain`` at every binding (its envelope) under the mask."""
        q = self.enc.anchors.get(c)
        if q is None:
            return False
        positions = Realization().domain_positions(ex.envelope(domain), _FAR)
        return len(positions) == 0 or int(max(positions)) <= q.resolve(_FAR)

    def neighbour(self, c: str, k: int) -> list[str]:
        """The class of the position at offset ``k`` from class ``c`` (one, or none outside the sequence): an
        anchor's neighbour is the anchor at that position, if any, else a generic input position; outside
        the sequence there is only padding, which brings nothing. ``in`` stands for positions away from the
        anchors, whose neighbours are generic too."""
        q = self.enc.anchors.get(c)
        if q is None:
            return [IN]
        p = q.resolve(_FAR) + k
        if not 1 <= p <= _FAR:
            return []
        at = ex.FixedIndex(_FAR - p, True) if q.from_end else ex.FixedIndex(p)
        return [next((a for a, r in self.enc.anchors.items() if r == at), IN)]

    def state_variables(self, layers: range) -> None:
        """The facts after each of ``layers`` (0: the tokens as they come in)."""
        enc = self.enc
        names = (
            {(c, l): f"all:{c}:{l}" for c in enc.classes for l in layers},
            {(c, l, n): f"know:{c}:{l}:{n}" for c in enc.classes for l in layers for n in enc.nodes},
            {(c, l, q): f"xfix:{c}:{l}:{q}" for c in enc.classes for l in layers for q in enc.fixed},
            {(c, l, k): f"xoff:{c}:{l}:{k}" for c in enc.inputs for l in layers for k in enc.offsets})
        for terms, table in zip((self.all, self.know, self.xfix, self.xoff), names):
            for key, name in table.items():
                terms[key] = quoted(self.declare_bool(name))
                enc.facts.setdefault(key[1], []).append(name)

    def initial_state(self) -> None:
        """Layer 0: an input position holds its own token (an anchor is its fixed position), the output
        token nothing; a node whose score reads nothing (a count, a choice among ties) is known to all."""
        enc = self.enc
        initial = [neg(self.all[(c, 0)]) for c in enc.classes]
        initial += [v if self.admissible(enc.nodes[n], c) and enc.nodes[n].constant else neg(v)
                    for (c, l, n), v in self.know.items() if l == 0]
        initial += [v if c in enc.anchors and enc.anchors[c] == q else neg(v)
                    for (c, l, q), v in self.xfix.items() if l == 0]
        # an offset outside the sequence reads padding, which every position has
        initial += [neg(v) if self.neighbour(c, k) else v for (c, l, k), v in self.xoff.items() if l == 0]
        self.track(vocabulary.INITIAL, conj(initial))
        if not self.pe:  # an assumption, so that an unsat core can say when positions were the obstacle
            denied = self.enc.tracked[vocabulary.POSITIONAL] = self.declare_bool("deny:positional")
            self.add(implies(quoted(denied), neg(self.positional_ok)))
        if self.mask:  # likewise for what the causal mask hides from the input positions
            denied = self.enc.tracked[vocabulary.CAUSAL] = self.declare_bool("deny:causal")
            self.add(implies(quoted(denied), neg(self.causal_ok)))

    # ---- what a class holds ---------------------------------------------------------------------------
    def admissible(self, info: NodeInfo, c: str) -> bool:
        """Whether class ``c`` can know node ``info`` at a binding it plays: the output token plays no
        variable, an input position one."""
        return len(info.bound) <= (0 if c == OUT else 1)

    def holds(self, c: str, l: int, need: Need) -> str:
        if need.kind == "fixed":
            return self.xfix[(c, l, need.what)]
        if need.kind == "offset":
            return self.xoff[(c, l, need.what)] if c != OUT else FALSE
        if need.kind == "node":
            return self.know[(c, l, need.what)]
        return disj([smt_and(quoted(v), self.know[(c, l, self.enc.outer[need.what][o])])
                     for o, v in self.enc.order_vars[need.what].items()])

    def candidates(self, info: NodeInfo) -> list[str]:
        """The input classes among a node's candidates (an anchor outside a subset is not one)."""
        found = self.candidate_classes.get(info.domain)
        if found is None:
            found = self.candidate_classes[info.domain] = [IN] + [a for a, q in self.enc.anchors.items()
                                                               if _in_domain(q, info.domain)]
        return found

    def every_candidate(self, info: NodeInfo, l: int, needs, both_sides: bool = False) -> str:
        """Every candidate class holds ``needs`` after layer ``l`` (or holds every position)."""
        return conj([smt_or(self.all[(k, l)], FALSE if both_sides else conj([self.holds(k, l, nd) for nd in needs]))
                     for k in self.candidates(info)])

    def ready(self, info: NodeInfo, c: str, l: int) -> str:
        """Can class ``c`` make selection ``info`` with a retrieval head in layer ``l``?"""
        r, before = info.reads, l - 1
        selector = smt_or(self.all[(c, before)], conj([self.holds(c, before, nd) for nd in r.selector]))
        # what the candidates hold is the same for every class that ranks them: named once, not per class
        sides = [smt_or(self.holds(c, before, nd), self.named_bool(f"candidates_hold:{before}:{info.key}:{i}",
                                                                   self.every_candidate(info, before, [nd])))
                 for i, nd in enumerate(r.either)]
        candidates = self.named_bool(f"candidates_hold:{before}:{info.key}",
                                     self.every_candidate(info, before, r.candidate, r.both))
        return conj([selector, candidates, *sides, self.gate(info, c)])

    def gate(self, info: NodeInfo, c: str) -> str:
        """What class ``c`` needs beyond holdings to make ``info``: positions, to tell a subset or range of
        candidates apart; under a causal mask, at an input position, candidates at or before its binding
        (``ex.sees_candidates``), of which ``range(1, s+1)`` is told apart by the mask itself."""
        if not self.mask or c == OUT:
            return self.positional_ok if info.restricted else TRUE
        sees = any(ex.sees_candidates(info.domain, v) for v in info.bound or (None,)) or self.sees_domain(c, info.domain)
        prefix = any(ex.masked_prefix(info.domain, v) for v in info.bound)
        return smt_and(self.positional_ok if info.restricted and not prefix else TRUE, TRUE if sees else self.causal_ok)

    def averaged(self, info: NodeInfo, l: int) -> str:
        """Can an averaging head in layer ``l`` learn aggregate ``info``: every position computes its
        per-token value from what it holds?"""
        r = info.reads
        gate = self.positional_ok if info.restricted else TRUE
        return self.named_bool(f"averaged:{l}:{info.key}", smt_and(  # the same at every class: named once
            self.every_candidate(info, l - 1, r.candidate + r.either, r.both or bool(r.selector)), gate))

    def averaged_prefix(self, info: NodeInfo, l: int) -> str:
        """Under the mask, can an input position's averaging head in layer ``l`` learn the prefix aggregate
        ``info`` (``NodeInfo.prefix``) at its own binding: every candidate computes its per-token value, the
        range is the mask's own or told apart by positions, and a sum's count, the position itself, is known
        (positional encoding: a causal head averages, and only a position that knows its index scales it)."""
        r = info.reads
        gate = TRUE if any(ex.masked_prefix(info.domain, v) for v in info.bound) else self.positional_ok
        count = self.positional_ok if info.sense == "sum" else TRUE
        return self.named_bool(f"averaged:{l}:{info.key}", conj([
            self.every_candidate(info, l - 1, r.candidate + r.either, r.both or bool(r.selector)), gate, count]))

    def known_by_candidates(self, info: NodeInfo, l: int, key: str) -> str:
        """Every candidate of ``info`` knows node ``key`` after layer ``l`` (``common``, kept per layer: every
        class and every winner of a layer asks it again)."""
        found = self.candidates_know.get((info.domain, l, key))
        if found is None:
            classes = self.candidate_sets.setdefault(tuple(self.candidates(info)), len(self.candidate_sets))
            found = self.candidates_know[(info.domain, l, key)] = self.named_bool(
                f"common:{l}:{classes}:{key}", self.common(info, l, lambda k, ll: self.know[(k, ll, key)]))
        return found

    def common(self, info: NodeInfo, l: int, fact) -> str:
        """A fact every candidate has: what a retrieval gains whoever wins."""
        return conj([fact(k, l) for k in self.candidates(info)])

    # ---- the operations of one layer ------------------------------------------------------------------
    def references(self, c: str) -> list:
        """What a specific-position head at ``c`` may gather: fixed positions (the anchors too) and, at an
        input position, offsets from it."""
        return list(self.fixed_sources) + ([Offset(k) for k in self.enc.offsets] if c != OUT else [])

    def operations(self, l: int) -> None:
        """The operation variables of layer ``l`` at every class: retrievals of the nodes it can make, one
        global aggregation, one global averaging, specific-position slots; at most ``h`` heads each."""
        enc = self.enc
        H = enc.arch.heads[l - 1]
        for h in range(1, H + 1):
            enc.heads[(l, h)] = self.declare_bool(f"heads:{l}:{h}")
        averages = any(i.kind == "aggregate" and not i.constant and (not i.bound or self.mask and i.prefix)
                       for i in enc.nodes.values())
        for c in [IN, OUT] + enc.inputs[1:]:
            self.check_deadline(f"encoding layer {l}")
            names = [(OperationName.selection(i), i)
                     for i in enc.nodes.values() if i.kind in ("top1", "kth") and self.admissible(i, c)]
            names += [(GLOBAL_AGGREGATION, None)] + ([(GLOBAL_AVERAGING, None)] if averages else [])
            if self.mask and self.prefix_of and (c == OUT or self.sees_domain(c, ex.AllPositions())):
                names.append((PREFIX_COLLECTION, None))   # only a position that sees every one collects
            # an input position's aggregation under the mask is of its prefix: averaging learns prefix
            # aggregates (``know_gains``), a global aggregation is left out
            masked = {GLOBAL_AGGREGATION} if self.mask and c != OUT and not self.sees_domain(
                c, ex.AllPositions()) else set()
            refs = self.references(c)
            enc.widest = max(enc.widest, len(names) + len(refs))  # distinct operations a layer offers here
            names += [(OperationName(Mode.POSITIONS, slot=j), None) for j in range(1, min(H, len(refs)) + 1)]
            used = [self.operation(l, c, name, info) for name, info in names]
            for name, var in zip((n for n, _ in names), used):  # an input's aggregation under a mask: a prefix
                if name in masked:
                    self.add(implies(quoted(var), self.causal_ok))
            used += [enc.kept[(l, c, n)] for n, _ in names if (l, c, n) in enc.kept]
            self.slots(l, c, [n for n, _ in names if n.mode is Mode.POSITIONS], refs)
            self.budget(l, c, [quoted(u) for u in used])

    def budget(self, l: int, c: str, used: list[str]) -> None:
        """At most ``h`` of ``used`` act at ``c`` in layer ``l`` when it has ``h`` heads. In standard SMT-LIB the
        count is an integer of its own, written once: each head count copied the sum of every operation."""
        if self.portable and len(used) > 1:
            count = quoted(self.declare_int(f"acting:{l}:{c}"))
            self.add(f"(= {count} {total(f'(ite {x} 1 0)' for x in used)})")
        for h in range(1, self.enc.arch.heads[l - 1] + 1):
            bound = at_most(used, h, False) if not self.portable or len(used) <= 1 else f"(<= {count} {h})"
            self.track(vocabulary.budget(l, c), implies(quoted(self.enc.heads[(l, h)]), bound if len(used) > h else TRUE))

    def operation(self, l: int, c: str, name: OperationName, info: NodeInfo | None) -> str:
        """One operation variable, its preconditions and cost, and (at an anchor) the inputs' head it keeps.
        Returns the variable's name."""
        enc = self.enc
        var = enc.ops[(l, c, name)] = self.declare_bool(f"op:{l}:{c}:{name.text}")
        enc.op_cost[(l, c, name)] = self.cost_of(l, name, info)
        if info is not None:
            chosen_order = quoted(enc.order_vars[info.group][info.order])
            ready = self.ready(info, c, l)
            if c in enc.anchors and (l, IN, name) in enc.ops:  # its own head and the kept one both need it
                ready = self.named_bool(f"ready:{l}:{c}:{info.key}", ready)
            self.add(implies(quoted(var), smt_and(chosen_order, ready)))
            if enc.arch.rank_aware:
                self.rank_rule(l, var, info)
        if name.mode is Mode.POSITIONS:
            enc.sources[(l, c, name)] = {ref: self.declare_bool(f"src:{l}:{c}:{name.slot}:{_ref_name(ref)}")
                                         for ref in self.references(c)}
        acts = quoted(var)
        if c in enc.anchors and (l, IN, name) in enc.ops:
            # an anchor keeps the inputs' op unless it overrides
            keep = enc.kept[(l, c, name)] = self.declare_bool(f"keep:{l}:{c}:{name.text}")
            self.add(implies(quoted(keep), quoted(enc.ops[(l, IN, name)])))
            if info is not None:  # the kept head ranks from the anchor's own holdings: what its side reads
                self.add(implies(quoted(keep), ready))
            acts = self.named_bool(f"acts:{l}:{c}:{name.text}", smt_or(quoted(var), quoted(keep)))
        self.effective[(l, c, name)] = acts
        return var

    def rank_rule(self, l: int, var: str, info: NodeInfo) -> None:
        """Under the rank rule a retrieval head ranks only by a score whose rank fits its width ``E / h``: at
        each head count of layer ``l`` too narrow for ``info``'s score, the retrieval ``var`` is ruled out
        (tracked as a ``Family.RANK`` constraint, so that an unsat core can name it)."""
        enc = self.enc
        for h in range(1, enc.arch.heads[l - 1] + 1):
            if not enc.arch.holds_rank(info.rank, h):
                rule = Constraint(Family.RANK, layer=l, node=info.node, rank=info.rank)
                self.track(rule, neg(smt_and(quoted(var), quoted(enc.heads[(l, h)]))))

    def cost_of(self, l: int, name: OperationName, info: NodeInfo | None) -> dict[int, sympy.Expr]:
        """The operation's cost exponent for each head count of layer ``l``: k-th retrieval and global
        aggregation depend on it, through the per-head width ``n = E / h`` (docs/model.md, "Head width")."""
        arch, heads = self.enc.arch, range(1, self.enc.arch.heads[l - 1] + 1)
        if name.mode is Mode.KTH:
            return {h: cost.kth_retrieval(info.k, arch.width / h) for h in heads}
        if name.mode in (Mode.RETRIEVE, Mode.AVERAGE, Mode.COLLECT):
            return {h: cost.retrieval() for h in heads}
        if name.mode is Mode.AGGREGATE:
            return {h: cost.decode(T, arch.input_dim, arch.width / h, self.law) for h in heads}
        return {}  # specific-position heads: by the size they gather (``costs``)

    def slots(self, l: int, c: str, slots: list[OperationName], refs: list) -> None:
        """Specific-position heads: each gathers a block of sources, blocks disjoint and in one order."""
        enc = self.enc
        for j, name in enumerate(slots):
            srcs = enc.sources[(l, c, name)]
            op = quoted(enc.ops[(l, c, name)])
            self.add(f"(= {op} {disj([quoted(v) for v in srcs.values()])})")
            self.add(implies(op, self.positional_ok))
            if self.mask and c != OUT:  # an input position sees itself and the positions before it, no other
                for ref in refs:
                    if not (isinstance(ref, Offset) and ref.offset < 0 or not isinstance(ref, Offset) and self.sees(c, ref)):
                        self.add(implies(quoted(srcs[ref]), self.causal_ok))
            if j:  # one canonical partition: each block starts after the previous block's first source
                before, earlier = enc.sources[(l, c, slots[j - 1])], FALSE  # the previous block has begun
                for i, ref in enumerate(refs):
                    self.add(implies(quoted(srcs[ref]), earlier))
                    if i + 1 < len(refs):  # named: each prefix is one term longer than the last, not a copy
                        earlier = self.named_bool(f"begun:{l}:{c}:{j}:{i}", smt_or(earlier, quoted(before[ref])))
        for ref in refs:  # a source in one block at most: a second copy gathers nothing new
            self.add(at_most([quoted(enc.sources[(l, c, name)][ref]) for name in slots], 1, self.portable))

    def member_sets(self, l: int, c: str) -> list[tuple[OperationName | None, dict]]:
        """The specific-position heads acting at ``c`` in layer ``l``, each with its sources: the class's
        own (with the head's name), and at an anchor the inputs' heads it keeps (``None``)."""
        enc, sources = self.enc, self.at_layer(l)[1]
        own = [(name, {ref: quoted(v) for ref, v in srcs.items()}) for name, srcs in sources.get(c, [])]
        kept = [(None, {ref: smt_and(quoted(enc.kept[(l, c, name)]), quoted(v)) for ref, v in srcs.items()})
                for name, srcs in sources.get(IN, []) if (l, c, name) in enc.kept]
        return own + kept

    def at_layer(self, l: int) -> tuple[dict, dict]:
        """Layer ``l``'s operations by class, once its operations are written: class -> {name: acts}, and
        class -> [(name, sources)] of its specific-position heads (each class scanning every class's
        operations made the encoding's time cubic in the anchors)."""
        found = self.by_layer.get(l)
        if found is None:
            acting: dict[str, dict] = {}
            sources: dict[str, list] = {}
            for (ll, c, name), v in self.effective.items():
                if ll == l:
                    acting.setdefault(c, {})[name] = v
            for (ll, c, name), srcs in self.enc.sources.items():
                if ll == l:
                    sources.setdefault(c, []).append((name, srcs))
            found = self.by_layer[l] = (acting, sources)
        return found

    # ---- what each class holds after the layer ------------------------------------------------------
    def update_rules(self, l: int) -> None:
        """Each fact after layer ``l``: what it was, or what this layer's operations brought."""
        for c in self.enc.classes:
            self.check_deadline(f"encoding layer {l}")  # a layer of many classes takes seconds
            acting = self.at_layer(l)[0].get(c, {})
            gathered = self.member_sets(l, c)
            chosen = {q: self.named_bool(f"gets:{l}:{c}:{i}", disj([m[q] for _, m in gathered]))
                      for i, q in enumerate(self.references(c))}
            winners = self.winners(l, c, acting)
            self.update_all(c, l, acting, chosen, winners)
            gains = {key: self.know_gains(c, l, key, info, acting, chosen, winners)
                     for key, info in self.enc.nodes.items() if self.admissible(info, c)}
            here = self.here.get(c, {})   # at a fixed position, a node and the form it makes for itself
            for key in self.enc.nodes:
                # one selection under several names: each is known when any is (``Hosts.same``)
                names = set(self.same.get(key, (key,))) | here.get(key, set())
                known = [g for k in sorted(names) for g in gains.get(k, [FALSE])]
                self.add(f"(= {self.know[(c, l, key)]} {disj(known) if key in gains else FALSE})")
            self.update_positions(c, l, chosen, winners)

    def winners(self, l: int, c: str, acting: dict) -> list[tuple[str, NodeInfo]]:
        """The retrievals acting at ``c`` in layer ``l``, one entry per set of candidate classes: a literal
        that one of them acts, and one of their nodes (a retrieval gains what every candidate holds, so those
        with the same candidates gain alike; written once per set, not once per retrieval and fact)."""
        by_set: dict[tuple[str, ...], list] = {}
        for name, v in acting.items():
            if name.selects or name.mode is Mode.COLLECT:   # a collection retrieves one input position too
                info = self.enc.nodes[name.node] if name.selects else self.everywhere
                by_set.setdefault(tuple(self.candidates(info)), []).append((v, info))
        found = []
        for classes, members in by_set.items():
            number = self.candidate_sets.setdefault(classes, len(self.candidate_sets))
            some = self.named_bool(f"retrieves:{l}:{c}:{number}", disj([v for v, _ in members]))
            found.append((some, members[0][1]))
        return found

    def update_all(self, c: str, l: int, acting: dict, chosen: dict, winners: list) -> None:
        gains = [self.all[(c, l - 1)], acting[GLOBAL_AGGREGATION]]
        gains += [smt_and(v, self.common(i, l - 1, lambda k, ll: self.all[(k, ll)])) for v, i in winners]
        gains += [smt_and(v, self.all[(self.source_class[q], l - 1)]) for q, v in chosen.items() if not isinstance(q, Offset)]
        gains += [smt_and(v, self.all[(k, l - 1)]) for q, v in chosen.items() if isinstance(q, Offset)
                  for k in self.neighbour(c, q.offset)]
        self.add(f"(= {self.all[(c, l)]} {disj(gains)})")

    def know_gains(self, c: str, l: int, key: str, info: NodeInfo, acting: dict, chosen: dict,
                   winners: list) -> list[str]:
        """How class ``c`` comes to know node ``key`` by layer ``l`` (under this name alone)."""
        know = self.know
        gains = [know[(c, l - 1, key)], self.all[(c, l)]]
        if info.kind == "aggregate" and GLOBAL_AVERAGING in acting:
            if not info.bound:   # under the mask only a position that sees every candidate averages them
                sees = TRUE if not self.mask or c == OUT or self.sees_domain(c, info.domain) else self.causal_ok
                gains.append(conj([acting[GLOBAL_AVERAGING], self.averaged(info, l), sees]))
            elif self.mask and c != OUT and info.prefix:
                gains.append(smt_and(acting[GLOBAL_AVERAGING], self.averaged_prefix(info, l)))
        else:
            gains.append(acting.get(OperationName.selection(info), FALSE))
        if not info.bound:  # binding-free knowledge travels with any copy of a position's holdings
            gains += [smt_and(v, self.known_by_candidates(i, l - 1, key)) for v, i in winners]
            gains += [smt_and(v, know[(self.source_class[q], l - 1, key)]) for q, v in chosen.items()
                      if not isinstance(q, Offset)]
            gains += [smt_and(v, know[(k, l - 1, key)]) for q, v in chosen.items() if isinstance(q, Offset)
                      for k in self.neighbour(c, q.offset)]
        for n, w, m in self.enc.hosts.moved:   # the moved retrieval brings the token m before its winner
            retrieves = acting.get(OperationName.selection(self.enc.nodes[w])) if n == key else None
            if retrieves is not None:
                gains.append(smt_and(retrieves, self.every_candidate(self.enc.nodes[w], l - 1, [Need("offset", -m)])))
        prefix = self.prefix_of.get(key)
        if prefix is not None and PREFIX_COLLECTION in acting:   # whole at the position the collection finds
            gains.append(smt_and(acting[PREFIX_COLLECTION], conj([know[(k, l - 1, prefix)] for k in self.enc.inputs])))
        # made by the winner of a retrieval for itself: the retrieval copies it (``Hosts.copies``)
        for m, a, n in self.copies.get(key, ()):
            made_at_m = self.enc.nodes[m]
            retrieves = acting.get(OperationName.selection(made_at_m))
            if retrieves is None:
                continue
            every = self.known_by_candidates(made_at_m, l - 1, a)
            makes_it = acting.get(OperationName.selection(self.enc.nodes[a]))
            if c in self.enc.anchors and c in self.candidates(made_at_m) and makes_it is not None:
                # a fixed position that may win its own retrieval makes the form for itself in this layer
                others = conj([self.know[(k, l - 1, a)] for k in self.candidates(made_at_m) if k != c])
                every = smt_or(every, smt_and(others, makes_it))
            gains.append(smt_and(retrieves, every))
        return gains

    def update_positions(self, c: str, l: int, chosen: dict, winners: list) -> None:
        for q in self.enc.fixed:
            gains = [self.xfix[(c, l - 1, q)], self.all[(c, l)], chosen.get(q, FALSE)]
            gains += [smt_and(v, self.common(i, l - 1, lambda k, ll, q=q: self.xfix[(k, ll, q)])) for v, i in winners]
            gains += [smt_and(v, self.xfix[(self.source_class[p], l - 1, q)]) for p, v in chosen.items()
                      if not isinstance(p, Offset)]
            self.add(f"(= {self.xfix[(c, l, q)]} {disj(gains)})")
        if c != OUT:
            for k in self.enc.offsets:
                gains = [self.xoff[(c, l - 1, k)], self.all[(c, l)], chosen[Offset(k)]]
                self.add(f"(= {self.xoff[(c, l, k)]} {disj(gains)})")

    def twin_anchors(self) -> list[tuple[PositionClass, PositionClass]]:
        """Neighbouring anchors that a renaming of positions swaps with everything else kept: free ones (no
        fixed position the target names, no answering class), with no offsets read (a neighbour would tell them
        apart), in the same candidate sets of every node. In each set, by position."""
        enc = self.enc
        if enc.offsets or self.mask or not self.ordered:
            return []
        named, answering = set(enc.fixed), set(answering_classes(enc))
        domains = sorted({repr(i.domain): i for i in enc.nodes.values()}.items())
        sets: dict[tuple, list[PositionClass]] = {}
        for c, q in enc.anchors.items():
            if q in named or c in answering:
                continue
            sets.setdefault(tuple(c in self.candidates(i) for _, i in domains), []).append(c)
        return [(a, b) for members in sets.values() for a, b in itertools.pairwise(members)]

    def ordered_anchors(self, l: int) -> None:
        """Twin anchors in order (``twin_anchors``): of two, the first's ``know`` facts are lexicographically
        at least the second's, node by node, layer by layer. Exact as ``symmetry.py``'s order of groups is: a
        renaming that swaps the two maps every constraint onto one of the same family (their specific-position
        sources swap too, and the gathered sets are kept by choosing the canonical split of the swapped
        sources again), so every model has a swapped one that is in order, with the same costs and heads. With
        interchangeable groups ordered as well, both orders read one order of the facts (layer, class, group,
        node: the classes in their order, the groups as ``symmetry.py`` sorts them): the model that comes first
        in it among all the renamings of both kinds meets both."""
        if self.anchor_pairs is None:   # once the anchors and offsets are known (``position_classes``)
            self.anchor_pairs = self.twin_anchors()
        pairs = self.anchor_pairs
        # the nodes group by group in the order interchangeable groups are ordered (``ordered_groups``): one order
        # of the facts (layer, class, group, node) for both, so that the most of every orbit, in that order, meets
        # both (rows and columns of one matrix, lexicographically ordered alike)
        by_group = sorted(self.enc.nodes.items(), key=lambda item: item[1].group)
        for a, b in pairs:
            tie = self.anchor_ties.get(b, TRUE)
            for key, info in by_group:
                if not self.admissible(info, a):
                    continue
                x, y = self.know[(a, l, key)], self.know[(b, l, key)]
                self.add(implies(tie, implies(y, x)))
                following = quoted(self.declare_bool(f"atie:{l}:{b}:{key}"))
                self.add(f"(= {following} {conj([tie, f'(= {x} {y})'])})")
                tie = following
            self.anchor_ties[b] = tie

    def ordered_groups(self, l: int) -> None:
        """Interchangeable groups in order (``symmetry.py``, which proves the encoding stays exact): of two
        neighbours, the first's ``know`` facts are lexicographically at least the second's, position by
        position (layer, class, node); ``tie`` says the two are equal so far."""
        for a, b in self.pairs:
            tie = self.ties.get(b[0], TRUE)
            for c in self.enc.classes:
                for ka, kb in zip(a, b):
                    if not self.admissible(self.enc.nodes[ka], c):
                        continue  # false at both
                    x, y = self.know[(c, l, ka)], self.know[(c, l, kb)]
                    self.add(implies(tie, implies(y, x)))
                    following = quoted(self.declare_bool(f"tie:{l}:{c}:{kb}"))
                    self.add(f"(= {following} {conj([tie, f'(= {x} {y})'])})")
                    tie = following
            self.ties[b[0]] = tie

    # ---- sizes, the goal, the costs -------------------------------------------------------------------
    def sizes(self, layers: range) -> None:
        """``size[c,l]``: ``|I(c, l)|`` as ``program.set_sizes`` counts it (an upper bound: each gain in full,
        a retrieval gaining the largest input class), and ``whole[c,l]``: that count is ``T``, after each of
        ``layers`` (layer 0's are set at the start). Only encodings with specific-position heads need them, whose
        cost is the decoding of what they gather."""
        enc = self.enc
        size, whole = self.size, self.whole
        for l in layers:
            widest = self.widest(l - 1)
            # named: each class's retrievals would copy it, and it lists every input class
            any_whole = self.named_bool(f"any_whole:{l - 1}", disj([whole[(k, l - 1)] for k in enc.inputs]))
            for c in enc.classes:
                gains, retrieves = [], []
                for name in sorted(self.at_layer(l)[0].get(c, {})):  # its own operations and those it keeps
                    if name.selects or name.mode is Mode.COLLECT:
                        gains.append(f"(ite {self.acts(l, c, name)} {widest} 0)")
                        retrieves.append(self.acts(l, c, name))
                wholes = [self.acts(l, c, GLOBAL_AGGREGATION), smt_and(disj(retrieves), any_whole)]
                for name, members in self.member_sets(l, c):
                    gathered = total(f"(ite {m} {size[(self.source_class.get(q, IN), l - 1)]} 0)"
                                     for q, m in members.items())
                    everything = disj([smt_and(m, whole[(self.source_class.get(q, IN), l - 1)]) for q, m in members.items()])
                    gains.append(gathered)
                    wholes.append(everything)
                    if name is not None:  # charged where the head is the class's own (a kept head: at the inputs)
                        n = len(enc.gathers)
                        g, w = self.declare_int(f"gathered:{n}"), self.declare_bool(f"gathers_all:{n}")
                        self.add(f"(= {quoted(g)} {gathered})")
                        self.add(f"(= {quoted(w)} {everything})")
                        enc.gathers.append((l, enc.ops[(l, c, name)], g, w))
                size[(c, l)] = quoted(self.declare_int(f"size:{c}:{l}"))
                whole[(c, l)] = quoted(self.declare_bool(f"whole:{c}:{l}"))
                self.add(f"(= {size[(c, l)]} {total([size[(c, l - 1)]] + gains)})")
                self.add(f"(= {whole[(c, l)]} {disj([whole[(c, l - 1)]] + wholes)})")

    def widest(self, l: int) -> str:
        """The largest ``size[k,l]`` over the input classes ``k``, as a term. Each running maximum is a
        constant of its own: written inline, every class would copy the previous maximum twice, and the
        text would double with each anchor (one per group with a free selection)."""
        size, inputs = self.size, self.enc.inputs
        widest = size[(inputs[0], l)]
        for i, k in enumerate(inputs[1:], start=1):
            running = quoted(self.declare_int(f"widest:{l}:{i}"))
            self.add(f"(= {running} (ite (> {size[(k, l)]} {widest}) {size[(k, l)]} {widest}))")
            widest = running
        return widest

    def acts(self, l: int, c: str, name: OperationName) -> str:
        return self.effective[(l, c, name)]

    def goal(self, layers: range) -> None:
        """After the last layer the output token (every input class, for a target with an answer at every
        position: ``answering_classes``) computes the target from what it holds; the number of layers is an
        assumption (``depth``), so the goal is written for every depth in ``layers``."""
        enc = self.enc
        needs = goal_needs(enc.target)
        for L in layers:
            enc.depth[L] = self.declare_bool(f"layers:{L}")
            reachable = conj([smt_or(self.all[(c, L)], conj([self.holds(c, L, nd) for nd in needs]))
                              for c in answering_classes(enc)])
            self.track(GOAL, implies(quoted(enc.depth[L]), reachable))

    def costs(self) -> None:
        """Cost levels: every operation implies that its level (at the layer's head count) is allowed.

        A specific-position head costs the decoding of what it gathers: of a whole sequence, the global
        aggregation's level; of a bounded set, a cost that grows with the set. Then one integer
        ``gather_cap`` bounds every gathered size, and excluding a level excludes the sizes that cost as
        much: at the cheapest allowed prefix of levels the solver then lowers the cap (``solver.py``), which
        makes the exponent exact. With a width that grows with ``T`` every bounded set costs alike."""
        enc = self.enc
        key = ((lambda e: cost.asymptotic_key(e)) if self.seq_len is None
               else (lambda e: (float(cost.at(e, self.seq_len)), 0.0)))
        enc.levels = sorted(self.needed_levels(enc.arch), key=key)
        enc.level_vars = [self.declare_bool(f"level:{i}") for i in range(len(enc.levels))]
        if enc.gathers and self.by_size:
            enc.gather_cap = self.declare_int("gather:cap")
            self.gather_levels()
        self.level_implications(list(enc.op_cost), enc.gathers)

    def needed_levels(self, arch) -> set:
        """The levels the operations of ``arch`` need: the encoding's operations (those of its layers; the
        operations of a layer cost alike in every layer) and, with specific-position heads, their gathers."""
        enc, law = self.enc, self.law
        candidates = {e for by_heads in enc.op_cost.values() for e in by_heads.values()}
        # a layer of ``arch`` the encoding lacks (``grow``) may have another head count, so another head width
        every_count = range(1, max(arch.heads) + 1)
        candidates |= {cost.kth_retrieval(i.k, arch.width / h) for i in enc.nodes.values()
                       if i.kind == "kth" and self.admissible(i, IN) for h in every_count}
        candidates |= {cost.decode(T, arch.input_dim, arch.width / h, law) for h in every_count}  # every layer
        if enc.sources and not self.by_size:
            candidates |= {cost.decode(1, arch.input_dim, arch.width / h, law) for h in every_count}
        return candidates

    def level_implications(self, ops: list, gathers: list) -> None:
        """Each of ``ops`` and ``gathers`` implies its level at the layer's head count; a bounded gather of
        ``g`` tokens by a head of width ``E/h`` costs what ``h*g`` tokens cost at width ``E``, so ``h*g`` is at
        most the cap (the cap counts tokens at the full width)."""
        enc, arch, law = self.enc, self.enc.arch, self.law
        level_of = {e: quoted(v) for e, v in zip(enc.levels, enc.level_vars)}
        for op in ops:
            by_heads = enc.op_cost[op]
            if len(set(by_heads.values())) == 1:  # the same at every head count (retrievals, averages)
                self.add(implies(quoted(enc.ops[op]), level_of[next(iter(by_heads.values()))]))
                continue
            for h, e in by_heads.items():
                self.add(implies(smt_and(quoted(enc.ops[op]), quoted(enc.heads[(op[0], h)])), level_of[e]))
        for layer, acts, gathered, whole in gathers:
            for h in range(1, arch.heads[layer - 1] + 1):
                acting = smt_and(quoted(acts), quoted(enc.heads[(layer, h)]))
                everything = cost.decode(T, arch.input_dim, arch.width / h, law)
                self.add(implies(smt_and(acting, quoted(whole)), level_of[everything]))
                if not self.by_size:
                    bounded_gather = cost.decode(1, arch.input_dim, arch.width / h, law)
                    self.add(implies(smt_and(acting, neg(quoted(whole))), level_of[bounded_gather]))
                else:  # ``costs`` made the cap with the first gathers
                    self.add(implies(smt_and(acting, neg(quoted(whole))),
                                     f"(<= (* {h} {quoted(gathered)}) {quoted(enc.gather_cap)})"))

    def gather_levels(self) -> None:
        """Tie the cap on gathered sizes to the levels (``costs``): excluding a level excludes the sizes
        whose decoding costs as much. Sizes here are at the full width ``E`` (a head of ``E/h`` gathering
        ``g`` tokens counts ``h*g``: ``level_implications``)."""
        enc = self.enc
        width = cost.at(enc.arch.width, self.seq_len)

        def limit(value) -> sympy.Expr:  # decode(n) <= value  <=>  n <= limit(value), for value >= 0
            return (value + 1 if cost.DecodeLaw(self.law) is cost.DecodeLaw.SEED else value) * width / enc.arch.input_dim

        enc.gather_floor = int(sympy.floor(limit(0)))
        for var, level in zip(enc.level_vars, enc.levels):
            value = cost.at(level, self.seq_len)
            if value.has(T):  # grows with T: above every bounded set
                enc.gather_limits.append(None)
                continue
            enc.gather_limits.append(int(sympy.floor(limit(value))))
            self.add(implies(neg(quoted(var)), f"(< {quoted(enc.gather_cap)} {int(sympy.ceiling(limit(value)))})"))


# ---- reading a program back ---------------------------------------------------------------------------
def _op(enc: Encoding, true, l: int, c: str, name: OperationName) -> Op:
    """The operation ``name`` of class ``c`` in layer ``l``, as a program states it (``true``: a variable's
    truth in the model)."""
    if name.mode is Mode.POSITIONS:
        chosen = tuple(ref for ref, v in enc.sources[(l, c, name)].items() if true(v))
        return Op(Mode.POSITIONS, positions=chosen)
    if name.selects:
        return Op(name.mode, node=enc.nodes[name.node].node)
    if name.mode is Mode.COLLECT:   # what every input position's prefix forms hold after the layer before
        return Op(Mode.COLLECT, nodes=tuple(enc.nodes[n].node for n, p in enc.hosts.prefixes
                                            if all(true(f"know:{k}:{l - 1}:{p}") for k in enc.inputs)))
    return Op(name.mode)


def extract(enc: Encoding, model: z3.ModelRef, heads: tuple[int, ...]) -> Program:
    """The witness program of a model asked with ``heads`` heads per layer (``program_of`` its truth)."""
    return program_of(enc, witness_truth(enc, model, heads), heads)


def witness_truth(enc: Encoding, model: z3.ModelRef, heads: tuple[int, ...]) -> dict[str, bool]:
    """The value in ``model`` of every variable ``program_of`` reads, with one evaluation."""
    names = [n for (layer, _, _), n in [*enc.ops.items(), *enc.kept.items()] if layer <= len(heads)]
    names += [v for (layer, _, _), srcs in enc.sources.items() if layer <= len(heads) for v in srcs.values()]
    names += [v for per_order in enc.order_vars.values() if len(per_order) > 1 for v in per_order.values()]
    names += [f"know:{k}:{layer}:{p}" for _, p in enc.hosts.prefixes for k in enc.inputs
              for layer in range(len(heads))]   # what a prefix collection sums (``_op``)
    return enc.values(model, tuple(names))


def program_of(enc: Encoding, truth: dict[str, bool], heads: tuple[int, ...]) -> Program:
    """The program the variables' ``truth`` describes, with ``heads`` heads per layer: head numbers assigned
    in a fixed order within each class; an anchor overrides the heads whose input operation it does not keep
    (with its own operation, or idle)."""
    def true(name: str) -> bool:
        return truth.get(name, False)

    running: dict[tuple[int, str], list[OperationName]] = {}
    for (ll, cc, name), var in enc.ops.items():
        if ll <= len(heads) and true(var):
            running.setdefault((ll, cc), []).append(name)

    def used(l: int, c: str) -> list[OperationName]:
        return sorted(running.get((l, c), ()))

    actions = []
    for l in range(1, len(heads) + 1):
        heads_of_input = {}
        for c, where in ((IN, "input"), (OUT, "output")):
            for head, name in enumerate(used(l, c), start=1):
                actions.append(Action(l, head, where, _op(enc, true, l, c, name)))
                if c == IN:
                    heads_of_input[name] = head
        for c, position in enc.anchors.items():
            kept = {name for name in heads_of_input if true(enc.kept[(l, c, name)])}
            free = [heads_of_input[n] for n in sorted(heads_of_input) if n not in kept]
            free += list(range(len(heads_of_input) + 1, heads[l - 1] + 1))
            # a retrieval or aggregation it keeps and also runs itself is one operation (the encoding counts
            # what it gains once: run twice, the program's sets would count it twice)
            own = [name for name in used(l, c) if name not in kept or name.mode is Mode.POSITIONS]
            for head, name in zip(free, own):
                actions.append(Action(l, head, position, _op(enc, true, l, c, name)))
            for head in free[len(own):]:
                if head <= len(heads_of_input):  # a dropped input operation: this position stays idle
                    actions.append(Action(l, head, position, Op(Mode.IDLE)))
    order = []
    for gid, per_order in enc.order_vars.items():
        chosen = next((o for o, v in per_order.items() if true(v)), next(iter(per_order)))
        if len(chosen) > 1:
            order.append((gid, chosen))
    return Program(tuple(actions), tuple(order), len(heads))
