"""Where each fact of a compiled witness lives in the residual stream: the slots, and the ``Plan`` the
weights are written from. No torch here.

Every fact a later map reads gets a slot of its own, and so does every head's query, key and outbox. When
the stream is too narrow for that, a slot whose last reader has run leaves its coordinates to one written later
(``last_use``): a layer's queries, keys and outboxes are dead once its attention has read them, a fact once the
last map or head that reads it has run.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from experiments.compilation.facts import (
    ANSWER,
    ONE,
    OUTPUT_FLAG,
    POSITION,
    TOKEN,
    Role,
    SlotId,
    Where,
    flag,
    position_text,
)
from experiments.compilation.head_plan import HeadKind, HeadPlan, fixed_key
from experiments.compilation.plan import Flow
from infoflow_smt.errors import CompileRefusal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import fixed_to_text
from infoflow_smt.model.program import Program


@dataclass(frozen=True)
class Slot:
    id: SlotId
    start: int
    width: int
    what: str

    @property
    def span(self) -> slice:
        return slice(self.start, self.start + self.width)

    def __str__(self) -> str:
        return f"{self.start:>4}..{self.start + self.width - 1:<4} {self.id!s:<14} {self.what}"


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
    locations: tuple[dict, ...]                   # per layer: class -> fact -> Where
    slots: tuple[Slot, ...]
    answer_width: int
    written: tuple[tuple[int, tuple[str, ...]], ...] = ()  # per map (after layer m), the values it writes
    realization: object = None                    # the target's parameters (bilinear matrices in W_Q)
    frees: tuple[tuple[SlotId, ...], ...] = ()    # per map (0: after the embedding): slots it clears, dead
                                                  # there, whose coordinates a later slot reuses
    causal: bool = False

    def slot(self, id: SlotId) -> Slot:
        return next(s for s in self.slots if s.id == id)

    def has(self, id: SlotId) -> bool:
        return any(s.id == id for s in self.slots)

    def span(self, id: SlotId) -> slice:
        """The coordinates of slot ``id``."""
        return self.slot(id).span

    def start(self, id: SlotId) -> int:
        return self.slot(id).start

    def at(self, where: Where) -> int:
        """The first coordinate of a fact."""
        return self.slot(where.slot).start + where.offset

    def non_candidate(self, node: str) -> int:
        """The coordinate of the mask of ``node``'s non-candidates: the output flag for a node over every
        position, its own flag otherwise."""
        return self.start(SlotId(Role.SKIP, node) if node in self.skips else OUTPUT_FLAG)

    def head(self, layer: int, head: int) -> HeadPlan | None:
        return next((h for h in self.head_plans if (h.layer, h.head) == (layer, head)), None)

    def head_of(self, slot: SlotId) -> HeadPlan:
        """The head part whose output (or whose output separated) ``slot`` is."""
        return next(h for h in self.head_plans if slot.role in (Role.HEAD, Role.SEPARATED) and h.ref == slot.owner)

    def values_written(self, layer: int) -> tuple[str, ...]:
        return dict(self.written).get(layer, ())

    def used(self) -> int:
        return max((s.start + s.width for s in self.slots), default=0)

    def __str__(self) -> str:
        lines = [f"residual stream: {self.used()} of E = {self.width} dimensions in {len(self.slots)} slots"]
        lines += [f"  (the map after {'the embedding' if m == 0 else f'layer {m}'} clears "
                  f"{', '.join(str(s) for s in ids)}: nothing reads them later, and later slots reuse their dimensions)"
                  for m, ids in enumerate(self.frees) if ids]
        return "\n".join(lines + [f"  {s}" for s in self.slots])


def lay_out(flow: Flow, width: int, check: bool = True, last_use: dict[SlotId, int] | None = None) -> Plan:
    """``flow`` placed in a stream of ``width`` dimensions: a slot per fact, query, key and outbox, else, given
    ``last_use`` (fact slot -> the last time anything reads it, ``SlotId.written``'s clock), the room of what is
    dead reused (``_allocate_live``). ``check``: refuse (``CompileRefusal``) a stream or a head too narrow for
    what it holds."""
    wanted = wanted_slots(flow)
    slots, frees = _placed(wanted), ()
    if sum(s.width for s in slots) > width and last_use is not None:
        slots, frees = _allocate_live(wanted, last_use, flow.program.layers)
    plan = Plan(flow.program, flow.tree, width, flow.input_dim, flow.heads, flow.classes, flow.flags, flow.skips,
                flow.head_plans, flow.locations, slots, flow.answer_width, flow.written, flow.realization, frees,
                flow.causal)
    if check:
        _refuse_widths(plan)
    return plan


def lifetime(id: SlotId, layers: int, last_use: dict[SlotId, int]) -> tuple[int, float]:
    """(when a slot is written, when the map that clears it runs) on ``SlotId.written``'s clock: a query, key or
    outbox from the map before its layer to the map after it; a fact from when it is written to the first map
    at or after its last reader; the answer to the end."""
    if id.role.scratch:
        return 2 * id.layer - 2, 2 * id.layer
    written = id.written(layers)
    if id.role is Role.ANSWER:
        return written, math.inf
    # a slot a map writes stays until the next map at least: the map that writes it cannot also clear it
    return written, 2 * math.ceil(max(written + 1, last_use.get(id, written)) / 2)


def _allocate_live(wanted, last_use: dict, layers: int):
    """Every slot but the positional ones alive from when it is written to the map that clears it
    (``lifetime``), and a slot written at or after that map may take its coordinates: the map clears them
    (subtracts them) before it writes. First fit, in the order slots are written. Returns (slots, frees)."""
    kept = list(_placed([w for w in wanted if not (w[0].role.scratch or w[0].role.fact)]))
    base = sum(s.width for s in kept)
    placed: list[tuple[Slot, float]] = []   # (slot, the time of the map that clears it)
    reused: set[SlotId] = set()
    timed = sorted(((lifetime(w[0], layers, last_use), w) for w in wanted if w[0].role.scratch or w[0].role.fact),
                   key=lambda t: t[0][0])
    for (written, clears), (id, width, what) in timed:
        for start in sorted({base, *(s.start + s.width for s, _ in placed)}):
            clash = [(s, c) for s, c in placed if s.start < start + width and start < s.start + s.width]
            if all(c <= written for _, c in clash):   # a map clears before it writes
                reused |= {s.id for s, _ in clash}
                break
        placed.append((Slot(id, start, width, what), clears))
    frees = tuple(tuple(s.id for s, c in placed if s.id in reused and c == 2 * m) for m in range(layers + 1))
    return tuple(kept + [s for s, _ in placed]), frees


def _placed(wanted, start: int = 0) -> tuple[Slot, ...]:
    slots = []
    for id, width, what in wanted:
        slots.append(Slot(id, start, width, what))
        start += width
    return tuple(slots)


def wanted_slots(flow: Flow) -> list[tuple[SlotId, int, str]]:
    """Every slot the flow needs, with its width and what it holds, in allocation order."""
    d, plans = flow.input_dim, flow.head_plans
    wanted = [(ONE, 1, "the constant 1"), (OUTPUT_FLAG, 1, "1 at the output token"), (TOKEN, d, "the token")]
    wanted += [(flag(q), 1, f"1 at position {fixed_to_text(q)}") for q in sorted(flow.flags, key=fixed_key)]
    if any(h.kind in (HeadKind.OFFSET, HeadKind.MIXED) for h in plans):
        wanted.append((POSITION, 2, "cos and sin of (position * 2 pi / 4096)"))
    wanted += [(SlotId(Role.SKIP, n), 1, f"1 where a position is no candidate of {n}") for n in flow.skips]
    wanted += [(SlotId(Role.COUNT, n), 1, f"the count {n}, at every position") for n in flow.counts]
    for h in plans:
        where = f"layer {h.layer} head {h.head}"
        if h.kind is HeadKind.RETRIEVE:
            nodes = ", ".join(s.node for s in h.selections)
            if h.query_slot_width():
                wanted.append((h.slot(Role.QUERY), h.query_slot_width(), f"{where} query: host features of {nodes}"))
            if h.key_slot_width():
                wanted.append((h.slot(Role.KEY), h.key_slot_width(), f"{where} key: candidate features of {nodes}"))
        elif h.kind is HeadKind.MIXED:
            fixed = ", ".join(fixed_to_text(q) for q in h.fixed_sources)
            wanted.append((h.slot(Role.KEY), 2, f"{where} key: the positional features, 0 at {fixed}"))
            wanted.append((h.slot(Role.OUTBOX), h.outbox_width(), (f"{where} outbox: the facts, flag and position "
                                                                  f"each of {fixed} sends")))
        elif h.kind is HeadKind.AVERAGE:
            nodes = ", ".join(n for n, _ in h.averages)
            wanted.append((h.slot(Role.OUTBOX), h.outbox_width(), f"{where} outbox: per-token values of {nodes}"))
        elif h.kind is HeadKind.POSITIONS:
            sources = ", ".join(fixed_to_text(q) for q, _ in h.blocks)
            wanted.append((h.slot(Role.OUTBOX), h.outbox_width(), f"{where} outbox: the facts positions {sources} send"))
        # an offset head's W_Q and W_K read the positional features, its W_V the source's facts: no slot of its own
        if h.head_width():
            what = "1/(T+1) (the averages are added onto its outbox)" if h.kind is HeadKind.AVERAGE else (
                "what it copied" + (" (what it gathered is added onto its outbox)" if h.accumulates else ""))
            wanted.append((h.slot(Role.HEAD), h.head_width(), f"{where} output: {what}"))
        if h.separates and h.kind is HeadKind.AVERAGE:
            wanted.append((h.slot(Role.SEPARATED), h.separated_width(),
                           (f"{where}: the averages of {', '.join(n for n, _ in h.averages)}, separated by the map "
                            f"after layer {h.layer}")))
        elif h.separates:
            wanted.append((h.slot(Role.SEPARATED), h.separated_width(),
                           (f"{where}: the facts of {', '.join(position_text(q) for q, _ in h.blocks)}, separated by "
                           f"the map after layer {h.layer}")))
    wanted += [(SlotId(Role.VALUES, m), len(nodes), (f"the values of {', '.join(nodes)}, as the map after layer {m} "
                                                    "computed them")) for m, nodes in flow.written]
    wanted.append((ANSWER, flow.answer_width, "the output token's answer"))
    return wanted


def roomy_width(plan: Plan) -> int:
    """A width with room for every slot and every head's query, key and value (the first, unpruned pass)."""
    widest = [plan.heads[h.layer - 1] * max(h.query_at + h.query_width(), h.value_at + h.value_width())
              for h in plan.head_plans]
    return max([plan.width, plan.used(), *widest])


def _refuse_widths(plan: Plan) -> None:
    for h in plan.head_plans:
        head_dim = plan.width // plan.heads[h.layer - 1]
        query, value = h.query_at + h.query_width(), h.value_at + h.value_width()
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
