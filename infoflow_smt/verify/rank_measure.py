"""The rank of a selection's score measured on numbers: the checkers' side of the rank rule.

Under ``Architecture(rank_aware=True)`` a retrieval head ranks its candidates by ``<W_Q h_s, W_K h_t>``, a
bilinear form in what the selecting position (``h_s``) and the candidate (``h_t``) hold, computed in the
head's ``E / h_l`` dimensions (docs/model.md, "Head width and rank"). The encoder counts a score's rank
from its text (``infoflow_smt/lang/rank.py``); the interpreter and the enumerator measure it here
instead, and share nothing with that count: the score is evaluated, with the target's own realization (its
matrices, vectors and smooth functions), on a grid of independent draws of the two sides' holdings, and the
rank is the numerical rank of that grid of scores.

* What a side holds: a read tied to the candidate's variable (its token, an offset from it, a selection made
  for it) is drawn per column; every other read (the selector's variables, fixed positions, selections made
  for the selector or for no one) per row. Each distinct read is one independent draw, so coincidences of
  a concrete sequence (``t - 1 == s``) do not lower the rank.
* What softmax ignores: a part of the score that depends on the selector alone shifts every candidate's
  score alike, so each row is centred before the rank is taken.
* Scale: tokens are drawn ``SCALE`` times wider than the inputs, so a smooth function of both sides at once
  (``f1(x[s] + x[t])``) shows its unbounded rank (its ``tanh`` is sharp there) instead of the few singular
  values a gentle curve would leave above the tolerance.

A rank above half the grid's side is no bounded rank (``None``): a bilinear form of rank ``r`` leaves
exactly ``r`` singular values above the rounding noise, and every score the language states with a bounded
rank has at most ``d`` per form plus one per other term, well under the half.
"""
from __future__ import annotations

import numpy as np

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost
from infoflow_smt.model.program import Mode, Program
from infoflow_smt.symbols import T
from infoflow_smt.verify import arithmetic

SCALE = 30.0        # tokens and values are drawn this much wider than N(0, 1) (module docstring)
TOLERANCE = 1e-9    # singular values below this fraction of the largest are rounding noise
_LARGE_T = (10**6, 10**9)   # a width that depends on T is compared at these lengths


def measured_rank(tree, node: str, realization, input_dim: int) -> int | None:
    """The numerical rank of ``node``'s score over independent holdings of the two sides, after each
    selector's row is centred; ``None`` when it is no bounded rank (module docstring).

    >>> import infoflow_smt as ifs
    >>> from infoflow_smt.lang.trees import comparison_tree
    >>> target = ifs.parse_target("max(dot(x[T], x[t]) + f1(x[t]) for t in T)")
    >>> measured_rank(comparison_tree(target), "g0.t", target.realization, 4)  # the form 4, f1(x[t]) one more
    5
    """
    data = tree.nodes[node]
    side = 4 * input_dim + 48
    grid = _Grid(tree, data["var"], realization, input_dim, side)
    scores = sum((sign * np.asarray(grid.value(term), dtype=float) for sign, term in data["terms"]), np.zeros(()))
    if grid.is_vector(data["score"]):  # a token compared as a number (d = 1): its one coordinate
        scores = scores[..., 0]
    scores = np.broadcast_to(scores, (side, side))
    centred = scores - scores.mean(axis=1, keepdims=True)
    if not np.isfinite(centred).all():
        return None
    singular = np.linalg.svd(centred, compute_uv=False)
    if singular[0] == 0:
        return 0
    rank = int(np.sum(singular > TOLERANCE * singular[0]))
    return None if rank > side // 2 else rank


def narrow_retrievals(program: Program, tree, arch, realization) -> list[str]:
    """Under ``arch.rank_aware``: every retrieval of ``program`` whose head is narrower than its score's
    measured rank, in words (empty when every head holds its score, or without the rank rule)."""
    if not arch.rank_aware:
        return []
    problems, ranks = [], {}
    for action in program.actions:
        if action.op.mode not in (Mode.RETRIEVE, Mode.KTH) or action.op.node not in tree.nodes:
            continue
        if action.op.node not in ranks:
            ranks[action.op.node] = measured_rank(tree, action.op.node, realization, arch.input_dim)
        problem = too_narrow(ranks[action.op.node], arch, action.layer)
        if problem:
            problems.append(f"{action}: {problem}")
    return problems


def too_narrow(rank: int | None, arch, layer: int) -> str | None:
    """Why a head of ``layer`` cannot rank by a score of ``rank`` (None when it can): its width ``E / h_l``,
    taken at two large lengths when it depends on ``T``, is below the rank, or the score has none."""
    heads = arch.heads[layer - 1]
    widths = [float(arch.width.subs(T, n)) / heads for n in _LARGE_T]
    if rank is None:
        return f"its score has no bounded rank, and a head {min(widths):g} wide ranks by a bilinear form"
    if rank > min(widths):
        return f"a head {min(widths):g} wide (E / h = {arch.embed_dim} / {heads}) cannot hold its rank-{rank} score"
    return None


class _Grid:
    """A score's terms evaluated on ``side`` selectors (rows) by ``side`` candidates (columns)."""

    def __init__(self, tree, candidate: str, realization, d: int, side: int):
        self.tree, self.candidate, self.real, self.d, self.side = tree, candidate, realization, d, side
        self.rng = np.random.default_rng(0)
        self.draws: dict = {}

    def value(self, e):
        if isinstance(e, ex.Num):
            return e.value
        if isinstance(e, ex.Param):
            return self.real.vector(e.name, self.d)
        if isinstance(e, ex.Content):
            return self.draw(e, self.content_variables(e.index), vector=True)
        if isinstance(e, NodeRef):
            return self.draw(e, self.node_variables(e.node), vector=self.is_vector(e))
        if isinstance(e, GroupRef):
            return self.draw(e, self.node_variables(outermost(self.tree, e.group)), vector=self.is_vector(e))
        if isinstance(e, ex.BinOp):
            return arithmetic.apply_operator(e.op, self.value(e.left), self.value(e.right),
                                             self.is_vector(e.left), self.is_vector(e.right))
        if isinstance(e, ex.Neg):
            return -self.value(e.operand)
        if isinstance(e, ex.Call):
            bilinear = e.name == "bilinear"
            operands = e.args[1:] if bilinear else e.args
            return arithmetic.apply_call(e.name, [self.value(a) for a in operands],
                                         [self.is_vector(a) for a in operands],
                                         matrix=self.real.matrix(e.args[0].name, self.d) if bilinear else None,
                                         function=self.real.function)
        raise TypeError(f"cannot measure the rank of {e!r}")

    def draw(self, read, variables: frozenset[str], vector: bool):
        """One independent draw of ``read`` per candidate (a column) when the candidate holds it, else per
        selector (a row); the same read is the same draw wherever it appears."""
        if read not in self.draws:
            shape = (self.side,) + ((self.d,) if vector else ())
            values = SCALE * self.rng.standard_normal(shape)
            by_column = self.candidate in variables
            self.draws[read] = values[None] if by_column else values[:, None]
        return self.draws[read]

    def content_variables(self, index) -> frozenset[str]:
        if isinstance(index, (ex.VarIndex, ex.OffsetIndex)):
            return frozenset({index.name})
        if isinstance(index, GroupRef):
            return self.node_variables(outermost(self.tree, index.group))
        return frozenset()   # a fixed position: held with the selector's side

    def node_variables(self, node: str) -> frozenset[str]:
        return frozenset(self.tree.nodes[node]["bound"])

    def is_vector(self, e) -> bool:
        return arithmetic.is_vector(e, self.tree)
