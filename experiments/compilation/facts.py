"""The vocabulary of a compiled witness's plan, as typed values: what a position holds (``Fact``), which part of
which head moved it (``HeadRef``), and where it lies in the residual stream (``SlotId``, ``Where``). No torch.

A fact is named by its *route*, the operations that brought it, and its *kind*:
``Fact()`` is the position's own token; ``Fact(("g0.t",))`` the token of the position it retrieved for node
``g0.t``; ``Fact(("g0.s", "g0.t"))`` the token that winner had retrieved; ``Fact((Gathered(FixedIndex(1)),))``
the token gathered from position 1; ``Fact(("g1.a",), Kind.VALUE, "g2.d")`` the value of selection ``g2.d`` as
the winner of ``g1.a`` computed it for itself.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.lang.language import fixed_to_text
from infoflow_smt.model.program import Offset

INPUT, OUTPUT = "input", "output"   # the position classes every witness has (``Program``'s ``where``)

ANGLE = 2 * math.pi / 4096   # positional features cos, sin of p * ANGLE: distinct positions up to T = 2048


class Kind(enum.Enum):
    TOKEN = "token"       # a position's token: d coordinates
    VALUE = "value"       # a selection's value, as the position that made it computed it: 1 coordinate
    KEY = "key"           # the winner's candidate features, copied by the head that made the selection
    AVERAGE = "average"   # an aggregate's per-token value averaged over every position (and its domain's share)
    COUNT = "count"       # 1/(T+1), what the output flag averages to

    @property
    def global_(self) -> bool:
        """The same at every position: a head copies it from any source, under its own name."""
        return self in (Kind.AVERAGE, Kind.COUNT)


@dataclass(frozen=True)
class Gathered:
    """A step of a route: the facts gathered from a fixed position or an offset."""

    source: FixedIndex | Offset

    def __str__(self) -> str:
        return f"x[{position_text(self.source)}]"


Step = str | Gathered   # a node's name (the winner of that node, as retrieved there) or a gathered position


@dataclass(frozen=True)
class Fact:
    route: tuple[Step, ...] = ()
    kind: Kind = Kind.TOKEN
    node: str | None = None

    def via(self, step: Step) -> Fact:
        """This fact as a position that copied it through ``step`` holds it."""
        return Fact((step, *self.route), self.kind, self.node)

    @property
    def rest(self) -> Fact:
        """The fact at the source of its first step."""
        return Fact(self.route[1:], self.kind, self.node)

    @property
    def last(self) -> Step | None:
        return self.route[-1] if self.route else None

    def __str__(self) -> str:
        if self.kind is Kind.COUNT:
            return "1/(T+1)"
        if self.kind is Kind.AVERAGE:
            return f"average {self.node}"
        if self.kind is Kind.KEY:
            return f"candidate features of the winner of {self.node}"
        where = " > ".join(str(s) for s in self.route)
        if self.kind is Kind.VALUE:
            return f"value of {self.node}" + (f" at {where}" if where else "")
        return f"token of {where}" if where else "own token"


OWN_TOKEN = Fact()
COUNT = Fact((), Kind.COUNT)


def key(node: str) -> Fact:
    return Fact((), Kind.KEY, node)


def average(node: str) -> Fact:
    return Fact((), Kind.AVERAGE, node)


def value(node: str, route: tuple[Step, ...] = ()) -> Fact:
    return Fact(route, Kind.VALUE, node)


def position_text(q: FixedIndex | Offset) -> str:
    return str(q) if isinstance(q, Offset) else fixed_to_text(q)


def class_text(c) -> str:
    return c if isinstance(c, str) else f"position {fixed_to_text(c)}"


# ---- the residual stream's slots -----------------------------------------------------------------------
@dataclass(frozen=True, order=True)
class HeadRef:
    """One part of one head: a head doing several kinds of things has one part per kind (``part``)."""

    layer: int
    head: int
    part: str = ""

    def __str__(self) -> str:
        return f"{self.layer}.{self.head}{self.part}"


class Role(enum.Enum):
    ONE = "one"             # the constant 1
    OUTPUT = "output"       # 1 at the output token
    TOKEN = "x"             # the token
    FLAG = "at"             # 1 at one fixed position (owner: its FixedIndex)
    POSITION = "pos"        # cos and sin of the position's angle (offset heads)
    SKIP = "skip"           # 1 where a position is no candidate of a node (owner: the node)
    COUNT = "count"         # a count every position knows (owner: the node)
    QUERY = "q"             # a head part's host features (owner: HeadRef), written by the map before its layer
    KEY = "k"               # its candidate features
    OUTBOX = "o"            # what its sources send
    HEAD = "h"              # what it copied (its output)
    SEPARATED = "s"         # what a head mixing its sources gathered, separated by the map after it
    VALUES = "v"            # the selections' values a map computed (owner: the layer after which it runs)
    ANSWER = "answer"       # the output token's answer

    @property
    def scratch(self) -> bool:
        """Written by the map before a layer and read by that layer's attention alone."""
        return self in (Role.QUERY, Role.KEY, Role.OUTBOX)

    @property
    def fact(self) -> bool:
        """What a position knows, written once: its token, what a head copied, a value, the answer."""
        return self in (Role.TOKEN, Role.HEAD, Role.SEPARATED, Role.VALUES, Role.ANSWER)

    @property
    def by_map(self) -> bool:
        """Written by the map after its layer (read by that map as it computes it, by later ones as written)."""
        return self in (Role.SEPARATED, Role.VALUES)


@dataclass(frozen=True)
class SlotId:
    role: Role
    owner: HeadRef | FixedIndex | str | int | None = None

    @property
    def layer(self) -> int:
        """The layer of a head part's slot, or the layer after which a values slot is written."""
        return self.owner.layer if isinstance(self.owner, HeadRef) else int(self.owner)

    def written(self, layers: int) -> int:
        """When a fact slot is written, on a clock where the map after layer ``m`` runs at ``2 m`` (the
        embedding's at 0) and the attention of layer ``L`` at ``2 L - 1``."""
        if self.role is Role.TOKEN:
            return -1
        if self.role is Role.ANSWER:
            return 2 * layers
        if self.role.by_map:
            return 2 * self.layer
        return 2 * self.layer - 1

    def __str__(self) -> str:
        if self.owner is None:
            return self.role.value
        if isinstance(self.owner, HeadRef):
            return f"{self.role.value}{self.owner}"
        if self.role is Role.VALUES:
            return f"v{self.owner}"
        owner = fixed_to_text(self.owner) if isinstance(self.owner, FixedIndex) else self.owner
        return f"{self.role.value} {owner}"


ONE, OUTPUT_FLAG, TOKEN, POSITION, ANSWER = (SlotId(r) for r in (Role.ONE, Role.OUTPUT, Role.TOKEN, Role.POSITION,
                                                                  Role.ANSWER))


def flag(q: FixedIndex) -> SlotId:
    return SlotId(Role.FLAG, q)


@dataclass(frozen=True)
class Where:
    """Where a class holds a fact: its slot, the offset in it, and the scale to read it by."""

    slot: SlotId
    offset: int
    scale: float = 1.0
