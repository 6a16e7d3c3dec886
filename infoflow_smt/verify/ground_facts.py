"""The facts of one input: every selection and average a position may come to know, each by its identity.

A position *knows* a selection when it knows its winner (model.md, section 2: "the selections it made or was
handed"). Two selections are the same fact when, on this input, they ask the same rank (top-1 or the k-th) of
candidates laid out alike (counted from the first candidate) whose scores agree up to a positive scale and a
shift (best first: a ``min`` is the ``max`` of the negated score). So two spellings of one selection
(``-max(-f)`` and ``min(f)``; ``f`` and ``2 f + c``, a term that does not read the candidate hoisted out), the
same selection hosted at several positions, and a selection re-indexed by an offset (``argmax_t f(x[t+1])`` over
``1..T-1`` and ``argmax_u f(x[u])`` over ``2..T``, whose winners differ by the offset a position with positional
encoding knows) are one fact, while two different selections that merely rank their candidates alike (with
``d = 2`` the order of ``dot(x[t], q)`` depends on the direction of ``q`` alone) are not. An average is a fact
by its range and the values averaged.

Scores are computed by the target's own numeric definition (``evaluate.evaluate_expr``), so a fact is what
the target means by that selection. Ties go to the first candidate of the range, as ``Target.evaluate`` has it.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang.evaluate import evaluate_expr
from infoflow_smt.lang.expr import Domain, Expr, free_variables
from infoflow_smt.lang.realization import Realization

Env = tuple[tuple[str, int], ...]   # index variables bound to 1-based positions, sorted by name
_DIGITS = 9          # scores are ranked rounded, so that two spellings of one score rank alike
_SHAPE_DIGITS = 7    # and compared, scaled to [0, 1], to this many decimals


@dataclass(frozen=True)
class Choice:
    """A selection made on one input: its fact, its winner, and the candidates it ranked (those whose score
    exists: a candidate whose score reads an empty range has none)."""

    fact: int
    winner: int
    candidates: tuple[int, ...]


def bound(env: Mapping[str, int], names) -> Env:
    """``env`` restricted to ``names``, as the key a fact is looked up by."""
    return tuple(sorted((n, int(env[n])) for n in names if n in env))


class Ground:
    """One input ``X`` (shape ``(T, d)``) and the facts interned on it (ids are small integers, so that what a
    position knows is a bit set)."""

    def __init__(self, X: np.ndarray, realization: Realization):
        self.X = np.asarray(X, dtype=float)
        self.seq_len, self.dim = self.X.shape
        self.realization = realization
        self._ids: dict[tuple, int] = {}
        self._choices: dict[tuple, Choice | None] = {}
        self._averages: dict[tuple, tuple[int, np.ndarray] | None] = {}
        self._positions: dict[tuple, tuple[int, ...]] = {}
        self._reads: dict[int, tuple[tuple[str, ...], str, Expr]] = {}
        self.prefetched: dict[int, Expr] = {}   # the reductions whose choices are made at every binding

    def reads(self, e: Expr) -> tuple[tuple[str, ...], str]:
        """The variables ``e`` reads (sorted) and the name of its kind's visitor, kept by the object's identity
        (a speed-up: an expression's own hash walks Python code; the expression is kept alive here, so its
        identity is not reused while this input lives)."""
        found = self._reads.get(id(e))
        if found is None:
            found = self._reads[id(e)] = (tuple(sorted(free_variables(e))), f"visit_{type(e).__name__}", e)
        return found[0], found[1]

    def fact(self, key: tuple) -> int:
        """The id of the fact ``key`` (a new one the first time)."""
        return self._ids.setdefault(key, len(self._ids))

    def positions(self, domain: Domain, env: Mapping[str, int] | Env = ()) -> tuple[int, ...]:
        """The positions ``domain`` ranges over at the binding ``env``."""
        env = dict(env)
        key = (domain, bound(env, env))
        if key not in self._positions:
            found = self.realization.domain_positions(domain, self.seq_len, env)
            self._positions[key] = tuple(int(p) for p in found)
        return self._positions[key]

    def values(self, expr: Expr, rows: Sequence[Mapping[str, int]]) -> list[np.ndarray | None]:
        """``expr`` at each binding of ``rows`` (None where it reads an empty range there)."""
        if not rows:
            return []
        names = sorted(rows[0])
        env = {n: np.array([row[n] for row in rows], dtype=np.int64) for n in names}
        batch = np.broadcast_to(self.X, (len(rows),) + self.X.shape)
        try:
            return list(evaluate_expr(expr, batch, self.realization, env))
        except (InvalidSpecError, IndexError):   # an empty range, or a read past the sequence
            if len(rows) == 1:
                return [None]
            return [v for row in rows for v in self.values(expr, [row])]

    def choice(self, body: Expr, var: str, candidates: tuple[int, ...], env: Env, largest: bool = True,
               k: int = 1) -> Choice | None:
        """The selection of ``body`` over ``var`` among ``candidates`` (ascending), the other variables bound by
        ``env``; the argmax (``largest``) or the argmin, or the ``k``-th largest. None: no candidate, or fewer
        than ``k``, has a score."""
        key = (body, var, candidates, env, largest, k)
        if key not in self._choices:
            self._choices[key] = self._choose(body, var, candidates, env, largest, k)
        return self._choices[key]

    def prefetch(self, body: Expr, var: str, requests: Sequence[tuple[tuple[int, ...], Env]], largest: bool = True,
                 k: int = 1) -> None:
        """Make the choices of ``requests`` (candidates, binding) at once: one evaluation of the score for all."""
        todo = list(dict.fromkeys(r for r in requests if (body, var, r[0], r[1], largest, k) not in self._choices))
        rows = [dict(env, **{var: c}) for candidates, env in todo for c in candidates]
        if len(todo) < 2 or len({tuple(sorted(row)) for row in rows}) > 1:
            return
        found = iter(self.values(body, rows))
        for candidates, env in todo:
            scores = [next(found) for _ in candidates]
            self._choices[(body, var, candidates, env, largest, k)] = self._ranked(candidates, scores, largest, k)

    def _choose(self, body, var, candidates, env, largest, k) -> Choice | None:
        rows = [dict(env, **{var: c}) for c in candidates]
        return self._ranked(candidates, self.values(body, rows), largest, k)

    def _ranked(self, candidates, values, largest, k) -> Choice | None:
        scored = [(c, v) for c, v in zip(candidates, values) if v is not None]
        if len(scored) < k:
            return None
        kept = tuple(c for c, _ in scored)
        score = np.array([float(np.ravel(v)[0]) for _, v in scored])
        score = score if largest else -score
        order = np.lexsort((np.arange(len(kept)), -score.round(_DIGITS)))
        spread = score.max() - score.min()
        shape = (score - score.min()) / spread if spread > 0 else np.zeros_like(score)
        key = ("selection", k, tuple(c - kept[0] for c in kept), tuple(shape.round(_SHAPE_DIGITS)))
        return Choice(self.fact(key), kept[order[k - 1]], kept)

    def average(self, statistic: Expr, var: str, candidates: tuple[int, ...]) -> tuple[int, np.ndarray] | None:
        """(the fact, the mean) of ``statistic`` read at each of ``candidates``; None if one has no value."""
        key = (statistic, var, candidates)
        if key not in self._averages:
            found = self.values(statistic, [{var: c} for c in candidates])
            if not candidates or any(v is None for v in found):
                self._averages[key] = None
            else:
                stacked = np.array([np.asarray(v, dtype=float) for v in found])
                fact = self.fact(("average", candidates, tuple(stacked.round(_DIGITS).ravel())))
                self._averages[key] = (fact, stacked.mean(axis=0))
        return self._averages[key]
