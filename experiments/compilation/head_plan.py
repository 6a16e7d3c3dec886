"""A head's part in a compiled witness (``HeadPlan``): what kind of thing it does, what it selects or gathers,
and the widths of its query, key, outbox and value. No torch here (``parts`` builds them, ``plan`` strings them
together layer by layer).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from experiments.compilation.factors import Selection
from experiments.compilation.facts import Fact, HeadRef, Kind, Role, SlotId, position_text
from infoflow_smt.lang import expr as ex
from infoflow_smt.model.program import Offset
from infoflow_smt.verify.arithmetic import is_vector


class HeadKind(enum.Enum):
    RETRIEVE = "retrieve"     # a max-position retrieval per acting class
    POSITIONS = "positions"   # fixed positions gathered by their flags
    OFFSET = "offset"         # the position p + offset gathered by rotated positional features
    MIXED = "mixed"           # an offset and fixed positions gathered by one head
    AVERAGE = "average"       # a uniform average over every position


@dataclass(frozen=True)
class HeadPlan:
    layer: int
    head: int
    kind: HeadKind
    selections: tuple[Selection, ...] = ()        # retrieve: one per node the head selects anywhere
    by_class: tuple[tuple[object, object], ...] = ()  # class -> node (retrieve) or positions gathered
    values: tuple[tuple[Fact, int], ...] = ()     # retrieve: the candidate's facts the value copies, and widths
    blocks: tuple[tuple[object, tuple[tuple[Fact, int], ...]], ...] = ()  # gathers: each source's facts
    averages: tuple[tuple[str, int], ...] = ()    # average: each aggregate node and the width of its value
    part: str = ""                                # a head doing several kinds of things: one part per kind
    query_at: int = 0                             # where the part's query and key coordinates start
    value_at: int = 0                             # where its value coordinates start
    shared: tuple[tuple[Fact, int], ...] = ()     # global values (an average every input holds) copied, and widths
    gated: tuple[tuple[Fact, int, object], ...] = ()  # positions: global values one source sends, from where
    gate: bool = False                            # offset, mixed: the sources' positional features copied too

    @property
    def ref(self) -> HeadRef:
        return HeadRef(self.layer, self.head, self.part)

    def slot(self, role: Role) -> SlotId:
        return SlotId(role, self.ref)

    @property
    def fixed_sources(self) -> tuple[ex.FixedIndex, ...]:
        return tuple(q for q, _ in self.blocks if isinstance(q, ex.FixedIndex))

    @property
    def separates(self) -> bool:
        """Its sources are mixed in its output, or its averages lie on its outbox: the map after its layer
        separates them (``Role.SEPARATED``)."""
        return self.kind in (HeadKind.POSITIONS, HeadKind.MIXED, HeadKind.AVERAGE) or (
            self.kind is HeadKind.OFFSET and self.gate)

    @property
    def accumulates(self) -> bool:
        """Its sources send their facts (an averaging head: their per-token values) through an outbox, and
        ``W_O`` adds what it gathered back onto the outbox's own coordinates (the map after the layer subtracts
        what the position sent itself): the outbox and the gathered blocks share their room."""
        return self.kind in (HeadKind.POSITIONS, HeadKind.MIXED, HeadKind.AVERAGE)

    @property
    def outbox_at(self) -> int:
        """The value column where the copy of the outbox starts."""
        return self.block_width + 2 * self.gate if self.kind is HeadKind.MIXED else 0

    def head_width(self) -> int:
        """The value columns ``W_O`` writes into the head's own output slot (the rest, an accumulating head's
        outbox, goes back onto the outbox)."""
        return self.value_width() - self.outbox_width() if self.accumulates else self.value_width()

    def separated_width(self) -> int:
        if self.kind in (HeadKind.POSITIONS, HeadKind.AVERAGE):
            return self.outbox_width()
        return self.block_width * len(self.blocks)

    @property
    def block_width(self) -> int:
        """The width of one source's facts (an offset or mixed head copies the same facts from each)."""
        return sum(w for _, w in self.blocks[0][1]) if self.blocks else 0

    def query_width(self) -> int:
        if self.kind is HeadKind.AVERAGE:
            return 0  # a uniform average: every score is 0
        if self.kind is HeadKind.OFFSET:
            return 3  # the rotated position and the sink (the output token, where p + offset is outside)
        if self.kind is HeadKind.MIXED:
            return 4  # the offset's three and the fixed sources' flags
        return sum(s.rank for s in self.selections) if self.kind is HeadKind.RETRIEVE else len(self.blocks)

    def query_slot_width(self) -> int:
        """The host features the map writes (the mask coordinate is read from the class flags by ``W_Q``)."""
        return sum(sum(f.rank for f in s.factors if not (f.query_direct or f.query_constant)) for s in self.selections)

    def key_slot_width(self) -> int:
        return sum(f.rank for s in self.selections for f in s.factors if not f.key_direct)

    def outbox_width(self) -> int:
        if self.kind is HeadKind.MIXED:  # per fixed source: its facts, its flag (and its positional features)
            return len(self.fixed_sources) * (self.block_width + 1 + 2 * self.gate)
        if self.kind is HeadKind.AVERAGE:
            return sum(w for _, w in self.averages)
        if self.kind is HeadKind.POSITIONS:
            return sum(w for _, facts in self.blocks for _, w in facts) + sum(w for _, w, _ in self.gated)
        return 0

    def value_width(self) -> int:
        if self.kind is HeadKind.RETRIEVE:
            return sum(s.key_width for s in self.selections) + sum(w for _, w in self.values) + self.shared_width
        if self.kind is HeadKind.MIXED:  # the mixture of the sources' facts (and positions), then the outbox
            return self.block_width + 2 * self.gate + self.outbox_width()
        if self.kind is HeadKind.OFFSET:
            return self.block_width + 2 * self.gate
        if self.kind is HeadKind.AVERAGE:  # per node its value and its domain's share, then 1/(T+1)
            return self.outbox_width() + 1
        return self.outbox_width() + self.shared_width

    @property
    def shared_width(self) -> int:
        return sum(w for _, w in self.shared)


def fact_width(f: Fact, d: int, tree) -> int:
    if f.kind is Kind.TOKEN:
        return d
    if f.kind is Kind.AVERAGE:
        return average_width(f.node, tree, d)[1]
    return 1


def fixed_key(q) -> tuple:
    """An order of positions: fixed ones by their text, then offsets."""
    return (isinstance(q, Offset), position_text(q))


def average_width(node: str, tree, d: int) -> tuple[int, int]:
    """The width of an aggregate's value, and of what an average carries for it: the value and, for a
    mean, the domain's share (a sum divides by the 1/(T+1) every average carries once)."""
    width = d if is_vector(tree.nodes[node]["score"], tree) else 1
    return width, width + (tree.nodes[node]["sense"] == "mean")


def mixed_block(hp: HeadPlan, j: int) -> int:
    """Where in a mixed head's outbox fixed source ``j`` (0-based) sends its facts, then its flag (and its
    positional features)."""
    return j * (hp.block_width + 1 + 2 * hp.gate)
