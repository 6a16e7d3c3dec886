"""The token ``c`` positions after a selected one: ``x[argmax(E for t in D) + c]`` read as a selection.

The parser rewrites the text into the offset form the whole model already decides: with ``u = t + c``,

    x[argmax(E(t) for t in range(a, b)) + c]  ==  x[argmax(E(u - c) for u in range(a + c, b + c))]

The map ``t -> t + c`` is a bijection that keeps the order of positions, so the tie rule (the first position
of the domain wins) picks the same candidate, and the token read is the same one. The variable keeps its
name: every read of ``t`` in the body (``x[t]``, ``x[t+1]``, a range bound ``range(1, t)``) is shifted by
``-c`` and the domain by ``+c``. The identity needs the selected position plus ``c`` to stay inside the
sequence, and neither domain to be clipped at the sequence's ends, for every input and every binding of an
enclosing variable (each taken anywhere in ``1..T``); a domain that cannot promise it is refused (``problem``).
Fixed and ``T``-relative bounds are read at ``T`` long enough to hold them, as everywhere in the model.

>>> from infoflow_smt.lang.language import parse_target_expr, to_text
>>> to_text(parse_target_expr("x[argmax(dot(x[t], x[T]) for t in range(1, T)) + 1]"))
'x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]'
"""
from __future__ import annotations

from infoflow_smt.lang.expr import (
    AllPositions,
    Binding,
    Content,
    Domain,
    Expr,
    FixedIndex,
    OffsetIndex,
    Range,
    Reduce,
    VarIndex,
    map_children,
)

_WHOLE = Range(FixedIndex(1), FixedIndex(-1, True))  # for t in T, as a range: 1..T


def problem(selection: Reduce, c: int, limit: int) -> str | None:
    """Why ``x[selection + c]`` cannot be read as a shifted selection (None when it can). ``limit``: the
    largest offset the language allows (``infoflow_smt.limits.MAX_OFFSET``)."""
    sign = _signed(c)
    what = f"x[{selection.kind.value}(...) {sign}]"
    domain = selection.bindings[0].domain
    if isinstance(domain, AllPositions):
        better = "range(1, T" + (f"{1 - c:+d})" if c != 1 else ")") if c > 0 else f"range({1 - c}, T+1)"
        end = "T" if c > 0 else "1"
        return (f"{what}: the selection over T can pick position {end}, and {end} {sign} is outside the sequence; "
                f"select over {better} instead")
    if not isinstance(domain, Range):
        return f"{what}: a named subset shifted by {c} is not a subset the language names; select over a range"
    why = _start_problem(domain.start, c) or _stop_problem(domain.stop, c)
    if why:
        return f"{what}: {why}; the selected position {sign} must stay inside 1..T for every input"
    if _largest_offset(selection, c) > limit:
        return f"{what}: shifting the selection's reads by {-c} makes an offset over the limit of {limit} " \
               "(infoflow_smt.limits)"
    return None


def shifted(selection: Reduce, c: int) -> Reduce:
    """The selection whose winner is ``c`` positions after ``selection``'s (``problem`` must be None).

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> shifted(parse_target_expr("argmax(f1(x[t]) for t in range(1, T))"), 1).bindings[0].domain
    Range(start=FixedIndex(position=2, from_end=False), stop=FixedIndex(position=-1, from_end=True))
    """
    (binding,) = selection.bindings
    body = _shift_reads(selection.body, binding.var, -c)
    return Reduce(selection.kind, body, (Binding(binding.var, _shift_domain(binding.domain, c)),), selection.k)


# ---- the domain --------------------------------------------------------------------------------------
def _start_problem(start, c: int) -> str | None:
    """A start bound ``a`` needs ``a >= 1`` and ``a + c >= 1`` at every binding."""
    if isinstance(start, FixedIndex) and not start.from_end and start.position + c < 1:
        return f"the range starts at {start.position}, so the selected position {_signed(c)} can be " \
               f"{start.position + c}"
    if isinstance(start, FixedIndex) and start.from_end and start.position - c < -1:
        return "the range starts past T+1"
    if isinstance(start, (VarIndex, OffsetIndex)):
        k = start.offset if isinstance(start, OffsetIndex) else 0
        if k < 0:
            return f"the range starts at {_bound(start)}, below position 1 at {start.name} = 1"
        if k + c < 0:
            return f"the range starts at {_bound(start)}, so at {start.name} = 1 the selected position " \
                   f"{_signed(c)} can be {1 + k + c}"
    return None


