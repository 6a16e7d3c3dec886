"""The reference meaning of a target on numbers: ``evaluate_expr(expr, X, realization)``, batched.

Values carry a *leading shape*: ``(batch,)`` at the top, and one more axis per enclosing reduction,
holding a chunk of that reduction's candidate tuples. A reduction evaluates its body once for a whole
chunk of tuples (vectorised), reduces over the chunk axis, and folds the chunks together, so a joint
reduction over ``T^3`` tuples never holds more than about ``_BUDGET`` numbers per intermediate array.

Semantics worth knowing:

* ``argmin``/``argmax`` select the position of their (first) variable; ties go to the first candidate
  in domain order. Used as a value they return that 1-based position as a float; under ``x[...]`` the
  position indexes the sequence.
* ``kth_largest(k, ...)`` is the k-th largest body value, counting repeats (k=1 is ``max``).
* A selection of token values (``max(x[t] for t in T)``) compares numbers: it needs ``d = 1`` (scalar
  tokens) and raises ``InvalidSpecError`` otherwise.
* Offsets and fixed positions must stay inside 1..T: ``x[t-1]`` at ``t = 1`` raises ``InvalidSpecError``
  (callers choose domains such as ``range(2, T+1)`` that keep offsets inside).
* An empty domain raises ``InvalidSpecError``; so does a range bounded by a variable read where it is empty,
  except the answer's own ranges bounded by ``o`` (``answered_positions``: no answer is asked there, NaN).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from infoflow_smt.errors import InvalidSpecError, Problem
from infoflow_smt.lang.expr import (
    ANSWER,
    UNION_FUNCTIONS,
    BinOp,
    Call,
    Content,
    Expr,
    FixedIndex,
    Neg,
    Num,
    OffsetIndex,
    Param,
    Reduce,
    ReduceKind,
    VarIndex,
    children,
    domain_variables,
    envelope,
    free_variables,
    map_children,
)
from infoflow_smt.lang.language import domain_to_text, to_text
from infoflow_smt.lang.realization import Realization, bound_position
from infoflow_smt.limits import MAX_EVALUATION

if TYPE_CHECKING:
    from infoflow_smt.deadline import Deadline

# The key under which an environment carries which index tuples a bounded range keeps (not an identifier,
# so no variable of a target can take it): a table read at a tuple masked out is not checked.
_VALID = "valid?"
_BUDGET = 1 << 21  # numbers per intermediate array (16 MB of float64); a few are alive at once


@dataclass(frozen=True)
class _Context:
    X: np.ndarray
    realization: Realization
    tables: dict = field(default_factory=dict)  # reduction -> its values for every binding of its free variables
    counts: dict = field(default_factory=dict)  # a reduction over a bounded range -> its tuples per binding, just made
    table_counts: dict = field(default_factory=dict)  # the same for the reductions in ``tables``
    building: list = field(default_factory=list)  # (shape, reads) of the tables being made, innermost last
    deferred: dict = field(default_factory=dict)  # a table -> its reads' counts per binding (``_check_read``)
    deadline: Deadline | None = None  # checked before each chunk of tuples

    def check_deadline(self) -> None:
        if self.deadline is not None:
            self.deadline.check("the target's evaluation")

    @property
    def seq_len(self) -> int:
        return self.X.shape[1]

    @property
    def dim(self) -> int:
        return self.X.shape[2]


@dataclass(frozen=True)
class _Value:
    """An array broadcastable to ``lead`` (scalar) or ``lead + (d,)`` (vector)."""

    data: np.ndarray
    vector: bool


def _fail(message: str) -> InvalidSpecError:
    return InvalidSpecError([Problem(message)], subject="target")


def scalar_tokens_problem(text: str, input_dim: int) -> str:
    """The one line that refuses a selection of token values when tokens are vectors."""
    return (f"{text} compares tokens x[...] as numbers, which needs scalar tokens (input_dim=1), got "
            f"input_dim={input_dim}; for vector tokens write a score such as f1(x[t]) or dot(a1, x[t])")


def evaluate_expr(expr: Expr, X: np.ndarray, realization: Realization,
                  env: Mapping[str, np.ndarray] | None = None) -> np.ndarray:
    """Evaluate ``expr`` on every sequence of ``X`` (shape ``(batch, T, d)``).

    ``env`` binds free index variables to 1-based positions of shape ``(batch,)``. Returns shape
    ``(batch,)`` for scalar targets and ``(batch, d)`` for vector ones.

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> X = np.arange(12.0).reshape(1, 3, 4)
    >>> evaluate_expr(parse_target_expr("max(dot(x[t], x[1]) for t in T)"), X, Realization(0))
    array([62.])
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 3 or X.shape[1] < 1 or X.shape[2] < 1:
        raise _fail(f"X must have shape (batch, T, d) with T, d >= 1, got shape {X.shape}")
    bound: dict[str, np.ndarray] = {}
    for name, positions in (env or {}).items():
        array = np.asarray(positions)
        if not np.issubdtype(array.dtype, np.integer):
            raise _fail(f"env[{name!r}] must hold integer positions, got dtype {array.dtype}")
        bound[name] = np.broadcast_to(array, (X.shape[0],)).astype(np.int64)
    return evaluate_nested(nested(expr), X, realization, bound)


