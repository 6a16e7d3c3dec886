"""Where the answer is read, and the question each readout asks of a target (docs/model.md, "Readout").

By default the answer is read at the extra output token ``T+1``, which starts empty (paper 1). With
``Architecture(readout="last")`` it is read at input position ``T``, which holds ``x[T]`` from the start, as
in a decoder's next-token prediction. Without positional encoding position ``T`` is an ordinary input
position: it runs the heads every input position runs, and the model is permutation-equivariant, so it
computes ``F`` exactly when every position ``p`` computes ``F`` with ``x[T]`` read as its own token ``x[p]``:
the question of an answer at every position, with ``x[T]`` written ``x[o]`` (``last_token_target``). With
positional encoding position ``T`` is told apart: a class of its own (like the anchors), holding ``x[T]``
from the start, at which the goal is stated (``reads_at_last``).
"""
from __future__ import annotations

from infoflow_smt.errors import InvalidSpecError
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.target import Target
from infoflow_smt.model.architecture import LAST

_LAST_TOKEN = ex.FixedIndex(0, True)


def question(target: Target, arch) -> Target:
    """The target whose per-position or output answer ``arch`` must compute to compute ``target`` at its
    readout: ``target`` itself at the output token, ``last_token_target(target)`` at the last position (a
    target with an answer at every position too: read at ``T``, its answer is the one with ``o = T``, and
    without positions every position's question is position ``T``'s; so the rewrite is idempotent). Raises
    ``InvalidSpecError`` (one line) for what no readout rule covers yet: the last position with positional
    encoding.

    >>> from infoflow_smt.lang.target import parse_target
    >>> from infoflow_smt.model.architecture import Architecture
    >>> str(question(parse_target("max(F0(x[T], x[t]) for t in T)"), Architecture(heads=(1,), readout="last")))
    'max(F0(x[o], x[t]) for t in T)'
    """
    if getattr(arch, "readout", None) != LAST:
        return target
    if getattr(arch, "causal", False) and not arch.positional:
        return prefix_target(target)
    if not arch.positional:
        return last_token_target(target)
    if target.per_position:
        raise InvalidSpecError("readout='last' with positional encoding and a target with an answer at every "
                               "position (it names o) is not supported yet: ask it with the output token's readout "
                               "(every position answers there)", "architecture")
    return target  # position T is a class of its own, at which the goal is stated (reads_at_last)


def reads_at_last(target: Target, arch) -> bool:
    """Whether the answer to ``question(target, arch)`` is read at position ``T``, a class of its own: the last
    position with positional encoding (without it every position answers, ``Target.per_position``)."""
    return getattr(arch, "readout", None) == LAST and not target.per_position


def membership_lengths(target: Target, arch, length: int) -> tuple[int, ...]:
    """``length``, and the next lengths that put position ``T`` in another combination of the target's
    subsets, when position ``T`` is a class of its own (the answer read there, positional encoding):
    whether ``t`` is in ``S_i`` depends on ``t mod 4`` (``Realization.subset_mask``), so one length sees
    ``T`` in some subsets only, and a program right there may read ``T`` as outside a subset it belongs to
    at other lengths. The solver replays a witness, and the enumerator searches, at each of them."""
    if not (arch.positional and reads_at_last(target, arch)):
        return (length,)
    names = sorted(_subsets(target.expr))
    seen, lengths = set(), []
    for n in range(length, length + 4):
        pattern = tuple(bool(target.realization.subset_mask(name, n)[-1]) for name in names)
        if pattern not in seen:
            seen.add(pattern)
            lengths.append(n)
    return tuple(lengths)


def _subsets(e: ex.Expr) -> set[str]:
    """The names of the subsets ``e``'s reductions range over."""
    found = {b.domain.name for b in getattr(e, "bindings", ()) if isinstance(b.domain, ex.Subset)}
    for child in ex.children(e):
        found |= _subsets(child)
    return found


def last_token_target(target: Target) -> Target:
    """``target`` with its reads of ``x[T]`` written ``x[o]``: what every position must compute for position
    ``T`` to compute ``target`` without positional encoding (module docstring): answered at every position
    even where it reads no ``x[T]``. The seed is kept, the catalogue name is not (the function asked is another).

    >>> from infoflow_smt.lang.target import parse_target
    >>> str(last_token_target(parse_target("x[T] + max(dot(x[T], x[t]) for t in T)")))
    'x[o] + max(dot(x[o], x[t]) for t in T)'
    """
    expr = _own_token(target.expr)
    return Target(expr=expr, text=to_text(expr), name=None, seed=target.seed, every_position=True)


def prefix_target(target: Target) -> Target:
    """``target`` with ``T`` read as the answering position ``o``: ``x[T-c]`` -> ``x[o-c]``, a domain ``T`` ->
    ``range(1, o+1)``, a range bound ``T-c`` -> ``o-c``. Under a causal mask without positional encoding,
    position ``p`` computes what the last position computes on the sequence cut at ``p`` (it sees nothing after
    ``p`` and nothing tells it it is not the last), so position ``T`` computes ``target`` exactly when every
    position ``p`` computes it on ``x_1..x_p``: this target (docs/model.md, "Causal mask", readout at the last
    position). A target that names ``o`` keeps it (read at ``T``, ``o = T``), so the rewrite is idempotent.

    >>> from infoflow_smt.lang.target import parse_target
    >>> str(prefix_target(parse_target("max(F0(x[T], x[t]) + f1(x[T-1]) for t in range(2, T+1))")))
    'max(F0(x[o], x[t]) + f1(x[o-1]) for t in range(2, o+1))'
    """
    expr = _truncated(target.expr)
    return Target(expr=expr, text=to_text(expr), name=None, seed=target.seed, every_position=True)


def _truncated(e: ex.Expr) -> ex.Expr:
    if isinstance(e, ex.Content) and isinstance(e.index, ex.FixedIndex):
        return ex.Content(_from_answer(e.index))
    if isinstance(e, ex.Reduce):
        bindings = tuple(ex.Binding(b.var, _prefix_domain(b.domain)) for b in e.bindings)
        return ex.Reduce(e.kind, _truncated(e.body), bindings, e.k)
    return ex.map_children(e, _truncated)


def _prefix_domain(domain: ex.Domain) -> ex.Domain:
    """A domain of the sequence cut at ``o``: every position is ``range(1, o+1)``; a range's ``T``-relative
    bounds are ``o``-relative (a subset keeps its name: it tells positions apart, which needs positional
    encoding, refused under the mask at the last position)."""
    if isinstance(domain, ex.AllPositions):
        return ex.Range(ex.FixedIndex(1), ex.OffsetIndex(ex.ANSWER, 1))
    if isinstance(domain, ex.Range):
        return ex.Range(*(_from_answer(b) if isinstance(b, ex.FixedIndex) else b for b in (domain.start, domain.stop)))
    return domain


def _from_answer(index: ex.FixedIndex) -> ex.FixedIndex | ex.VarIndex | ex.OffsetIndex:
    """``T-c`` as ``o-c``; a position counted from the start stays."""
    if not index.from_end:
        return index
    return ex.OffsetIndex(ex.ANSWER, -index.position) if index.position else ex.VarIndex(ex.ANSWER)


def _own_token(e: ex.Expr) -> ex.Expr:
    if isinstance(e, ex.Content) and e.index == _LAST_TOKEN:
        return ex.Content(ex.VarIndex(ex.ANSWER))
    return ex.map_children(e, _own_token)
