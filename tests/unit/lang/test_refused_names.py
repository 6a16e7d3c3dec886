"""The function names a target may not call, each with its reason (infoflow_smt/lang/refused_names.py).

How the parser reports them (one problem at the name's column, the CLI's one line and exit 2) is tested in
``test_language.py``; here, the table itself."""
from __future__ import annotations

import pytest

from infoflow_smt.lang import refused_names
from infoflow_smt.lang.expr import BUILTIN_FUNCTIONS
from infoflow_smt.lang.refused_names import NOT_SMOOTH, PARTICULAR, PYTHON_BUILTINS, REFUSED, refusal


def test_the_kinds_of_refused_names_are_apart_and_leave_the_languages_own_alone():
    kinds = [set(NOT_SMOOTH), set(PARTICULAR), set(PYTHON_BUILTINS), {"softmax"}]
    assert sum(len(k) for k in kinds) == len(REFUSED)
    assert not REFUSED & BUILTIN_FUNCTIONS and not REFUSED & {"min", "max", "sum", "mean", "argmin", "argmax"}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_every_refused_name_says_why_in_one_line(name):
    why = refusal(name)
    assert why is not None and why.startswith(f"{name!r} is ") and "\n" not in why


@pytest.mark.parametrize("name, expected", [
    ("sign", "'sign' is not smooth (discontinuous at 0)"),
    ("floor", "'floor' is not smooth (discontinuous at every integer)"),
    ("abs", "'abs' is not smooth (not differentiable at 0)"),
    ("Heaviside", "'Heaviside' is not smooth (discontinuous at 0)"),   # capitals name the same function
    ("exp", "'exp' is reserved: it is a particular smooth function"),
    ("softmax", "'softmax' is reserved: it is what an attention head computes over positions"),
    ("pow", "'pow' is reserved: write a power as a ** b"),
    ("len", "'len' is reserved: a Python builtin"),
])
def test_the_reason_names_the_kind(name, expected):
    assert refusal(name).startswith(expected)


@pytest.mark.parametrize("name", ["f1", "F0", "g", "sign2", "signal", "floor_f", "Len", "expo"])
def test_any_other_name_is_an_uninterpreted_function(name):
    assert refusal(name) is None


def test_a_particular_function_names_the_identity_a_generic_one_lacks():
    assert "exp(a + b) = exp(a) * exp(b) holds for it and for no generic one" in refusal("exp")
    assert "obeys identities a generic one does not" in refused_names.refusal("gelu")
