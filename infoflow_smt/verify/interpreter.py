"""The reference interpreter: replays a witness program with hard attention on concrete random inputs.

It is the checker of every solver answer and shares no code with the encoder. Each position keeps the set
of input positions it holds (``I(p, l)``) and the selections it knows (node, binding -> chosen position).
A content a position does not hold is masked, so any score or value that reads it is poisoned: a poisoned
score is a failed action, a poisoned output a failed program. The output token (for a target with an
answer at every position, each input position, playing ``o`` itself) must end up computing
exactly what ``Target.evaluate`` computes on the target's own text (the tree is built from its normal
form, so every replay also checks the normal form).

Who reads what (docs/model.md, section 2):

* a retrieval at position ``p`` ranks candidates by its node's score, which depends on the candidate in
  every term; a read tied to the candidate's variable (its token, an offset from it, a selection made for
  it) is the candidate's, a read tied to the variable ``p`` plays is ``p``'s, a read tied to no variable
  (a fixed position, a selection with no bound variable) either side's. The winner's holdings and
  knowledge are copied to ``p``;
* a selection's *value* is computed later, by whichever position needs it, from what that position holds:
  the side that knows the selection holds the winner's holdings;
* a position holding every candidate (and what their scores read) makes a selection itself;
* a global averaging head (``Mode.AVERAGE``) learns the mean (or sum) of a per-token value that every
  position computes from what it holds: a linear statistic, no token is gathered;
* under ``Architecture(rank_aware=True)`` a retrieval head must be at least as wide as its score's rank,
  measured on numbers (``rank_measure.py``), not counted from the text as the encoder does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import causal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.hosting import HOST
from infoflow_smt.lang.realization import Realization
from infoflow_smt.lang.trees import GroupRef, NodeRef, comparison_tree, needs_positional, outermost, walk
from infoflow_smt.model import readout
from infoflow_smt.model.program import Mode, Offset, Program, validate
from infoflow_smt.verify import arithmetic, rank_measure, replay

_LAST = ex.FixedIndex(0, True)   # position T
AVERAGED = -1          # in ``known``: the node is an aggregate whose value the position learnt by averaging
EVERYTHING = object()  # the output of a run whose output token holds every token: it computes the target
SELECTOR, CANDIDATE = "selector", "candidate"


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

    def _repr_html_(self) -> str:
        """Jupyter's view: the result, and each structural problem and (the first five) failing inputs."""
        import html
        if self.ok:
            return f"<p><b style='color:#1b7837'>OK</b>: {html.escape(str(self)[4:])}</p>"
        items = "".join(f"<li><code>{html.escape(str(x))}</code></li>" for x in (*self.problems, *self.failures[:5]))
        return (f"<p><b style='color:#b2182b'>FAILED</b> on length {self.seq_len} ({self.samples} inputs tried; "
                f"the problems and the first failing inputs, each reproducible):</p><ul>{items}</ul>")


class Poisoned(Exception):
    """A score or value read masked content (a failed action or a failed program)."""

    reached: frozenset[int] = frozenset()  # what the output token held when it happened


class LayerState:
    """What every position holds and knows after one layer, on one input: ``held[p-1, q-1]`` (position
    ``p`` holds ``x[q]``) and ``known[p-1]`` (its selections, binding -> chosen position)."""

    def __init__(self, held: np.ndarray, known: list[dict]):
        self.held = held
        self.known = known
        self.names: dict[int, dict] = {}  # position -> selections it knows under another name (``hosted``)

    @classmethod
    def start(cls, seq_len: int) -> LayerState:
        """Before layer 1: each input position holds itself, the output token (row T+1) nothing."""
        held = np.zeros((seq_len + 1, seq_len), dtype=bool)
        held[np.arange(seq_len), np.arange(seq_len)] = True
        return cls(held, [{} for _ in range(seq_len + 1)])


@dataclass(frozen=True)
class Viewpoint:
    """Who evaluates: the position acting (``selector``), the candidate whose side is read (an int, an
    array of candidates, or None outside a comparison), and which side plays each variable."""

    selector: int
    candidate: object
    layer: LayerState
    sides: dict

    def side(self, variables) -> str | None:
        """The side a read tied to ``variables`` belongs to (None: tied to none, either side)."""
        sides = {self.sides.get(v, SELECTOR) for v in variables}
        return CANDIDATE if CANDIDATE in sides else (SELECTOR if sides else None)

    def position(self, side: str):
        return self.candidate if side == CANDIDATE else self.selector

    def alone(self, position: int) -> Viewpoint:
        """``position`` evaluating on its own (it makes a selection itself, or computes a per-token value)."""
        return Viewpoint(position, None, self.layer, {})


