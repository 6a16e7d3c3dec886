"""The plan of a compiled witness: what every position holds after each layer and what each head's query, key
and value read (``Flow``). No torch here (``layout`` places the facts in the residual stream, ``weights``
writes the heads).

Facts (``facts.Fact``) are tokens, selections' values, the winners' candidate features and global averages,
each named by the route that brought it. Input positions share one layout (a slot a class does not hold is
never read there); the output token starts empty (docs/model.md). Each slot is written once, by one layer or
one map, and read after. A retrieval's query and key are its score split into products (``factors``); the
map after a layer writes the value of each selection an input position made there (``Kind.VALUE``), so a later
retrieval of that position copies the value itself, not the tokens it was computed from (at a tie the copied
tokens are an average of two winners, the copied value is not).
"""
from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

from experiments.compilation.factors import is_count
from experiments.compilation.facts import INPUT, OUTPUT, Fact, Role, SlotId, Where, value
from experiments.compilation.head_plan import HeadKind, HeadPlan, fixed_key
from experiments.compilation.log_keys import log_key
from experiments.compilation.parts import head_parts
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.model.program import Mode, Offset, Program
from infoflow_smt.verify.arithmetic import is_vector


@dataclass(frozen=True)
class Keep:
    """What the second plan keeps (``compiling.needed``): per head, the facts it copies (from a retrieval's
    candidate, or ``(source, fact)`` for a gather), and the selections' values each map writes."""

    copies: dict = field(default_factory=dict)     # (layer, head) -> set
    values: frozenset = frozenset()                # (layer, node)


@dataclass(frozen=True)
class Flow:
    """What the witness moves, before any of it has a place in the stream: the position classes, the heads'
    plans, and what every class holds after each layer (``locations``: per layer, class -> fact -> ``Where``)."""

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
    written: tuple[tuple[int, tuple[str, ...]], ...] = ()  # per map (after layer m), the values it writes
    realization: object = None                    # the target's parameters (bilinear matrices in W_Q)
    causal: bool = False


# ---- the plan --------------------------------------------------------------------------------------
def plan_flow(program: Program, tree, input_dim: int, heads: tuple[int, ...], keep: Keep | None = None,
              realization=None, causal: bool = False, log_keys: bool = False) -> Flow:
    """The flow of ``program`` (computing ``tree``); raises ``CompileRefusal`` for what cannot be written as
    weights. ``keep`` limits the facts each head copies and the values each map writes to those read later
    (``compiling.needed``); None keeps everything. Under a causal mask a selection over ``range(1, s+1)`` made at
    ``s`` needs no mask of its own: the attention's is it. ``log_keys``: a selection of the least value of a
    convex function of the candidate's token ranks by its logarithm above the least value (``log_keys.log_key``)."""
    refuse_modes(program, tree, causal)
    fixed = sorted({a.where for a in program.actions if isinstance(a.where, ex.FixedIndex)}, key=fixed_key)
    classes = (INPUT, *fixed, OUTPUT)
    sources = {q for a in program.actions if a.op.mode is Mode.POSITIONS for q in a.op.positions
               if isinstance(q, ex.FixedIndex)}
    flags = tuple(sorted(set(fixed) | sources, key=fixed_key))
    locations = [{c: ({Fact(): Where(SlotId(Role.TOKEN), 0)} if c != OUTPUT else {}) for c in classes}]
    plans, written = [], []
    build = functools.partial(head_parts, tree=tree, d=input_dim, realization=realization, causal=causal)
    for layer in range(1, program.layers + 1):
        current = {c: dict(locations[-1][c]) for c in classes}
        mine = []
        for head in range(1, heads[layer - 1] + 1):
            acts = {c: a for c in classes if (a := _action(program, layer, head, c)) and a.op.mode is not Mode.IDLE}
            if acts:
                kept = None if keep is None else keep.copies.get((layer, head), set())
                mine += build(layer, head, acts, locations[-1], current, kept=kept)
        written.append((layer, _write_values(layer, mine, current, tree, keep)))
        plans += mine
        locations.append(current)
    if log_keys:
        plans = [dataclasses.replace(h, selections=tuple(log_key(s, tree, input_dim, realization)
                                                         for s in h.selections)) for h in plans]
    masked = {s.node for h in plans for s in h.selections} | {n for h in plans for n, _ in h.averages}
    skips = tuple(sorted(n for n in masked if not isinstance(tree.nodes[n]["domain"], ex.AllPositions)
                         and not masked_prefix(n, tree, causal)))
    answer_width = input_dim if is_vector(tree.graph["output"], tree) else 1
    counts = tuple(sorted(n for n in tree.nodes if is_count(n, tree)))
    return Flow(program, tree, input_dim, heads, classes, flags, skips, tuple(plans), tuple(locations), answer_width,
                counts, tuple((m, nodes) for m, nodes in written if nodes), realization, causal)


