"""One symbol T for the sequence length, shared by every symbolic quantity."""
from __future__ import annotations

import sympy

import infoflow_smt as ifs
from infoflow_smt.model import cost
from infoflow_smt.symbols import T


def test_t_is_a_positive_integer_symbol():
    assert T.is_positive and T.is_integer and T.name == "T"
    assert sympy.limit(1 / T, T, sympy.oo) == 0


def test_every_module_uses_the_same_t():
    """A second Symbol("T") without the assumptions would not cancel against this one."""
    assert ifs.T is T
    assert cost.decode(T, 2, 32) - T / 16 == -1
    assert ifs.Architecture(heads=(1,), embed_dim=2 * T).width / T == 2
