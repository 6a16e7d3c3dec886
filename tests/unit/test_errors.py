"""The exception tree: one root; an input error is also a ValueError and lists every problem at once."""
from __future__ import annotations

import pytest

from infoflow_smt.errors import (
    InfoflowError,
    InvalidSpecError,
    Problem,
    SolverUnknownError,
    WitnessCheckError,
)


def test_a_problem_says_where_when_it_knows():
    assert str(Problem("unbound variable 'u'")) == "unbound variable 'u'"
    assert str(Problem("unbound variable 'u'", 12)) == "at column 12: unbound variable 'u'"


def test_an_input_error_lists_every_problem_in_one_line():
    error = InvalidSpecError([Problem("heads is empty"), Problem("bad token", 3)], "architecture")
    assert str(error) == "invalid architecture: heads is empty; at column 3: bad token"
    assert error.subject == "architecture" and len(error.problems) == 2
    assert str(InvalidSpecError("one thing")) == "invalid specification: one thing"
    assert InvalidSpecError("one thing").problems == (Problem("one thing"),)


@pytest.mark.parametrize("error, value_error", [
    (InvalidSpecError("x"), True),
    (WitnessCheckError("replay failed"), False),
    (SolverUnknownError("timeout"), False),
])
def test_every_error_has_one_root(error, value_error):
    assert isinstance(error, InfoflowError)
    assert isinstance(error, ValueError) is value_error


def test_errors_carry_their_data():
    report = object()
    assert WitnessCheckError("replay failed", report).report is report
    unknown = SolverUnknownError("timeout")
    assert unknown.reason == "timeout" and str(unknown) == "solver returned unknown: timeout"