class ScalarReplay:
    """A program's replay on one input, one position at a time (the reference; ``replay.BatchReplay`` runs a
    batch at once): reading contents, evaluating scores and values, selecting."""

    def __init__(self, tree, X: np.ndarray, realization: Realization, per_position: bool = False,
                 last: bool = False, causal: bool = False, unasked: frozenset[int] = frozenset(),
                 positional: bool = True):
        self.tree = tree
        self.positional = positional      # positions are told apart (a prefix sum scales its mean by p)
        self.unasked = unasked            # input positions whose answer is not defined (``Target.answered``)
        self.causal = causal              # input positions see no later position
        self.per_position = per_position  # every input position answers for itself (``answers``)
        self.last = last                  # the answer is read at position T (``answering_positions``)
        self.X = X
        self.T, self.d = X.shape
        self.real = realization
        # the realization draws its parameters afresh on each call: memoize them for this replay
        self.matrix = lru_cache(maxsize=None)(realization.matrix)
        self.vector = lru_cache(maxsize=None)(realization.vector)
        self.function = lru_cache(maxsize=None)(realization.function)
        self.trace: set[int] | None = None  # positions read along the chain (for R_F)
        self.scanning = 0
        self.made: dict[tuple, int] = {}    # selections made by positions holding every token
        # a hosted form -> the binding-free selections it is at a fixed position (``Hosting.fixed``, reversed)
        self._fixed_names: dict[str, list] = {}
        for other, hostings in tree.graph["hostings"].items():
            for h in hostings:
                if h.fixed is not None and not tree.nodes[other]["bound"]:
                    self._fixed_names.setdefault(h.node, []).append((other, h))

    # ---- reading contents -----------------------------------------------------------------------
    def content(self, q, side: str | None, view: Viewpoint) -> np.ndarray:
        """``x[q]`` read by ``side`` (either side when None); ``q`` may be an array over candidates."""
        q = np.asarray(q)
        inside = (q >= 1) & (q <= self.T)
        clipped = np.clip(q, 1, self.T) - 1
        held = view.layer.held
        if side is None:
            holds = held[view.selector - 1, clipped]
            if view.candidate is not None:
                holds = holds | held[np.asarray(view.candidate) - 1, clipped]
        else:
            holds = held[np.asarray(view.position(side)) - 1, clipped]
        unheld = ~holds & inside
        if unheld.any():
            at = np.argwhere(np.atleast_1d(unheld))[0][0]
            read = int(np.atleast_1d(np.broadcast_to(q, unheld.shape))[at])
            if side == CANDIDATE:
                reader = int(np.atleast_1d(np.broadcast_to(view.candidate, unheld.shape))[at])
                raise Poisoned(f"candidate {reader} reads x[{read}] for position {view.selector}, "
                                "which it does not hold")
            raise Poisoned(f"position {view.selector} reads x[{read}], which it does not hold")
        if self.trace is not None and not self.scanning:
            self.trace.update(int(v) for v in np.atleast_1d(q[inside]))
        values = self.X[clipped]
        # outside the sequence: padding, the zero vector, as in Target.evaluate
        return values if inside.all() else np.where(inside[..., None], values, 0.0)

    def domain(self, domain, env: dict | None = None) -> np.ndarray:
        """The candidates of a domain; a range bounded by a variable (``range(1, s)``) at ``env``'s binding."""
        bounds = {v: int(env[v]) for v in ex.domain_variables(domain)} if env else None
        return self.real.domain_positions(domain, self.T, bounds)

    def is_vector(self, e) -> bool:
        return arithmetic.is_vector(e, self.tree)

    # ---- values -----------------------------------------------------------------------------------
    def value(self, e, env: dict, view: Viewpoint):
        """The value of ``e``; a variable may be bound to an array of candidates (then the result has a
        leading candidate axis)."""
        if isinstance(e, ex.Num):
            return e.value
        if isinstance(e, ex.Param):  # a vector wherever it stands; bilinear reads its matrix directly
            return self.vector(e.name, self.d)
        if isinstance(e, ex.Content):
            return self.token(e.index, env, view)
        if isinstance(e, GroupRef):
            return self.node_value(outermost(self.tree, e.group), env, view)
        if isinstance(e, NodeRef):
            return self.node_value(e.node, env, view)
        if isinstance(e, ex.BinOp):
            a, b = self.value(e.left, env, view), self.value(e.right, env, view)
            return arithmetic.apply_operator(e.op, a, b, self.is_vector(e.left), self.is_vector(e.right))
        if isinstance(e, ex.Neg):
            return -self.value(e.operand, env, view)
        if isinstance(e, ex.Call):
            return self.call(e, env, view)
        raise TypeError(f"cannot evaluate {e!r} on its own")

    def token(self, index, env: dict, view: Viewpoint):
        """``x[index]``: the position and the side that reads it."""
        if isinstance(index, ex.VarIndex):
            return self.content(env[index.name], view.side({index.name}), view)
        if isinstance(index, ex.OffsetIndex):
            return self.content(np.asarray(env[index.name]) + index.offset, view.side({index.name}), view)
        if isinstance(index, ex.FixedIndex):
            return self.content(index.resolve(self.T), None, view)
        chosen, side = self.lookup(outermost(self.tree, index.group), env, view)
        return self.content(chosen, side, view)  # the side that knows the selection holds the winner

    def call(self, e: ex.Call, env, view):
        """A call's value (``arithmetic.apply_call``); bilinear reads its matrix, its first argument, directly."""
        bilinear = e.name == "bilinear"
        matrix = self.matrix(e.args[0].name, self.d) if bilinear else None
        operands = e.args[1:] if bilinear else e.args
        args = [self.value(x, env, view) for x in operands]
        return arithmetic.apply_call(e.name, args, [self.is_vector(x) for x in operands], matrix=matrix,
                                     function=self.function)

    def node_value(self, node: str, env: dict, view: Viewpoint):
        """The value of ``node`` at the bindings of ``env``, computed from what ``view`` holds."""
        data = self.tree.nodes[node]
        env = {v: env[v] for v in data["bound"]}
        if ex.domain_variables(data["domain"]) and not len(self.domain(data["domain"], env)):
            return self.empty(node, env)
        if data["kind"] == "aggregate":
            return self.aggregate(node, env, view)
        chosen, side = self.lookup(node, env, view)
        if data["sense"] in ("argmin", "argmax"):
            return float(chosen)
        sides = dict(view.sides, **{data["var"]: side})
        return self.score(data, dict(env, **{data["var"]: chosen}), Viewpoint(view.selector, view.candidate,
                                                                          view.layer, sides))

    def empty(self, node: str, env: dict) -> float:
        """A min (max) whose bounded range is empty at this binding: +inf (-inf), so that the joint
        reduction it stands in (``min(... for s in T for t in range(1, s))`` at ``s = 1``) skips the binding,
        as ``Target.evaluate`` does; no position needs to hold anything to know that its range is empty."""
        sense = self.tree.nodes[node]["sense"]
        if sense in ("min", "max"):
            return np.inf if sense == "min" else -np.inf
        raise Poisoned(f"{node} has no candidate at {env}")

    def aggregate(self, node: str, env: dict, view: Viewpoint):
        """A sum or mean: known from an averaging head, or computed by a side holding every position."""
        data = self.tree.nodes[node]
        key = self.binding(node, env)
        side = view.side(data["bound"])
        for s in ([side] if side else [SELECTOR, CANDIDATE] if view.candidate is not None else [SELECTOR]):
            p = view.position(s)
            if isinstance(p, (int, np.integer)) and view.layer.known[p - 1].get(key) == AVERAGED:
                return self.per_token_total(node, env, None)
        errors = []
        for s in ([side] if side else [SELECTOR, CANDIDATE] if view.candidate is not None else [SELECTOR]):
            try:
                return self.per_token_total(node, env, view.alone(int(view.position(s))))
            except Poisoned as err:
                errors.append(err)
        raise errors[0]

    def per_token_total(self, node: str, env: dict, view: Viewpoint | None):
        """The sum or mean of the node's score over its candidates; ``view`` None: nothing is checked
        (an averaging head checked, when it ran, that every position computed its value)."""
        data = self.tree.nodes[node]
        candidates = self.domain(data["domain"], env)
        values = []
        for c in candidates:
            local = dict(env, **{data["var"]: int(c)})
            if view is None:
                values.append(self.unchecked(data["score"], local))
            else:
                values.append(self.value(data["score"], local, view))
        total = np.sum(values, axis=0)
        return total / len(candidates) if data["sense"] == "mean" else total

    def unchecked(self, e, env: dict):
        """A value with every content readable (for the values an averaging head already checked)."""
        everything = LayerState(np.ones((self.T + 1, self.T), dtype=bool), [{} for _ in range(self.T + 1)])
        self.scanning += 1
        try:
            return self.value(e, env, Viewpoint(self.T + 1, None, everything, {}))
        finally:
            self.scanning -= 1

    # ---- selections -----------------------------------------------------------------------------
    def binding(self, node: str, env: dict) -> tuple:
        return (node,) + tuple((v, int(env[v])) for v in sorted(self.tree.nodes[node]["bound"]))

    def lookup(self, node: str, env: dict, view: Viewpoint) -> tuple[int, str]:
        """The position ``node`` selects at ``env``, and the side that knows (or makes) it: the side playing
        its bound variables, either side for a selection that binds none."""
        bound = self.tree.nodes[node]["bound"]
        side = view.side(bound)
        tries = [side] if side else ([SELECTOR, CANDIDATE] if view.candidate is not None else [SELECTOR])
        errors = []
        for s in tries:
            try:
                return self.select(node, env, int(view.position(s)), view.layer), s
            except Poisoned as err:
                errors.append(err)
        raise errors[0]

    def select(self, node: str, env: dict, who: int, layer: LayerState) -> int:
        """The position ``node`` selects at ``env`` as known to (or made by) position ``who``."""
        key = self.binding(node, env)
        known = layer.known[who - 1].get(key)
        if known is None:
            known = self.hosted(node, env, who, layer)
        if known is not None:
            return known
        omniscient = layer.held[who - 1].all()
        if omniscient and key in self.made:  # a position holding every token makes it as any other one would
            return self.made[key]
        view = Viewpoint(who, None, layer, {})  # ``who`` holds every candidate: it makes the selection itself
        candidates, scores = self.rank(node, env, view, None)
        chosen = self.pick(node, candidates, scores)
        if omniscient:
            self.made[key] = chosen
        return chosen

    def hosted(self, node: str, env: dict, who: int, layer: LayerState) -> int | None:
        """The position ``node`` selects at ``env``, known to ``who`` as the same selection made elsewhere
        (``trees.Hosting``): made at the position playing its bound variable under another node's name, or
        made by the winner of another selection for itself and copied with what that winner knew. None when
        ``who`` knows it under no name."""
        moved = self.tree.graph["moved"].get(node)
        if moved is not None:   # the winner of the moved selection, m after this one's (``trees.py``)
            winner = layer.known[who - 1].get(self.binding(moved[0], {}))
            if winner is not None:
                return winner - moved[1]
        return self._named(self.binding(node, env), node, env, who, layer, set())[0]

    def _named(self, key: tuple, node: str, env: dict, who: int, layer: LayerState, open_: set) -> tuple[int | None, bool]:
        """``hosted``'s search: the position and whether the answer is final. A name met again while it is
        still being looked up (``open_``: a chain whose winner wins its own selection names itself) answers
        None for that path, and an answer that rests on such a None is not remembered."""
        memo = layer.names.setdefault(who, {})
        if key in memo:
            return memo[key], True
        if key in open_:
            return None, False
        open_.add(key)
        final, found = True, None
        for h in self.tree.graph["hostings"].get(node, ()):
            if h.winner is not None:
                winner_env = {v: env[v] for v in self.tree.nodes[h.winner]["bound"]}
                host, done = self._known(h.winner, winner_env, who, layer, open_)
                final &= done
            elif h.own is not None:
                host = env[h.own]
            elif h.fixed is not None:
                host = h.fixed.resolve(self.T)
            else:   # one selection under two names, made for no binding
                host = ()
            if host is None:
                continue
            found, done = self._known(h.node, {h.variable: host} if h.variable else {}, who, layer, open_)
            final &= done
            if found is not None:
                final = True
                break
        if found is None:   # a hosted form at a fixed position is the selection that names it there
            for other, h in self._fixed_names.get(node, ()):
                if env.get(h.variable) == h.fixed.resolve(self.T):
                    found, done = self._known(other, {}, who, layer, open_)
                    final &= done
                    if found is not None:
                        final = True
                        break
        open_.discard(key)
        if final:
            memo[key] = found
        return found, final

    def _known(self, node: str, env: dict, who: int, layer: LayerState, open_: set) -> tuple[int | None, bool]:
        key = self.binding(node, env)
        known = layer.known[who - 1].get(key)
        if known is not None:
            return known, True
        return self._named(key, node, env, who, layer, open_)

    def rank(self, node: str, env: dict, view: Viewpoint, candidate_side: str | None) -> tuple[np.ndarray, np.ndarray]:
        """Candidates and their scores; ``candidate_side`` CANDIDATE when each candidate reads its own
        side (a retrieval), None when ``view.selector`` evaluates every score itself."""
        data = self.tree.nodes[node]
        var, candidates = data["var"], self.domain(data["domain"], env)
        sides = {v: SELECTOR for v in data["bound"]} | ({var: CANDIDATE} if candidate_side else {})
        self.scanning += 1
        try:
            if _reads_selections(data["terms"]):  # one candidate at a time: selections are looked up
                scores = [self.score(data, dict(env, **{var: int(c)}),
                                     Viewpoint(view.selector, int(c) if candidate_side else None, view.layer, sides))
                          for c in candidates]
            else:  # every candidate at once
                local = dict(env, **{var: candidates})
                scores = np.broadcast_to(self.score(data, local, Viewpoint(
                    view.selector, candidates if candidate_side else None, view.layer, sides)), candidates.shape)
        finally:
            self.scanning -= 1
        return candidates, np.asarray(scores, dtype=float)

    def score(self, data: dict, env: dict, view: Viewpoint):
        """A node's score; a token compared as a number (scalar tokens, ``d = 1``) is its one coordinate."""
        total = sum((sign * np.asarray(self.value(t, env, view)) for sign, t in data["terms"]), np.zeros(()))
        return total[..., 0] if self.is_vector(data["score"]) else total

    def pick(self, node: str, candidates: np.ndarray, scores: np.ndarray) -> int:
        data = self.tree.nodes[node]
        if not len(candidates):
            raise Poisoned(f"{node} has no candidate here")
        if data["sense"] in ("min", "argmin"):
            return int(candidates[int(np.argmin(scores))])
        if data["sense"] in ("max", "argmax"):
            return int(candidates[int(np.argmax(scores))])
        if data["k"] > len(candidates):
            raise Poisoned(f"{node} asks for the {data['k']}-th largest of {len(candidates)} candidates")
        return int(candidates[np.argsort(-scores, kind="stable")[data["k"] - 1]])


