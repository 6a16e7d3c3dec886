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
operations per class and layer; one operation of a kind is enough), which removes the symmetry between
interchangeable heads. Every joint group picks one variable order (``ord``).

Each operation carries a cost level; the solver asks for programs whose operations all stay at or below a
level, with the levels as assumptions so that an unsat core names the constraints that clash.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy
import z3

from . import cost
from . import expr as ex
from .program import Action, Mode, Offset, Op, Program
from .symbols import T
from .trees import GroupRef, NodeRef, comparison_tree, needs_positional as base_needs_positions, outermost, walk

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
    sources: dict[tuple[int, str], dict[object, z3.BoolRef]] = field(default_factory=dict)
    pos_size: dict[tuple[int, str], z3.ArithRef] = field(default_factory=dict)
    tracked: dict[str, z3.BoolRef] = field(default_factory=dict)  # constraint name -> assumption literal
    levels: list[sympy.Expr] = field(default_factory=list)
    level_vars: list[z3.BoolRef] = field(default_factory=list)
    fixed: tuple = ()
    offsets: tuple = ()


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
    return f"{group}|{','.join(order) if len(order) > 1 else ''}|{var}"


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
                                    impossible)
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
def encode(target, arch, law: cost.DecodeLaw = cost.DecodeLaw.SEED, seq_len: int | None = None) -> Encoding:
    """Build the constraints for ``target`` on ``arch``; the solver adds the level assumptions."""
    infos, outer, base = _node_infos(target)
    solver = z3.Solver()
    enc = Encoding(target, arch, solver, infos, outer)
    L, pe = arch.layers, arch.positional
    fixed, offsets = set(), set()
    for sub in [base.graph["output"]] + [g.body for g in base.graph["groups"].values()]:
        for leaf in walk(sub):
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.FixedIndex):
                fixed.add(leaf.index)
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex):
                offsets.add(leaf.index.offset)
    enc.fixed, enc.offsets = tuple(sorted(fixed, key=str)), tuple(sorted(offsets))

    def track(name: str, formula) -> None:
        lit = enc.tracked.setdefault(name, z3.Bool(f"track:{name}"))
        solver.add(z3.Implies(lit, formula))

    # orders: exactly one per group
    for gid, per_order in outer.items():
        enc.order_vars[gid] = {o: z3.Bool(f"ord:{gid}:{','.join(o)}") for o in per_order}
        solver.add(z3.PbEq([(v, 1) for v in enc.order_vars[gid].values()], 1))

    classes = (IN, OUT)
    all_ = {(c, l): z3.Bool(f"all:{c}:{l}") for c in classes for l in range(L + 1)}
    know = {(c, l, n): z3.Bool(f"know:{c}:{l}:{n}") for c in classes for l in range(L + 1) for n in infos}
    xfix = {(c, l, q): z3.Bool(f"xfix:{c}:{l}:{q}") for c in classes for l in range(L + 1) for q in enc.fixed}
    xoff = {(l, k): z3.Bool(f"xoff:{l}:{k}") for l in range(L + 1) for k in enc.offsets}
    size = {(c, l): z3.Int(f"size:{c}:{l}") for c in classes for l in range(L + 1)}

    # layer 0: an input position holds its own token; the output token holds nothing
    initial = [z3.Not(all_[(c, 0)]) for c in classes]
    initial += [z3.Not(know[(c, 0, n)]) for c in classes for n in infos]
    initial += [z3.Not(v) for (c, l, q), v in xfix.items() if l == 0]
    initial += [z3.Not(v) for (l, k), v in xoff.items() if l == 0]
    initial += [size[(IN, 0)] == 1, size[(OUT, 0)] == 0]
    track("initial", z3.And(initial))

    positional_ok = z3.Bool("allow:positional")
    if not pe:  # an assumption, so that an unsat core can say when positions were the obstacle
        enc.tracked["positional"] = z3.Not(positional_ok)

    def holds_need(c: str, l: int, need, info: NodeInfo):
        kind = need[0]
        if kind == "fixed":
            return xfix[(c, l, need[1])]
        if kind == "offset":
            return xoff[(l, need[1])] if c == IN else z3.BoolVal(False)
        return z3.Or([z3.And(sel, know[(c, l, k)]) for sel, k in _resolve(enc, need, info)])

    def ready(info: NodeInfo, c: str, l: int):
        """Can class ``c`` make node ``info`` with a retrieval head in layer ``l``?"""
        query = z3.Or(all_[(c, l - 1)], z3.And([holds_need(c, l - 1, nd, info) for nd in info.query_needs]))
        if info.impossible_key:
            keys = all_[(IN, l - 1)]
        else:
            keys = z3.Or(all_[(IN, l - 1)], z3.And([holds_need(IN, l - 1, nd, info) for nd in info.key_needs]))
        gate = positional_ok if info.restricted else z3.BoolVal(True)
        return z3.And(query, keys, gate)

    def admissible(info: NodeInfo, c: str) -> bool:
        return info.kind in ("top1", "kth") and (len(info.bound) <= 1 if c == IN else not info.bound)

    for l in range(1, L + 1):
        h = arch.heads[l - 1]
        n_head = arch.head_dim(l)
        for c in classes:
            used = []
            retrievals = []
            for key, info in infos.items():
                if not admissible(info, c):
                    continue
                mode = Mode.KTH if info.kind == "kth" else Mode.RETRIEVE
                var = z3.Bool(f"op:{l}:{c}:{mode.name}:{key}")
                enc.ops[(l, c, f"{mode.name}:{key}")] = var
                enc.op_cost[(l, c, f"{mode.name}:{key}")] = (
                    cost.kth_retrieval(info.k, n_head) if mode is Mode.KTH else cost.retrieval())
                ordered = enc.order_vars[info.group][info.order]
                solver.add(z3.Implies(var, z3.And(ordered, ready(info, c, l))))
                used.append(var)
                retrievals.append(var)
            agg = z3.Bool(f"op:{l}:{c}:AGGREGATE")
            enc.ops[(l, c, "AGGREGATE")] = agg
            enc.op_cost[(l, c, "AGGREGATE")] = cost.decode(T, arch.input_dim, arch.width, law)
            used.append(agg)
            # specific-position aggregation: one head gathering a chosen set of fixed positions / offsets
            srcs = {q: z3.Bool(f"src:{l}:{c}:{q}") for q in enc.fixed}
            if c == IN:
                srcs.update({Offset(k): z3.Bool(f"src:{l}:{c}:off{k}") for k in enc.offsets})
            enc.sources[(l, c)] = srcs
            posagg = z3.Bool(f"op:{l}:{c}:POSITIONS")
            if srcs:
                enc.ops[(l, c, "POSITIONS")] = posagg
                used.append(posagg)
                solver.add(posagg == z3.Or(list(srcs.values())))
                solver.add(z3.Implies(posagg, positional_ok))
                enc.pos_size[(l, c)] = z3.Sum([z3.If(v, size[(IN, l - 1)], 0) for v in srcs.values()])
            else:
                solver.add(z3.Not(posagg))
            track(f"budget:{l}:{c}", z3.PbLe([(u, 1) for u in used], h))

            any_ret = z3.Or(retrievals) if retrievals else z3.BoolVal(False)
            from_in = z3.Or(any_ret, posagg)  # operations that copy an input position's holdings
            solver.add(all_[(c, l)] == z3.Or(all_[(c, l - 1)], agg, z3.And(from_in, all_[(IN, l - 1)])))
            for key, info in infos.items():
                gains = [know[(c, l - 1, key)], all_[(c, l)]] if info.kind != "aggregate" else [all_[(c, l)]]
                op = enc.ops.get((l, c, f"{'KTH' if info.kind == 'kth' else 'RETRIEVE'}:{key}"))
                if op is not None:
                    gains.append(op)
                if not info.bound and info.kind != "aggregate":
                    gains.append(z3.And(from_in, know[(IN, l - 1, key)]))
                if c == IN and info.bound:
                    gains = gains if admissible(info, IN) or info.kind == "aggregate" else [z3.BoolVal(False)]
                if c == OUT and info.bound:
                    gains = [z3.BoolVal(False)]
                solver.add(know[(c, l, key)] == z3.Or(gains))
            for q in enc.fixed:
                solver.add(xfix[(c, l, q)] == z3.Or(xfix[(c, l - 1, q)], all_[(c, l)], srcs[q],
                                                    z3.And(from_in, xfix[(IN, l - 1, q)])))
            gathered = [z3.If(r, size[(IN, l - 1)], 0) for r in retrievals]
            solver.add(size[(c, l)] == size[(c, l - 1)] + z3.Sum(gathered + [enc.pos_size.get((l, c), 0)]))
        for k in enc.offsets:
            solver.add(xoff[(l, k)] == z3.Or(xoff[(l - 1, k)], all_[(IN, l)], enc.sources[(l, IN)][Offset(k)]))

    # the goal: the output token computes the target from what it holds after the last layer
    needs = []
    for leaf in walk(base.graph["output"]):
        ref = leaf.index if isinstance(leaf, ex.Content) else leaf
        if isinstance(ref, GroupRef):
            needs.append(z3.Or([z3.And(enc.order_vars[ref.group][o], know[(OUT, L, k)])
                                for o, k in outer[ref.group].items()]))
        elif isinstance(ref, ex.FixedIndex):
            needs.append(xfix[(OUT, L, ref)])
    reachable = z3.Or(all_[(OUT, L)], z3.And(needs))
    if base_needs_positions(target):  # without positions even a token holding everything cannot tell them apart
        reachable = z3.And(reachable, positional_ok)
    track("goal", reachable)
    enc.all, enc.know, enc.xfix, enc.size = all_, know, xfix, size  # type: ignore[attr-defined]
    _add_levels(enc, law, seq_len)
    return enc


