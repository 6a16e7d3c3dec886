"""The plan of a compiled witness: what every position holds after each layer, where each fact lives in the
residual stream, and what each head's query, key and value read. No torch here (``weights`` writes them).

A *fact* is a token a position holds, named by the path of operations that brought it: ``()`` is the
position's own token, ``("g0.t",)`` the token of the position it retrieved for node ``g0.t``,
``("g0.s", "g0.t")`` the token that winner had retrieved, ``(("at", FixedIndex(1)),)`` the token gathered
from position 1. Input positions share one layout (a slot a class does not hold is never read there); the
output token starts empty (docs/model.md). Each slot is written once, by one layer, and read after.

A retrieval head's score is ``q_s . k_t = beta * score(s, t)``: every term of the node's score is split
into a product of a host feature (read at the position making the selection) and a candidate feature
(read at the candidate); terms that read only the host are constant over the candidates and dropped.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost, walk
from infoflow_smt.model.program import Mode, Offset, Program
from infoflow_smt.verify.arithmetic import is_vector

from experiments.compilation.separable import MAX_RANK, TOKEN_SPREAD, tanh_basis

INPUT, OUTPUT = "input", "output"


@dataclass(frozen=True)
class Slot:
    name: str
    start: int
    width: int
    what: str

    def __str__(self) -> str:
        return f"{self.start:>4}..{self.start + self.width - 1:<4} {self.name:<14} {self.what}"


@dataclass(frozen=True)
class Factor:
    """One product of a score: ``coefficient * <host, candidate>`` (``rank`` coordinates of q and k).
    ``matrix``: a ``bilinear`` parameter; ``host_first``: the host is its first argument."""

    host: object
    candidate: object
    rank: int
    coefficient: float = 1.0
    matrix: str | None = None
    host_first: bool = True
    key_direct: bool = False    # the candidate feature is its own token: W_K reads the token slot
    query_direct: bool = False  # the host feature is a linear map of its own token: W_Q applies it
    floor: float | None = None  # the key is log(feature - floor), floor the feature's least value (``log_keys``)

    @property
    def query_constant(self) -> bool:
        """The host feature is a number: ``W_Q`` writes it from the acting classes' flags, with no slot."""
        return isinstance(self.host, ex.Num) and self.rank == 1


@dataclass(frozen=True)
class SmoothSide:
    """One side's features of a realization function of tokens read at both the host and the candidate
    (``_Splitter.split_smooth``). ``parts``: per argument, this side's sum of tokens (None where the side
    reads none of it). With ``u = H + K`` (host and candidate parts of the concatenated arguments) and
    ``F(u) = |u - c|^2 / m + 0.5 tanh(w . u + bias)``, ``part`` names the features:
    ``"square"`` (candidate): ``|K|^2 - 2 c . K``; ``"tanh"``: ``separable.TanhBasis`` features of
    ``w . H + bias`` (host) or ``w . K`` (candidate), on the box ``alpha x beta``. (The cross term ``2 H . K``
    is a product of two sums of tokens, an ordinary factor per argument.)"""

    function: str
    arity: int
    side: str
    part: str
    parts: tuple
    alpha: tuple[float, float] = (0.0, 0.0)
    beta: tuple[float, float] = (0.0, 0.0)


