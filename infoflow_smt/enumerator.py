"""Brute force: search every program of the solver's vocabulary, replayed by the interpreter (no z3).

This is the independent confirmation of the solver (style.md, point 5) and the baseline it is benchmarked
against. It shares nothing with the encoder: a program is accepted only when ``interpreter.check`` replays
it on concrete inputs. The vocabulary is the solver's: in each layer, each of the two position classes
(``"input"``: every input position alike; ``"output"``: the output token) runs a *set* of at most ``h_l``
operations, chosen from max-position retrieval of a top-1 node, k-th retrieval of a kth node, global
aggregation, and (with positional encoding) specific-position aggregation of the fixed positions and
offsets the target reads; every combination of variable orders of the joint groups is tried.

The search is exhaustive but not naive:

* It runs layer by layer on the interpreter's concrete state (what every position holds and knows, on
  each sample input) and merges programs that reach the same state: the future depends only on it.
* An operation whose score is poisoned (reads a masked content) on any sample fails every program that
  uses it, so it is dropped before sets are formed.
* The state is monotone in the operations: more holdings never poison a score and never change a
  selection (every known selection is the true one), so a set of operations does at least what each of
  its subsets does. With ``maximal=True`` (the default) only sets of ``min(h_l, #usable)`` operations are
  tried, and specific-position aggregation gathers every source at once. ``maximal=False`` tries every
  set; the tests hold the two to the same answers.
* In the last layer only the output token's operations matter (it reads the layer before).

Replay length: a position that holds every candidate of a selection makes it itself, so on a short
sequence a program may succeed *by accident*. Without aggregation a position gathers at most
``prod_l (1 + h_l + P - 1)`` positions (``P`` the specific-position sources), roughly ``(1 + h)^L``: the
replay length is one more than that, capped at ``MAX_REPLAY_LENGTH``. Above the cap an accident would
need every retrieval on every sample to land on a distinct position, which random inputs do not produce.
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

from . import cost
from . import expr as ex
from .errors import InfoflowError
from .interpreter import _Layer, _Poisoned, _Replay, _step, check
from .program import Action, Mode, Offset, Op, Program
from .symbols import T as T_SYMBOL
from .trees import all_orders, comparison_tree, needs_positional, walk

MAX_REPLAY_LENGTH = 16   # replay cost grows as T^2 per retrieval; see the module docstring
MIN_REPLAY_LENGTH = 8    # subsets and ranges keep a few candidates even on the shortest replay


@dataclass(frozen=True)
class EnumerationResult:
    """What the search found: a program the interpreter accepts, or None after trying every one."""

    found: Program | None
    explored: int      # program prefixes tried (layer steps and final output sets), before merging states
    seconds: float
    seq_len: int = 0   # the replay length used
    states: int = 0    # distinct states reached after merging


def sources(target, positional: bool) -> tuple[tuple[ex.FixedIndex, ...], tuple[int, ...]]:
    """The fixed positions and offsets the target reads (the specific-position aggregation sources)."""
    if not positional:
        return (), ()
    tree = comparison_tree(target)
    fixed, offsets = set(), set()
    for score in [tree.graph["output"]] + [g.body for g in tree.graph["groups"].values()]:
        for leaf in walk(score):
            if isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.FixedIndex):
                fixed.add(leaf.index)
            elif isinstance(leaf, ex.Content) and isinstance(leaf.index, ex.OffsetIndex):
                offsets.add(leaf.index.offset)
    return tuple(sorted(fixed, key=str)), tuple(sorted(offsets))


def _min_length(target) -> int:
    """The shortest sequence on which every fixed position, rank and offset of the target exists."""
    tree = comparison_tree(target)
    need = 2
    for _, d in tree.nodes(data=True):
        if d["kind"] == "fixed":
            need = max(need, d["position"].position + 1)
        if d["kind"] == "kth":
            need = max(need, 4 * d["k"] + 1)  # a subset keeps a quarter of the positions
    fixed, offsets = sources(target, True)
    return max([need] + [abs(k) + 2 for k in offsets])


def replay_length(target, arch) -> int:
    """The replay length: above what a program without aggregation can gather, capped (module docstring).

    >>> import infoflow_smt as ifs
    >>> replay_length(ifs.parse_target("max(f1(x[t]) for t in T)"), ifs.Architecture(heads=(1, 1)))
    8
    >>> replay_length(ifs.parse_target("max(f1(x[t]) for t in T)"), ifs.Architecture(heads=(2, 2)))
    10
    """
    fixed, offsets = sources(target, arch.positional)
    extra = max(len(fixed) + len(offsets) - 1, 0)  # one head gathering every source brings P sets
    inner, outer = 1, 0
    for h in arch.heads:
        outer += inner * (h + extra)
        inner *= 1 + h + extra
    return max(min(max(inner, outer) + 1, MAX_REPLAY_LENGTH), MIN_REPLAY_LENGTH, _min_length(target) + 2)


class _Search:
    """The search for one variable order: the tree, one interpreter replay per sample, the vocabulary."""

    def __init__(self, target, arch, order, inputs: np.ndarray, expected: np.ndarray, efficient: bool,
                 maximal: bool, law: cost.DecodeLaw):
        self.target, self.arch, self.order = target, arch, order
        self.tree = comparison_tree(target, order)
        self.replays = [_Replay(self.tree, X, target.realization) for X in inputs]
        self.expected = expected
        self.efficient, self.maximal, self.law = efficient, maximal, law
        self.T = inputs.shape[1]
        self.fixed, self.offsets = sources(target, arch.positional)
        self.explored = 0

    # ---- the vocabulary --------------------------------------------------------------------------
    def vocabulary(self, layer: int, where: str) -> list[Op]:
        """Every operation one head may run in ``layer`` at the class ``where`` (cost rule applied)."""
        ops: list[Op] = []
        for node, data in sorted(self.tree.nodes(data=True)):
            if data["kind"] not in ("top1", "kth"):
                continue
            if len(data["bound"]) > (0 if where == "output" else 1):
                continue  # the output token plays no variable, an input position at most one
            if not isinstance(data["domain"], ex.AllPositions) and not self.arch.positional:
                continue  # the interpreter refuses candidate subsets without positions
            if data["kind"] == "kth":
                if self.efficient and not self._bounded_kth(data["k"], layer):
                    continue
                ops.append(Op(Mode.KTH, node))
            else:
                ops.append(Op(Mode.RETRIEVE, node))
        if not self.efficient or cost.is_bounded(cost.decode(T_SYMBOL, self.arch.input_dim, self.arch.width,
                                                            self.law)):
            ops.append(Op(Mode.AGGREGATE))
        # Specific-position aggregation is always bounded here: its set reaches T only after a global
        # aggregation, which the efficient search admits only when decoding T tokens is bounded.
        refs = list(self.fixed) + ([Offset(k) for k in self.offsets] if where == "input" else [])
        if refs:
            subsets = [tuple(refs)] if self.maximal else [
                c for r in range(1, len(refs) + 1) for c in itertools.combinations(refs, r)]
            ops += [Op(Mode.POSITIONS, positions=s) for s in subsets]
        return ops

    def _bounded_kth(self, k: int, layer: int) -> bool:
        if k < 2:  # kth_largest(1, ...) is a top-1 selection: the retrieval cost of Theorem 1
            return True
        return cost.is_bounded(cost.kth_retrieval(k, self.arch.head_dim(layer)))

    def op_sets(self, ops: list[Op], heads: int) -> Iterator[tuple[Op, ...]]:
        """The sets of operations to try: maximal ones, or all (at most one specific-position op each:
        two merge into one gathering the union)."""
        sizes = [min(heads, len(ops))] if self.maximal else range(0, heads + 1)
        for size in sizes:
            for combo in itertools.combinations(ops, size):
                if sum(op.mode is Mode.POSITIONS for op in combo) <= 1:
                    yield combo

    # ---- stepping the interpreter ----------------------------------------------------------------
    def effect(self, op: Op, where: str, state: tuple[_Layer, ...]) -> tuple[_Layer, ...] | None:
        """The state after one head runs ``op`` at ``where`` on every sample; None if it is poisoned."""
        program = Program((Action(1, 1, where, op),), layers=1)
        try:
            return tuple(_step(r, program, 1, s, self.arch.positional) for r, s in zip(self.replays, state))
        except _Poisoned:
            return None

    def usable(self, layer: int, where: str, state) -> dict[Op, tuple[_Layer, ...]]:
        effects = {op: self.effect(op, where, state) for op in self.vocabulary(layer, where)}
        return {op: e for op, e in effects.items() if e is not None}

    def parts(self, ops: dict[Op, tuple[_Layer, ...]], heads: int, rows: slice, state
              ) -> dict[tuple, tuple[tuple[Op, ...], list[tuple[np.ndarray, list[dict]]]]]:
        """Distinct results, on the rows of one class, of every operation set: key -> (set, per sample)."""
        out: dict[tuple, tuple[tuple[Op, ...], list]] = {}
        for combo in self.op_sets(list(ops), heads):
            part = []
            for i, layer in enumerate(state):
                held = layer.held[rows].copy()
                known = [dict(k) for k in layer.known[rows]]
                for op in combo:  # the effects are unions, so their order does not matter
                    held |= ops[op][i].held[rows]
                    for mine, theirs in zip(known, ops[op][i].known[rows]):
                        mine.update(theirs)
                part.append((held, known))
            out.setdefault(_key(part), (combo, part))
        return out

    def step(self, layer: int, state, last: bool) -> Iterator[tuple[tuple, tuple, tuple]]:
        """(input set, output set, next state) for every distinct successor of ``state``."""
        heads = self.arch.heads[layer - 1]
        T = self.T
        outs = self.parts(self.usable(layer, "output", state), heads, slice(T, T + 1), state)
        if last:  # the output token reads the layer before: input operations here change nothing it sees
            ins = {(): ((), [(s.held[:T], s.known[:T]) for s in state])}
        else:
            ins = self.parts(self.usable(layer, "input", state), heads, slice(0, T), state)
        for (in_ops, in_part), (out_ops, out_part) in itertools.product(ins.values(), outs.values()):
            self.explored += 1
            yield in_ops, out_ops, tuple(_Layer(np.vstack([ih, oh]), ik + ok)
                                         for (ih, ik), (oh, ok) in zip(in_part, out_part))

    def computes(self, state) -> bool:
        """Whether the output token computes the target exactly on every sample."""
        T = self.T
        for replay, layer, want in zip(self.replays, state, self.expected):
            try:
                value = replay.value(self.tree.graph["output"], {}, (T + 1, None, T + 1, layer))
            except _Poisoned:
                return False
            if not np.allclose(value, want, rtol=1e-9, atol=1e-9):
                return False
        return True

    def program(self, path: Iterable[tuple[tuple[Op, ...], tuple[Op, ...]]]) -> Program:
        actions = []
        for layer, (in_ops, out_ops) in enumerate(path, start=1):
            actions += [Action(layer, h, "input", op) for h, op in enumerate(in_ops, start=1)]
            actions += [Action(layer, h, "output", op) for h, op in enumerate(out_ops, start=1)]
        order = tuple((g, o) for g, o in self.order.items() if len(o) > 1)
        return Program(tuple(actions), order, self.arch.layers)

    def search(self, initial: tuple[_Layer, ...]) -> tuple[Program | None, int]:
        """Breadth-first over layers, merging equal states; returns a program and the states reached."""
        frontier: dict[tuple, tuple[tuple[_Layer, ...], tuple]] = {_state_key(initial, self.T): (initial, ())}
        seen = 1
        L = self.arch.layers
        for layer in range(1, L + 1):
            nxt: dict[tuple, tuple[tuple[_Layer, ...], tuple]] = {}
            for state, path in frontier.values():
                for in_ops, out_ops, new in self.step(layer, state, last=layer == L):
                    new_path = path + ((in_ops, out_ops),)
                    if layer == L:
                        if self.computes(new):
                            return self.program(new_path), seen
                    else:
                        nxt.setdefault(_state_key(new, self.T), (new, new_path))
            seen += len(nxt)
            frontier = nxt
        return None, seen


def _freeze(known: list[dict]) -> tuple:
    return tuple(frozenset(k.items()) for k in known)


def _key(part: list[tuple[np.ndarray, list[dict]]]) -> tuple:
    return tuple((held.tobytes(), _freeze(known)) for held, known in part)


def _state_key(state: tuple[_Layer, ...], T: int) -> tuple:
    return tuple((s.held.tobytes(), _freeze(s.known)) for s in state)


def _without_idle_heads(program: Program, target, arch, length: int, samples: int, seed: int) -> Program:
    """Drop, one at a time, the actions the program does not need (maximal sets keep idle heads busy),
    so that the witness reads like the solver's; every drop is confirmed by ``check``."""
    actions = list(program.actions)
    for action in list(actions):
        trial = [a for a in actions if a is not action]
        candidate = Program(tuple(trial), program.order, program.layers)
        if check(candidate, target, arch, seq_len=length, samples=samples, seed=seed, max_failures=1).ok:
            actions = trial
    heads: dict[tuple[int, str], int] = {}
    renumbered = []
    for a in actions:  # heads numbered 1.. within each layer and class again
        heads[(a.layer, a.where)] = heads.get((a.layer, a.where), 0) + 1
        renumbered.append(Action(a.layer, heads[(a.layer, a.where)], a.where, a.op))
    return Program(tuple(renumbered), program.order, program.layers)


