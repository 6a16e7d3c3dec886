"""The abstract syntax of target expressions: frozen dataclasses, nothing that runs.

Positions are 1-based, as in the papers: ``x[1]`` is the first token, ``x[T]`` the last.
Index variables range over a domain (all positions, a named subset, a range).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass


def _hashed_once(cls):
    """A frozen dataclass whose hash is computed once per node, not again for each enclosing node: the
    normal form, the trees and the caches look expressions up by value, and a nested expression's hash
    would otherwise walk the whole subtree at every lookup. The stored hash is left out of a pickle (a
    string's hash differs between processes). The hash is taken as the node is made, once its children's
    are known: a lazy one would recurse through a deep expression (a flat sum of hundreds of terms) at once."""
    compute, make = cls.__hash__, cls.__init__

    def __init__(self, *args, **kwargs):
        make(self, *args, **kwargs)
        hash(self)

    def __hash__(self):
        found = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = compute(self)  # frozen: set past __setattr__
        return found

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    cls.__hash__, cls.__getstate__, cls.__init__ = __hash__, __getstate__, __init__
    return cls


# ---- index terms: what goes inside x[...] ---------------------------------------------------
@dataclass(frozen=True)
class VarIndex:
    """``x[t]``: the position bound to index variable ``name``."""

    name: str


@dataclass(frozen=True)
class FixedIndex:
    """A fixed position: ``x[3]`` is (3, from_end=False); ``x[T]`` is (0, True); ``x[T-2]`` is (2, True)."""

    position: int
    from_end: bool = False

    def resolve(self, seq_len: int) -> int:
        """The 1-based position this index names for a sequence of ``seq_len`` tokens."""
        return seq_len - self.position if self.from_end else self.position


@dataclass(frozen=True)
class OffsetIndex:
    """``x[t-1]``: the position of variable ``name`` shifted by ``offset`` (non-zero)."""

    name: str
    offset: int


# ---- domains: what an index variable ranges over --------------------------------------------
@dataclass(frozen=True)
class AllPositions:
    """``for t in T``: every input position 1..T."""


@dataclass(frozen=True)
class Subset:
    """``for t in S1``: a named subset whose size is a fixed fraction of T (see realization.subset_mask)."""

    name: str


@dataclass(frozen=True)
class Range:
    """``for t in range(a, b)``: positions a..b-1 (Python's half-open range). A bound is fixed or T-relative
    (a ``FixedIndex``), or an enclosing index variable plus a constant (``VarIndex`` for ``s``,
    ``OffsetIndex`` for ``s + 1``): ``range(1, s)`` is "every position before s", a different set for
    each binding of ``s`` (``domain_variables``)."""

    start: FixedIndex | VarIndex | OffsetIndex
    stop: FixedIndex | VarIndex | OffsetIndex


Domain = AllPositions | Subset | Range


def domain_variables(domain: Domain) -> frozenset[str]:
    """The index variables a domain's bounds read: ``{"s"}`` for ``range(1, s + 1)``, none for ``T``."""
    if not isinstance(domain, Range):
        return frozenset()
    return frozenset(b.name for b in (domain.start, domain.stop) if isinstance(b, (VarIndex, OffsetIndex)))


def envelope(domain: Domain) -> Domain:
    """Every position a domain holds at some binding of the variables its bounds read (each in ``1..T``):
    ``range(1, s)`` -> ``range(1, T)``, ``range(s+1, T+1)`` -> ``range(2, T+1)``; a domain with fixed bounds
    is its own envelope."""
    if not domain_variables(domain):
        return domain

    def widest(b, low: bool) -> FixedIndex:
        if isinstance(b, FixedIndex):
            return b
        shift = b.offset if isinstance(b, OffsetIndex) else 0
        return FixedIndex(max(1, 1 + shift)) if low else FixedIndex(-shift, True)  # T + shift

    return Range(widest(domain.start, True), widest(domain.stop, False))


def sees_candidates(domain: Domain, var: str) -> bool:
    """Under a causal mask (``infoflow_smt/lang/causal.py``): whether, at every binding of ``var`` to a position ``p``,
    every candidate of ``domain`` is at or before ``p``: a range that stops at ``var + c`` with ``c <= 1``, or
    one that holds position 1 alone (every position sees it; ``var`` may then be None)."""
    stop = domain.stop if isinstance(domain, Range) else None
    if isinstance(stop, FixedIndex):
        return not stop.from_end and stop.position <= 2
    if isinstance(stop, VarIndex):
        return stop.name == var
    return isinstance(stop, OffsetIndex) and stop.name == var and stop.offset <= 1


def masked_prefix(domain: Domain, var: str) -> bool:
    """Whether ``domain`` is ``range(1, var+1)``: at ``var``'s position under a causal mask, exactly what the
    mask lets it see, which needs no positional encoding to tell apart."""
    return domain == Range(FixedIndex(1), OffsetIndex(var, 1))


def rename_domain(domain: Domain, names: dict[str, str]) -> Domain:
    """``domain`` with the variables of its bounds renamed by ``names`` (names absent stay)."""
    if not domain_variables(domain):
        return domain

    def bound(b):
        if isinstance(b, VarIndex):
            return VarIndex(names.get(b.name, b.name))
        if isinstance(b, OffsetIndex):
            return OffsetIndex(names.get(b.name, b.name), b.offset)
        return b

    return Range(bound(domain.start), bound(domain.stop))


@dataclass(frozen=True)
class Binding:
    """One ``for var in domain`` clause."""

    var: str
    domain: Domain


# ---- expressions -------------------------------------------------------------------------------
class ReduceKind(enum.Enum):
    MIN = "min"
    MAX = "max"
    ARGMIN = "argmin"
    ARGMAX = "argmax"
    KTH_LARGEST = "kth_largest"
    SUM = "sum"
    MEAN = "mean"

    @property
    def is_selection(self) -> bool:
        """Top-1 or k-th: the reduction picks one position (as opposed to aggregating all)."""
        return self not in (ReduceKind.SUM, ReduceKind.MEAN)

    @property
    def returns_index(self) -> bool:
        return self in (ReduceKind.ARGMIN, ReduceKind.ARGMAX)


@dataclass(frozen=True)
class Num:
    value: float


@_hashed_once
@dataclass(frozen=True)
class Content:
    """``x[index]``: the d-dimensional content of one position. ``index`` may be an argmin/argmax Reduce."""

    index: VarIndex | FixedIndex | OffsetIndex | Reduce


@dataclass(frozen=True)
class Param:
    """A bare name (``A1``, ``a2``): a fixed random parameter drawn from the target's seed.

    A d x d matrix where it is the first argument of ``bilinear``, a d-vector where it is an argument of ``dot``.
    """

    name: str


@_hashed_once
@dataclass(frozen=True)
class Call:
    """``dot``, ``norm``, ``bilinear``, or any other name: an uninterpreted smooth function."""

    name: str
    args: tuple[Expr, ...]


@_hashed_once
@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / **
    left: Expr
    right: Expr


@_hashed_once
@dataclass(frozen=True)
class Neg:
    operand: Expr


@_hashed_once
@dataclass(frozen=True)
class Reduce:
    """A reduction over one or more index variables at once (several bindings = a joint reduction)."""

    kind: ReduceKind
    body: Expr
    bindings: tuple[Binding, ...]
    k: int | None = None  # only for KTH_LARGEST

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(b.var for b in self.bindings)


Expr = Num | Content | Param | Call | BinOp | Neg | Reduce

BUILTIN_FUNCTIONS = frozenset({"dot", "norm", "bilinear"})
# ``min(a, b)``/``max(a, b)`` as a call: the smaller/larger of two scalar values. Never parsed (the text
# ``min(a, b)`` is a malformed reduction); only ``causal.causal_form`` writes it, for the union of two
# selections a position cannot make as one (docs/model.md, "Causal mask").
UNION_FUNCTIONS = frozenset({"min", "max"})

# The answering position of a target with an answer at every position: ``max(F0(x[o], x[t]) for t in T)``
# asks every input position ``o`` for its own value. No reduction binds it: it is free in the whole target,
# an enclosing variable that every input position plays (docs/model.md, "Answers at every position").
ANSWER = "o"


# ---- pure functions of the syntax -------------------------------------------------------------
def children(e: Expr) -> tuple[Expr, ...]:
    """The direct sub-expressions of ``e`` (an argmin/argmax index counts as one)."""
    if isinstance(e, Content):
        return (e.index,) if isinstance(e.index, Reduce) else ()
    if isinstance(e, Call):
        return e.args
    if isinstance(e, BinOp):
        return (e.left, e.right)
    if isinstance(e, Neg):
        return (e.operand,)
    if isinstance(e, Reduce):
        return (e.body,)
    return ()


def map_children(e: Expr, fn) -> Expr:
    """``e`` rebuilt with ``fn`` applied to each of its ``children`` (everything else kept as it is)."""
    if isinstance(e, Content):
        return Content(fn(e.index)) if isinstance(e.index, Reduce) else e
    if isinstance(e, Call):
        return Call(e.name, tuple(fn(a) for a in e.args))
    if isinstance(e, BinOp):
        return BinOp(e.op, fn(e.left), fn(e.right))
    if isinstance(e, Neg):
        return Neg(fn(e.operand))
    if isinstance(e, Reduce):
        return Reduce(e.kind, fn(e.body), e.bindings, e.k)
    return e


def free_variables(e: Expr) -> frozenset[str]:
    """The index variables ``e`` reads that no reduction inside ``e`` binds.

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> sorted(free_variables(parse_target_expr("min(dot(x[s], x[t]) for s in T for t in T)").body))
    ['s', 't']
    """
    found = e.__dict__.get("_free")   # kept on the node: the normal form asks it of every subtree, level by level
    if found is None:
        found = e.__dict__["_free"] = _free_variables(e)   # frozen: set past __setattr__
    return found


def _free_variables(e: Expr) -> frozenset[str]:
    if isinstance(e, Content) and isinstance(e.index, (VarIndex, OffsetIndex)):
        return frozenset({e.index.name})
    if isinstance(e, Reduce):  # a range bounded by an enclosing variable depends on it
        bounds = frozenset().union(*(domain_variables(b.domain) for b in e.bindings))
        return (free_variables(e.body) | bounds) - set(e.variables)
    return frozenset().union(*(free_variables(c) for c in children(e)))


def answers_everywhere(e: Expr) -> bool:
    """Whether ``e`` names the answering position ``o`` (``ANSWER``): one answer per input position.

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> answers_everywhere(parse_target_expr("max(dot(x[o], x[t]) for t in T)"))
    True
    """
    return ANSWER in free_variables(e)


def rename(e: Expr, names: dict[str, str]) -> Expr:
    """``e`` with index variables renamed by ``names`` (binders and reads alike; names absent stay)."""
    if isinstance(e, Content):
        index = e.index
        if isinstance(index, VarIndex):
            return Content(VarIndex(names.get(index.name, index.name)))
        if isinstance(index, OffsetIndex):
            return Content(OffsetIndex(names.get(index.name, index.name), index.offset))
    if isinstance(e, Reduce):
        bindings = tuple(Binding(names.get(b.var, b.var), rename_domain(b.domain, names)) for b in e.bindings)
        return Reduce(e.kind, rename(e.body, names), bindings, e.k)
    return map_children(e, lambda c: rename(c, names))


def height(e: Expr) -> int:
    """How many reductions nest inside ``e`` at most (0 for an expression without reductions)."""
    inner = max((height(c) for c in children(e)), default=0)
    return inner + 1 if isinstance(e, Reduce) else inner


def is_vector(e: Expr) -> bool:
    """Whether ``e`` has a d-vector value: contents, parameters, and arithmetic, sums, means (and, on
    scalar tokens, selections) of them; calls and numbers are scalars."""
    if isinstance(e, (Content, Param)):
        return True
    if isinstance(e, BinOp):
        return is_vector(e.left) or is_vector(e.right)
    if isinstance(e, Neg):
        return is_vector(e.operand)
    if isinstance(e, Reduce):
        return not e.kind.returns_index and is_vector(e.body)
    return False


def reads_selected_token(e: Expr) -> bool:
    """Whether ``e`` reads the token at a selected position (``x[argmax(...)]``, ``x[argmin(...) - 1]``): a
    value that jumps where two scores tie, so a continuous model errs near every tie.

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> reads_selected_token(parse_target_expr("x[argmax(dot(x[t-1], x[T]) for t in range(2, T+1))]"))
    True
    >>> reads_selected_token(parse_target_expr("max(dot(x[t-1], x[T]) for t in range(2, T+1))"))
    False
    """
    if isinstance(e, Content) and isinstance(e.index, Reduce):
        return True
    return any(reads_selected_token(c) for c in children(e))


def reads_tokens_as_numbers(e: Expr) -> bool:
    """Whether a selection compares vector values (``max(x[t] for t in T)``): meaningful on scalar
    tokens (``d = 1``) only."""
    if isinstance(e, Reduce) and e.kind.is_selection and is_vector(e.body):
        return True
    return any(reads_tokens_as_numbers(c) for c in children(e))
