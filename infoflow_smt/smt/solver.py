"""decide, minimize and export: the pipeline from a target and an architecture to a checked verdict.

    encode (encoder.py) -> count (counting.py: "no" without z3, where a count proves it) -> ask z3 for an
    efficient program -> minimize its exponent -> replay the witness (interpreter.py) -> or explain the unsat
    core (explain.py) and find the cheapest inefficient program.

A ``Questions`` object holds the encodings of one target at one width and answers many architectures
from them (the number of layers and each layer's heads are assumptions of one encoding); ``decide``
makes a fresh one, a sweep, ``minimize`` or ``decide_all`` share one. Nothing is shared between two
``Questions`` (but ``decide_all``'s, one caller's): each has its own z3 context, so calls from several threads do
not meet, and what z3 answers about one target does not depend on the questions asked of others.

z3 is imported here and in the encoder only. One deadline bounds the whole answer; a z3 ``unknown``
(timeout, resource limit) or a passed deadline gives UNKNOWN with the reason, never INFEASIBLE.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy
import z3

from infoflow_smt.deadline import Deadline, OutOfTime, interrupt_pending, interrupts_remembered
from infoflow_smt.errors import InvalidSpecError, WitnessCheckError
from infoflow_smt.files import plain_file, write_atomic
from infoflow_smt.lang import causal
from infoflow_smt.lang.catalogue import as_target
from infoflow_smt.lang.causal import check_supported
from infoflow_smt.lang.evaluate import scalar_tokens_problem
from infoflow_smt.lang.trees import comparison_tree, needs_positional, position_reads
from infoflow_smt.limits import MAX_REPLAY_WORK, MAX_SAMPLES, whole
from infoflow_smt.model import cost, defaults, readout
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.model.program import Mode, program_cost, set_counts, validate
from infoflow_smt.model.vocabulary import GOAL, LEVEL, Constraint, Family, budget
from infoflow_smt.report import explain
from infoflow_smt.report.verdict import Stats, Status, Verdict
from infoflow_smt.smt import cancel, contexts, counting, encoder
from infoflow_smt.symbols import T
from infoflow_smt.verify import replay
from infoflow_smt.verify.interpreter import check
from infoflow_smt.words import plural

# Every witness is replayed on ``WITNESS_SAMPLES`` random inputs, on sequences long enough that no position
# holds every candidate by accident: longer than the largest set the program gathers without aggregating the
# whole sequence (and than the target needs), rounded up to a power of two between ``MIN_WITNESS_LENGTH`` and
# ``MAX_WITNESS_LENGTH``, so that the target's values at a few lengths serve every witness.
WITNESS_SAMPLES = 12
MIN_WITNESS_LENGTH, MAX_WITNESS_LENGTH = 8, 32


def validate_question(target, arch, seq_len: int | None = None, samples: int = WITNESS_SAMPLES) -> None:
    """Refuse a question that cannot be answered with a replayed witness, with ``InvalidSpecError``: first
    every bad argument at once (``arch`` not an ``Architecture``, ``seq_len`` not an integer >= 2 or None,
    ``samples`` not an integer >= 1), then a target the question cannot check (tokens read as numbers with
    ``d != 1``; a replay at ``MIN_WITNESS_LENGTH`` over ``limits.MAX_REPLAY_WORK``; a ``seq_len`` shorter than
    the positions it names). ``decide``, ``minimize``, ``export_smtlib``, ``decide_all`` and ``sweep`` call it
    first.

    >>> import infoflow_smt as ifs
    >>> validate_question(ifs.parse_target("max(f1(x[t]) for t in T)"), ifs.Architecture(heads=(1,)), seq_len=1)
    Traceback (most recent call last):
    ...
    infoflow_smt.errors.InvalidSpecError: invalid decision: seq_len must be an integer >= 2 or None, got 1
    """
    problems = []
    if not isinstance(arch, Architecture):
        problems.append(f"architecture must be an ifs.Architecture, got {type(arch).__name__}")
    if seq_len is not None and (whole(seq_len) is None or seq_len < 2):
        problems.append(f"seq_len must be an integer >= 2 or None, got {seq_len!r}")
    if whole(samples) is None or samples < 1:
        problems.append(f"samples must be an integer >= 1 (every witness is replayed), got {samples!r}")
    elif samples > MAX_SAMPLES:
        problems.append(f"samples={samples} is over the limit of {MAX_SAMPLES} (infoflow_smt.limits.MAX_SAMPLES)")
    if problems:
        raise InvalidSpecError(problems, "decision")
    if target.reads_tokens_as_numbers and arch.input_dim != 1:
        raise InvalidSpecError(scalar_tokens_problem(target.text, arch.input_dim), "target")
    length = max(MIN_WITNESS_LENGTH, target.shortest_length + 2)
    if target.work(length, arch.input_dim) > MAX_REPLAY_WORK:  # every answer is replayed: too costly a target is refused
        raise InvalidSpecError(f"checking an answer evaluates the target at T={length}, about "
                               f"{target.work(length, arch.input_dim):.2g} index tuples per input, over the limit of "
                               f"{MAX_REPLAY_WORK:.0g} (infoflow_smt.limits.MAX_REPLAY_WORK): it reads too many variables at once",
                               "target")
    if not _finite(target, arch.input_dim):
        raise InvalidSpecError("the target's value is not a finite number on random inputs (NaN or infinite: a "
                               "division by zero, or 0/0?): no program computes it", "target")
    if seq_len is not None:
        need = target.shortest_length
        if seq_len < need:
            raise InvalidSpecError(f"seq_len={seq_len} is too short for this target: it names positions or "
                                   f"ranks up to {need}", "decision")


FINITE_SAMPLES = 4   # the replay inputs that ``_finite`` evaluates the target on: the first of every replay's


def replay_inputs(samples: int, length: int, input_dim: int) -> np.ndarray:
    """The replay's inputs: ``samples`` sequences x ~ N(0, I), seed 0. The first rows are the same for every
    ``samples`` (one stream, drawn row after row), so the target's values on them serve every replay."""
    return np.random.default_rng(0).standard_normal((samples, length, input_dim))


@functools.lru_cache(maxsize=256)
def _leading_values(target, length: int, input_dim: int) -> np.ndarray:
    """The target's values on the first ``FINITE_SAMPLES`` replay inputs at ``length``: computed once for the
    check that they are finite and for a replay at that length (the target is evaluated row by row)."""
    with np.errstate(all="ignore"):
        return np.asarray(target.evaluate(replay_inputs(FINITE_SAMPLES, length, input_dim)), dtype=float)


@functools.lru_cache(maxsize=256)
def _finite(target, input_dim: int) -> bool:
    """Whether the target's values are finite on a few random inputs (the replay's first): a value that is
    NaN or infinite (``x[1] / 0``) can be neither computed nor checked."""
    length = max(MIN_WITNESS_LENGTH, target.shortest_length + 2)
    values = _leading_values(target, length, input_dim)
    if target.per_position:  # a position whose answer is not defined holds NaN: nothing is asked there
        values = values[:, target.answered(length)]
    return bool(np.isfinite(values).all())