def enumerate_programs(target, arch, *, efficient: bool = True, seq_len: int | None = None, samples: int = 4,
                       seed: int = 0, maximal: bool = True, simplify: bool = True,
                       decode_law: cost.DecodeLaw = cost.DecodeLaw.SEED) -> EnumerationResult:
    """Search every program for ``target`` on ``arch``; ``found`` is one the interpreter accepts, or None.

    ``efficient=True`` admits only operations whose cost exponent stays bounded in ``T`` (the solver's
    FEASIBLE); ``efficient=False`` admits every operation (some program exists at any cost). ``seq_len``
    overrides the replay length (``replay_length``); ``samples``/``seed`` fix the inputs, exactly as
    ``interpreter.check`` draws them. ``maximal`` tries only maximal operation sets (module docstring);
    ``simplify`` drops the found program's idle heads afterwards.

    >>> import infoflow_smt as ifs
    >>> arch = ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2)
    >>> enumerate_programs(ifs.catalogue.get("min_pairwise_dot"), arch).found is not None
    True
    >>> enumerate_programs(ifs.catalogue.get("min_pairwise_dot"), arch.with_heads((2,))).found is None
    True
    """
    started = time.perf_counter()
    if isinstance(target, str):
        from . import catalogue
        target = catalogue.parse_spec(target)
    length = seq_len if seq_len is not None else replay_length(target, arch)
    if needs_positional(target) and not arch.positional:
        # permutation invariance: no program tells positions apart (model.md section 3), whatever it holds
        return EnumerationResult(None, 0, time.perf_counter() - started, length, 0)
    inputs = np.random.default_rng(seed).standard_normal((samples, length, arch.input_dim))
    expected = np.asarray(target.evaluate(inputs), dtype=float)
    held = np.zeros((length + 1, length), dtype=bool)
    held[np.arange(length), np.arange(length)] = True
    initial = tuple(_Layer(held.copy(), [dict() for _ in range(length + 1)]) for _ in range(samples))
    explored = states = 0
    for order in all_orders(target):
        search = _Search(target, arch, order, inputs, expected, efficient, maximal, decode_law)
        program, reached = search.search(initial)
        explored += search.explored
        states += reached
        if program is not None:
            report = check(program, target, arch, seq_len=length, samples=samples, seed=seed)
            if not report.ok:
                raise InfoflowError(f"enumerator bug: its replay accepts a program that interpreter.check "
                                    f"refuses\n{program}\n{report}")
            if simplify:
                program = _without_idle_heads(program, target, arch, length, samples, seed)
            return EnumerationResult(program, explored, time.perf_counter() - started, length, states)
    return EnumerationResult(None, explored, time.perf_counter() - started, length, states)


__all__ = ["EnumerationResult", "enumerate_programs", "replay_length", "sources", "MAX_REPLAY_LENGTH"]
