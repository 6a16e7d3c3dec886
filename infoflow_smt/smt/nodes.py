"""The nodes of an encoding and what they read: the data the encoder, the counts and the symmetry share.

A node is one single-variable selection or aggregate of a comparison tree under one variable order
(``NodeInfo``); what its score reads is split by who must hold it (``Reads``: the selecting position, every
candidate, or either); an operation variable is a retrieval of a node, the global aggregation or averaging,
or a specific-position head (``OperationName``); ``Hosts`` relates nodes that are one selection elsewhere
(``trees.Hosting``).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.hosting import HOST
from infoflow_smt.model.program import Mode


class Reader(enum.Enum):
    """Who must hold what a score reads (module docstring), by the variables the read is tied to."""

    SELECTOR = "selector"     # the variables the selecting position plays
    CANDIDATE = "candidate"   # the node's own variable: every candidate reads its own
    EITHER = "either"         # no variable: the selector, or every candidate
    BOTH = "both"             # the variables of both sides at once


@dataclass(frozen=True)
class Need:
    """One thing a position must hold or know: ``("fixed", q)``, ``("offset", k)``, ``("node", key)``
    (a node of the same order), ``("group", gid)`` (a group's outermost node, under its chosen order)."""

    kind: str
    what: object


@dataclass(frozen=True)
class Reads:
    """What evaluating a score reads, by who must hold it (module docstring)."""

    selector: tuple[Need, ...] = ()
    candidate: tuple[Need, ...] = ()
    either: tuple[Need, ...] = ()
    both: bool = False  # a read ties both sides' variables: only candidates holding everything can rank

    @property
    def empty(self) -> bool:
        return not (self.selector or self.candidate or self.either or self.both)


@dataclass(frozen=True)
class OperationName:
    """What one operation variable does (at some class, in some layer): a retrieval of ``node`` (a
    ``NodeInfo.key``; a k-th retrieval when ``mode`` is ``KTH``), the global aggregation or averaging, or the
    ``slot``-th specific-position head. ``text`` is its part of the SMT names; names sort by their text."""

    mode: Mode
    node: str | None = None
    slot: int | None = None

    def __post_init__(self):
        if (self.node is not None) != (self.mode in (Mode.RETRIEVE, Mode.KTH)) or self.mode is Mode.IDLE:
            raise ValueError(f"a {self.mode.name} operation with node {self.node!r}")
        if (self.slot is not None) != (self.mode is Mode.POSITIONS) or (self.slot is not None and self.slot < 1):
            raise ValueError(f"a {self.mode.name} operation with slot {self.slot!r}")

    @classmethod
    def selection(cls, info: NodeInfo) -> OperationName:
        """The retrieval that makes selection ``info``."""
        return cls(Mode.KTH if info.kind == "kth" else Mode.RETRIEVE, node=info.key)

    @property
    def selects(self) -> bool:
        return self.node is not None

    @property
    def text(self) -> str:
        """``RETRIEVE:<node>``, ``KTH:<node>``, ``AGGREGATE``, ``AVERAGE`` or ``POSITIONS#<slot>``."""
        if self.node is not None:
            return f"{self.mode.name}:{self.node}"
        return self.mode.name if self.slot is None else f"{self.mode.name}#{self.slot}"

    def __lt__(self, other: OperationName) -> bool:  # the order of the SMT names, so of the witness's heads
        return self.text < other.text


GLOBAL_AGGREGATION = OperationName(Mode.AGGREGATE)
GLOBAL_AVERAGING = OperationName(Mode.AVERAGE)
PREFIX_COLLECTION = OperationName(Mode.COLLECT)


@dataclass(frozen=True)
class NodeInfo:
    """One single-variable node of one group under one variable order."""

    key: str                    # unique: group|order|var
    node: str                   # the tree's node id (g0.t)
    group: str
    order: tuple[str, ...]
    kind: str                   # top1, kth, aggregate
    bound: frozenset[str]
    k: int
    domain: ex.Domain
    reads: Reads                # ranking its candidates (a selection), or one token's value (an aggregate)
    constant: bool              # its score reads nothing: known everywhere from the start
    rank: int | None = None     # under the rank rule: its score's bilinear rank (None: unbounded), as
                                # infoflow_smt/lang/rank.py counts it
    sense: str = ""             # min, max, argmin, argmax, kth, sum, mean

    @property
    def restricted(self) -> bool:  # candidates restricted to a subset or range: positions tell them apart
        return not isinstance(self.domain, ex.AllPositions)

    @property
    def prefix(self) -> bool:
        """An aggregate over the positions up to the one that plays its bound variable (``range(1, s+1)`` and
        the ranges inside it): under a causal mask an averaging head there sees exactly its candidates."""
        return self.kind == "aggregate" and len(self.bound) == 1 and any(
            ex.sees_candidates(self.domain, v) for v in self.bound)

    @property
    def hosted(self) -> bool:  # a hosted form (``trees.py``): made by input positions for themselves
        return HOST in self.bound


@dataclass(frozen=True)
class Hosts:
    """How the nodes of an encoding are one another elsewhere (``trees.Hosting``), by node key: ``same``
    pairs are one selection at each position (two nodes of one hosted form, each at its own bound
    variable); a ``copies`` triple ``(m, a, n)`` says that node ``n`` is the hosted node ``a`` made at the
    winner of node ``m``, so a retrieval of ``m`` whose candidates all know ``a`` brings ``n``."""

    same: tuple[tuple[str, str], ...] = ()
    copies: tuple[tuple[str, str, str], ...] = ()
    prefixes: tuple[tuple[str, str], ...] = ()   # (a selection, its prefix form): a prefix collection brings it
    moved: tuple[tuple[str, str, int], ...] = ()  # (a winner read ahead, the moved selection, m): trees.py
    fixed: tuple[tuple[str, str, object], ...] = ()   # (a node, the hosted form, the fixed position P): the
                                                      # form position P makes for itself is that node

    def __bool__(self) -> bool:
        return bool(self.same or self.copies or self.prefixes or self.moved)

    def groups(self, nodes: dict[str, NodeInfo]) -> set[str]:
        """The groups with a node in a relation."""
        keys = {k for pair in (*self.same, *self.prefixes) for k in pair} | {k for triple in self.copies for k in triple}
        keys |= {k for n, w, _ in (*self.moved, *self.fixed) for k in (n, w)}
        return {nodes[k].group for k in keys}
