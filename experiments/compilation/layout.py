"""Where each fact of a compiled witness lives in the residual stream: the slots, and the ``Plan`` the
weights are written from. No torch here.

Every fact a later map reads gets a slot of its own, and so does every head's query, key and outbox. When
the stream is too narrow for that, each layer's queries, keys and outboxes share one scratch region (a
layer's are dead once its attention has read them, and the next map overwrites them); when it is still too
narrow, a fact whose last reader has run leaves its coordinates to a fact written later (``last_use``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from experiments.compilation.plan import Flow, HeadPlan, fixed_name
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.model.program import Program


@dataclass(frozen=True)
class Slot:
    name: str
    start: int
    width: int
    what: str

    def __str__(self) -> str:
        return f"{self.start:>4}..{self.start + self.width - 1:<4} {self.name:<14} {self.what}"


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

    def span(self, name: str) -> slice:
        """The coordinates of slot ``name``."""
        s = self.slot(name)
        return slice(s.start, s.start + s.width)

    def non_candidate(self, node: str) -> int:
        """The coordinate of the mask of ``node``'s non-candidates: the output flag for a node over every
        position, its own flag otherwise."""
        return self.slot(f"skip {node}" if node in self.skips else "output").start

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


def lay_out(flow: Flow, width: int, check: bool = True, last_use: dict[str, int] | None = None) -> Plan:
    """``flow`` placed in a stream of ``width`` dimensions: a slot per fact, else a shared scratch region,
    else, given ``last_use`` (fact slot -> the last time anything reads it, ``fact_time``'s clock), the room
    of dead facts reused (``_allocate_live``). ``check``: refuse (``CompileRefusal``) a stream or a head too
    narrow for what it holds."""
    wanted = (flow.head_plans, flow.flags, flow.skips, flow.input_dim, flow.answer_width, flow.counts)
    slots, scratch, frees = _allocate(*wanted), None, ()
    if sum(s.width for s in slots) > width:
        slots, scratch = _allocate_reusing(*wanted)
    if scratch is not None and scratch.stop > width and last_use is not None:
        slots, scratch, frees = _allocate_live(*wanted, last_use, flow.program.layers)
    plan = Plan(flow.program, flow.tree, width, flow.input_dim, flow.heads, flow.classes, flow.flags, flow.skips,
                flow.head_plans, flow.locations, slots, flow.answer_width, flow.realization, scratch, frees)
    if check:
        _refuse_widths(plan)
    return plan


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
    wanted += [(f"at {fixed_name(q)}", 1, f"1 at position {fixed_name(q)}") for q in flags]
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
            fixed = fixed_name(h.blocks[1][0])
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
            where = ", ".join(fixed_name(q) for q, _ in h.blocks)
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