@dataclass(frozen=True)
class Selection:
    """What one retrieval head selects for one node: its factors (the query's and key's coordinates)."""

    node: str
    sign: int                 # +1 for max, -1 for min: the host's features are negated for a min
    factors: tuple[Factor, ...]
    host_var: str | None      # the bound variable the host plays (None at the output token)
    constant: tuple = ()      # (sign, term) read by the host alone: the same for every candidate

    @property
    def rank(self) -> int:
        return sum(f.rank for f in self.factors) + 1  # +1: the coordinate that masks non-candidates

    @property
    def copies_features(self) -> bool:
        """Whether the host recomputes the node's value from the winner's candidate features (its score is
        an exact sum of products); a score with approximated products is recomputed from the winner's
        tokens, exactly, so only the choice of the winner carries the approximation."""
        return not any(isinstance(f.host, SmoothSide) for f in self.factors)

    @property
    def key_width(self) -> int:
        """The winner's candidate features, which the value copies: the host recomputes the node's value
        from them (a tie between candidates of equal score then averages equal values)."""
        return sum(f.rank for f in self.factors) if self.copies_features else 0


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
class Plan:
    program: Program
    tree: object
    width: int                                    # E, the residual stream's width
    input_dim: int
    heads: tuple[int, ...]
    classes: tuple                                # "input", the fixed positions with their own actions, "output"
    flags: tuple[ex.FixedIndex, ...]              # positions with a flag of their own (classes and sources)
    skips: tuple[str, ...]                        # retrieved nodes, each with a non-candidate mask
    head_plans: tuple[HeadPlan, ...]
    locations: tuple[dict, ...]                   # per layer: class -> path -> (slot, offset, scale)
    slots: tuple[Slot, ...]
    answer_width: int
    realization: object = None                    # the target's parameters (bilinear matrices in W_Q)
    scratch: slice | None = None                  # coordinates each layer's queries, keys and outboxes share
    frees: tuple[tuple[str, ...], ...] = ()       # per map (0: after the embedding): facts it clears, dead
                                                  # there, whose coordinates a later fact reuses

    def slot(self, name: str) -> Slot:
        return next(s for s in self.slots if s.name == name)

    def head(self, layer: int, head: int) -> HeadPlan | None:
        return next((h for h in self.head_plans if (h.layer, h.head) == (layer, head)), None)

    def used(self) -> int:
        if self.scratch is not None:
            return self.scratch.stop
        return sum(s.width for s in self.slots)

    def __str__(self) -> str:
        lines = [f"residual stream: {self.used()} of E = {self.width} dimensions in {len(self.slots)} slots"]
        if self.scratch is not None:
            lines.append(f"  (each layer's queries, keys and outboxes share {self.scratch.start}.."
                         f"{self.scratch.stop - 1}: the map before a layer overwrites them)")
        lines += [f"  (the map after {'the embedding' if m == 0 else f'layer {m}'} clears {', '.join(names)}: "
                  "nothing reads them later, and later facts reuse their dimensions)"
                  for m, names in enumerate(self.frees) if names]
        return "\n".join(lines + [f"  {s}" for s in self.slots])


def path_text(path: tuple) -> str:
    if path and path[0] in ("avg", "count"):
        return f"average {path[1]}" if path[0] == "avg" else "1/(T+1)"
    if path and path[0] == "key":
        return f"candidate features of the winner of {path[1]}"
    if not path:
        return "own token"
    parts = [t if isinstance(t, str) else f"x[{t[1] if isinstance(t[1], Offset) else _fixed(t[1])}]" for t in path]
    return "token of " + " > ".join(parts)


def _fixed(q: ex.FixedIndex) -> str:
    return ("T" if q.position == 0 else f"T-{q.position}") if q.from_end else str(q.position)


def class_text(c) -> str:
    return c if isinstance(c, str) else f"position {_fixed(c)}"