def _add_levels(enc: Encoding, law: cost.DecodeLaw, seq_len: int | None) -> None:
    """Cost levels: every operation implies that its level is allowed."""
    arch = enc.arch
    candidates = set(enc.op_cost.values())
    pos_ops = [(key, var) for key, var in enc.ops.items() if key[2] == "POSITIONS"]
    max_sources = max((len(enc.sources[(l, c)]) for (l, c, _), _ in pos_ops), default=0)
    bound_size = 1
    for h in arch.heads:
        bound_size *= (1 + h + max_sources)
    if pos_ops:
        candidates |= {cost.decode(m, arch.input_dim, arch.width, law) for m in range(1, bound_size + 1)}
    key = (lambda e: cost.asymptotic_key(e)) if seq_len is None else (lambda e: (float(cost.at(e, seq_len)), 0.0))
    enc.levels = sorted(candidates, key=key)
    enc.level_vars = [z3.Bool(f"level:{i}") for i in range(len(enc.levels))]
    level_of = {e: i for i, e in enumerate(enc.levels)}
    for (l, c, name), var in enc.ops.items():
        if name == "POSITIONS":
            # the decode cost of the gathered set: allowed at level i when its size keeps it there
            for i, lvl in enumerate(enc.levels):
                fits = [m for m in range(1, bound_size + 1)
                        if key(cost.decode(m, arch.input_dim, arch.width, law)) <= key(lvl)]
                limit = max(fits, default=0)
                enc.solver.add(z3.Implies(z3.And(var, z3.Not(z3.Or(enc.level_vars[i:]))), enc.pos_size[(l, c)] <= limit))
            enc.solver.add(z3.Implies(var, enc.pos_size[(l, c)] <= bound_size))
            continue
        enc.solver.add(z3.Implies(var, enc.level_vars[level_of[enc.op_cost[(l, c, name)]]]))


