"""The parts of a compiled witness's heads, one builder per kind (``head_parts``): what each head's query, key and
value read, and what every acting class holds after it (``current``: class -> fact -> ``Where``). No torch here.
"""
from __future__ import annotations

import dataclasses
import functools

from experiments.compilation.factors import is_count, node_of, selection
from experiments.compilation.facts import (
    COUNT,
    INPUT,
    OUTPUT,
    Fact,
    Gathered,
    HeadRef,
    Kind,
    Role,
    SlotId,
    Where,
    average,
    key,
)
from experiments.compilation.head_plan import (
    HeadKind,
    HeadPlan,
    average_width,
    fact_width,
    fixed_key,
)
from experiments.compilation.routes import knows
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, walk
from infoflow_smt.model.program import Mode, Offset


def common_facts(locations: dict) -> dict[Fact, Where]:
    """The facts every input position holds at the same place, read as they are (what any candidate can hand
    over): tokens and values; a winner's candidate features and global values are copied otherwise."""
    inputs = [locs for c, locs in locations.items() if c != OUTPUT]
    return {f: where for f, where in inputs[0].items()
            if f.kind in (Kind.TOKEN, Kind.VALUE) and all(locs.get(f) == where for locs in inputs[1:])}


def _kind(a) -> HeadKind:
    if a.op.mode is Mode.POSITIONS:
        if any(isinstance(q, Offset) for q in a.op.positions):
            return HeadKind.MIXED if len(a.op.positions) > 1 else HeadKind.OFFSET
        return HeadKind.POSITIONS
    return {Mode.RETRIEVE: HeadKind.RETRIEVE, Mode.AVERAGE: HeadKind.AVERAGE}[a.op.mode]


def head_parts(layer, head, acts, before, current, tree, d, kept, realization=None, causal=False) -> list[HeadPlan]:
    """One part per kind of thing the head does at its position classes, side by side in its coordinates:
    a class's query is zero outside its own part, so each class sees only what it asks for."""
    groups: dict = {}
    for c, a in acts.items():
        groups.setdefault(_kind(a), {})[c] = a
    parts, query_at, value_at = [], 0, 0
    builders = {HeadKind.RETRIEVE: functools.partial(_retrieve_plan, realization=realization),
                HeadKind.POSITIONS: _positions_plan, HeadKind.OFFSET: functools.partial(_offset_plan, causal=causal),
                HeadKind.MIXED: functools.partial(_mixed_plan, causal=causal), HeadKind.AVERAGE: _average_plan}
    for kind in HeadKind:
        if kind in groups:
            part = "" if len(groups) == 1 else kind.value[0]
            ref = HeadRef(layer, head, part)
            hp = builders[kind](ref, groups[kind], before, current, tree, d, kept, len(groups) == 1)
            hp = dataclasses.replace(hp, part=part, query_at=query_at, value_at=value_at)
            query_at, value_at = query_at + hp.query_width(), value_at + hp.value_width()
            parts.append(hp)
    return parts


def _sorted_facts(facts, d: int, tree) -> tuple[tuple[Fact, int], ...]:
    return tuple((f, fact_width(f, d, tree)) for f in sorted(facts, key=lambda f: (len(f.route), str(f))))


def _retrieve_plan(ref: HeadRef, acts, before, current, tree, d, kept, alone, realization=None) -> HeadPlan:
    values = _sorted_facts((f for f in common_facts(before) if kept is None or f in kept), d, tree)
    nodes = sorted({a.op.node for a in acts.values()})
    hosts = {n: [c for c, a in acts.items() if a.op.node == n] for n in nodes}
    selections = tuple(selection(n, tree, d, alone and len(nodes) == 1,
                                  lambda g, n=n: all(holds(c, before[c], g, tree) for c in hosts[n]), realization)
                       for n in nodes)
    keys, at = {}, 0
    for sel in selections:
        keys[sel.node], at = at, at + sel.key_width
    copies = {sel.node for sel in selections if sel.copies_features}
    slot = SlotId(Role.HEAD, ref)
    for c, a in acts.items():
        if a.op.node in copies:
            current[c][key(a.op.node)] = Where(slot, keys[a.op.node])
        offset = at
        for f, w in values:
            current[c][f.via(a.op.node)] = Where(slot, offset)
            offset += w
    shared = _shared(before, current, acts, tree, d, kept, slot, at + sum(w for _, w in values), 1.0)
    return HeadPlan(ref.layer, ref.head, HeadKind.RETRIEVE, selections, tuple((c, a.op.node) for c, a in acts.items()),
                    values, shared=shared)


