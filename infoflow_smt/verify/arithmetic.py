"""What the target's operators and calls (``dot``, ``norm``, ``bilinear``, uninterpreted functions) compute on
concrete arrays, for the two checkers: the scalar interpreter and the batched replay.

One definition for both, because the batched replay falls back to the scalar one: two copies could drift
apart, and a sample could then pass one and fail the other. ``infoflow_smt/lang/evaluate.py`` writes the
same meaning apart on purpose: ``Target.evaluate`` is what both checkers are compared with, so it must not
share their code.

An argument's value is an array whose last axis has length ``d`` when it is a d-vector (a token, a
parameter, a sum of them) and which is otherwise a scalar per point; the leading axes (candidates, or
samples by positions) broadcast against one another.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef

OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power}


def apply_operator(op: str, a, b, a_vector: bool, b_vector: bool):
    """``a op b``; a scalar per point against a vector applies to each of the vector's coordinates.

    >>> apply_operator("*", np.array([2.0]), np.array([[1.0, 3.0]]), False, True)
    array([[2., 6.]])
    """
    if a_vector != b_vector:
        a, b = (np.asarray(a)[..., None], b) if not a_vector else (a, np.asarray(b)[..., None])
    return OPERATORS[op](a, b)


def apply_call(name: str, args: Sequence, vectors: Sequence[bool], *, matrix: np.ndarray | None = None,
               function: Callable[[str, int], Callable[[np.ndarray], np.ndarray]],
               fits: Callable[[tuple[int, ...]], None] | None = None) -> np.ndarray:
    """``name(*args)`` on the arguments' values (``vectors[i]``: whether ``args[i]`` is a d-vector).

    ``bilinear`` takes its two vectors in ``args`` and its form in ``matrix``. Any other name but ``dot`` and
    ``norm`` is an uninterpreted function: ``function(name, m)`` (a ``Realization``'s) applied to the
    arguments laid side by side, ``m`` coordinates a point (a scalar is one column); ``fits(shape)`` may
    refuse the points' shape before they are laid out (the batched replay's memory budget).

    >>> apply_call("dot", [np.array([1.0, 2.0]), np.array([3.0, 4.0])], [True, True], function=None)
    np.float64(11.0)
    """
    if name == "bilinear":
        return np.einsum("...i,ij,...j->...", args[0], matrix, args[1])
    if name == "dot":
        return np.sum(np.multiply(args[0], args[1]), axis=-1)
    if name == "norm":
        return np.linalg.norm(args[0], axis=-1)
    if name in ("min", "max"):  # the union of two selections (``causal.causal_form``)
        return (np.minimum if name == "min" else np.maximum)(np.asarray(args[0]), np.asarray(args[1]))
    columns = [np.asarray(a, dtype=float) if vector else np.asarray(a, dtype=float)[..., None]
               for a, vector in zip(args, vectors)]
    points = np.broadcast_shapes(*(c.shape[:-1] for c in columns))
    if fits is not None:
        fits(points)
    laid_out = np.concatenate([np.broadcast_to(c, points + c.shape[-1:]) for c in columns], axis=-1)
    return function(name, laid_out.shape[-1])(laid_out)


def is_vector(e, tree) -> bool:
    """Whether an expression of ``tree``'s scores has a d-vector value (contents, parameters, sums and means
    of them); numbers and calls do not."""
    if isinstance(e, (ex.Content, ex.Param)):
        return True
    if isinstance(e, ex.BinOp):
        return is_vector(e.left, tree) or is_vector(e.right, tree)
    if isinstance(e, ex.Neg):
        return is_vector(e.operand, tree)
    if isinstance(e, (GroupRef, NodeRef)):
        group = tree.graph["groups"][e.group if isinstance(e, GroupRef) else tree.nodes[e.node]["group"]]
        return not group.kind.is_selection and is_vector(group.body, tree)
    return False
