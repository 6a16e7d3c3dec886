"""The rank a retrieval's score needs in a head, measured on numbers (docs/model.md, "Head width and rank").

A head ranks candidates ``t`` for a selector ``p`` by ``<W_Q h_p, W_K h_t>``: a bilinear form in what the two
positions hold, of rank at most the head's width. So the rank a score needs is the rank of the matrix
``M[i, j] = score(query holding i, key holding j)`` over independent holdings of the two sides, each row
centred (a term that reads the selector alone moves every candidate alike, which softmax ignores). Each read
of the score (``score_forms.atoms``) is drawn as an independent random token of its side: a read tied to the
candidate variable on the key side, every other read on the query side (a fixed position, or a selection made
for no one, counts as held by the selector). A bilinear form has the same rank however many holdings are drawn
and however wide the tokens are spread; a score that is no bilinear form of bounded rank (``f1(x[p] + x[t])``)
shows a rank that grows with both, and is answered None.

>>> from infoflow_smt.lang.realization import Realization
>>> from infoflow_smt.verify import flow_program as fp
>>> head = fp.retrieval("dot(x[t] + x[t-1], x[p] + x[p-1])")
>>> rank(head.body, head.variable, 4, Realization(0)), rank(fp.retrieval("dot(x[t], x[p])**2").body, "t", 2, Realization(0))
(4, 3)
>>> rank(fp.retrieval("f1(x[t] + x[p])").body, "t", 2, Realization(0)) is None
True
"""
from __future__ import annotations

import functools

import numpy as np

from infoflow_smt.lang.evaluate import evaluate_expr
from infoflow_smt.lang.expr import Call, Content, Expr, OffsetIndex, VarIndex, is_vector, map_children
from infoflow_smt.lang.realization import Realization
from infoflow_smt.verify.knowledge import free
from infoflow_smt.verify.score_forms import atoms

_QUERY, _KEY = "@query", "@key"
_DRAWS = ((24, 1.0), (48, 3.0))   # (holdings per side, spread of the tokens): a bounded rank is the same at both
_TOLERANCE = 1e-8


@functools.lru_cache(maxsize=1024)
def rank(body: Expr, variable: str, dim: int, realization: Realization) -> int | None:
    """The rank of the score ``body`` (over ``SELF`` and ``variable``) as a bilinear form in what the two sides
    hold, with tokens of ``dim`` numbers; None: no bounded rank."""
    split = _split(body, variable)
    found = [_measured(split, dim, realization, count, spread, seed) for seed, (count, spread) in enumerate(_DRAWS)]
    if len(set(found)) > 1 or found[0] >= _DRAWS[0][0] - 1:
        return None
    return found[0]


def _split(body: Expr, variable: str) -> tuple[Expr, int, int]:
    """``body`` with each read replaced by a token of its side: (the score, reads of the query, of the key)."""
    slots: dict[Expr, Expr] = {}
    counts = {_QUERY: 0, _KEY: 0}
    for atom in atoms(body):
        side = _KEY if variable in free(atom) else _QUERY
        slot = counts[side]
        counts[side] += 1
        token = Content(OffsetIndex(side, slot) if slot else VarIndex(side))
        slots[atom] = token if is_vector(atom) else Call(f"@read{side}{slot}", (token,))
    return _replaced(body, slots), counts[_QUERY], counts[_KEY]


def _replaced(e: Expr, slots: dict[Expr, Expr]) -> Expr:
    if e in slots:
        return slots[e]
    return map_children(e, lambda c: _replaced(c, slots))


def _measured(split: tuple[Expr, int, int], dim: int, realization: Realization, count: int, spread: float,
              seed: int) -> int:
    score, queries, keys = split
    queries, keys = max(queries, 1), max(keys, 1)
    length = count * (queries + keys)
    X = np.random.default_rng(seed).standard_normal((1, length, dim)) * spread
    rows = 1 + np.arange(count) * queries
    columns = 1 + count * queries + np.arange(count) * keys
    env = {_QUERY: np.repeat(rows, count), _KEY: np.tile(columns, count)}
    batch = np.broadcast_to(X, (count * count, length, dim))
    M = np.asarray(evaluate_expr(score, batch, realization, env), dtype=float).reshape(count, count)
    M = M - M.mean(axis=1, keepdims=True)
    if not np.isfinite(M).all():
        return count
    singular = np.linalg.svd(M, compute_uv=False)
    if singular[0] == 0:
        return 0
    return int(np.sum(singular > _TOLERANCE * singular[0]))