def level_assumptions(enc: Encoding, max_level: int) -> list[z3.BoolRef]:
    """Assumptions allowing exactly the levels ``0..max_level``."""
    return [z3.Not(v) for v in enc.level_vars[max_level + 1:]]


def extract(enc: Encoding, model: z3.ModelRef) -> Program:
    """The witness program of a model: head numbers assigned in a fixed order within each class."""
    actions = []
    for l in range(1, enc.arch.layers + 1):
        for c, where in ((IN, "input"), (OUT, "output")):
            head = 0
            for (ll, cc, name), var in sorted(enc.ops.items(), key=lambda kv: kv[0][2]):
                if ll != l or cc != c or not z3.is_true(model.eval(var, model_completion=True)):
                    continue
                head += 1
                if name == "AGGREGATE":
                    op = Op(Mode.AGGREGATE)
                elif name == "POSITIONS":
                    chosen = tuple(q for q, v in enc.sources[(l, c)].items()
                                   if z3.is_true(model.eval(v, model_completion=True)))
                    op = Op(Mode.POSITIONS, positions=chosen)
                else:
                    mode_name, key = name.split(":", 1)
                    op = Op(Mode[mode_name], node=enc.nodes[key].node)
                actions.append(Action(l, head, where, op))
    order = []
    for gid, per_order in enc.order_vars.items():
        for o, v in per_order.items():
            if z3.is_true(model.eval(v, model_completion=True)) and len(o) > 1:
                order.append((gid, o))
    return Program(tuple(actions), tuple(order), enc.arch.layers)
