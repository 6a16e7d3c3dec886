"""Brute force: every program of the solver's vocabulary, replayed by the interpreter (no z3).

The independent confirmation of the solver (point 5 of the project's style notes, shared/design/style.md,
outside this repository) and its benchmark baseline: a program is
accepted only when the interpreter replays it. The vocabulary is the solver's. In each layer each position
class (``"input"``: every input position alike; ``"output"``; with positions and two layers or more the
*anchors*, fixed positions whose heads may override the inputs') runs a *set* of at most ``h_l``
operations: top-1 or k-th retrieval of a tree node, global aggregation, specific-position aggregation
(several heads with disjoint sources). Every combination of variable orders of the joint groups is tried.

Two searches:

``brute_force_decide`` / ``enumerate_naively``
    the exhaustive enumeration: every program built and replayed, the cheapest that passes kept (lowest
    exponent, then fewest operations), so it answers what ``decide`` answers: status, best exponent and a
    cheapest program. ``program_count`` says how many programs that is.
``enumerate_programs``
    the status only, by a search that is exhaustive but not naive: it runs layer by layer on the
    interpreter's concrete state (what every position holds and knows, on each sample) and merges programs
    that reach the same state, a dynamic program over the program space. An operation poisoned on some
    sample is dropped. The state is monotone in the operations (more holdings never poison a score nor
    change a selection: a known selection is the true one), so with ``maximal=True`` only sets of
    ``min(h_l, #usable)`` operations are tried, and specific-position aggregation gathers every source
    (``maximal=False`` tries every set; the tests hold the two to the same answers). In the last layer only
    the output token's operations matter.

Replay length: a position holding every candidate makes a selection itself, so a short sequence lets a
program succeed *by accident*. Without aggregation a position gathers at most ``prod_l (h_l + P)``
positions (``P >= 1`` specific-position sources), about ``(1 + h)^L``; the replay is one longer, capped at
``MAX_ENUMERATION_LENGTH``: above it an accident needs every retrieval on every sample to bring a new position.

Few inputs: both searches replay on ``samples`` (4) inputs, which can all miss an event a program gets wrong,
such as a position that wins its own selection and so gains nothing from it (about one input in ``T``). A
program either search accepts must also pass ``CONFIRM_SAMPLES`` fresh inputs at every length (``confirmed``);
``enumerate_programs`` then searches again on that many, and ``enumerate_naively`` keeps a program only once
confirmed.
"""
from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import sympy

from infoflow_smt.deadline import Deadline, OutOfTime
from infoflow_smt.deadline import seconds as checked_seconds
from infoflow_smt.errors import InfoflowError, InvalidSpecError
from infoflow_smt.lang import causal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.catalogue import as_target
from infoflow_smt.lang.trees import all_orders, comparison_tree, needs_positional, position_reads
from infoflow_smt.model import cost, readout
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.program import Action, Mode, Offset, Op, Program, program_cost
from infoflow_smt.model.status import Status
from infoflow_smt.symbols import T as T_SYMBOL
from infoflow_smt.verify import rank_measure
from infoflow_smt.verify.interpreter import (
    LayerState,
    Poisoned,
    ScalarReplay,
    answers,
    check,
    computes_exactly,
    passes_every_input,
    step_layer,
    unasked,
)

MAX_ENUMERATION_LENGTH = 16   # a retrieval replays in O(T^2): see the module docstring
MIN_ENUMERATION_LENGTH = 8    # subsets and ranges keep a few candidates even on the shortest replay
# fresh inputs a found program must pass as well: the search's few can all miss an event the program gets
# wrong, such as a host that wins its own selection (about one input in T)
CONFIRM_SAMPLES = 64
Where = str | ex.FixedIndex
_Part = list[tuple[np.ndarray, list[dict]]]   # per sample: the held rows of one class, and their knowledge


@dataclass(frozen=True)
class EnumerationResult:
    """What the search found: a program the interpreter accepts, or None after trying every one."""

    found: Program | None
    explored: int      # program prefixes tried (a state and one operation set per class), before merging
    seconds: float
    seq_len: int = 0   # the replay length
    states: int = 0    # distinct states reached after merging
    first_s: float | None = None  # seconds until the first program that passes (``enumerate_naively``)