def _renumbered(keys: list[tuple]) -> dict[tuple, tuple]:
    """Each operation key ``(layer, class, name)`` of ``keys`` and its key once the specific-position heads of
    each layer and class are numbered 1, 2, ... again: the encoding numbers them in one canonical order (a
    head begins after the one before it has begun), so a program that kept the second and third of three
    holds them as the first and second."""
    family: dict[tuple, int] = {}
    found = {}
    for key in sorted(keys, key=lambda k: (k[0], k[1], k[2].mode.name, k[2].node or "", k[2].slot or 0)):
        layer, where, name = key
        if name.slot is not None:
            slot = family[(layer, where)] = family.get((layer, where), 0) + 1
            name = dataclasses.replace(name, slot=slot)
        found[key] = (layer, where, name)
    return found


def _witness_length(program, target, arch, seq_len: int | None) -> int:
    """The length a witness is replayed at (the comment above ``WITNESS_SAMPLES``)."""
    gathered = max((n for n in set_counts(program).values() if n >= 0), default=1)
    shortest = max(MIN_WITNESS_LENGTH, target.shortest_length + 2)
    length = max(shortest, min(1 << (gathered + 1).bit_length(), MAX_WITNESS_LENGTH))
    while length > shortest and target.work(length, arch.input_dim) > MAX_REPLAY_WORK:  # a costly target: the longest it allows
        length -= 1
    return length if seq_len is None else max(min(seq_len, length), target.shortest_length)


# z3's own SIGINT handler, installed for the length of each call, swallows a Ctrl-C that lands after the call's
# search (no cancel, and the signal is gone): Python's handler takes every one instead, and ``cancel`` stops a
# check under way
z3.set_param("ctrl_c", False)


def interrupted() -> None:
    """Raise KeyboardInterrupt when a Ctrl-C was remembered (``deadline.on_interrupt``) but its exception went
    astray: z3 frees terms in destructors, and Python drops an exception raised there. Without this an
    interrupted check would read as an unfinished question (or, in a minimization, as a witness not shown
    minimal) and the run would go on."""
    if interrupt_pending():
        raise KeyboardInterrupt


# the most work one question of a witness's minimization may take (it is optional): z3's resource units, not
# seconds, so that how far a minimization gets, and the witness shown, is the same on every machine (about 2 s
# on the 2-core machine)
MINIMIZE_WORK = 8_000_000
# an infeasible verdict's cheapest program gets this much per minimization question, then is pruned
# (``Questions._pruned``): with every level allowed, the proofs of the fewest took z3 up to seconds each
PRUNE_AFTER_WORK = 250_000


# ---- one encoding, many questions --------------------------------------------------------------------------
@dataclass
class _Effort:
    """What one decision has spent so far: time since it started, and the solver calls of its sessions
    (each counts a call as it makes it, so an answer cut short by the deadline counts them too)."""

    started: float = field(default_factory=time.perf_counter)
    solver_calls: int = 0

    def stats(self, extra: dict | None = None) -> Stats:
        return Stats(seconds=time.perf_counter() - self.started, solver_calls=self.solver_calls, extra=extra or {})


# the most work a question of ``_Session.minimal_core`` may take before its constraint is kept, in z3's resource
# units: the explanation is the same on every machine (about 0.5 s on the 2-core machine; the slowest of the
# solver benchmark's 300 random questions took a quarter of it)
CORE_WORK = 1_000_000
# the most work the anchored encoding's question for a program cheaper than the one found without anchors may
# take (``Questions.cheapest_inefficient``): z3's resource units, the same on every machine
CHEAPER_WORK = 2_000_000


_LAST = (Family.INITIAL, Family.POSITIONAL, Family.CAUSAL, Family.GOAL)  # tracked constraints dropped last, in order


def _drop_order(constraint: Constraint) -> tuple:
    """The order ``_Session.minimal_core`` tries to drop tracked constraints: the head budgets of the input
    positions (latest layer first), then the output token's, then depth, positions and the goal last, so
    that an explanation names the fewest budgets and prefers depth and positions when they suffice."""
    if constraint.family is Family.BUDGET:
        return (1 if constraint.where == encoder.OUT else 0, -constraint.layer, str(constraint.where))
    family = constraint.family
    return (2, _LAST.index(family) if family in _LAST else -1, str(constraint))


@dataclass(frozen=True)
class Search:
    """What a search for the cheapest program found: the level (an index into the encoding's levels; -1 for
    a program that needs no operation with a cost) and z3's model, or neither, with z3's reason when it could
    not tell (``unknown``), and the session whose encoding the model belongs to."""

    session: _Session | None = None
    level: int | None = None
    model: object = None
    unknown: str | None = None

    @property
    def found(self) -> bool:
        return self.model is not None


def _literal(enc: encoder.Encoding, name: str, value: bool) -> z3.BoolRef:
    """The encoding's variable ``name`` held at ``value``, as an assumption."""
    return enc.var(name) if value else z3.Not(enc.var(name))


def _check(solver: z3.Solver, assumptions: list[z3.BoolRef]) -> z3.CheckSatResult:
    """``solver.check(*assumptions)`` without its conversion of each literal in Python (a question passes
    thousands of them, all already Boolean terms of the solver's context)."""
    array = (z3.Ast * len(assumptions))(*(a.as_ast() for a in assumptions))
    return z3.CheckSatResult(z3.Z3_solver_check_assumptions(solver.ctx.ref(), solver.solver, len(assumptions), array))


