"""The meaning of a ``flow_program`` on numbers: information sets, the selections each position knows, and
whether the answering position computes the target (docs/model.md, sections 1-2 and "Variants").

On one input ``x ~ N(0, I_d)`` every position starts with its own token (the output token with nothing), and
each layer's heads act on what every position held after the layer before (``effect``):

* a **retrieval** at ``p`` ranks its candidates (its range at ``p``, cut by the causal mask to ``1..p`` at an
  input position) by its score; it is allowed when every read of the score is held on its side: a read tied
  to the candidate variable by each candidate, a read tied to ``p`` by ``p``, a read tied to neither by
  ``p`` or by every candidate. It copies the winner's set and everything the winner knew, and ``p`` knows the
  selection (``I(p, l) ∪= I(s*, l-1)``). Without positional encoding a head can only rank every position it
  sees. Under the rank rule its score's rank must fit the head's width ``E / h_l`` (``score_rank``).
* a **gathering** (positional encoding) takes what each named position held (at or before ``p`` under the
  mask); a **global aggregation** takes every position's; an **averaging** head learns the mean of a value every
  position of its range computes. Under the mask an input position does neither of the last two (the model
  leaves prefix aggregation out).

After the last layer the answering position (the output token; position ``T`` with ``readout="last"``; every
input position for a target with an answer at every position) must compute the target's value from what it
holds and knows (``knowledge.Knower``), and that value must be ``Target.evaluate``'s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from infoflow_smt.lang.expr import ANSWER, AllPositions, FixedIndex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.verify import score_forms, score_rank
from infoflow_smt.verify.flow_program import (
    INPUTS,
    OUTPUT,
    SELF,
    FlowProgram,
    Head,
    Mode,
    Place,
    PlaceKind,
    at,
)
from infoflow_smt.verify.ground_facts import Ground, bound
from infoflow_smt.verify.knowledge import EMPTY, Holding, Knower, free, own


@dataclass(frozen=True)
class Setting:
    """What an architecture lets a program do, read once."""

    positional: bool
    causal: bool
    rank_aware: bool
    widths: tuple[float, ...]      # E / h_l per layer
    heads: tuple[int, ...]

    @classmethod
    def of(cls, arch: Architecture) -> Setting:
        widths = tuple(float(arch.width) / h if arch.width.is_number else float("inf") for h in arch.heads)
        return cls(arch.positional, arch.causal, arch.rank_aware, widths, arch.heads)


def has_output(target: Target, arch: Architecture) -> bool:
    """Whether the extra output token takes part (not when every position answers, or position T does)."""
    return not target.per_position and arch.readout == "output"


def answering(target: Target, arch: Architecture, seq_len: int) -> tuple[tuple[int, dict], ...]:
    """The positions that must compute the target, each with its binding of ``o``."""
    if target.per_position:
        asked = np.flatnonzero(target.answered(seq_len)) + 1
        return tuple((int(p), {ANSWER: int(p)}) for p in asked)
    return ((seq_len, {}),) if arch.readout == "last" else ((seq_len + 1, {}),)


class Knowers:
    """One ``Knower`` per (position, holding) on one input, so that a state's computations are made once."""

    def __init__(self, ground: Ground, setting: Setting):
        self.ground, self.setting = ground, setting
        self._made: dict[tuple[int, Holding], Knower] = {}

    def __call__(self, position: int, holding: Holding) -> Knower:
        key = (position, holding)
        if key not in self._made:
            self._made[key] = Knower(self.ground, holding, position, positional=self.setting.positional,
                                     causal=self.setting.causal)
        return self._made[key]


def place_of(position: int, seq_len: int, told_apart: tuple[FixedIndex, ...]) -> Place:
    """The place whose heads ``position`` runs (``T + 1``: the output token)."""
    if position == seq_len + 1:
        return OUTPUT
    for fixed in told_apart:
        if fixed.resolve(seq_len) == position:
            return at(fixed)
    return INPUTS


def effect(head: Head, position: int, states: list[Holding], knowers: Knowers, layer: int,
           keys: dict | None = None) -> Holding | str:
    """What ``head`` at ``position`` adds to it, given every position's holding after the layer before
    (``states[q]``, ``q = 1..T+1``); a string says why the head is not allowed there. ``keys``: where the key
    sides of one head's candidates are remembered between the positions it runs at (the same states)."""
    ground, setting = knowers.ground, knowers.setting
    seq_len = ground.seq_len
    seen = _seen(position, setting, seq_len)
    if head.mode is Mode.GATHER:
        return _gathered(head, position, states, setting, seq_len)
    if head.mode in (Mode.AGGREGATE, Mode.AVERAGE) and setting.causal and position <= seq_len:
        return "under the causal mask an input position does not aggregate its prefix (the model leaves it out)"
    if head.mode is Mode.AGGREGATE:
        held = Holding()
        for q in seen:
            held = held | states[q]
        return held
    if head.mode is Mode.AVERAGE:
        return _averaged(head, states, knowers)
    return _retrieved(head, position, states, knowers, layer, seen, {} if keys is None else keys)