def sources(target, positional: bool) -> tuple[tuple[ex.FixedIndex, ...], tuple[int, ...]]:
    """The fixed positions and offsets the target reads (nothing without positional encoding)."""
    if not positional:
        return (), ()
    return position_reads(comparison_tree(target))


def anchor_positions(target, arch) -> tuple[ex.FixedIndex, ...]:
    """Positions ``1..K`` that may override the inputs' heads, as the solver has them: positional encoding,
    two layers or more, ``K`` the groups with a selection node that binds no variable (in some order); and
    position ``T`` when the answer is read there (``last_position``), and every fixed position the target
    names (it holds its own token and may make the selections that read it). Under a causal mask a fixed
    position near the start sees too little to stand in for the others: the named ones only."""
    if not arch.positional or arch.layers < 2:
        return last_position(target, arch)
    named = set(position_reads(comparison_tree(target))[0])
    if arch.causal:
        return tuple(sorted(named - set(last_position(target, arch)), key=lambda q: (q.from_end, q.position))) + \
            last_position(target, arch)
    free = {data["group"] for order in all_orders(target)
            for _, data in comparison_tree(target, order).nodes(data=True)
            if data["kind"] in ("top1", "kth") and not data["bound"]}
    found = named | {ex.FixedIndex(i) for i in range(1, len(free) + 1)}
    return tuple(sorted(found - set(last_position(target, arch)), key=lambda q: (q.from_end, q.position))) + \
        last_position(target, arch)


def last_position(target, arch) -> tuple[ex.FixedIndex, ...]:
    """Position ``T`` as a class of its own when the answer is read there with positional encoding (as the
    solver has it: in every encoding, with or without the other anchors)."""
    return (ex.FixedIndex(0, True),) if arch.positional and readout.reads_at_last(target, arch) else ()


def _decided(target, arch):
    """The spelling the model decides on ``arch``: under a causal mask, ``causal.check_supported``."""
    return causal.check_supported(target) if arch.causal else target


def replay_length(target, arch) -> int:
    """One more than a program without aggregation can gather, capped (module docstring).

    >>> import infoflow_smt as ifs
    >>> replay_length(ifs.parse_target("max(f1(x[t]) for t in T)"), ifs.Architecture(heads=(2, 2)))
    10
    """
    fixed, offsets = sources(target, arch.positional)
    extra = max(len(set(fixed) | set(anchor_positions(target, arch))) + len(offsets) - 1, 0)
    inner, outer = 1, 0
    for h in arch.heads:
        outer += inner * (h + extra)
        inner *= 1 + h + extra
    # every fixed position, rank (a subset keeps a quarter of the positions) and offset must exist
    need = [2] + [abs(k) + 2 for k in sources(target, True)[1]]
    for _, d in comparison_tree(target).nodes(data=True):
        need.append(d["position"].position + 1 if d["kind"] == "fixed" else 4 * d["k"] + 1)
    return max(min(max(inner, outer) + 1, MAX_ENUMERATION_LENGTH), MIN_ENUMERATION_LENGTH, max(need) + 2)