class _Session:
    """Questions about one architecture, asked of a (possibly larger) encoding by assumptions; each call
    into the solver is counted in ``effort``."""

    def __init__(self, enc: encoder.Encoding, heads: tuple[int, ...], deadline: Deadline, effort: _Effort,
                 hint: int | None = None):
        self.enc, self.heads, self.deadline, self.effort = enc, heads, deadline, effort
        self.bounded = [i for i, lvl in enumerate(enc.levels) if cost.is_bounded(lvl)]
        self.layers = len(heads)
        self.base = enc.assumptions(heads)
        self.excluded = enc.excluded_levels()
        self.hint = hint       # the fewest operations of a neighbouring question: probed first
        self.refuted: tuple[list[int], set[str]] | None = None  # the levels of an unsat answer, z3's core
        self.minimal = True    # every minimization question was answered

    def ask(self, allowed: list[int], extra=(), work: int | None = None, base=None):
        """The answer to one question; ``work`` bounds the question's z3 resource units (unknown past them),
        the deadline every question."""
        self.deadline.check("solving")
        allowed_set = set(allowed)
        assumptions = (self.base if base is None else base) + list(extra)
        assumptions += [x for i, x in enumerate(self.excluded) if i not in allowed_set]
        self.enc.solver.set("timeout", self.deadline.milliseconds())
        self.enc.solver.set("rlimit", work or 0)   # 0: no bound
        self.effort.solver_calls += 1
        with cancel.interruptible(self.enc.ctx):
            result = _check(self.enc.solver, assumptions)
        if result == z3.unknown:
            interrupted()
            if self.deadline.passed:
                raise OutOfTime("solving")
        return result

    def unknown(self) -> str:
        return self.enc.solver.reason_unknown()

    def model(self):
        return self.enc.solver.model()

    def cheapest(self, allowed: list[int]) -> Search:
        """The lowest level (in the encoding's order) at which a program exists, with its model.

        A binary search over prefixes of ``allowed``: a program within a prefix is within every longer one.
        """
        result = self.ask(allowed)
        if result == z3.unsat:
            self.refuted = (allowed, self.core_names())
        if result != z3.sat:
            return Search(self, unknown=self.unknown() if result == z3.unknown else None)
        if not allowed:  # a target that needs no operation with a cost at all
            return Search(self, -1, self.model())
        model, lo, hi = self.model(), 0, len(allowed) - 1  # invariant: a program within [:hi+1]
        if hi > 0:  # most answers lie at the cheapest level: ask it first
            result = self.ask(allowed[:1])
            if result == z3.sat:
                return Search(self, allowed[0], self.model())
            if result == z3.unknown:
                return Search(self, unknown=self.unknown())
            lo = 1
        while lo < hi:
            mid = (lo + hi) // 2
            result = self.ask(allowed[: mid + 1])
            if result == z3.sat:
                model, hi = self.model(), mid
            elif result == z3.unknown:
                return Search(self, unknown=self.unknown())
            else:
                lo = mid + 1
        return Search(self, allowed[hi], model)

    def cheapest_beyond(self, every: list[int], work: int | None = None) -> Search:
        """``cheapest(every)`` when no program exists within the bounded levels (the efficient question was
        refuted, by z3 or by a count). Only the prefixes that end at a level an operation of this architecture
        costs are asked (``Encoding.usable_levels``: another prefix has the models of the one before it), the
        cheapest first: a prefix with no program is refuted in milliseconds, while finding a program with
        every level allowed took z3 seconds (the freer the question, the longer its search), and most answers
        lie at the first level that grows with T. ``work`` bounds each question (z3's resource units)."""
        bounded, usable = set(self.bounded), self.enc.usable_levels(self.heads)
        refuted = next((j for j, i in enumerate(every) if i not in bounded), len(every))
        ends = [j for j in range(refuted, len(every)) if every[j] in usable] or [len(every) - 1]
        for end in ends:
            result = self.ask(every[: end + 1], work=work)
            if result == z3.sat:
                return Search(self, every[end], self.model())
            if result == z3.unknown:
                return Search(self, unknown=self.unknown())
        return Search(self)   # no program at any level

    def tightest_gather(self, level: int, allowed: list[int], model):
        """At the cheapest ``level``, the smallest sets specific-position heads must gather (the levels
        alone leave sizes that cost less than the next level free: ``encoder._Builder.costs``). Returns a
        model and the constraint that keeps the exponent exact in later questions."""
        enc = self.enc
        if enc.gather_cap is None:
            return model, []  # no bounded gathers, or a width that makes them all cost alike
        # up to ``free`` a gather costs no more than the level (level -1: no operation with a level at all,
        # and a gather costs nothing up to the size whose decoding reaches 0)
        free = enc.gather_floor if level < 0 else enc.gather_limits[level]
        if free is None:
            return model, []  # a level that grows with T: every bounded gather costs less
        cap = enc.var(enc.gather_cap)  # counts tokens at the full width: h*g for a head of width E/h
        sizes = [self.heads[layer - 1] * model.eval(enc.var(g), model_completion=True).as_long()
                 for layer, acts, g, whole in enc.gathers if layer <= self.layers and z3.is_true(
                     model.eval(z3.And(enc.var(acts), z3.Not(enc.var(whole))), model_completion=True))]
        lo, hi = free, max(sizes, default=0)
        while lo < hi:  # invariant: a program gathering at most hi exists (model)
            mid = (lo + hi) // 2
            result = self.ask(allowed, [cap <= mid])
            if result == z3.sat:
                model, hi = self.model(), mid
            elif result == z3.unknown:
                break  # keep the witness we have: it is valid, its exponent an upper bound
            else:
                lo = mid + 1
        return model, [cap <= max(hi, free)]

    def fewest_operations(self, allowed: list[int], model, extra=(), work: int = MINIMIZE_WORK):
        """A model at the same levels with as few operations as possible (a witness without idle work):
        a binary search on the number of operations of the architecture's layers, from a lower bound (every
        selection needs a retrieval somewhere, unless a global aggregation is allowed). The proofs of
        optimality are combinatorial and can be hard: each question gets at most ``work`` (z3's resource
        units), and a witness that could not be shown minimal is kept as it is (it is valid)."""
        enc = self.enc
        lo, hi = self.fewest_possible(allowed, model), enc.acting(model, self.layers)
        probes = [self.hint, self.hint - 1] if self.hint is not None else []
        while lo < hi:
            mid = probes.pop(0) if probes else (lo + hi) // 2
            if not lo <= mid < hi:
                continue
            result = self.ask(allowed, [*extra, enc.at_most_operations(self.layers, mid)], work)
            if result == z3.sat:
                model = self.model()
                hi = enc.acting(model, self.layers)
            elif result == z3.unsat:
                lo = mid + 1
            else:
                self.minimal = False  # keep the witness we have: it is valid, only not shown to be the smallest
                break
        return model

    def fewest_sources(self, allowed: list[int], model, extra=()):
        """The model with no source a specific-position head of it can do without: with every operation
        and every other source as they are, each source of a head that gathers several is dropped when the
        encoding still has a program (``PRUNE_AFTER_WORK`` per question; a question past it keeps the
        source). Gathers the level leaves free (``tightest_gather``) carry sources no cost asks for: an
        extra offset beside the needed one, which a compiled head cannot gather."""
        enc = self.enc
        values = encoder.witness_truth(enc, model, self.heads)
        chosen = {v: values[v] for key, refs in enc.sources.items() if key[0] <= self.layers for v in refs.values()}
        live = [refs for key, refs in enc.sources.items() if key[0] <= self.layers and values.get(enc.ops.get(key))
                and sum(chosen[v] for v in refs.values()) > 1]
        operations = [_literal(enc, n, values[n]) for key, n in enc.ops.items() if key[0] <= self.layers]
        for refs in live:
            for v in refs.values():
                if not chosen[v] or sum(chosen[w] for w in refs.values()) < 2:
                    continue
                trial = dict(chosen, **{v: False})
                if self.ask(allowed, [*extra, *operations, *(_literal(enc, w, b) for w, b in trial.items())],
                            PRUNE_AFTER_WORK) == z3.sat:
                    model, chosen = self.model(), trial
        return model

    def fewest_possible(self, allowed: list[int], model) -> int:
        """A lower bound on the operations of any program at these levels: without a global aggregation
        every selection of the chosen trees (but one whose score reads nothing) is made by some head. An
        aggregation counts only at a level it costs at its layer's head count in this architecture."""
        enc = self.enc
        aggregation = {by_heads[self.heads[layer - 1]] for (layer, _, name), by_heads in enc.op_cost.items()
                       if name.mode is Mode.AGGREGATE and layer <= self.layers}
        if any(enc.levels[i] in aggregation for i in allowed):
            return 0
        chosen = {}
        for gid, per_order in enc.order_vars.items():
            values = enc.values(model, tuple(per_order.values()))
            chosen[gid] = next((o for o, v in per_order.items() if values[v]), next(iter(per_order)))
        copied = {n for _, _, n in enc.hosts.copies}   # a copy brings these with no head of their own
        names: dict[str, str] = {}
        for a, b in enc.hosts.same:   # one selection under several names is made by one head
            names[b] = names[a] = min(names.get(a, a), names.get(b, b), a, b)
        return len({names.get(info.key, info.key) for info in enc.nodes.values()
                    if info.kind in ("top1", "kth") and not info.constant and not info.hosted
                    and chosen[info.group] == info.order and info.key not in copied})

    def program_without(self, allowed: list[int], exact, values: dict, names: tuple[str, ...],
                        dropped: list[str]):
        """A model of the encoding that runs the operations of the witness ``values`` but ``dropped``: first
        with the rest of the witness as it was (its variable orders, what its anchors keep, each
        specific-position head's sources, under its new number: ``_renumbered``), so that z3 only derives
        what every position knows; else with only the operations fixed (a pruned program may need other
        sources). None where the encoding has no such program (or a question runs out of
        ``MINIMIZE_WORK``)."""
        enc = self.enc
        gone = set(dropped)
        moved = _renumbered([key for key, n in enc.ops.items() if n in names and values[n] and n not in gone])
        kept_names = [enc.ops[key] for key in moved.values()]   # in order: the assumptions' order is z3's search's
        literal = functools.partial(_literal, enc)
        running = frozenset(kept_names)
        operations = [literal(n, False) for n in names if n not in running] + [literal(n, True) for n in kept_names]
        same = [v for per_order in enc.order_vars.values() if len(per_order) > 1 for v in per_order.values()]
        pinned = [literal(v, values[v]) for v in same if v in values]
        pinned += [literal(enc.sources[now][ref], values[v]) for was, now in moved.items() if was in enc.sources
                   for ref, v in enc.sources[was].items()]
        # an anchor keeps an input head under its new number, and nothing of an input head that is gone
        keeps = {(layer, c, now[2]): values[v] for (layer, c, name), v in enc.kept.items()
                 if layer <= self.layers and (now := moved.get((layer, encoder.IN, name))) is not None}
        pinned += [literal(v, keeps.get(key, False)) for key, v in enc.kept.items() if key[0] <= self.layers]
        for fixed in (operations + pinned, operations):
            if self.ask(allowed, [*exact, *fixed], MINIMIZE_WORK) == z3.sat:
                return self.model()
        return None

    def program(self, model):
        return encoder.extract(self.enc, model, self.heads)

    def core_names(self) -> set[Constraint]:
        """The tracked constraints in z3's unsat core of the last question (the others, the architecture and
        the excluded levels, are ``LEVEL``)."""
        names = {v: constraint for constraint, v in self.enc.tracked.items()}
        # a literal's name, without z3's pretty printer (slow, and it quotes names with a colon)
        return {names.get(c.decl().name(), LEVEL) for c in self.enc.solver.unsat_core()}

    def settled_under_mask(self) -> bool:
        """Whether a "no" under a causal mask holds for the programs the model leaves out as well.

        Under a mask an input position can make a selection that binds no variable over its own prefix, and a
        later layer can collect position ``T``'s (the whole ones): by gathering position ``T`` with positional
        encoding (or letting ``T`` work for the output token), without it by a retrieval whose score is the sum
        of the prefix values (it grows along the prefix; every position from the last winner on ties, each
        holding the same winners). Each such program is beaten by the output token making those selections
        itself, at least one layer earlier, with heads of its own: so when no efficient program exists even
        with the output token's head budgets dropped in every layer but the last, none of them is efficient
        either. A question left open counts as not settled."""
        last = budget(self.layers, encoder.OUT)  # what inputs select in a layer is collected in a later one
        kept = [literal for constraint, literal in self.enc.tracked.items()
                if not (constraint.family is Family.BUDGET and constraint.where == encoder.OUT) or constraint == last]
        return self.ask(self.bounded, base=self.enc.assumptions(self.heads, kept)) == z3.unsat

    def minimal_core(self) -> set[str]:
        """A minimal set of tracked constraints that still leaves no program within the levels of the unsat
        answer (``refuted``), the same in every process. z3's own core depends on the history of its context (the order
        its terms were made), and an explanation built from it would too: so each constraint is dropped, in
        ``_drop_order``, when the question stays unsat without it. z3's core only skips the questions whose
        answer it already shows (a core without the constraint is unsat without it). A question left unknown
        after ``CORE_WORK`` keeps its constraint, and the deadline keeps all that are left: a larger core,
        still a true one (z3 can take seconds to find a program for a question with most constraints dropped,
        though it answers the others in milliseconds). Without the goal nothing asks for an operation, so the
        program that does nothing is tried first there: z3 confirms it in milliseconds, where its search for
        any program ran past ``CORE_WORK`` (the goal is kept either way)."""
        allowed, core = self.refuted
        kept = sorted(self.enc.tracked, key=_drop_order)
        try:
            for name in list(kept):
                trial = [n for n in kept if n != name]
                if name in core:
                    base = self.enc.assumptions(self.heads, [self.enc.tracked[n] for n in trial])
                    idle = [self.enc.at_most_operations(self.layers, 0)] if name == GOAL else []
                    if idle and self.ask(allowed, idle, work=CORE_WORK, base=base) == z3.sat:
                        continue
                    if self.ask(allowed, base=base, work=CORE_WORK) != z3.unsat:
                        continue
                    core = self.core_names()
                kept = trial
        except OutOfTime:
            pass
        return set(kept) | {LEVEL}


