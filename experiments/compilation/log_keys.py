"""A selection of the least value of a function of the candidate's own tokens, ranked by the logarithm of that
function above its least value (``log_key``): the same winner, on a scale where the smallest values do not crowd.
No torch here."""
from __future__ import annotations

import dataclasses

import numpy as np

from experiments.compilation.factors import SCORE_CALLS, Factor, Selection
from infoflow_smt.lang import expr as ex


def log_key(s: Selection, tree, d: int, realization) -> Selection:
    """``s`` ranking by ``log(f(x_t) - min f)`` when it selects the least value of one function ``f`` of the
    candidate's own token (a min of ``f``, or a max of ``-f``) whose least value is known (``_floor``).

    The order is the same (log is increasing), so the winner is; but the smallest values of ``f`` over ``n``
    candidates crowd towards its minimum, their gaps shrinking like ``1/n`` (d = 2), and a softmax on ``f``
    itself needs a ``beta`` that grows as fast. Above the minimum their ratios stay apart (the second
    smallest is about twice the smallest), so on the logarithm the margin, and the ``beta`` it needs, does
    not shrink with ``n``."""
    square = len(s.factors) > 1 and all(isinstance(f.host, ex.Num) and f.rank == 1 for f in s.factors)
    if square:
        combined = _one_candidate_term(s, tree, d, realization)
        if combined is None:
            return s
        s = combined
    if len(s.factors) != 1:
        return s
    f, var = s.factors[0], tree.nodes[s.node]["var"]
    least_first = isinstance(f.host, ex.Num) and s.sign * f.coefficient * f.host.value < 0
    if not (f.rank == 1 and least_first):
        return s
    floor = 0.0 if square else _floor(f.candidate, var, d, realization)
    return s if floor is None else dataclasses.replace(s, factors=(dataclasses.replace(f, floor=floor),))


def _one_candidate_term(s: Selection, tree, d: int, realization) -> Selection | None:
    """``s`` with its factors, every one a number times a function of the candidate alone, as one factor whose
    candidate is their sum, where that sum is a positive semi-definite quadratic form of the candidate's own
    tokens (``norm(x[t-1] - x[t])**2``, which the tree holds expanded into three ``dot``s): its least value is 0,
    and ``log_key`` can rank by it. None where it is not."""
    var = tree.nodes[s.node]["var"]
    tokens: list = []
    entries: list[tuple[int, int, float, object]] = []
    for f in s.factors:
        weight, c = f.coefficient * f.host.value, f.candidate
        while isinstance(c, ex.BinOp) and c.op == "*" and isinstance(c.left, ex.Num):
            weight, c = weight * c.left.value, c.right
        pair = _own_product(c, var, d)
        if pair is None:
            return None
        u, v, matrix = pair
        for token in (u, v):
            if token not in tokens:
                tokens.append(token)
        entries.append((tokens.index(u), tokens.index(v), weight, matrix))
    form = np.zeros((len(tokens) * d, len(tokens) * d))
    for i, j, weight, matrix in entries:
        block = np.eye(d) if matrix is None else np.asarray(realization.matrix(matrix, d))
        form[i * d:(i + 1) * d, j * d:(j + 1) * d] += weight * block
    if np.linalg.eigvalsh(form + form.T).min() < -1e-12:
        return None
    total = None
    for f in s.factors:
        term = ex.BinOp("*", ex.Num(f.coefficient * f.host.value), f.candidate)
        total = term if total is None else ex.BinOp("+", total, term)
    return dataclasses.replace(s, factors=(Factor(ex.Num(1.0), total, 1, 1.0),))


def _own_product(c, var: str, d: int):
    """(u, v, matrix) where ``c`` is ``dot(u, v)``, ``bilinear(matrix, u, v)`` or, with scalar tokens, ``u * v``,
    of two of the candidate's own tokens; else None."""
    own = lambda e: isinstance(e, ex.Content) and (e.index == ex.VarIndex(var) or (
        isinstance(e.index, ex.OffsetIndex) and e.index.name == var))
    if isinstance(c, ex.Call) and c.name == "dot" and len(c.args) == 2 and all(own(a) for a in c.args):
        return c.args[0], c.args[1], None
    if isinstance(c, ex.Call) and c.name == "bilinear" and len(c.args) == 3 and all(own(a) for a in c.args[1:]):
        return c.args[1], c.args[2], c.args[0].name
    if isinstance(c, ex.BinOp) and c.op == "*" and d == 1 and own(c.left) and own(c.right):
        return c.left, c.right, None
    if isinstance(c, ex.BinOp) and c.op == "**" and d == 1 and isinstance(c.right, ex.Num) and c.right.value == 2 \
            and own(c.left):
        return c.left, c.left, None
    return None


def _floor(c, var: str, d: int, realization) -> float | None:
    """The least value of ``c``, a function of the candidate's own tokens alone (``x[t]``, and ``x[t-1]`` that an
    offset head brought it), where it is known: a realization function shown convex (``SmoothFunction.minimum``),
    or 0 for a square of one sum of them (``u * u`` and ``u**2`` with scalar tokens, ``dot(u, u)``, ``norm(u)``,
    ``norm(u)**2``, ``bilinear(A, u, u)`` with ``A + A^T`` positive semi-definite; ``u`` as ``x[t]`` or
    ``x[t-1] - x[t]``)."""
    own = lambda e: isinstance(e, ex.Content) and (e.index == ex.VarIndex(var) or (
        isinstance(e.index, ex.OffsetIndex) and e.index.name == var))
    if isinstance(c, ex.Call) and c.name not in SCORE_CALLS and c.args and all(own(a) for a in c.args):
        return realization.function(c.name, d * len(c.args)).minimum()
    own_sum = lambda e: own(e) or (isinstance(e, ex.Neg) and own_sum(e.operand)) or (
        isinstance(e, ex.BinOp) and e.op in ("+", "-") and own_sum(e.left) and own_sum(e.right))
    if isinstance(c, ex.BinOp) and c.op == "**" and isinstance(c.right, ex.Num) and c.right.value == 2:
        if own_sum(c.left) and d == 1:   # a scalar squared
            return 0.0
        c = c.left
    if isinstance(c, ex.BinOp) and c.op == "*" and c.left == c.right and own_sum(c.left) and d == 1:
        return 0.0
    if isinstance(c, ex.Call) and c.name == "norm" and len(c.args) == 1 and own_sum(c.args[0]):
        return 0.0
    if isinstance(c, ex.Call) and c.name == "dot" and len(c.args) == 2 and c.args[0] == c.args[1] \
            and own_sum(c.args[0]):
        return 0.0
    if isinstance(c, ex.Call) and c.name == "bilinear" and len(c.args) == 3 and c.args[1] == c.args[2] \
            and own_sum(c.args[1]):
        A = np.asarray(realization.matrix(c.args[0].name, d))
        return 0.0 if np.linalg.eigvalsh(A + A.T).min() >= -1e-12 else None
    return None
