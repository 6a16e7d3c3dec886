"""The spellings in which a position can make a target's reduction, read off the target's own text.

Each rewrite keeps the value of the reduction on every input (docs/model.md, section 2, "Who reads what"):

* ``forms``: a joint ``min``/``max`` over several variables is nested single-variable selections, in any
  variable order that keeps a range's bound outside the variable it bounds; each additive term sits at the
  innermost variable it reads, and a term that reads none leaves the reduction (a constant does not change
  the winner). Under a causal mask a pair over all positions is also reached from its later member:
  ``min_{s,t} g(s, t) = min_s min(min_{t<=s} g(s, t), min_{t<=s} g(t, s))``.
* ``reindexed``: a selection over ``t`` reading ``x[t+c]`` is the selection over ``u = t + c`` reading
  ``x[u]``, its range shifted by ``c`` (the winner moves by ``c``, the order of the candidates does not).
* ``linear_parts``: a sum or mean is a sum of terms, each a constant of the reduction, a per-position value,
  or a per-position vector (or number) met by a constant through ``dot``, ``bilinear`` or ``*``: what one
  averaging head makes of it (model.md, "Linear statistics").
* ``atoms``: the reads of an expression, the maximal parts that read the sequence (a token, a selection).

>>> from infoflow_smt.lang.language import parse_target_expr, to_text
>>> [to_text(f) for f in forms(parse_target_expr("min(dot(x[s], x[t]) + f1(x[s]) for s in T for t in T)"))]
['min(f1(x[s]) + min(dot(x[s], x[t]) for t in T) for s in T)', 'min(min(dot(x[s], x[t]) + f1(x[s]) for s in T) for t in T)']
"""
from __future__ import annotations

import enum
import functools
import itertools
from dataclasses import dataclass

from infoflow_smt.lang.expr import (
    AllPositions,
    Binding,
    BinOp,
    Call,
    Content,
    Domain,
    Expr,
    FixedIndex,
    Neg,
    Num,
    OffsetIndex,
    Param,
    Range,
    Reduce,
    ReduceKind,
    VarIndex,
    children,
    domain_variables,
    free_variables,
    map_children,
    rename,
)


def atoms(e: Expr) -> tuple[Expr, ...]:
    """The maximal sub-expressions of ``e`` that read the sequence (contents and reductions), each once."""
    if isinstance(e, (Content, Reduce)):
        return (e,)
    return tuple(dict.fromkeys(a for c in children(e) for a in atoms(c)))


def signed_terms(e: Expr, sign: int = 1) -> list[tuple[int, Expr]]:
    """``e`` as a signed sum of terms: ``a - (b + c)`` -> ``[(1, a), (-1, b), (-1, c)]``."""
    if isinstance(e, BinOp) and e.op in "+-":
        return signed_terms(e.left, sign) + signed_terms(e.right, sign if e.op == "+" else -sign)
    if isinstance(e, Neg):
        return signed_terms(e.operand, -sign)
    return [(sign, e)]


def joined(terms: list[tuple[int, Expr]]) -> Expr:
    """The inverse of ``signed_terms`` (an empty sum is 0)."""
    result: Expr | None = None
    for sign, term in terms:
        if result is None:
            result = Neg(term) if sign < 0 else term
        else:
            result = BinOp("+" if sign > 0 else "-", result, term)
    return Num(0.0) if result is None else result


@functools.lru_cache(maxsize=4096)
def forms(r: Reduce, causal: bool = False) -> tuple[Expr, ...]:
    """The single-variable spellings of a joint reduction (none for one variable, or for ``kth_largest``,
    which only a position holding every candidate computes)."""
    if len(r.bindings) < 2 or r.kind is ReduceKind.KTH_LARGEST:
        return ()
    found = [_nested(r, order) for order in itertools.permutations(range(len(r.bindings))) if _admissible(r, order)]
    if causal and r.kind in (ReduceKind.MIN, ReduceKind.MAX):
        found.append(_later_member(r))
    return tuple(dict.fromkeys(f for f in found if f is not None))


def _admissible(r: Reduce, order: tuple[int, ...]) -> bool:
    if r.kind in (ReduceKind.SUM, ReduceKind.MEAN) and any(domain_variables(b.domain) for b in r.bindings):
        return False
    names = [r.bindings[i].var for i in order]
    return all(not (domain_variables(r.bindings[i].domain) & set(names[k:])) for k, i in enumerate(order))


def _nested(r: Reduce, order: tuple[int, ...]) -> Expr | None:
    bindings = [r.bindings[i] for i in order]
    if r.kind in (ReduceKind.SUM, ReduceKind.MEAN):  # sums and means over product domains nest as they are
        inner: Expr = r.body
        for b in reversed(bindings):
            inner = Reduce(r.kind, inner, (b,))
        return inner
    names = [b.var for b in bindings]
    levels: list[list[tuple[int, Expr]]] = [[] for _ in range(len(names) + 1)]
    for sign, term in signed_terms(r.body):
        reads = [names.index(v) for v in free_variables(term) if v in names]
        levels[max(reads) + 1 if reads else 0].append((sign, term))
    inner = None
    for i in range(len(names) - 1, -1, -1):
        parts = levels[i + 1] + ([(1, inner)] if inner is not None else [])
        inner = Reduce(r.kind, joined(parts), (bindings[i],))
    return joined(levels[0] + [(1, inner)])


