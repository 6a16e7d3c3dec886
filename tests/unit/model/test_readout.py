"""The readout: the question each readout asks of a target (docs/model.md, "Readout")."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.model.readout import last_token_target, membership_lengths, question, reads_at_last

LAST = ifs.Architecture(heads=(1,), embed_dim=8, input_dim=2, readout="last")


def test_the_output_token_asks_the_target_itself():
    target = ifs.parse_target("max(F0(x[T], x[t]) for t in T)")
    assert question(target, dataclasses.replace(LAST, readout="output")) is target


def test_the_last_position_reads_x_T_as_its_own_token():
    target = ifs.parse_target("x[T] + max(dot(x[T], x[t]) for t in T)", seed=3)
    asked = question(target, LAST)
    assert asked.text == "x[o] + max(dot(x[o], x[t]) for t in T)" and asked.seed == 3 and asked.per_position
    X = np.random.default_rng(0).standard_normal((4, 7, 2))
    assert np.allclose(asked.evaluate(X)[:, -1], target.evaluate(X))  # position T's answer is the target


def test_a_target_without_x_T_is_still_answered_at_every_position():
    asked = question(ifs.parse_target("max(f1(x[t]) for t in T)"), LAST)
    assert asked.text == "max(f1(x[t]) for t in T)" and asked.per_position
    assert asked.evaluate(np.zeros((2, 5, 2))).shape == (2, 5)


def test_the_rewrite_is_idempotent():
    asked = last_token_target(ifs.parse_target("max(F0(x[T], x[t]) for t in T)"))
    assert question(asked, LAST) == asked


def test_with_positions_the_target_is_asked_of_position_T_itself():
    target = ifs.parse_target("max(F0(x[T], x[t]) for t in T)")
    positional = dataclasses.replace(LAST, positional=True)
    assert question(target, positional) is target and reads_at_last(target, positional)
    assert not reads_at_last(question(target, LAST), LAST)  # without positions every position answers
    with pytest.raises(InvalidSpecError, match="with positional encoding and a target with an answer at every"):
        question(ifs.parse_target("x[o]"), positional)


def test_match2_read_at_the_last_position_is_one_layer_and_two_at_the_output_token():
    match2 = "max(F0(x[T], x[t]) for t in T)"
    assert ifs.decide(match2, LAST).status is ifs.Status.FEASIBLE
    verdict = ifs.decide(match2, dataclasses.replace(LAST, positional=True))
    assert verdict.feasible and {a.where for a in verdict.witness.actions} == {FixedIndex(0, True)}
    assert ifs.decide(match2, dataclasses.replace(LAST, readout="output", positional=True)).status is \
        ifs.Status.INFEASIBLE
    assert ifs.decide(match2, ifs.Architecture(heads=(1, 1), embed_dim=8, input_dim=2, positional=True)).feasible


# ---- under the causal mask: position p answers for the sequence cut at p (docs/model.md, "Causal mask") ------
MASKED = dataclasses.replace(LAST, causal=True)


@pytest.mark.parametrize("text, asked", [
    ("max(F0(x[T], x[t]) for t in T)", "max(F0(x[o], x[t]) for t in range(1, o+1))"),
    ("f1(x[T-1]) + min(dot(x[s], x[t]) for s in range(1, T+1) for t in range(1, s+1))",
     "f1(x[o-1]) + min(dot(x[s], x[t]) for s in range(1, o+1) for t in range(1, s+1))"),
])
def test_under_the_mask_T_is_read_as_the_answering_position(text, asked):
    target = ifs.parse_target(text, seed=5)
    question_asked = question(target, MASKED)
    assert question_asked.text == asked and question_asked.per_position and question_asked.seed == 5
    assert question(question_asked, MASKED) == question_asked  # idempotent
    X = np.random.default_rng(1).standard_normal((3, 6, 2))
    every = question_asked.evaluate(X)
    for p in range(2, 7):  # at every position: the target on the sequence cut there (x[T-1] needs T >= 2)
        assert np.allclose(every[:, p - 1], target.evaluate(X[:, :p]))


def test_under_the_mask_a_target_naming_o_is_read_with_o_at_T():
    asked = question(ifs.parse_target("max(F0(x[o], x[t]) for t in T)"), MASKED)
    assert asked.text == "max(F0(x[o], x[t]) for t in range(1, o+1))"


@pytest.mark.parametrize(("text", "heads", "dim"), [
    ("max(f2(x[s], x[1]) for s in S1)", (2, 1), 1),
    ("F0(mean(f1(x[s]) + dot(x[s], x[s]) for s in S2), min(f1(x[s]) for s in S1))", (1, 2), 1),
    ("min(f2(x[s], x[t]) for s in T for t in S1) + mean(f1(x[s]) for s in range(2, T+1))", (1, 2), 1)])
def test_position_T_is_a_candidate_of_a_subset_at_the_lengths_where_it_belongs(text, heads, dim):
    # position T lies in S_i at one length in two (t is in S_i when (t - i) % 4 is 0 or 1), so at those
    # lengths it ranks among the candidates and must hold what they read: the witness works at every length
    arch = ifs.Architecture(heads=heads, embed_dim=32, input_dim=dim, positional=True, readout="last")
    verdict = ifs.decide(text, arch)
    assert verdict.feasible
    for length in (12, 13, 14, 15):
        report = ifs.check(verdict.witness, ifs.parse_target(text), arch, seq_len=length, samples=4, seed=1)
        assert report.ok, f"T = {length}: {report}"


def test_lengths_that_place_position_T_in_other_subsets_are_all_asked():
    read_at_last = ifs.Architecture(heads=(2, 1), positional=True, readout="last")
    two = ifs.parse_target("max(f1(x[s]) for s in S1) + min(f1(x[u]) for u in S2) + x[T]")
    assert membership_lengths(two, read_at_last, 16) == (16, 17, 18, 19)      # T in S1 and S2: all four ways
    one = ifs.parse_target("max(f1(x[s]) for s in S1) + x[T]")
    assert membership_lengths(one, read_at_last, 16) == (16, 17)              # out of S1, then in it
    assert membership_lengths(one, ifs.Architecture(heads=(2, 1), positional=True), 16) == (16,)   # no class T


def test_the_solver_replays_a_witness_at_every_way_position_T_lies_in_the_subsets(monkeypatch):
    from infoflow_smt.smt import solver

    replayed = []
    original = solver.Questions._replay

    def recording(self, program, arch, length, deadline):
        replayed.append(length)
        return original(self, program, arch, length, deadline)

    monkeypatch.setattr(solver.Questions, "_replay", recording)
    solver.forget_recent()
    text = "max(f1(x[s]) for s in S1) + min(f1(x[u]) for u in S2) + dot(x[T], x[T])"
    arch = ifs.Architecture(heads=(2, 1), embed_dim=32, input_dim=2, positional=True, readout="last")
    verdict = ifs.decide(text, arch)
    assert verdict.feasible
    first = min(replayed)
    assert set(replayed) == set(membership_lengths(verdict.target, arch, first)) == set(range(first, first + 4))