class _Vocabulary:
    """The operations under one variable order, and the operation sets a class may run."""

    def __init__(self, target, arch, order, efficient: bool, maximal: bool, law: cost.DecodeLaw,
                 anchors: tuple[ex.FixedIndex, ...]):
        self.tree, self.arch, self.anchors = comparison_tree(target, order), arch, anchors
        self.efficient, self.maximal, self.law = efficient, maximal, law
        fixed, self.offsets = sources(target, arch.positional)
        self.fixed = tuple(sorted(set(fixed) | set(anchors), key=str))  # specific-position sources
        self.realization, self.ranks = target.realization, {}

    def too_narrow(self, node: str, layer: int) -> bool:
        """Whether a head of ``layer`` is narrower than ``node``'s score's measured rank."""
        if node not in self.ranks:
            self.ranks[node] = rank_measure.measured_rank(self.tree, node, self.realization, self.arch.input_dim)
        return rank_measure.too_narrow(self.ranks[node], self.arch, layer) is not None

    def ops(self, layer: int, where: Where) -> list[Op]:
        """Every operation one head may run in ``layer`` at ``where`` (the efficient search: bounded ones)."""
        ops: list[Op] = []
        masked = self.arch.causal and where == "input"   # a fixed position sees what lies before it: the
        # interpreter refuses what it cannot see
        for node, data in sorted(self.tree.nodes(data=True)):
            if data["kind"] not in ("top1", "kth") or len(data["bound"]) > (0 if where == "output" else 1):
                continue  # the output token plays no variable, an input position at most one
            if masked and not any(ex.sees_candidates(data["domain"], v) for v in data["bound"] or (None,)):
                continue  # under a causal mask an input position ranks only candidates at or before it
            prefix = masked and any(ex.masked_prefix(data["domain"], v) for v in data["bound"])
            if not isinstance(data["domain"], ex.AllPositions) and not self.arch.positional and not prefix:
                continue  # the interpreter refuses candidate subsets without positions
            if self.arch.rank_aware and self.too_narrow(node, layer):
                continue  # the rank rule: the head cannot hold this score (rank_measure.py)
            if data["kind"] == "top1":
                ops.append(Op(Mode.RETRIEVE, node))
            elif not self.efficient or cost.is_bounded(cost.kth_retrieval(data["k"],
                                                                          self.arch.head_dim(layer))):
                ops.append(Op(Mode.KTH, node))
        aggregation = cost.decode(T_SYMBOL, self.arch.input_dim, self.arch.head_dim(layer), self.law)
        if (not self.efficient or cost.is_bounded(aggregation)) and not masked:
            ops.append(Op(Mode.AGGREGATE))
        prefix_aggregates = self.arch.causal and any(
            d["kind"] == "aggregate" and len(d["bound"]) == 1 and ex.sees_candidates(d["domain"], next(iter(d["bound"])))
            for _, d in self.tree.nodes(data=True))
        if any(d["kind"] == "aggregate" and not d["bound"] for _, d in self.tree.nodes(data=True)) and not masked \
                or prefix_aggregates and where != "output":
            ops.append(Op(Mode.AVERAGE))  # linear statistics: exponent 1 (under the mask, of a prefix)
        prefixes = sorted(self.tree.graph["prefixes"])
        if self.arch.causal and prefixes and where in ("output", ex.FixedIndex(0, True)):
            # a prefix collection of any of the selections with a prefix form (the interpreter refuses one whose
            # forms some position does not hold)
            ops += [Op(Mode.COLLECT, nodes=chosen) for r in range(1, min(len(prefixes), 4) + 1)
                    for chosen in itertools.combinations(prefixes, r)]
        # specific-position aggregation is always bounded here: a set reaches T only after a global
        # aggregation, which the efficient search admits only when decoding T tokens is bounded
        refs = list(self.fixed) + ([Offset(k) for k in self.offsets] if where != "output" else [])
        if masked:  # what every input position sees: position 1 and the positions before it
            refs = [q for q in refs if q == ex.FixedIndex(1) or isinstance(q, Offset) and q.offset < 0]
        subsets = [tuple(refs)] if self.maximal and refs else [
            c for r in range(1, len(refs) + 1) for c in itertools.combinations(refs, r)]
        return ops + [Op(Mode.POSITIONS, positions=q) for q in subsets]

    def sets(self, ops: list[Op], heads: int) -> Iterator[tuple[Op, ...]]:
        """Maximal sets, or every set whose specific-position heads gather disjoint sources (a source
        gathered twice brings nothing new; split over heads, the sources cost less than gathered by one)."""
        for size in [min(heads, len(ops))] if self.maximal else range(heads + 1):
            for combo in itertools.combinations(ops, size):
                gathered = [q for op in combo if op.mode is Mode.POSITIONS for q in op.positions]
                if len(gathered) == len(set(gathered)):
                    yield combo


def program_count(target, arch, *, efficient: bool = True, anchors: bool = True,
                  decode_law: cost.DecodeLaw = cost.DecodeLaw.SEED) -> int:
    """How many programs the vocabulary holds: what an enumeration without merging or pruning replays.

    >>> import infoflow_smt as ifs
    >>> program_count("max_retrieval", ifs.Architecture(heads=(1,)))  # idle or one op, at 2 classes
    4
    """
    target = as_target(target)
    fixed, total = anchor_positions(target, arch) if anchors else last_position(target, arch), 0
    for order in all_orders(target):
        vocab, count = _Vocabulary(target, arch, order, efficient, False, decode_law, fixed), 1
        for (layer, heads), where in itertools.product(enumerate(arch.heads, 1), ["input", "output", *fixed]):
            count *= sum(1 for _ in vocab.sets(vocab.ops(layer, where), heads))
        total += count
    return total