def _seen(position: int, setting: Setting, seq_len: int) -> range:
    """The positions a head at ``position`` attends to: under the mask an input position's prefix."""
    return range(1, (position if setting.causal and position <= seq_len else seq_len) + 1)


def _gathered(head: Head, position: int, states, setting: Setting, seq_len: int) -> Holding | str:
    if not setting.positional:
        return "a specific-position aggregation needs positional encoding"
    held = Holding()
    for source in head.sources:
        q = source.resolve(seq_len) if isinstance(source, FixedIndex) else position + source
        if setting.causal and position <= seq_len and q > position:
            return f"under the causal mask position {position} cannot gather position {q}"
        if 1 <= q <= seq_len:
            held = held | states[q]
    return held


def _averaged(head: Head, states, knowers: Knowers) -> Holding | str:
    ground = knowers.ground
    if not (knowers.setting.positional or isinstance(head.domain, AllPositions)):
        return "averaging over part of the positions needs positional encoding"
    candidates = ground.positions(head.domain)
    for q in candidates:
        got = knowers(q, states[q]).value(head.body, {head.variable: q})
        if got is None or got is EMPTY:
            return f"position {q} cannot compute the value averaged, {to_text(head.body)}"
    found = ground.average(head.body, head.variable, candidates)
    return Holding() if found is None else Holding(facts=1 << found[0])


def prefetch(head: Head, positions, knowers: Knowers) -> None:
    """Rank the candidates of ``head`` at every one of ``positions`` at once (a speed-up: one evaluation)."""
    if head.mode not in (Mode.RETRIEVE, Mode.KTH):
        return
    ground, requests = knowers.ground, []
    for p in positions:
        seen = _seen(p, knowers.setting, ground.seq_len)
        env = {SELF: p}
        if SELF in free(head.body) and not 1 <= p <= ground.seq_len:
            continue
        candidates = tuple(c for c in ground.positions(head.domain, env) if c in seen)
        if candidates:
            requests.append((candidates, bound(env, free(head.body))))
    ground.prefetch(head.body, head.variable, requests, head.largest, head.k)


def _retrieved(head: Head, position: int, states, knowers: Knowers, layer: int, seen: range,
               keys: dict) -> Holding | str:
    ground, setting = knowers.ground, knowers.setting
    env = {SELF: position}
    candidates = tuple(c for c in ground.positions(head.domain, env) if c in seen)
    if not setting.positional and candidates != tuple(seen):
        return "without positional encoding a head ranks every position it sees, not part of them"
    if setting.rank_aware:
        rank = score_rank.rank(head.body, head.variable, ground.dim, ground.realization)
        if rank is None or rank > setting.widths[layer - 1]:
            shown = "no bounded rank" if rank is None else f"rank {rank}"
            return f"its score has {shown}, more than a head {setting.widths[layer - 1]:g} wide holds"
    if candidates not in keys:
        keys[candidates] = _key_side(head, candidates, states, knowers)
    kept = keys[candidates]
    if isinstance(kept, str):
        return kept
    for atom in score_forms.atoms(head.body):
        reads = free(atom)
        if head.variable in reads:
            continue
        mine = knowers(position, states[position]).value(atom, env)
        if mine is None and (reads or not all(knowers(c, states[c]).value(atom, {}) is not None for c in candidates)):
            return f"position {position} does not hold {_shown(atom)} (the query side of its score)"
    if not kept:
        return Holding()
    choice = ground.choice(head.body, head.variable, kept, bound(env, free(head.body)), head.largest, head.k)
    if choice is None:
        return Holding()
    return states[choice.winner].with_fact(choice.fact)


def _key_side(head: Head, candidates: tuple[int, ...], states, knowers: Knowers) -> tuple[int, ...] | str:
    """The candidates whose key side of the score exists (a read of an empty range ranks a candidate out), or
    why some candidate does not hold it."""
    kept = set(candidates)
    for atom in score_forms.atoms(head.body):
        reads = free(atom)
        if reads - {SELF, head.variable} or {SELF, head.variable} <= reads:
            return f"its score reads {to_text(atom)}, which neither side alone holds"
        if head.variable not in reads:
            continue
        for c in candidates:
            got = knowers(c, states[c]).value(atom, {head.variable: c})
            if got is None:
                return f"candidate {c} does not hold {_shown(atom)} at {head.variable} = {c} (the key side of its score)"
            if got is EMPTY:
                kept.discard(c)
    return tuple(c for c in candidates if c in kept)


def _shown(e) -> str:
    return to_text(e).replace(SELF, "p")


