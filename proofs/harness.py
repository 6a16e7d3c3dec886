"""The machinery every proof shares: decide, replay, compare with the prediction the proof states, time.

A proof module states a result, lists the (target, architecture, prediction) triples it checks and calls
``run_proof``. ``observe`` turns one triple into an ``Evidence``: it asks ``ifs.decide``, replays the
program the solver returned with ``ifs.check`` on fresh inputs, and records every way the answer differs
from the prediction. Nothing raised by the solver escapes: it becomes a mismatch that names the error.

``within(seconds)`` sets one deadline for every question asked inside it (a whole run of proofs): each
question gets what is left, what is unfinished at the deadline is UNKNOWN, and no question is asked once it
has passed (``unasked``), so the proof is unknown, never disproved, and the run ends at its deadline.

>>> import infoflow_smt as ifs
>>> ev = observe("max_retrieval", ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2), "feasible", exactly(1))
>>> ev.matches, ev.replayed, str(ev.obtained_exponent)
(True, True, '1')
>>> linear(ifs.T / 4 - 1).test(ifs.T / 4 - 1), linear().test(sympy.Integer(1)), infinite().test(sympy.oo)
(True, False, True)
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import sympy

import infoflow_smt as ifs
from infoflow_smt.deadline import seconds as checked_seconds

from .result import Evidence, GeneralClaim, ProofResult

T = ifs.T

# The solver replays its own witness at seed 0; the proofs draw other inputs (seed 1), so a witness is
# checked on inputs it was not found with. Length 10 covers every fixed position the proofs name (<= 7).
REPLAY_LENGTH = 10
REPLAY_SAMPLES = 20
REPLAY_SEED = 1

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("proof_deadline", default=None)


@contextlib.contextmanager
def within(seconds: float | None):
    """One deadline (``time.monotonic``) for every question asked inside; None: each its own default."""
    token = _DEADLINE.set(None if seconds is None else time.monotonic() + checked_seconds(seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def timeout() -> float | None:
    """What is left of the run's deadline, for the next question (None: no run-wide deadline)."""
    end = _DEADLINE.get()
    return None if end is None else max(end - time.monotonic(), 1e-3)


def deadline_passed() -> bool:
    """Whether the run's deadline has passed: no question is asked after it."""
    end = _DEADLINE.get()
    return end is not None and time.monotonic() >= end


UNASKED = "unknown: the run's deadline passed before this question was asked"


def unasked(spec: str, arch: str, status: str, claim: Claim) -> Evidence:
    """The evidence of a question the run's deadline left unasked: unknown, so the proof is unknown."""
    return Evidence(spec, arch, status, "unknown", claim.text, sympy.nan, None, matches=False, detail=UNASKED)


@dataclass(frozen=True)
class Claim:
    """What the paper predicts of an exponent: ``text`` for the reader, ``test`` to check it."""

    text: str
    test: Callable[[sympy.Expr], bool]


def _growth(expr: sympy.Expr) -> sympy.Expr:
    """The slope of ``expr`` in ``T`` for large ``T`` (every exponent of the model is at most linear)."""
    return sympy.limit(sympy.sympify(expr) / T, T, sympy.oo)


def _finite(expr: sympy.Expr) -> bool:
    return sympy.sympify(expr).is_finite is True  # T is a finite symbol; oo and nan are not


def _same(a: sympy.Expr, b: sympy.Expr) -> bool:
    a, b = sympy.sympify(a), sympy.sympify(b)
    if not (_finite(a) and _finite(b)):  # oo - oo is nan, not zero
        return a == b
    return sympy.simplify(a - b) == 0


def exactly(expected: sympy.Expr | int) -> Claim:
    """The exponent is exactly ``expected``."""
    expected = sympy.sympify(expected)
    return Claim(str(expected), lambda e: _same(e, expected))