def _shared(before, current, acts, tree, d, kept, slot, at, scale) -> tuple:
    """The global values (averages over every position and the 1/(T+1) beside them) that every input
    position holds and some acting class lacks: a head copies them from any source, since they are the same
    at every position. Each lands at ``at`` onwards, under its own name."""
    inputs = [locs for c, locs in before.items() if c != OUTPUT]
    held = sorted({f for f in inputs[0] if f.kind.global_ and all(f in locs for locs in inputs)}, key=str)
    wanted = [f for f in held if (kept is None or f in kept) and any(f not in current[c] for c in acts)]
    shared = []
    for f in wanted:
        width = fact_width(f, d, tree)
        for c in acts:
            current[c].setdefault(f, Where(slot, at, scale))
        shared.append((f, width))
        at += width
    return tuple(shared)


def _positions_plan(ref: HeadRef, acts, before, current, tree, d, kept, alone) -> HeadPlan:
    refs = sorted({q for a in acts.values() for q in a.op.positions}, key=fixed_key)
    blocks = tuple((q, _sorted_facts((f for f in before[q if q in before else INPUT]
                                      if f.kind in (Kind.TOKEN, Kind.VALUE) and (kept is None or (q, f) in kept)),
                                     d, tree)) for q in refs)
    starts, at = {}, 0
    for q, facts in blocks:
        starts[q] = at
        at += sum(w for _, w in facts)
    slot = SlotId(Role.SEPARATED, ref)   # gathered into the outbox's room, separated by the map after the layer
    for c, a in acts.items():
        for q in a.op.positions:
            offset = starts[q]
            for f, w in dict(blocks)[q]:
                current[c][f.via(Gathered(q))] = Where(slot, offset)
                offset += w
    gated = _gated(before, current, acts, tree, d, kept, slot, at)
    # the global values every input holds are read straight from the sources: their average is the value
    shared = _shared(before, current, acts, tree, d, kept, SlotId(Role.HEAD, ref), 0, 1.0)
    return HeadPlan(ref.layer, ref.head, HeadKind.POSITIONS, (), tuple((c, a.op.positions) for c, a in acts.items()),
                    (), blocks, shared=shared, gated=gated)


def _gated(before, current, acts, tree, d, kept, slot, at) -> tuple:
    """The global values a gathered source holds and not every input position does: that source sends them
    in the outbox, behind its flag (one source per value, the first that holds it), and the reader scales
    them by k as the tokens. Only where every acting class gathers the same k positions."""
    gathers = {a.op.positions for a in acts.values()}
    if len(gathers) != 1:
        return ()
    positions = next(iter(gathers))
    inputs = [locs for c, locs in before.items() if c != OUTPUT]
    gated = []
    for q in sorted((q for q in positions if q in before), key=fixed_key):
        for f in sorted((f for f in before[q] if f.kind.global_), key=str):
            if any(f == g for g, _, _ in gated) or all(f in locs for locs in inputs) \
                    or (kept is not None and f not in kept) or all(f in current[c] for c in acts):
                continue
            width = fact_width(f, d, tree)
            for c in acts:
                current[c].setdefault(f, Where(slot, at))
            gated.append((f, width, q))
            at += width
    return tuple(gated)


def _one_gather(ref: HeadRef, acts) -> tuple:
    gathers = {frozenset(a.op.positions) for a in acts.values()}
    if len(gathers) > 1:
        raise CompileRefusal("mode", f"layer {ref.layer}, head {ref.head}", f"layer {ref.layer}, head {ref.head} "
                             "gathers an offset and different positions at different position classes")
    return tuple(sorted(next(iter(gathers)), key=fixed_key))


def _offset_plan(ref: HeadRef, acts, before, current, tree, d, kept, alone, causal=False) -> HeadPlan:
    """A head that copies the facts of position ``p + offset``: a score peaked on that relative position
    (rotated positional features), its value the source's facts read where every input position keeps them.
    Under a causal mask a position whose source is outside the sequence cannot see the sink (the output
    token) and attends to another: the head also copies the source's positional features (``gate``), and the
    map after the layer keeps what came from the source (``Role.SEPARATED``), 0 elsewhere."""
    (offset,) = _one_gather(ref, acts)
    facts = _sorted_facts((f for f in common_facts(before) if kept is None or (offset, f) in kept), d, tree)
    slot = SlotId(Role.SEPARATED if causal else Role.HEAD, ref)
    for c in acts:
        at = 0
        for f, w in facts:
            current[c][f.via(Gathered(offset))] = Where(slot, at)
            at += w
    return HeadPlan(ref.layer, ref.head, HeadKind.OFFSET, (), tuple((c, a.op.positions) for c, a in acts.items()),
                    blocks=((offset, facts),), gate=causal)


