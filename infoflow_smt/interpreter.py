"""The reference interpreter: replays a witness program with hard attention on concrete random inputs.

It is the checker of every solver answer and shares no code with the encoder. Each position keeps the set
of input positions it holds (``I(p, l)``) and the selections it knows (node, binding -> chosen position).
A content a position does not hold is masked as NaN, so any score or value that reads it is poisoned: a
poisoned score is a failed action, a poisoned output a failed program. A retrieval ranks candidates by the
terms of the node's score that depend on the candidate (the key side reads the candidate's holdings, the
query side the acting position's); the winner's holdings and knowledge are copied to the acting position.
The output token must end up computing exactly what ``Target.evaluate`` computes.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from . import expr as ex
from .program import Mode, Offset, Program, validate
from .realization import Realization
from .trees import GroupRef, NodeRef, comparison_tree, needs_positional, outermost


@dataclass(frozen=True)
class Failure:
    """One concrete input on which the program does not compute the target, and why."""

    sample: int
    reason: str
    inputs: np.ndarray            # the input X (T, d) that reproduces it
    required: frozenset[int]      # R_F(X): positions whose contents determine F(X)
    reached: frozenset[int]       # I(T+1, L): what the output token held at the end

    def __str__(self) -> str:
        return (f"sample {self.sample}: {self.reason}; required {sorted(self.required)}, "
                f"reached {sorted(self.reached)}")


@dataclass(frozen=True)
class CheckReport:
    ok: bool
    seq_len: int
    samples: int
    failures: tuple[Failure, ...] = ()
    problems: tuple[str, ...] = ()  # structural problems (the program does not fit the architecture)
    sizes: dict = field(default_factory=dict, compare=False)  # largest |I(p, L)| seen per position class

    def __str__(self) -> str:
        if self.ok:
            return f"ok: {self.samples} random inputs of length {self.seq_len} computed exactly"
        lines = [f"FAILED on length {self.seq_len}:"] + [f"  {p}" for p in self.problems]
        lines += [f"  {f}" for f in self.failures[:5]]
        return "\n".join(lines)


class _Poisoned(Exception):
    """A score read masked content."""

    reached: frozenset[int] = frozenset()  # what the output token held when it happened


class _Layer:
    """Holdings of every position after one layer: ``held[p-1, q-1]`` and ``known[p-1]``."""

    def __init__(self, held: np.ndarray, known: list[dict]):
        self.held = held
        self.known = known

    @classmethod
    def start(cls, seq_len: int) -> _Layer:
        """Before layer 1: each input position holds itself, the output token (row T+1) nothing."""
        held = np.zeros((seq_len + 1, seq_len), dtype=bool)
        held[np.arange(seq_len), np.arange(seq_len)] = True
        return cls(held, [{} for _ in range(seq_len + 1)])


class _Replay:
    def __init__(self, tree, X: np.ndarray, realization: Realization):
        self.tree = tree
        self.X = X
        self.T, self.d = X.shape
        self.real = realization
        # the realization draws its parameters afresh on each call: memoize them for this replay
        self.matrix = lru_cache(maxsize=None)(realization.matrix)
        self.vector = lru_cache(maxsize=None)(realization.vector)
        self.function = lru_cache(maxsize=None)(realization.function)
        self.groups = tree.graph["groups"]
        self.trace: set[int] | None = None  # positions read along the chain (for R_F)
        self.scanning = 0

    # ---- reading contents -----------------------------------------------------------------------
    def content(self, q, who, layer: _Layer) -> np.ndarray:
        """``x[q]`` as read by position ``who`` (either may be an array over candidates)."""
        q, who = np.asarray(q), np.asarray(who)
        inside = (q >= 1) & (q <= self.T)
        clipped = np.clip(q, 1, self.T)
        unheld = ~layer.held[who - 1, clipped - 1] & inside
        if unheld.any():
            at = np.argwhere(np.atleast_1d(unheld))[0][0]
            reader, read = np.broadcast_to(who, unheld.shape), np.broadcast_to(q, unheld.shape)
            raise _Poisoned(f"position {int(np.atleast_1d(reader)[at])} reads x[{int(np.atleast_1d(read)[at])}], "
                            f"which it does not hold")
        if self.trace is not None and not self.scanning:
            self.trace.update(int(v) for v in np.atleast_1d(q[inside]))
        values = self.X[clipped - 1]
        # outside the sequence: padding, the zero vector, as in Target.evaluate
        return values if inside.all() else np.where(inside[..., None], values, 0.0)

    def domain(self, domain) -> np.ndarray:
        return self.real.domain_positions(domain, self.T)

    def is_vector(self, e) -> bool:
        """Whether an expression has a d-vector value (contents, parameters, sums and means of them)."""
        if isinstance(e, (ex.Content, ex.Param)):
            return True
        if isinstance(e, ex.BinOp):
            return self.is_vector(e.left) or self.is_vector(e.right)
        if isinstance(e, ex.Neg):
            return self.is_vector(e.operand)
        if isinstance(e, (GroupRef, NodeRef)):
            group = self.groups[e.group if isinstance(e, GroupRef) else self.tree.nodes[e.node]["group"]]
            return not group.kind.is_selection and self.is_vector(group.body)
        return False  # numbers and calls

    # ---- evaluation from a view: (acting position, free variable, candidate position(s)) ----------
    def value(self, e, env: dict, view):
        """The value of ``e``; the free variable may be bound to an array of candidates (then ``cand`` is
        that array and the result has a leading candidate axis)."""
        who, free, cand, layer = view

        def holder(variables):
            return cand if free is not None and free in variables else who

        if isinstance(e, ex.Num):
            return e.value
        if isinstance(e, ex.Param):  # a vector wherever it stands; bilinear reads its matrix directly
            return self.vector(e.name, self.d)
        if isinstance(e, ex.Content):
            return self.content(self.position(e.index, env, view), holder(self._index_vars(e.index)), layer)
        if isinstance(e, GroupRef):
            node = outermost(self.tree, e.group)
            return self.node_value(node, env, holder(self.tree.nodes[node]["bound"]), layer)
        if isinstance(e, NodeRef):
            return self.node_value(e.node, env, holder(self.tree.nodes[e.node]["bound"]), layer)
        if isinstance(e, ex.BinOp):
            a, b = self.value(e.left, env, view), self.value(e.right, env, view)
            if self.is_vector(e.left) != self.is_vector(e.right):  # a scalar per candidate against a vector
                a, b = (np.asarray(a)[..., None], b) if not self.is_vector(e.left) else (a, np.asarray(b)[..., None])
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
                    "**": np.power}[e.op](a, b)
        if isinstance(e, ex.Neg):
            return -self.value(e.operand, env, view)
        if isinstance(e, ex.Call):
            return self.call(e, env, view)
        raise TypeError(f"cannot evaluate {e!r} on its own")

    def call(self, e: ex.Call, env, view):
        if e.name == "bilinear":
            A = self.matrix(e.args[0].name, self.d)
            a, b = (self.value(x, env, view) for x in e.args[1:])
            return np.einsum("...i,ij,...j->...", a, A, b)
        args = [self.value(x, env, view) for x in e.args]
        if e.name == "dot":
            return np.sum(np.multiply(args[0], args[1]), axis=-1)
        if e.name == "norm":
            return np.linalg.norm(args[0], axis=-1)
        columns = [np.asarray(a, dtype=float) if self.is_vector(x) else np.asarray(a, dtype=float)[..., None]
                   for a, x in zip(args, e.args)]
        lead = np.broadcast_shapes(*(c.shape[:-1] for c in columns))
        flat = np.concatenate([np.broadcast_to(c, lead + c.shape[-1:]) for c in columns], axis=-1)
        return self.function(e.name, flat.shape[-1])(flat)

    def _index_vars(self, index) -> frozenset[str]:
        if isinstance(index, (ex.VarIndex, ex.OffsetIndex)):
            return frozenset({index.name})
        if isinstance(index, GroupRef):
            return self.tree.nodes[outermost(self.tree, index.group)]["bound"]
        return frozenset()

    def position(self, index, env, view) -> int:
        if isinstance(index, ex.VarIndex):
            return env[index.name]
        if isinstance(index, ex.OffsetIndex):
            return env[index.name] + index.offset
        if isinstance(index, ex.FixedIndex):
            return index.resolve(self.T)
        node = outermost(self.tree, index.group)
        who, free, cand, layer = view
        holder = cand if free is not None and free in self.tree.nodes[node]["bound"] else who
        return self.select(node, env, holder, layer)

    # ---- selections -----------------------------------------------------------------------------
    def binding(self, node: str, env: dict) -> tuple:
        return (node,) + tuple((v, env[v]) for v in sorted(self.tree.nodes[node]["bound"]))

    def rank_scores(self, node: str, env: dict, who: int, layer: _Layer, split: bool) -> tuple[np.ndarray, np.ndarray]:
        """Candidates and their ranking scores (the terms that depend on the candidate)."""
        data = self.tree.nodes[node]
        candidates = self.domain(data["domain"])
        self.scanning += 1
        try:
            if _reads_selections(data["key_terms"]):  # one candidate at a time: selections are looked up
                scores = []
                for c in candidates:
                    view = (who, data["var"], int(c) if split else who, layer)
                    local = dict(env, **{data["var"]: int(c)})
                    scores.append(sum(sign * self.value(t, local, view) for sign, t in data["key_terms"]))
            else:  # every candidate at once
                view = (who, data["var"], candidates if split else who, layer)
                local = dict(env, **{data["var"]: candidates})
                scores = sum((sign * np.broadcast_to(self.value(t, local, view), candidates.shape)
                              for sign, t in data["key_terms"]), np.zeros(len(candidates)))
        finally:
            self.scanning -= 1
        return candidates, np.asarray(scores, dtype=float)

    def pick(self, node: str, candidates: np.ndarray, scores: np.ndarray) -> int:
        data = self.tree.nodes[node]
        if data["sense"] in ("min", "argmin"):
            return int(candidates[int(np.argmin(scores))])
        if data["sense"] in ("max", "argmax"):
            return int(candidates[int(np.argmax(scores))])
        order = np.argsort(-scores, kind="stable")
        if data["k"] > len(candidates):
            raise _Poisoned(f"{node} asks for the {data['k']}-th largest of {len(candidates)} candidates")
        return int(candidates[order[data["k"] - 1]])

    def select(self, node: str, env: dict, who: int, layer: _Layer) -> int:
        """The position ``node`` selects at ``env``, as known to (or computable by) position ``who``."""
        key = self.binding(node, env)
        known = layer.known[who - 1].get(key)
        if known is not None:
            return known
        # a position holding every candidate (and what their scores read) makes the selection itself
        candidates, scores = self.rank_scores(node, env, who, layer, split=False)
        return self.pick(node, candidates, scores)

    def node_value(self, node: str, env: dict, who: int, layer: _Layer):
        data = self.tree.nodes[node]
        env = {v: env[v] for v in data["bound"]}
        if data["kind"] == "aggregate":
            candidates = self.domain(data["domain"])
            values = [self.value(data["score"], dict(env, **{data["var"]: int(c)}), (who, None, who, layer))
                      for c in candidates]
            total = np.sum(values, axis=0)
            return total / len(candidates) if data["sense"] == "mean" else total
        chosen = self.select(node, env, who, layer)
        if data["sense"] in ("argmin", "argmax"):
            return float(chosen)
        return self.value(data["score"], dict(env, **{data["var"]: chosen}), (who, None, who, layer))


def _reads_selections(terms) -> bool:
    from .trees import walk

    return any(isinstance(sub, (GroupRef, NodeRef)) or (isinstance(sub, ex.Content)
               and isinstance(sub.index, GroupRef)) for _, t in terms for sub in walk(t))


def _role_env(tree, node: str, position: int) -> dict:
    bound = sorted(tree.nodes[node]["bound"])
    return {bound[0]: position} if bound else {}


def _action_problems(program: Program, tree, arch) -> list[str]:
    problems = validate(program, arch)
    for a in program.actions:
        if a.op.mode not in (Mode.RETRIEVE, Mode.KTH):
            continue
        if a.op.node not in tree.nodes:
            problems.append(f"{a}: the target has no selection node {a.op.node!r}")
            continue
        data = tree.nodes[a.op.node]
        wanted = "kth" if a.op.mode is Mode.KTH else "top1"
        if data["kind"] != wanted:
            problems.append(f"{a}: {a.op.node} is a {data['kind']} node, not one {a.op.mode.value} makes")
        if a.where == "output" and data["bound"]:
            problems.append(f"{a}: the output token cannot play the bound variable(s) {sorted(data['bound'])}")
        if len(data["bound"]) > 1:
            problems.append(f"{a}: one position cannot play {len(data['bound'])} variables at once")
        if not isinstance(data["domain"], ex.AllPositions) and not arch.positional:
            problems.append(f"{a}: restricting candidates to a subset needs positional encoding")
    return problems


def _step(replay: _Replay, program: Program, layer_no: int, prev: _Layer, positional: bool) -> _Layer:
    T = replay.T
    held = prev.held.copy()
    known = [dict(k) for k in prev.known]
    for p in range(1, T + 2):
        where = "output" if p == T + 1 else "input"
        acts = {a.head: a for a in program.at(layer_no, where)}
        if positional and p <= T:
            for a in program.actions:
                if a.layer == layer_no and not isinstance(a.where, str) and a.where.resolve(T) == p:
                    acts[a.head] = a
        for a in acts.values():
            _apply(replay, a, p, prev, held, known)
    return _Layer(held, known)


def _apply(replay: _Replay, a, p: int, prev: _Layer, held: np.ndarray, known: list[dict]) -> None:
    T = replay.T
    op = a.op
    if op.mode is Mode.IDLE:
        return
    if op.mode is Mode.AGGREGATE:
        sources = range(1, T + 2)
    elif op.mode is Mode.POSITIONS:
        sources = [p + q.offset if isinstance(q, Offset) else q.resolve(T) for q in op.positions]
        sources = [s for s in sources if 1 <= s <= T]
    else:
        env = _role_env(replay.tree, op.node, p) if p <= T else {}
        try:
            candidates, scores = replay.rank_scores(op.node, env, p, prev, split=True)
        except _Poisoned as err:
            raise _Poisoned(f"{a} at position {p}: the score is poisoned ({err})") from None
        chosen = replay.pick(op.node, candidates, scores)
        try:  # the acting position computes the node's value in the same step: its query terms too
            local = dict(env, **{replay.tree.nodes[op.node]["var"]: chosen})
            for _, term in replay.tree.nodes[op.node]["query_terms"]:
                replay.value(term, local, (p, None, p, prev))
        except _Poisoned as err:
            raise _Poisoned(f"{a} at position {p}: the value is poisoned ({err})") from None
        known[p - 1][replay.binding(op.node, env)] = chosen
        sources = [chosen]
    for s in sources:
        held[p - 1] |= prev.held[s - 1]
        for key, value in prev.known[s - 1].items():
            known[p - 1].setdefault(key, value)


def required_set(tree, X: np.ndarray, realization: Realization) -> frozenset[int]:
    """R_F(X): the positions the output's chain reads, found by a position that holds everything."""
    replay = _Replay(tree, X, realization)
    T = replay.T
    omniscient = _Layer(np.ones((T + 1, T), dtype=bool), [{} for _ in range(T + 1)])
    replay.trace = set()
    replay.value(tree.graph["output"], {}, (T + 1, None, T + 1, omniscient))
    return frozenset(replay.trace)