def maximal_facts(enc: encoder.Encoding, layers: int, heads: int, deadline: Deadline) -> set[str]:
    """The facts some efficient program with ``heads`` heads in each of ``layers`` layers makes true
    after its last layer. All of them hold at once (every operation can run beside the others), so one
    model is grown until no further fact can join it."""
    base = enc.assumptions((heads,) * layers, [n for k, n in enc.tracked.items() if k != GOAL])
    base += [x for i, x in enumerate(enc.excluded_levels()) if not cost.is_bounded(enc.levels[i])]
    names = tuple(enc.facts[layers])
    held: set[str] = set()
    while True:
        deadline.check("finding the saturation bound")
        others = [enc.var(n) for n in names if n not in held]
        if not others:
            return held
        enc.solver.set("timeout", deadline.milliseconds())
        enc.solver.set("rlimit", 0)   # a bound an earlier question set stays on the solver
        with cancel.interruptible(enc.ctx):
            result = _check(enc.solver, [*base, *(enc.var(n) for n in held), enc.any_of(others)])
        if result == z3.unknown:  # not "no further fact": a set cut short is no fixpoint
            raise OutOfTime("finding the saturation bound")
        if result == z3.unsat:
            return held
        held = {n for n, v in enc.values(enc.solver.model(), names).items() if v}


