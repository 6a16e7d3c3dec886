"""A target: a parsed expression, its canonical text, an optional catalogue name and a seed.

The seed fixes the realization of the target's uninterpreted parts (parameters, smooth functions,
subsets; see ``realization``), so ``evaluate`` is a deterministic function of the input. The measures
(comparison order, dimension, number, depth) are computed by ``trees`` and only delegated to here.

>>> tgt = parse_target("min( dot(x[s],x[t]) for s in T for t in T )")
>>> str(tgt)
'min(dot(x[s], x[t]) for s in T for t in T)'
>>> tgt.evaluate(np.ones((2, 3, 4))).tolist()
[4.0, 4.0]
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.evaluate import (
    answered_positions,
    evaluate_every_position,
    evaluate_nested,
    nested,
    work,
)
from infoflow_smt.lang.expr import Content, Expr, OffsetIndex, answers_everywhere, reads_tokens_as_numbers
from infoflow_smt.lang.language import parse_target_expr, to_text
from infoflow_smt.lang.realization import Realization

if TYPE_CHECKING:  # trees imports sympy and networkx: loaded only when a measure is asked for
    import networkx as nx
    import sympy

    from infoflow_smt.deadline import Deadline


@dataclass(frozen=True)
class Target:
    """A target function F(X) of a sequence X = (x_1, ..., x_T)."""

    expr: Expr
    text: str            # canonical text: to_text(expr)
    name: str | None = None  # the catalogue spec it came from, e.g. "intrinsic_dimension:D=3"
    seed: int = 0        # fixes parameters, smooth functions and subsets
    every_position: bool = False  # answered at every position even where it reads no o (a question read at
                                  # the last position, model.readout); a target naming o is so in any case
    prefixes: bool = False  # its tree holds each selection's prefix form: a question under the causal mask
                            # (causal.check_supported; trees.py, "Prefix forms")

    def __str__(self) -> str:
        return self.text

    @property
    def realization(self) -> Realization:
        """The concrete parameters, functions and subsets behind this target's names."""
        return Realization(self.seed)

    def evaluate(self, X: np.ndarray, deadline: Deadline | None = None) -> np.ndarray:
        """F on every sequence of ``X`` (shape ``(batch, T, d)``): shape ``(batch,)``, or ``(batch, d)``; a
        target with an answer at every position (``per_position``) gives shape ``(batch, T)`` or ``(batch, T, d)``.
        ``deadline`` (a ``Deadline``): checked as the evaluation goes, raising ``OutOfTime`` once it has passed.

        >>> parse_target("x[1] + x[T]").evaluate(np.ones((1, 2, 3))).tolist()
        [[2.0, 2.0, 2.0]]
        """
        problems = []
        if not isinstance(X, np.ndarray):
            raise InvalidSpecError([Problem(f"X must be a numpy array, got {type(X).__name__}")], "input")
        if X.ndim != 3:
            problems.append(Problem(f"X must have shape (batch, T, d), got shape {X.shape}"))
        elif X.shape[1] < 1 or X.shape[2] < 1:
            problems.append(Problem(f"X must have T >= 1 and d >= 1, got shape {X.shape}"))
        if not (np.issubdtype(X.dtype, np.integer) or np.issubdtype(X.dtype, np.floating)):
            problems.append(Problem(f"X must hold real numbers, got dtype {X.dtype} (shape {X.shape})"))
        elif not np.isfinite(X).all():
            problems.append(Problem(f"X (shape {X.shape}) holds non-finite values"))
        if problems:
            raise InvalidSpecError(problems, subject="input")
        X = np.asarray(X, dtype=float)
        if self.per_position:
            return evaluate_every_position(self._evaluated, X, self.realization, deadline)
        return evaluate_nested(self._evaluated, X, self.realization, deadline=deadline)

    @cached_property
    def per_position(self) -> bool:
        """Whether the target names the answering position ``o``: every input position computes its own
        answer (docs/model.md, "Answers at every position"), and the output token plays no part: so does
        ``max(F0(x[o], x[t]) for t in T)``."""
        return self.every_position or answers_everywhere(self.expr)

    def answered(self, seq_len: int) -> np.ndarray:
        """Which positions ``1..T`` are asked for an answer (shape ``(T,)``, Booleans): every one, but for a target
        with an answer at every position whose own ranges are bounded by ``o``, those where the ranges have
        their candidates (``evaluate.answered_positions``); ``evaluate`` gives NaN at the others.

        >>> parse_target("max(F0(x[o], x[t]) for t in range(1, o))").answered(3).tolist()
        [False, True, True]
        """
        if seq_len not in self._answered:
            self._answered[seq_len] = answered_positions(self._evaluated, seq_len, self.realization) \
                if self.per_position else np.ones(seq_len, dtype=bool)
        return self._answered[seq_len]

    @cached_property
    def _answered(self) -> dict[int, np.ndarray]:
        return {}

    @cached_property
    def normal_form(self) -> Expr:
        """The same function in its canonical spelling (``normal_form.normalize``): what the comparison
        tree, the solver and the checker work on."""
        from infoflow_smt.lang.normal_form import normalize
        return normalize(self.expr)

    @cached_property
    def shortest_length(self) -> int:
        """The shortest sequence this target is defined on: longer than every fixed position, rank and offset
        it names (and at least 2)."""
        from infoflow_smt.lang import trees
        tree = trees.comparison_tree(self)
        need = 2
        for _, d in tree.nodes(data=True):
            if d["kind"] == "fixed":
                need = max(need, d["position"].position + 1)
            if d["kind"] == "kth":
                need = max(need, d["k"] + 1)
        for g in tree.graph["groups"].values():
            for leaf in trees.walk(g.body):
                if isinstance(leaf, Content) and isinstance(leaf.index, OffsetIndex):
                    need = max(need, abs(leaf.index.offset) + 2)
        return need

    def work(self, length: int, input_dim: int = 1) -> float:
        """Index tuples one evaluation visits per input of ``length`` with tokens of ``input_dim`` numbers
        (``evaluate.work``: the token dimension decides which tables fit in memory)."""
        if (length, input_dim) not in self._work:
            once = work(self._evaluated, length, input_dim)  # per answering position, for every position
            self._work[(length, input_dim)] = once * length if self.per_position else once
        return self._work[(length, input_dim)]

    @cached_property
    def _work(self) -> dict[tuple[int, int], float]:
        return {}

    @cached_property
    def _evaluated(self) -> Expr:
        return nested(self.expr)

    @cached_property
    def reads_tokens_as_numbers(self) -> bool:
        """Whether a selection compares tokens themselves (``max(x[t] for t in T)``): scalar tokens only."""
        return reads_tokens_as_numbers(self.expr)

    @property
    def token_dim(self) -> int:
        """The token dimension asked when none is given (``input_dim=None``; the CLI's ``--input-dim``):
        1 when a selection compares tokens themselves (they must be numbers), else 2, the least in which
        tokens are vectors (dot products, bilinear forms) rather than numbers."""
        return 1 if self.reads_tokens_as_numbers else 2

    # ---- measures, computed by trees (imported lazily: it needs sympy and networkx) ----------
    @property
    def comparison_order(self) -> int:
        """The most index variables one comparison must see at once (``β'``)."""
        from infoflow_smt.lang import trees
        return trees.comparison_order(self)

    @property
    def comparison_dimension(self) -> int:
        """The most distinct selections made at one location in one stage (``β1``)."""
        from infoflow_smt.lang import trees
        return trees.comparison_dimension(self)

    @property
    def comparison_number(self) -> sympy.Expr:
        """How many index tuples the target compares, a polynomial in ``T``."""
        from infoflow_smt.lang import trees
        return trees.comparison_number(self)

    @property
    def depth(self) -> int:
        """The longest chain of dependent selections."""
        from infoflow_smt.lang import trees
        return trees.depth(self)

    @property
    def needs_positional(self) -> bool:
        """Whether the target tells positions apart (fixed positions, offsets, subsets, ranges)."""
        from infoflow_smt.lang import trees
        return trees.needs_positional(self)

    def tree(self, order: Mapping[str, tuple[str, ...]] | None = None) -> nx.DiGraph:
        """The comparison tree for a variable order per joint group (``trees.comparison_tree``): a copy of
        its own, so that changing it cannot change a later measure or decision (the solver and the measures
        share one cached tree per target and order)."""
        import copy

        from infoflow_smt.lang import trees
        return copy.deepcopy(trees.comparison_tree(self, order))


def parse_target(text: str, *, seed: int = 0, name: str | None = None) -> Target:
    """Parse target text (never executed) into a ``Target``; raise ``InvalidSpecError`` listing all problems.

    >>> parse_target("max(f1(x[t]) for t in T)", seed=3).seed
    3
    """
    if not isinstance(text, str):
        raise InvalidSpecError([Problem(f"target text must be a str, got {type(text).__name__}")], "target")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise InvalidSpecError([Problem(f"seed must be an integer, got {seed!r}")], subject="target")
    if name is not None and not isinstance(name, str):
        raise InvalidSpecError([Problem(f"name must be a str or None, got {type(name).__name__}")], "target")
    expr = parse_target_expr(text)
    return Target(expr=expr, text=to_text(expr), name=name, seed=int(seed))