def _reads_selections(terms) -> bool:
    return any(isinstance(sub, (GroupRef, NodeRef)) or (isinstance(sub, ex.Content)
               and isinstance(sub.index, GroupRef)) for _, t in terms for sub in walk(t))


# ---- one layer of a program ---------------------------------------------------------------------------
def step_layer(scalar: ScalarReplay, program: Program, layer_no: int, prev: LayerState, positional: bool,
               causal: bool = False) -> LayerState:
    """Every position applies its heads' operations to what every position held after the layer before.
    Raises ``Poisoned`` when an operation reads content its position does not hold, or, under a causal mask,
    an input position's head would attend to a position after it."""
    T = scalar.T
    held, known = _carried(prev)
    for p in range(1, T + 2):
        where = "output" if p == T + 1 else "input"
        acts = {a.head: a for a in program.at(layer_no, where)}
        if positional and p <= T:
            for a in program.actions:
                if a.layer == layer_no and not isinstance(a.where, str) and a.where.resolve(T) == p:
                    acts[a.head] = a
        for a in acts.values():
            try:
                sources = _OPERATIONS[a.op.mode](scalar, a.op, p, prev, known)
                if causal and p <= T and max(sources, default=0) > p:
                    raise Poisoned(f"under the causal mask it cannot see position {max(sources)}")
            except Poisoned as err:
                raise Poisoned(f"{a} at position {p} is poisoned: {err}") from None
            for s in sources:
                held[p - 1] |= prev.held[s - 1]
                for key, value in prev.known[s - 1].items():
                    known[p - 1].setdefault(key, value)
    return LayerState(held, known)


