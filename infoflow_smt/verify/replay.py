"""The batched replay: a witness program run on every sample, at every position, against every candidate at
once (numpy arrays over samples by positions), with the reference interpreter's masking rules.

It answers one question, fast: does the program compute the target on each sample? ``interpreter.check``
asks it first and replays with the scalar interpreter (the reference, which also writes the failure
report) only the samples it does not pass. Two observations make it cheap:

* a selection's choice does not depend on who makes it: knowledge is always of the true choice. So the
  choices and values of every node at every binding are computed once per input (``Truth``), by evaluating
  the comparison tree over named axes, and the replay only has to check *reads*: that whoever reads a
  token holds it, and that whoever reads a selection knows it (or holds every token, and makes it itself);
* knowing a selection implies holding what its score read at the winner (the winner's holdings come with
  it), so reading a selection's value is a knowledge check, not a re-evaluation.

It is never more permissive than the scalar interpreter: where that one lets a position make a selection
itself from the candidates it holds, this one asks that it hold every token (or that the score read
nothing), and falls back to the scalar replay when it refuses. A table too large for the memory budget
(``BUDGET`` numbers) also falls back, and so does a tree with a range bounded by an index variable
(``range(1, s)``: its candidates differ per binding, which these tables over whole axes do not hold), and so
does a tree where one selection has several names (``trees.Hosting``: a selection a position knows as the same
selection made elsewhere, which the scalar replay looks up name by name), and so does a program with a
prefix collection (the scalar replay ranks the positions by their prefix forms).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.realization import Realization
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost, walk
from infoflow_smt.model.program import Mode, Offset, Program
from infoflow_smt.verify import arithmetic

BUDGET = 1 << 22   # numbers in one array of the truth table: beyond it the scalar replay is used


class TooLarge(Exception):
    """A truth table would exceed ``BUDGET``: replay with the scalar interpreter instead."""


@dataclass(frozen=True)
class Field:
    """An array over samples and named position axes (each of length T), with a last axis d for vectors."""

    data: np.ndarray
    axes: tuple[str, ...]
    vector: bool

    def to(self, axes: tuple[str, ...]) -> np.ndarray:
        """The data laid out over ``axes`` (a superset, in that order), size-1 where it does not vary."""
        data, missing = self.data, [a for a in axes if a not in self.axes]
        for i in range(len(missing)):
            data = np.expand_dims(data, 1 + len(self.axes) + i)
        present = list(self.axes) + missing
        order = [0] + [1 + present.index(a) for a in axes] + ([1 + len(present)] if self.vector else [])
        return np.transpose(data, order) if order != list(range(len(order))) else data


def _union(fields) -> tuple[str, ...]:
    return tuple(sorted({a for f in fields for a in f.axes}))


# ---- the true choices and values of every node ----------------------------------------------------------
class Truth:
    """Every node's choice and value at every binding of its bound variables, on the inputs ``X``."""

    def __init__(self, tree, X: np.ndarray, realization: Realization):
        self.tree, self.X = tree, X
        self.S, self.T, self.d = X.shape
        self.real = realization
        self.choice: dict[str, Field] = {}
        self.value: dict[str, Field] = {}
        if any(ex.domain_variables(d) for _, d in tree.nodes(data="domain") if d is not None):
            raise TooLarge("a range bounded by an index variable (the scalar replay masks it per binding)")
        for node in reversed(list(_topological(tree))):
            data = tree.nodes[node]
            if data["kind"] in ("top1", "kth", "aggregate"):
                self.reduce(node, data)
        self.output = self.eval(tree.graph["output"])

    def check(self, shape) -> None:
        if int(np.prod(shape)) > BUDGET:
            raise TooLarge(f"an array of shape {shape}")

    def eval(self, e) -> Field:
        if isinstance(e, ex.Num):
            return Field(np.full((1,), e.value), (), False)
        if isinstance(e, ex.Param):
            return Field(self.real.vector(e.name, self.d)[None], (), True)
        if isinstance(e, ex.Content):
            return self.token(e.index)
        if isinstance(e, GroupRef):
            return self.value[outermost(self.tree, e.group)]
        if isinstance(e, NodeRef):
            return self.value[e.node]
        if isinstance(e, ex.Neg):
            f = self.eval(e.operand)
            return Field(-f.data, f.axes, f.vector)
        if isinstance(e, ex.BinOp):
            return self.binop(e)
        return self.call(e)

    def token(self, index) -> Field:
        X = self.X
        if isinstance(index, ex.VarIndex):
            return Field(X, (index.name,), True)
        if isinstance(index, ex.OffsetIndex):
            shifted = np.zeros_like(X)
            k, T = index.offset, self.T
            if k > 0:
                shifted[:, :T - k] = X[:, k:]
            elif k < 0:
                shifted[:, -k:] = X[:, :T + k]
            return Field(shifted, (index.name,), True)
        if isinstance(index, ex.FixedIndex):
            return Field(X[:, index.resolve(self.T) - 1], (), True)
        chosen = self.choice[outermost(self.tree, index.group)]
        rows = np.arange(self.S).reshape((-1,) + (1,) * len(chosen.axes))
        return Field(X[rows, chosen.data], chosen.axes, True)

    def binop(self, e: ex.BinOp) -> Field:
        a, b = self.eval(e.left), self.eval(e.right)
        axes = _union([a, b])
        value = arithmetic.apply_operator(e.op, a.to(axes), b.to(axes), a.vector, b.vector)
        return Field(value, axes, a.vector or b.vector)

    def call(self, e: ex.Call) -> Field:
        """A call's value over its arguments' axes (``arithmetic.apply_call``, as the scalar interpreter)."""
        bilinear = e.name == "bilinear"
        matrix = self.real.matrix(e.args[0].name, self.d) if bilinear else None
        args = [self.eval(x) for x in (e.args[1:] if bilinear else e.args)]
        axes = _union(args)
        value = arithmetic.apply_call(e.name, [f.to(axes) for f in args], [f.vector for f in args], matrix=matrix,
                                      function=self.real.function, fits=self.check)
        return Field(value, axes, False)

    def reduce(self, node: str, data: dict) -> None:
        """A node's choice (selections) and value at every binding: its score over (bound..., var)."""
        var, bound = data["var"], tuple(sorted(data["bound"]))
        axes = bound + (var,)
        self.check((self.S,) + (self.T,) * len(axes) + (self.d,))
        terms = [(sign, self.eval(t)) for sign, t in data["terms"]]
        vector = any(f.vector for _, f in terms)
        score = sum(sign * (f.to(axes) if f.vector or not vector else f.to(axes)[..., None]) for sign, f in terms)
        shape = (self.S,) + (self.T,) * len(axes) + ((self.d,) if vector else ())
        score = np.broadcast_to(score, shape)
        domain = self.real.domain_positions(data["domain"], self.T) - 1
        candidates = np.take(score, domain, axis=len(axes))
        if data["kind"] == "aggregate":
            total = candidates.sum(axis=len(axes))
            self.value[node] = Field(total / len(domain) if data["sense"] == "mean" else total, bound, vector)
            return
        if vector:  # scalar tokens: a token compared as a number is its one coordinate
            candidates = candidates[..., 0]
        if data["sense"] in ("min", "argmin"):
            pick = np.argmin(candidates, axis=-1)
        elif data["sense"] in ("max", "argmax"):
            pick = np.argmax(candidates, axis=-1)
        else:
            pick = np.argsort(-candidates, axis=-1, kind="stable")[..., data["k"] - 1]
        chosen = domain[pick]
        self.choice[node] = Field(chosen, bound, False)
        if data["sense"] in ("argmin", "argmax"):
            self.value[node] = Field((chosen + 1).astype(float), bound, False)
        else:
            self.value[node] = Field(np.take_along_axis(candidates, pick[..., None], axis=-1)[..., 0], bound, False)