def _write_values(layer: int, plans: list[HeadPlan], current: dict, tree, keep: Keep | None) -> tuple[str, ...]:
    """The selections' values the map after ``layer`` writes: each min or max an input class made in this layer
    (its value, computed from the copied candidate features or tokens), where a later reader needs it."""
    made = sorted({(c, node) for h in plans if h.kind is HeadKind.RETRIEVE for c, node in h.by_class
                   if c != OUTPUT and tree.nodes[node]["sense"] in ("min", "max")
                   and (keep is None or (layer, node) in keep.values)}, key=str)
    nodes = tuple(sorted({node for _, node in made}))
    for c, node in made:
        current[c][value(node)] = Where(SlotId(Role.VALUES, layer), nodes.index(node))
    return nodes


def masked_prefix(node: str, tree, causal: bool) -> bool:
    data = tree.nodes[node]
    return causal and any(ex.masked_prefix(data["domain"], v) for v in data["bound"])


WRITTEN = (Mode.RETRIEVE, Mode.POSITIONS, Mode.AVERAGE, Mode.IDLE)   # the operations the compiler writes as heads


def refuse_modes(program: Program, tree, causal: bool) -> None:
    for a in program.actions:
        domain = tree.nodes[a.op.node]["domain"] if a.op.node in tree.nodes else None
        if domain is not None and ex.domain_variables(domain) and not masked_prefix(a.op.node, tree, causal):
            raise CompileRefusal("mode", str(a), f"{a}: a range bounded by a variable is compiled only as "
                                 "range(1, s+1) at s under a causal mask, where the mask is the range")
        if a.op.mode in (Mode.AGGREGATE, Mode.KTH):
            raise CompileRefusal("mode", str(a), f"{a}: {a.op.mode.value} is not compiled (a softmax head "
                                 "averages; exact maps cannot decode T tokens or rank the k-th from one average)")
        if a.op.mode not in WRITTEN:
            raise CompileRefusal("mode", str(a), f"{a}: {a.op.mode.value} is not compiled yet")
        offsets = [q for q in a.op.positions if isinstance(q, Offset)] if a.op.mode is Mode.POSITIONS else []
        if len(offsets) > 1:
            raise CompileRefusal("mode", str(a), f"{a}: one head gathering two offsets is not compiled (the "
                                 "weights tell one rotated position from the others, not two)")
        if a.op.mode is Mode.RETRIEVE and len(tree.nodes[a.op.node]["bound"]) > 1:
            raise CompileRefusal("mode", str(a), f"{a}: one position plays several variables")


def _action(program: Program, layer: int, head: int, c):
    """What ``head`` does at class ``c`` (a fixed position does what every input position does, unless
    the program overrides it there)."""
    found = program.action_for(layer, head, c)
    if found is None and isinstance(c, ex.FixedIndex):
        found = program.action_for(layer, head, INPUT)
    return found
