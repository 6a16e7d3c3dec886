"""Targets under a causal mask: which candidates an input position sees, and the target the model decides.

Under a causal mask (``Architecture(causal=True)``, docs/model.md, "Causal mask") an input position ``p``
attends to positions ``q <= p`` only; the output token comes last and sees every position. So a selection
made at ``p`` must have every candidate of its binding at or before ``p``: a range that ends at the
variable ``p`` plays (``for t in range(1, s + 1)`` at ``s``: ``sees_candidates``). The mask itself tells
those candidates from the rest: ``range(1, s + 1)`` needs no positional encoding (``masked_prefix``).

A joint ``min``/``max`` over a pair of all positions (or of one prefix, ``range(1, o+1)``) is reached from
the later member of each pair (``causal_form``): ``min(g(s, t) for s in T for t in T)`` is
``min(min(min(g(s, t) for t in range(1, s+1)), min(g(t, s) for t in range(1, s+1))) for s in T)``: at each
``s`` the smaller of the pairs it closes from either side (``expr.UNION_FUNCTIONS``: a call the parser never makes), a value ``s`` computes once it knows both, so
that one selection at the output finds the minimum. When ``g(s, t) = g(t, s)`` the two sides are one
selection, and the joint ``min(g(s, t) for s in T for t in range(1, s+1))`` is the target. What the model
cannot yet state exactly under the mask is refused, one line per reduction (``unsupported``): joint
reductions of three or more variables (each variable may be the latest: one piece per latest variable) and
pairs over other domains. A sum or mean over a prefix (``range(1, s+1)``) is what a causal averaging head at
``s`` computes (a mean; a sum where the position knows its index, with positional encoding).

>>> from infoflow_smt.lang.target import parse_target
>>> causal_form(parse_target("min(dot(x[s], x[t]) for s in T for t in T)")).text
'min(dot(x[s], x[t]) for s in T for t in range(1, s+1))'
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.normal_form import normalize
from infoflow_smt.lang.target import Target
from infoflow_smt.lang.trees import SELECTION_KINDS, comparison_tree

_JOINT = (ex.ReduceKind.MIN, ex.ReduceKind.MAX)
sees_candidates, masked_prefix = ex.sees_candidates, ex.masked_prefix


def causal_form(target: Target) -> Target:
    """``target`` with every joint min/max over a symmetric pair of all positions written over its ordered
    half (module docstring); the same function, the spelling whose selections an input position can make."""
    return _causal_form(target)


@lru_cache(maxsize=256)
def _causal_form(target: Target) -> Target:
    rewritten = normalize(_ordered_halves(target.normal_form))
    if rewritten == target.normal_form:
        return target
    return Target(expr=rewritten, text=to_text(rewritten), name=target.name, seed=target.seed)


def _ordered_halves(e: ex.Expr) -> ex.Expr:
    e = ex.map_children(e, _ordered_halves)
    if isinstance(e, ex.Reduce) and e.kind in _JOINT and len(e.bindings) == 2 and _one_prefix(e):
        s, t = e.variables
        bindings = (e.bindings[0], ex.Binding(t, ex.Range(ex.FixedIndex(1), ex.OffsetIndex(s, 1))))
        if _symmetric(e):
            return ex.Reduce(e.kind, e.body, bindings)
        # at each s, the better of its own half and the pairs (t, s) with t after s, seen from s as (s, t)
        halves = tuple(ex.Reduce(e.kind, body, bindings[1:]) for body in (e.body, ex.rename(e.body, {s: t, t: s})))
        return ex.Reduce(e.kind, ex.Call(e.kind.value, halves), bindings[:1])
    return e


def _one_prefix(pair: ex.Reduce) -> bool:
    """Whether both variables of ``pair`` range over one prefix of the sequence, bounded by neither of them
    (``T``; ``range(1, o+1)``, the sequence cut at the answering position): the later member of each pair is in
    it, and the earlier is in ``range(1, later+1)``, so the ordered halves cover every pair."""
    first, second = (b.domain for b in pair.bindings)
    prefix = isinstance(first, ex.AllPositions) or (isinstance(first, ex.Range) and first.start == ex.FixedIndex(1))
    return first == second and prefix and not ex.domain_variables(first) & set(pair.variables)


def _symmetric(pair: ex.Reduce) -> bool:
    """Whether the pair's score is the same function with its two variables swapped."""
    s, t = pair.variables
    return normalize(pair.body) == normalize(ex.rename(pair.body, {s: t, t: s}))


def unsupported(target: Target) -> list[str]:
    """One line per reduction of ``causal_form(target)`` the model cannot yet decide exactly under a mask."""
    return [f"under a causal mask, {to_text(r)} is not supported yet: {why}"
            for r, why in _problems(causal_form(target).normal_form)]


