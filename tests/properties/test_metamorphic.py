"""Verdicts belong to the function, not to its spelling (docs/model.md, section 2).

Each of ``TARGET_COUNT`` seeded random targets is rewritten by every rule of the normal form, read
backwards where that makes a new spelling (a term put into a reduction and taken out again, two separate
selections joined, a zero factor, a term that cancels, one selection written twice, one selection made
twice by a joint reduction or by two nested ones side by side), by reordering nested same-kind reductions
and by renaming its variables. Every rewrite is first checked to be the same function
(``Target.evaluate`` on random inputs, which knows nothing of the normal form), then decided on
architectures drawn for the target: it must get the same status and the same exponent as the original.
Samples of each switch get the same rewrites: read at the last position, an answer at every position, and a
causal mask (targets drawn for it: pairs over all positions, pairs over an ordered half, ranges bounded by a
variable, which the reordering and the doubling rewrites keep outside the variables they read).

The rewrites act on the syntax tree and share nothing with ``normal_form``; a rewrite that does not apply
to a target (no joint reduction to reorder, no two selections to join) is skipped for that target.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import sympy
from support.generators import causal_target, last_token_target, per_position_target, random_target

import infoflow_smt as ifs
from infoflow_smt.lang import causal
from infoflow_smt.lang import expr as ex
from infoflow_smt.lang.language import to_text
from infoflow_smt.lang.realization import Realization

TARGET_COUNT = 300
ARCHITECTURES_PER_TARGET = 2
WORKERS = 2
FRESH = ("p", "q", "r", "y", "z", "k1", "k2", "k3")   # never drawn by the generator


# ---- rewrites that keep the function ---------------------------------------------------------------
def _reductions(e: ex.Expr, scope: tuple[str, ...] = ()) -> list[tuple[ex.Reduce, tuple[str, ...], bool]]:
    """Every reduction with the variables in scope around it and whether it stands as an x[...] index."""
    found = []
    if isinstance(e, ex.Content) and isinstance(e.index, ex.Reduce):
        found.append((e.index, scope, True))
        found += _reductions(e.index.body, scope + e.index.variables)
        return found
    if isinstance(e, ex.Reduce):
        found.append((e, scope, False))
        return found + _reductions(e.body, scope + e.variables)
    for child in ex.children(e):
        found += _reductions(child, scope)
    return found


def _replace(e: ex.Expr, old: ex.Expr, new) -> ex.Expr:
    """``e`` with the first occurrence of ``old`` (by identity) replaced by ``new(old)``."""
    done = [False]

    def walk(node):
        if node is old and not done[0]:
            done[0] = True
            return new(node)
        return ex.map_children(node, walk)

    return walk(e)


def _token(var: str) -> ex.Content:
    return ex.Content(ex.VarIndex(var))


def _f2(*vars_: str) -> ex.Call:
    return ex.Call("f2", tuple(_token(v) for v in vars_))


def _pick(rng: random.Random, e: ex.Expr, keep: Callable) -> tuple[ex.Reduce, tuple[str, ...], bool] | None:
    candidates = [r for r in _reductions(e) if keep(*r)]
    return rng.choice(candidates) if candidates else None


def hoist_backwards(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """``R`` -> ``R(body + c) - c`` with ``c`` free of R's variables (an argmin/argmax ignores ``c``)."""
    kinds = (ex.ReduceKind.MIN, ex.ReduceKind.MAX, ex.ReduceKind.KTH_LARGEST, ex.ReduceKind.MEAN,
             ex.ReduceKind.ARGMIN, ex.ReduceKind.ARGMAX)
    found = _pick(rng, e, lambda r, scope, index: r.kind in kinds)
    if found is None:
        return None
    r, scope, _ = found
    c = _f2(rng.choice(scope)) if scope else ex.Reduce(ex.ReduceKind.MAX, _f2("z"), (ex.Binding("z", ex.AllPositions()),))
    inside = ex.Reduce(r.kind, ex.BinOp("+", r.body, c), r.bindings, r.k)
    if r.kind.returns_index:
        return _replace(e, r, lambda _: inside)
    return _replace(e, r, lambda _: ex.BinOp("-", inside, c))