class _Search(_Vocabulary):
    """The search under one variable order: the vocabulary, and one interpreter replay per sample."""

    def __init__(self, target, arch, order, efficient: bool, maximal: bool, law: cost.DecodeLaw,
                 anchors: tuple[ex.FixedIndex, ...], inputs: np.ndarray, expected: np.ndarray,
                 deadline: Deadline | None = None):
        super().__init__(target, arch, order, efficient, maximal, law, anchors)
        self.last = readout.reads_at_last(target, arch)  # the answer is read at position T, a class of its own
        skipped = unasked(target, inputs.shape[1])  # positions whose answer is not defined: nothing is asked
        self.sample_replays = [ScalarReplay(self.tree, X, target.realization, target.per_position, self.last,
                                            arch.causal, skipped, arch.positional) for X in inputs]
        self.expected, self.T, self.explored = expected, inputs.shape[1], 0
        self.per_position = target.per_position
        self.deadline = deadline  # None: search to the end

    def parts(self, layer: int, where: Where, rows: list[int], state
              ) -> dict[tuple, tuple[tuple[Op, ...], _Part]]:
        """The distinct results, on ``rows`` (the class's positions), of every operation set at ``where``."""
        usable = {}
        for op in self.ops(layer, where):  # one head's effect on every sample; a poisoned score drops it
            program = Program((Action(1, 1, where, op),), layers=1)
            try:
                usable[op] = [step_layer(r, program, 1, s, self.arch.positional, self.arch.causal)
                              for r, s in zip(self.sample_replays, state)]
            except Poisoned:
                continue
        out: dict[tuple, tuple[tuple[Op, ...], _Part]] = {}
        for combo in self.sets(list(usable), self.arch.heads[layer - 1]):
            part = []
            for i, s in enumerate(state):
                held, known = s.held[rows], [dict(s.known[r]) for r in rows]
                for op in combo:  # effects are unions: their order does not matter
                    held = held | usable[op][i].held[rows]
                    for mine, r in zip(known, rows):
                        mine.update(usable[op][i].known[r])
                part.append((held, known))
            out.setdefault(tuple((h.tobytes(), _freeze(k)) for h, k in part), (combo, part))
        return out

    def step(self, layer: int, state, last: bool) -> Iterator[tuple[tuple, tuple[LayerState, ...]]]:
        """(operation sets per class, next state) for every distinct successor of ``state``."""
        T = self.T
        if self.per_position or self.last:  # input positions answer: the output token plays no part
            outs = {(): ((), [(s.held[T:], s.known[T:]) for s in state])}
        else:
            outs = self.parts(layer, "output", [T], state)
        if last and not (self.per_position or self.last):  # the output token reads the layer before: no
            classes = [{(): ((), [(s.held[:T], s.known[:T]) for s in state])}]  # other class's op reaches it
        else:
            classes = [self.parts(layer, "input", list(range(T)), state)]
            classes += [self.parts(layer, q, [q.resolve(T) - 1], state) for q in self.anchors]
        for choice in itertools.product(*(c.values() for c in classes), outs.values()):
            self.explored += 1
            if self.deadline is not None and self.explored % 256 == 0:
                self.deadline.check("the enumeration")
            new = []
            for i in range(len(state)):
                held = np.vstack([choice[0][1][i][0], choice[-1][1][i][0]])
                known = list(choice[0][1][i][1]) + choice[-1][1][i][1]
                for q, (_, part) in zip(self.anchors, choice[1:-1]):  # an anchor overrides its row
                    held[q.resolve(T) - 1], known[q.resolve(T) - 1] = part[i][0][0], part[i][1][0]
                new.append(LayerState(held, known))
            yield tuple(ops for ops, _ in choice), tuple(new)

    def computes(self, state) -> bool:
        """Whether the output token (every input position, for a target with an answer at every position)
        computes the target exactly on every sample."""
        try:
            values = [answers(r, s) for r, s in zip(self.sample_replays, state)]
        except Poisoned:
            return False
        return all(computes_exactly(v, w) for v, w in zip(values, self.expected))

    def program(self, path: tuple[tuple[tuple[Op, ...], ...], ...]) -> Program:
        actions: list[Action] = []
        for layer, sets in enumerate(path, start=1):
            inputs, outputs = sets[0], sets[-1]
            actions += [Action(layer, h, "input", op) for h, op in enumerate(inputs, start=1)]
            actions += [Action(layer, h, "output", op) for h, op in enumerate(outputs, start=1)]
            for q, own in zip(self.anchors, sets[1:-1]):
                actions += _override(layer, q, inputs, own, self.arch.heads[layer - 1])
        order = tuple((g, o) for g, o in self.tree.graph["order"].items() if len(o) > 1)
        return Program(tuple(actions), order, self.arch.layers)

    def search(self, initial: tuple[LayerState, ...]) -> tuple[Program | None, int]:
        """Breadth first over layers, merging equal states; returns a program and the states reached."""
        frontier = {_state_key(initial): (initial, ())}
        seen, L = 1, self.arch.layers
        for layer in range(1, L + 1):
            nxt: dict[tuple, tuple] = {}
            for state, path in frontier.values():
                for sets, new in self.step(layer, state, last=layer == L):
                    if layer == L and self.computes(new):
                        return self.program(path + (sets,)), seen
                    if layer < L:
                        nxt.setdefault(_state_key(new), (new, path + (sets,)))
            seen += len(nxt)
            frontier = nxt
        return None, seen