def evaluate_nested(expr: Expr, X: np.ndarray, realization: Realization,
                    bound: Mapping[str, np.ndarray] | None = None, deadline: Deadline | None = None) -> np.ndarray:
    """``evaluate_expr`` of an expression already written by ``nested``, on a checked ``X`` of floats (a
    target keeps its nested form: evaluated again and again, it is not rewritten each time). ``deadline``:
    checked before each chunk of index tuples, raising ``OutOfTime`` once it has passed."""
    bound = dict(bound or {})
    batch, seq_len, dim = X.shape
    cost = work(expr, seq_len, dim)
    if cost > MAX_EVALUATION:
        raise _fail(f"evaluating this target at T={seq_len} compares about {cost:.2g} index tuples per input, "
                    f"over the limit of {MAX_EVALUATION:.0g} (infoflow_smt.limits.MAX_EVALUATION): it reads too "
                    "many variables at once")
    rows = _rows_per_slice(expr, seq_len, dim)
    parts = []
    # Division by zero and overflow give inf/nan like the numbers they model, not warnings.
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for start in range(0, max(batch, 1), rows):
            part = slice(start, min(start + rows, batch))
            context = _Context(X[part], realization, deadline=deadline)
            context.check_deadline()
            value = _eval(expr, context, (part.stop - start,),
                          {name: positions[part] for name, positions in bound.items()})
            shape = (part.stop - start, dim) if value.vector else (part.stop - start,)
            parts.append(np.broadcast_to(value.data, shape))
    return np.array(np.concatenate(parts), dtype=float)


def evaluate_every_position(expr: Expr, X: np.ndarray, realization: Realization,
                            deadline: Deadline | None = None) -> np.ndarray:
    """A target with an answer at every position (it reads ``o``, ``expr.ANSWER``), written by ``nested``, on
    a checked ``X``: shape ``(batch, T)``, or ``(batch, T, d)``; entry ``[b, p - 1]`` is the value with ``o = p``.
    Each input is evaluated once per answering position, as one batch (``evaluate_nested`` slices it).

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> expr = nested(parse_target_expr("dot(x[o], x[1])"))
    >>> evaluate_every_position(expr, np.arange(4.0).reshape(1, 2, 2), Realization(0)).tolist()
    [[1.0, 3.0]]
    """
    batch, seq_len, _ = X.shape
    answered = answered_positions(expr, seq_len, realization)
    asked = np.flatnonzero(answered) + 1
    answering = np.tile(asked, batch)
    values = evaluate_nested(expr, np.repeat(X, len(asked), axis=0), realization, {ANSWER: answering}, deadline)
    values = values.reshape((batch, len(asked)) + values.shape[1:])
    if len(asked) == seq_len:
        return values
    every = np.full((batch, seq_len) + values.shape[2:], np.nan)  # NaN: no answer is asked at that position
    every[:, answered] = values
    return every