def _topological(tree):
    import networkx as nx
    return nx.topological_sort(tree)


# ---- the replay ---------------------------------------------------------------------------------------------
class _State:
    """What every position holds and knows after a layer, in two arrays, so that a head moves all of it with
    two operations (not one per node): ``facts[s, p, q, 0]`` is whether position ``p`` holds token ``q``,
    ``facts[s, p, b, c]`` whether it knows the node of channel ``c`` (``BatchReplay.bound``) at the binding
    where its bound variable is position ``b``, and ``free[s, p, c]`` whether it knows the node of channel
    ``c`` that binds none (``BatchReplay.free``)."""

    def __init__(self, facts: np.ndarray, free: np.ndarray):
        self.facts, self.free = facts, free
        self.held = facts[..., 0]
        self.all = self.held.all(axis=2)  # (S, P): holds every token

    def copy(self) -> _State:
        return _State(self.facts.copy(), self.free.copy())


def carried(prev: _State) -> _State:
    """What every position keeps from the layer before: everything (the residual connection)."""
    return prev.copy()


class BatchReplay:
    """One program on a batch of inputs: ``passes()`` says, per sample, whether it computes the target."""

    def __init__(self, program: Program, tree, X: np.ndarray, truth: Truth, positional: bool,
                 per_position: bool = False, last: bool = False, layers: dict | None = None):
        self.program, self.tree, self.truth = program, tree, truth
        self.layers = layers   # (the actions of layers 1..l) -> the state after layer l, shared by programs
        self.per_position = per_position  # every input position answers for itself (it plays ``o``)
        self.last = last                  # the answer is read at position T, not at the output token
        self.S, self.T, _ = X.shape
        self.positional = positional
        self.samples = np.arange(self.S)
        self.nodes = {n: d for n, d in tree.nodes(data=True) if d["kind"] in ("top1", "kth", "aggregate")}
        self.constant = {n: _reads_nothing(d) for n, d in self.nodes.items()}
        # each node's channel: in ``_State.facts`` for a node with one bound variable, in ``_State.free`` for one
        # with none (one with more is never known, only made)
        self.bound = {n: 1 + i for i, n in enumerate(n for n, d in self.nodes.items() if len(d["bound"]) == 1)}
        self.free = {n: i for i, n in enumerate(n for n, d in self.nodes.items() if not d["bound"])}
        self.read_by: dict[int, tuple] = {}   # id(expression) -> (the expression, kept alive; what it reads)

    def start(self) -> _State:
        S, T = self.S, self.T
        facts = np.zeros((S, T + 1, T, 1 + len(self.bound)), dtype=bool)
        facts[:, np.arange(T), np.arange(T), 0] = True
        return _State(facts, np.zeros((S, T + 1, len(self.free)), dtype=bool))

    def passes(self) -> np.ndarray:
        state, failed = self.start(), np.zeros(self.S, dtype=bool)
        for layer in range(1, self.program.layers + 1):
            if self.layers is None:
                state, failed = self.step(layer, state, failed)
                continue
            key = tuple(a for a in self.program.actions if a.layer <= layer)
            if key not in self.layers:   # read only once stored: the next layer copies it
                self.layers[key] = self.step(layer, state, failed)
            state, failed = self.layers[key]
        if self.per_position:
            return ~failed & self.every_position_answers(state)
        out = self.T - 1 if self.last else self.T  # the row of position T, or of the output token
        everything = state.all[:, out]
        reads = self.reads(self.tree.graph["output"], {}, {}, state, out, out)
        reads_ok = np.broadcast_to(reads, (self.S,) + reads.shape[1:]).reshape(self.S, -1).all(axis=1)
        computes = _close(self.truth.output.data, self.truth.expected)
        return ~failed & (everything | (reads_ok & computes))

    def every_position_answers(self, state: _State) -> np.ndarray:
        """Per sample, whether every input position, playing the answering position ``o``, holds what its own
        answer reads (or every token) and the answer is the target's value there."""
        S, T = self.S, self.T
        rows = np.arange(T)
        reads = self.reads(self.tree.graph["output"], {ex.ANSWER: (rows[:, None], 0)}, {ex.ANSWER: "selector"},
                           state, rows[:, None], None)
        reads_ok = np.broadcast_to(reads, (S, T, 1))[..., 0]
        output = self.truth.output
        value = np.broadcast_to(output.to((ex.ANSWER,)), (S, T) + ((self.truth.d,) if output.vector else ()))
        expected = self.truth.expected.reshape(S, T, -1)
        same = np.isclose(value.reshape(S, T, -1), expected, rtol=1e-9, atol=1e-9, equal_nan=True).all(axis=2)
        return (state.all[:, :T] | (reads_ok & same)).all(axis=1)

    # ---- one layer ----------------------------------------------------------------------------------
    def actions(self, layer: int) -> list[tuple[np.ndarray, object]]:
        """(rows, op) for every head of ``layer``: the inputs' op where no fixed position overrides it."""
        T, found = self.T, []
        heads = {a.head for a in self.program.actions if a.layer == layer}
        for head in sorted(heads):
            here = [a for a in self.program.actions if a.layer == layer and a.head == head]
            fixed = [a for a in here if not isinstance(a.where, str)] if self.positional else []
            taken = {a.where.resolve(T) - 1 for a in fixed}
            for a in here:
                if a.where == "input":
                    rows = np.array([r for r in range(T) if r not in taken], dtype=int)
                elif a.where == "output":
                    rows = np.array([T])
                elif self.positional and 1 <= a.where.resolve(T) <= T:
                    rows = np.array([a.where.resolve(T) - 1])
                else:
                    continue
                found.append((rows, a.op))
        return found

    def step(self, layer: int, prev: _State, failed: np.ndarray) -> tuple[_State, np.ndarray]:
        new = carried(prev)
        for rows, op in self.actions(layer):
            if op.mode is Mode.IDLE or not len(rows):
                continue
            if op.mode is Mode.AGGREGATE:
                self.gather(new, prev, rows, [np.arange(self.T + 1)])
            elif op.mode is Mode.POSITIONS:
                self.gather_positions(new, prev, rows, op.positions)
            elif op.mode is Mode.AVERAGE:
                self.average(new, prev, rows)
            else:
                failed = failed | self.retrieve(new, prev, rows, op.node)
        new.all = new.held.all(axis=2)
        return new, failed

    def gather(self, new: _State, prev: _State, rows: np.ndarray, sources: list[np.ndarray]) -> None:
        """Every row in ``rows`` gains the holdings and knowledge of every position in ``sources``."""
        for src in sources:
            new.facts[:, rows] |= prev.facts[:, src].any(axis=1, keepdims=True)
            new.free[:, rows] |= prev.free[:, src].any(axis=1, keepdims=True)

    def gather_positions(self, new: _State, prev: _State, rows: np.ndarray, positions) -> None:
        for ref in positions:
            src = rows + ref.offset if isinstance(ref, Offset) else np.full(len(rows), ref.resolve(self.T) - 1)
            inside = (src >= 0) & (src < self.T)
            new.facts[:, rows[inside]] |= prev.facts[:, src[inside]]
            new.free[:, rows[inside]] |= prev.free[:, src[inside]]

    def average(self, new: _State, prev: _State, rows: np.ndarray) -> None:
        """Every aggregate binding no variable whose per-token value each position computes: learnt."""
        for n, d in self.nodes.items():
            if d["kind"] != "aggregate" or d["bound"]:
                continue
            domain = self.truth.real.domain_positions(d["domain"], self.T) - 1
            ok = self.reads(d["score"], {d["var"]: (domain, 0)}, {d["var"]: "selector"}, prev, domain, None)
            learnt = np.broadcast_to(ok, (self.S, 1, len(domain))).reshape(self.S, -1).all(axis=1)
            new.free[:, rows, self.free[n]] |= learnt[:, None]

    def retrieve(self, new: _State, prev: _State, rows: np.ndarray, node: str) -> np.ndarray:
        """A retrieval at ``rows``: its reads checked for every candidate; the true choice copied in.
        Returns the samples on which some read was poisoned."""
        d = self.nodes[node]
        bound = sorted(d["bound"])
        domain = self.truth.real.domain_positions(d["domain"], self.T) - 1
        env = {d["var"]: (domain[None, :], 1)}
        players = {d["var"]: "candidate"}
        if bound:
            env[bound[0]] = (rows[:, None], 0)
            players[bound[0]] = "selector"
        ok = self.reads(d["score"], env, players, prev, rows[:, None], domain[None, :])
        poisoned = ~np.broadcast_to(ok, (self.S, len(rows), len(domain))).all(axis=2)
        binding = rows if bound else np.zeros(len(rows), dtype=int)
        chosen = self.truth.choice[node].data
        chosen = chosen[:, binding] if bound else np.repeat(chosen[:, None], len(rows), axis=1)
        s = self.samples[:, None]
        new.facts[s, rows[None, :]] |= prev.facts[s, chosen]
        new.free[s, rows[None, :]] |= prev.free[s, chosen]
        if bound:
            new.facts[s, rows[None, :], binding[None, :], self.bound[node]] = True
        else:
            new.free[s, rows[None, :], self.free[node]] = True
        return poisoned.any(axis=1)

    # ---- reads -------------------------------------------------------------------------------------------
    def reads(self, e, env: dict, players: dict, state: _State, selector, candidate) -> np.ndarray:
        """Whether every read of ``e`` is held (tokens) or known (selections) by the side it belongs to:
        a boolean array over samples, selector rows and candidates (broadcastable). ``env`` maps a variable
        to (positions, 0 for the selector's axis or 1 for the candidate's)."""
        ok = np.ones((1, 1, 1), dtype=bool)
        for ref in self.references(e):
            if isinstance(ref, (ex.VarIndex, ex.OffsetIndex)):
                position = env[ref.name][0] + (ref.offset if isinstance(ref, ex.OffsetIndex) else 0)
                ok = ok & self.holds(state, self.side(players, {ref.name}), position, selector, candidate)
            elif isinstance(ref, ex.FixedIndex):
                ok = ok & self.holds(state, None, np.array(ref.resolve(self.T) - 1), selector, candidate)
            elif isinstance(ref, (NodeRef, GroupRef)):
                node = ref.node if isinstance(ref, NodeRef) else outermost(self.tree, ref.group)
                ok = ok & self.knows(state, node, env, players, selector, candidate)
        return ok

    def references(self, e) -> tuple:
        """The token positions and selections ``e`` reads, in order (kept: a replay reads each score once
        per head and candidate set)."""
        found = self.read_by.get(id(e))
        if found is None:
            refs = (leaf.index if isinstance(leaf, ex.Content) else leaf for leaf in walk(e))
            found = self.read_by[id(e)] = (e, tuple(r for r in refs if isinstance(r, (
                ex.VarIndex, ex.OffsetIndex, ex.FixedIndex, NodeRef, GroupRef))))
        return found[1]

    @staticmethod
    def side(players: dict, variables) -> str | None:
        sides = {players.get(v, "selector") for v in variables}
        return "candidate" if "candidate" in sides else ("selector" if sides else None)

    def holds(self, state: _State, side, position, selector, candidate) -> np.ndarray:
        position = np.asarray(position)
        inside = (position >= 0) & (position < self.T)
        q = np.minimum(np.maximum(position, 0), self.T - 1)   # (np.clip's own checks cost more, at these sizes)
        s = self.samples.reshape(-1, 1, 1)
        if side == "candidate":
            held = state.held[s, candidate, q]
        elif side == "selector":
            held = state.held[s, selector, q]
        else:
            held = state.held[s, selector, q] | (state.held[s, candidate, q] if candidate is not None else False)
        return held | ~inside  # outside the sequence: padding, read by anyone

    def knows(self, state: _State, node: str, env: dict, players: dict, selector, candidate) -> np.ndarray:
        """Whether the side a selection belongs to knows it at the binding ``env`` gives (or holds every
        token, or the selection reads nothing and anyone makes it)."""
        if self.constant[node]:
            return np.ones((1, 1, 1), dtype=bool)
        bound = sorted(self.nodes[node]["bound"])
        side = self.side(players, bound)
        s = self.samples.reshape(-1, 1, 1)
        readers = {"selector": [selector], "candidate": [candidate],
                   None: [selector] + ([candidate] if candidate is not None else [])}[side]
        result = np.zeros((1, 1, 1), dtype=bool)
        for reader in readers:
            everything = state.all[s, reader]
            if node in self.bound:
                everything = everything | state.facts[s, reader, env[bound[0]][0], self.bound[node]]
            elif node in self.free:
                everything = everything | state.free[s, reader, self.free[node]]
            result = result | everything
        return result