def _override(layer: int, q: ex.FixedIndex, inputs: tuple[Op, ...], own: tuple[Op, ...],
              heads: int) -> list[Action]:
    """Actions making anchor ``q`` run exactly ``own``: keep the inputs' heads whose operation it runs,
    give its other operations to the remaining heads, and idle the inputs' heads it does not run."""
    free = [h for h, op in enumerate(inputs, start=1) if op not in own]
    free += list(range(len(inputs) + 1, heads + 1))
    extra = [op for op in own if op not in inputs]
    actions = [Action(layer, h, q, op) for h, op in zip(free, extra)]
    return actions + [Action(layer, h, q, Op(Mode.IDLE)) for h in free[len(extra):] if h <= len(inputs)]


def _freeze(known: list[dict]) -> tuple:
    return tuple(frozenset(k.items()) for k in known)


def _state_key(state: tuple[LayerState, ...]) -> tuple:
    return tuple((s.held.tobytes(), _freeze(s.known)) for s in state)


def _without_idle_heads(program: Program, target, arch, lengths: tuple[int, ...], samples: int, seed: int
                        ) -> Program:
    """Drop, one at a time, the actions the program does not need (maximal sets keep every head busy), so
    the witness reads like the solver's; every drop is confirmed by ``check`` at every one of ``lengths``."""
    def ok(actions) -> bool:
        candidate = Program(tuple(actions), program.order, program.layers)
        return all(check(candidate, target, arch, seq_len=n, samples=samples, seed=seed, max_failures=1).ok
                   for n in lengths)

    actions = list(program.actions)
    for action in list(actions):
        if ok(trial := [a for a in actions if a is not action]):
            actions = trial
    # renumber heads 1.. per layer, the inputs and their anchors together (an override names a head)
    renumbered = []
    for layer, output in itertools.product(range(1, program.layers + 1), (False, True)):
        group = [a for a in actions if a.layer == layer and (a.where == "output") == output]
        number = {h: i for i, h in enumerate(sorted({a.head for a in group}), start=1)}
        renumbered += [Action(a.layer, number[a.head], a.where, a.op) for a in group]
    return Program(tuple(renumbered), program.order, program.layers) if ok(renumbered) else \
        Program(tuple(actions), program.order, program.layers)