def structural_problems(program: FlowProgram, arch: Architecture, output: bool) -> list[str]:
    """What the program asks that the architecture has not (more layers or heads, places it cannot tell)."""
    problems = []
    if len(program.layers) > arch.layers:
        problems.append(f"the program has {len(program.layers)} layers, the architecture {arch.layers}")
    for l, layer in enumerate(program.layers[:arch.layers], start=1):
        for place, heads in layer:
            if len(heads) > arch.heads[l - 1]:
                problems.append(f"layer {l} gives {place.describe()} {len(heads)} heads of {arch.heads[l - 1]}")
            if place.kind is PlaceKind.POSITION and not arch.positional:
                problems.append(f"{place.describe()} is told apart without positional encoding")
            if place is OUTPUT and not output:
                problems.append("the program runs heads at an output token this question does not have")
    return problems


def run(program: FlowProgram, target: Target, arch: Architecture, X: np.ndarray, expected: np.ndarray) -> str | None:
    """The first problem of ``program`` on one input ``X`` (shape ``(T, d)``), or None when the answering
    positions compute ``expected`` (the target's value on ``X``: shape ``()``, ``(d,)``, ``(T,)`` or ``(T, d)``)."""
    ground = Ground(X, target.realization)
    seq_len, setting = ground.seq_len, Setting.of(arch)
    knowers = Knowers(ground, setting)
    output = has_output(target, arch)
    states = [Holding()] + [own(p) for p in range(1, seq_len + 1)] + [Holding()]
    last = seq_len + 1 if output else seq_len
    for layer in range(1, len(program.layers) + 1):
        after = list(states)
        places = {p: place_of(p, seq_len, program.positions) for p in range(1, last + 1)}
        for place in set(places.values()):
            for head in program.heads(layer, place):
                prefetch(head, [p for p, where in places.items() if where == place], knowers)
        keys: dict = {}
        for p in range(1, last + 1):
            for i, head in enumerate(program.heads(layer, places[p]), start=1):
                got = effect(head, p, states, knowers, layer, keys.setdefault((places[p], i), {}))
                if isinstance(got, str):
                    return f"layer {layer}, head {i}, at {_name(p, seq_len)}: {got}"
                after[p] = after[p] | got
        states = after
    for p, env in answering(target, arch, seq_len):
        value = knowers(p, states[p]).value(target.expr, env)
        want = expected[p - 1] if target.per_position else expected
        if value is None or value is EMPTY:
            return f"{_name(p, seq_len)} cannot compute the target from what it holds and knows"
        if not np.allclose(np.asarray(value, dtype=float), want, rtol=1e-6, atol=1e-9):
            return f"{_name(p, seq_len)} computes {value} where the target is {want}"
    return None


def _name(p: int, seq_len: int) -> str:
    return "the output token" if p == seq_len + 1 else f"position {p}"


@dataclass(frozen=True)
class FlowCheck:
    """The verdict of ``check``: passed, or the first problem met (with the length and input it was met at)."""

    passed: bool
    problems: tuple[str, ...] = ()
    counterexample: np.ndarray | None = None   # the input (shape ``(T, d)``) the first problem was met on


SPREADS = (1.0, 0.3, 3.0)   # inputs x ~ N(0, s^2 I_d), one spread after another: an event a program relies on
                            # by chance at one scale (a smooth f1 favours the longest token when tokens are
                            # wide) fails at another


def check(program: FlowProgram, target: Target, arch: Architecture, *, seq_lens: tuple[int, ...] = (8, 11),
          samples: int = 48, seed: int = 0) -> FlowCheck:
    """Run ``program`` on ``samples`` random inputs at each length of ``seq_lens``, drawn at the spreads of
    ``SPREADS`` in turn.

    >>> import infoflow_smt as ifs
    >>> from infoflow_smt.verify import flow_program as fp
    >>> arch = ifs.Architecture(heads=(1, 1), input_dim=2)
    >>> prog = fp.program({fp.INPUTS: [fp.retrieval("dot(x[p], x[t])", largest=False)]},
    ...                   {fp.OUTPUT: [fp.retrieval("min(dot(x[t], x[u]) for u in T)", largest=False)]})
    >>> check(prog, ifs.parse_target("min(dot(x[s], x[t]) for s in T for t in T)"), arch).passed
    True
    """
    problems = structural_problems(program, arch, has_output(target, arch))
    if problems:
        return FlowCheck(False, tuple(problems))
    for seq_len in seq_lens:
        rng = np.random.default_rng([seed, seq_len])
        spread = np.resize(np.array(SPREADS), samples)[:, None, None]
        X = rng.standard_normal((samples, seq_len, arch.input_dim)) * spread
        expected = target.evaluate(X)
        for i in range(samples):
            problem = run(program, target, arch, X[i], expected[i])
            if problem is not None:
                return FlowCheck(False, (f"at T={seq_len}, input {i}: {problem}",), X[i])
    return FlowCheck(True)