def check_supported(target: Target) -> Target:
    """``causal_form(target)``, or ``InvalidSpecError`` naming every reduction ``unsupported`` lists."""
    problems = unsupported(target)
    if problems:
        raise InvalidSpecError([Problem(p) for p in problems], subject="causal target")
    return dataclasses.replace(causal_form(target), prefixes=True)


def binds_nothing(target: Target) -> bool:
    """Whether ``target`` has a selection that binds no variable and no prefix form (under a mask: one no
    input position makes whole and no prefix collection brings, ``solver._Session.settled_under_mask``;
    ``trees.py``, "Prefix forms")."""
    tree = comparison_tree(dataclasses.replace(target, prefixes=True))
    return any(d["kind"] in SELECTION_KINDS and not d["bound"] and not d["hosted"] and n not in tree.graph["prefixes"]
               for n, d in tree.nodes(data=True))


def reads_after_answer(tree) -> list[str]:
    """The nodes of an answer at every position (``tree`` of a target naming ``o``) that read, at some binding,
    a position after the answering one: a fixed position after 1, a selection or aggregate made for no one over
    more than position 1, one made for a variable over candidates after that variable's position. Under the
    mask position ``o`` sees none of them, so no program computes such an answer at any cost."""
    after = []
    for node, d in tree.nodes(data=True):
        if d["kind"] == "fixed":
            if d["position"].from_end or d["position"].position > 1:
                after.append(node)
        elif d["kind"] != "output" and len(d["bound"]) <= 1 and not any(
                sees_candidates(d["domain"], v) for v in d["bound"] or (None,)):
            after.append(node)
    return after


def late_reads(target: Target) -> list[str]:
    """The reads ``x[...]`` of an answer at every position that are after the answering position ``o`` at some
    binding (``x[o+1]``, ``x[2]``, ``x[T]``, ``x[t]`` for ``t`` in ``T``, ``x[t+1]`` for ``t`` up to ``o``), in
    text: the largest position each can read, from its index and the domains of the variables it reads. Under
    the mask position ``o`` sees none of them: no program computes such an answer at any cost."""
    found: list[str] = []
    _late(target.normal_form, {ex.ANSWER: (ex.ANSWER, 0)}, found)
    return list(dict.fromkeys(found))


# the largest position a read or a variable reaches: (ANSWER, c) is o + c, ("", k) the fixed position k,
# None a position counted from T (after o at some o)
_Reach = tuple[str, int] | None


def _late(e: ex.Expr, reach: dict[str, _Reach], found: list[str]) -> None:
    if isinstance(e, ex.Reduce):
        inner = dict(reach)
        for b in e.bindings:  # a later clause may read an earlier one's variable
            inner[b.var] = _domain_reach(b.domain, inner)
        _late(e.body, inner, found)
        return
    if isinstance(e, ex.Content):
        if isinstance(e.index, ex.Reduce):  # the winner is one of the selection's candidates
            selection = e.index
            inner = dict(reach)
            for b in selection.bindings:
                inner[b.var] = _domain_reach(b.domain, inner)
            if _after(inner[selection.bindings[0].var]):
                found.append(to_text(e))
        elif _after(_index_reach(e.index, reach)):
            found.append(to_text(e))
    for child in ex.children(e):
        _late(child, reach, found)


def _index_reach(index, reach: dict[str, _Reach]) -> _Reach:
    if isinstance(index, ex.FixedIndex):
        return None if index.from_end else ("", index.position)
    return _shift(reach.get(index.name), index.offset if isinstance(index, ex.OffsetIndex) else 0)


def _domain_reach(domain: ex.Domain, reach: dict[str, _Reach]) -> _Reach:
    if not isinstance(domain, ex.Range):
        return None  # every position, or a subset of all of them
    return _shift(_index_reach(domain.stop, reach), -1)  # a half-open range stops before its bound


def _shift(where: _Reach, by: int) -> _Reach:
    return None if where is None else (where[0], where[1] + by)


def _after(where: _Reach) -> bool:
    """Whether a read reaching ``where`` is after ``o`` at some ``o`` (at ``o = 1`` for a fixed position)."""
    return where is None or where[1] > (0 if where[0] == ex.ANSWER else 1)


def _problems(e: ex.Expr):
    if isinstance(e, ex.Reduce):
        why = _why(e)
        if why:
            yield e, why
    for child in ex.children(e):
        yield from _problems(child)


def _why(r: ex.Reduce) -> str | None:
    if r.kind in _JOINT and len(r.bindings) >= 3:
        return "a joint min/max of three or more variables (any of them may be the latest position)"
    if r.kind in _JOINT and len(r.bindings) == 2:
        s, dt = r.bindings[0].var, r.bindings[1].domain
        if sees_candidates(dt, s):
            return None
        return "a pair over these domains (write the later variable first, the other in range(1, s+1))"
    return None