def run(program: Program, tree, X: np.ndarray, realization: Realization, positional: bool):
    """Run a program on one input; returns (the output's value, what the output token holds).

    Raises ``_Poisoned`` (with the reason) when an action or the output reads content it does not hold."""
    replay = _Replay(tree, X, realization)
    T = replay.T
    layer = _Layer.start(T)
    reached: frozenset[int] = frozenset()
    try:
        for layer_no in range(1, program.layers + 1):
            layer = _step(replay, program, layer_no, layer, positional)
        reached = frozenset(int(q) + 1 for q in np.flatnonzero(layer.held[T]))
        value = replay.value(tree.graph["output"], {}, (T + 1, None, T + 1, layer))
    except _Poisoned as err:
        err.reached = frozenset(int(q) + 1 for q in np.flatnonzero(layer.held[T]))
        raise
    return value, reached


def check(program: Program, target, arch, seq_len: int = 12, samples: int = 200, seed: int = 0,
          inputs: np.ndarray | None = None, max_failures: int = 5) -> CheckReport:
    """Replay ``program`` on ``samples`` random inputs ``x ~ N(0, I_d)`` of length ``seq_len``.

    >>> import infoflow_smt as ifs
    >>> from infoflow_smt.program import Action, Op, Mode, Program
    >>> tgt = ifs.parse_target("max(f1(x[t]) for t in T)")
    >>> prog = Program((Action(1, 1, "output", Op(Mode.RETRIEVE, "g0.t")),), layers=1)
    >>> ifs.check(prog, tgt, ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2), seq_len=6, samples=5).ok
    True
    """
    tree = comparison_tree(target, program.order_map)
    problems = _action_problems(program, tree, arch)
    if needs_positional(target) and not arch.positional:
        problems.append("the target tells positions apart (fixed positions, offsets or subsets), and an "
                        "architecture without positional encoding cannot, whatever its heads hold")
    if program.layers != arch.layers:
        problems.append(f"the program has {program.layers} layers, the architecture {arch.layers}")
    if problems:
        return CheckReport(ok=False, seq_len=seq_len, samples=0, problems=tuple(problems))
    if inputs is None:
        rng = np.random.default_rng(seed)
        inputs = rng.standard_normal((samples, seq_len, arch.input_dim))
    with np.errstate(all="ignore"):  # a target may divide by zero; both sides then agree on nan or inf
        return _replay_all(program, tree, target, arch, inputs, seq_len, max_failures)


