"""Hosts: one selection made in several places (docs/model.md, section 2, "One selection at several hosts").

A selection compares its candidates by a score; what the score reads on the selector's side is what its
*host* holds: the position playing its bound variable, or the winner of another selection whose token it
reads (``argmax_t dot(x[t-1], x[w])``, ``w = argmax_u ...``). Written as a function of its host, the host's
position standing as the variable ``@`` (``HOST``), it is a *hosted form*, the same function wherever it is
hosted. Two rules of the model (a retrieval copies what the winner held and knew) follow:

* **Same form, same selection.** Two selections whose hosted forms at their bound variables are equal (the
  same function: equal once normalized, up to the names of their variables, a ``max`` and an ``argmax`` of one
  score alike) are one selection at each position: a position that makes one knows the other; two that bind
  no variable are one selection everywhere. ``min_b dot(x[a], x[b])``, the inner selection of
  ``min(dot(x[a], x[b]) for a in T for b in T)``, is the reduction ``min(dot(x[a], x[b]) for b in T)`` written
  elsewhere in the same target.
* **Hosted at a winner.** A selection that reads the token of another selection's winner ``w`` is its hosted
  form made at ``w``. A position that retrieves ``w`` copies what ``w`` knew: if ``w`` had made that form for
  itself, the retriever knows the selection without making it (pointer doubling: a chain of one selection
  doubles per layer).

This module computes hosted forms on expressions; ``trees.py`` adds the forms a target needs at its winners
(and at theirs: a chain hosted at a winner's winner) to the comparison tree as *hosted groups*, whose nodes
bind ``@``, are read by no other node, and are made by input positions for themselves.

>>> from infoflow_smt.lang.language import parse_target_expr, to_text
>>> chain = parse_target_expr("argmax(dot(x[t-1], x[argmax(f1(x[u]) for u in T)]) for t in range(2, T+1))")
>>> [to_text(form) for _, form in winner_forms(chain, frozenset())]
['argmax(dot(x[t-1], x[@]) for t in range(2, T+1))']
"""
from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from functools import lru_cache

from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.normal_form import normalize

HOST = "@"   # the variable a hosted form's host plays: never a name of the target language


def variable_form(selection: ex.Reduce, bound: frozenset[str]) -> ex.Reduce | None:
    """``selection`` hosted at the position playing its one bound variable (None when it binds none or
    several: one position plays one variable)."""
    if len(bound) != 1:
        return None
    (variable,) = bound
    return ex.rename(selection, {variable: HOST})


def winner_forms(selection: ex.Reduce, bound: frozenset[str]) -> list[tuple[ex.Reduce, ex.Reduce]]:
    """Each selection ``w`` whose winner's token ``selection`` reads (``x[w]``), with ``selection`` hosted at
    that winner: every ``x[w]`` read as ``x[@]``. Only forms that are functions of their host alone (no
    other free variable) and whose reductions over ``@`` are single-variable (a chain of selections, each made
    by one position) are kept."""
    found = []
    for index in _selected_indices(selection):
        if not ex.free_variables(index) <= bound:
            continue  # it reads a variable of the selection itself: another winner for each candidate
        form = _hosted_at(selection, index)
        if ex.free_variables(form) == {HOST} and all(len(r.variables) == 1 for r in _reductions(form)
                                                     if HOST in ex.free_variables(r)):
            found.append((index, form))
    return found


def fixed_forms(selection: ex.Reduce, bound: frozenset[str]) -> list[tuple[ex.FixedIndex, ex.Reduce]]:
    """Each fixed position whose token ``selection`` reads, with ``selection`` hosted there: every ``x[P]`` read
    as ``x[@]`` (a selection that binds no variable: made by position ``P`` for itself, it is this one)."""
    if bound:
        return []
    found = []
    for position in sorted({e.index for e in _contents(selection) if isinstance(e.index, ex.FixedIndex)},
                           key=lambda q: (q.from_end, q.position)):
        form = _read_at_host(selection, position)
        if ex.free_variables(form) == {HOST}:
            found.append((position, form))
    return found