def _stop_problem(stop, c: int) -> str | None:
    """A stop bound ``b`` (exclusive) needs ``b <= T+1`` and ``b + c <= T+1`` at every binding."""
    if isinstance(stop, FixedIndex) and not stop.from_end and stop.position + c < 1:
        return f"the range stops at {stop.position}, so it holds no position after the shift"
    if isinstance(stop, FixedIndex) and stop.from_end and stop.position - c < -1:
        last = stop.position + 1  # the last position the range holds is T - last
        shown = "T" if last == 0 else f"T{-last:+d}"
        return f"the range runs up to {shown}, so the selected position {_signed(c)} can be past T; stop the " \
               f"range {c} earlier"
    if isinstance(stop, (VarIndex, OffsetIndex)):
        k = stop.offset if isinstance(stop, OffsetIndex) else 0
        if k > 1:
            return f"the range stops at {_bound(stop)}, past T+1 at {stop.name} = T"
        if k + c > 1:
            return f"the range stops at {_bound(stop)}, so at {stop.name} = T the selected position " \
                   f"{_signed(c)} can be T{k + c - 1:+d}"
    return None


def _signed(c: int) -> str:
    """``+ 1``, ``- 2``: the shift as the text writes it."""
    return f"+ {c}" if c > 0 else f"- {-c}"


def _bound(bound: VarIndex | OffsetIndex) -> str:
    return bound.name if isinstance(bound, VarIndex) else f"{bound.name}{bound.offset:+d}"


def _shift_domain(domain: Domain, c: int) -> Range:
    whole = _WHOLE if isinstance(domain, AllPositions) else domain
    return Range(_shift_bound(whole.start, c), _shift_bound(whole.stop, c))


def _shift_bound(bound, c: int):
    if isinstance(bound, FixedIndex):  # a T-relative position counts down from T: T - k + c = T - (k - c)
        return FixedIndex(bound.position - c, True) if bound.from_end else FixedIndex(bound.position + c)
    offset = (bound.offset if isinstance(bound, OffsetIndex) else 0) + c
    return OffsetIndex(bound.name, offset) if offset else VarIndex(bound.name)


# ---- the body ----------------------------------------------------------------------------------------
def _shift_reads(e: Expr, var: str, by: int) -> Expr:
    """``e`` with every read of ``var`` (contents and range bounds) moved ``by`` positions. No reduction inside
    rebinds ``var`` (the parser refuses a name bound twice), so every ``var`` met is the selection's."""
    if isinstance(e, Content) and isinstance(e.index, (VarIndex, OffsetIndex)) and e.index.name == var:
        return Content(_shift_bound(e.index, by))
    if isinstance(e, Reduce):
        bindings = tuple(Binding(b.var, _shift_range_reads(b.domain, var, by)) for b in e.bindings)
        return Reduce(e.kind, _shift_reads(e.body, var, by), bindings, e.k)
    return map_children(e, lambda child: _shift_reads(child, var, by))


def _shift_range_reads(domain: Domain, var: str, by: int) -> Domain:
    if not isinstance(domain, Range):
        return domain

    def bound(b):
        return _shift_bound(b, by) if isinstance(b, (VarIndex, OffsetIndex)) and b.name == var else b

    return Range(bound(domain.start), bound(domain.stop))


def _largest_offset(selection: Reduce, c: int) -> int:
    """The largest offset (in a read or a range bound) the shifted selection holds."""
    found = [0]

    def walk(e: Expr) -> Expr:
        if isinstance(e, Content) and isinstance(e.index, OffsetIndex):
            found.append(abs(e.index.offset))
        if isinstance(e, Reduce):
            for b in e.bindings:
                if isinstance(b.domain, Range):
                    found.extend(abs(x.offset) for x in (b.domain.start, b.domain.stop) if isinstance(x, OffsetIndex))
        return map_children(e, walk)

    walk(shifted(selection, c))
    return max(found)
