"""The z3 contexts each target's questions get (``smt.contexts``)."""
from __future__ import annotations

import multiprocessing

import z3

from infoflow_smt.smt import contexts


def test_each_context_is_one_no_question_has_used():
    made = [contexts.fresh() for _ in range(3)]
    assert len({c.ref().value for c in made}) == 3
    x = z3.Int("x", made[0])
    assert z3.Solver(ctx=made[0]).check(x > 0) == z3.sat   # usable as any context


def _two_contexts() -> None:
    contexts.fresh()
    contexts.fresh()


def test_a_forked_child_makes_contexts_of_its_own():
    # the child inherits the maker of the parent but not its thread: without a maker of its own it would wait
    # for ever on the context the parent's thread was to make
    contexts.fresh()
    child = multiprocessing.get_context("fork").Process(target=_two_contexts)
    child.start()
    child.join(30)
    alive = child.is_alive()
    if alive:
        child.kill()
    assert not alive and child.exitcode == 0