def _later_member(r: Reduce) -> Expr | None:
    """Under a causal mask: a pair over all positions read from its later member (two variables only)."""
    if len(r.bindings) != 2 or not all(isinstance(b.domain, AllPositions) for b in r.bindings):
        return None
    s, t = r.variables
    prefix = (Binding(t, Range(FixedIndex(1), OffsetIndex(s, 1))),)
    both = (Reduce(r.kind, r.body, prefix), Reduce(r.kind, rename(r.body, {s: t, t: s}), prefix))
    return Reduce(r.kind, Call(r.kind.value, both), (Binding(s, AllPositions()),))


# ---- re-indexing a selection by an offset ----------------------------------------------------------------
def reindexed(body: Expr, var: str, domain: Domain, shift: int) -> tuple[Expr, Domain] | None:
    """The selection over ``u = var + shift`` equal to the one over ``var``: reads of ``var`` move by
    ``-shift`` and the range by ``+shift``. None where the shifted range would leave ``1..T`` (the clipped
    range would lose candidates) or is not a fixed range."""
    if shift == 0:
        return body, domain
    if isinstance(domain, AllPositions):
        domain = Range(FixedIndex(1), FixedIndex(-1, True))
    if not isinstance(domain, Range) or domain_variables(domain):
        return None
    start, stop = (_moved(b, shift) for b in (domain.start, domain.stop))
    low_ok = start.from_end or start.position >= 1
    high_ok = stop.position >= -1 if stop.from_end else True
    if not (low_ok and high_ok):
        return None
    return _shift_reads(body, var, -shift), Range(start, stop)


def _moved(bound: FixedIndex, shift: int) -> FixedIndex:
    return FixedIndex(bound.position - shift, True) if bound.from_end else FixedIndex(bound.position + shift)


def _shift_reads(e: Expr, var: str, by: int) -> Expr:
    if isinstance(e, Content) and isinstance(e.index, (VarIndex, OffsetIndex)) and e.index.name == var:
        offset = (e.index.offset if isinstance(e.index, OffsetIndex) else 0) + by
        return Content(OffsetIndex(var, offset) if offset else VarIndex(var))
    if isinstance(e, Reduce):
        if var in e.variables:
            return e
        bindings = tuple(Binding(b.var, _shift_domain(b.domain, var, by)) for b in e.bindings)
        return Reduce(e.kind, _shift_reads(e.body, var, by), bindings, e.k)
    return map_children(e, lambda c: _shift_reads(c, var, by))


def _shift_domain(domain: Domain, var: str, by: int) -> Domain:
    if var not in domain_variables(domain):
        return domain

    def bound(b):
        if isinstance(b, (VarIndex, OffsetIndex)) and b.name == var:
            offset = (b.offset if isinstance(b, OffsetIndex) else 0) + by
            return OffsetIndex(var, offset) if offset else VarIndex(var)
        return b

    return Range(bound(domain.start), bound(domain.stop))


def key_offsets(body: Expr, var: str) -> tuple[int, ...]:
    """The offsets ``c`` of the reads ``x[var + c]`` in ``body`` outside nested reductions."""
    found = {a.index.offset for a in atoms(body)
             if isinstance(a, Content) and isinstance(a.index, OffsetIndex) and a.index.name == var}
    return tuple(sorted(found))


# ---- linear statistics -------------------------------------------------------------------------------------
class Shape(enum.Enum):
    CONSTANT = "a term that reads no variable of the sum"
    VALUE = "a per-position value"
    DOT = "dot of a constant and a per-position vector"
    BILINEAR = "bilinear form of a constant and a per-position vector"
    SCALED = "a constant times a per-position value"


@dataclass(frozen=True)
class LinearPart:
    """One term of a sum's body: ``sign * combine(coefficient, statistic)``; the statistic is read at the
    summed variable alone, so one averaging head over the range learns its mean."""

    sign: int
    shape: Shape
    coefficient: Expr | None = None
    statistic: Expr | None = None
    matrix: Param | None = None
    statistic_left: bool = False   # BILINEAR: the statistic is the form's left argument


def linear_parts(body: Expr, var: str) -> tuple[LinearPart, ...] | None:
    """``body`` as linear parts over ``var``; None where some term is not linear in a per-position value."""
    parts = []
    for sign, term in signed_terms(body):
        part = _linear(sign, term, var)
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def _only(e: Expr, var: str) -> bool:
    return free_variables(e) == {var}


def _linear(sign: int, term: Expr, var: str) -> LinearPart | None:
    if var not in free_variables(term):
        return LinearPart(sign, Shape.CONSTANT, coefficient=term)
    if _only(term, var):
        return LinearPart(sign, Shape.VALUE, statistic=term)
    if isinstance(term, Call) and term.name == "dot" and len(term.args) == 2:
        a, b = term.args
        for const, stat in ((a, b), (b, a)):
            if var not in free_variables(const) and _only(stat, var):
                return LinearPart(sign, Shape.DOT, coefficient=const, statistic=stat)
    if isinstance(term, Call) and term.name == "bilinear" and len(term.args) == 3:
        matrix, a, b = term.args
        if var not in free_variables(a) and _only(b, var):
            return LinearPart(sign, Shape.BILINEAR, coefficient=a, statistic=b, matrix=matrix)
        if var not in free_variables(b) and _only(a, var):
            return LinearPart(sign, Shape.BILINEAR, coefficient=b, statistic=a, matrix=matrix, statistic_left=True)
    if isinstance(term, BinOp) and term.op == "*":
        for const, stat in ((term.left, term.right), (term.right, term.left)):
            if var not in free_variables(const) and _only(stat, var):
                return LinearPart(sign, Shape.SCALED, coefficient=const, statistic=stat)
    return None
