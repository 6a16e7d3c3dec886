"""What one position computes, on one input, from the contents it holds and the selections it knows.

A position holds the contents of a set of positions and knows a set of facts (``ground_facts``): "a position
holds everything computable from the contents in its set, and the selections it made or was handed" (model.md,
section 2). A ``Knower`` evaluates any expression of the target language from that alone, or answers None:

* ``x[q]`` needs ``q`` held; an offset or a fixed position needs positional encoding to be told apart, except
  the position's own token (``x[T]`` at position ``T``); an offset outside the sequence reads the zero padding.
* a selection is known when its fact is known and the position computes the reads of its query side (so it
  knows which selection it holds: a fact equal to the one asked on this input by chance is not enough), or when
  the position holds every candidate and every score
  (it makes the selection itself; without positional encoding only over all positions, the one range it can
  tell apart); its value is then its score at the winner, and its index a number only with positional encoding.
* a joint reduction is known through any of its single-variable spellings (``score_forms.forms``).
* a sum or mean is known from every term, or through its linear parts (``score_forms.linear_parts``) from the
  averages it knows.

A reduction with no candidate at a binding has no value there: ``EMPTY``, which a score reading it keeps (a
position that knows its range is empty ranks itself out), and which ``min(a, b)`` of two values passes over.
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from infoflow_smt.lang.expr import (
    UNION_FUNCTIONS,
    AllPositions,
    BinOp,
    Call,
    Content,
    Expr,
    Neg,
    Num,
    OffsetIndex,
    Param,
    Reduce,
    ReduceKind,
    VarIndex,
    free_variables,
)
from infoflow_smt.verify import score_forms
from infoflow_smt.verify.ground_facts import Choice, Ground, bound

EMPTY = "empty"   # the value of a reduction over no candidate
_LARGEST = (ReduceKind.MAX, ReduceKind.ARGMAX, ReduceKind.KTH_LARGEST)
free = functools.lru_cache(maxsize=1 << 16)(free_variables)
_linear = functools.lru_cache(maxsize=1 << 12)(score_forms.linear_parts)


@dataclass(frozen=True)
class Holding:
    """What one position holds after a layer: a bit per position ``1..T`` held, a bit per fact known."""

    positions: int = 0
    facts: int = 0

    def holds(self, position: int) -> bool:
        return bool(self.positions >> position & 1)

    def knows(self, fact: int) -> bool:
        return bool(self.facts >> fact & 1)

    def __or__(self, other: Holding) -> Holding:
        return Holding(self.positions | other.positions, self.facts | other.facts)

    def covers(self, other: Holding) -> bool:
        return not (other.positions & ~self.positions or other.facts & ~self.facts)

    def with_fact(self, fact: int) -> Holding:
        return Holding(self.positions, self.facts | 1 << fact)


def own(position: int) -> Holding:
    """An input position before the first layer: its own token."""
    return Holding(1 << position)


class Knower:
    """The values one position at ``position`` (``T + 1``: the output token) computes from ``holding``."""

    def __init__(self, ground: Ground, holding: Holding, position: int, *, positional: bool, causal: bool = False):
        self.ground, self.holding, self.position = ground, holding, position
        self.positional, self.causal = positional, causal
        self._memo: dict = {}

    def value(self, e: Expr, env: Mapping[str, int]):
        """The value of ``e`` at the binding ``env``: a number, a d-vector, ``EMPTY``, or None (not computable)."""
        names, visit = self.ground.reads(e)
        key = (id(e),) + tuple(env[n] for n in names)
        if key not in self._memo:
            if any(not 1 <= key[i] <= self.ground.seq_len for i in range(1, len(key))):
                self._memo[key] = None   # a variable played by the output token, which has no token
            else:
                self._memo[key] = getattr(self, visit)(e, env)
        return self._memo[key]

    def visit_Num(self, e: Num, env):
        return e.value

    def visit_Param(self, e: Param, env):
        return self.ground.realization.vector(e.name, self.ground.dim)

    def visit_Neg(self, e: Neg, env):
        v = self.value(e.operand, env)
        return v if v is None or v is EMPTY else -v

    def visit_BinOp(self, e: BinOp, env):
        a, b = self.value(e.left, env), self.value(e.right, env)
        if a is None or b is None:
            return None
        if a is EMPTY or b is EMPTY:
            return EMPTY
        with np.errstate(all="ignore"):
            return {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power}[e.op](a, b)

    def visit_Call(self, e: Call, env):
        given = e.args[1:] if e.name == "bilinear" else e.args
        args = [self.value(a, env) for a in given]
        if any(a is None for a in args):
            return None
        if e.name in UNION_FUNCTIONS:   # the better of two values, either of which may not exist
            kept = [a for a in args if a is not EMPTY]
            return EMPTY if not kept else (min if e.name == "min" else max)(kept)
        if any(a is EMPTY for a in args):
            return EMPTY
        if e.name == "dot":
            return float(np.sum(args[0] * args[1]))
        if e.name == "norm":
            return float(np.sqrt(np.sum(args[0] ** 2)))
        if e.name == "bilinear":
            matrix = self.ground.realization.matrix(e.args[0].name, self.ground.dim)
            return float(np.sum(args[0] * (matrix @ args[1])))
        inputs = np.concatenate([np.atleast_1d(np.asarray(a, dtype=float)) for a in args])
        return float(self.ground.realization.function(e.name, inputs.shape[0])(inputs))

    def visit_Content(self, e: Content, env):
        index = e.index
        if isinstance(index, Reduce):
            q = self.winner(index, env)
        elif isinstance(index, VarIndex):
            q = env[index.name]
        elif isinstance(index, OffsetIndex):
            q = env[index.name] + index.offset if self.positional else None
            if q is not None and not 1 <= q <= self.ground.seq_len:
                return np.zeros(self.ground.dim)   # padding, which positional encoding tells apart
        else:
            q = index.resolve(self.ground.seq_len)
            q = q if self.positional or q == self.position else None
        if q is None or q is EMPTY:
            return q
        return self.ground.X[q - 1] if self.holding.holds(q) else None

    def visit_Reduce(self, e: Reduce, env):
        if len(e.bindings) > 1:
            for form in score_forms.forms(e, self.causal):
                found = self.value(form, env)
                if found is not None:
                    return found
            return None
        if e.kind in (ReduceKind.SUM, ReduceKind.MEAN):
            return self._sum(e, env)
        choice = self.choice(e, env)
        if choice is None or choice is EMPTY:
            return choice
        if not self.knows(e, choice, env):
            return None
        if e.kind.returns_index:
            return float(choice.winner) if self.positional else None
        return self.value(e.body, dict(env, **{e.variables[0]: choice.winner}))

    def choice(self, e: Reduce, env) -> Choice | None | str:
        """The ground selection ``e`` makes at ``env`` (known or not), ``EMPTY`` where it has no candidate."""
        var, names = e.variables[0], self.ground.reads(e)[0]
        if names and id(e) not in self.ground.prefetched:   # its choice at every binding, in one evaluation
            self.ground.prefetched[id(e)] = e
            bindings = [dict(zip(names, b)) for b in itertools.product(range(1, self.ground.seq_len + 1),
                                                                       repeat=len(names))]
            requests = [(self.ground.positions(e.bindings[0].domain, b), bound(b, names)) for b in bindings]
            self.ground.prefetch(e.body, var, [r for r in requests if r[0]], e.kind in _LARGEST, e.k or 1)
        candidates = self.ground.positions(e.bindings[0].domain, env)
        if not candidates:
            return EMPTY
        return self.ground.choice(e.body, var, candidates, bound(env, names), e.kind in _LARGEST, e.k or 1)

    def knows(self, e: Reduce, choice: Choice, env) -> bool:
        """Whether the position knows the selection ``choice``: its fact, with the reads of its query side (it
        knows which selection it holds, not only a winner that equals it on this input), or every candidate's
        score."""
        var = e.variables[0]
        if self.holding.knows(choice.fact) and all(
                self.value(atom, env) is not None for atom in score_forms.atoms(e.body) if var not in free(atom)):
            return True
        if not (self.positional or isinstance(e.bindings[0].domain, AllPositions)):
            return False
        return all(self.value(e.body, dict(env, **{var: c})) is not None for c in choice.candidates)

    def winner(self, e: Reduce, env):
        """The winner of the selection ``e`` at ``env`` if the position knows it (else None; ``EMPTY``)."""
        choice = self.choice(e, env)
        if choice is None or choice is EMPTY:
            return choice
        return choice.winner if self.knows(e, choice, env) else None

    def _sum(self, e: Reduce, env):
        var = e.variables[0]
        candidates = self.ground.positions(e.bindings[0].domain, env)
        if not candidates:
            return EMPTY
        terms = [self.value(e.body, dict(env, **{var: c})) for c in candidates]
        if all(t is not None and t is not EMPTY for t in terms):
            total = np.sum(np.array(terms, dtype=float), axis=0)
            return total / len(candidates) if e.kind is ReduceKind.MEAN else total
        return self._averaged(e, env, candidates)

    def _averaged(self, e: Reduce, env, candidates):
        var, scale = e.variables[0], 1 if e.kind is ReduceKind.MEAN else len(candidates)
        parts = _linear(e.body, var)
        if parts is None:
            return None
        total = 0.0
        for part in parts:
            coefficient = None if part.coefficient is None else self.value(part.coefficient, env)
            if part.coefficient is not None and (coefficient is None or coefficient is EMPTY):
                return None
            if part.shape is score_forms.Shape.CONSTANT:
                total = total + part.sign * scale * coefficient
                continue
            known = self.ground.average(part.statistic, var, candidates)
            if known is None or not self.holding.knows(known[0]):
                return None
            total = total + part.sign * scale * _combined(part, coefficient, known[1], self.ground)
        return total


def _combined(part: score_forms.LinearPart, coefficient, mean, ground: Ground):
    shape = part.shape
    if shape is score_forms.Shape.VALUE:
        return mean
    if shape is score_forms.Shape.DOT:
        return float(np.sum(coefficient * mean))
    if shape is score_forms.Shape.SCALED:
        return coefficient * mean
    matrix = ground.realization.matrix(part.matrix.name, ground.dim)
    left, right = (mean, coefficient) if part.statistic_left else (coefficient, mean)
    return float(np.sum(left * (matrix @ right)))