def enumerate_programs(target, arch, *, efficient: bool = True, seq_len: int | None = None, samples: int = 4,
                       seed: int = 0, maximal: bool = True, simplify: bool = True, anchors: bool = True,
                       decode_law: cost.DecodeLaw = cost.DecodeLaw.SEED, budget_s: float | None = None
                       ) -> EnumerationResult | None:
    """Search every program for ``target`` on ``arch``: ``found`` is one the interpreter accepts, or None.

    ``efficient``: only operations with a cost exponent bounded in ``T`` (the solver's FEASIBLE), else any.
    ``seq_len`` overrides ``replay_length``; ``samples``/``seed`` draw the inputs as ``check`` does.
    ``maximal``/``anchors``: module docstring; ``simplify`` drops the found program's idle heads.
    ``budget_s``: seconds for the search; ``None`` (not a result) when they run out before it ends. The
    search is exponential in the classes of a layer (every anchor is one), so a caller that enumerates
    targets it did not choose gives it a budget. Where position ``T`` is a class of its own, a program must
    pass at every length of ``membership_lengths`` (each puts ``T`` in other subsets): none at one length is
    none at all, and where every length has one but none found passes at all of them, the answer is
    ``None`` too (the search runs one length at a time, so it cannot say whether another program would).

    >>> import infoflow_smt as ifs
    >>> arch = ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2)
    >>> enumerate_programs("min_pairwise_dot", arch).found is not None
    True
    >>> enumerate_programs("min_pairwise_dot", arch.with_heads((2,))).found is None
    True
    """
    started, target = time.perf_counter(), _decided(readout.question(as_target(target), arch), arch)
    deadline = None if budget_s is None else Deadline(checked_seconds(budget_s, "budget_s"))
    length = seq_len if seq_len is not None else replay_length(target, arch)
    if needs_positional(target, arch.causal) and not arch.positional:
        # permutation invariance: no program tells positions apart (model.md section 3), whatever it holds
        return EnumerationResult(None, 0, time.perf_counter() - started, length, 0)
    lengths = (length,) if seq_len is not None else readout.membership_lengths(target, arch, length)
    search = functools.partial(_search_lengths, target, arch, lengths, efficient, seed=seed, maximal=maximal,
                               simplify=simplify, anchors=anchors, decode_law=decode_law, deadline=deadline,
                               started=started)
    # where the search's inputs missed an event its program gets wrong, it searches again on as many as confirm
    for inputs in (samples, max(samples, CONFIRM_SAMPLES)):
        result = search(inputs)
        if result is None or result.found is None or confirmed(result.found, target, arch, lengths, seed):
            return result
    return None   # no program the search could confirm: no answer


def confirmed(program: Program, target, arch, lengths: tuple[int, ...], seed: int) -> bool:
    """Whether ``program`` also passes ``CONFIRM_SAMPLES`` inputs the search did not see, at every length."""
    return all(check(program, target, arch, seq_len=n, samples=CONFIRM_SAMPLES, seed=seed + 1, max_failures=1).ok
               for n in lengths)


def _search_lengths(target, arch, lengths: tuple[int, ...], efficient: bool, samples: int, *, seed: int,
                    maximal: bool, simplify: bool, anchors: bool, decode_law, deadline, started: float
                    ) -> EnumerationResult | None:
    """The search at each of ``lengths`` on ``samples`` inputs: a program that passes at all of them."""
    results = []
    for n in lengths:   # a program for every T passes at each: none at one length is none at all
        result = _search_at(target, arch, n, efficient, samples, seed, maximal, anchors, decode_law, deadline,
                            started)
        if result is None or result.found is None:
            return result
        results.append(result)
    for result in results:   # each was checked at its own length by ``_search_at``
        if all(check(result.found, target, arch, seq_len=n, samples=samples, seed=seed).ok
               for n in lengths if n != result.seq_len):
            program = result.found
            if simplify:
                program = _without_idle_heads(program, target, arch, lengths, samples, seed)
            return EnumerationResult(program, sum(r.explored for r in results), time.perf_counter() - started,
                                     lengths[0], sum(r.states for r in results))
    return None   # each length has a program, none found passes at all: no answer (the search is per length)


def _search_at(target, arch, length: int, efficient: bool, samples: int, seed: int, maximal: bool, anchors: bool,
               decode_law, deadline, started: float) -> EnumerationResult | None:
    """``enumerate_programs`` at one length: the first program its search finds, checked there."""
    inputs = np.random.default_rng(seed).standard_normal((samples, length, arch.input_dim))
    with np.errstate(all="ignore"):  # as in check: a target may divide by zero, both sides then agree
        expected = np.asarray(target.evaluate(inputs), dtype=float)
    initial = tuple(LayerState.start(length) for _ in range(samples))
    fixed = anchor_positions(target, arch) if anchors else last_position(target, arch)
    explored = states = 0
    for order in all_orders(target):
        search = _Search(target, arch, order, efficient, maximal, decode_law, fixed, inputs, expected,
                         deadline)
        with np.errstate(all="ignore"):
            try:
                program, reached = search.search(initial)
            except OutOfTime:
                return None
        explored, states = explored + search.explored, states + reached
        if program is not None:
            report = check(program, target, arch, seq_len=length, samples=samples, seed=seed)
            if not report.ok:
                raise InfoflowError(f"enumerator bug: its replay accepts a program interpreter.check refuses"
                                    f"\n{program}\n{report}")
            return EnumerationResult(program, explored, time.perf_counter() - started, length, states)
    return EnumerationResult(None, explored, time.perf_counter() - started, length, states)