def _carried(prev: LayerState) -> tuple[np.ndarray, list[dict]]:
    """What every position keeps from the layer before: everything (the residual connection)."""
    return prev.held.copy(), [dict(k) for k in prev.known]


def _idle(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    return []


def _aggregate_all(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    """Every position the head sees: under the mask an input position's prefix (position T's is everything)."""
    last = p if scalar.causal and p <= scalar.T else scalar.T + 1
    return list(range(1, last + 1))


def _aggregate_positions(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    sources = [p + q.offset if isinstance(q, Offset) else q.resolve(scalar.T) for q in op.positions]
    return [s for s in sources if 1 <= s <= scalar.T]


def _retrieve(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    """Rank the node's candidates from ``p``'s query side and each candidate's key side; copy the winner."""
    env = _role_env(scalar.tree, op.node, p) if p <= scalar.T else {}
    candidates, scores = scalar.rank(op.node, env, Viewpoint(p, None, prev, {}), CANDIDATE)
    if len(candidates) < scalar.tree.nodes[op.node].get("k", 1):  # a range bounded by p's own position, empty
        return []  # there (fewer than k candidates for a k-th largest): nothing to retrieve, nothing learnt
    if p <= scalar.T and scalar.causal and candidates.max() > p:  # a masked softmax cannot rank what it cannot see
        raise Poisoned(f"under the causal mask it cannot see candidate {int(candidates.max())}")
    chosen = scalar.pick(op.node, candidates, scores)
    known[p - 1][scalar.binding(op.node, env)] = chosen
    return [chosen]


def _average(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    """Every aggregate whose per-token value every position it averages computes from what it holds: ``p``
    learns its mean (or sum). One head carries every such value (its value vectors stack them); an aggregate
    some position cannot compute is simply not learnt. Under the causal mask an input position averages its
    prefix: an aggregate that binds no variable only when it sees every candidate, and an aggregate over the
    positions up to the one ``p`` plays (``range(1, s+1)``) at its own binding, a sum only where ``p`` knows its
    index (positional encoding) to scale the mean."""
    masked = scalar.causal and p <= scalar.T
    for node, data in scalar.tree.nodes(data=True):
        if data["kind"] != "aggregate":
            continue
        env = _prefix_binding(scalar, data, p) if masked else ({} if not data["bound"] else None)
        if env is None:
            continue
        candidates = scalar.domain(data["domain"], env)
        if masked and len(candidates) and candidates.max() > p:
            continue
        try:
            for c in candidates:
                scalar.value(data["score"], dict(env, **{data["var"]: int(c)}), Viewpoint(int(c), None, prev, {}))
        except Poisoned:
            continue
        known[p - 1][scalar.binding(node, env)] = AVERAGED
    return []


def _prefix_binding(scalar: ScalarReplay, data: dict, p: int) -> dict | None:
    """Under the mask, the binding at which position ``p`` can average an aggregate: none for one that binds
    no variable, ``p`` itself for one over its own prefix (told apart by the mask, or by positions), None
    where it cannot."""
    if not data["bound"]:
        return {}
    (var,) = data["bound"] if len(data["bound"]) == 1 else (None,)
    if var is None or not ex.sees_candidates(data["domain"], var):
        return None
    if not (ex.masked_prefix(data["domain"], var) or scalar.positional) or (data["sense"] == "sum" and not scalar.positional):
        return None
    return {var: p}


def _collect(scalar: ScalarReplay, op, p: int, prev: LayerState, known: list[dict]) -> list[int]:
    """A prefix collection: rank the positions ``p`` sees by the sum of their prefix forms' values, each read
    by the candidate itself (a max grows along the sequence, a min falls: the sum counts its negation), and
    copy the winner, the first position where every one is whole; ``p`` then knows each selection as the
    winner's prefix form."""
    prefixes = scalar.tree.graph["prefixes"]
    last = p if scalar.causal and p <= scalar.T else scalar.T
    total = np.zeros(last)
    for node in op.nodes:
        if node not in prefixes:
            raise Poisoned(f"{node} has no prefix form to collect")
        form = scalar.tree.nodes[prefixes[node]]
        sign = 1.0 if form["sense"] in ("max", "argmax") else -1.0
        for c in range(1, last + 1):
            view = Viewpoint(c, None, prev, {})
            chosen = scalar.select(prefixes[node], {HOST: c}, c, prev)
            total[c - 1] += sign * float(np.asarray(scalar.score(form, {HOST: c, form["var"]: chosen}, view)))
    winner = int(np.argmax(total)) + 1
    for node in op.nodes:
        known[p - 1][(node,)] = scalar.select(prefixes[node], {HOST: winner}, winner, prev)
    return [winner]


_OPERATIONS = {Mode.IDLE: _idle, Mode.COLLECT: _collect, Mode.AGGREGATE: _aggregate_all, Mode.POSITIONS: _aggregate_positions,
               Mode.RETRIEVE: _retrieve, Mode.KTH: _retrieve, Mode.AVERAGE: _average}


def _role_env(tree, node: str, position: int) -> dict:
    bound = sorted(tree.nodes[node]["bound"])
    return {bound[0]: position} if bound else {}


def _action_problems(program: Program, tree, arch) -> list[str]:
    problems = validate(program, arch)
    for a in program.actions:
        if a.op.mode not in (Mode.RETRIEVE, Mode.KTH):
            continue
        if a.op.node not in tree.nodes or tree.nodes[a.op.node]["kind"] not in ("top1", "kth"):
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
        prefix = arch.causal and a.where == "input" and any(ex.masked_prefix(data["domain"], v) for v in data["bound"])
        if not isinstance(data["domain"], ex.AllPositions) and not arch.positional and not prefix:
            problems.append(f"{a}: restricting candidates to a subset needs positional encoding")
    if arch.causal:   # position T sees every position: its aggregation is the whole sequence's
        problems += [f"{a}: under a causal mask an input position's {a.op.mode.value} sees only the positions "
                     "before it, which this model leaves out (docs/model.md, 'Causal mask')"
                     for a in program.actions if a.where not in ("output", _LAST) and a.op.mode is Mode.AGGREGATE]
    return problems


def answering_positions(seq_len: int, per_position: bool, last: bool = False,
                        unasked: frozenset[int] = frozenset()) -> list[int]:
    """Where the target's answer is read: the output token ``T+1``; position ``T`` (``last``: read at the last
    position with positional encoding); or, for a target with an answer at every position
    (``Target.per_position``), every input position ``1..T`` but the ``unasked`` ones, each playing ``o`` itself."""
    if per_position:
        return [p for p in range(1, seq_len + 1) if p not in unasked]
    return [seq_len] if last else [seq_len + 1]


def unasked(target, seq_len: int) -> frozenset[int]:
    """The input positions a target with an answer at every position leaves without one at ``seq_len``
    (``Target.answered``: a range bounded by ``o`` is empty there); none for any other target."""
    return frozenset(int(p) + 1 for p in np.flatnonzero(~target.answered(seq_len)))


def answer_at(scalar: ScalarReplay, layer: LayerState, p: int):
    """The answer position ``p`` computes from what it holds after the last layer (``EVERYTHING`` when it
    holds every token: it computes any function of them)."""
    if layer.held[p - 1].all():
        return EVERYTHING
    env = {ex.ANSWER: p} if scalar.per_position else {}
    return scalar.value(scalar.tree.graph["output"], env, Viewpoint(p, None, layer, {}))


def answers(scalar: ScalarReplay, layer: LayerState):
    """The output token's answer, or, for a target with an answer at every position, the list of every input
    position's own (``computes_exactly`` compares either with ``Target.evaluate``). Raises ``Poisoned``
    naming the answering position whose answer reads what it does not hold."""
    places = answering_positions(scalar.T, scalar.per_position, scalar.last, scalar.unasked)
    if not scalar.per_position:
        return answer_at(scalar, layer, places[0])
    found: list = [None] * scalar.T  # None: no answer is asked there (``Target.evaluate`` gives NaN)
    for p in places:
        try:
            found[p - 1] = answer_at(scalar, layer, p)
        except Poisoned as err:
            raise Poisoned(f"the answer at position {p}: {err}") from None
    return found


def required_set(tree, X: np.ndarray, realization: Realization, per_position: bool = False,
                 last: bool = False, unasked: frozenset[int] = frozenset()) -> frozenset[int]:
    """R_F(X): the positions the output's chain reads (every answering position's, for a target with an
    answer at every position), found by positions that hold everything."""
    scalar = ScalarReplay(tree, X, realization)
    T = scalar.T
    omniscient = LayerState(np.ones((T + 1, T), dtype=bool), [{} for _ in range(T + 1)])
    scalar.trace = set()
    for p in answering_positions(T, per_position, last, unasked):
        env = {ex.ANSWER: p} if per_position else {}
        scalar.value(tree.graph["output"], env, Viewpoint(p, None, omniscient, {}))
    return frozenset(scalar.trace)


def run(program: Program, tree, X: np.ndarray, realization: Realization, positional: bool, causal: bool = False,
        per_position: bool = False, last: bool = False, unasked: frozenset[int] = frozenset()):
    """Run a program on one input; returns (the answer: the output's value, or the list of every input
    position's for a target with an answer at every position; what the output token holds).

    Raises ``Poisoned`` (with the reason) when an action or an answer reads content it does not hold."""
    scalar = ScalarReplay(tree, X, realization, per_position, last, causal, unasked, positional)
    T = scalar.T
    reader = T - 1 if last else T  # the row of the position the answer is read at (the output token's: T)
    layer = LayerState.start(T)
    try:
        for layer_no in range(1, program.layers + 1):
            layer = step_layer(scalar, program, layer_no, layer, positional, causal)
        reached = frozenset(int(q) + 1 for q in np.flatnonzero(layer.held[reader]))
        value = answers(scalar, layer)
    except Poisoned as err:
        err.reached = frozenset(int(q) + 1 for q in np.flatnonzero(layer.held[reader]))
        raise
    return value, reached


MAX_CHECK_LENGTH, MAX_CHECK_SAMPLES = 4096, 100_000  # a replay holds samples x length x length Booleans


def _check_arguments(program, target, arch, seq_len, samples, seed, inputs, max_failures) -> list[str]:
    from infoflow_smt.model.architecture import Architecture

    problems = []
    if not isinstance(program, Program):
        problems.append(f"program must be an ifs.Program, got {type(program).__name__}")
    if not isinstance(arch, Architecture):
        problems.append(f"architecture must be an ifs.Architecture, got {type(arch).__name__}")
    for name, value, low, high in (("seq_len", seq_len, 2, MAX_CHECK_LENGTH),
                                   ("samples", samples, 1, MAX_CHECK_SAMPLES),
                                   ("max_failures", max_failures, 1, None)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low or \
                (high is not None and value > high):
            bound = f"between {low} and {high}" if high else f">= {low}"
            problems.append(f"{name} must be an integer {bound} (every witness is replayed), got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        problems.append(f"seed must be an integer, got {seed!r}")
    if inputs is not None:
        d = getattr(arch, "input_dim", None)
        ok = isinstance(inputs, np.ndarray) and inputs.ndim == 3 and len(inputs) >= 1 and inputs.shape[2] == d
        ok = ok and 2 <= inputs.shape[1] <= MAX_CHECK_LENGTH and np.issubdtype(inputs.dtype, np.number)
        if not ok or not np.isfinite(inputs).all():
            shape = getattr(inputs, "shape", type(inputs).__name__)
            problems.append(f"inputs must be a finite array of shape (samples, T, {d}) with 2 <= T <= "
                            f"{MAX_CHECK_LENGTH}, got {shape}")
    return problems


def check(program: Program, target, arch, seq_len: int = 12, samples: int = 200, seed: int = 0,
          inputs: np.ndarray | None = None, max_failures: int = 5, deadline=None) -> CheckReport:
    """Replay ``program`` on ``samples`` random inputs ``x ~ N(0, I_d)`` of length ``seq_len``.

    Bad arguments (not a program, ``samples < 1``, inputs of the wrong shape) raise ``InvalidSpecError``
    naming them; a replay is never skipped. ``deadline`` (a ``Deadline``) stops the target's evaluation and a
    long scalar replay.

    >>> import infoflow_smt as ifs
    >>> from infoflow_smt.model.program import Action, Op, Mode, Program
    >>> tgt = ifs.parse_target("max(f1(x[t]) for t in T)")
    >>> prog = Program((Action(1, 1, "output", Op(Mode.RETRIEVE, "g0.t")),), layers=1)
    >>> ifs.check(prog, tgt, ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2), seq_len=6, samples=5).ok
    True
    """
    from infoflow_smt.lang.catalogue import as_target

    target = as_target(target)
    problems = _check_arguments(program, target, arch, seq_len, samples, seed, inputs, max_failures)
    if problems:
        raise InvalidSpecError(problems, "check")
    target = readout.question(target, arch)  # read at the last position: every position's own answer
    if inputs is not None:
        seq_len = inputs.shape[1]
    if target.reads_tokens_as_numbers and arch.input_dim != 1:
        from infoflow_smt.lang.evaluate import scalar_tokens_problem
        raise InvalidSpecError(scalar_tokens_problem(target.text, arch.input_dim), "target")
    if arch.causal:  # the spelling decided under the mask (``causal.check_supported``)
        target = causal.check_supported(target)
    tree = comparison_tree(target, program.order_map)
    problems = _action_problems(program, tree, arch)
    problems += rank_measure.narrow_retrievals(program, tree, arch, target.realization)
    if needs_positional(target, arch.causal) and not arch.positional:
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
        expected = np.asarray(target.evaluate(inputs, deadline), dtype=float)
        passed = None if arch.causal else replay.passes(program, tree, target, inputs, expected, arch.positional,
                                                        last=readout.reads_at_last(target, arch))
        if passed is not None and passed.all():  # the batched replay: every sample computed
            return CheckReport(ok=True, seq_len=seq_len, samples=len(inputs))
        return _scalar_report(program, tree, target, arch, inputs, expected, seq_len, max_failures, deadline)


def computes_exactly(value, expected) -> bool:
    """The output equals the target's value (up to rounding; both nan or inf where the target divides by 0).
    An output token that holds every token computes any function of them (``EVERYTHING``). A list of answers
    (one per input position) must match ``expected`` (its values by position) entry by entry."""
    if isinstance(value, list):
        return len(value) == len(expected) and all(bool(np.isnan(w).all()) if v is None else computes_exactly(v, w)
                                                   for v, w in zip(value, expected))
    return value is EVERYTHING or bool(np.allclose(value, expected, rtol=1e-9, atol=1e-9, equal_nan=True))


def passes_every_input(program: Program, tree, target, arch, inputs: np.ndarray, expected: np.ndarray) -> bool:
    """Whether the program computes ``expected`` on every input: ``check`` without its report (no failure's
    required set is computed), stopping at the first miss; for searches that replay many programs."""
    with np.errstate(all="ignore"):
        for X, want in zip(inputs, expected):
            try:
                value, _ = run(program, tree, X, target.realization, arch.positional, arch.causal,
                               target.per_position, readout.reads_at_last(target, arch), unasked(target, len(X)))
            except Poisoned:
                return False
            if not computes_exactly(value, want):
                return False
    return True


def _scalar_report(program, tree, target, arch, inputs, expected, seq_len, max_failures, deadline=None) -> CheckReport:
    """The scalar replay of every sample: the reference answer, with a report of each failure."""
    failures: list[Failure] = []
    for i, X in enumerate(inputs):
        if deadline is not None:
            deadline.check("the witness replay")
        try:
            value, reached = run(program, tree, X, target.realization, arch.positional, arch.causal,
                                 target.per_position, readout.reads_at_last(target, arch), unasked(target, len(X)))
        except Poisoned as err:
            failures.append(Failure(i, str(err), X, required_set(tree, X, target.realization, target.per_position,
                                                          readout.reads_at_last(target, arch), unasked(target, len(X))), err.reached))
        else:
            if not computes_exactly(value, expected[i]):
                what = "the answers are" if isinstance(value, list) else "the output computes"
                failures.append(Failure(i, f"{what} {value}, the target is {expected[i]}",
                                        X, required_set(tree, X, target.realization, target.per_position,
                                                          readout.reads_at_last(target, arch), unasked(target, len(X))), reached))
        if len(failures) >= max_failures:
            break
    return CheckReport(ok=not failures, seq_len=seq_len, samples=len(inputs), failures=tuple(failures))
