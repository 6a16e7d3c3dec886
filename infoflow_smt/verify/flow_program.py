"""Programs of the independent checker: heads with modes and scores over what a position holds.

A program is written as the model states it (docs/model.md, section 2), not over any comparison tree: per
layer, per *place* (every input position alike, the output token, or one input position that positional
encoding tells apart), the heads that place runs. A retrieval names its score as an expression of the target
language over ``SELF`` (the selecting position: ``x[p]``, ``x[p-1]``), the candidate variable, fixed positions
and nested selections; the other modes name what they gather or average. ``flows.check`` gives the program its
meaning on numbers, and ``flow_search.search`` looks for one.

>>> from infoflow_smt.verify import flow_program as fp
>>> prog = fp.program({fp.INPUTS: [fp.gathering(-1)]},
...                   {fp.OUTPUT: [fp.retrieval("dot(x[t-1], x[T])", "t", "range(2, T+1)")]})
>>> print(prog.describe())
layer 1, head 1, at every input position p: gathers x[p-1]
layer 2, head 1, at the output token: retrieves the argmax over t in range(2, T+1) of dot(x[t-1], x[T])
"""
from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.expr import AllPositions, Domain, Expr, FixedIndex, Reduce, ReduceKind, rename
from infoflow_smt.lang.language import domain_to_text, fixed_to_text, parse_target_expr, to_text

SELF = "@p"   # the selecting position in a score: not an identifier, so no target variable can take it
_SHOWN_SELF = "p"


class PlaceKind(enum.Enum):
    INPUTS = "every input position p"
    OUTPUT = "the output token"
    POSITION = "position"


@dataclass(frozen=True)
class Place:
    """Where a head acts: every input position (the default), the output token, or one input position that
    positional encoding tells apart (``position``, a fixed index: ``FixedIndex(3)``, ``FixedIndex(0, True)``
    for ``T``), which then runs its own heads instead of the inputs' ones."""

    kind: PlaceKind
    position: FixedIndex | None = None

    def describe(self) -> str:
        if self.kind is PlaceKind.POSITION:
            return f"position {fixed_to_text(self.position)}"
        return self.kind.value


INPUTS, OUTPUT = Place(PlaceKind.INPUTS), Place(PlaceKind.OUTPUT)


def at(position: FixedIndex | int) -> Place:
    """The place of one input position: ``at(3)``, ``at(FixedIndex(0, True))`` (position ``T``)."""
    return Place(PlaceKind.POSITION, position if isinstance(position, FixedIndex) else FixedIndex(int(position)))


class Mode(enum.Enum):
    RETRIEVE = "max-position retrieval"
    KTH = "k-th largest retrieval"
    AGGREGATE = "global aggregation"
    GATHER = "specific-position aggregation"
    AVERAGE = "global averaging"


@dataclass(frozen=True)
class Head:
    """One head's mode at one place. ``body``: the score (retrievals; over ``SELF`` and ``variable``) or the
    per-position value averaged (averaging; over ``variable``). ``sources``: the positions a gathering takes,
    fixed ones (``FixedIndex``) and offsets from the gathering position (``-1``: ``x[p-1]``)."""

    mode: Mode
    body: Expr | None = None
    variable: str | None = None
    domain: Domain = AllPositions()  # noqa: RUF009 - a frozen dataclass, shared safely
    largest: bool = True
    k: int = 1
    sources: tuple[FixedIndex | int, ...] = ()

    @property
    def is_efficient(self) -> bool:
        """Whether the mode's cost law stays bounded in ``T`` at a constant width (docs/model.md, section 2)."""
        return self.mode in (Mode.RETRIEVE, Mode.GATHER, Mode.AVERAGE)

    def describe(self) -> str:
        if self.mode is Mode.GATHER:
            return "gathers " + ", ".join(_source_text(s) for s in self.sources)
        if self.mode is Mode.AGGREGATE:
            return "aggregates every position it sees"
        over = f"over {self.variable} in {domain_to_text(self.domain)}".replace(SELF, _SHOWN_SELF)
        if self.mode is Mode.AVERAGE:
            return f"averages {_shown(self.body)} {over}"
        which = f"{self.k}-th largest" if self.mode is Mode.KTH else "argmax" if self.largest else "argmin"
        return f"retrieves the {which} {over} of {_shown(self.body)}"


def _shown(e: Expr) -> str:
    return to_text(e).replace(SELF, _SHOWN_SELF)


def _source_text(source: FixedIndex | int) -> str:
    if isinstance(source, FixedIndex):
        return f"x[{fixed_to_text(source)}]"
    return f"x[{_SHOWN_SELF}{source:+d}]"