def enumerate_naively(target, arch, *, efficient: bool = True, first: bool = False, samples: int = 4,
                      seed: int = 0, budget_s: float | None = None, anchors: bool = True,
                      decode_law: cost.DecodeLaw = cost.DecodeLaw.SEED) -> EnumerationResult | None:
    """Brute force without merging or pruning: build every program of the vocabulary (every variable
    order, every operation set of every class in every layer, ``program_count`` of them) and replay each on
    the same inputs with the interpreter.

    ``first=False`` (exhaustive): every program is replayed and ``found`` is the cheapest that passes, the
    lowest exponent as ``T`` grows, then the fewest operations: what ``decide`` answers for an efficient
    program, found without a solver. ``first=True``: stop at the first program that passes (FEASIBLE or
    not, nothing more). ``None`` when ``budget_s`` runs out first.

    >>> import infoflow_smt as ifs
    >>> result = enumerate_naively("min_pairwise_dot", ifs.Architecture(heads=(1, 1), input_dim=2))
    >>> result.explored, len(result.found.actions)
    (72, 2)
    """
    started, target = time.perf_counter(), _decided(readout.question(as_target(target), arch), arch)
    length = replay_length(target, arch)
    if needs_positional(target, arch.causal) and not arch.positional:
        return EnumerationResult(None, 0, time.perf_counter() - started, length, 0)
    checks = []   # (inputs, expected) at each length the program must pass at (``membership_lengths``)
    lengths = readout.membership_lengths(target, arch, length)
    for n in lengths:
        inputs = np.random.default_rng(seed).standard_normal((samples, n, arch.input_dim))
        with np.errstate(all="ignore"):
            checks.append((inputs, np.asarray(target.evaluate(inputs), dtype=float)))
    fixed = anchor_positions(target, arch) if anchors else last_position(target, arch)
    best, best_key, tried, first_s = None, None, 0, None
    for order in all_orders(target):
        vocab = _Vocabulary(target, arch, order, efficient, False, decode_law, fixed)
        for program in _every_program(vocab, order):
            tried += 1
            if all(passes_every_input(program, vocab.tree, target, arch, inputs, expected)
                   for inputs, expected in checks):
                key = _program_key(program, vocab.tree, arch, decode_law)
                better = best_key is None or key < best_key
                # a program that passes the few inputs but not ``CONFIRM_SAMPLES`` fresh ones is wrong
                if (better or first) and confirmed(program, target, arch, lengths, seed):
                    best, best_key = program, key
                    if first_s is None:
                        first_s = time.perf_counter() - started
                    if first:
                        return EnumerationResult(best, tried, first_s, length, tried, first_s)
            if budget_s is not None and time.perf_counter() - started > budget_s:
                return None
    return EnumerationResult(best, tried, time.perf_counter() - started, length, tried, first_s)


@dataclass(frozen=True)
class BruteForceAnswer:
    """``decide``'s answer found by ``brute_force_decide``: whether an efficient program exists, the best
    exponent (of the cheapest efficient program, else of the cheapest at any cost; ``oo`` when none
    computes the target) and that program."""

    feasible: bool
    exponent: object          # a sympy expression in T
    program: Program | None
    programs: int             # programs replayed
    seconds: float
    status_s: float           # seconds until the status alone was known (the first efficient program that
                              # passes; else every efficient program replayed)

    @property
    def status(self) -> Status:
        """As every answer says it (``Verdict.status``): the search is exhaustive, so never UNKNOWN (a search
        the budget cut short returns None)."""
        return Status.FEASIBLE if self.feasible else Status.INFEASIBLE

    @property
    def witness(self) -> Program | None:
        """The efficient program found (None when infeasible: ``program`` is then the cheapest at any cost)."""
        return self.program if self.feasible else None

    def to_json(self) -> dict:
        return {"status": self.status.value, "exponent": str(self.exponent),
                "program": self.program.to_json() if self.program is not None else None,
                "programs": self.programs, "seconds": round(self.seconds, 3)}