def answered_positions(expr: Expr, seq_len: int, realization: Realization) -> np.ndarray:
    """Which positions ``o = 1..T`` a target with an answer at every position asks (shape ``(T,)``): those
    where every reduction the answer itself reads (one in no other reduction's body) whose range is bounded
    by ``o`` has its candidates (at least one; ``k`` for ``kth_largest``). ``max(... for t in range(1, o))``
    asks ``o = 2..T``; position 1's answer is not defined (docs/model.md, "Answers at every position").
    Raises ``InvalidSpecError`` when no position is asked. Depends on the length alone, not on the tokens.

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> expr = parse_target_expr("max(dot(x[o], x[t]) for t in range(1, o))")
    >>> answered_positions(expr, 3, Realization(0)).tolist()
    [False, True, True]
    """
    answered = np.ones(seq_len, dtype=bool)
    for e in _answers_own(expr):
        needed = e.k if e.kind is ReduceKind.KTH_LARGEST else 1
        answered &= _candidates_per_answer(e, seq_len, realization) >= needed
    if not answered.any():
        raise _fail(f"{to_text(expr)} asks no position for an answer at seq_len={seq_len}: a range bounded by "
                    f"{ANSWER} is empty at every {ANSWER}")
    return answered


def _answers_own(e: Expr) -> list[Reduce]:
    """The reductions of ``e`` in no reduction's body whose ranges are bounded by the answering position."""
    if isinstance(e, Reduce):
        reads_answer = any(ANSWER in domain_variables(b.domain) for b in e.bindings)
        return [e] if reads_answer else []
    return [r for c in children(e) for r in _answers_own(c)]


def _candidates_per_answer(e: Reduce, seq_len: int, realization: Realization) -> np.ndarray:
    """How many candidate tuples ``e`` has with ``o = p``, for each ``p`` in ``1..T``: its bindings' envelopes
    broadcast against each other, each bounded range kept where its bounds hold (shape ``(T,)``)."""
    axes = len(e.bindings) + 1
    env = {ANSWER: np.arange(1, seq_len + 1).reshape((-1,) + (1,) * (axes - 1))}
    for i, b in enumerate(e.bindings, start=1):
        positions = realization.domain_positions(envelope(b.domain), seq_len)
        env[b.var] = positions.reshape((1,) * i + (-1,) + (1,) * (axes - 1 - i))
    valid = np.ones((1,) * axes, dtype=bool)
    for b in e.bindings:
        if domain_variables(b.domain):
            valid = valid & (env[b.var] >= bound_position(b.domain.start, seq_len, env)) \
                & (env[b.var] < bound_position(b.domain.stop, seq_len, env))
    shape = (seq_len,) + tuple(np.shape(env[b.var])[i] for i, b in enumerate(e.bindings, start=1))
    return np.broadcast_to(valid, shape).reshape(seq_len, -1).sum(axis=1)


