"""A search for an efficient program of the model, in the checker's own program space (``flow_program``).

Small cases only: a few layers and heads, short sequences. The search walks the layers in order; in each, every
place (every input position alike, the output token, and the positions it tells apart) picks its heads among
``flow_menu``'s efficient ones (retrievals, gatherings of a bounded set, averages; never a k-th retrieval or a
global aggregation). What a place's heads add depends only on what every position held after the layer before
(``flows.effect``), so it is computed once per state and head, and a choice is pruned when:

* a head is not allowed somewhere it would run (a read not held on its side, the mask, the rank rule);
* a head adds nothing (idle does as much), or a place's set of heads adds no more than another set of it does
  (information only grows, and everything the model allows is monotone in it);
* the state it leads to was met before at that layer (the layers after it cannot tell the two paths apart).

States are the holdings of every position on a few search inputs at once. A program that reaches the answer on
them is accepted only if it also passes ``flows.check`` on fresh inputs at the search length and a second one.
Where it does not, the input it failed on joins the search inputs and the search starts again (what held on
the few inputs by chance, a pruning included, does not hold on that one). An accepted program is then stripped
of the heads, and gathered positions, it passes without. Positions told apart (``overrides``) are tried one set
at a time, none first.

>>> import infoflow_smt as ifs
>>> found = search(ifs.parse_target("min(dot(x[s], x[t]) for s in T for t in T)"), ifs.Architecture(heads=(1, 1), input_dim=2))
>>> print(found.describe())
layer 1, head 1, at every input position p: retrieves the argmin over t in T of dot(x[p], x[t])
layer 2, head 1, at the output token: retrieves the argmin over s in T of min(dot(x[s], x[t]) for t in T)
>>> search(ifs.catalogue.get("min_pairwise_dot"), ifs.Architecture(heads=(2,), input_dim=2)).describe()
'none found within the bounds (every program searched)'
"""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.expr import Content, FixedIndex, children
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.verify import flows
from infoflow_smt.verify.flow_confirm import Acceptance, Counterexample
from infoflow_smt.verify.flow_menu import menu
from infoflow_smt.verify.flow_program import (
    INPUTS,
    OUTPUT,
    FlowProgram,
    Head,
    Place,
    PlaceKind,
    at,
    program,
)
from infoflow_smt.verify.ground_facts import Ground
from infoflow_smt.verify.knowledge import EMPTY, Holding, own

LAST = FixedIndex(0, True)
MAX_COUNTEREXAMPLES = 16   # fresh inputs a search takes in before it gives up (each restarts it)


@dataclass(frozen=True)
class SearchResult:
    """A program found and confirmed, or None; ``exhausted``: every program within the bounds was tried."""

    program: FlowProgram | None
    exhausted: bool
    states: int
    seconds: float

    def describe(self) -> str:
        if self.program is not None:
            return self.program.describe()
        how = "every program searched" if self.exhausted else "stopped at the time budget"
        return f"none found within the bounds ({how})"


class _OutOfBudget(Exception):
    pass


@dataclass(frozen=True)
class _Option:
    """One place's heads in one layer, and what they add: ``added[(i, p)]`` on search input ``i``."""

    heads: tuple[Head, ...]
    added: tuple[tuple[tuple[int, int], Holding], ...]

    @property
    def size(self) -> int:
        return sum(h.positions.bit_count() + h.facts.bit_count() for _, h in self.added)