def brute_force_decide(target, arch, *, samples: int = 4, seed: int = 0, budget_s: float | None = None,
                       decode_law: cost.DecodeLaw = cost.DecodeLaw.SEED) -> BruteForceAnswer | None:
    """What ``decide`` answers (status, best exponent, a cheapest program with the fewest operations), by
    replaying every program: every efficient one, and when none passes, every one at any cost.
    ``None`` when ``budget_s`` (positive and finite; None: ``limits.DEFAULT_TIMEOUT``, as ``decide``) runs
    out first.

    >>> import infoflow_smt as ifs
    >>> answer = brute_force_decide("min_pairwise_dot", ifs.Architecture(heads=(2,), input_dim=2))
    >>> answer.status, answer.exponent, answer.programs
    (<Status.INFEASIBLE: 'infeasible'>, T/8 - 1, 72)
    """
    started, target = time.perf_counter(), readout.question(as_target(target), arch)
    problems = []
    if not isinstance(arch, Architecture):
        problems.append(f"architecture must be an ifs.Architecture, got {type(arch).__name__}")
    if problems:
        raise InvalidSpecError(problems, "brute force")
    target = _decided(target, arch)
    budget_s = checked_seconds(budget_s, "budget_s")   # NaN and infinity refused; None is the default deadline

    def search(efficient: bool) -> EnumerationResult | None:
        left = None if budget_s is None else budget_s - (time.perf_counter() - started)
        if left is not None and left <= 0:
            return None
        return enumerate_naively(target, arch, efficient=efficient, samples=samples, seed=seed, budget_s=left,
                                 decode_law=decode_law)

    def answer(feasible: bool, program: Program | None, programs: int, status_s: float) -> BruteForceAnswer:
        exponent = sympy.oo
        if program is not None:
            exponent, _ = program_cost(program, comparison_tree(target, program.order_map), arch, decode_law)
        program = program.named(target) if program is not None else None   # prints what each head selects
        return BruteForceAnswer(feasible, exponent, program, programs, time.perf_counter() - started, status_s)

    efficient = search(True)
    if efficient is None:
        return None
    if efficient.found is not None:
        return answer(True, efficient.found, efficient.explored, efficient.first_s)
    any_cost = search(False)
    return None if any_cost is None else answer(False, any_cost.found, efficient.explored + any_cost.explored,
                                                efficient.seconds)


def _every_program(vocab: _Vocabulary, order: dict) -> Iterator[Program]:
    """Every program under one variable order: one operation set per class (inputs, anchors, output) per
    layer, an anchor's set overriding the inputs' heads at its position (``_override``)."""
    arch = vocab.arch
    per_layer = [list(itertools.product(*(list(vocab.sets(vocab.ops(layer, where), heads))
                                          for where in ("input", *vocab.anchors, "output"))))
                 for layer, heads in enumerate(arch.heads, 1)]
    ordered = tuple((g, v) for g, v in order.items() if len(v) > 1)
    for choice in itertools.product(*per_layer):
        actions: list[Action] = []
        for layer, sets in enumerate(choice, 1):
            inputs, outputs = sets[0], sets[-1]
            actions += [Action(layer, h, "input", op) for h, op in enumerate(inputs, 1)]
            actions += [Action(layer, h, "output", op) for h, op in enumerate(outputs, 1)]
            for q, own in zip(vocab.anchors, sets[1:-1]):
                actions += _override(layer, q, inputs, own, arch.heads[layer - 1])
        yield Program(tuple(actions), ordered, arch.layers)


def _program_key(program: Program, tree, arch, law: cost.DecodeLaw) -> tuple:
    """Cheaper first: the exponent as ``T`` grows, then the number of operations (idle heads are free)."""
    exponent, _ = program_cost(program, tree, arch, law)
    return cost.asymptotic_key(exponent), program.operations


__all__ = ["MAX_ENUMERATION_LENGTH", "BruteForceAnswer", "EnumerationResult", "anchor_positions", "brute_force_decide",
           "enumerate_naively",
           "enumerate_programs", "program_count", "replay_length", "sources"]