@dataclass
class Questions:
    """The encodings of one target (at one width, input dimension, decoding law and length), shared by the
    questions asked of it; each encoding grows to the largest architecture asked so far.

    ``fewest_heads=False`` keeps each witness as the solver finds it, without reducing it to the fewest acting
    heads (a sweep's cells need a checked answer and an exact exponent, not the smallest program): the
    witness is replayed and its exponent is exact either way. ``reasons=False`` leaves an infeasible verdict
    without the sentences that say why (a sweep's cells keep only the status and exponent)."""

    target: object
    law: cost.DecodeLaw = cost.DecodeLaw.SEED
    seq_len: int | None = None
    samples: int = WITNESS_SAMPLES
    fewest_heads: bool = True
    reasons: bool = True
    busy: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    # the target's own z3 context (``contexts``): which of several programs z3 returns, and how long it searches,
    # depend on the terms its context made before, so one target's answers must not depend on the others asked
    context: z3.Context = field(default_factory=contexts.fresh, repr=False, compare=False)
    encodings: dict = field(default_factory=dict)       # (E, d, positional, causal, rank_aware, readout, anchors) -> Encoding
    replayed: set = field(default_factory=set)          # (program, length, d, pe) of witnesses replayed
    inputs: dict = field(default_factory=dict)          # (length, d) -> (inputs, expected values)
    truths: dict = field(default_factory=dict)          # (order, input shape) -> replay.Truth
    fewest: int | None = None                           # the fewest operations of the last witness
    optimal: list = field(default_factory=list)         # (architecture, witness) of fully minimized answers

    def encoding(self, arch: Architecture, anchors: bool, deadline: Deadline) -> encoder.Encoding:
        key = (str(arch.embed_dim), arch.input_dim, arch.positional, arch.causal, arch.rank_aware, arch.readout,
               anchors)
        found = self.encodings.get(key)
        if found is not None and found.arch.layers >= arch.layers and all(
                H >= h for H, h in zip(found.arch.heads, arch.heads)):
            return found
        deadline.check("encoding")
        if found is not None:  # grow: as many layers and heads as either asked; in place when it can
            layers = max(found.arch.layers, arch.layers)
            heads = tuple(max(found.arch.heads[l] if l < found.arch.layers else 0,
                              arch.heads[l] if l < arch.layers else 0) for l in range(layers))
            arch = arch.with_heads(heads)
            try:
                if encoder.grow(found, arch, deadline):
                    return found
            except BaseException:  # interrupted half grown: its solver may lack the new layers' constraints
                del self.encodings[key]
                raise
        self.encodings[key] = encoder.encode(self.target, arch, self.law, self.seq_len, anchors=anchors,
                                             ctx=self.context, deadline=deadline)
        return self.encodings[key]

    def decide(self, arch: Architecture, deadline: Deadline) -> Verdict:
        """The checked verdict for ``arch`` (see ``decide``)."""
        effort = _Effort()
        try:
            return self._decide(arch, deadline, effort)
        except OutOfTime as late:
            return self.verdict(Status.UNKNOWN, arch, effort,
                                reason_unknown=f"the deadline of {deadline.seconds:g} s passed during {late.what}")

    def verdict(self, status: Status, arch: Architecture, effort: _Effort | None = None, exponent=sympy.nan,
                program=None, reasons=(), note: dict | None = None, **fields) -> Verdict:
        """The one place a ``Verdict`` is made: a feasible one's program is its witness, any other's the
        cheapest program shown beside its exponent."""
        stats = effort.stats(note) if effort is not None else Stats(extra=fields.pop("extra", {}))
        witness = program if status is Status.FEASIBLE else None
        return Verdict(status, self.target, arch, exponent, witness=witness, best_program=program,
                       explanation=tuple(reasons), stats=stats, seq_len=self.seq_len, **fields)

    def reuse(self, arch: Architecture, deadline: Deadline) -> Verdict | None:
        """The verdict ``arch`` gets from an optimal witness found for an architecture that covers it, when
        that witness fits ``arch`` and no cost depends on the head width: every program of ``arch`` is then
        one of the larger architecture at the same cost, so its best exponent and fewest operations are no
        better there, and the witness reaches both. A head's width is ``E/h`` of its layer, and fewer heads
        widen it: a k-th retrieval or a decoding is cheaper on ``arch`` (``_width_free``)."""
        if not self._width_free(arch):
            return None
        for bigger, program in self.optimal:
            if bigger.covers(arch) and program.layers == arch.layers and not validate(program, arch):
                exponent = self.replayed_exponent(program, arch, deadline)
                notes = self.notes(program, arch)
                return self.verdict(Status.FEASIBLE, arch, exponent=exponent, program=program, reasons=notes,
                                    extra={"reused_from": str(bigger.heads)})
        return None

    def _width_free(self, arch: Architecture) -> bool:
        """Whether the efficient programs of ``arch`` cost the same at every head count: at a width constant
        in ``T`` and every large ``T`` a k-th retrieval and a global aggregation grow with ``T`` (no efficient
        program runs them), and without positional encoding no head gathers specific positions; what is
        left, retrievals and averages, costs ``1`` at any width."""
        return not arch.positional and self.seq_len is None and not arch.width.has(T)

    def _decide(self, arch, deadline, effort: _Effort) -> Verdict:
        target = self.target
        reused = self.reuse(arch, deadline)
        if reused is not None:
            return reused
        # first without anchors (a smaller encoding whose programs are programs of the full one), then with
        # under a mask only the positions the target names are anchors (``encoder.anchor_positions``)
        anchored = arch.positional and arch.layers >= 2 and (not arch.causal or bool(position_reads(comparison_tree(target, hosted=False))[0]))
        session = plain = _Session(self.encoding(arch, False, deadline), arch.heads, deadline, effort, self.fewest)
        # position T read as a class of its own is in every encoding: counted like an anchor
        counted = counting.shortfall(session.enc, arch.heads, session.bounded, anchored or bool(session.enc.anchors))
        # z3 decides what the counts leave open
        search = session.cheapest(session.bounded) if counted is None else Search(session)
        if not search.found and search.unknown is None and anchored:
            session = _Session(self.encoding(arch, True, deadline), arch.heads, deadline, effort, self.fewest)
            if counted is None:
                search = session.cheapest(session.bounded)
        if search.unknown is not None:
            return self.verdict(Status.UNKNOWN, arch, effort, reason_unknown=search.unknown)
        if search.found:
            program, exponent, note = self._cheapest_program(session, search.level, session.bounded, search.model, arch)
            if not note and self.fewest_heads:  # fully minimized: the answer of every smaller architecture it fits
                self.optimal.append((arch, program))
            return self.verdict(Status.FEASIBLE, arch, effort, exponent, program, self.notes(program, arch), note)
        if arch.causal and arch.layers >= 2 and causal.binds_nothing(target) and not session.settled_under_mask():
            return self.verdict(Status.UNKNOWN, arch, effort, reason_unknown=OPEN_UNDER_MASK)
        # no efficient program: say why (the unsat core of the efficient question), then look for the cheapest
        # program at any cost: with every level allowed, since such a program may retrieve (a bounded level)
        # besides what grows with T; no prefix of bounded levels alone has one
        reasons = ()
        if self.reasons:
            has_kth = any(n.kind == "kth" for n in session.enc.nodes.values())
            core = set(counted.core) if counted is not None else session.minimal_core()
            reasons = explain.explain(target, arch, core,
                                      explain.growing_costs(arch, self.law, has_kth))
        search, cut = self.cheapest_inefficient(plain, session)
        prefix = self.prefix_aggregation(arch)
        if prefix is not None:
            reasons += (explain.prefix_aggregation_note(arch, prefix),)
        if not search.found:
            note = f"best exponent not found: {search.unknown}" if search.unknown else None
            return self.verdict(Status.INFEASIBLE, arch, effort, sympy.oo if prefix is None else prefix,
                                reasons=reasons, reason_unknown=note)
        every = list(range(len(search.session.enc.levels)))
        program, exponent, note = self._cheapest_program(search.session, search.level, every, search.model, arch,
                                                         prune=True)
        if cut:
            note = {"minimized": False, "note": "; ".join([cut] + ([note["note"]] if note else []))}
        reasons += self.notes(program, arch)
        if prefix is not None and cost.asymptotic_key(prefix) < cost.asymptotic_key(exponent):
            exponent, program = prefix, None   # cheaper than every program the encoding holds
        return self.verdict(Status.INFEASIBLE, arch, effort, exponent, program, reasons, note)

    def cheapest_inefficient(self, plain: _Session, session: _Session) -> tuple[Search, str | None]:
        """The cheapest program at any cost once no efficient one exists: asked first of the encoding without
        anchors (``plain``: its programs are programs of the full one, and its questions far smaller), then of
        the anchored encoding (``session``, when it is another) only below the exponent found, within
        ``CHEAPER_WORK``. Returns the search, and a note when the anchored question was cut short (the exponent
        is then an upper bound)."""
        search = plain.cheapest_beyond(list(range(len(plain.enc.levels))))
        if session is plain or search.unknown is not None:
            return search, None
        if not search.found:  # none without anchors: the anchored encoding decides alone
            return session.cheapest_beyond(list(range(len(session.enc.levels)))), None
        if search.level < 0:
            return search, None
        found = self.level_key(plain.enc.levels[search.level])
        cheaper = [i for i, e in enumerate(session.enc.levels) if self.level_key(e) < found]
        if not cheaper:
            return search, None
        better = session.cheapest_beyond(cheaper, work=CHEAPER_WORK)
        if better.found:
            return better, None
        cut = (None if better.unknown is None else "the anchored encoding's question for a cheaper program ran out "
               "of its work: the exponent is that of the cheapest program without anchors, an upper bound")
        return search, cut

    def level_key(self, level: sympy.Expr) -> tuple:
        """The order of cost levels: asymptotic, or at the question's one length (``encoder._Builder.costs``)."""
        return cost.asymptotic_key(level) if self.seq_len is None else (float(cost.at(level, self.seq_len)), 0.0)

    def prefix_aggregation(self, arch) -> sympy.Expr | None:
        """Under the mask, with an answer at every position that reads nothing after its own position: the cost
        of each input position aggregating its prefix in the layer of widest heads, after which it holds
        ``x[1..o]`` and computes its answer (decoding up to ``T`` tokens, never efficient at the constant width
        the mask asks for). The encoding leaves that aggregation out; it bounds the best exponent all the same
        (docs/model.md, "Causal mask"). None where it does not apply or cannot compute the answer."""
        target = self.target
        if not (arch.causal and target.per_position) or (needs_positional(target, True) and not arch.positional):
            return None
        if causal.late_reads(target):
            return None
        widest = arch.width / min(arch.heads)
        return cost.at(cost.decode(T, arch.input_dim, widest, self.law), self.seq_len)

    def notes(self, program, arch) -> tuple[explain.Reason, ...]:
        """What a reader of the verdict must know of its witness: a cost clamped at 0, a head narrower than
        the rank of its score."""
        found = (explain.clamped(program, arch, self.law, self.seq_len), explain.narrow_heads(program, self.target, arch))
        return tuple(r for r in found if r)

    def _cheapest_program(self, session: _Session, level: int, levels: list[int], model, arch, prune=False):
        """The program at ``level`` with the smallest gathers and the fewest operations (``prune``: none it can
        do without, ``_pruned``), replayed; when the deadline cuts the minimization short, the program found
        so far (its exponent an upper bound)."""
        allowed = [i for i in levels if i <= level]
        note, needed = {}, False   # needed: each operation of the program was shown needed (pruning)
        try:
            model, exact = session.tightest_gather(level, allowed, model)
            if self.fewest_heads:
                prune = prune and not (arch.causal or arch.rank_aware)   # the batched replay covers neither
                model = session.fewest_operations(allowed, model, exact, PRUNE_AFTER_WORK if prune else MINIMIZE_WORK)
                if prune and not session.minimal:
                    pruned = self._pruned(session, allowed, model, exact, arch)
                    if pruned is None:   # nothing could be shown by pruning: the full minimization
                        session.minimal = True
                        model = session.fewest_operations(allowed, model, exact)
                    else:
                        model, needed = pruned
        except OutOfTime:
            note = {"minimized": False, "note": "the deadline cut the minimization short: the exponent is an "
                                                "upper bound and the witness may hold idle operations"}
        if not note and needed:
            note = {"minimized": False, "note": "the cheapest program was not shown to have the fewest operations "
                                                "(a minimization question ran out of its work); it runs none it can "
                                                "do without, and its exponent is exact"}
        elif not note and not session.minimal:
            note = {"minimized": False, "note": "the witness was not shown to have the fewest operations (a "
                                                "minimization question ran out of its time); its exponent is exact"}
        if not note:
            with contextlib.suppress(OutOfTime):   # the program found so far is valid with the sources it has
                model = session.fewest_sources(allowed, model, exact)
        program = session.program(model)
        self.fewest = program.operations
        return program, self.replayed_exponent(program, arch, session.deadline), note

    def _pruned(self, session: _Session, allowed: list[int], model, exact, arch):
        """An infeasible verdict's cheapest program without the operations it can do without, when its
        minimization ran out of ``PRUNE_AFTER_WORK``; None where this cannot be shown (a truth table over
        the memory budget, or no program as small that the encoding gives); else the model and whether each
        of its operations was shown needed. Each acting operation, latest layer first, is dropped when the
        program still passes its batched replay without it; the pruned program is then asked of the encoding
        (``_Session.program_without``), so the program shown is a model of both semantics. The replay's
        dozen inputs can pass a drop the encoding refuses (a program that fails on about one input in ten at
        that length): then the encoding is asked for a program with no more operations, which is not shown
        to need each one (1 of 20 pruned random questions; confirming each drop in turn instead cost more
        than that search). It is not shown to have the fewest operations: with every level allowed, z3's proofs of that took up to seconds per question
        (the slowest of 300 random questions spent 3.6 s there), for a program the verdict shows beside its
        exponent, which pruning leaves exact."""
        enc, heads = session.enc, session.heads
        if session.fewest_possible(allowed, model) >= enc.acting(model, session.layers):
            return model, True   # as few as any program at these levels can run: nothing to prune
        values = encoder.witness_truth(enc, model, heads)
        program = encoder.program_of(enc, values, heads)
        length = _witness_length(program, self.target, arch, self.seq_len)
        inputs, expected = self.samples_of(length, arch.input_dim, session.deadline)
        tree = comparison_tree(self.target, program.order_map)
        truth = self.truth_of(program.order, tree, inputs)
        if truth is None:
            return None
        last = readout.reads_at_last(self.target, arch)
        names = tuple(n for (layer, _, _), n in enc.ops.items() if layer <= session.layers)
        dropped: list[str] = []
        layers: dict = {}
        for name in reversed([n for n in names if values[n]]):
            candidate = encoder.program_of(enc, {**values, **dict.fromkeys([*dropped, name], False)}, heads)
            passed = replay.passes(candidate, tree, self.target, inputs, expected, arch.positional, truth, last,
                                   layers)
            if passed is not None and passed.all():
                dropped.append(name)
        if not dropped:
            return model, True
        confirmed = session.program_without(allowed, exact, values, names, dropped)
        if confirmed is not None:
            return confirmed, True
        # as many operations, in any order: a program no larger, not shown to need each of its operations
        bound = enc.acting(model, session.layers) - len(dropped)
        if session.ask(allowed, [*exact, enc.at_most_operations(session.layers, bound)], MINIMIZE_WORK) == z3.sat:
            return session.model(), False
        return None

    def replayed_exponent(self, program, arch, deadline: Deadline) -> sympy.Expr:
        """Replay a program found by the solver and return its cost exponent; a failed replay is a bug."""
        length = _witness_length(program, self.target, arch, self.seq_len)
        # position T read as a class of its own belongs to a subset at some lengths only (T = 8 is in S3 and
        # S4, T = 10 in S1 and S2): the witness is replayed at a length for each way T lies in the subsets
        lengths = (length,) if self.seq_len is not None else readout.membership_lengths(self.target, arch, length)
        for at in lengths:
            if at == length or self.target.work(at, arch.input_dim) <= MAX_REPLAY_WORK:
                self._replay(program, arch, at, deadline)
        exponent, _ = program_cost(program, comparison_tree(self.target, program.order_map), arch, self.law)
        # at a given length a cost that grows with T may still be below a constant there: it counts as 0
        return cost.clamp(cost.at(exponent, self.seq_len))

    def _replay(self, program, arch, length: int, deadline: Deadline) -> None:
        """Replay ``program`` at ``length`` (once per program, length and switches); a failure is a bug."""
        # under the rank rule the heads' widths matter: the reference check measures each retrieval's rank
        key = (program, length, arch.input_dim, arch.positional, arch.causal) + ((str(arch),) if arch.rank_aware else ())
        if key not in self.replayed:
            deadline.check("the witness replay")
            tree = comparison_tree(self.target, program.order_map)
            inputs, expected = self.samples_of(length, arch.input_dim, deadline)
            truth = self.truth_of(program.order, tree, inputs)
            passed = None if arch.causal else replay.passes(program, tree, self.target, inputs, expected,
                                                            arch.positional, truth,
                                                            readout.reads_at_last(self.target, arch))
            if arch.rank_aware or passed is None or not passed.all():  # the reference replay decides, and reports
                report = check(program, self.target, arch, inputs=inputs, deadline=deadline)
                if not report.ok:
                    raise WitnessCheckError(f"the solver's program fails its replay (a bug in infoflow_smt):\n"
                                            f"{program}\n{report}", report)
            self.replayed.add(key)

    def truth_of(self, order, tree, inputs: np.ndarray):
        """The true choices of every node on ``inputs`` (None when too large: the scalar replay decides)."""
        key = (order, inputs.shape)
        if key not in self.truths:
            try:
                self.truths[key] = replay.Truth(tree, inputs, self.target.realization)
            except replay.TooLarge:
                self.truths[key] = None
        return self.truths[key]

    def samples_of(self, length: int, input_dim: int, deadline: Deadline) -> tuple[np.ndarray, np.ndarray]:
        """The replay's inputs (``replay_inputs``) and the target's values on them: on the first rows those the
        check of finite values computed at that length, on the others evaluated here."""
        key = (length, input_dim)
        if key not in self.inputs:
            inputs = replay_inputs(self.samples, length, input_dim)
            if self.samples <= FINITE_SAMPLES:
                with np.errstate(all="ignore"):
                    expected = np.asarray(self.target.evaluate(inputs, deadline), dtype=float)
            else:
                with np.errstate(all="ignore"):
                    rest = np.asarray(self.target.evaluate(inputs[FINITE_SAMPLES:], deadline), dtype=float)
                expected = np.concatenate([_leading_values(self.target, length, input_dim), rest])
            self.inputs[key] = inputs, expected
        return self.inputs[key]