class _Search:
    """One depth-first walk over the programs, on fixed search inputs, with fixed positions told apart."""

    def __init__(self, target: Target, arch: Architecture, inputs: list[tuple[np.ndarray, flows.Knowers]],
                 told: tuple[FixedIndex, ...], accept, deadline: float):
        self.target, self.arch, self.told, self.accept, self.deadline = target, arch, told, accept, deadline
        self.knowers = [knowers for _, knowers in inputs]
        inputs = [X for X, _ in inputs]
        self.lengths = [X.shape[0] for X in inputs]
        self.expected = [target.evaluate(X[None])[0] for X in inputs]
        self.answering = [flows.answering(target, arch, n) for n in self.lengths]
        self.output = flows.has_output(target, arch)
        self.menu = menu(target, arch)
        self.visited: set = set()
        self.states_seen = 0
        self._goal: dict = {}
        self._gatherings: dict[Place, Head | None] = {}

    def run(self) -> FlowProgram | None:
        start = tuple((Holding(),) + tuple(own(p) for p in range(1, n + 1)) + (Holding(),) for n in self.lengths)
        return self._explore(1, start, [])

    def _explore(self, layer: int, states: tuple, chosen: list) -> FlowProgram | None:
        if time.monotonic() > self.deadline:
            raise _OutOfBudget
        if self._reached(states):
            return self.accept(program(*chosen))
        if layer > self.arch.layers or (layer, states) in self.visited:
            return None
        self.visited.add((layer, states))
        self.states_seen += 1
        for choice, after in self._successors(layer, states):
            found = self._explore(layer + 1, after, chosen + [choice])
            if found is not None:
                return found
        return None

    def _reached(self, states: tuple) -> bool:
        for i, knowers in enumerate(self.knowers):
            for p, env in self.answering[i]:
                key = (i, p, states[i][p])
                if key not in self._goal:
                    value = knowers(p, states[i][p]).value(self.target.expr, env)
                    want = self.expected[i][p - 1] if self.target.per_position else self.expected[i]
                    self._goal[key] = value is not None and value is not EMPTY and bool(
                        np.allclose(np.asarray(value, dtype=float), want, rtol=1e-6, atol=1e-9))
                if not self._goal[key]:
                    return False
        return True

    def _places(self, layer: int) -> list[Place]:
        told = [at(f) for f in self.told]
        if layer < self.arch.layers or self.target.per_position:
            return [INPUTS] + told + ([OUTPUT] if self.output else [])
        if self.output:   # in the last layer only the answering place acts
            return [OUTPUT]
        return [at(LAST)] if LAST in self.told else [INPUTS]

    def _positions(self, place: Place, i: int) -> list[int]:
        n = self.lengths[i]
        if place == OUTPUT:
            return [n + 1]
        if place.kind is PlaceKind.POSITION:
            return [place.position.resolve(n)]
        told = {f.resolve(n) for f in self.told}
        return [p for p in range(1, n + 1) if p not in told]

    def _successors(self, layer: int, states: tuple):
        places = self._places(layer)
        options = [self._options(place, layer, states) for place in places]
        for combo in sorted(itertools.product(*options), key=lambda c: -sum(o.size for o in c)):
            after = [list(s) for s in states]
            for option in combo:
                for (i, p), holding in option.added:
                    after[i][p] = after[i][p] | holding
            yield {place: option.heads for place, option in zip(places, combo)}, tuple(tuple(s) for s in after)

    def _options(self, place: Place, layer: int, states: tuple) -> list[_Option]:
        useful = [(head, added) for head in self._heads(place)
                  if (added := self._added(head, place, layer, states)) is not None]
        options = []
        for combo in itertools.combinations(useful, min(self.arch.heads[layer - 1], len(useful))):
            merged: dict[tuple[int, int], Holding] = {}
            for _, added in combo:
                for key, holding in added:
                    merged[key] = merged.get(key, Holding()) | holding
            options.append(_Option(tuple(h for h, _ in combo), tuple(sorted(merged.items(), key=lambda kv: kv[0]))))
        return _undominated(options, states)

    def _heads(self, place: Place) -> list[Head]:
        if place not in self._gatherings:
            positional = self.arch.positional
            self._gatherings[place] = self.menu.gathering(place, self.lengths[0], self.arch.causal) if positional else None
        gathering = self._gatherings[place]
        return list(self.menu.retrievals) + list(self.menu.averages) + ([gathering] if gathering else [])

    def _added(self, head: Head, place: Place, layer: int, states: tuple) -> list | None:
        """What ``head`` adds at every position of ``place`` on every search input (None: not allowed
        somewhere, or adds nothing anywhere)."""
        added = []
        for i, knowers in enumerate(self.knowers):
            flows.prefetch(head, self._positions(place, i), knowers)
            keys: dict = {}
            for p in self._positions(place, i):
                got = flows.effect(head, p, states[i], knowers, layer, keys)
                if isinstance(got, str):
                    return None
                if not states[i][p].covers(got):
                    added.append(((i, p), got))
        return added or None


