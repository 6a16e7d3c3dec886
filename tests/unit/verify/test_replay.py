"""The batched replay against the scalar interpreter: on solver witnesses and on broken variants of them
(an action dropped, a head retrieving another node, an action moved to another layer or class), every
sample the scalar replay fails the batched one fails too, and both agree on every sample here."""
from __future__ import annotations

import random

import numpy as np
import pytest
from support.generators import last_position_case, per_position_case, random_case

import infoflow_smt as ifs
from infoflow_smt.lang.trees import comparison_tree, selection_nodes
from infoflow_smt.model import readout
from infoflow_smt.model.program import Action, Mode, Op, Program
from infoflow_smt.verify import interpreter, replay

CASES = range(60)


def _broken(program: Program, tree, arch, rng: random.Random) -> list[Program]:
    actions = list(program.actions)
    if not actions:
        return []
    variants = []
    i = rng.randrange(len(actions))
    variants.append(actions[:i] + actions[i + 1:])
    victim = actions[rng.randrange(len(actions))]
    if selection_nodes(tree):
        node = rng.choice(selection_nodes(tree))
        variants.append([Action(a.layer, a.head, a.where, Op(Mode.RETRIEVE, node)) if a is victim else a
                         for a in actions])
    if arch.layers > 1:
        variants.append([Action(a.layer % arch.layers + 1, a.head, a.where, a.op) if a is victim else a
                         for a in actions])
    variants.append([Action(a.layer, a.head, "output" if a.where == "input" else "input", a.op)
                     if a is victim else a for a in actions])
    return [Program(tuple(v), program.order, program.layers) for v in variants]


def _scalar(program, tree, target, arch, X, expected) -> np.ndarray:
    passed = []
    for x, want in zip(X, expected):
        try:
            value, _ = interpreter.run(program, tree, x, target.realization, arch.positional,
                                       per_position=target.per_position, last=readout.reads_at_last(target, arch))
            passed.append(interpreter.computes_exactly(value, want))
        except interpreter.Poisoned:
            passed.append(False)
    return np.array(passed)


def _comparisons(index: int, draw=random_case, samples: int = 6):
    """(program, batched verdicts, scalar verdicts) for case ``index`` of ``draw``'s set: its witness (or
    cheapest program) and the mutants of it that pass the structural checks, on ``samples`` inputs."""
    case = draw(index)
    target = readout.question(ifs.parse_target(case.text), case.arch)
    verdict = ifs.decide(target, case.arch)
    program = verdict.witness or verdict.best_program
    if program is None:
        return []
    tree = comparison_tree(target, program.order_map)
    X = np.random.default_rng(index).standard_normal((samples, 10, case.arch.input_dim))
    found = []
    with np.errstate(all="ignore"):
        expected = np.asarray(target.evaluate(X), dtype=float)
        for variant in [program] + _broken(program, tree, case.arch, random.Random(index)):
            if interpreter._action_problems(variant, tree, case.arch):
                continue  # a structural problem: check() reports it before any replay
            batched = replay.passes(variant, tree, target, X, expected, case.arch.positional,
                                    last=readout.reads_at_last(target, case.arch))
            if batched is not None:
                found.append((variant, batched, _scalar(variant, tree, target, case.arch, X, expected)))
    return found


@pytest.fixture(scope="module")
def comparisons():
    return [c for index in CASES for c in _comparisons(index)]


def test_batched_replay_catches_every_fault_the_scalar_one_catches(comparisons):
    permissive = [(str(p), b, s) for p, b, s in comparisons if (b & ~s).any()]
    assert permissive == []


def test_batched_and_scalar_replays_agree(comparisons):
    assert all((b == s).all() for _, b, s in comparisons)
    failing = sum(int((~s).any()) for _, _, s in comparisons)
    assert len(comparisons) >= 150 and failing >= 50, (len(comparisons), failing)  # broken programs were tried


def test_a_table_over_the_budget_falls_back_to_the_scalar_replay(monkeypatch):
    monkeypatch.setattr(replay, "BUDGET", 10)
    target = ifs.catalogue.get("min_pairwise_dot")
    arch = ifs.Architecture(heads=(1, 1), input_dim=2)
    verdict = ifs.decide(target, arch)
    tree = comparison_tree(target, verdict.witness.order_map)
    X = np.random.default_rng(0).standard_normal((3, 8, 2))
    assert replay.passes(verdict.witness, tree, target, X, target.evaluate(X), False) is None
    assert ifs.check(verdict.witness, target, arch, seq_len=8, samples=3).ok


# ---- answers at every position: the batched replay against the scalar one, witnesses and their mutants ----
def test_replays_read_at_the_last_position_agree_with_the_scalar_interpreter():
    found = [c for index in range(20) for c in _comparisons(index, last_position_case, 4)]
    assert sum(s.all() for _, _, s in found) >= 5 and sum((~s).any() for _, _, s in found) >= 5  # both kinds met
    assert [(str(p), b, s) for p, b, s in found if (b != s).any()] == []


def test_per_position_replays_agree_with_the_scalar_interpreter():
    found = [c for index in range(24) for c in _comparisons(index, per_position_case, 4)]
    assert sum(s.all() for _, _, s in found) >= 10 and sum((~s).any() for _, _, s in found) >= 5  # both kinds met
    assert [(str(p), b, s) for p, b, s in found if (b != s).any()] == []
