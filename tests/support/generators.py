"""Seeded generators of small targets and architectures, shared by the differential and metamorphic tests.

``random_case(i)`` is case ``i`` of a fixed set: any failure reproduces from its index alone.
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import numpy as np

import infoflow_smt as ifs
from infoflow_smt.lang import causal as causal_rules
from infoflow_smt.lang.expr import ANSWER

VARIABLES = "stuvw"


class _TargetText:
    """Small target texts: 1-3 groups; joint min/max over 1-2 variables, nested selections, argmax
    indices, kth_largest, sum/mean; dot, bilinear, f1, f2, F0. Domains other than T, fixed positions and
    offsets only when ``positional``. Every variable a reduction binds is read by its body."""

    def __init__(self, rng: random.Random, positional: bool, last: bool = False):
        self.rng, self.positional = rng, positional
        self.last = last  # reads of x[T] without positions: a question read at the last position

    def fresh(self, scope: list[tuple[str, str]]) -> str:
        return next(v for v in VARIABLES if v not in {name for name, _ in scope})

    def domain(self) -> str:
        if self.positional and self.rng.random() < 0.4:
            return self.rng.choice(["S1", "S2", "range(2, T+1)"])
        return "T"

    def vector(self, scope, must: list[str], depth: int) -> str:
        r = self.rng
        if must:  # a variable the enclosing reduction binds must be read
            v = must.pop(0)
            return f"x[{v}-1]" if dict(scope)[v] == "range(2, T+1)" and r.random() < 0.5 else f"x[{v}]"
        roll = r.random()
        if depth > 0 and roll < 0.25 and len(scope) < 3:
            u = self.fresh(scope)
            outer = [scope[-1][0]] if scope and r.random() < 0.7 else []
            body = self.score(scope + [(u, "T")], [u] + outer, depth - 1)
            return f"x[{r.choice(['argmax', 'argmin'])}({body} for {u} in T)]"
        if self.positional and roll < 0.4:
            return r.choice(["x[1]", "x[2]", "x[T]"])
        if self.last and roll < 0.45:
            return "x[T]"
        return f"x[{r.choice(scope)[0]}]" if scope else "a1"

    def score(self, scope, must: list[str], depth: int) -> str:
        must = list(must)
        text = self.shape(scope, must, depth)
        while must:  # every variable handed down is read (a variable no score reads is another matter)
            text = f"{text} + f1({self.vector(scope, must, 0)})"
        return text

    def shape(self, scope, must: list[str], depth: int) -> str:
        r = self.rng
        shapes = ["dot", "bilinear", "f1", "f2", "sum"]
        shapes += ["nested"] * 2 if depth > 0 and len(scope) < 3 else []
        shape = r.choice(shapes)
        if shape == "nested":  # the inner reduction reads the variables handed down
            inner = self.group(scope, depth - 1, must)
            must.clear()
            return f"f1(x[{scope[-1][0]}]) + {inner}" if scope and r.random() < 0.5 else inner
        if shape == "sum":
            first = self.score(scope, must[:1], 0)
            rest, must[:] = must[1:], []
            return f"{first} {r.choice('+-')} {self.score(scope, rest, 0)}"
        if shape == "dot":
            return f"dot({self.vector(scope, must, depth)}, {self.vector(scope, must, depth)})"
        if shape == "bilinear":
            a, b = self.vector(scope, must, depth), self.vector(scope, must, depth)
            return f"bilinear(A{r.randint(1, 2)}, {a}, {b})"
        if shape == "f1":
            if len(must) > 1:
                return f"f1({self.vector(scope, must, depth)} + {self.vector(scope, must, depth)})"
            return f"f1({self.vector(scope, must, depth)})"
        return f"f2({self.vector(scope, must, depth)}, {self.vector(scope, must, depth)})"

    def group(self, scope, depth: int, outer_must=()) -> str:
        r = self.rng
        kind = r.choice(["min", "max", "min", "max", "kth", "sum", "mean"])
        count = r.choice([1, 1, 2]) if kind in ("min", "max") and len(scope) < 2 else 1
        new: list[tuple[str, str]] = []
        for _ in range(count):
            new.append((self.fresh(scope + new), self.domain()))
        body = self.score(scope + new, [v for v, _ in new] + list(outer_must), depth)
        if kind == "kth":
            return f"kth_largest(2, {body} for {new[0][0]} in {new[0][1]})"
        if count == 2 and r.random() < 0.5:  # nested same-kind reductions: also one joint group
            (v1, d1), (v2, d2) = new
            return f"{kind}({kind}({body} for {v2} in {d2}) for {v1} in {d1})"
        return f"{kind}({body} {' '.join(f'for {v} in {d}' for v, d in new)})"


def random_target(rng: random.Random, positional: bool) -> str:
    gen = _TargetText(rng, positional)
    count = rng.choice([1, 1, 2, 2, 3])
    groups = [gen.group([], rng.choice([0, 1, 1])) for _ in range(count)]
    if count == 1:
        return groups[0]
    return rng.choice([" + ".join(groups), f"F0({', '.join(groups)})"])


def per_position_target(rng: random.Random, positional: bool) -> str:
    """A random target with an answer at every position: each group may read the answering position ``o``
    (one always does), as an enclosing variable of the whole target; with positions, also ``x[o-1]`` and
    fixed positions. ``o`` heads the scope, so a nested selection may be made for it."""
    gen = _TargetText(rng, positional)
    scope = [(ANSWER, "T")]
    count = rng.choice([1, 1, 2])
    groups = [gen.group(scope, rng.choice([0, 1, 1]), [ANSWER] if i == 0 or rng.random() < 0.5 else [])
              for i in range(count)]
    if positional and rng.random() < 0.3:
        groups.append(rng.choice(["f1(x[o-1])", "dot(x[o], x[o-1])", "f2(x[o], x[1])"]))
    if len(groups) == 1:
        return groups[0]
    return rng.choice([" + ".join(groups), f"F0({', '.join(groups)})"])


def per_position_case(index: int) -> Case:
    """Case ``index`` of the per-position set (``per_position_target``), seeded apart from ``random_case``."""
    rng = random.Random(10_000 + index)
    positional = rng.random() < 0.35
    text = per_position_target(rng, positional)
    return Case(index, text, random_architecture(rng, positional if rng.random() < 0.85 else not positional))


def earlier_case(index: int) -> Case:
    """Case ``index`` of the set asking "earlier than me": a per-position target (``per_position_target``,
    with positions) whose domains ``T`` are mostly ``range(1, o)``, the positions before the answering one,
    where no answer is asked at ``o = 1`` (docs/model.md, "Answers at every position"); half of them under a
    causal mask, where it is the natural decoder question. A draw the evaluation refuses (such a range inside
    another reduction's body), or the mask does, is drawn again."""
    rng = random.Random(60_000 + index)
    causal = index % 2 == 1
    while True:
        text = per_position_target(rng, True)
        if rng.random() < 0.8:
            text = text.replace(" in T)", " in range(1, o))").replace(" in T ", " in range(1, o) ")
        if "range(1, o)" in text and _evaluates(text, causal):
            break
    arch = random_architecture(rng, True)
    return Case(index, text, dataclasses.replace(arch, embed_dim=rng.choice([8, 32]), causal=causal)
                if causal else arch)


def _evaluates(text: str, causal: bool) -> bool:
    """Whether the target has a value on a few random inputs (no refusal for an empty range), and is not
    refused under the mask when ``causal`` (a prefix sum, a joint reduction of three variables)."""
    try:
        target = ifs.parse_target(text)
        target.evaluate(np.random.default_rng(0).standard_normal((2, 6, 2)))
        if causal:
            causal_rules.check_supported(target)
    except ifs.InvalidSpecError:
        return False
    return True


def last_token_target(rng: random.Random) -> str:
    """A random target that reads ``x[T]`` and no other position: a question for ``readout="last"``."""
    gen = _TargetText(rng, positional=False, last=True)
    count = rng.choice([1, 1, 2])
    groups = [gen.group([], rng.choice([0, 1, 1])) for _ in range(count)]
    if rng.random() < 0.3:
        groups.append(rng.choice(["f1(x[T])", "dot(x[T], a1)"]))
    return groups[0] if len(groups) == 1 else rng.choice([" + ".join(groups), f"F0({', '.join(groups)})"])


def last_token_case(index: int) -> Case:
    """Case ``index`` of the set read at the last position: a target reading ``x[T]`` (and no other position),
    on an architecture with ``readout="last"`` and no positional encoding."""
    rng = random.Random(20_000 + index)
    text = last_token_target(rng)
    arch = random_architecture(rng, False)
    return Case(index, text, dataclasses.replace(arch, readout="last"))


def last_position_case(index: int) -> Case:
    """Case ``index`` of the set read at the last position with positional encoding: a random positional target
    (fixed positions, offsets, subsets) on a positional architecture with ``readout="last"``."""
    rng = random.Random(30_000 + index)
    text = random_target(rng, True)
    return Case(index, text, dataclasses.replace(random_architecture(rng, True), readout="last"))


def twinned_target(rng: random.Random, positional: bool) -> str:
    """A random group beside copies of itself that read other functions and matrices: interchangeable
    groups (``smt/symmetry.py``), which a target drawn at random seldom has; copies that read alike merge."""
    gen = _TargetText(rng, positional)
    group = gen.group([], rng.choice([0, 1, 1]))
    twins = [group] + [group.replace("f1(", f"h{i}a(").replace("f2(", f"h{i}b(").replace("A1", f"B{i}")
                       .replace("A2", f"C{i}") for i in range(1, rng.choice([2, 3]))]
    return f"F0({', '.join(twins)})"


def random_architecture(rng: random.Random, positional: bool) -> ifs.Architecture:
    layers = rng.choice([1, 2, 2])
    return ifs.Architecture(heads=tuple(rng.choice([1, 2]) for _ in range(layers)),
                            embed_dim=rng.choice([8, 32, 2 * ifs.T]), input_dim=rng.choice([1, 2]),
                            positional=positional)


@dataclass(frozen=True)
class Case:
    index: int
    text: str
    arch: ifs.Architecture

    def __str__(self) -> str:
        return f"case {self.index}: {self.text} on {self.arch}"


def random_case(index: int) -> Case:
    """Case ``index`` of the fixed set: a positional target goes, mostly, to a positional architecture."""
    rng = random.Random(index)
    positional = rng.random() < 0.35
    text = random_target(rng, positional)
    return Case(index, text, random_architecture(rng, positional if rng.random() < 0.85 else not positional))


# the differential set: fixed, so a failure names a case that reproduces
DIFFERENTIAL_CASES = [random_case(i) for i in range(200)]


# ---- ranges bounded by an index variable (``for t in range(1, s)``) --------------------------------------
# (outer domain, inner domain) pairs: joint ones may be empty at a binding (the pair set is not), nested
# ones never are (``range(1, s)`` only under ``s in range(2, T+1)``)
_JOINT_RANGES = [("T", "range(1, s)"), ("T", "range(1, s+1)"), ("T", "range(s+1, T+1)"), ("T", "range(s, T+1)"),
                 ("range(2, T+1)", "range(1, s)"), ("S1", "range(1, s+1)")]
_NESTED_RANGES = [("range(2, T+1)", "range(1, s)"), ("T", "range(1, s+1)"), ("range(1, T)", "range(s+1, T+1)"),
                  ("T", "range(s, T+1)")]


def bounded_target(rng: random.Random) -> str:
    """A target with a range bounded by an enclosing variable: a joint min/max over ``s`` and ``t`` in a
    range bounded by ``s``, a reduction nested in one over ``s``, or an argmax over such a range."""
    gen = _TargetText(rng, positional=True)
    roll = rng.random()
    if roll < 0.45:
        outer, inner = rng.choice(_JOINT_RANGES)
        body = gen.score([("s", outer), ("t", inner)], ["s", "t"], rng.choice([0, 1]))
        return f"{rng.choice(['min', 'max'])}({body} for s in {outer} for t in {inner})"
    outer, inner = rng.choice(_NESTED_RANGES)
    scope = [("s", outer), ("t", inner)]
    around = rng.choice(["sum", "mean", "min", "max"])
    if roll < 0.8:
        body = gen.score(scope, ["s", "t"], 0)
        nested = f"{rng.choice(['min', 'max', 'sum', 'mean'])}({body} for t in {inner})"
    else:
        nested = f"f1(x[{rng.choice(['argmax', 'argmin'])}({gen.score(scope, ['t', 's'], 0)} for t in {inner})])"
    return f"{around}({nested} + f2(x[s]) for s in {outer})"


def bounded_case(index: int) -> Case:
    """Case ``index`` of the fixed set of bounded-range targets, on a positional architecture (a bounded
    range tells positions apart)."""
    rng = random.Random(10_000 + index)
    return Case(index, bounded_target(rng), random_architecture(rng, True))


# ---- causal (decoder-only) architectures ------------------------------------------------------------
SYMMETRIC_PAIRS = ["dot(x[s], x[t])", "f1(x[s] + x[t])", "f2(x[s], x[t]) + f2(x[t], x[s])",
                   "dot(x[s], x[t]) + f1(x[s]) + f1(x[t])", "bilinear(A1, x[s], x[t]) + bilinear(A1, x[t], x[s])"]
ASYMMETRIC_PAIRS = ["bilinear(A1, x[s], x[t])", "f2(x[s], x[t])", "dot(x[s], x[t]) + f1(x[s])"]


def causal_target(rng: random.Random) -> tuple[str, bool]:
    """A target for a causal architecture and whether it tells positions apart: a joint min/max over a pair of
    all positions with a symmetric score (decided over its ordered half) or not (over both halves), a pair
    written over its ordered half (``range(1, s+1)``, ``range(1, s)``), a bounded-range target, or any random
    one."""
    gen = _TargetText(rng, positional=False)
    roll, kind = rng.random(), rng.choice(["min", "max"])
    if roll < 0.3:
        score = rng.choice(SYMMETRIC_PAIRS + ASYMMETRIC_PAIRS)
        text = f"{kind}({score} for s in T for t in T)"
        return (f"F0({text}, {gen.group([], 0)})" if rng.random() < 0.3 else text), False
    if roll < 0.55:
        inner = rng.choice(["range(1, s+1)", "range(1, s+1)", "range(1, s)"])
        body = gen.score([("s", "T"), ("t", inner)], ["s", "t"], rng.choice([0, 1]))
        return f"{kind}({body} for s in T for t in {inner})", inner == "range(1, s)"
    if roll < 0.75:
        return bounded_target(rng), True
    positional = rng.random() < 0.3
    return random_target(rng, positional), positional


def causal_case(index: int) -> Case:
    """Case ``index`` of the fixed set of causal cases (a constant width: a growing one is refused)."""
    rng = random.Random(20_000 + index)
    text, positional = causal_target(rng)
    layers = rng.choice([1, 2, 2])
    arch = ifs.Architecture(heads=tuple(rng.choice([1, 2]) for _ in range(layers)), embed_dim=rng.choice([8, 32]),
                            input_dim=rng.choice([1, 2]), positional=positional, causal=True)
    return Case(index, text, arch)


def causal_per_position_case(index: int) -> Case:
    """Case ``index`` of the causal set with an answer at every position: a random per-position target, its
    domains ``T`` mostly read as the answering position's prefix ``range(1, o+1)`` (what position ``o`` sees),
    on a causal architecture of a constant width."""
    rng = random.Random(40_000 + index)
    positional = rng.random() < 0.35
    text = _without_refused(rng, lambda: per_position_target(rng, positional))
    if rng.random() < 0.7:
        text = text.replace(" in T)", " in range(1, o+1))").replace(" in T ", " in range(1, o+1) ")
    arch = random_architecture(rng, positional)
    return Case(index, text, dataclasses.replace(arch, embed_dim=rng.choice([8, 32]), causal=True))


def causal_last_token_case(index: int) -> Case:
    """Case ``index`` of the causal set read at the last position: a target reading ``x[T]`` (no other fixed
    position), on a causal architecture without positional encoding, of a constant width, with
    ``readout="last"``."""
    rng = random.Random(50_000 + index)
    text = _without_refused(rng, lambda: last_token_target(rng))
    arch = random_architecture(rng, False)
    return Case(index, text, dataclasses.replace(arch, embed_dim=rng.choice([8, 32]), causal=True, readout="last"))


def _without_refused(rng: random.Random, draw) -> str:
    """A target from ``draw``, drawn again (mostly) while it has what the mask refuses over a prefix of the
    answering position: a sum or mean, or a k-th largest, which has too few candidates at ``o = 1``."""
    text = draw()
    while any(w in text for w in ("kth_largest", "sum(", "mean(")) and rng.random() < 0.85:
        text = draw()
    return text

