"""Witness programs: for each layer, head and position class, which propagation mode a head applies.

Without positional encoding the input positions are interchangeable, so a head does one thing at every
input position (``where="input"``) and may do another at the output token (``where="output"``). With
positional encoding a head may act differently at a fixed input position (``where=FixedIndex(...)``),
which then overrides its ``"input"`` action there.

A retrieval names the comparison-tree node it makes (``"g0.t"``); the position plays the node's bound
variable (an input position ``p`` making ``g0.t``, bound ``{s}``, selects ``argmin_t score(s=p, t)``).
A program printed with ``str`` says what each node computes once ``named(target)`` has read it off the tree
(every ``Verdict`` and brute-force answer holds named programs); node names stay the program's identity.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import sympy

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.lang.language import fixed_to_text
from infoflow_smt.lang.node_text import node_text
from infoflow_smt.lang.trees import comparison_tree
from infoflow_smt.model import cost
from infoflow_smt.symbols import T


class Mode(enum.Enum):
    RETRIEVE = "max-position retrieval"
    KTH = "k-th largest retrieval"
    AGGREGATE = "global aggregation"
    POSITIONS = "specific-position aggregation"
    AVERAGE = "global averaging"  # a linear statistic: the mean of per-token values, no token decoded
    COLLECT = "prefix collection"  # under the mask: a retrieval of the position whose prefix selections are whole
    IDLE = "idle"  # only to override, at a fixed position, what a head does at every input position


@dataclass(frozen=True)
class Offset:
    """A position relative to the acting one: ``Offset(-1)`` is ``p - 1``."""

    offset: int

    def __str__(self) -> str:
        return f"p{self.offset:+d}"


PositionRef = FixedIndex | Offset
Where = str | FixedIndex  # "input", "output", or one fixed input position


def where_text(where: Where) -> str:
    """Where a head acts, in words: ``every input position``, ``the output token``, ``input position T-1``."""
    if where == "input":
        return "every input position"
    if where == "output":
        return "the output token"
    return f"input position {fixed_to_text(where)}"


def position_text(ref: PositionRef) -> str:
    """A source of specific-position aggregation: ``p-1`` (an offset), ``3`` or ``T`` (a fixed position)."""
    return str(ref) if isinstance(ref, Offset) else fixed_to_text(ref)


@dataclass(frozen=True)
class Op:
    """What one head does at one position class."""

    mode: Mode
    node: str | None = None                  # RETRIEVE / KTH: the tree node selected
    positions: tuple[PositionRef, ...] = ()  # POSITIONS: the fixed positions or offsets aggregated
    nodes: tuple[str, ...] = ()              # COLLECT: the selections whose prefix forms it sums

    def __str__(self) -> str:
        return self.text({})

    def text(self, names: Mapping[str, str]) -> str:
        """In words; a selected node by what it computes when ``names`` has it, else by its tree name."""
        if self.mode in (Mode.RETRIEVE, Mode.KTH):
            return f"{self.mode.value} of {names.get(self.node, self.node)}"
        if self.mode is Mode.POSITIONS:
            return f"{self.mode.value} of {{{', '.join(position_text(q) for q in self.positions)}}}"
        if self.mode is Mode.COLLECT:
            return f"{self.mode.value} of {{{', '.join(names.get(n, n) for n in self.nodes)}}}"
        return self.mode.value


@dataclass(frozen=True)
class Action:
    layer: int  # 1-based
    head: int   # 1-based
    where: Where
    op: Op

    def __str__(self) -> str:
        return self.text({})

    def text(self, names: Mapping[str, str]) -> str:
        return f"layer {self.layer}, head {self.head}, at {where_text(self.where)}: {self.op.text(names)}"


@dataclass(frozen=True)
class Program:
    """A witness: head actions, and the variable order chosen for each joint group of the target."""

    actions: tuple[Action, ...]
    order: tuple[tuple[str, tuple[str, ...]], ...] = ()
    layers: int = 1
    notes: tuple[str, ...] = field(default=(), compare=False)
    # tree node -> what it computes in the target's notation (``named``): words for printing, not identity
    names: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # tuples all the way down, whatever the caller passed: a program is shared by caches (the replays,
        # the reused optimal witnesses), and one changed in place would change their later answers
        object.__setattr__(self, "actions", tuple(self.actions))
        object.__setattr__(self, "order", tuple((g, tuple(v)) for g, v in self.order))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "names", tuple(self.names))

    def named(self, target) -> Program:
        """The same program, printing each selected node by what it computes (``min(dot(x[s], x[t]) for t in
        T)``) instead of its tree name (``g0.t``); ``target`` is the one the program computes.

        >>> from infoflow_smt import parse_target
        >>> p = Program((Action(1, 1, "output", Op(Mode.RETRIEVE, "g0.t")),))
        >>> print(p.named(parse_target("max(x[t] for t in T)")))
        layer 1, head 1, at the output token: max-position retrieval of max(x[t] for t in T)
        """
        tree = comparison_tree(target, self.order_map)
        nodes = sorted({n for a in self.actions for n in (a.op.node, *a.op.nodes) if n in tree})
        return replace(self, names=tuple((n, node_text(tree, n)) for n in nodes))

    @property
    def order_map(self) -> dict[str, tuple[str, ...]]:
        return dict(self.order)

    @property
    def operations(self) -> int:
        """How many heads do something (idle ones are free)."""
        return sum(a.op.mode is not Mode.IDLE for a in self.actions)

    def at(self, layer: int, where: Where) -> list[Action]:
        return [a for a in self.actions if a.layer == layer and a.where == where]

    def action_for(self, layer: int, head: int, where: Where) -> Action | None:
        for a in self.actions:
            if a.layer == layer and a.head == head and a.where == where:
                return a
        return None

    def to_json(self) -> dict:
        """A JSON-ready record of the program (``Program.from_json`` reads it back)."""
        return {"layers": self.layers, "order": {g: list(v) for g, v in self.order},
                "actions": [{"layer": a.layer, "head": a.head, "where": _where_json(a.where),
                             "mode": a.op.mode.name, "node": a.op.node,
                             "positions": [_position_json(q) for q in a.op.positions]}
                            | ({"nodes": list(a.op.nodes)} if a.op.nodes else {}) for a in self.actions]}

    @classmethod
    def from_json(cls, data: dict) -> Program:
        """The program ``to_json`` wrote; anything else (a cache line edited by hand, a truncated file) raises
        ``InvalidSpecError`` naming what is wrong."""
        try:
            actions = tuple(Action(a["layer"], a["head"], _where_from(a["where"]),
                                   Op(Mode[a["mode"]], a["node"], tuple(_position_from(q) for q in a["positions"]),
                                      tuple(a.get("nodes", ()))))
                            for a in data["actions"])
            return cls(actions, tuple((g, tuple(v)) for g, v in data["order"].items()), data["layers"])
        except InvalidSpecError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InvalidSpecError(f"not a program's JSON ({type(err).__name__}: {err})", "program") from None

    def __str__(self) -> str:
        names = dict(self.names)
        lines = [a.text(names) for a in sorted(self.actions, key=_action_key)]
        if self.order:
            lines.append("variable orders: " + ", ".join(f"{g}: {' > '.join(v)}" for g, v in self.order))
        return "\n".join(lines) if lines else "(no head does anything)"


def _where_json(where: Where):
    return where if isinstance(where, str) else {"position": where.position, "from_end": where.from_end}


def _where_from(data) -> Where:
    return data if isinstance(data, str) else FixedIndex(data["position"], data["from_end"])


def _position_json(ref: PositionRef) -> dict:
    if isinstance(ref, Offset):
        return {"offset": ref.offset}
    return {"position": ref.position, "from_end": ref.from_end}


def _position_from(data: dict) -> PositionRef:
    return Offset(data["offset"]) if "offset" in data else FixedIndex(data["position"], data["from_end"])


def _action_key(a: Action):
    return (a.layer, a.head, str(a.where))


def validate(program: Program, arch) -> list[str]:
    """Structural problems of a program against an architecture (empty when it fits)."""
    problems = []
    seen = set()
    for a in program.actions:
        if not 1 <= a.layer <= arch.layers:
            problems.append(f"{a}: layer {a.layer} does not exist (the architecture has {arch.layers})")
            continue
        if not 1 <= a.head <= arch.heads[a.layer - 1]:
            problems.append(f"{a}: layer {a.layer} has {arch.heads[a.layer - 1]} heads")
        if (a.layer, a.head, a.where) in seen:
            problems.append(f"{a}: head used twice at the same positions")
        seen.add((a.layer, a.head, a.where))
        positional_use = isinstance(a.where, FixedIndex) or a.op.mode is Mode.POSITIONS
        if positional_use and not arch.positional:
            problems.append(f"{a}: needs positional encoding, which the architecture does not have")
        if a.op.mode is Mode.POSITIONS and a.where == "output" and any(isinstance(q, Offset) for q in a.op.positions):
            problems.append(f"{a}: offsets are relative to an input position, not the output token")
    return problems


# ---- cost ----------------------------------------------------------------------------------------
def set_sizes(program: Program, arch) -> dict[tuple[int, Where], sympy.Expr]:
    """An upper bound on ``|I(p, l)|`` for each layer and position class (``T`` once a set holds all)."""
    return {key: T if n == _WHOLE else sympy.Integer(n) for key, n in set_counts(program).items()}


_WHOLE = -1  # a count that is the whole sequence, T


def set_counts(program: Program) -> dict[tuple[int, Where], int]:
    """``set_sizes`` in plain integers (``-1`` for T): it runs once per replayed witness."""
    classes: list[Where] = ["input", "output"] + sorted(
        {a.where for a in program.actions if isinstance(a.where, FixedIndex)}, key=position_text)
    size = {(0, w): 0 if w == "output" else 1 for w in classes}
    for layer in range(1, program.layers + 1):
        for w in classes:
            acts = program.at(layer, w)
            if isinstance(w, FixedIndex):  # heads without an override act as at every input position
                overridden = {a.head for a in acts}
                acts += [a for a in program.at(layer, "input") if a.head not in overridden]
            gains = [size[(layer - 1, w)]] + [_gain(a.op, layer, size, classes) for a in acts]
            size[(layer, w)] = _WHOLE if _WHOLE in gains else sum(gains)
    return size


def _gain(op: Op, layer: int, size, classes) -> int:
    if op.mode in (Mode.IDLE, Mode.AVERAGE):  # an average gathers no token
        return 0
    if op.mode is Mode.AGGREGATE:
        return _WHOLE
    if op.mode in (Mode.RETRIEVE, Mode.KTH, Mode.COLLECT):  # the retrieved position is an input position
        sizes = [size[(layer - 1, w)] for w in classes if w != "output"]
        return _WHOLE if _WHOLE in sizes else max(sizes)
    return _gathered(op, layer, size, classes)


def _gathered(op: Op, layer: int, size, classes) -> int:
    """The size of what a specific-position aggregation in ``layer`` gathers (``_WHOLE``: T)."""
    sizes = [size[(layer - 1, q if q in classes else "input")] for q in op.positions]
    return _WHOLE if _WHOLE in sizes else sum(sizes)


def decoded_sizes(program: Program) -> dict[Action, int | None]:
    """Every action charged a decoding cost, and how many tokens it decodes (None: the whole sequence)."""
    sizes, found = set_counts(program), {}
    for a in program.actions:
        if a.op.mode is Mode.AGGREGATE:
            found[a] = None
        elif a.op.mode is Mode.POSITIONS:
            n = _gathered(a.op, a.layer, sizes, {w for (_, w) in sizes})
            found[a] = None if n == _WHOLE else n
    return found


def action_cost(action: Action, tree, arch, sizes, law: cost.DecodeLaw = cost.DecodeLaw.SEED) -> sympy.Expr:
    """The cost exponent charged for one action (model.md section 2); ``sizes`` the program's set sizes
    in integers (``_counts``)."""
    op = action.op
    if op.mode in (Mode.RETRIEVE, Mode.COLLECT):
        return cost.retrieval()
    if op.mode is Mode.KTH:
        return cost.kth_retrieval(tree.nodes[op.node]["k"], arch.head_dim(action.layer))
    if op.mode is Mode.AVERAGE:
        return cost.average()
    width = arch.head_dim(action.layer)  # a head decodes what it aggregates from its own n = E/h values
    if op.mode is Mode.AGGREGATE:
        return cost.decode(T, arch.input_dim, width, law)
    gathered = _gathered(op, action.layer, sizes, {w for (_, w) in sizes})
    return cost.decode(T if gathered == _WHOLE else gathered, arch.input_dim, width, law)


def program_cost(program: Program, tree, arch, law: cost.DecodeLaw = cost.DecodeLaw.SEED
                 ) -> tuple[sympy.Expr, tuple[tuple[Action, sympy.Expr], ...]]:
    """The program's cost exponent (the maximum over its actions) and every action's share."""
    sizes = set_counts(program)
    shares = []
    for a in sorted(program.actions, key=_action_key):
        if a.op.mode is not Mode.IDLE:
            shares.append((a, action_cost(a, tree, arch, sizes, law)))
    if not shares:
        return sympy.Integer(0), ()
    exponents = [s for _, s in shares]
    worst = max(exponents, key=cost.asymptotic_key)
    return worst, tuple(shares)
