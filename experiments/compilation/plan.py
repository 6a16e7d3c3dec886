"""The plan of a compiled witness: what every position holds after each layer and what each head's query, key
and value read (``Flow``). No torch here (``layout`` places the facts in the residual stream, ``weights``
writes the heads).

A *fact* is a token a position holds, named by the path of operations that brought it: ``()`` is the
position's own token, ``("g0.t",)`` the token of the position it retrieved for node ``g0.t``,
``("g0.s", "g0.t")`` the token that winner had retrieved, ``(("at", FixedIndex(1)),)`` the token gathered
from position 1. Input positions share one layout (a slot a class does not hold is never read there); the
output token starts empty (docs/model.md). Each slot is written once, by one layer, and read after. A
retrieval's query and key are its score split into products (``factors``).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from experiments.compilation.factors import Selection, is_count, log_key, node_of, selection
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, walk
from infoflow_smt.model.program import Mode, Offset, Program
from infoflow_smt.verify.arithmetic import is_vector

INPUT, OUTPUT = "input", "output"


@dataclass(frozen=True)
class HeadPlan:
    layer: int
    head: int
    kind: str                                     # "retrieve", "positions" or "average"
    selections: tuple[Selection, ...] = ()        # retrieve: one per node the head selects anywhere
    by_class: tuple[tuple[object, object], ...] = ()  # class -> node (retrieve) or tuple of FixedIndex
    values: tuple[tuple, ...] = ()                # retrieve: the candidate's paths the value copies
    blocks: tuple[tuple[ex.FixedIndex, tuple[tuple, ...]], ...] = ()  # positions: each source's paths
    averages: tuple[tuple[str, int], ...] = ()    # average: each aggregate node and the width of its value
    part: str = ""                                # a head doing several kinds of things: one part per kind
    query_at: int = 0                             # where the part's query and key coordinates start
    value_at: int = 0                             # where its value coordinates start
    shared: tuple[tuple[tuple, int], ...] = ()    # global values (an average every input holds) copied, and widths
    gated: tuple[tuple[tuple, int, object], ...] = ()  # positions: global values one source sends, from where

    @property
    def name(self) -> str:
        return f"{self.layer}.{self.head}{self.part}"

    def query_width(self) -> int:
        if self.kind == "average":
            return 0  # a uniform average: every score is 0
        if self.kind == "offset":
            return 3  # the rotated position and the sink (the output token, where p + offset is outside)
        if self.kind == "mixed":
            return 4  # the offset's three and the fixed source's flag
        return sum(s.rank for s in self.selections) if self.kind == "retrieve" else len(self.blocks)

    def query_slot_width(self) -> int:
        """The host features the map writes (the mask coordinate is read from the class flags by ``W_Q``)."""
        return sum(sum(f.rank for f in s.factors if not (f.query_direct or f.query_constant)) for s in self.selections)

    def key_slot_width(self) -> int:
        return sum(f.rank for s in self.selections for f in s.factors if not f.key_direct)

    def value_width(self, d: int) -> int:
        if self.kind == "retrieve":
            return sum(s.key_width for s in self.selections) + len(self.values) * d + self.shared_width
        if self.kind == "mixed":  # the mixture of both sources, the fixed source's own block, its weight
            return 2 * len(self.blocks[0][1]) * d + 1
        if self.kind == "average":  # per node its value and its domain's share, then 1/(T+1)
            return sum(w for _, w in self.averages) + 1
        return sum(len(paths) for _, paths in self.blocks) * d + sum(w for _, w, _ in self.gated) + self.shared_width

    @property
    def shared_width(self) -> int:
        return sum(w for _, w in self.shared)


@dataclass(frozen=True)
class Flow:
    """What the witness moves, before any of it has a place in the stream: the position classes, the heads'
    plans, and what every class holds after each layer (``locations``: per layer, class -> path -> (slot,
    offset, scale), the slot a head's name until ``layout`` places it)."""

    program: Program
    tree: object
    input_dim: int
    heads: tuple[int, ...]
    classes: tuple                                # "input", the fixed positions with their own actions, "output"
    flags: tuple[ex.FixedIndex, ...]              # positions with a flag of their own (classes and sources)
    skips: tuple[str, ...]                        # retrieved nodes, each with a non-candidate mask
    head_plans: tuple[HeadPlan, ...]
    locations: tuple[dict, ...]
    answer_width: int
    counts: tuple[str, ...]                       # counts every position knows (``factors.is_count``)
    realization: object = None                    # the target's parameters (bilinear matrices in W_Q)

def path_text(path: tuple) -> str:
    if path and path[0] in ("avg", "count"):
        return f"average {path[1]}" if path[0] == "avg" else "1/(T+1)"
    if path and path[0] == "key":
        return f"candidate features of the winner of {path[1]}"
    if not path:
        return "own token"
    parts = [t if isinstance(t, str) else f"x[{t[1] if isinstance(t[1], Offset) else fixed_name(t[1])}]" for t in path]
    return "token of " + " > ".join(parts)


def fixed_name(q: ex.FixedIndex) -> str:
    return ("T" if q.position == 0 else f"T-{q.position}") if q.from_end else str(q.position)


def class_text(c) -> str:
    return c if isinstance(c, str) else f"position {fixed_name(c)}"


# ---- the plan --------------------------------------------------------------------------------------
def plan_flow(program: Program, tree, input_dim: int, heads: tuple[int, ...], keep: dict | None = None,
              realization=None, causal: bool = False, log_keys: bool = False) -> Flow:
    """The flow of ``program`` (computing ``tree``); raises ``CompileRefusal`` for what cannot be written as
    weights. ``keep`` (head -> paths) limits the tokens each head copies to those read later
    (``compiling.needed``); None copies every fact the source holds. Under a causal mask a selection over
    ``range(1, s+1)`` made at ``s`` needs no mask of its own: the attention's is it. ``log_keys``: a selection
    of the least value of a convex function of the candidate's token ranks by its logarithm above the least
    value (``factors.log_key``)."""
    _refuse_modes(program, tree, causal)
    fixed = sorted({a.where for a in program.actions if isinstance(a.where, ex.FixedIndex)}, key=fixed_name)
    classes = (INPUT, *fixed, OUTPUT)
    sources = {q for a in program.actions if a.op.mode is Mode.POSITIONS for q in a.op.positions
               if isinstance(q, ex.FixedIndex)}
    flags = tuple(sorted(set(fixed) | sources, key=fixed_name))
    locations = [{c: ({(): ("x", 0, 1.0)} if c != OUTPUT else {}) for c in classes}]
    plans = []
    for layer in range(1, program.layers + 1):
        current = {c: dict(locations[-1][c]) for c in classes}
        for head in range(1, heads[layer - 1] + 1):
            acts = {c: a for c in classes if (a := _action(program, layer, head, c)) and a.op.mode is not Mode.IDLE}
            if acts:
                kept = None if keep is None else keep.get((layer, head), set())
                plans += _head_plans(layer, head, acts, locations[-1], current, tree, input_dim, kept, realization)
        locations.append(current)
    if log_keys:
        plans = [dataclasses.replace(h, selections=tuple(log_key(s, tree, input_dim, realization)
                                                         for s in h.selections)) for h in plans]
    masked = {s.node for h in plans for s in h.selections} | {n for h in plans for n, _ in h.averages}
    skips = tuple(sorted(n for n in masked if not isinstance(tree.nodes[n]["domain"], ex.AllPositions)
                         and not _masked_prefix(n, tree, causal)))
    answer_width = input_dim if is_vector(tree.graph["output"], tree) else 1
    counts = tuple(sorted(n for n in tree.nodes if is_count(n, tree)))
    return Flow(program, tree, input_dim, heads, classes, flags, skips, tuple(plans), tuple(locations), answer_width,
                counts, realization)


def _masked_prefix(node: str, tree, causal: bool) -> bool:
    data = tree.nodes[node]
    return causal and any(ex.masked_prefix(data["domain"], v) for v in data["bound"])


def _refuse_modes(program: Program, tree, causal: bool) -> None:
    for a in program.actions:
        domain = tree.nodes[a.op.node]["domain"] if a.op.node in tree.nodes else None
        if domain is not None and ex.domain_variables(domain) and not _masked_prefix(a.op.node, tree, causal):
            raise CompileRefusal("mode", str(a), f"{a}: a range bounded by a variable is compiled only as "
                                 "range(1, s+1) at s under a causal mask, where the mask is the range")
        if a.op.mode in (Mode.AGGREGATE, Mode.KTH):
            raise CompileRefusal("mode", str(a), f"{a}: {a.op.mode.value} is not compiled (a softmax head "
                                 "averages; exact maps cannot decode T tokens or rank the k-th from one average)")
        offsets = [q for q in a.op.positions if isinstance(q, Offset)] if a.op.mode is Mode.POSITIONS else []
        if offsets and (len(offsets) > 1 or len(a.op.positions) > 2):
            raise CompileRefusal("mode", str(a), f"{a}: one head gathering an offset and more than one other "
                                 "position is not compiled (where the offset's source is one of the fixed ones, "
                                 "the weights cannot say which)")
        if a.op.mode is Mode.RETRIEVE and len(tree.nodes[a.op.node]["bound"]) > 1:
            raise CompileRefusal("mode", str(a), f"{a}: one position plays several variables")


def _action(program: Program, layer: int, head: int, c):
    """What ``head`` does at class ``c`` (a fixed position does what every input position does, unless
    the program overrides it there)."""
    found = program.action_for(layer, head, c)
    if found is None and isinstance(c, ex.FixedIndex):
        found = program.action_for(layer, head, INPUT)
    return found


def common_paths(locations: dict) -> dict:
    """The tokens every input position holds, at the same place (what any candidate can hand over)."""
    inputs = [locs for c, locs in locations.items() if c != OUTPUT]
    return {p: where for p, where in inputs[0].items()
            if (p[0] if p else None) not in ("key", "avg", "count") and where[2] is not None
            and all(locs.get(p) == where for locs in inputs[1:])}


def _kind(a) -> str:
    if a.op.mode is Mode.POSITIONS:
        if any(isinstance(q, Offset) for q in a.op.positions):
            return "mixed" if len(a.op.positions) > 1 else "offset"
        return "positions"
    return {Mode.RETRIEVE: "retrieve", Mode.AVERAGE: "average"}[a.op.mode]


def _head_plans(layer, head, acts, before, current, tree, d, kept, realization=None) -> list[HeadPlan]:
    """One part per kind of thing the head does at its position classes, side by side in its coordinates:
    a class's query is zero outside its own part, so each class sees only what it asks for."""
    groups: dict = {}
    for c, a in acts.items():
        groups.setdefault(_kind(a), {})[c] = a
    parts, query_at, value_at = [], 0, 0
    for kind in ("retrieve", "positions", "offset", "mixed", "average"):
        if kind in groups:
            part = "" if len(groups) == 1 else kind[0]
            build = {"retrieve": functools.partial(_retrieve_plan, realization=realization),
                     "positions": _positions_plan, "offset": _offset_plan, "mixed": _mixed_plan,
                     "average": _average_plan}[kind]
            hp = build(layer, head, groups[kind], before, current, tree, d, kept, f"h{layer}.{head}{part}",
                       len(groups) == 1)
            hp = dataclasses.replace(hp, part=part, query_at=query_at, value_at=value_at)
            query_at, value_at = query_at + hp.query_width(), value_at + hp.value_width(d)
            parts.append(hp)
    return parts


def _retrieve_plan(layer, head, acts, before, current, tree, d, kept, slot, alone, realization=None) -> HeadPlan:
    values = tuple(sorted((p for p in common_paths(before) if kept is None or p in kept),
                          key=lambda p: (len(p), str(p))))
    nodes = sorted({a.op.node for a in acts.values()})
    hosts = {n: [c for c, a in acts.items() if a.op.node == n] for n in nodes}
    selections = tuple(selection(n, tree, d, alone and len(nodes) == 1,
                                  lambda g, n=n: all(holds(c, before[c], g) for c in hosts[n]), realization)
                       for n in nodes)
    keys, at = {}, 0
    for sel in selections:
        keys[sel.node], at = at, at + sel.key_width
    copies = {sel.node for sel in selections if sel.copies_features}
    for c, a in acts.items():
        if a.op.node in copies:
            current[c][("key", a.op.node)] = (slot, keys[a.op.node], 1.0)
        for i, p in enumerate(values):
            current[c][(a.op.node, *p)] = (slot, at + i * d, 1.0)
    shared = _shared(before, current, acts, tree, d, kept, slot, at + len(values) * d, 1.0)
    return HeadPlan(layer, head, "retrieve", selections, tuple((c, a.op.node) for c, a in acts.items()), values,
                    shared=shared)


def _shared(before, current, acts, tree, d, kept, slot, at, scale) -> tuple:
    """The global values (averages over every position and the 1/(T+1) beside them) that every input
    position holds and some acting class lacks: a head copies them from any source, since they are the same
    at every position. Each lands at ``at`` onwards, under its own name."""
    inputs = [locs for c, locs in before.items() if c != OUTPUT]
    held = sorted({p for p in inputs[0] if p and p[0] in ("avg", "count") and all(p in locs for locs in inputs)},
                  key=str)
    wanted = [p for p in held if (kept is None or p in kept) and any(p not in current[c] for c in acts)]
    shared = []
    for p in wanted:
        width = 1 if p[0] == "count" else average_width(p[1], tree, d)[1]
        for c in acts:
            current[c].setdefault(p, (slot, at, scale))
        shared.append((p, width))
        at += width
    return tuple(shared)


def _positions_plan(layer, head, acts, before, current, tree, d, kept, slot, alone) -> HeadPlan:
    refs = sorted({q for a in acts.values() for q in a.op.positions}, key=fixed_name)
    blocks = tuple((q, tuple(sorted((p for p in before[q if q in before else INPUT]
                                     if (p[0] if p else None) not in ("key", "avg", "count")
                                     and (kept is None or (q, p) in kept)),
                                    key=lambda p: (len(p), str(p))))) for q in refs)
    offsets, at = {}, 0
    for q, paths in blocks:
        offsets[q] = at
        at += len(paths) * d
    for c, a in acts.items():
        for q in a.op.positions:
            paths = dict(blocks)[q]
            for i, p in enumerate(paths):
                current[c][(("at", q), *p)] = (slot, offsets[q] + i * d, float(len(a.op.positions)))
    gated = _gated(before, current, acts, tree, d, kept, slot, at)
    at += sum(w for _, w, _ in gated)
    # the global values every input holds are read straight from the sources: their average is the value
    shared = _shared(before, current, acts, tree, d, kept, slot, at, 1.0)
    return HeadPlan(layer, head, "positions", (), tuple((c, a.op.positions) for c, a in acts.items()), (),
                    blocks, shared=shared, gated=gated)


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
    for q in sorted((q for q in positions if q in before), key=fixed_name):
        for p in sorted((p for p in before[q] if p and p[0] in ("avg", "count")), key=str):
            if any(p == g for g, _, _ in gated) or all(p in locs for locs in inputs) \
                    or (kept is not None and p not in kept) or all(p in current[c] for c in acts):
                continue
            width = 1 if p[0] == "count" else average_width(p[1], tree, d)[1]
            for c in acts:
                current[c].setdefault(p, (slot, at, float(len(positions))))
            gated.append((p, width, q))
            at += width
    return tuple(gated)


def _offset_plan(layer, head, acts, before, current, tree, d, kept, slot, alone) -> HeadPlan:
    """A head that copies the facts of position ``p + offset``: a score peaked on that relative position
    (rotated positional features), its value the source's facts read where every input position keeps them."""
    offsets = {q for a in acts.values() for q in a.op.positions}
    if len(offsets) > 1:
        raise CompileRefusal("mode", f"layer {layer}, head {head}", f"layer {layer}, head {head} gathers "
                             "different offsets at different positions")
    offset = next(iter(offsets))
    paths = tuple(sorted((p for p in common_paths(before) if kept is None or (offset, p) in kept),
                         key=lambda p: (len(p), str(p))))
    for c in acts:
        for i, p in enumerate(paths):
            current[c][(("at", offset), *p)] = (slot, i * d, 1.0)
    return HeadPlan(layer, head, "offset", (), tuple((c, a.op.positions) for c, a in acts.items()),
                    blocks=((offset, paths),))


def _mixed_plan(layer, head, acts, before, current, tree, d, kept, slot, alone) -> HeadPlan:
    """A head that gathers ``p + offset`` and one fixed position ``q``: the offset's score (rotated positional
    features, keys zeroed at ``q``) and ``q``'s flag both peak at the same height, so the head mixes the two
    sources; ``q`` also sends its facts alone, and its weight, into an outbox, and the reader separates them:
    ``x_q = block / w``, ``x_(p+offset) = (mixture - block) / (1 - w)``."""
    gathers = {frozenset(a.op.positions) for a in acts.values()}
    if len(gathers) > 1:
        raise CompileRefusal("mode", f"layer {layer}, head {head}", f"layer {layer}, head {head} gathers "
                             "different positions at different classes")
    offset = next(q for q in next(iter(gathers)) if isinstance(q, Offset))
    fixed = next(q for q in next(iter(gathers)) if not isinstance(q, Offset))
    paths = tuple(sorted((p for p in common_paths(before)
                          if kept is None or (offset, p) in kept or (fixed, p) in kept),
                         key=lambda p: (len(p), str(p))))
    for c in acts:
        for i, p in enumerate(paths):
            current[c][(("at", offset), *p)] = (slot, i * d, None)  # None: decoded by the reader
            current[c][(("at", fixed), *p)] = (slot, (len(paths) + i) * d, None)
    return HeadPlan(layer, head, "mixed", (), tuple((c, a.op.positions) for c, a in acts.items()),
                    blocks=((offset, paths), (fixed, paths)))


def _average_plan(layer, head, acts, before, current, tree, d, kept, slot, alone) -> HeadPlan:
    """Global averaging: one uniform head over every position (the output token too, whose flag then
    arrives as 1/(T+1)) carries, for each aggregate over positions, its per-token value and its domain's
    share; the reader divides them into a sum or a mean."""
    inputs = [locs for c, locs in before.items() if c != OUTPUT]
    nodes = sorted(n for n, data in tree.nodes(data=True) if data["kind"] == "aggregate" and not data["bound"]
                   and all(_tokens_held(data["score"], data["var"], locs, tree) for locs in inputs))
    averages = tuple((n, average_width(n, tree, d)[1]) for n in nodes)
    at = 0
    for n, w in averages:
        for c in acts:
            current[c][("avg", n)] = (slot, at, 1.0)
        at += w
    for c in acts:
        current[c][("count",)] = (slot, at, 1.0)
    return HeadPlan(layer, head, "average", (), tuple((c, None) for c in acts), averages=averages)


def _tokens_held(score, var: str, locations: dict, tree) -> bool:
    """Whether a position holding ``locations`` can compute an aggregate's per-token value ``score``, as far as
    other positions' tokens and selections go: ``x[var + o]`` gathered by an offset head, ``x[q]`` its own or
    gathered, a selection or average it holds. An aggregate that reads one not held yet is averaged by a
    later layer's head, where it is (the model's averaging head carries what every position holds, no more)."""
    for sub in walk(score):
        if isinstance(sub, ex.Content) and isinstance(sub.index, ex.OffsetIndex) and sub.index.name == var:
            if not any(p and p[-1] == ("at", Offset(sub.index.offset)) for p in locations):
                return False
        elif isinstance(sub, ex.Content) and isinstance(sub.index, ex.FixedIndex):
            if not holds(None, locations, sub.index):
                return False
        elif isinstance(sub, (GroupRef, NodeRef)):
            node = node_of(sub, tree)
            if not is_count(node, tree) and not holds(None, locations, node):
                return False
    return True


def average_width(node: str, tree, d: int) -> tuple[int, int]:
    """The width of an aggregate's value, and of what an average carries for it: the value and, for a
    mean, the domain's share (a sum divides by the 1/(T+1) every average carries once)."""
    value = d if is_vector(tree.nodes[node]["score"], tree) else 1
    return value, value + (tree.nodes[node]["sense"] == "mean")


def holds(c, locations: dict, item) -> bool:
    """Whether a position of class ``c`` with these facts knows ``item``: a node's average or its winner's
    token, or a fixed position's token (its own, or gathered)."""
    if isinstance(item, ex.FixedIndex):
        return c == item or any(p and p[-1] == ("at", item) for p in locations)
    return ("avg", item) in locations or any(p and p[-1] == item for p in locations)
