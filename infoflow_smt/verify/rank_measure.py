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
  score alike, so each row is centred before the rank is taken; then each row and each column is scaled to
  unit length (the same rank: a row a thousand times larger than another would hide its singular values
  under the tolerance).
* Two scales. Drawing the holdings 30 times wider keeps the rank of a bilinear form of bounded rank (it is
  the same form of rescaled inputs) but not the numerical rank of a smooth function of both sides at once
  (``f1(x[s] + x[t])``): its ``tanh`` turns sharp, and many more singular values rise above the tolerance.
  So the rank is read at the inputs' own scale (``GENTLE``: a product of forms and a single coordinate stay
  within a few orders of magnitude of each other, above the tolerance), and a score with a term whose rank
  rises at ``SHARP`` times that scale is no bounded rank (``None``). Term by term: at the sharp scale a
  product of forms in another term would dwarf the ``tanh``; and a sum with an unbounded term is unbounded.
* Size: a grid of side ``n`` shows a rank up to ``n`` only, so a rank above half the side is read again on a
  grid twice as wide, up to ``MAX_SIDE`` (or the first side, ``4 d + 48``, when it is wider); a rank still
  above half of it is taken as none. So a bounded rank above ``MAX_SIDE / 2`` (``dot(x[s], x[t])**2`` at
  ``d >= 22``) reads as none here, where ``infoflow_smt/lang/rank.py`` counts it.
"""
from __future__ import annotations

import numpy as np

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.trees import GroupRef, NodeRef, outermost
from infoflow_smt.model.program import Mode, Program
from infoflow_smt.symbols import T
from infoflow_smt.verify import arithmetic

GENTLE = 1.0        # the scale the rank is read at: holdings drawn from N(0, 1), as the inputs are
SHARP = 30.0        # the scale a function of both sides shows its unbounded rank at (module docstring)
TOLERANCE = 1e-9    # singular values below this fraction of the largest are rounding noise
CONSTANT = 1e-6     # a row whose centred length is below this fraction of its length is a row of ties
MAX_SIDE = 512      # the widest grid (module docstring): an SVD of 512 x 512 takes about 0.2 s
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
    widest = max(side, MAX_SIDE)
    while True:
        for term in data["terms"]:  # a function of both sides shows in its own term (module docstring)
            gentle = _grid_rank(tree, node, [term], realization, input_dim, side, GENTLE)
            sharp = _grid_rank(tree, node, [term], realization, input_dim, side, SHARP)
            if gentle is None or sharp is None or sharp > gentle:
                return None
        rank = _grid_rank(tree, node, data["terms"], realization, input_dim, side, GENTLE)
        if rank is None or rank <= side // 2:
            return rank
        if side == widest:
            return None
        side = min(2 * side, widest)


def _grid_rank(tree, node: str, terms, realization, input_dim: int, side: int, scale: float) -> int | None:
    """The numerical rank of the sum of ``terms`` of ``node``'s score, centred, on a grid of ``side`` by
    ``side`` holdings drawn from ``N(0, scale**2)``; ``None`` when a score is not finite."""
    data = tree.nodes[node]
    grid = _Grid(tree, data["var"], realization, input_dim, side, scale)
    scores = sum((sign * np.asarray(grid.value(term), dtype=float) for sign, term in terms), np.zeros(()))
    if grid.is_vector(data["score"]):  # a token compared as a number (d = 1): its one coordinate
        scores = scores[..., 0]
    scores = np.broadcast_to(scores, (side, side))
    if not np.isfinite(scores).all():
        return None
    singular = np.linalg.svd(_balanced(scores - scores.mean(axis=1, keepdims=True), scores), compute_uv=False)
    return int(np.sum(singular > TOLERANCE * singular[0])) if singular[0] else 0


def _balanced(centred: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """``centred`` with each row, then each column, scaled to unit length: the same rank, and a row or column
    that its side's powers make a thousandfold larger (``dot(x[t], x[t])**2 * ...``) no longer hides the
    others' singular values under the tolerance. A row that centring leaves within ``CONSTANT`` of its length
    is a row of ties (its rounding noise, scaled up, would count): it is zero."""
    rows = np.linalg.norm(centred, axis=1, keepdims=True)
    varies = rows > CONSTANT * np.linalg.norm(scores, axis=1, keepdims=True)
    balanced = np.where(varies, centred / np.where(varies, rows, 1.0), 0.0)
    columns = np.linalg.norm(balanced, axis=0, keepdims=True)
    return balanced / np.where(columns > 0, columns, 1.0)


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

    def __init__(self, tree, candidate: str, realization, d: int, side: int, scale: float):
        self.tree, self.candidate, self.real, self.d, self.side = tree, candidate, realization, d, side
        self.scale = scale
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
            values = self.scale * self.rng.standard_normal(shape)
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
