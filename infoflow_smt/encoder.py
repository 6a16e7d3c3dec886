"""InfoFlow programs as SMT constraints (z3): one of the two modules that import z3.

The encoding does not grow with ``T``. Without positional encoding all input positions are interchangeable,
so the state of the model is the state of two *position classes*: ``in`` (every input position, playing the
bound variable of whatever node it makes) and ``out`` (the output token). For each class ``c`` and layer
``l`` the encoding keeps Boolean facts that are exact for the model of ``docs/model.md``:

``all[c,l]``      the class holds every input position (after a global aggregation, or by retrieving from
                  a position that did); then it can compute any selection itself.
``know[c,l,n]``   the class knows the result of selection node ``n`` (at the binding where it plays the
                  node's bound variable), and with it everything the node's value reads: a retrieval brings
                  along all the winner held, and the winner held the key side of the score.
``xfix[c,l,q]``   it holds the content of fixed position ``q`` (positional encoding only).
``xoff[l,k]``     every input position holds the content of its neighbour at offset ``k`` (positional only).

Facts at ``in`` that are relative to the position (``know`` of a node with a bound variable, ``xoff``) do
not travel with a retrieval: at the retriever they would speak of another binding. Facts about nodes with
no bound variable, fixed positions and ``all`` travel. Heads are *counted*, not named (at most ``h_l``
operations per class and layer; one operation of a kind is enough, except specific-position aggregation,
whose heads split the sources into disjoint blocks in one canonical order), which removes the symmetry
between interchangeable heads. Every joint group picks one variable order (``ord``).

Each operation carries a cost level; the solver asks for programs whose operations all stay at or below a
level, with the levels as assumptions so that an unsat core names the constraints that clash. What a
specific-position head gathers is counted in integers (``size``, ``whole``), as ``program.set_sizes``
counts it, and its cost is tied to the levels through one cap on the gathered sizes (``_add_levels``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy
import z3

from . import cost
from . import expr as ex
from .program import Action, Mode, Offset, Op, Program
from .symbols import T
from .trees import GroupRef, NodeRef, comparison_tree, outermost, position_reads, walk
from .trees import needs_positional as base_needs_positions

IN, OUT = "in", "out"


@dataclass(frozen=True)
class NodeInfo:
    """One single-variable node of one group under one variable order."""

    key: str                    # unique: group|order|var
    node: str                   # the tree's node id (g0.t)
    group: str
    order: tuple[str, ...]
    kind: str
    bound: frozenset[str]
    k: int
    restricted: bool            # its domain is a subset or range (needs positions to gate candidates)
    key_needs: tuple            # requirements the candidates must meet
    query_needs: tuple          # requirements the acting position must meet
    impossible_key: bool        # the key side needs another binding than the candidate's own
    vacuous: bool = False       # no term of the score depends on the variable: every candidate ties


@dataclass
class Encoding:
    target: object
    arch: object
    solver: z3.Solver
    nodes: dict[str, NodeInfo]
    outer: dict[str, dict[tuple[str, ...], str]]            # group -> order -> key of its outermost node
    ops: dict[tuple[int, str, str], z3.BoolRef] = field(default_factory=dict)   # (layer, class, op) -> var
    op_cost: dict[tuple[int, str, str], sympy.Expr] = field(default_factory=dict)
    order_vars: dict[str, dict[tuple[str, ...], z3.BoolRef]] = field(default_factory=dict)
    # (layer, class, "POSITIONS#j") -> source -> chosen: the j-th specific-position head's sources
    sources: dict[tuple[int, str, str], dict[object, z3.BoolRef]] = field(default_factory=dict)
    # every specific-position head a class runs itself: (acts, size gathered, gathers a whole sequence)
    gathers: list[tuple[z3.BoolRef, z3.ArithRef, z3.BoolRef]] = field(default_factory=list)
    gather_cap: z3.ArithRef | None = None  # bounds every gathered size when the levels order sizes
    gather_limits: list[int | None] = field(default_factory=list)  # per level: the largest size costing
                                                                   # no more (None: grows with T)
    tracked: dict[str, z3.BoolRef] = field(default_factory=dict)  # constraint name -> assumption literal
    levels: list[sympy.Expr] = field(default_factory=list)
    level_vars: list[z3.BoolRef] = field(default_factory=list)
    fixed: tuple = ()
    offsets: tuple = ()
    anchors: dict[str, ex.FixedIndex] = field(default_factory=dict)   # class name -> its fixed position
    kept: dict[tuple[int, str, str], z3.BoolRef] = field(default_factory=dict)  # anchor keeps an input op


# ---- reading what a node's score needs ------------------------------------------------------------
def _needs(tree, node: str) -> tuple[tuple, tuple, bool]:
    """(key needs, query needs, key impossible) of a selection node, from the leaves of its ranking terms."""
    data = tree.nodes[node]
    var, key, query, impossible = data["var"], [], [], False
    # the query terms take no part in the comparison, but the position making the selection computes the
    # node's value in the same step, so what they read must be held there too (docs/model.md, 4.3)
    for _, term in data["key_terms"] + data["query_terms"]:
        for leaf in walk(term):
            ref = leaf.index if isinstance(leaf, ex.Content) else leaf
            if isinstance(ref, (GroupRef, NodeRef)):
                if isinstance(ref, NodeRef):
                    child, need = ref.node, ("node", ref.node, None)
                else:
                    child, need = outermost(tree, ref.group), ("node", None, ref.group)
                bound = tree.nodes[child]["bound"]
                if var in bound:
                    key.append(need)
                    impossible |= bool(bound - {var})
                else:
                    query.append(need)
            elif isinstance(ref, ex.FixedIndex):
                query.append(("fixed", ref))
            elif isinstance(ref, ex.OffsetIndex):
                (key if ref.name == var else query).append(("offset", ref.offset))
    return tuple(key), tuple(query), impossible


def _key(group: str, order: tuple[str, ...], var: str) -> str:
    return f"{group}.{'-'.join(order) if len(order) > 1 else ''}.{var}"


# Builders that stay inside standard SMT-LIB (no empty and/or, no pseudo-Boolean extensions) when the
# encoding is exported; z3's native cardinality constraints are used otherwise, as they solve faster.
def conj(items) -> z3.BoolRef:
    items = list(items)
    return z3.BoolVal(True) if not items else items[0] if len(items) == 1 else z3.And(items)


def disj(items) -> z3.BoolRef:
    items = list(items)
    return z3.BoolVal(False) if not items else items[0] if len(items) == 1 else z3.Or(items)


def total(terms) -> z3.ArithRef:
    terms = list(terms)
    return z3.IntVal(0) if not terms else terms[0] if len(terms) == 1 else z3.Sum(terms)


def at_most(literals, bound: int, portable: bool) -> z3.BoolRef:
    literals = list(literals)
    if len(literals) <= bound:
        return z3.BoolVal(True)
    if portable:
        return z3.Sum([z3.If(b, 1, 0) for b in literals]) <= bound
    return z3.PbLe([(b, 1) for b in literals], bound)


def exactly_one(literals, portable: bool) -> z3.BoolRef:
    literals = list(literals)
    if len(literals) == 1:
        return literals[0]
    if portable:
        return z3.Sum([z3.If(b, 1, 0) for b in literals]) == 1
    return z3.PbEq([(b, 1) for b in literals], 1)


def _node_infos(target) -> tuple[dict[str, NodeInfo], dict[str, dict[tuple[str, ...], str]], object]:
    base = comparison_tree(target)
    infos: dict[str, NodeInfo] = {}
    outer: dict[str, dict[tuple[str, ...], str]] = {}
    for gid, group in base.graph["groups"].items():
        outer[gid] = {}
        for order in group.orders:
            tree = comparison_tree(target, {gid: order})
            for i, var in enumerate(order):
                n = f"{gid}.{var}"
                data = tree.nodes[n]
                key_needs, query_needs, impossible = _needs(tree, n) if data["kind"] != "aggregate" else ((), (), False)
                k = _key(gid, order, var)
                infos[k] = NodeInfo(k, n, gid, order, data["kind"], data["bound"], data["k"],
                                    not isinstance(data["domain"], ex.AllPositions), key_needs, query_needs,
                                    impossible,
                                    # an argmin/argmax may be read as x[...]: the chosen content must be held
                                    vacuous=not data["key_terms"] and data["sense"] in ("min", "max", "kth"))
                if i == 0:
                    outer[gid][order] = k
    return infos, outer, base


def _resolve(enc: Encoding, need, info: NodeInfo):
    """The versioned node key a ('node', inner, group) need refers to, as a z3 selector over orders."""
    _, inner, group = need
    if inner is not None:  # the next node of the same group, under the same order
        return [(z3.BoolVal(True), _key(info.group, info.order, inner.split(".", 1)[1]))]
    return [(enc.order_vars[group][o], k) for o, k in enc.outer[group].items()]


# ---- the encoding -----------------------------------------------------------------------------------
def encode(target, arch, law: cost.DecodeLaw = cost.DecodeLaw.SEED, seq_len: int | None = None,
           anchors: bool = True, portable: bool = False) -> Encoding:
    """Build the constraints for ``target`` on ``arch``; the solver adds the level assumptions.

    ``anchors=False`` leaves out the fixed positions that may override heads: a smaller encoding whose
    programs are programs of the full one (the solver tries it first and falls back when it says no)."""
    infos, outer, base = _node_infos(target)
    solver = z3.Solver()
    enc = Encoding(target, arch, solver, infos, outer)
    L, pe = arch.layers, arch.positional
    enc.fixed, enc.offsets = position_reads(base)

    def track(name: str, formula) -> None:
        lit = enc.tracked.setdefault(name, z3.Bool(f"track:{name}"))
        solver.add(z3.Implies(lit, formula))

    # orders: exactly one per group
    for gid, per_order in outer.items():
        enc.order_vars[gid] = {o: z3.Bool(f"ord:{gid}:{','.join(o)}") for o in per_order}
        solver.add(exactly_one(enc.order_vars[gid].values(), portable))

    # input classes: every input position ("in"), and with positions, anchors: fixed positions 1..K whose
    # heads may override what the other inputs do (K = the selections with no bound variable, the only
    # work a fixed position can do for a generic input; in the last layer such work never reaches out)
    n_free = len({i.group for i in infos.values() if not i.bound and i.kind in ("top1", "kth")})
    fixed_anchors = [ex.FixedIndex(i) for i in range(1, n_free + 1)] if anchors and pe and L >= 2 else []
    enc.anchors = {f"a{q.position}": q for q in fixed_anchors}
    inputs = [IN] + list(enc.anchors)
    classes = inputs + [OUT]
    fixed_sources = sorted(set(enc.fixed) | set(fixed_anchors), key=str)
    source_class = {q: next((a for a, p in enc.anchors.items() if p == q), IN) for q in fixed_sources}

    def references(c: str) -> list:
        """What a specific-position head at class ``c`` may gather: fixed positions (the anchors too) and,
        at an input position, offsets from it."""
        return list(fixed_sources) + ([Offset(k) for k in enc.offsets] if c != OUT else [])

    def member_sets(l: int, c: str) -> list[tuple[str | None, dict]]:
        """The specific-position heads acting at ``c`` in layer ``l``, each with its sources: the class's
        own (with the head's name), and at an anchor the inputs' heads it keeps (``None``)."""
        own = [(name, srcs) for (ll, cc, name), srcs in enc.sources.items() if ll == l and cc == c]
        kept = [(None, {q: z3.And(enc.kept[(l, c, name)], v) for q, v in srcs.items()})
                for (ll, cc, name), srcs in enc.sources.items()
                if ll == l and cc == IN and (l, c, name) in enc.kept]
        return own + kept

    all_ = {(c, l): z3.Bool(f"all:{c}:{l}") for c in classes for l in range(L + 1)}
    know = {(c, l, n): z3.Bool(f"know:{c}:{l}:{n}") for c in classes for l in range(L + 1) for n in infos}
    xfix = {(c, l, q): z3.Bool(f"xfix:{c}:{l}:{q}") for c in classes for l in range(L + 1) for q in enc.fixed}
    xoff = {(c, l, k): z3.Bool(f"xoff:{c}:{l}:{k}") for c in inputs for l in range(L + 1) for k in enc.offsets}

    # layer 0: an input position holds its own token; the output token holds nothing
    initial = [z3.Not(all_[(c, 0)]) for c in classes]
    initial += [z3.Not(know[(c, 0, n)]) for c in classes for n, i in infos.items() if not i.vacuous]
    initial += [v == (c in enc.anchors and enc.anchors[c] == q) for (c, l, q), v in xfix.items() if l == 0]
    initial += [z3.Not(v) for (c, l, k), v in xoff.items() if l == 0]
    track("initial", conj(initial))

    positional_ok = z3.Bool("allow:positional")
    if not pe:  # an assumption, so that an unsat core can say when positions were the obstacle
        enc.tracked["positional"] = z3.Not(positional_ok)

    def admissible(info: NodeInfo, c: str) -> bool:
        return info.kind in ("top1", "kth") and (len(info.bound) <= 1 if c != OUT else not info.bound)

    def holds_need(c: str, l: int, need, info: NodeInfo):
        kind = need[0]
        if kind == "fixed":
            return xfix[(c, l, need[1])]
        if kind == "offset":
            return xoff[(c, l, need[1])] if c != OUT else z3.BoolVal(False)
        return disj([z3.And(sel, know[(c, l, k)]) for sel, k in _resolve(enc, need, info)])

    for key, info in infos.items():  # a comparison of ties is known wherever its query side is held
        for c in classes:
            vacuous_known = conj([holds_need(c, 0, nd, info) for nd in info.query_needs])
            if info.vacuous:
                solver.add(know[(c, 0, key)] == (vacuous_known if admissible(info, c) else z3.BoolVal(False)))

    def ready(info: NodeInfo, c: str, l: int):
        """Can class ``c`` make node ``info`` with a retrieval head in layer ``l``?"""
        query = z3.Or(all_[(c, l - 1)], conj([holds_need(c, l - 1, nd, info) for nd in info.query_needs]))
        keys = []
        for k in inputs:  # every input position is a candidate, the anchors too
            met = conj([holds_need(k, l - 1, nd, info) for nd in info.key_needs])
            keys.append(z3.Or(all_[(k, l - 1)], z3.BoolVal(False) if info.impossible_key else met))
        gate = positional_ok if info.restricted else z3.BoolVal(True)
        return conj([query, conj(keys), gate])

    def common(l: int, fact) -> z3.BoolRef:
        """A fact every input position has: what a retrieval gains whoever the winner is."""
        return conj([fact(k, l) for k in inputs])

    for l in range(1, L + 1):
        h = arch.heads[l - 1]
        n_head = arch.head_dim(l)
        effective: dict[tuple[str, str], z3.BoolRef] = {}  # (class, op name) -> the op acts there
        for c in [IN, OUT] + inputs[1:]:
            used = []
            names = []
            for key, info in infos.items():
                if admissible(info, c):
                    mode = Mode.KTH if info.kind == "kth" else Mode.RETRIEVE
                    names.append((f"{mode.name}:{key}", info, mode))
            names.append(("AGGREGATE", None, Mode.AGGREGATE))
            # specific-position heads: as many as there are sources (a head per block of a partition)
            refs = references(c)
            slots = [f"POSITIONS#{j}" for j in range(1, min(h, len(refs)) + 1)]
            for name in slots:
                enc.sources[(l, c, name)] = {q: z3.Bool(f"src:{l}:{c}:{name[10:]}:{_ref_name(q)}")
                                             for q in refs}
                names.append((name, None, Mode.POSITIONS))
            for name, info, mode in names:
                var = z3.Bool(f"op:{l}:{c}:{name}")
                enc.ops[(l, c, name)] = var
                if mode is Mode.KTH:
                    enc.op_cost[(l, c, name)] = cost.kth_retrieval(info.k, n_head)
                elif mode is Mode.RETRIEVE:
                    enc.op_cost[(l, c, name)] = cost.retrieval()
                elif mode is Mode.AGGREGATE:
                    enc.op_cost[(l, c, name)] = cost.decode(T, arch.input_dim, arch.width, law)
                if info is not None:
                    solver.add(z3.Implies(var, z3.And(enc.order_vars[info.group][info.order], ready(info, c, l))))
                used.append(var)
                acts = var
                if c in enc.anchors and (l, IN, name) in enc.ops:
                    # an anchor keeps the inputs' operation on a head unless it overrides that head
                    keep = z3.Bool(f"keep:{l}:{c}:{name}")
                    enc.kept[(l, c, name)] = keep
                    solver.add(z3.Implies(keep, enc.ops[(l, IN, name)]))
                    used.append(keep)
                    acts = z3.Or(var, keep)
                effective[(c, name)] = acts
            for j, name in enumerate(slots):
                srcs = enc.sources[(l, c, name)]
                solver.add(enc.ops[(l, c, name)] == disj(srcs.values()))
                solver.add(z3.Implies(enc.ops[(l, c, name)], positional_ok))
                if j:  # one canonical partition: each block starts after the previous block's first source
                    before = enc.sources[(l, c, slots[j - 1])]
                    for i, q in enumerate(refs):
                        solver.add(z3.Implies(srcs[q], disj([before[p] for p in refs[:i]])))
            for q in refs:  # a source in one block at most: a second copy gathers nothing new
                solver.add(at_most([enc.sources[(l, c, name)][q] for name in slots], 1, portable))
            track(f"budget:{l}:{c}", at_most(used, h, portable))

        for c in classes:
            acting = {name: v for (cc, name), v in effective.items() if cc == c}
            retrievals = [v for name, v in acting.items() if name.startswith(("RETRIEVE", "KTH"))]
            gathered = member_sets(l, c)
            chosen = {q: disj([m[q] for _, m in gathered]) for q in references(c)}
            agg = acting["AGGREGATE"]
            any_ret = disj(retrievals)
            fixed_from = {q: v for q, v in chosen.items() if not isinstance(q, Offset)}
            gained_all = [z3.And(any_ret, common(l - 1, lambda k, ll: all_[(k, ll)]))]
            gained_all += [z3.And(v, all_[(source_class[q], l - 1)]) for q, v in fixed_from.items()]
            gained_all += [z3.And(v, all_[(IN, l - 1)]) for q, v in chosen.items() if isinstance(q, Offset)]
            solver.add(all_[(c, l)] == disj([all_[(c, l - 1)], agg] + gained_all))
            for key, info in infos.items():
                if info.kind == "aggregate":
                    solver.add(know[(c, l, key)] == all_[(c, l)])
                    continue
                if not admissible(info, c):
                    solver.add(z3.Not(know[(c, l, key)]))
                    continue
                gains = [know[(c, l - 1, key)], all_[(c, l)]]
                if info.vacuous:  # a comparison of ties needs no candidate: the first one is chosen
                    gains.append(conj([holds_need(c, l, nd, info) for nd in info.query_needs]))
                mode = "KTH" if info.kind == "kth" else "RETRIEVE"
                if f"{mode}:{key}" in acting:
                    gains.append(acting[f"{mode}:{key}"])
                if not info.bound:  # binding-free knowledge travels with any copy of a position's holdings
                    gains.append(z3.And(any_ret, common(l - 1, lambda k, ll, key=key: know[(k, ll, key)])))
                    gains += [z3.And(v, know[(source_class[q], l - 1, key)]) for q, v in fixed_from.items()]
                    gains += [z3.And(v, know[(IN, l - 1, key)]) for q, v in chosen.items() if isinstance(q, Offset)]
                solver.add(know[(c, l, key)] == disj(gains))
            for q in enc.fixed:
                gains = [xfix[(c, l - 1, q)], all_[(c, l)], chosen.get(q, z3.BoolVal(False)),
                         z3.And(any_ret, common(l - 1, lambda k, ll, q=q: xfix[(k, ll, q)]))]
                gains += [z3.And(v, xfix[(source_class[p], l - 1, q)]) for p, v in fixed_from.items()]
                solver.add(xfix[(c, l, q)] == disj(gains))
            if c != OUT:
                for k in enc.offsets:
                    solver.add(xoff[(c, l, k)] == z3.Or(xoff[(c, l - 1, k)], all_[(c, l)], chosen[Offset(k)]))

    if enc.sources:
        _add_sizes(enc, classes, inputs, source_class, member_sets)

    # the goal: the output token computes the target from what it holds after the last layer
    needs = []
    for leaf in walk(base.graph["output"]):
        ref = leaf.index if isinstance(leaf, ex.Content) else leaf
        if isinstance(ref, GroupRef):
            needs.append(disj([z3.And(enc.order_vars[ref.group][o], know[(OUT, L, k)])
                                for o, k in outer[ref.group].items()]))
        elif isinstance(ref, ex.FixedIndex):
            needs.append(xfix[(OUT, L, ref)])
    reachable = z3.Or(all_[(OUT, L)], conj(needs))
    if base_needs_positions(target):  # without positions even a token holding everything cannot tell them apart
        reachable = z3.And(reachable, positional_ok)
    track("goal", reachable)
    _add_levels(enc, law, seq_len)
    return enc


def _ref_name(q) -> str:
    return f"off{q.offset}" if isinstance(q, Offset) else str(q)


def _add_sizes(enc: Encoding, classes: list[str], inputs: list[str], source_class: dict, member_sets) -> None:
    """``size[c,l]``: ``|I(c, l)|`` as ``program.set_sizes`` counts it (an upper bound: each gain in full,
    a retrieval gaining the largest input class), and ``whole[c,l]``: that count is ``T``. Only encodings
    with specific-position heads need them, whose cost is the decoding of what they gather."""
    solver = enc.solver
    size = {(c, 0): z3.IntVal(0 if c == OUT else 1) for c in classes}
    whole = {(c, 0): z3.BoolVal(False) for c in classes}
    for l in range(1, enc.arch.layers + 1):
        widest = size[(inputs[0], l - 1)]
        for k in inputs[1:]:
            widest = z3.If(size[(k, l - 1)] > widest, size[(k, l - 1)], widest)
        any_whole = disj([whole[(k, l - 1)] for k in inputs])
        for c in classes:
            names = {name for (ll, cc, name) in [*enc.ops, *enc.kept] if ll == l and cc == c}

            def acts(name: str, c=c, l=l):
                own, kept = enc.ops.get((l, c, name)), enc.kept.get((l, c, name))
                return disj([v for v in (own, kept) if v is not None])

            gains, wholes = [], [acts("AGGREGATE")]
            for name in sorted(names):
                if name.startswith(("RETRIEVE", "KTH")):
                    gains.append(z3.If(acts(name), widest, 0))
                    wholes.append(z3.And(acts(name), any_whole))
            for name, members in member_sets(l, c):
                gathered = total(z3.If(m, size[(source_class.get(q, IN), l - 1)], 0) for q, m in members.items())
                everything = disj([z3.And(m, whole[(source_class.get(q, IN), l - 1)]) for q, m in members.items()])
                gains.append(gathered)
                wholes.append(everything)
                if name is not None:  # charged where the head is the class's own (a kept head: at the inputs)
                    enc.gathers.append((enc.ops[(l, c, name)], gathered, everything))
            size[(c, l)], whole[(c, l)] = z3.Int(f"size:{c}:{l}"), z3.Bool(f"whole:{c}:{l}")
            solver.add(size[(c, l)] == total([size[(c, l - 1)]] + gains))
            solver.add(whole[(c, l)] == disj([whole[(c, l - 1)]] + wholes))


def _add_levels(enc: Encoding, law: cost.DecodeLaw, seq_len: int | None) -> None:
    """Cost levels: every operation implies that its level is allowed.

    A specific-position head costs the decoding of what it gathers (``_add_sizes``): of a whole sequence,
    the global aggregation's level; of a bounded set, a cost that grows with the set. Then one integer
    ``gather_cap`` bounds every gathered size, and excluding a level excludes the sizes that cost as much:
    at the cheapest allowed prefix of levels the solver then lowers the cap (``solver.py``), which makes the
    exponent exact. With a width that grows with ``T`` every bounded set costs alike as ``T`` grows."""
    arch = enc.arch
    candidates = set(enc.op_cost.values())
    everything = cost.decode(T, arch.input_dim, arch.width, law)
    width = cost.at(arch.width, seq_len)
    by_size = not width.has(T)
    bounded_gather = cost.decode(1, arch.input_dim, arch.width, law)
    if enc.gathers:
        candidates |= {everything} | (set() if by_size else {bounded_gather})
    key = (lambda e: cost.asymptotic_key(e)) if seq_len is None else (lambda e: (float(cost.at(e, seq_len)), 0.0))
    enc.levels = sorted(candidates, key=key)
    enc.level_vars = [z3.Bool(f"level:{i}") for i in range(len(enc.levels))]
    level_of = {e: i for i, e in enumerate(enc.levels)}
    for op, var in enc.ops.items():
        if op in enc.op_cost:
            enc.solver.add(z3.Implies(var, enc.level_vars[level_of[enc.op_cost[op]]]))
    for acts, gathered, whole in enc.gathers:
        enc.solver.add(z3.Implies(z3.And(acts, whole), enc.level_vars[level_of[everything]]))
        if not by_size:
            enc.solver.add(z3.Implies(z3.And(acts, z3.Not(whole)), enc.level_vars[level_of[bounded_gather]]))
    if not enc.gathers or not by_size:
        return
    cap = enc.gather_cap = z3.Int("gather:cap")
    for acts, gathered, whole in enc.gathers:
        enc.solver.add(z3.Implies(z3.And(acts, z3.Not(whole)), gathered <= cap))
    for var, level in zip(enc.level_vars, enc.levels):
        value = cost.at(level, seq_len)
        if value.has(T):  # grows with T: above every bounded set
            enc.gather_limits.append(None)
            continue
        # the size n whose decoding costs exactly this level: decode(n) < level  <=>  n < ceiling(it)
        limit = (value + 1 if cost.DecodeLaw(law) is cost.DecodeLaw.SEED else value) * width / arch.input_dim
        enc.gather_limits.append(int(sympy.floor(limit)))
        enc.solver.add(z3.Implies(z3.Not(var), cap < int(sympy.ceiling(limit))))


def _op(enc: Encoding, model, l: int, c: str, name: str) -> Op:
    if name == "AGGREGATE":
        return Op(Mode.AGGREGATE)
    if name.startswith("POSITIONS"):
        chosen = tuple(q for q, v in enc.sources[(l, c, name)].items()
                       if z3.is_true(model.eval(v, model_completion=True)))
        return Op(Mode.POSITIONS, positions=chosen)
    mode_name, key = name.split(":", 1)
    return Op(Mode[mode_name], node=enc.nodes[key].node)


def extract(enc: Encoding, model: z3.ModelRef) -> Program:
    """The witness program of a model: head numbers assigned in a fixed order within each class; an anchor
    overrides the heads whose input operation it does not keep (with its own operation, or idle)."""
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
            free += list(range(len(heads_of_input) + 1, enc.arch.heads[l - 1] + 1))
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