NOT_ESTABLISHED = "under the causal mask, infeasible is not established"
OPEN_UNDER_MASK = (f"{NOT_ESTABLISHED}: no program the model covers is efficient, but an input position can also "
                   "make a selection that binds no variable over its prefix, and a later layer collect position T's "
                   "(whole) ones, programs the model does not include yet; with as many heads at the output token "
                   "as it likes before the last layer, which they cannot beat, the covered programs would be efficient "
                   "(_Session.settled_under_mask)")


def _interruptible(function):
    """``function`` with Ctrl-C remembered while it runs (``deadline.interrupts_remembered``)."""
    @functools.wraps(function)
    def call(*args, **kwargs):
        with interrupts_remembered():
            return function(*args, **kwargs)
    return call


@_interruptible
def decide(target, arch: Architecture, seq_len: int | None = None, timeout: float | None = None, *,
           decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED, samples: int = WITNESS_SAMPLES) -> Verdict:
    """Decide whether ``arch`` computes ``target`` efficiently (a cost exponent bounded in ``T``).

    ``timeout`` (seconds, positive and finite; default ``limits.DEFAULT_TIMEOUT``) bounds the whole answer;
    what is unfinished then is UNKNOWN, never INFEASIBLE. ``samples`` random inputs replay the witness.

    >>> import infoflow_smt as ifs
    >>> tgt = ifs.catalogue.get("min_pairwise_dot")
    >>> ifs.decide(tgt, ifs.Architecture(heads=(1, 1), embed_dim=16, input_dim=2)).status
    <Status.FEASIBLE: 'feasible'>
    >>> ifs.decide(tgt, ifs.Architecture(heads=(4,), embed_dim=16, input_dim=2)).exponent  # heads of width 4
    T/2 - 1
    """
    deadline = Deadline(timeout)
    given = as_target(target)
    if isinstance(arch, Architecture):   # what it leaves out is the target's (model.defaults), as on the command line
        arch = defaults.settled(arch, given)
    asked = target = readout.question(given, arch) if isinstance(arch, Architecture) else given
    validate_question(target, arch, seq_len, samples)
    if arch.causal:  # the spelling whose selections a masked input position can make, or a refusal
        target = causal.check_supported(target)
    seq_len, samples = (None if seq_len is None else int(seq_len)), int(samples)
    with _recent(target, cost.as_law(decode_law), seq_len, samples) as questions:
        verdict = questions.decide(arch, deadline)
    if asked is given:  # the mask's own rewrite (``causal.causal_form``) is a spelling, not another question
        return verdict
    note = explain.last_token_note(given, target, arch.causal)
    return dataclasses.replace(verdict, explanation=(note,) + verdict.explanation)