def _read_at_host(e: ex.Expr, position: ex.FixedIndex) -> ex.Expr:
    if isinstance(e, ex.Content) and e.index == position:
        return ex.Content(ex.VarIndex(HOST))
    return ex.map_children(e, lambda c: _read_at_host(c, position))


def _contents(e: ex.Expr) -> Iterator[ex.Content]:
    if isinstance(e, ex.Content):
        yield e
    for c in ex.children(e):
        yield from _contents(c)


def closure(selections: Iterable[tuple[ex.Reduce, frozenset[str]]]) -> tuple[ex.Reduce, ...]:
    """The hosted forms a set of selections needs at winner hosts, and the forms those need in turn (a form
    hosted at a winner reads, at ``@``, a chain whose own links are hosted at winners), one per function
    (``canonical``), in a fixed order."""
    found: dict[str, ex.Reduce] = {}
    todo = list(selections)
    while todo:
        selection, bound = todo.pop()
        for _, form in winner_forms(selection, bound):
            key = canonical(form)
            if key in found:
                continue
            found[key] = form
            todo += [(r, ex.free_variables(r)) for r in _reductions(form) if HOST in ex.free_variables(r)]
    return tuple(found[key] for key in sorted(found))


@lru_cache(maxsize=8192)
def canonical(selection: ex.Expr) -> str:
    """One text per selection: the normal form of the position it chooses (a ``min`` read as the ``argmin``
    of the same score: one selection, whether the target reads its value or its winner's token), with every
    reduction's variables named by their place (``v0``, ``v1``, ... in preorder), so that spellings that
    differ only in their names, a positive scale or a constant coincide."""
    chosen = selection
    if isinstance(selection, ex.Reduce) and selection.kind in _ARGUMENT:
        chosen = ex.Reduce(_ARGUMENT[selection.kind], selection.body, selection.bindings, selection.k)
    return to_text(_named_by_place(normalize(chosen), itertools.count()))


_ARGUMENT = {ex.ReduceKind.MIN: ex.ReduceKind.ARGMIN, ex.ReduceKind.MAX: ex.ReduceKind.ARGMAX}


def _named_by_place(e: ex.Expr, counter: Iterator[int]) -> ex.Expr:
    if isinstance(e, ex.Reduce):
        renamed = ex.rename(e, {v: f"v{next(counter)}" for v in e.variables})
        return ex.Reduce(renamed.kind, _named_by_place(renamed.body, counter), renamed.bindings, renamed.k)
    return ex.map_children(e, lambda c: _named_by_place(c, counter))


def _hosted_at(e: ex.Expr, index: ex.Reduce) -> ex.Expr:
    """``e`` with every read of the token at ``index``'s winner read as the host's token ``x[@]``."""
    if isinstance(e, ex.Content) and e.index == index:
        return ex.Content(ex.VarIndex(HOST))
    return ex.map_children(e, lambda c: _hosted_at(c, index))


def _selected_indices(e: ex.Expr) -> list[ex.Reduce]:
    """Every argmin/argmax whose winner's token ``e`` reads (``x[argmax(...)]``), each once, outermost first."""
    found: list[ex.Reduce] = []
    stack = [e]
    while stack:
        node = stack.pop()
        if isinstance(node, ex.Content) and isinstance(node.index, ex.Reduce) and node.index not in found:
            found.append(node.index)
        stack += reversed(ex.children(node))
    return found


def _reductions(e: ex.Expr) -> Iterator[ex.Reduce]:
    if isinstance(e, ex.Reduce):
        yield e
    for c in ex.children(e):
        yield from _reductions(c)


__all__ = ["HOST", "canonical", "closure", "fixed_forms", "variable_form", "winner_forms"]