def linear(expected: sympy.Expr | None = None, via: str | None = None) -> Claim:
    """The exponent grows linearly in ``T`` (and, when given, equals ``expected``, reached ``via`` a mode)."""
    def test(e: sympy.Expr) -> bool:
        if not _finite(e):
            return False
        slope = _growth(e)
        return bool(slope.is_finite and slope > 0) and (expected is None or _same(e, expected))

    shape = "linear in T" if via is None else f"{via}, linear in T"
    return Claim(shape if expected is None else f"{sympy.sympify(expected)} ({shape})", test)


def infinite() -> Claim:
    """No program exists at any cost."""
    return Claim("oo (no program at any cost)", lambda e: sympy.sympify(e) is sympy.oo)


def replays(program: ifs.Program, target: ifs.Target, arch: ifs.Architecture) -> bool:
    """Whether the reference interpreter computes ``target`` exactly with ``program`` on fresh inputs."""
    return ifs.check(program, target, arch, seq_len=REPLAY_LENGTH, samples=REPLAY_SAMPLES,
                     seed=REPLAY_SEED).ok


def observe(spec: str, arch: ifs.Architecture, status: str, claim: Claim, *,
            mentions: str | None = None) -> Evidence:
    """Decide ``spec`` on ``arch`` and compare with the prediction (``status``, ``claim``).

    ``mentions``: a phrase one of the explanation sentences must contain (the reason the paper gives).
    """
    started = time.perf_counter()
    if deadline_passed():
        return unasked(spec, str(arch), status, claim)
    try:
        target = ifs.catalogue.parse_spec(spec)
        verdict = ifs.decide(target, arch, timeout=timeout())
        program = verdict.witness if verdict.witness is not None else verdict.best_program
        replayed = None if program is None else replays(program, target, arch)
    except Exception as err:  # noqa: BLE001 -- a solver bug is evidence too: report it, prove the rest
        return raised(spec, str(arch), status, claim, err, started)
    explanation = tuple(str(reason) for reason in verdict.explanation)
    problems = []
    if verdict.status.value != status:
        problems.append(f"status {verdict.status.value}, expected {status}")
    if not claim.test(verdict.exponent):
        problems.append(f"exponent {verdict.exponent}, expected {claim.text}")
    if verdict.status is ifs.Status.FEASIBLE and verdict.witness is None:
        problems.append("a feasible verdict without a witness")
    if replayed is False:
        problems.append("the solver's program fails its replay by ifs.check")
    if verdict.status is ifs.Status.INFEASIBLE and not explanation:
        problems.append("an infeasible verdict without an explanation")
    if mentions is not None and not any(mentions in sentence for sentence in explanation):
        problems.append(f"no explanation sentence mentions {mentions!r}")
    if verdict.reason_unknown:
        problems.append(f"solver reason: {verdict.reason_unknown}")
    return Evidence(spec, str(arch), status, verdict.status.value, claim.text, verdict.exponent, replayed,
                    matches=not problems, explanation=explanation, detail="; ".join(problems),
                    seconds=time.perf_counter() - started)


def raised(spec: str, arch: str, status: str, claim: Claim, err: Exception, started: float) -> Evidence:
    """The evidence of a check that raised: a mismatch naming the error, never a crash of the whole run."""
    return Evidence(spec, arch, status, "error", claim.text, sympy.nan, None, matches=False,
                    detail=f"{type(err).__name__}: {err}", seconds=time.perf_counter() - started)


def run_proof(name: str, statement: str, gather: Callable[[], Iterable[Evidence]],
              general: Callable[[], GeneralClaim] | None = None,
              notes: Callable[[], tuple[str, ...]] | None = None, differences: tuple[str, ...] = ()) -> ProofResult:
    """Collect the evidence of one proof and its general claim, and time them; it holds iff every evidence
    matches and the general claim holds. ``notes``: the proof's remarks for its report (not timed).
    ``differences``: where the model's answer is not the paper's, one sentence each."""
    started = time.perf_counter()
    evidence = tuple(gather())
    claim = general() if general is not None else None
    holds = bool(evidence) and all(e.matches for e in evidence) and (claim is None or claim.holds)
    return ProofResult(name, statement, holds, evidence, time.perf_counter() - started, claim,
                       notes() if notes is not None else (), tuple(differences))