# ---- the plan --------------------------------------------------------------------------------------
def make_plan(program: Program, tree, width: int, input_dim: int, heads: tuple[int, ...],
              keep: dict | None = None, check: bool = True, realization=None, causal: bool = False,
              log_keys: bool = False, last_use: dict | None = None) -> Plan:
    """The plan of ``program`` (computing ``tree``) in a stream of ``width`` dimensions; raises
    ``CompileRefusal`` for what cannot be written as weights. ``keep`` (head -> paths) limits the tokens each
    head copies to those read later (``needed``); None copies every fact the source holds. Under a causal
    mask a selection over ``range(1, s+1)`` made at ``s`` needs no mask of its own: the attention's is it.
    ``log_keys``: a selection of the least value of a convex function of the candidate's token ranks by
    its logarithm above the least value (``log_key``). ``last_use`` (fact slot -> the last time anything
    reads it, ``fact_time``'s clock) lets a stream too narrow otherwise reuse a dead fact's coordinates
    (``_allocate_live``)."""
    _refuse_modes(program, tree, causal)
    fixed = sorted({a.where for a in program.actions if isinstance(a.where, ex.FixedIndex)}, key=_fixed)
    classes = (INPUT, *fixed, OUTPUT)
    sources = {q for a in program.actions if a.op.mode is Mode.POSITIONS for q in a.op.positions
               if isinstance(q, ex.FixedIndex)}
    flags = tuple(sorted(set(fixed) | sources, key=_fixed))
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
    slots, scratch, frees = _allocate(plans, flags, skips, input_dim, answer_width, counts), None, ()
    if sum(s.width for s in slots) > width:
        slots, scratch = _allocate_reusing(plans, flags, skips, input_dim, answer_width, counts)
    if scratch is not None and scratch.stop > width and last_use is not None:
        slots, scratch, frees = _allocate_live(plans, flags, skips, input_dim, answer_width, counts, last_use,
                                               program.layers)
    plan = Plan(program, tree, width, input_dim, heads, classes, flags, skips, tuple(plans), tuple(locations),
                slots, answer_width, realization, scratch, frees)
    if check:
        _refuse_widths(plan)
    return plan


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
    selections = tuple(_selection(n, tree, d, alone and len(nodes) == 1,
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
    refs = sorted({q for a in acts.values() for q in a.op.positions}, key=_fixed)
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
    for q in sorted((q for q in positions if q in before), key=_fixed):
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


def _ref_key(q) -> tuple:
    return (1, q.offset, "") if isinstance(q, Offset) else (0, 0, _fixed(q))


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
            node = _node(sub, tree)
            if not is_count(node, tree) and not holds(None, locations, node):
                return False
    return True


def average_width(node: str, tree, d: int) -> tuple[int, int]:
    """The width of an aggregate's value, and of what an average carries for it: the value and, for a
    mean, the domain's share (a sum divides by the 1/(T+1) every average carries once)."""
    value = d if is_vector(tree.nodes[node]["score"], tree) else 1
    return value, value + (tree.nodes[node]["sense"] == "mean")


def _selection(node, tree, d: int, alone: bool, host_holds, realization=None) -> Selection:
    """``alone``: the head selects no other node, so its query may read the host's token directly;
    ``host_holds(node)``: whether every host knows that global value."""
    data = tree.nodes[node]
    host_var = next(iter(data["bound"]), None)
    sign = -1 if data["sense"] in ("min", "argmin") else 1
    split = _Splitter(tree, data["var"], d, host_holds, realization)
    factors = tuple(_direct(f, data["var"], host_var, d, alone)
                    for sign_, term in data["terms"] for f in split.factors(term, float(sign_)))
    constant = tuple((sign_, t) for sign_, t in data["terms"] if data["var"] not in reads(t, tree))
    return Selection(node, sign, factors, host_var, constant)


def log_key(s: Selection, tree, d: int, realization) -> Selection:
    """``s`` ranking by ``log(f(x_t) - min f)`` when it selects the least value of one function ``f`` of the
    candidate's own token (a min of ``f``, or a max of ``-f``) and ``f`` is convex with a known least value.

    The order is the same (log is increasing), so the winner is; but the smallest values of ``f`` over ``n``
    candidates crowd towards its minimum, their gaps shrinking like ``1/n`` (d = 2), and a softmax on ``f``
    itself needs a ``beta`` that grows as fast. Above the minimum their ratios stay apart (the second
    smallest is about twice the smallest), so on the logarithm the margin, and the ``beta`` it needs, does
    not shrink with ``n``."""
    if len(s.factors) != 1:
        return s
    f, var = s.factors[0], tree.nodes[s.node]["var"]
    c = f.candidate
    own_token = lambda e: isinstance(e, ex.Content) and e.index == ex.VarIndex(var)
    least_first = isinstance(f.host, ex.Num) and s.sign * f.coefficient * f.host.value < 0
    if not (f.rank == 1 and least_first and isinstance(c, ex.Call) and c.name not in SCORE_CALLS
            and all(own_token(a) for a in c.args)):
        return s
    floor = realization.function(c.name, d * len(c.args)).minimum()
    return s if floor is None else dataclasses.replace(s, factors=(dataclasses.replace(f, floor=floor),))


SCORE_CALLS = ("dot", "bilinear", "norm", "min", "max")   # not one of the realization's functions


def _direct(f: Factor, var: str, host_var: str | None, d: int, alone: bool) -> Factor:
    own = lambda e, v: isinstance(e, ex.Content) and e.index == ex.VarIndex(v)
    return Factor(f.host, f.candidate, f.rank, f.coefficient, f.matrix, f.host_first, floor=f.floor,
                  key_direct=f.rank == d and own(f.candidate, var),
                  query_direct=alone and host_var is not None and f.rank == d and own(f.host, host_var))


def is_count(node: str, tree) -> bool:
    """A sum of a constant over a domain (``sum(1 for t in S1)``): a count the network knows (docs/model.md,
    normal form rule 3), given to every position with the positional features."""
    data = tree.nodes[node]
    return data["kind"] == "aggregate" and data["sense"] == "sum" and isinstance(data["score"], ex.Num)


def _allocate(plans, flags, skips, d, answer_width, counts=()) -> tuple[Slot, ...]:
    return _placed(_wanted(plans, flags, skips, d, answer_width, counts))


def _scratch(name: str) -> bool:
    """A head's query, key or outbox: written by the map before its layer, read by that layer alone."""
    return name[0] in "qko" and name[1:2].isdigit()


def _allocate_reusing(plans, flags, skips, d, answer_width, counts=()) -> tuple[tuple[Slot, ...], slice]:
    """Every fact a later map reads in a slot of its own; the queries, keys and outboxes of each layer in a
    scratch region all layers share (a layer's are dead once its attention has read them, and the next map
    overwrites them): as wide as the widest layer's."""
    wanted = _wanted(plans, flags, skips, d, answer_width, counts)
    kept = _placed([w for w in wanted if not _scratch(w[0])])
    return _with_scratch(kept, wanted, plans)


def _with_scratch(kept, wanted, plans) -> tuple[tuple[Slot, ...], slice]:
    """``kept`` and, after them, each layer's scratch slots from the same start: (slots, scratch region)."""
    start = max((s.start + s.width for s in kept), default=0)
    slots, widest = list(kept), 0
    for layer in sorted({h.layer for h in plans}):
        mine = _placed([w for w in wanted if _scratch(w[0]) and w[0][1:].split(".")[0] == str(layer)], start)
        slots += mine
        widest = max(widest, sum(s.width for s in mine))
    return tuple(slots), slice(start, start + widest)


def is_fact(name: str) -> bool:
    """A slot holding what a position knows (its token, what a head copied, the answer), written once."""
    return name in ("x", "answer") or (name[0] == "h" and name[1:2].isdigit())


def fact_time(name: str, layers: int) -> int:
    """When a fact is written, on a clock where the map after layer ``m`` runs at ``2 m`` (the embedding's at
    0) and the attention of layer ``L`` at ``2 L - 1``: the token before everything, a head's output at its
    layer, the answer at the last map."""
    if name == "x":
        return -1
    if name == "answer":
        return 2 * layers
    return 2 * int(name[1:].split(".")[0]) - 1


def _allocate_live(plans, flags, skips, d, answer_width, counts, last_use: dict, layers: int):
    """As ``_allocate_reusing``, and a fact whose last reader has run leaves its coordinates to a fact
    written later: the first map at or after its last use clears them (subtracts them, as it does the
    scratch region), and a fact written after that map may take them. First fit, in the order facts are
    written. Returns (slots, scratch, frees)."""
    wanted = _wanted(plans, flags, skips, d, answer_width, counts)
    kept = list(_placed([w for w in wanted if not _scratch(w[0]) and not is_fact(w[0])]))
    base = sum(s.width for s in kept)
    placed: list[tuple[Slot, float]] = []   # (slot, the map that clears it: inf for the answer, read at the end)
    reused: set[str] = set()
    for name, width, what in sorted((w for w in wanted if is_fact(w[0])), key=lambda w: fact_time(w[0], layers)):
        written = fact_time(name, layers)
        clears = math.inf if name == "answer" else math.ceil(max(written, last_use.get(name, written)) / 2)
        for start in sorted({base, *(s.start + s.width for s, _ in placed)}):
            clash = [(s, c) for s, c in placed if s.start < start + width and start < s.start + s.width]
            if all(2 * c < written for _, c in clash):
                reused |= {s.name for s, _ in clash}
                break
        placed.append((Slot(name, start, width, what), clears))
    slots, scratch = _with_scratch(kept + [s for s, _ in placed], wanted, plans)
    frees = tuple(tuple(s.name for s, c in placed if s.name in reused and c == m) for m in range(layers + 1))
    return slots, scratch, frees


def _placed(wanted, start: int = 0) -> tuple[Slot, ...]:
    slots = []
    for name, width, what in wanted:
        slots.append(Slot(name, start, width, what))
        start += width
    return tuple(slots)


def _wanted(plans, flags, skips, d, answer_width, counts=()) -> list[tuple[str, int, str]]:
    wanted = [("one", 1, "the constant 1"), ("output", 1, "1 at the output token"), ("x", d, "the token")]
    wanted += [(f"at {_fixed(q)}", 1, f"1 at position {_fixed(q)}") for q in flags]
    if any(h.kind in ("offset", "mixed") for h in plans):
        wanted.append(("pos", 2, "cos and sin of (position * 2 pi / 4096)"))
    wanted += [(f"skip {n}", 1, f"1 where a position is no candidate of {n}") for n in skips]
    wanted += [(f"count {n}", 1, f"the count {n}, at every position") for n in counts]
    for h in plans:
        if h.kind == "retrieve":
            nodes = ", ".join(s.node for s in h.selections)
            if h.query_slot_width():
                wanted.append((f"q{h.name}", h.query_slot_width(), (f"layer {h.layer} head {h.head} query: host "
                                                                    f"features of {nodes}")))
            if h.key_slot_width():
                wanted.append((f"k{h.name}", h.key_slot_width(), (f"layer {h.layer} head {h.head} key: candidate "
                                                                 f"features of {nodes}")))
        elif h.kind == "mixed":
            fixed = _fixed(h.blocks[1][0])
            wanted.append((f"k{h.name}", 2, f"layer {h.layer} head {h.head} key: the positional features, 0 at {fixed}"))
            wanted.append((f"o{h.name}", len(h.blocks[1][1]) * d + 1, (f"layer {h.layer} head {h.head} outbox: the "
                                                                     f"facts position {fixed} sends, and 1 there")))
        elif h.kind == "offset":
            pass  # W_Q and W_K read the positional features, W_V the source's facts: no slot of its own
        elif h.kind == "average":
            nodes = ", ".join(n for n, _ in h.averages)
            wanted.append((f"o{h.name}", h.value_width(d) - 1, (f"layer {h.layer} head {h.head} outbox: per-token "
                                                               f"values of {nodes}")))
        else:
            where = ", ".join(_fixed(q) for q, _ in h.blocks)
            wanted.append((f"o{h.name}", h.value_width(d) - h.shared_width, (f"layer {h.layer} head {h.head} outbox: the facts "
                                                         f"positions {where} send")))
        wanted.append((f"h{h.name}", h.value_width(d), f"layer {h.layer} head {h.head} output: what it copied"))
    wanted.append(("answer", answer_width, "the output token's answer"))
    return wanted


def roomy_width(plan: Plan) -> int:
    """A width with room for every slot and every head's query, key and value (the first, unpruned pass)."""
    widest = [plan.heads[h.layer - 1] * max(h.query_width(), h.value_width(plan.input_dim)) for h in plan.head_plans]
    return max([plan.width, plan.used(), *widest])


def _refuse_widths(plan: Plan) -> None:
    for h in plan.head_plans:
        head_dim = plan.width // plan.heads[h.layer - 1]
        query, value = h.query_at + h.query_width(), h.value_at + h.value_width(plan.input_dim)
        need = max(query, value)  # the last part of a head ends where the whole head does
        if need > head_dim:
            what = "its query and key" if query > head_dim else "the facts its value copies"
            raise CompileRefusal("head_width", f"layer {h.layer}, head {h.head}",
                                 f"layer {h.layer}, head {h.head} needs {need} dimensions for {what}, and a head "
                                 f"has E / h = {plan.width} / {plan.heads[h.layer - 1]} = {head_dim}")
    if plan.used() > plan.width:
        raise CompileRefusal("residual_width", "residual stream",
                             f"the residual stream needs {plan.used()} dimensions for its slots, E = {plan.width}\n"
                             + str(plan))


# ---- splitting a score into host x candidate products ------------------------------------------------
def reads(e, tree) -> frozenset[str]:
    """The variables ``e`` depends on, through selections too (a selection depends on its bound ones)."""
    if isinstance(e, ex.Content):
        index = e.index
        if isinstance(index, (ex.VarIndex, ex.OffsetIndex)):
            return frozenset({index.name})
        return reads(index, tree) if isinstance(index, GroupRef) else frozenset()
    if isinstance(e, GroupRef):
        return frozenset(tree.nodes[outermost(tree, e.group)]["bound"])
    if isinstance(e, NodeRef):
        return frozenset(tree.nodes[e.node]["bound"])
    if isinstance(e, ex.BinOp):
        return reads(e.left, tree) | reads(e.right, tree)
    if isinstance(e, ex.Neg):
        return reads(e.operand, tree)
    if isinstance(e, ex.Call):
        return frozenset().union(*(reads(a, tree) for a in e.args))
    return frozenset()


def _node(e, tree) -> str:
    return outermost(tree, e.group) if isinstance(e, GroupRef) else e.node


def _global_nodes(e, tree) -> frozenset[str]:
    """The selections and aggregates ``e`` reads that depend on no variable (the same at every position;
    a count, known everywhere, is not one), and the fixed positions' tokens it reads (the same wherever
    they are read)."""
    found = set()
    for sub in walk(e):
        if isinstance(sub, (GroupRef, NodeRef)):
            node = _node(sub, tree)
            if not reads(sub, tree) and not is_count(node, tree):
                found.add(node)
        elif isinstance(sub, ex.Content) and isinstance(sub.index, ex.FixedIndex):
            found.add(sub.index)
    return frozenset(found)


def holds(c, locations: dict, item) -> bool:
    """Whether a position of class ``c`` with these facts knows ``item``: a node's average or its winner's
    token, or a fixed position's token (its own, or gathered)."""
    if isinstance(item, ex.FixedIndex):
        return c == item or any(p and p[-1] == ("at", item) for p in locations)
    return ("avg", item) in locations or any(p and p[-1] == item for p in locations)


def term_text(e) -> str:
    try:
        return to_text(e)
    except (TypeError, ValueError, AttributeError, KeyError):  # a tree's placeholders (GroupRef, NodeRef) have no text of their own
        return repr(e)


class _Splitter:
    """Splits one score term into products of a host feature and a candidate feature, one method per
    construct (``split_Call``, ``split_BinOp``, ...); anything else is refused, naming the term."""

    def __init__(self, tree, var: str, d: int, host_holds=lambda node: False, realization=None):
        self.tree, self.var, self.d, self.host_holds, self.realization = tree, var, d, host_holds, realization

    def factors(self, term, coefficient: float) -> list[Factor]:
        if self.var not in reads(term, self.tree):
            return []  # the same for every candidate: it cannot change which one wins
        method = getattr(self, f"split_{type(term).__name__}", None)
        only_candidate = not reads(term, self.tree) - {self.var}
        globals_ = _global_nodes(term, self.tree)
        if only_candidate and not (globals_ and all(self.host_holds(n) for n in globals_)):
            return [Factor(ex.Num(1.0), term, 1, coefficient)]
        # a term that reads a global value (a selection or aggregate over every position) the host holds is
        # split, so that the host supplies it; the candidate computes the whole term if it cannot be split
        found = method(term, coefficient) if method else None
        if found is None and only_candidate:
            return [Factor(ex.Num(1.0), term, 1, coefficient)]
        if found is None:
            raise CompileRefusal("score_form", term_text(term),
                                 f"the score term {term_text(term)} is not a sum of products of a host feature "
                                 f"and a candidate feature (of {self.var})")
        return found

    def _sides(self, a, b):
        """(host, candidate, host_first) when one of ``a``, ``b`` reads the candidate and the other does not."""
        ra, rb = self.var in reads(a, self.tree), self.var in reads(b, self.tree)
        only = {self.var}
        if rb and not ra and reads(b, self.tree) <= only:
            return a, b, True
        if ra and not rb and reads(a, self.tree) <= only:
            return b, a, False
        return None

    def split_Neg(self, term, coefficient):
        return self.factors(term.operand, -coefficient)

    def split_BinOp(self, term, coefficient):
        if term.op in "+-":
            right = -coefficient if term.op == "-" else coefficient
            return self.factors(term.left, coefficient) + self.factors(term.right, right)
        if term.op == "*" and isinstance(term.left, ex.Num):
            return self.factors(term.right, coefficient * term.left.value)
        if term.op == "*" and isinstance(term.right, ex.Num):
            return self.factors(term.left, coefficient * term.right.value)
        for known, other in ((term.left, term.right), (term.right, term.left)):
            if term.op == "*" and isinstance(known, (GroupRef, NodeRef)) and is_count(_node(known, self.tree),
                                                                                     self.tree):
                return [dataclasses.replace(f, host=ex.BinOp("*", known, f.host))
                        for f in self.factors(other, coefficient)]
        sides = self._sides(term.left, term.right) if term.op == "*" else None
        if sides and not is_vector(term.left, self.tree) and not is_vector(term.right, self.tree):
            return [Factor(sides[0], sides[1], 1, coefficient)]
        return None

    def split_Call(self, term, coefficient):
        if term.name == "dot":
            sides = self._sides(*term.args)
            return [Factor(sides[0], sides[1], self.d, coefficient)] if sides else None
        if term.name == "bilinear":
            sides = self._sides(*term.args[1:])
            if sides:
                return [Factor(sides[0], sides[1], self.d, coefficient, term.args[0].name, sides[2])]
        if term.name not in SCORE_CALLS:
            return self.split_smooth(term, coefficient)
        return None

    def split_smooth(self, term, coefficient):
        """A realization function of tokens from both sides (``SmoothSide``): its quadratic splits into
        products exactly, its ``0.5 tanh(w . u + bias)`` into ``separable.TanhBasis`` products on the box the
        tokens' scale bounds. Only where every argument is a sum of tokens (its scale is then known)."""
        if self.realization is None or not all(is_vector(a, self.tree) for a in term.args):
            return None
        sides = [_token_sides(a, self.var, self.tree) for a in term.args]
        if any(s is None for s in sides):
            return None
        d, m = self.d, self.d * len(term.args)
        f = self.realization.function(term.name, m)
        weights = [float((f.weight[j * d:(j + 1) * d] ** 2).sum() ** 0.5) for j in range(len(term.args))]
        host_reach = TOKEN_SPREAD * sum(w * s[1] for w, s in zip(weights, sides))
        candidate_reach = TOKEN_SPREAD * sum(w * s[3] for w, s in zip(weights, sides))
        alpha = (f.bias - host_reach, f.bias + host_reach)
        beta = (-candidate_reach, candidate_reach)
        basis = tanh_basis(alpha, beta)
        if basis is None:
            raise CompileRefusal("score_form", term_text(term),
                                 f"the score term {term_text(term)} needs more than {MAX_RANK} products of a host "
                                 f"and a candidate feature (its tanh's argument spans [{alpha[0]:.3g}, {alpha[1]:.3g}] x "
                                 f"[{beta[0]:.3g}, {beta[1]:.3g}] on the tokens' scale)")
        hosts, candidates = tuple(s[0] for s in sides), tuple(s[2] for s in sides)
        side = functools.partial(SmoothSide, term.name, m)
        factors = [Factor(ex.Num(1.0), side("candidate", "square", candidates), 1, coefficient / m)]
        factors += [Factor(h, k, d, 2 * coefficient / m) for h, _, k, _ in sides if h is not None and k is not None]
        factors.append(Factor(side("host", "tanh", hosts, alpha=alpha, beta=beta),
                              side("candidate", "tanh", candidates, alpha=alpha, beta=beta),
                              basis.rank, 0.5 * coefficient))
        return factors


def _token_sides(e, var: str, tree):
    """``e`` as (host part, its scale, candidate part, its scale): each part a sum of tokens (None: none),
    its scale the sum of the tokens' absolute coefficients; None when ``e`` is no sum of tokens or a token
    reads the candidate's variable and another."""
    if isinstance(e, ex.Content):
        read = reads(e, tree)
        if var not in read:
            return e, 1.0, None, 0.0
        return (None, 0.0, e, 1.0) if read <= {var} else None
    if isinstance(e, ex.Neg):
        inner = _token_sides(e.operand, var, tree)
        return inner and (_negated(inner[0]), inner[1], _negated(inner[2]), inner[3])
    if isinstance(e, ex.BinOp) and e.op in "+-":
        left, right = _token_sides(e.left, var, tree), _token_sides(e.right, var, tree)
        if left is None or right is None:
            return None
        join = lambda a, b: a if b is None else (_negated(b) if e.op == "-" else b) if a is None else ex.BinOp(e.op, a, b)
        return join(left[0], right[0]), left[1] + right[1], join(left[2], right[2]), left[3] + right[3]
    if isinstance(e, ex.BinOp) and e.op == "*":
        number, other = (e.left, e.right) if isinstance(e.left, ex.Num) else (e.right, e.left)
        inner = _token_sides(other, var, tree) if isinstance(number, ex.Num) else None
        scaled = lambda p: None if p is None else ex.BinOp("*", number, p)
        scale = abs(float(number.value)) if isinstance(number, ex.Num) else 0.0
        return inner and (scaled(inner[0]), scale * inner[1], scaled(inner[2]), scale * inner[3])
    return None


def _negated(e):
    return None if e is None else ex.Neg(e)