def computes_exactly(value, expected) -> bool:
    """The output equals the target's value (up to rounding; both nan or inf where the target divides by 0)."""
    return bool(np.allclose(value, expected, rtol=1e-9, atol=1e-9, equal_nan=True))


def replays(program: Program, tree, target, arch, inputs: np.ndarray, expected: np.ndarray) -> bool:
    """Whether the program computes ``expected`` on every input: ``check`` without its report (no failure's
    required set is computed), stopping at the first miss; for searches that replay many programs."""
    with np.errstate(all="ignore"):
        for X, want in zip(inputs, expected):
            try:
                value, _ = run(program, tree, X, target.realization, arch.positional)
            except _Poisoned:
                return False
            if not computes_exactly(value, want):
                return False
    return True


def _replay_all(program, tree, target, arch, inputs, seq_len, max_failures) -> CheckReport:
    expected = np.asarray(target.evaluate(inputs), dtype=float)
    failures: list[Failure] = []
    for i, X in enumerate(inputs):
        try:
            value, reached = run(program, tree, X, target.realization, arch.positional)
        except _Poisoned as err:
            failures.append(Failure(i, str(err), X, required_set(tree, X, target.realization), err.reached))
        else:
            if not computes_exactly(value, expected[i]):
                failures.append(Failure(i, f"the output computes {value}, the target is {expected[i]}",
                                        X, required_set(tree, X, target.realization), reached))
        if len(failures) >= max_failures:
            break
    return CheckReport(ok=not failures, seq_len=seq_len, samples=len(inputs), failures=tuple(failures))