def join_selections(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """Two separate selections written as one joint reduction: ``min(a for s) + min(b for t)`` ->
    ``min(a + b for s for t)``. Where the target has no such pair, one of its min/max ``R`` becomes
    ``min(body + f2(x[p]) for v for p) - min(f2(x[p]) for p)``."""
    pairs = []

    def walk(node):
        if (isinstance(node, ex.BinOp) and node.op == "+" and isinstance(node.left, ex.Reduce)
                and isinstance(node.right, ex.Reduce) and node.left.kind is node.right.kind
                and node.left.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX)):
            pairs.append(node)
        for child in ex.children(node):
            walk(child)

    walk(e)
    if pairs:
        node = rng.choice(pairs)
        # every variable the second binds, nested ones too, renamed: the first's body may bind the same names
        inner = {b.var for r, _, _ in _reductions(node.right) for b in r.bindings}
        a, b = node.left, ex.rename(node.right, {v: f"{v}9" for v in inner})
        return _replace(e, node, lambda _: ex.Reduce(a.kind, ex.BinOp("+", a.body, b.body), a.bindings + b.bindings))
    found = _pick(rng, e, lambda r, scope, index: not index and r.kind in (ex.ReduceKind.MIN, ex.ReduceKind.MAX))
    if found is None:
        return None
    r, _, _ = found
    extra = ex.Reduce(r.kind, _f2("p"), (ex.Binding("p", ex.AllPositions()),))
    joined = ex.Reduce(r.kind, ex.BinOp("+", r.body, _f2("p")), r.bindings + extra.bindings)
    return _replace(e, r, lambda _: ex.BinOp("-", joined, extra))