def _undominated(options: list[_Option], states: tuple) -> list[_Option]:
    """The options no other adds at least as much as (one of equal ones kept); idle when there is none."""
    if not options:
        return [_Option((), ())]
    kept: list[tuple[_Option, dict]] = []
    for option in sorted(options, key=lambda o: -o.size):
        result = {key: states[key[0]][key[1]] | h for key, h in option.added}
        if not any(all(other.get(key, states[key[0]][key[1]]).covers(h) for key, h in result.items())
                   for _, other in kept):
            kept.append((option, result))
    return [option for option, _ in kept]


def told_apart(target: Target, arch: Architecture) -> tuple[FixedIndex, ...]:
    """The positions the search may let run heads of their own: the fixed positions the target reads, and
    ``1`` and ``T`` (none without positional encoding)."""
    if not arch.positional:
        return ()
    return tuple(dict.fromkeys(list(_fixed(target.expr)) + [FixedIndex(1), LAST]))


def _fixed(e):
    if isinstance(e, Content) and isinstance(e.index, FixedIndex):
        yield e.index
    for c in children(e):
        yield from _fixed(c)


def search(target: Target, arch: Architecture, *, seq_len: int = 8, inputs: int = 2, confirm_samples: int = 200,
           overrides: int = 1, budget_s: float = 20.0, seed: int = 0, minimize: bool = True) -> SearchResult:
    """Look for an efficient program of ``arch`` that computes ``target`` (see the module's docstring):
    searched at ``seq_len`` on ``inputs`` random inputs (and the counterexamples met), confirmed on
    ``confirm_samples`` fresh ones at ``seq_len`` and ``seq_len + 3``, with up to ``overrides`` positions told
    apart at once, within ``budget_s`` seconds."""
    if not arch.width.is_number:
        raise InvalidSpecError([Problem(f"the search covers a constant width, got embed_dim={arch.embed_dim}")],
                               subject="architecture")
    started = time.monotonic()
    accept = Acceptance(target, arch, (seq_len, seq_len + 3), confirm_samples, seed, minimize)
    setting = flows.Setting.of(arch)
    drawn = np.random.default_rng([seed, seq_len, 7]).standard_normal((inputs, seq_len, arch.input_dim))
    pool = [(X, flows.Knowers(Ground(X, target.realization), setting)) for X in drawn]
    seen = 0
    try:
        for told in _told_sets(target, arch, overrides):
            while True:   # again with each counterexample, until a program passes or none is left
                walk = _Search(target, arch, pool, told, accept, started + budget_s)
                try:
                    found = walk.run()
                except Counterexample as failed:
                    seen += walk.states_seen
                    if len(pool) - inputs >= MAX_COUNTEREXAMPLES:
                        raise _OutOfBudget from failed
                    pool.append((failed.X, flows.Knowers(Ground(failed.X, target.realization), setting)))
                    continue
                seen += walk.states_seen
                if found is not None:
                    return SearchResult(found, False, seen, time.monotonic() - started)
                break
    except _OutOfBudget:
        return SearchResult(None, False, seen, time.monotonic() - started)
    return SearchResult(None, True, seen, time.monotonic() - started)


def _told_sets(target: Target, arch: Architecture, overrides: int) -> list[tuple[FixedIndex, ...]]:
    """The sets of positions told apart to search with, fewest first (position ``T`` always where the answer
    is read there with positional encoding)."""
    base = (LAST,) if arch.positional and arch.readout == "last" and not target.per_position else ()
    others = [f for f in told_apart(target, arch) if f not in base]
    return [base] + [base + combo for n in range(1, overrides + 1) for combo in itertools.combinations(others, n)]