def _selection(score: str, variable: str, domain: str) -> Reduce:
    """The score text parsed as the body of a reduction over ``variable``, with ``p`` read as ``SELF``."""
    outer = parse_target_expr(f"max(argmax({score} for {variable} in {domain}) for {_SHOWN_SELF} in T)")
    return rename(outer.body, {_SHOWN_SELF: SELF})


def retrieval(score: str, variable: str = "t", domain: str = "T", largest: bool = True) -> Head:
    """A max-position retrieval (``largest=False``: the argmin) of ``score`` over ``variable`` in ``domain``;
    ``p`` in the text is the selecting position.

    >>> retrieval("dot(x[t], x[p])").describe()
    'retrieves the argmax over t in T of dot(x[t], x[p])'
    """
    r = _selection(score, variable, domain)
    return Head(Mode.RETRIEVE, r.body, variable, r.bindings[0].domain, largest)


def kth_retrieval(k: int, score: str, variable: str = "t", domain: str = "T") -> Head:
    """A k-th largest retrieval (inefficient: its cost grows with ``T``)."""
    r = _selection(score, variable, domain)
    return Head(Mode.KTH, r.body, variable, r.bindings[0].domain, True, k)


def gathering(*sources: FixedIndex | int | str) -> Head:
    """A specific-position aggregation of fixed positions (``"T"``, ``"T-1"``, ``"3"``, or a ``FixedIndex``)
    and offsets from the gathering position (``-1`` or ``"p-1"``: the position before it)."""
    return Head(Mode.GATHER, sources=tuple(_source(s) for s in sources))


def _source(source: FixedIndex | int | str) -> FixedIndex | int:
    if isinstance(source, (FixedIndex, int)) and not isinstance(source, bool):
        return source
    offset = re.fullmatch(rf"\s*{_SHOWN_SELF}\s*([+-])\s*([0-9]+)\s*", source) if isinstance(source, str) else None
    if offset:
        return int(offset.group(2)) * (1 if offset.group(1) == "+" else -1)
    try:
        index = parse_target_expr(f"x[{source}]").index if isinstance(source, str) else None
    except InvalidSpecError:
        index = None
    if isinstance(index, FixedIndex):
        return index
    raise InvalidSpecError([Problem(f"a gathered source is a fixed position or an offset, got {source!r}")],
                           subject="program")


def averaging(value: str, variable: str = "t", domain: str = "T") -> Head:
    """A global averaging head: the mean of ``value`` (read at ``variable``) over ``domain``."""
    r = parse_target_expr(f"sum({value} for {variable} in {domain})")
    return Head(Mode.AVERAGE, r.body, variable, r.bindings[0].domain)


def aggregation() -> Head:
    """A global aggregation (inefficient at a constant width)."""
    return Head(Mode.AGGREGATE)


@dataclass(frozen=True)
class FlowProgram:
    """Per layer, the heads of each place (a place not named, or with fewer heads than the layer has, leaves
    the rest idle; a position told apart that is named nowhere runs the inputs' heads)."""

    layers: tuple[tuple[tuple[Place, tuple[Head, ...]], ...], ...]

    def heads(self, layer: int, place: Place) -> tuple[Head, ...]:
        """The heads ``place`` runs in 1-based ``layer``."""
        return dict(self.layers[layer - 1]).get(place, ())

    @property
    def positions(self) -> tuple[FixedIndex, ...]:
        """The positions told apart, each once."""
        found = {p.position for layer in self.layers for p, _ in layer if p.kind is PlaceKind.POSITION}
        return tuple(sorted(found, key=lambda f: (f.from_end, f.position)))

    @property
    def is_efficient(self) -> bool:
        return all(h.is_efficient for layer in self.layers for _, heads in layer for h in heads)

    def describe(self) -> str:
        """The program in words, one head a line (an idle program says so)."""
        lines = [f"layer {l}, head {i}, at {place.describe()}: {head.describe()}"
                 for l, layer in enumerate(self.layers, start=1) for place, heads in layer
                 for i, head in enumerate(heads, start=1)]
        return "\n".join(lines) or "every head idle"


def program(*layers: Mapping[Place, Sequence[Head]]) -> FlowProgram:
    """A program from one mapping ``place -> heads`` per layer."""
    return FlowProgram(tuple(tuple((place, tuple(heads)) for place, heads in layer.items() if heads)
                             for layer in layers))


def selection_kind(largest: bool) -> ReduceKind:
    """The reduction a retrieval's choice is: the argmax or the argmin of its score."""
    return ReduceKind.ARGMAX if largest else ReduceKind.ARGMIN
