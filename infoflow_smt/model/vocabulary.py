"""One vocabulary for the encoding's parts: the classes of positions a head acts at alike, and the tracked
constraints an unsat core names. The encoder emits these values, the solver and the explanations read their
fields: no layer parses another's spelling.

>>> budget = Constraint(Family.BUDGET, layer=2, where=OUTPUT)
>>> str(budget), budget.where.reads_answer_alone
('budget:2:out', True)
>>> str(Constraint(Family.RANK, layer=1, node="g0.t", rank=None))
'rank:1:g0.t:unbounded'
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from infoflow_smt.lang.expr import FixedIndex


@dataclass(frozen=True)
class PositionClass:
    """Positions that act alike: every input position (``INPUT``, each playing the bound variable of what
    it makes), the output token (``OUTPUT``), or one fixed input position told apart by positional encoding
    (an anchor, ``PositionClass(position=FixedIndex(3))``). Its text names it in SMT names and cores: ``in``,
    ``out``, ``a3``, ``aT``, ``aT-1``."""

    position: FixedIndex | None = None
    output: bool = False

    def __post_init__(self) -> None:
        if self.output and self.position is not None:
            raise ValueError("the output token is no fixed input position")

    @classmethod
    def fixed(cls, position: FixedIndex) -> PositionClass:
        return cls(position=position)

    @property
    def anchor(self) -> bool:
        """A fixed input position of its own."""
        return self.position is not None

    @property
    def reads_answer_alone(self) -> bool:
        """Whether it plays no variable: the output token (an anchor plays none either, but is an input)."""
        return self.output

    @property
    def where(self) -> str | FixedIndex:
        """The same class as a program names where a head acts (``program.Where``)."""
        return "output" if self.output else self.position if self.position is not None else "input"

    def __str__(self) -> str:
        if self.output:
            return "out"
        q = self.position
        if q is None:
            return "in"
        if q.from_end:
            return "aT" if q.position == 0 else f"aT-{q.position}"
        return f"a{q.position}"

    def __lt__(self, other: PositionClass) -> bool:   # a fixed order: inputs, anchors by position, output
        return _rank(self) < _rank(other)


def _rank(c: PositionClass) -> tuple:
    if c.output:
        return (2,)
    if c.position is None:
        return (0,)
    return (1, c.position.from_end, c.position.position)


INPUT = PositionClass()
OUTPUT = PositionClass(output=True)
LAST = PositionClass.fixed(FixedIndex(0, True))   # position T: the answer read there with positional encoding


class Family(enum.Enum):
    """What a tracked constraint of the encoding says (docs/model.md, section 9)."""

    INITIAL = "initial"        # what each position holds before layer 1
    GOAL = "goal"              # what the answering position holds after the last layer
    POSITIONAL = "positional"  # positions cannot be told apart without positional encoding
    CAUSAL = "causal"          # what the causal mask hides from the input positions
    BUDGET = "budget"          # the heads of one layer at one class of positions
    RANK = "rank"              # a head too narrow for the rank of a score (the rank rule)
    LEVEL = "level"            # the cost levels excluded, the architecture's layers and heads


@dataclass(frozen=True)
class Constraint:
    """One tracked constraint: its family, and for a budget its layer and class, for a rank rule its layer,
    node and rank (None: a score of no bounded rank). Its text is its name in the SMT encoding."""

    family: Family
    layer: int | None = None
    where: PositionClass | None = None
    node: str | None = None
    rank: int | None = None

    def __str__(self) -> str:
        if self.family is Family.BUDGET:
            return f"budget:{self.layer}:{self.where}"
        if self.family is Family.RANK:
            return f"rank:{self.layer}:{self.node}:{'unbounded' if self.rank is None else self.rank}"
        return self.family.value


INITIAL, GOAL, POSITIONAL, CAUSAL, LEVEL = (Constraint(f) for f in (Family.INITIAL, Family.GOAL, Family.POSITIONAL,
                                                                     Family.CAUSAL, Family.LEVEL))


def budget(layer: int, where: PositionClass) -> Constraint:
    return Constraint(Family.BUDGET, layer=layer, where=where)


__all__ = ["CAUSAL", "GOAL", "INITIAL", "INPUT", "LAST", "LEVEL", "OUTPUT", "POSITIONAL", "Constraint", "Family",
           "PositionClass", "budget"]