RECENT_TARGETS = 16   # targets whose encodings, replays and witnesses ``decide`` keeps for the next question
_recent_questions: OrderedDict[tuple, Questions] = OrderedDict()
_recent_lock = threading.Lock()


def forget_recent() -> None:
    """Drop the questions ``decide`` keeps (encodings, replays, witnesses of recent targets): the next answer
    is computed from scratch, as in a fresh session (for measurements and tests)."""
    with _recent_lock:
        _recent_questions.clear()


@contextlib.contextmanager
def _recent(target, law: cost.DecodeLaw, seq_len: int | None, samples: int):
    """The ``Questions`` of a target this thread asked recently (a researcher asks one target about many
    architectures: its encoding is built once), held by one caller at a time (a caller that finds it busy
    gets fresh ones). The answers are the same either way: the shared state is caches."""
    key = (target.text, target.seed, target.name, target.per_position, law, seq_len, samples, threading.get_ident())
    with _recent_lock:
        questions = _recent_questions.pop(key, None) or Questions(target, law, seq_len, samples)
        _recent_questions[key] = questions
        while len(_recent_questions) > RECENT_TARGETS:
            _recent_questions.popitem(last=False)
    if not questions.busy.acquire(blocking=False):
        yield Questions(target, law, seq_len, samples)
        return
    try:
        yield questions
    finally:
        questions.busy.release()