@dataclass(frozen=True)
class FrontierCheck:
    """One question of a general claim: ``decide_all(spec, **options)`` must give the frontier ``shapes``
    (``(layers, heads)`` pairs; empty: inefficient on every architecture), or satisfy ``test``."""

    spec: str
    options: dict
    shapes: tuple[tuple[int, int], ...] | None = None
    test: Callable | None = None
    expected: str = ""


def general_claim(statement: str, checks: Iterable[FrontierCheck]) -> GeneralClaim:
    """Ask every frontier; the claim holds iff each is as expected. Nothing raised escapes."""
    frontiers, problems, undecided = [], [], []
    for check in checks:
        if deadline_passed():
            problems.append(f"{check.spec} {check.options}: {UNASKED}")
            undecided.append(f"{check.spec} {check.options}")
            continue
        try:
            frontier = ifs.decide_all(check.spec, **check.options, timeout=timeout())
        except ifs.SolverUnknownError as err:  # the deadline: the claim is unknown, not false
            problems.append(f"{check.spec} {check.options}: unknown: {err}")
            undecided.append(f"{check.spec} {check.options}")
            continue
        except Exception as err:  # noqa: BLE001 -- a solver error is a failed claim, reported
            problems.append(f"{check.spec} {check.options}: {type(err).__name__}: {err}")
            continue
        record = frontier.to_json() | {"spec": check.spec, "options": {k: str(v) for k, v in check.options.items()}}
        frontiers.append(record)
        if not frontier.complete:  # its points are only bounds: the claim is unknown, not false
            problems.append(f"{check.spec} {check.options}: unknown: cells {list(frontier.undecided)} undecided")
            undecided.append(f"{check.spec} {check.options}")
            continue
        if check.shapes is not None and frontier.shapes != check.shapes:
            problems.append(f"{check.spec} {check.options}: frontier {frontier.shapes}, expected {check.shapes}")
        if check.test is not None and not check.test(frontier):
            problems.append(f"{check.spec} {check.options}: frontier {frontier.shapes}, expected {check.expected}")
    return GeneralClaim(statement, not problems, tuple(frontiers), "; ".join(problems),
                        unknown=bool(problems) and len(undecided) == len(problems), undecided=tuple(undecided))


def architecture(heads: tuple[int, ...], embed_dim: int | sympy.Expr, input_dim: int,
                 positional: bool = False, rank_aware: bool = False) -> ifs.Architecture:
    """``ifs.Architecture`` with positional arguments, to keep the proofs' tables short."""
    return ifs.Architecture(heads=heads, embed_dim=embed_dim, input_dim=input_dim, positional=positional,
                            rank_aware=rank_aware)


@functools.lru_cache(maxsize=1024)   # the proofs state the same few predictions many times (simplify is slow)
def aggregation_exponent(embed_dim: int | sympy.Expr, input_dim: int, tokens: sympy.Expr = T,
                         heads: int = 1) -> sympy.Expr:
    """Theorem 3 of paper 1: decoding ``tokens`` tokens of dimension d from a state of width n costs
    T0*d/n - 1, and never less than a constant (exponent 0). The state is the aggregating head's: n = E/h in a
    layer of ``heads`` heads (paper 2's E = n*h; docs/model.md, "One width per head").

    Written out here rather than taken from ``infoflow_smt.model.cost``, so the proofs check the solver against
    the paper's law, not against the code that implements it.

    >>> aggregation_exponent(16, 2), aggregation_exponent(16, 2, tokens=3), aggregation_exponent(16, 2, heads=2)
    (T/8 - 1, 0, T/4 - 1)
    """
    width = sympy.sympify(embed_dim) / heads
    law = sympy.sympify(tokens) * input_dim / width - 1   # at a constant width sympy's own form is the simplest
    if width.has(T):
        law = sympy.simplify(law)
    if not law.has(T):
        return sympy.Max(law, 0)
    return law if sympy.limit(law, T, sympy.oo) > 0 else sympy.Integer(0)