def _rows_per_slice(expr: Expr, seq_len: int, dim: int) -> int:
    """How many inputs to evaluate at once: as many as keep every table that fits for one input within
    ``_BUDGET`` (``_tabled``). All at once, a large batch would make tables too large to keep, and each
    reduction nested in one would be computed under the enclosing tuples, T^k of them for k nested variables
    where ``work`` counts k * T^2."""
    widest = max((row for row in _table_rows(expr, seq_len, dim, False) if row <= _BUDGET), default=1)
    return max(1, _BUDGET // widest)


def _table_rows(e: Expr, seq_len: int, dim: int, inside: bool):
    """For each reduction nested in another: the numbers its table holds per input."""
    if isinstance(e, Reduce) and inside:
        yield seq_len ** len(free_variables(e)) * dim
    for child in children(e):
        yield from _table_rows(child, seq_len, dim, inside or isinstance(e, Reduce))


def nested(e: Expr) -> Expr:
    """``e`` with every joint ``min``/``max`` written as nested single-variable ones, each additive term of the
    body placed at the innermost variable it reads (in the order the variables are bound):
    ``min_{a,b} (f(a) + g(a, b)) = min_a (f(a) + min_b g(a, b))``, the same numbers. With nested reductions
    tabled over the variables they read, a chain of variables costs T^2 per link, not T^length.

    >>> from infoflow_smt.lang.language import parse_target_expr, to_text
    >>> to_text(nested(parse_target_expr("min(f1(x[a]) + dot(x[a], x[b]) for a in T for b in T)")))
    'min(f1(x[a]) + min(dot(x[a], x[b]) for b in T) for a in T)'
    """
    if not isinstance(e, Reduce):
        return map_children(e, nested)
    body = nested(e.body)
    if e.kind not in (ReduceKind.MIN, ReduceKind.MAX) or len(e.bindings) == 1 or _internally_bounded(e):
        # a range bounded by another variable of the same reduction stays joint: nested, ``range(1, s)``
        # would be an empty reduction at ``s = 1``, where the joint one simply has no pair
        return Reduce(e.kind, body, e.bindings, e.k)
    names = list(e.variables)
    levels: list[list[tuple[int, Expr]]] = [[] for _ in range(len(names) + 1)]
    for sign, term in _signed(body, 1):
        reads = [names.index(v) for v in free_variables(term) if v in names]
        levels[max(reads) + 1 if reads else 0].append((sign, term))
    inner: Expr | None = None
    for i in range(len(names) - 1, -1, -1):
        parts = levels[i + 1] + ([(1, inner)] if inner is not None else [])
        inner = Reduce(e.kind, _joined(parts), (e.bindings[i],))
    return _joined(levels[0] + [(1, inner)])


def _internally_bounded(e: Reduce) -> bool:
    return any(domain_variables(b.domain) & set(e.variables) for b in e.bindings)


def _signed(e: Expr, sign: int) -> list[tuple[int, Expr]]:
    if isinstance(e, BinOp) and e.op in "+-":
        return _signed(e.left, sign) + _signed(e.right, sign if e.op == "+" else -sign)
    if isinstance(e, Neg):
        return _signed(e.operand, -sign)
    return [(sign, e)]


def _joined(parts: list[tuple[int, Expr]]) -> Expr:
    result: Expr | None = None
    for sign, term in parts:
        if result is None:
            result = Neg(term) if sign < 0 else term
        else:
            result = BinOp("+" if sign > 0 else "-", result, term)
    return Num(0.0) if result is None else result


def work(expr: Expr, seq_len: int, dim: int = 1) -> int:
    """How many index tuples evaluating ``expr`` (after ``nested``) at ``seq_len`` with tokens of ``dim``
    numbers visits per input, reduction by reduction as ``_tabled`` evaluates it: one not nested in another
    once per tuple of its own variables; a nested one whose table over its free variables fits ``_BUDGET``
    for one input, once per tuple of those and its own (a table, computed once: one that reads no enclosing
    variable is the case of no free variables); a nested one whose table does not fit, once per tuple of its
    own for every tuple its enclosing reduction visits (T^k for k nested variables).

    >>> from infoflow_smt.lang.language import parse_target_expr
    >>> work(nested(parse_target_expr("min(dot(x[s], x[t]) for s in T for t in T)")), 8)
    72
    """
    total, tabled = 0, set()

    def visit(e: Expr, enclosing: int | None) -> None:  # enclosing: the tuples the enclosing reduction visits
        nonlocal total
        if not isinstance(e, Reduce):
            for child in children(e):
                visit(child, enclosing)
            return
        own = seq_len ** len(e.bindings)
        table = seq_len ** len(free_variables(e))
        if enclosing is None:
            visits = own
        elif table * dim <= _BUDGET:
            if e in tabled:  # the same reduction twice: one table (``_Context.tables``)
                return
            tabled.add(e)
            visits = table * own
        else:
            visits = enclosing * own
        total += visits
        for child in children(e):
            visit(child, visits)

    visit(expr, None)
    return total


def _eval(e: Expr, ctx: _Context, lead: tuple[int, ...], env: Mapping[str, np.ndarray]) -> _Value:
    if isinstance(e, Num):
        return _Value(np.asarray(e.value, dtype=float), False)
    if isinstance(e, Content):
        positions = _positions(e, ctx, lead, env)
        rows = np.arange(lead[0]).reshape((lead[0],) + (1,) * (len(lead) - 1))
        inside = (positions >= 1) & (positions <= ctx.seq_len)
        values = ctx.X[rows, np.clip(positions, 1, ctx.seq_len) - 1]
        # an offset that leaves the sequence reads padding: the zero vector (docs/model.md, section 2)
        return _Value(np.where(inside[..., None], values, 0.0), True)
    if isinstance(e, Param):
        return _Value(ctx.realization.vector(e.name, ctx.dim), True)
    if isinstance(e, Neg):
        operand = _eval(e.operand, ctx, lead, env)
        return _Value(-operand.data, operand.vector)
    if isinstance(e, BinOp):
        return _binop(e.op, _eval(e.left, ctx, lead, env), _eval(e.right, ctx, lead, env))
    if isinstance(e, Call):
        return _call(e, ctx, lead, env)
    if isinstance(e, Reduce):
        return _tabled(e, ctx, lead, env)[0]
    raise _fail(f"not a target expression: {type(e).__name__}")


def _tabled(e: Reduce, ctx: _Context, lead: tuple[int, ...], env) -> tuple[_Value, np.ndarray | None]:
    """A reduction nested in others, computed once for every binding of its own free variables (a table over
    positions) and read at the bindings of ``env``: a chain of dependent selections costs T per link, not
    T to the power of its length. At the top, or when the table would be too large, it is computed directly."""
    free = sorted(free_variables(e))
    size = lead[0] * ctx.seq_len ** len(free) * ctx.dim
    if len(lead) > 1 and not free:
        return _closed(e, ctx, lead)
    if len(lead) == 1 or size > _BUDGET:
        result = _reduce(e, ctx, lead, env)
        _check_read(e, ctx, ctx.counts.pop(e, None), env)
        return result
    table_lead = (lead[0],) + (ctx.seq_len,) * len(free)
    if e not in ctx.tables:
        positions = {v: np.arange(1, ctx.seq_len + 1).reshape((1,) * (i + 1) + (-1,) + (1,) * (len(free) - i - 1))
                     for i, v in enumerate(free)}
        ctx.building.append((table_lead, []))
        try:
            ctx.tables[e] = _reduce(e, ctx, table_lead, positions)
        finally:
            ctx.deferred[e] = ctx.building.pop()[1]
        if e in ctx.counts:  # a table is made at every binding: checked where it is read
            ctx.table_counts[e] = ctx.counts.pop(e)
    value, chosen = ctx.tables[e]
    rows = np.arange(lead[0]).reshape((lead[0],) + (1,) * (len(lead) - 1))
    index = (rows,) + tuple(np.asarray(env[v]) - 1 for v in free)
    own = [(e, ctx.table_counts[e])] if e in ctx.table_counts else []
    for reduction, counts in own + ctx.deferred[e]:
        _check_read(reduction, ctx, np.broadcast_to(counts, table_lead)[index], env)
    data = np.broadcast_to(value.data, (lead[0],) + (ctx.seq_len,) * len(free) + ((ctx.dim,) if value.vector else ()))
    return _Value(data[index], value.vector), (None if chosen is None else
                                               np.broadcast_to(chosen, (lead[0],) + (ctx.seq_len,) * len(free))[index])


def _positions(e: Content, ctx: _Context, lead: tuple[int, ...], env: Mapping[str, np.ndarray]) -> np.ndarray:
    """The 1-based positions ``e`` reads; fixed and selected ones must lie inside the sequence."""
    index = e.index
    if isinstance(index, (VarIndex, OffsetIndex)):
        if index.name not in env:
            raise _fail(f"unbound index variable {index.name!r} in {to_text(e)}")
        positions = env[index.name] + (index.offset if isinstance(index, OffsetIndex) else 0)
    elif isinstance(index, FixedIndex):
        positions = np.asarray(index.resolve(ctx.seq_len), dtype=np.int64)
    elif isinstance(index, Reduce) and index.kind.returns_index:
        positions = _tabled(index, ctx, lead, env)[1]
    else:
        raise _fail(f"unsupported index in {to_text(e)}")
    outside = (positions < 1) | (positions > ctx.seq_len)
    if outside.any() and not isinstance(index, OffsetIndex):
        first = int(positions[outside].flat[0])
        raise _fail(f"{to_text(e)} reads position {first}, outside 1..{ctx.seq_len} "
                    f"(seq_len={ctx.seq_len}); fixed positions must exist in the sequence")
    return positions


def _binop(op: str, left: _Value, right: _Value) -> _Value:
    a, b = left.data, right.data
    if left.vector != right.vector:  # a scalar meets a vector: align it against the last (d) axis
        a, b = (a, b[..., None]) if left.vector else (a[..., None], b)
    if op == "+":
        data = a + b
    elif op == "-":
        data = a - b
    elif op == "*":
        data = a * b
    elif op == "/":
        data = a / b
    elif op == "**":
        data = np.power(a, b)
    else:
        raise _fail(f"unknown operator {op!r}")
    return _Value(data, left.vector or right.vector)


def _call(e: Call, ctx: _Context, lead: tuple[int, ...], env: Mapping[str, np.ndarray]) -> _Value:
    if e.name == "bilinear":
        if len(e.args) != 3 or not isinstance(e.args[0], Param):
            raise _fail(f"bilinear takes (matrix name, a, b): {to_text(e)}")
        matrix = ctx.realization.matrix(e.args[0].name, ctx.dim)
        args = [_eval(a, ctx, lead, env) for a in e.args[1:]]
    else:
        args = [_eval(a, ctx, lead, env) for a in e.args]
    if e.name in UNION_FUNCTIONS:  # the union of two selections (``causal.causal_form``)
        pick = np.minimum if e.name == "min" else np.maximum
        return _Value(pick(np.asarray(args[0].data), np.asarray(args[1].data)), False)
    if e.name in ("dot", "norm", "bilinear"):
        arity = {"dot": 2, "norm": 1, "bilinear": 2}[e.name]
        if len(args) != arity or not all(a.vector for a in args):
            raise _fail(f"{e.name} needs vector arguments: {to_text(e)}")
        if e.name == "dot":
            return _Value(np.sum(args[0].data * args[1].data, axis=-1), False)
        if e.name == "norm":
            return _Value(np.sqrt(np.sum(args[0].data ** 2, axis=-1)), False)
        return _Value(np.sum(args[0].data * (args[1].data @ matrix.T), axis=-1), False)
    if not args:
        raise _fail(f"function {e.name} needs at least one argument")
    # Uninterpreted function: its inputs are the arguments laid side by side (a scalar is one column).
    columns = [a.data if a.vector else a.data[..., None] for a in args]
    common = np.broadcast_shapes(*(c.shape[:-1] for c in columns))
    inputs = np.concatenate([np.broadcast_to(c, common + c.shape[-1:]) for c in columns], axis=-1)
    return _Value(ctx.realization.function(e.name, inputs.shape[-1])(inputs), False)


def _closed(e: Reduce, ctx: _Context, lead: tuple[int, ...]) -> tuple[_Value, np.ndarray | None]:
    """A nested reduction that reads none of the enclosing variables (``min_b f(b)`` inside ``min_a``): one
    value per input, computed once and broadcast over the enclosing axes. Reduced under them instead, a sum
    of k such reductions nested by ``nested`` would visit T^k tuples where ``work`` counts k*T."""
    if e not in ctx.tables:
        ctx.tables[e] = _reduce(e, ctx, lead[:1], {})
        _check_read(e, ctx, ctx.counts.pop(e, None), {})
    value, chosen = ctx.tables[e]
    shape = (lead[0],) + (1,) * (len(lead) - 1)
    data = np.reshape(value.data, shape + ((ctx.dim,) if value.vector and np.ndim(value.data) > 1 else ()))
    return _Value(data, value.vector), (None if chosen is None else np.reshape(chosen, shape))


def _reduce(e: Reduce, ctx: _Context, lead: tuple[int, ...],
            env: Mapping[str, np.ndarray]) -> tuple[_Value, np.ndarray | None]:
    """(value, selected positions of the first variable for argmin/argmax, else None)."""
    if not e.bindings:
        raise _fail(f"reduction without variables: {to_text(e)}")
    domains = [ctx.realization.domain_positions(envelope(b.domain), ctx.seq_len) for b in e.bindings]
    for binding, positions in zip(e.bindings, domains):
        if positions.size == 0:
            raise _fail(f"the domain of {binding.var} ({domain_to_text(binding.domain)}) is empty at "
                        f"seq_len={ctx.seq_len}")
    sizes = tuple(len(p) for p in domains)
    total = math.prod(sizes)
    kind = e.kind
    if kind is ReduceKind.KTH_LARGEST and not (isinstance(e.k, int) and 1 <= e.k <= total):
        raise _fail(f"kth_largest needs 1 <= k <= {total} candidates at seq_len={ctx.seq_len}, got k={e.k}")
    bounded = [b for b in e.bindings if domain_variables(b.domain)]
    if bounded:
        return _reduce_bounded(e, ctx, lead, env, domains, bounded)
    acc: object = None
    for picks, inner, inner_lead in _slices(e, ctx, lead, env, domains):
        body, values = _compared(e, ctx, _eval(e.body, ctx, inner_lead, inner), inner_lead)
        acc = _fold(kind, e.k, acc, values, domains[0][picks[0]], len(lead))
    if kind.returns_index:
        _, best_position = acc
        return _Value(best_position.astype(float), False), best_position
    if kind is ReduceKind.MEAN:
        return _Value(acc / total, body.vector), None
    if kind is ReduceKind.KTH_LARGEST:
        return _Value(acc.min(axis=-1), False), None
    return _Value(acc, body.vector), None


def _reduce_bounded(e: Reduce, ctx: _Context, lead: tuple[int, ...], env: Mapping[str, np.ndarray],
                    domains: list[np.ndarray], bounded: list) -> tuple[_Value, np.ndarray | None]:
    """``_reduce`` where some range is bounded by an index variable (``for t in range(1, s)``): the candidate
    tuples of the envelopes, those outside the range at their binding masked out (a min's +inf, a sum's 0).
    A binding left with no tuple (``range(1, s)`` nested alone, at ``s = 1``) has no value: reading it is an
    error (``_check_read``), as an empty domain is; ``min(... for s in T for t in range(1, s))`` has pairs."""
    kind, axis = e.kind, len(lead)
    acc, count, body = None, np.zeros(lead, dtype=np.int64), None
    for picks, inner, inner_lead in _slices(e, ctx, lead, env, domains):
        valid = np.ones((1,) * len(inner_lead), dtype=bool)
        for b in bounded:
            low = bound_position(b.domain.start, ctx.seq_len, inner)
            high = bound_position(b.domain.stop, ctx.seq_len, inner)
            valid = valid & (inner[b.var] >= low) & (inner[b.var] < high)
        valid = np.broadcast_to(valid, inner_lead)
        count = count + valid.sum(axis=axis)
        inner[_VALID] = valid & inner[_VALID] if _VALID in inner else valid
        body, values = _compared(e, ctx, _eval(e.body, ctx, inner_lead, inner), inner_lead)
        mask = valid[..., None] if body.vector else valid
        fill = {ReduceKind.MIN: np.inf, ReduceKind.ARGMIN: np.inf, ReduceKind.SUM: 0.0, ReduceKind.MEAN: 0.0}
        values = np.where(mask, values, fill.get(kind, -np.inf))
        acc = _fold(kind, e.k, acc, values, domains[0][picks[0]], axis)
    ctx.counts[e] = count  # checked where it is read (``_check_read``): a table holds unread bindings
    if kind.returns_index:
        return _Value(acc[1].astype(float), False), acc[1]
    if kind is ReduceKind.MEAN:
        return _Value(acc / (count[..., None] if body.vector else count), body.vector), None
    if kind is ReduceKind.KTH_LARGEST:
        return _Value(acc.min(axis=-1), False), None
    return _Value(acc, body.vector), None


def _slices(e: Reduce, ctx: _Context, lead: tuple[int, ...], env: Mapping[str, np.ndarray],
            domains: list[np.ndarray]):
    """The reduction's candidate tuples in slices that fit the evaluation budget, each as (the positions
    picked, one array per variable; the bindings in scope, one more axis for the slice; the slice's shape)."""
    sizes = tuple(len(p) for p in domains)
    total, axis = math.prod(sizes), len(lead)
    chunk = max(1, min(total, _BUDGET // max(1, math.prod(lead) * ctx.dim)))
    outer = {name: positions[..., None] for name, positions in env.items()}
    for start in range(0, total, chunk):
        ctx.check_deadline()
        picks = np.unravel_index(np.arange(start, min(start + chunk, total)), sizes)
        inner = dict(outer)
        for binding, positions, pick in zip(e.bindings, domains, picks):
            inner[binding.var] = positions[pick].reshape((1,) * axis + (-1,))
        yield picks, inner, lead + (len(picks[0]),)


def _compared(e: Reduce, ctx: _Context, body: _Value, inner_lead: tuple[int, ...]) -> tuple[_Value, np.ndarray]:
    """The body and the values the reduction folds over a slice: a selection over scalar tokens compares the
    tokens themselves (a token is its own score), which needs ``d = 1``."""
    if e.kind.is_selection and body.vector:
        if ctx.dim != 1:
            raise _fail(scalar_tokens_problem(to_text(e), ctx.dim))
        body = _Value(np.asarray(body.data)[..., 0], False)
    return body, np.broadcast_to(body.data, inner_lead + ((ctx.dim,) if body.vector else ()))


def _check_read(e: Reduce, ctx: _Context, count: np.ndarray | None, env: Mapping[str, np.ndarray]) -> None:
    """Refuse a read of a bounded reduction at a binding with no candidate, unless an enclosing bounded range
    masks that binding out (it reads nothing there). A read made while a table is made at every binding of
    its variables, the ones its domains never take included, is checked where the table is read: its counts
    are kept per binding of the table."""
    if count is None:
        return
    if _VALID in env:  # the read and the mask broadcast to each other (a table read has axes of size 1)
        count = np.where(env[_VALID], count, np.iinfo(np.int64).max)
    if ctx.building:
        table_lead, reads = ctx.building[-1]
        reads.append((e, _per_binding(np.asarray(count), len(table_lead))))
        return
    _check_count(e, ctx, count, env)


def _per_binding(count: np.ndarray, axes: int) -> np.ndarray:
    """The fewest candidates over the axes past the table's first ``axes`` (those of the tuples inside it)."""
    count = count.reshape(count.shape + (1,) * max(0, axes - count.ndim))
    return count.min(axis=tuple(range(axes, count.ndim))) if count.ndim > axes else count


def _check_count(e: Reduce, ctx: _Context, count: np.ndarray, env: Mapping[str, np.ndarray]) -> None:
    """Refuse a reduction read at a binding where its bounded range holds no candidate (fewer than k)."""
    needed = e.k if e.kind is ReduceKind.KTH_LARGEST else 1
    short = np.asarray(count) < needed
    if short.any():
        at = np.unravel_index(int(np.argmax(short)), short.shape)
        where = ", ".join(f"{v}={int(np.broadcast_to(p, short.shape)[at])}" for v, p in sorted(env.items())
                          if v in free_variables(e))
        raise _fail(f"{to_text(e)} has {int(np.asarray(count)[at])} candidates at {where or 'a binding'} "
                    f"(seq_len={ctx.seq_len}): a range bounded by an index variable must not be empty there")


def _fold(kind: ReduceKind, k: int | None, acc, values: np.ndarray, first: np.ndarray, axis: int):
    """Fold one chunk of body values (tuple axis ``axis``) into the running result ``acc``."""
    if kind in (ReduceKind.MIN, ReduceKind.MAX):
        current = values.min(axis=axis) if kind is ReduceKind.MIN else values.max(axis=axis)
        if acc is None:
            return current
        return np.minimum(acc, current) if kind is ReduceKind.MIN else np.maximum(acc, current)
    if kind in (ReduceKind.SUM, ReduceKind.MEAN):
        current = values.sum(axis=axis)
        return current if acc is None else acc + current
    if kind.returns_index:
        pick = values.argmin(axis=axis) if kind is ReduceKind.ARGMIN else values.argmax(axis=axis)
        value = np.take_along_axis(values, pick[..., None], axis=axis)[..., 0]
        position = first[pick]
        if acc is None:
            return value, position
        # Strict comparison: on ties the earlier chunk, i.e. the earlier candidate, wins.
        better = value < acc[0] if kind is ReduceKind.ARGMIN else value > acc[0]
        return np.where(better, value, acc[0]), np.where(better, position, acc[1])
    # kth_largest: keep the k largest values seen so far (unordered) along the last axis.
    pool = values if acc is None else np.concatenate([acc, values], axis=-1)
    if pool.shape[-1] > k:
        pool = -np.partition(-pool, k - 1, axis=-1)[..., :k]
    return pool
