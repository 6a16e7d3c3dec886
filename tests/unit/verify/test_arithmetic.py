"""The checkers' arithmetic against Target.evaluate's, written apart on purpose (lang/evaluate.py)."""
from __future__ import annotations

import numpy as np
import pytest

import infoflow_smt as ifs
from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify import arithmetic


@pytest.mark.parametrize("text, call", [
    ("sum(dot(x[s], x[t]) for s in T for t in T)", "dot"),
    ("sum(norm(x[t]) for t in T)", "norm"),
    ("sum(bilinear(A1, x[s], x[t]) for s in T for t in T)", "bilinear"),
    ("sum(f1(x[s], dot(x[s], x[t])) for s in T for t in T)", "f1"),
])
def test_a_call_computes_what_target_evaluate_computes(text, call):
    """Every pair (s, t) of a few inputs through ``apply_call``, summed, is the target's value."""
    target = ifs.parse_target(text)
    X = np.random.default_rng(3).standard_normal((4, 5, 2))
    real = target.realization
    s, t = X[:, :, None, :], X[:, None, :, :]   # (samples, s, 1, d) against (samples, 1, t, d)
    if call == "f1":
        inner = arithmetic.apply_call("dot", [s, t], [True, True], function=real.function)
        values = arithmetic.apply_call("f1", [s, inner], [True, False], function=real.function)
    else:
        args = [s, t] if call != "norm" else [X]
        values = arithmetic.apply_call(call, args, [True] * len(args), matrix=real.matrix("A1", 2),
                                       function=real.function)
    totals = values.reshape(len(X), -1).sum(axis=1)
    assert np.allclose(totals, np.asarray(target.evaluate(X), dtype=float).reshape(-1), rtol=1e-9, atol=1e-9)


def test_a_scalar_against_a_vector_applies_to_each_coordinate():
    assert arithmetic.apply_operator("-", np.array([[1.0, 2.0]]), np.array([1.0]), True, False).tolist() == [[0.0, 1.0]]
    assert arithmetic.apply_operator("**", 2.0, 3.0, False, False) == 8.0


def test_the_batched_replay_refuses_a_call_over_its_budget():
    def refuse(shape):
        raise MemoryError(shape)

    with pytest.raises(MemoryError):
        arithmetic.apply_call("f1", [np.zeros((3, 2))], [True], function=Realization(0).function, fits=refuse)