def _mixed_plan(ref: HeadRef, acts, before, current, tree, d, kept, alone, causal=False) -> HeadPlan:
    """A head that gathers ``p + offset`` and fixed positions ``q_1 .. q_k``: the offset's score (rotated
    positional features, keys zeroed at every ``q_j``) and each ``q_j``'s flag peak at the same height, so the
    head mixes the sources; each ``q_j`` also sends its facts, its flag and its positional features into an
    outbox (``b_j = w_j x_j``, ``w_j``, ``w_j pos_j``). The map after the layer separates them (``Role.SEPARATED``):
    ``x_j = b_j / w_j``, and the offset's source ``(mixture - sum b_j) / (1 - sum w_j)``, or, where the weights sum
    to 1, the ``q_j`` at the offset's position (``values.Values.separated``). The positional features (``gate``)
    tell which ``q_j`` that is, and, under a causal mask, whether the mixture came from the source at all;
    with one fixed source and no mask they are not needed."""
    sources = _one_gather(ref, acts)
    offset = next(q for q in sources if isinstance(q, Offset))
    fixed = tuple(q for q in sources if not isinstance(q, Offset))
    facts = _sorted_facts((f for f in common_facts(before)
                           if kept is None or any((q, f) in kept for q in sources)), d, tree)
    hp = HeadPlan(ref.layer, ref.head, HeadKind.MIXED, (), tuple((c, a.op.positions) for c, a in acts.items()),
                  blocks=((offset, facts), *((q, facts) for q in fixed)), gate=causal or len(fixed) > 1)
    slot = SlotId(Role.SEPARATED, ref)
    for c in acts:
        for j, q in enumerate((offset, *fixed)):
            at = j * hp.block_width
            for f, w in facts:
                current[c][f.via(Gathered(q))] = Where(slot, at)
                at += w
    return hp


def _average_plan(ref: HeadRef, acts, before, current, tree, d, kept, alone) -> HeadPlan:
    """Global averaging: one uniform head over every position (the output token too, whose flag then
    arrives as 1/(T+1)) carries, for each aggregate over positions, its per-token value and its domain's
    share; the reader divides them into a sum or a mean. The averages are added onto the outbox (what every
    position sent, its per-token values), and the map after the layer subtracts what the position sent
    (``Role.SEPARATED``); only 1/(T+1) has a slot of the head's own."""
    inputs = [locs for c, locs in before.items() if c != OUTPUT]
    nodes = sorted(n for n, data in tree.nodes(data=True) if data["kind"] == "aggregate" and not data["bound"]
                   and all(_tokens_held(data["score"], data["var"], locs, tree) for locs in inputs))
    averages = tuple((n, average_width(n, tree, d)[1]) for n in nodes)
    slot, at = SlotId(Role.SEPARATED, ref), 0
    for n, w in averages:
        for c in acts:
            current[c][average(n)] = Where(slot, at)
        at += w
    for c in acts:
        current[c][COUNT] = Where(SlotId(Role.HEAD, ref), 0)
    return HeadPlan(ref.layer, ref.head, HeadKind.AVERAGE, (), tuple((c, None) for c in acts), averages=averages)


def _tokens_held(score, var: str, locations: dict, tree) -> bool:
    """Whether a position holding ``locations`` can compute an aggregate's per-token value ``score``, as far as
    other positions' tokens and selections go: ``x[var + o]`` gathered by an offset head, ``x[q]`` its own or
    gathered, a selection or average it holds. An aggregate that reads one not held yet is averaged by a
    later layer's head, where it is (the model's averaging head carries what every position holds, no more)."""
    for sub in walk(score):
        if isinstance(sub, ex.Content) and isinstance(sub.index, ex.OffsetIndex) and sub.index.name == var:
            if not any(f.last == Gathered(Offset(sub.index.offset)) for f in locations):
                return False
        elif isinstance(sub, ex.Content) and isinstance(sub.index, ex.FixedIndex):
            if not holds(None, locations, sub.index, tree):
                return False
        elif isinstance(sub, (GroupRef, NodeRef)):
            node = node_of(sub, tree)
            if not is_count(node, tree) and not holds(None, locations, node, tree):
                return False
    return True


def holds(c, locations: dict, item, tree) -> bool:
    """Whether a position of class ``c`` with these facts knows ``item``: a fixed position's token (its own, or
    gathered), or a node's value, average or winner under any of its names (``routes.knows``)."""
    if isinstance(item, ex.FixedIndex):
        return c == item or any(f.last == Gathered(item) for f in locations)
    return key(item) in locations or knows(tree, locations, item, c)