def _reads_nothing(data: dict) -> bool:
    """A node whose score reads no token and no selection: anyone makes it (a count, a choice among ties)."""
    return not any(isinstance(leaf, (ex.Content, GroupRef, NodeRef)) for _, t in data["terms"] for leaf in walk(t))


def _close(value: np.ndarray, expected: np.ndarray) -> np.ndarray:
    value = np.broadcast_to(np.asarray(value).reshape(len(value), -1), expected.shape)
    same = np.isclose(value, expected, rtol=1e-9, atol=1e-9, equal_nan=True)
    return same.reshape(len(expected), -1).all(axis=1)


def passes(program: Program, tree, target, X: np.ndarray, expected: np.ndarray, positional: bool,
           truth: Truth | None = None, last: bool = False, layers: dict | None = None) -> np.ndarray | None:
    """Per sample, whether ``program`` computes ``target`` (``expected``, from ``Target.evaluate``) on ``X``,
    read at the output token, at every position (``target.per_position``) or at position ``T`` (``last``);
    None when a truth table would exceed the memory budget (replay with the scalar interpreter).
    ``layers``: a dict kept across calls on the same inputs, so programs that share their first layers
    (one pruned of an operation in a later layer) replay those once. None also where the tree names one
    selection in several ways (``tree.graph["hostings"]``): the scalar replay looks each name up."""
    if tree.graph.get("hostings") or any(a.op.mode is Mode.COLLECT for a in program.actions):
        return None
    try:
        truth = truth or Truth(tree, X, target.realization)
    except (TooLarge, MemoryError):
        return None
    truth.expected = np.asarray(expected, dtype=float).reshape(len(X), -1)
    with np.errstate(all="ignore"):
        return BatchReplay(program, tree, X, truth, positional, target.per_position, last, layers).passes()
