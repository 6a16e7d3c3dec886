"""The reference interpreter: hand-written programs for the public cases, wrong ones, and the law that a
program reaching the required set computes exactly what the target evaluates to."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from support.strategies import targets

import infoflow_smt as ifs
from infoflow_smt.lang import catalogue
from infoflow_smt.lang.expr import FixedIndex
from infoflow_smt.model.program import Action, Mode, Offset, Op, Program

A = ifs.Architecture


def ret(layer, head, where, node, mode=Mode.RETRIEVE):
    return Action(layer, head, where, Op(mode, node))


def test_depth_separation_two_layer_program():
    prog = Program((ret(1, 1, "input", "g0.t"), ret(2, 1, "output", "g0.s")), layers=2)
    report = ifs.check(prog, catalogue.get("min_pairwise_dot"), A(heads=(1, 1), input_dim=3), seq_len=12)
    assert report.ok, str(report)


def test_one_layer_program_for_min_pairwise_dot_fails_with_a_counterexample():
    prog = Program((ret(1, 1, "output", "g0.s"),), layers=1)
    tgt = catalogue.get("min_pairwise_dot")
    report = ifs.check(prog, tgt, A(heads=(1,), input_dim=3), seq_len=8, samples=20)
    assert not report.ok
    failure = report.failures[0]
    assert "poisoned" in failure.reason
    assert failure.inputs.shape == (8, 3)
    # the counterexample reproduces: replaying on exactly that input fails again
    again = ifs.check(prog, tgt, A(heads=(1,), input_dim=3), inputs=failure.inputs[None])
    assert not again.ok


def test_intrinsic_dimension_program_and_the_missing_head():
    tgt = catalogue.get("intrinsic_dimension", D=2)
    good = Program((ret(1, 1, "input", "g0.t"), ret(1, 2, "input", "g1.t"),
                    ret(2, 1, "output", "g0.s"), ret(2, 2, "output", "g1.s")), layers=2)
    assert ifs.check(good, tgt, A(heads=(2, 2), input_dim=2), seq_len=10).ok
    short = Program((ret(1, 1, "input", "g0.t"), ret(2, 1, "output", "g0.s"), ret(2, 2, "output", "g1.s")),
                    layers=2)
    report = ifs.check(short, tgt, A(heads=(1, 2), input_dim=2), seq_len=10)
    assert not report.ok and report.failures[0].required - report.failures[0].reached or "poisoned" in str(report)


def test_triangle_program_reading_masked_content_fails():
    tgt = catalogue.get("triangle_center")
    prog = Program((ret(1, 1, "input", "g0.c"), ret(2, 1, "input", "g0.b"), ret(3, 1, "output", "g0.a")),
                   layers=3)
    report = ifs.check(prog, tgt, A(heads=(1, 1, 1), input_dim=2), seq_len=8, samples=5)
    assert not report.ok
    assert "does not hold" in str(report) or report.problems


def test_triangle_with_global_aggregation_is_computed():
    prog = Program((Action(1, 1, "output", Op(Mode.AGGREGATE)),), layers=1)
    report = ifs.check(prog, catalogue.get("triangle_center"), A(heads=(1,), input_dim=2), seq_len=6, samples=5)
    assert report.ok and report.samples == 5


def test_kth_largest_and_d_retrieval_programs():
    kth = Program((ret(1, 1, "output", "g0.t", Mode.KTH),), layers=1)
    assert ifs.check(kth, catalogue.get("kth_largest", k=2), A(heads=(1,)), seq_len=9).ok
    dret = Program(tuple(ret(1, i + 1, "output", f"g{i}.t") for i in range(3)), layers=1)
    arch = A(heads=(3,), input_dim=2, positional=True)
    assert ifs.check(dret, catalogue.get("d_retrieval", D=3), arch, seq_len=12).ok
    no_pe = A(heads=(3,), input_dim=2, positional=False)
    assert "positional" in str(ifs.check(dret, catalogue.get("d_retrieval", D=3), no_pe, seq_len=12))


def test_specific_positions_and_offsets():
    prog = Program((Action(1, 1, "output", Op(Mode.POSITIONS, positions=(FixedIndex(1), FixedIndex(2),
                                                                          FixedIndex(3)))),), layers=1)
    assert ifs.check(prog, catalogue.get("specific_positions"), A(heads=(1,), input_dim=2, positional=True),
                     seq_len=10).ok
    tgt = ifs.parse_target("x[argmax(dot(x[s-1], x[T]) for s in T)]")
    shift = Program((Action(1, 1, "input", Op(Mode.POSITIONS, positions=(Offset(-1),))),
                     Action(1, 1, "output", Op(Mode.POSITIONS, positions=(FixedIndex(0, True),))),
                     ret(2, 1, "output", "g0.s")), layers=2)
    assert ifs.check(shift, tgt, A(heads=(1, 1), input_dim=2, positional=True), seq_len=10).ok


def test_structural_problems_are_reported_not_raised():
    prog = Program((ret(1, 3, "output", "g0.t"), ret(2, 1, "output", "nope")), layers=2)
    report = ifs.check(prog, catalogue.get("max_retrieval"), A(heads=(1, 1)), seq_len=6)
    assert not report.ok and any("has 1 heads" in p for p in report.problems)
    assert any("no selection node" in p for p in report.problems)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=targets())
def test_reaching_the_required_set_computes_the_target(text):
    """Aggregating everything at the output reaches R_F; the output then equals Target.evaluate."""
    tgt = ifs.parse_target(text)
    arch = A(heads=(1,), input_dim=2, positional=True)
    prog = Program((Action(1, 1, "output", Op(Mode.AGGREGATE)),), layers=1)
    report = ifs.check(prog, tgt, arch, seq_len=6, samples=3, seed=2)
    assert report.ok, str(report)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=targets())
def test_solver_witnesses_compute_the_target(text):
    tgt = ifs.parse_target(text)
    arch = A(heads=(2, 2), embed_dim=16, input_dim=2, positional=tgt.needs_positional)
    verdict = ifs.decide(tgt, arch)
    program = verdict.witness or verdict.best_program
    if program is not None:
        report = ifs.check(program, tgt, arch, seq_len=10, samples=5, seed=3)
        assert report.ok, str(report)
        rng = np.random.default_rng(0)
        assert np.all(np.isfinite(tgt.evaluate(rng.standard_normal((2, 10, 2)))))


# ---- answers at every position ------------------------------------------------------------------------
def test_every_input_position_answers_for_itself():
    target = ifs.parse_target("max(F0(x[o], x[t]) for t in T)")
    arch = A(heads=(1,), embed_dim=8, input_dim=2)
    at_inputs = Program((ret(1, 1, "input", "g0.t"),), layers=1)
    assert ifs.check(at_inputs, target, arch, seq_len=8, samples=10).ok
    at_output = Program((Action(1, 1, "output", Op(Mode.AGGREGATE)),), layers=1)  # the output token plays no part
    report = ifs.check(at_output, target, arch, seq_len=8, samples=3)
    assert not report.ok and "the answer at position 1" in report.failures[0].reason
    assert report.failures[0].required  # the positions some position's answer reads


def test_a_position_asked_nothing_is_not_judged():
    """``range(1, o)``: position 1 has no earlier position and no answer; one retrieval at every input
    position computes the others', and an answer where none is asked would be a mismatch."""
    from infoflow_smt.verify.interpreter import computes_exactly
    target = ifs.parse_target("max(F0(x[o], x[t]) for t in range(1, o))")
    arch = A(heads=(1,), embed_dim=8, input_dim=2, positional=True)
    assert ifs.check(Program((ret(1, 1, "input", "g0.t"),), layers=1), target, arch, seq_len=8, samples=10).ok
    assert not ifs.check(Program((), layers=1), target, arch, seq_len=8, samples=3).ok
    assert computes_exactly([None, 1.0], np.array([np.nan, 1.0]))
    assert not computes_exactly([None, 1.0], np.array([2.0, 1.0]))


def test_an_answer_reading_the_previous_token_needs_it_gathered():
    target = ifs.parse_target("dot(x[o], x[o-1]) + max(f1(x[t]) for t in T)")
    arch = A(heads=(2,), embed_dim=8, input_dim=2, positional=True)
    both = Program((ret(1, 1, "input", "g0.t"), Action(1, 2, "input", Op(Mode.POSITIONS, positions=(Offset(-1),)))),
                   layers=1)
    assert ifs.check(both, target, arch, seq_len=8, samples=10).ok
    assert not ifs.check(Program(both.actions[:1], layers=1), target, arch, seq_len=8, samples=3).ok


def test_an_answer_is_compared_position_by_position():
    from infoflow_smt.verify.interpreter import EVERYTHING, computes_exactly
    assert computes_exactly([1.0, EVERYTHING], np.array([1.0, 5.0]))
    assert not computes_exactly([1.0, 2.0], np.array([1.0, 5.0]))