@dataclass(frozen=True)
class ParetoFront:
    """The answer of ``minimize``: the Pareto-minimal architectures (each a ``Verdict`` with its witness), and
    when there is none, why (the explanation of the largest architecture tried). Iterates like a tuple."""

    points: tuple[Verdict, ...]
    largest: Verdict | None = None      # the largest architecture tried (its verdict says why, when none)
    tried: int = 0
    undecided: tuple[Verdict, ...] = ()  # the UNKNOWN verdicts: any of them may be a missing or lower point

    @property
    def complete(self) -> bool:
        """Whether every architecture tried was decided: only then are the points the whole front."""
        return not self.undecided

    def __iter__(self):
        return iter(self.points)

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i):
        return self.points[i]

    def __bool__(self) -> bool:
        return bool(self.points)

    def gap(self) -> str:
        """The sentence that says which architectures were not decided ("" when all were)."""
        if not self.undecided:
            return ""
        shapes = ", ".join(f"({v.architecture.layers}, {v.architecture.heads[0]})" for v in self.undecided[:12])
        more = ", ..." if len(self.undecided) > 12 else ""
        return (f"incomplete: {plural(len(self.undecided), 'architecture')} of {self.tried} not decided "
                f"(layers, heads: {shapes}{more}; {self.undecided[0].reason_unknown}); each may be a missing "
                "point or lower a listed one")

    def __str__(self) -> str:
        text = self._points_text()
        return text + ("\n" + self.gap() if self.undecided else "")

    def _points_text(self) -> str:
        if not self.points:
            head = (f"no efficient architecture among the {plural(self.tried, 'architecture')} tried" if self.complete
                    else f"no efficient architecture among the {plural(self.tried - len(self.undecided), 'architecture')} "
                         "decided")
            why = [f"  - {r}" for r in self.largest.explanation] if self.largest and not self.undecided else []
            if why:
                head += f"; at the largest, {self.largest.architecture.shape}:"
            return "\n".join([head] + why)
        rows = [("layers", "heads per layer", "exponent", "operations")]
        rows += [(str(v.architecture.layers), str(v.architecture.heads[0]), str(v.exponent),
                  str(v.witness.operations if v.witness else "-")) for v in self.points]
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
        return "\n".join([lines[0], "  ".join("-" * w for w in widths)] + lines[1:])

    def to_json(self) -> dict:
        why = self.largest.explanation if self.largest and not self.points and not self.undecided else ()
        return {"points": [v.to_json() for v in self.points], "tried": self.tried, "complete": self.complete,
                "undecided": [{"layers": v.architecture.layers, "heads": v.architecture.heads[0],
                               "reason_unknown": v.reason_unknown} for v in self.undecided],
                "why_none": [r.sentence for r in why]}


Front = ParetoFront  # the name docs/api.md gave it first: ifs.Front keeps working


@_interruptible
def minimize(target, max_layers: int = 4, max_heads: int = 8, *, embed_dim=32, input_dim: int | None = None,
             positional: bool | None = None, seq_len: int | None = None,
             timeout: float | None = None, rank_aware: bool = False, causal: bool = False) -> ParetoFront:
    """The Pareto-minimal architectures (layers, heads per layer, exponent), each with its witness.

    Architectures have the same number of heads in every layer. A point is kept when no other feasible
    point has at most as many layers, at most as many heads and an exponent no larger. Every architecture
    is decided (one encoding serves them all): more heads can lower the exponent (heads that split specific
    positions each decode less). ``timeout`` bounds the whole search. When nothing is feasible the result
    says why: the explanation of the largest architecture tried. An architecture not decided by the deadline
    is in ``undecided`` (and ``complete`` is False): the points are then the front of the decided ones only.
    ``input_dim=None`` is the target's own token dimension (``Target.token_dim``), as in ``decide_all``.
    ``rank_aware``: the rank rule (``Architecture``); every architecture is decided, none inferred, so the
    front stays exact though a head more may then hurt. ``causal``: a causal mask, each architecture asked
    as ``decide`` asks it (``causal.check_supported``).
    """
    deadline = Deadline(timeout)
    target = as_target(target)
    input_dim = target.token_dim if input_dim is None else input_dim
    if positional is None:  # under a mask range(1, s+1) is told apart by the mask itself
        positional = bool(needs_positional(target, bool(causal)))
    problems = [f"{name} must be an integer >= 1, got {value!r}"
                for name, value in (("max_layers", max_layers), ("max_heads", max_heads))
                if whole(value) is None or value < 1]
    if problems:
        raise InvalidSpecError(problems, "minimize")
    max_layers, max_heads = int(max_layers), int(max_heads)
    largest = Architecture(heads=(max_heads,) * max_layers, embed_dim=embed_dim, input_dim=input_dim,
                           positional=positional, rank_aware=rank_aware, causal=causal)
    validate_question(target, largest, seq_len)
    if largest.causal:  # the parameter hides the module's name here
        target = check_supported(target)
    seq_len = None if seq_len is None else int(seq_len)
    feasible: list[Verdict] = []
    undecided: list[Verdict] = []
    last = None
    with _recent(target, cost.DecodeLaw.SEED, seq_len, WITNESS_SAMPLES) as questions:
        for layers in range(1, max_layers + 1):
            for heads in range(1, max_heads + 1):
                last = questions.decide(largest.with_heads((heads,) * layers), deadline)
                if last.status is Status.FEASIBLE:
                    feasible.append(last)
                elif last.status is Status.UNKNOWN:
                    undecided.append(last)
    key = (lambda v: cost.asymptotic_key(v.exponent)) if seq_len is None else (lambda v: (float(v.exponent), 0))

    def dominated(v: Verdict) -> bool:
        return any(w is not v and w.architecture.layers <= v.architecture.layers
                   and w.architecture.heads[0] <= v.architecture.heads[0] and key(w) <= key(v)
                   for w in feasible)

    return ParetoFront(tuple(v for v in feasible if not dominated(v)), last, max_layers * max_heads,
                       tuple(undecided))


def export_smtlib(target, arch: Architecture, path, *, efficient: bool = True, overwrite: bool = False,
                  decode_law: cost.DecodeLaw | str = cost.DecodeLaw.SEED, timeout=None) -> Path:
    """Write the decision as a standard SMT-LIB 2 script: satisfiable iff an (efficient) program exists.

    ``timeout`` (seconds, default 60 as for ``decide``) bounds the encoding: past it ``OutOfTime`` is raised,
    naming the layer it reached, and nothing is written.

    Refuses an existing file unless ``overwrite``, never writes through a symbolic link or over anything but
    a plain file, and writes atomically (a temporary file beside the destination, then renamed; the mode of a
    file it replaces is kept)."""
    deadline = Deadline(timeout)
    target = as_target(target)
    if isinstance(arch, Architecture):
        arch = defaults.settled(arch, target)
    target = readout.question(target, arch) if isinstance(arch, Architecture) else target
    if arch.causal:
        target = causal.check_supported(target)
    validate_question(target, arch)
    path = plain_file(path, "export")
    if path.is_symlink():
        raise InvalidSpecError(f"{path} is a symbolic link; export_smtlib writes only to a plain path", "export")
    if path.exists() and not overwrite:
        raise InvalidSpecError(f"{path} exists; pass overwrite=True to replace it", "export")
    try:
        enc = encoder.encode(target, arch, cost.as_law(decode_law), None, portable=True, deadline=deadline)
    except OutOfTime as late:
        raise OutOfTime(f"{late.what} (export deadline {deadline.seconds:g} s; nothing was written)") from None
    facts = [*enc.tracked.values(), enc.depth[arch.layers], *(enc.heads[(l, h)] for l, h in enumerate(arch.heads, 1))]
    facts = [f"|{n}|" for n in facts]
    if efficient:
        facts += [f"(not |{v}|)" for i, v in enumerate(enc.level_vars) if not cost.is_bounded(enc.levels[i])]
    text = "(set-logic QF_LIA)\n" + enc.text + "\n" + "".join(f"(assert {f})\n" for f in facts) + "(check-sat)\n"
    return write_atomic(path, text, "export")
