"""The heads the search tries, read off the target's own reductions (not off any comparison tree).

Every selection of the target (every reduction, and every single-variable selection of a joint one's
spellings, ``score_forms.forms``) is offered as a retrieval as it is written, and hosted at the selecting
position: any of its *query-side parts* replaced by ``SELF`` (an enclosing variable, ``o`` included; a fixed
position, the others of its kind moving with it, ``x[T-1]`` becoming ``x[p-1]`` when ``x[T]`` becomes ``x[p]``;
a selected index ``x[argmax(...)]`` that does not read the candidate). So a position makes "the same selection
hosted at itself": every ``p`` selects ``argmax_t dot(x[t-1], x[p])``, which at ``p = a1`` is the target's next
hop, and position ``3`` makes ``max_t bilinear(A1, x[3], x[t])`` for itself. A selection reading ``x[t+c]`` is
also offered re-indexed by the offset (``score_forms.reindexed``), so that its key side reads the candidate's
own token. Each sum or mean offers an averaging head per linear part. With positional encoding each place may
gather, in one head, every position it can name: the target's offsets from it (both ways: a selection
re-indexed by ``c`` reads its winner's neighbour at ``-c``) and the positions told apart
(the target's fixed positions and ``1, 2, 3, T-1, T``), at or before it under the causal mask. Gathering more
never hurts (information only grows), so that one head stands for every smaller gathering.

>>> import infoflow_smt as ifs
>>> m = menu(ifs.catalogue.get("induction_head"), ifs.Architecture(heads=(1, 1), positional=True))
>>> [h.describe() for h in m.retrievals]
['retrieves the argmax over t in range(2, T+1) of dot(x[t-1], x[T])', 'retrieves the argmax over t in range(1, T) of dot(x[t], x[T])', 'retrieves the argmax over t in range(2, T+1) of dot(x[t-1], x[p])', 'retrieves the argmax over t in range(1, T) of dot(x[t], x[p])']
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from infoflow_smt.lang.expr import (
    Content,
    Expr,
    FixedIndex,
    OffsetIndex,
    Reduce,
    ReduceKind,
    VarIndex,
    children,
    domain_variables,
    map_children,
    rename,
)
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import Architecture
from infoflow_smt.verify import score_forms
from infoflow_smt.verify.flow_program import OUTPUT, SELF, Head, Mode, Place, PlaceKind
from infoflow_smt.verify.knowledge import free

TOLD_APART = (FixedIndex(1), FixedIndex(2), FixedIndex(3), FixedIndex(1, True), FixedIndex(0, True))
_SELECTIONS = (ReduceKind.MIN, ReduceKind.MAX, ReduceKind.ARGMIN, ReduceKind.ARGMAX)
_CANDIDATE = "@c"


@dataclass(frozen=True)
class Menu:
    """What the search offers a place: retrievals, averages, and the positions a gathering may take."""

    retrievals: tuple[Head, ...]
    averages: tuple[Head, ...]
    offsets: tuple[int, ...]
    told_apart: tuple[FixedIndex, ...]

    def gathering(self, place: Place, seq_len: int, causal: bool) -> Head | None:
        """The widest gathering ``place`` can make at length ``seq_len`` (None: none)."""
        here = place.position.resolve(seq_len) if place.kind is PlaceKind.POSITION else None
        sources: list[FixedIndex | int] = [] if place == OUTPUT else [c for c in self.offsets if not (causal and c > 0)]
        for fixed in self.told_apart:
            q = fixed.resolve(seq_len)
            if not 1 <= q <= seq_len or q == here:
                continue
            if causal and (place.kind is PlaceKind.INPUTS and q != 1 or here is not None and q > here):
                continue   # under the mask every input position sees position 1, and its own prefix
            sources.append(fixed)
        return Head(Mode.GATHER, sources=tuple(sources)) if sources else None


def menu(target: Target, arch: Architecture) -> Menu:
    """The heads the search offers for ``target`` on ``arch``."""
    reductions = list(dict.fromkeys(_reductions(target.expr, arch.causal)))
    retrievals: dict[tuple, Head] = {}
    averages: dict[tuple, Head] = {}
    for r in reductions:
        if len(r.bindings) != 1:
            continue
        if r.kind in _SELECTIONS:
            for head in _hosted(r):
                retrievals.setdefault(_key(head), head)
        elif r.kind in (ReduceKind.SUM, ReduceKind.MEAN) and not domain_variables(r.bindings[0].domain):
            for part in score_forms.linear_parts(r.body, r.variables[0]) or ():
                if part.statistic is not None:
                    head = Head(Mode.AVERAGE, part.statistic, r.variables[0], r.bindings[0].domain)
                    averages.setdefault(_key(head), head)
    heads = list(retrievals.values())
    read = {c for e in [target.expr] + [h.body for h in heads] for c in _offsets(e)}
    offsets = sorted((read | {-c for c in read}) - {0})   # a winner re-indexed by c reads back by -c
    fixed = sorted(set(TOLD_APART) | set(_fixed_reads(target.expr)), key=lambda f: (f.from_end, f.position))
    return Menu(tuple(heads), tuple(averages.values()), tuple(offsets), tuple(fixed) if arch.positional else ())


def _key(head: Head) -> tuple:
    renamed = rename(head.body, {head.variable: _CANDIDATE})
    return head.mode, renamed, head.domain, head.largest


def _reductions(e: Expr, causal: bool):
    """Every reduction in ``e``, and every one in the spellings of its joint ones."""
    if isinstance(e, Reduce):
        yield e
        for form in score_forms.forms(e, causal):
            yield from _reductions(form, causal)
    for c in children(e):
        yield from _reductions(c, causal)


def _hosted(r: Reduce) -> list[Head]:
    """The retrievals of ``r`` as written and with any of its query-side parts replaced by ``SELF``, each also
    re-indexed by the offsets its key side reads."""
    var, parts, found = r.variables[0], _parts(r), []
    for chosen in itertools.chain.from_iterable(itertools.combinations(parts, n) for n in range(len(parts) + 1)):
        anchors = [p[1].from_end for p in chosen if p[0] == "anchor"]
        if len(anchors) != len(set(anchors)):
            continue
        hosted = r
        for part in chosen:
            hosted = _substituted(hosted, part)
        if not free(hosted) <= {SELF}:
            continue
        body, domain = hosted.body, hosted.bindings[0].domain
        for shift in (0,) + score_forms.key_offsets(body, var):
            moved = score_forms.reindexed(body, var, domain, shift)
            if moved is not None:
                found.append(Head(Mode.RETRIEVE, moved[0], var, moved[1], r.kind in (ReduceKind.MAX, ReduceKind.ARGMAX)))
    return found


def _parts(r: Reduce) -> list[tuple]:
    var = r.variables[0]
    parts: list[tuple] = [("variable", w) for w in sorted(free(r))]
    parts += [("anchor", f) for f in _fixed_reads(r.body)]
    parts += [("index", a.index) for a in _selected_indices(r.body) if var not in free(a.index)]
    return parts


def _substituted(r: Reduce, part: tuple) -> Reduce:
    kind, what = part
    if kind == "variable":
        return rename(r, {what: SELF})
    if kind == "index":
        return _replace(r, lambda e: Content(VarIndex(SELF)) if e == Content(what) else None)

    def anchored(e: Expr):
        if isinstance(e, Content) and isinstance(e.index, FixedIndex) and e.index.from_end == what.from_end:
            shift = e.index.position - what.position
            shift = -shift if what.from_end else shift
            return Content(OffsetIndex(SELF, shift) if shift else VarIndex(SELF))
        return None
    return _replace(r, anchored)


def _replace(e: Expr, rule) -> Expr:
    found = rule(e)
    if found is not None:
        return found
    return map_children(e, lambda c: _replace(c, rule))


def _fixed_reads(e: Expr) -> list[FixedIndex]:
    found = [e.index] if isinstance(e, Content) and isinstance(e.index, FixedIndex) else []
    return list(dict.fromkeys(found + [f for c in children(e) for f in _fixed_reads(c)]))


def _selected_indices(e: Expr) -> list[Content]:
    found = [e] if isinstance(e, Content) and isinstance(e.index, Reduce) else []
    return list(dict.fromkeys(found + [s for c in children(e) for s in _selected_indices(c)]))


def _offsets(e: Expr) -> set[int]:
    found = {e.index.offset} if isinstance(e, Content) and isinstance(e.index, OffsetIndex) else set()
    return found.union(*(_offsets(c) for c in children(e)))