def zero_factor(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """A term ``0 * f2(x[v], x[v])`` added to a reduction's body."""
    found = _pick(rng, e, lambda r, scope, index: r.kind is not ex.ReduceKind.SUM)
    if found is None:
        return None
    r, _, _ = found
    v = rng.choice(r.variables)
    zero = ex.BinOp("*", ex.Num(0.0), _f2(v, v))
    return _replace(e, r, lambda old: ex.Reduce(old.kind, ex.BinOp("+", old.body, zero), old.bindings, old.k))


def cancelling_terms(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """``f2(x[v]) - f2(x[v])`` added to a reduction's body."""
    found = _pick(rng, e, lambda r, scope, index: True)
    if found is None:
        return None
    r, _, _ = found
    v = rng.choice(r.variables)
    body = ex.BinOp("-", ex.BinOp("+", r.body, _f2(v)), _f2(v))
    return _replace(e, r, lambda old: ex.Reduce(old.kind, body, old.bindings, old.k))


def written_twice(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """A selection used as a value written twice: ``R`` -> ``0.5 * R + 0.5 * R'``, ``R'`` renamed, with
    the arguments of its ``dot`` swapped."""
    found = _pick(rng, e, lambda r, scope, index: not index and r.kind.is_selection)
    if found is None:
        return None
    r, _, _ = found
    twin = _swap_dots(ex.rename(r, {v: f"{v}8" for v in r.variables}))
    half = ex.Num(0.5)
    return _replace(e, r, lambda old: ex.BinOp("+", ex.BinOp("*", half, old), ex.BinOp("*", half, twin)))


def _swap_dots(e: ex.Expr) -> ex.Expr:
    if isinstance(e, ex.Call):
        args = tuple(_swap_dots(a) for a in e.args)
        return ex.Call(e.name, args[::-1] if e.name == "dot" else args)
    if isinstance(e, ex.BinOp):
        return ex.BinOp(e.op, _swap_dots(e.left), _swap_dots(e.right))
    if isinstance(e, ex.Neg):
        return ex.Neg(_swap_dots(e.operand))
    if isinstance(e, ex.Reduce):
        return ex.Reduce(e.kind, _swap_dots(e.body), e.bindings, e.k)
    if isinstance(e, ex.Content) and isinstance(e.index, ex.Reduce):
        return ex.Content(_swap_dots(e.index))
    return e


def reorder_nested(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """A joint min/max over several variables written as nested reductions, outermost variable last."""
    found = _pick(rng, e, lambda r, scope, index: len(r.bindings) > 1)
    if found is None:
        return None
    r, _, _ = found
    if not all(_never_empty(b.domain) for b in r.bindings):
        return None  # a joint min/max skips an empty binding; a nested one would read an empty reduction
    bindings = list(r.bindings)
    rng.shuffle(bindings)
    bindings = _bounds_outside(bindings)

    def nest(old):
        body = old.body
        for binding in bindings:
            body = ex.Reduce(old.kind, body, (binding,))
        return body

    return _replace(e, r, nest)


def _bounds_outside(bindings: list[ex.Binding]) -> list[ex.Binding]:
    """``bindings`` (innermost first) reordered as little as needed for each variable a range bound reads to
    stay outside the range (``range(1, s)`` nested inside the reduction over ``s``)."""
    outermost_first, left = [], bindings[::-1]
    while left:
        placed = {b.var for b in outermost_first}
        ready = next(b for b in left if not (ex.domain_variables(b.domain) & {c.var for c in left}) - placed)
        outermost_first.append(ready)
        left.remove(ready)
    return outermost_first[::-1]


def _never_empty(domain: ex.Domain, length: int = 7) -> bool:
    """Whether a domain holds a position at every binding of the variables its bounds read (each taken
    anywhere in ``1..length``, the length ``_same_function`` evaluates at)."""
    reads = sorted(ex.domain_variables(domain))
    if not reads:
        return True
    realization = Realization()
    return all(len(realization.domain_positions(domain, length, dict.fromkeys(reads, p))) > 0
               for p in range(1, length + 1))


def rename_variables(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """Every index variable renamed (to names the generator never uses)."""
    names = sorted({b.var for r, _, _ in _reductions(e) for b in r.bindings})
    if not names:
        return None
    return ex.rename(e, dict(zip(names, rng.sample(FRESH, len(names)))))


def linearity_backwards(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """A factor free of a sum's (or mean's) variables moved inside it: ``R`` -> ``R + sum(c * body) - c * R``
    (the last two cancel only when the factor comes out again, rule 8)."""
    kinds = (ex.ReduceKind.SUM, ex.ReduceKind.MEAN)
    found = _pick(rng, e, lambda r, scope, index: r.kind in kinds and not index)
    if found is None:
        return None
    r, scope, _ = found
    c = _f2(rng.choice(scope)) if scope else ex.Reduce(ex.ReduceKind.MAX, _f2("z"), (ex.Binding("z", ex.AllPositions()),))
    inside = ex.Reduce(r.kind, ex.BinOp("*", c, r.body), r.bindings, r.k)
    return _replace(e, r, lambda old: ex.BinOp("-", ex.BinOp("+", old, inside), ex.BinOp("*", c, old)))


def _made_twice(e: ex.Expr, rng: random.Random, nested: bool) -> ex.Expr | None:
    """A min/max ``R`` over ``V`` with one of its variables ``v`` made twice: ``min_V b = min_{V, v'} (b / 2 +
    b' / 2)`` (joint) ``= min_{V - v} (min_v b / 2 + min_v' b' / 2)`` (nested), ``b'`` the body with ``v``
    renamed to a fresh ``v'`` and its ``dot`` arguments swapped: the two halves are one selection, made for
    each binding of the others (the spelling of issue 20; rule 9 reads it back)."""
    kinds = (ex.ReduceKind.MIN, ex.ReduceKind.MAX)
    found = _pick(rng, e, lambda r, scope, index: not index and r.kind in kinds)
    if found is None:
        return None
    r, _, _ = found
    bounding = set().union(*(ex.domain_variables(b.domain) for b in r.bindings))
    free = [v for v in r.variables if v not in bounding]  # a copy of s would leave range(1, s) reading one of them
    if not free:
        return None
    v = rng.choice(free)
    nested = nested and _never_empty(r.bindings[r.variables.index(v)].domain)
    fresh = next(name for name in FRESH if name not in _names(e))
    half = ex.Num(0.5)
    twin = _swap_dots(ex.rename(r.body, {v: fresh}))
    copy = ex.Binding(fresh, r.bindings[r.variables.index(v)].domain)
    if not nested:
        body = ex.BinOp("+", ex.BinOp("*", half, r.body), ex.BinOp("*", half, twin))
        return _replace(e, r, lambda old: ex.Reduce(old.kind, body, old.bindings + (copy,)))
    inner = [b for b in r.bindings if b.var == v]
    halves = ex.BinOp("+", ex.BinOp("*", half, ex.Reduce(r.kind, r.body, tuple(inner))),
                      ex.BinOp("*", half, ex.Reduce(r.kind, twin, (copy,))))
    outer = tuple(b for b in r.bindings if b.var != v)
    return _replace(e, r, lambda old: ex.Reduce(old.kind, halves, outer) if outer else halves)


def made_twice(e: ex.Expr, rng: random.Random) -> ex.Expr | None:
    """One selection made twice (``_made_twice``), in one joint reduction or as two nested ones, drawn per
    target (one rewrite for both keeps the suite's time)."""
    return _made_twice(e, rng, nested=rng.random() < 0.5)


def _names(e: ex.Expr) -> set[str]:
    return {b.var for r, _, _ in _reductions(e) for b in r.bindings}


REWRITES = {f.__name__: f for f in (hoist_backwards, join_selections, zero_factor, cancelling_terms,
                                    written_twice, reorder_nested, rename_variables, linearity_backwards,
                                    made_twice)}


# ---- one target ---------------------------------------------------------------------------------------
def _architectures(rng: random.Random, positional: bool) -> list[ifs.Architecture]:
    shapes = [(1,), (2,), (1, 1), (2, 1), (1, 2), (2, 2)]
    return [ifs.Architecture(heads=rng.choice(shapes), embed_dim=rng.choice([8, 32]),
                             input_dim=rng.choice([1, 2]), positional=positional)
            for _ in range(ARCHITECTURES_PER_TARGET)]


def _same_function(a: ifs.Target, b: ifs.Target, d: int) -> bool:
    X = np.random.default_rng(5).standard_normal((4, 7, d))
    with np.errstate(all="ignore"):
        return bool(np.allclose(a.evaluate(X), b.evaluate(X), rtol=1e-9, atol=1e-9, equal_nan=True))


def _answer(verdict) -> tuple[str, object]:
    return verdict.status.value, sympy.sympify(verdict.exponent)


def _drawn(index: int, variant: str) -> tuple[ifs.Target, list[ifs.Architecture]]:
    """Target ``index`` of a variant and its architectures: ``"plain"`` (the main set), ``"last"`` (a target
    reading ``x[T]``, asked with ``readout="last"``, no positions), ``"per_position"`` (a target naming ``o``),
    ``"rank"`` (the main kind of target under the rank rule, on heads 1 to 8 dimensions wide) or
    ``"causal"`` (a target drawn for a causal mask, ``support.generators.causal_target``: pairs over all
    positions, symmetric or not, pairs over an ordered half, ranges bounded by a variable, asked with
    ``causal=True``)."""
    rng = random.Random({"plain": 10_000, "last": 30_000, "per_position": 40_000, "causal": 50_000,
                         "rank": 60_000}[variant] + index)
    if variant == "last":
        original = ifs.parse_target(last_token_target(rng))
        return original, [dataclasses.replace(a, readout="last") for a in _architectures(rng, False)]
    if variant == "causal":
        text, positional = causal_target(rng)
        original = ifs.parse_target(text)
        return original, [dataclasses.replace(a, causal=True) for a in _architectures(rng, positional)]
    positional = rng.random() < 0.3
    text = per_position_target(rng, positional) if variant == "per_position" else random_target(rng, positional)
    original = ifs.parse_target(text)
    archs = _architectures(rng, original.needs_positional)
    if variant == "rank":
        archs = [dataclasses.replace(a, rank_aware=True, embed_dim=rng.choice([2, 4, 8]),
                                     input_dim=rng.choice([2, 3])) for a in archs]
    return original, archs


def disagreements(index: int, variant: str = "plain") -> list[str]:
    """Every rewrite of target ``index`` whose verdict differs from the original's (empty when none does)."""
    original, archs = _drawn(index, variant)
    if variant == "causal" and causal.unsupported(original):
        return []  # refused under the mask whatever the spelling (test_causal_differential holds the refusals)
    problems = []
    answers = {arch: _answer(ifs.decide(original, arch)) for arch in archs}
    for name, rewrite in REWRITES.items():
        rewritten = rewrite(original.expr, random.Random(f"{index}:{name}"))
        if rewritten is None:
            continue
        other = ifs.parse_target(to_text(rewritten))
        if not _same_function(original, other, 1):
            problems.append(f"target {index}: {name} changed the function (a bug in the test)\n  {original}\n  {other}")
            continue
        # the solver reads the normal form: a spelling with the same one is asked on one architecture (that
        # the verdict depends on nothing else), a different one on all
        for arch in archs if other.normal_form != original.normal_form else archs[:1]:
            first, second = answers[arch], _answer(ifs.decide(other, arch))
            if first != second:
                problems.append(f"target {index}, {name}, {arch}:\n  {original}: {first}\n  {other}: {second}")
    return problems


def _isolated(index: int, variant: str = "plain") -> list[str]:
    try:
        return disagreements(index, variant)
    except Exception as err:  # noqa: BLE001 - a crash is a finding about this target
        return [f"target {index}: raised {type(err).__name__}: {err}"]


@pytest.fixture(scope="module")
def outcomes() -> dict[int, list[str]]:
    context = multiprocessing.get_context("spawn")  # no z3 state crosses a fork
    with ProcessPoolExecutor(min(WORKERS, os.cpu_count() or 1), mp_context=context) as pool:
        return dict(zip(range(TARGET_COUNT), pool.map(_isolated, range(TARGET_COUNT), chunksize=10)))


@pytest.mark.parametrize("index", range(TARGET_COUNT), ids=lambda i: f"target{i}")
def test_rewrites_get_the_same_verdict(index: int, outcomes: dict[int, list[str]]) -> None:
    assert outcomes[index] == []


VARIANT_COUNT = 30   # a sample of each switch: read at the last position, an answer at every position, rank
CAUSAL_COUNT = 20    # and under the mask (about a second a target)


@pytest.mark.parametrize("variant, index", [(v, i) for v in ("last", "per_position", "rank") for i in range(VARIANT_COUNT)]
                         + [("causal", i) for i in range(CAUSAL_COUNT)])
def test_rewrites_get_the_same_verdict_with_each_switch(variant: str, index: int) -> None:
    assert _isolated(index, variant) == []


def test_the_rank_variant_is_ruled_by_the_rank_rule() -> None:
    """Some of its architectures get another status without the rule (else it would test the plain case)."""
    changed = 0
    for index in range(VARIANT_COUNT):
        target, archs = _drawn(index, "rank")
        changed += sum(ifs.decide(target, a).status != ifs.decide(target, dataclasses.replace(a, rank_aware=False)).status
                       for a in archs)
    assert changed >= 2


def test_every_rule_is_exercised(outcomes: dict[int, list[str]]) -> None:
    """Each rewrite applies to many of the targets (a rule that never applies tests nothing)."""
    counts = dict.fromkeys(REWRITES, 0)
    for index in range(TARGET_COUNT):
        rng = random.Random(10_000 + index)
        positional = rng.random() < 0.3
        original = ifs.parse_target(random_target(rng, positional))
        for name, rewrite in REWRITES.items():
            counts[name] += rewrite(original.expr, random.Random(f"{index}:{name}")) is not None
    assert all(count >= 30 for count in counts.values()), counts


def test_the_causal_sample_is_varied() -> None:
    """The masked sample decides both ways, and the rewrites that read bounded ranges apply to it."""
    drawn = {index: _drawn(index, "causal") for index in range(CAUSAL_COUNT)}
    decided = {index: (t, archs) for index, (t, archs) in drawn.items() if not causal.unsupported(t)}
    statuses = {ifs.decide(t, archs[0]).status for t, archs in decided.values()}
    assert len(decided) >= CAUSAL_COUNT * 3 // 4 and {ifs.Status.FEASIBLE, ifs.Status.INFEASIBLE} <= statuses
    bounded = {index: t for index, (t, _) in decided.items()
               if any(ex.domain_variables(b.domain) for r, _, _ in _reductions(t.expr) for b in r.bindings)}
    for name in ("reorder_nested", "made_twice"):
        applied = sum(REWRITES[name](t.expr, random.Random(f"{i}:{name}")) is not None for i, t in bounded.items())
        assert applied >= 3, (name, applied, len(bounded))


# The examples of issue 8: two spellings of one function, and what each must get.
EXAMPLES = [
    ("max(f1(x[t]) + max(f2(x[s]) for s in T) for t in T)", (2,), 2, "feasible"),
    ("max(f1(x[t]) for t in T) + max(f2(x[s]) for s in T)", (2,), 2, "feasible"),
    ("min(f1(x[a]) + f2(x[b]) for a in T for b in T)", (2,), 2, "feasible"),
    ("min(dot(x[s], x[t]) + dot(x[s], x[u]) for s in T for t in T for u in T)", (2, 1), 2, "feasible"),
]


# Statistics each position can average, written with the factor inside or outside (rule 8): one verdict.
SAME_FUNCTION = [
    ("max(mean(dot(x[t], x[s]) for t in T) for s in T)", "max(dot(mean(x[t] for t in T), x[s]) for s in T)"),
    ("max(mean(f1(x[s]) * f2(x[t]) for t in T) for s in T)", "max(f1(x[s]) * mean(f2(x[t]) for t in T) for s in T)"),
    ("sum(bilinear(A1, x[s], x[t]) for s in T for t in T)",
     "bilinear(A1, sum(x[s] for s in T), sum(x[t] for t in T))"),
]


@pytest.mark.parametrize("left, right", SAME_FUNCTION)
def test_linear_statistics_get_one_verdict_however_written(left: str, right: str) -> None:
    arch = ifs.Architecture(heads=(1, 1), embed_dim=32, input_dim=2)
    a, b = ifs.decide(left, arch), ifs.decide(right, arch)
    assert (a.status, a.exponent) == (b.status, b.exponent) == (ifs.Status.FEASIBLE, 1), f"{a}\n{b}"


@pytest.mark.parametrize("text, heads, d, status", EXAMPLES)
def test_the_issue_examples(text: str, heads: tuple[int, ...], d: int, status: str) -> None:
    verdict = ifs.decide(text, ifs.Architecture(heads=heads, embed_dim=32, input_dim=d))
    assert verdict.status.value == status and verdict.exponent == 1, str(verdict)
